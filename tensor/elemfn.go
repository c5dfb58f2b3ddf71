package tensor

import (
	"math"

	"github.com/lanesgo/lanes/simd"
)

// The elementary functions, rounding, sign, remainders, the float class
// tests and the logical ops, with PyTorch's names and semantics (and
// NumPy's where they agree). They are ops of the Elementwise family
// (ElemOp), broadcast and alias as the arithmetic ops do (see Add), and
// allocate nothing in their ...Into forms. Masks (IsNaN ... LogicalXor)
// are 1 where the test holds, else 0, as the comparisons (Equal, Less)
// give them; the logical ops read an operand as true where it is nonzero
// (NaN included), as torch.logical_and does.

// Sin returns sin(x) elementwise (simd.Sin: within 1 ULP, any |x|).
func Sin(x *Tensor) *Tensor { return unary("Sin", ElemSin, [2]float32{}, x) }

// SinInto sets dst = sin(x).
func SinInto(dst, x *Tensor) *Tensor { return unaryInto("SinInto", ElemSin, [2]float32{}, dst, x) }

// Cos returns cos(x) elementwise (simd.Cos: within 1 ULP, any |x|).
func Cos(x *Tensor) *Tensor { return unary("Cos", ElemCos, [2]float32{}, x) }

// CosInto sets dst = cos(x).
func CosInto(dst, x *Tensor) *Tensor { return unaryInto("CosInto", ElemCos, [2]float32{}, dst, x) }

// Tan returns tan(x) elementwise (simd.Tan: within 1 ULP, any |x|).
func Tan(x *Tensor) *Tensor { return unary("Tan", ElemTan, [2]float32{}, x) }

// TanInto sets dst = tan(x).
func TanInto(dst, x *Tensor) *Tensor { return unaryInto("TanInto", ElemTan, [2]float32{}, dst, x) }

// Log1p returns log(1 + x) elementwise (simd.Log1p: within 1 ULP, x
// itself for tiny x; -Inf at -1, NaN below).
func Log1p(x *Tensor) *Tensor { return unary("Log1p", ElemLog1p, [2]float32{}, x) }

// Log1pInto sets dst = log(1 + x).
func Log1pInto(dst, x *Tensor) *Tensor {
	return unaryInto("Log1pInto", ElemLog1p, [2]float32{}, dst, x)
}

// Expm1 returns e^x - 1 elementwise (simd.Expm1: within 1 ULP, x itself
// for tiny x).
func Expm1(x *Tensor) *Tensor { return unary("Expm1", ElemExpm1, [2]float32{}, x) }

// Expm1Into sets dst = e^x - 1.
func Expm1Into(dst, x *Tensor) *Tensor {
	return unaryInto("Expm1Into", ElemExpm1, [2]float32{}, dst, x)
}

// Floor returns the largest integer <= x elementwise (exact; ±0, ±Inf
// and NaN unchanged, Floor(-0.5) = -1).
func Floor(x *Tensor) *Tensor { return unary("Floor", ElemFloor, [2]float32{}, x) }

// FloorInto sets dst = Floor(x).
func FloorInto(dst, x *Tensor) *Tensor {
	return unaryInto("FloorInto", ElemFloor, [2]float32{}, dst, x)
}

// Ceil returns the smallest integer >= x elementwise (exact; Ceil(-0.5) =
// -0, ±Inf and NaN unchanged).
func Ceil(x *Tensor) *Tensor { return unary("Ceil", ElemCeil, [2]float32{}, x) }

// CeilInto sets dst = Ceil(x).
func CeilInto(dst, x *Tensor) *Tensor { return unaryInto("CeilInto", ElemCeil, [2]float32{}, dst, x) }

// Round returns x rounded to the nearest integer, halves to even, as
// torch.round and numpy.round (Round(0.5) = 0, Round(1.5) = 2, Round(2.5)
// = 2, Round(-0.5) = -0; ±Inf and NaN unchanged).
func Round(x *Tensor) *Tensor { return unary("Round", ElemRound, [2]float32{}, x) }

// RoundInto sets dst = Round(x).
func RoundInto(dst, x *Tensor) *Tensor {
	return unaryInto("RoundInto", ElemRound, [2]float32{}, dst, x)
}

// Sign returns -1, 0 or 1 elementwise as x is negative, zero (either
// sign: +0) or positive, and NaN for NaN (numpy.sign; torch 1.13's
// torch.sign gives 0 for NaN).
func Sign(x *Tensor) *Tensor { return unary("Sign", ElemSign, [2]float32{}, x) }

// SignInto sets dst = Sign(x).
func SignInto(dst, x *Tensor) *Tensor { return unaryInto("SignInto", ElemSign, [2]float32{}, dst, x) }

// IsNaN returns the mask of NaN elements.
func IsNaN(x *Tensor) *Tensor { return unary("IsNaN", ElemIsNaN, [2]float32{}, x) }

// IsNaNInto sets dst to the mask of NaN elements of x.
func IsNaNInto(dst, x *Tensor) *Tensor {
	return unaryInto("IsNaNInto", ElemIsNaN, [2]float32{}, dst, x)
}

// IsInf returns the mask of ±Inf elements.
func IsInf(x *Tensor) *Tensor { return unary("IsInf", ElemIsInf, [2]float32{}, x) }

// IsInfInto sets dst to the mask of ±Inf elements of x.
func IsInfInto(dst, x *Tensor) *Tensor {
	return unaryInto("IsInfInto", ElemIsInf, [2]float32{}, dst, x)
}

// IsFinite returns the mask of finite elements (neither NaN nor ±Inf).
func IsFinite(x *Tensor) *Tensor { return unary("IsFinite", ElemIsFinite, [2]float32{}, x) }

// IsFiniteInto sets dst to the mask of finite elements of x.
func IsFiniteInto(dst, x *Tensor) *Tensor {
	return unaryInto("IsFiniteInto", ElemIsFinite, [2]float32{}, dst, x)
}

// LogicalNot returns the mask of zero elements (±0; NaN is true, so 0).
func LogicalNot(x *Tensor) *Tensor { return unary("LogicalNot", ElemLogicalNot, [2]float32{}, x) }

// LogicalNotInto sets dst to the mask of zero elements of x.
func LogicalNotInto(dst, x *Tensor) *Tensor {
	return unaryInto("LogicalNotInto", ElemLogicalNot, [2]float32{}, dst, x)
}

// Mod returns the remainder of a/b with the sign of the divisor b, as
// torch.remainder and numpy.mod (Python's %): fmod(a, b), plus b where
// that is nonzero and its sign differs from b's (the one rounding of the
// result). Mod(a, ±0) = NaN, Mod(±Inf, b) = NaN, Mod(a, ±Inf) = a where a
// has b's sign (or is ±0), else ±Inf; Mod(-4, 2) = -0 (torch's result).
func Mod(a, b *Tensor) *Tensor { return binary("Mod", ElemMod, a, b) }

// ModInto sets dst = Mod(a, b).
func ModInto(dst, a, b *Tensor) *Tensor { return binaryInto("ModInto", ElemMod, dst, a, b) }

// Fmod returns the remainder of a/b with the sign of the dividend a, as C
// fmod, torch.fmod and numpy.fmod: exact. Fmod(a, ±0) = NaN, Fmod(±Inf,
// b) = NaN, Fmod(a, ±Inf) = a.
func Fmod(a, b *Tensor) *Tensor { return binary("Fmod", ElemFmod, a, b) }

// FmodInto sets dst = Fmod(a, b).
func FmodInto(dst, a, b *Tensor) *Tensor { return binaryInto("FmodInto", ElemFmod, dst, a, b) }

// LogicalAnd returns the mask where a and b are both nonzero.
func LogicalAnd(a, b *Tensor) *Tensor { return binary("LogicalAnd", ElemLogicalAnd, a, b) }

// LogicalAndInto sets dst to the mask where a and b are both nonzero.
func LogicalAndInto(dst, a, b *Tensor) *Tensor {
	return binaryInto("LogicalAndInto", ElemLogicalAnd, dst, a, b)
}

// LogicalOr returns the mask where a or b is nonzero.
func LogicalOr(a, b *Tensor) *Tensor { return binary("LogicalOr", ElemLogicalOr, a, b) }

// LogicalOrInto sets dst to the mask where a or b is nonzero.
func LogicalOrInto(dst, a, b *Tensor) *Tensor {
	return binaryInto("LogicalOrInto", ElemLogicalOr, dst, a, b)
}

// LogicalXor returns the mask where exactly one of a and b is nonzero.
func LogicalXor(a, b *Tensor) *Tensor { return binary("LogicalXor", ElemLogicalXor, a, b) }

// LogicalXorInto sets dst to the mask where exactly one of a and b is
// nonzero.
func LogicalXorInto(dst, a, b *Tensor) *Tensor {
	return binaryInto("LogicalXorInto", ElemLogicalXor, dst, a, b)
}

func sinKernel(s [][]float32, _ *[2]float32)   { simd.Sin(s[0], s[1]) }
func cosKernel(s [][]float32, _ *[2]float32)   { simd.Cos(s[0], s[1]) }
func tanKernel(s [][]float32, _ *[2]float32)   { simd.Tan(s[0], s[1]) }
func log1pKernel(s [][]float32, _ *[2]float32) { simd.Log1p(s[0], s[1]) }
func expm1Kernel(s [][]float32, _ *[2]float32) { simd.Expm1(s[0], s[1]) }

// mapKernel returns the kernel dst[i] = f(x[i]).
func mapKernel(f func(float32) float32) kernel {
	return func(s [][]float32, _ *[2]float32) {
		d, x := s[0], s[1][:len(s[0])]
		for i, v := range x {
			d[i] = f(v)
		}
	}
}

// zipKernel returns the kernel dst[i] = f(a[i], b[i]).
func zipKernel(f func(a, b float32) float32) kernel {
	return func(s [][]float32, _ *[2]float32) {
		d, a, b := s[0], s[1][:len(s[0])], s[2][:len(s[0])]
		for i := range d {
			d[i] = f(a[i], b[i])
		}
	}
}

var (
	floorKernel  = mapKernel(func(v float32) float32 { return float32(math.Floor(float64(v))) })
	ceilKernel   = mapKernel(func(v float32) float32 { return float32(math.Ceil(float64(v))) })
	roundKernel  = mapKernel(func(v float32) float32 { return float32(math.RoundToEven(float64(v))) })
	signKernel   = mapKernel(sign32)
	isNaNKernel  = mapKernel(func(v float32) float32 { return mask(v != v) })
	isInfKernel  = mapKernel(func(v float32) float32 { return mask(v > math.MaxFloat32 || v < -math.MaxFloat32) })
	finiteKernel = mapKernel(func(v float32) float32 {
		return mask(v <= math.MaxFloat32 && v >= -math.MaxFloat32)
	})
	notKernel  = mapKernel(func(v float32) float32 { return mask(v == 0) })
	modKernel  = zipKernel(mod32)
	fmodKernel = zipKernel(fmod32)
	andKernel  = zipKernel(func(a, b float32) float32 { return mask(a != 0 && b != 0) })
	orKernel   = zipKernel(func(a, b float32) float32 { return mask(a != 0 || b != 0) })
	xorKernel  = zipKernel(func(a, b float32) float32 { return mask((a != 0) != (b != 0)) })
)

func sign32(v float32) float32 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	case v == 0:
		return 0
	}
	return v // NaN
}

// fmod32 is C fmod: exact, so computing it in float64 gives the float32
// result.
func fmod32(a, b float32) float32 { return float32(math.Mod(float64(a), float64(b))) }

// mod32 is torch.remainder's formula: fmod, then + b where the remainder
// is nonzero and its sign differs from b's (one float32 rounding).
func mod32(a, b float32) float32 {
	r := fmod32(a, b)
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r
}

// The gradients (UnaryGrad), PyTorch's formulas.

func sinGrad(s [][]float32, a *[2]float32) { byPieces(s, a, sinGradPiece) }

// sinGradPiece: dx = dy·cos(x).
func sinGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	c := t[0][:len(dx)]
	simd.Cos(c, x)
	simd.Mul(dx, dy, c)
}

func cosGrad(s [][]float32, a *[2]float32) { byPieces(s, a, cosGradPiece) }

// cosGradPiece: dx = -dy·sin(x).
func cosGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	sn := t[0][:len(dx)]
	simd.Sin(sn, x)
	simd.Neg(sn, sn)
	simd.Mul(dx, dy, sn)
}

func tanGrad(s [][]float32, a *[2]float32) { byPieces(s, a, tanGradPiece) }

// tanGradPiece: dx = dy·(1 + y²).
func tanGradPiece(dx, dy, y []float32, t *gradTemp, _ *[2]float32) {
	d := t[0][:len(dx)]
	simd.Mul(d, y, y)
	simd.AddScalar(d, d, 1)
	simd.Mul(dx, dy, d)
}

func log1pGrad(s [][]float32, a *[2]float32) { byPieces(s, a, log1pGradPiece) }

// log1pGradPiece: dx = dy/(1 + x).
func log1pGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	d := t[0][:len(dx)]
	simd.AddScalar(d, x, 1)
	simd.Div(dx, dy, d)
}

func expm1Grad(s [][]float32, a *[2]float32) { byPieces(s, a, expm1GradPiece) }

// expm1GradPiece: dx = dy·(y + 1).
func expm1GradPiece(dx, dy, y []float32, t *gradTemp, _ *[2]float32) {
	d := t[0][:len(dx)]
	simd.AddScalar(d, y, 1)
	simd.Mul(dx, dy, d)
}

// zeroGrad: dx = 0 (Floor, Ceil, Round, Sign: PyTorch's zeros_like).
func zeroGrad(s [][]float32, _ *[2]float32) { clear(s[0]) }
