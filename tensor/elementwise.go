package tensor

import (
	"fmt"
	"math"

	"github.com/lanesgo/lanes/simd"
)

// Elementwise operations follow NumPy's broadcasting: operand shapes are
// aligned at their last dimension and a dimension of size 1 (or a missing
// leading one) repeats to match the other. Each op returns a new contiguous
// tensor of the broadcast shape; its ...Into form writes into dst, whose
// shape must be the broadcast shape (operands broadcast to it), returns dst
// and allocates nothing in steady state. dst may be one of the operands, or
// overlap them in any way (an overlapping operand is then copied first).
// Results are those of the simd kernel of the same name (bit-identical to
// IEEE arithmetic for Add ... Minimum; the max ULP of package simd for the
// transcendentals), whatever the layouts.
//
// With an operand (dst included) on a device, an op runs on that device's
// Elementwise family (ElementwiseKernels) and returns a tensor there; the
// other operands must be on the same device, but for 0-d host tensors
// (scalars). A device without the family, or an error of its
// implementation, makes the op panic naming it, the shapes and the
// devices; nothing is copied to the host behind the caller's back.

func binary(op string, e ElemOp, a, b *Tensor) *Tensor {
	checkNil(op, "a, b", a, b)
	shape := broadcastShape(op, a, b)
	dev := deviceOn(op, nil, a, b)
	k := elementwiseOn(op, dev, nil, a, b)
	dst := result(op, dev, shape, a, b)
	ran(op, k.Binary(e, dst, a, b), dst, a, b)
	return dst
}

func binaryInto(op string, e ElemOp, dst, a, b *Tensor) *Tensor {
	checkNil(op, "dst, a, b", dst, a, b)
	checkBroadcastInto(op, dst, a, b)
	dev := deviceOn(op, dst, a, b)
	k := elementwiseOn(op, dev, dst, a, b)
	if dev == CPU {
		a, b = unalias(dst, a), unalias(dst, b)
	}
	ran(op, k.Binary(e, dst, a, b), dst, a, b)
	return dst
}

// Add returns a + b.
func Add(a, b *Tensor) *Tensor { return binary("Add", ElemAdd, a, b) }

// AddInto sets dst = a + b.
func AddInto(dst, a, b *Tensor) *Tensor { return binaryInto("AddInto", ElemAdd, dst, a, b) }

// Sub returns a - b.
func Sub(a, b *Tensor) *Tensor { return binary("Sub", ElemSub, a, b) }

// SubInto sets dst = a - b.
func SubInto(dst, a, b *Tensor) *Tensor { return binaryInto("SubInto", ElemSub, dst, a, b) }

// Mul returns a·b elementwise.
func Mul(a, b *Tensor) *Tensor { return binary("Mul", ElemMul, a, b) }

// MulInto sets dst = a·b elementwise.
func MulInto(dst, a, b *Tensor) *Tensor { return binaryInto("MulInto", ElemMul, dst, a, b) }

// Div returns a / b.
func Div(a, b *Tensor) *Tensor { return binary("Div", ElemDiv, a, b) }

// DivInto sets dst = a / b.
func DivInto(dst, a, b *Tensor) *Tensor { return binaryInto("DivInto", ElemDiv, dst, a, b) }

// Maximum returns the elementwise maximum; NaN in either operand gives NaN.
func Maximum(a, b *Tensor) *Tensor { return binary("Maximum", ElemMaximum, a, b) }

// MaximumInto sets dst to the elementwise maximum.
func MaximumInto(dst, a, b *Tensor) *Tensor { return binaryInto("MaximumInto", ElemMaximum, dst, a, b) }

// Minimum returns the elementwise minimum; NaN in either operand gives NaN.
func Minimum(a, b *Tensor) *Tensor { return binary("Minimum", ElemMinimum, a, b) }

// MinimumInto sets dst to the elementwise minimum.
func MinimumInto(dst, a, b *Tensor) *Tensor { return binaryInto("MinimumInto", ElemMinimum, dst, a, b) }

// Pow returns a raised to b elementwise, as math.Pow in float64 rounded to
// float32 (correctly rounded but for the rare double rounding).
func Pow(a, b *Tensor) *Tensor { return binary("Pow", ElemPow, a, b) }

// PowInto sets dst = a^b elementwise.
func PowInto(dst, a, b *Tensor) *Tensor { return binaryInto("PowInto", ElemPow, dst, a, b) }

func addKernel(s [][]float32, _ *[2]float32) { simd.Add(s[0], s[1], s[2]) }
func subKernel(s [][]float32, _ *[2]float32) { simd.Sub(s[0], s[1], s[2]) }
func mulKernel(s [][]float32, _ *[2]float32) { simd.Mul(s[0], s[1], s[2]) }
func divKernel(s [][]float32, _ *[2]float32) { simd.Div(s[0], s[1], s[2]) }
func maxKernel(s [][]float32, _ *[2]float32) { simd.Maximum(s[0], s[1], s[2]) }
func minKernel(s [][]float32, _ *[2]float32) { simd.Minimum(s[0], s[1], s[2]) }

func powKernel(s [][]float32, _ *[2]float32) {
	d, a, b := s[0], s[1][:len(s[0])], s[2][:len(s[0])]
	for i := range d {
		d[i] = float32(math.Pow(float64(a[i]), float64(b[i])))
	}
}

// Comparisons return masks: 1 where the relation holds, else 0 (NaN
// compares unequal to everything, itself included, as in IEEE).

// Greater returns the mask a > b.
func Greater(a, b *Tensor) *Tensor { return binary("Greater", ElemGreater, a, b) }

// GreaterInto sets dst to the mask a > b.
func GreaterInto(dst, a, b *Tensor) *Tensor { return binaryInto("GreaterInto", ElemGreater, dst, a, b) }

// GreaterEqual returns the mask a >= b.
func GreaterEqual(a, b *Tensor) *Tensor { return binary("GreaterEqual", ElemGreaterEqual, a, b) }

// GreaterEqualInto sets dst to the mask a >= b.
func GreaterEqualInto(dst, a, b *Tensor) *Tensor {
	return binaryInto("GreaterEqualInto", ElemGreaterEqual, dst, a, b)
}

// Less returns the mask a < b.
func Less(a, b *Tensor) *Tensor { return binary("Less", ElemLess, a, b) }

// LessInto sets dst to the mask a < b.
func LessInto(dst, a, b *Tensor) *Tensor { return binaryInto("LessInto", ElemLess, dst, a, b) }

// LessEqual returns the mask a <= b.
func LessEqual(a, b *Tensor) *Tensor { return binary("LessEqual", ElemLessEqual, a, b) }

// LessEqualInto sets dst to the mask a <= b.
func LessEqualInto(dst, a, b *Tensor) *Tensor {
	return binaryInto("LessEqualInto", ElemLessEqual, dst, a, b)
}

// Equal returns the mask a == b.
func Equal(a, b *Tensor) *Tensor { return binary("Equal", ElemEqual, a, b) }

// EqualInto sets dst to the mask a == b.
func EqualInto(dst, a, b *Tensor) *Tensor { return binaryInto("EqualInto", ElemEqual, dst, a, b) }

// NotEqual returns the mask a != b.
func NotEqual(a, b *Tensor) *Tensor { return binary("NotEqual", ElemNotEqual, a, b) }

// NotEqualInto sets dst to the mask a != b.
func NotEqualInto(dst, a, b *Tensor) *Tensor {
	return binaryInto("NotEqualInto", ElemNotEqual, dst, a, b)
}

func mask(c bool) float32 {
	if c {
		return 1
	}
	return 0
}

// ltKernel and leKernel are gtKernel and geKernel with the operands
// swapped (s is the caller's scratch header, refilled before every call).
func ltKernel(s [][]float32, arg *[2]float32) {
	s[1], s[2] = s[2], s[1]
	gtKernel(s, arg)
}

func leKernel(s [][]float32, arg *[2]float32) {
	s[1], s[2] = s[2], s[1]
	geKernel(s, arg)
}

func gtKernel(s [][]float32, _ *[2]float32) {
	d, a, b := s[0], s[1][:len(s[0])], s[2][:len(s[0])]
	for i := range d {
		d[i] = mask(a[i] > b[i])
	}
}

func geKernel(s [][]float32, _ *[2]float32) {
	d, a, b := s[0], s[1][:len(s[0])], s[2][:len(s[0])]
	for i := range d {
		d[i] = mask(a[i] >= b[i])
	}
}

func eqKernel(s [][]float32, _ *[2]float32) {
	d, a, b := s[0], s[1][:len(s[0])], s[2][:len(s[0])]
	for i := range d {
		d[i] = mask(a[i] == b[i])
	}
}

func neKernel(s [][]float32, _ *[2]float32) {
	d, a, b := s[0], s[1][:len(s[0])], s[2][:len(s[0])]
	for i := range d {
		d[i] = mask(a[i] != b[i])
	}
}

// Where returns a where cond is nonzero (NaN counts as nonzero), else b;
// the three broadcast together.
func Where(cond, a, b *Tensor) *Tensor {
	checkNil("Where", "cond, a, b", cond, a, b)
	shape := broadcastShape("Where", cond, a, b)
	dev := deviceOn("Where", nil, cond, a, b)
	k := elementwiseOn("Where", dev, nil, cond, a, b)
	dst := result("Where", dev, shape, cond, a, b)
	ran("Where", k.Where(dst, cond, a, b), dst, cond, a, b)
	return dst
}

// WhereInto sets dst to a where cond is nonzero, else b.
func WhereInto(dst, cond, a, b *Tensor) *Tensor {
	checkNil("WhereInto", "dst, cond, a, b", dst, cond, a, b)
	checkBroadcastInto("WhereInto", dst, cond, a, b)
	dev := deviceOn("WhereInto", dst, cond, a, b)
	k := elementwiseOn("WhereInto", dev, dst, cond, a, b)
	if dev == CPU {
		cond, a, b = unalias(dst, cond), unalias(dst, a), unalias(dst, b)
	}
	ran("WhereInto", k.Where(dst, cond, a, b), dst, cond, a, b)
	return dst
}

func whereKernel(s [][]float32, _ *[2]float32) {
	d, c, a, b := s[0], s[1][:len(s[0])], s[2][:len(s[0])], s[3][:len(s[0])]
	for i := range d {
		if c[i] != 0 {
			d[i] = a[i]
		} else {
			d[i] = b[i]
		}
	}
}

// Unary operations: the simd kernel of the same name over every element.

func unary(op string, e ElemOp, arg [2]float32, x *Tensor) *Tensor {
	checkNil(op, "x", x)
	dev := deviceOn(op, nil, x)
	k := elementwiseOn(op, dev, nil, x)
	dst := result(op, dev, x.shape, x)
	ran(op, k.Unary(e, dst, x, arg), dst, x)
	return dst
}

func unaryInto(op string, e ElemOp, arg [2]float32, dst, x *Tensor) *Tensor {
	checkNil(op, "dst, x", dst, x)
	checkBroadcastInto(op, dst, x)
	dev := deviceOn(op, dst, x)
	k := elementwiseOn(op, dev, dst, x)
	if dev == CPU {
		x = unalias(dst, x)
	}
	ran(op, k.Unary(e, dst, x, arg), dst, x)
	return dst
}

// Exp returns e^x elementwise (simd.Exp).
func Exp(x *Tensor) *Tensor { return unary("Exp", ElemExp, [2]float32{}, x) }

// ExpInto sets dst = e^x.
func ExpInto(dst, x *Tensor) *Tensor { return unaryInto("ExpInto", ElemExp, [2]float32{}, dst, x) }

// Log returns the natural logarithm elementwise (simd.Log).
func Log(x *Tensor) *Tensor { return unary("Log", ElemLog, [2]float32{}, x) }

// LogInto sets dst = log(x).
func LogInto(dst, x *Tensor) *Tensor { return unaryInto("LogInto", ElemLog, [2]float32{}, dst, x) }

// Sigmoid returns 1/(1+e^-x) elementwise (simd.Sigmoid).
func Sigmoid(x *Tensor) *Tensor { return unary("Sigmoid", ElemSigmoid, [2]float32{}, x) }

// SigmoidInto sets dst = sigmoid(x).
func SigmoidInto(dst, x *Tensor) *Tensor {
	return unaryInto("SigmoidInto", ElemSigmoid, [2]float32{}, dst, x)
}

// SiLU returns x·sigmoid(x) elementwise (simd.SiLU).
func SiLU(x *Tensor) *Tensor { return unary("SiLU", ElemSiLU, [2]float32{}, x) }

// SiLUInto sets dst = silu(x).
func SiLUInto(dst, x *Tensor) *Tensor { return unaryInto("SiLUInto", ElemSiLU, [2]float32{}, dst, x) }

// Tanh returns tanh(x) elementwise (simd.Tanh).
func Tanh(x *Tensor) *Tensor { return unary("Tanh", ElemTanh, [2]float32{}, x) }

// TanhInto sets dst = tanh(x).
func TanhInto(dst, x *Tensor) *Tensor { return unaryInto("TanhInto", ElemTanh, [2]float32{}, dst, x) }

// Softplus returns log(1+e^x) elementwise (simd.Softplus).
func Softplus(x *Tensor) *Tensor { return unary("Softplus", ElemSoftplus, [2]float32{}, x) }

// SoftplusInto sets dst = softplus(x).
func SoftplusInto(dst, x *Tensor) *Tensor {
	return unaryInto("SoftplusInto", ElemSoftplus, [2]float32{}, dst, x)
}

// Erf returns the error function elementwise (simd.Erf).
func Erf(x *Tensor) *Tensor { return unary("Erf", ElemErf, [2]float32{}, x) }

// ErfInto sets dst = erf(x).
func ErfInto(dst, x *Tensor) *Tensor { return unaryInto("ErfInto", ElemErf, [2]float32{}, dst, x) }

// GELU returns x·Φ(x) elementwise (simd.GELU, the erf form).
func GELU(x *Tensor) *Tensor { return unary("GELU", ElemGELU, [2]float32{}, x) }

// GELUInto sets dst = gelu(x).
func GELUInto(dst, x *Tensor) *Tensor { return unaryInto("GELUInto", ElemGELU, [2]float32{}, dst, x) }

// GELUTanh returns the tanh approximation of GELU elementwise (simd.GELUTanh).
func GELUTanh(x *Tensor) *Tensor { return unary("GELUTanh", ElemGELUTanh, [2]float32{}, x) }

// GELUTanhInto sets dst = geluTanh(x).
func GELUTanhInto(dst, x *Tensor) *Tensor {
	return unaryInto("GELUTanhInto", ElemGELUTanh, [2]float32{}, dst, x)
}

// Abs returns |x| elementwise.
func Abs(x *Tensor) *Tensor { return unary("Abs", ElemAbs, [2]float32{}, x) }

// AbsInto sets dst = |x|.
func AbsInto(dst, x *Tensor) *Tensor { return unaryInto("AbsInto", ElemAbs, [2]float32{}, dst, x) }

// Neg returns -x elementwise.
func Neg(x *Tensor) *Tensor { return unary("Neg", ElemNeg, [2]float32{}, x) }

// NegInto sets dst = -x.
func NegInto(dst, x *Tensor) *Tensor { return unaryInto("NegInto", ElemNeg, [2]float32{}, dst, x) }

// Sqrt returns the square root elementwise (correctly rounded).
func Sqrt(x *Tensor) *Tensor { return unary("Sqrt", ElemSqrt, [2]float32{}, x) }

// SqrtInto sets dst = sqrt(x).
func SqrtInto(dst, x *Tensor) *Tensor { return unaryInto("SqrtInto", ElemSqrt, [2]float32{}, dst, x) }

// ReLU returns max(x, 0) elementwise (NaN stays NaN).
func ReLU(x *Tensor) *Tensor { return unary("ReLU", ElemReLU, [2]float32{}, x) }

// ReLUInto sets dst = relu(x).
func ReLUInto(dst, x *Tensor) *Tensor { return unaryInto("ReLUInto", ElemReLU, [2]float32{}, dst, x) }

// LeakyReLU returns x for x >= 0, alpha·x below (simd.LeakyReLU).
func LeakyReLU(x *Tensor, alpha float32) *Tensor {
	return unary("LeakyReLU", ElemLeakyReLU, [2]float32{alpha}, x)
}

// LeakyReLUInto sets dst = leakyReLU(x, alpha).
func LeakyReLUInto(dst, x *Tensor, alpha float32) *Tensor {
	return unaryInto("LeakyReLUInto", ElemLeakyReLU, [2]float32{alpha}, dst, x)
}

// ELU returns x for x > 0, alpha·(e^x-1) below (simd.ELU).
func ELU(x *Tensor, alpha float32) *Tensor { return unary("ELU", ElemELU, [2]float32{alpha}, x) }

// ELUInto sets dst = elu(x, alpha).
func ELUInto(dst, x *Tensor, alpha float32) *Tensor {
	return unaryInto("ELUInto", ElemELU, [2]float32{alpha}, dst, x)
}

// Clamp returns x limited to [lo, hi] elementwise (simd.Clamp).
func Clamp(x *Tensor, lo, hi float32) *Tensor {
	return unary("Clamp", ElemClamp, [2]float32{lo, hi}, x)
}

// ClampInto sets dst = clamp(x, lo, hi).
func ClampInto(dst, x *Tensor, lo, hi float32) *Tensor {
	return unaryInto("ClampInto", ElemClamp, [2]float32{lo, hi}, dst, x)
}

// Scale returns s·x.
func Scale(x *Tensor, s float32) *Tensor { return unary("Scale", ElemScale, [2]float32{s}, x) }

// ScaleInto sets dst = s·x.
func ScaleInto(dst, x *Tensor, s float32) *Tensor {
	return unaryInto("ScaleInto", ElemScale, [2]float32{s}, dst, x)
}

// AddScalar returns x + s.
func AddScalar(x *Tensor, s float32) *Tensor {
	return unary("AddScalar", ElemAddScalar, [2]float32{s}, x)
}

// AddScalarInto sets dst = x + s.
func AddScalarInto(dst, x *Tensor, s float32) *Tensor {
	return unaryInto("AddScalarInto", ElemAddScalar, [2]float32{s}, dst, x)
}

// Fill sets every element of dst to v and returns dst.
func Fill(dst *Tensor, v float32) *Tensor {
	checkNil("Fill", "dst", dst)
	checkWritable("Fill", dst)
	dev := deviceOn("Fill", dst)
	ran("Fill", elementwiseOn("Fill", dev, nil, dst).Unary(ElemFill, dst, nil, [2]float32{v}), nil, dst)
	return dst
}

func expKernel(s [][]float32, _ *[2]float32)       { simd.Exp(s[0], s[1]) }
func logKernel(s [][]float32, _ *[2]float32)       { simd.Log(s[0], s[1]) }
func sigmoidKernel(s [][]float32, _ *[2]float32)   { simd.Sigmoid(s[0], s[1]) }
func siluKernel(s [][]float32, _ *[2]float32)      { simd.SiLU(s[0], s[1]) }
func tanhKernel(s [][]float32, _ *[2]float32)      { simd.Tanh(s[0], s[1]) }
func softplusKernel(s [][]float32, _ *[2]float32)  { simd.Softplus(s[0], s[1]) }
func erfKernel(s [][]float32, _ *[2]float32)       { simd.Erf(s[0], s[1]) }
func geluKernel(s [][]float32, _ *[2]float32)      { simd.GELU(s[0], s[1]) }
func geluTanhKernel(s [][]float32, _ *[2]float32)  { simd.GELUTanh(s[0], s[1]) }
func absKernel(s [][]float32, _ *[2]float32)       { simd.Abs(s[0], s[1]) }
func negKernel(s [][]float32, _ *[2]float32)       { simd.Neg(s[0], s[1]) }
func sqrtKernel(s [][]float32, _ *[2]float32)      { simd.Sqrt(s[0], s[1]) }
func reluKernel(s [][]float32, _ *[2]float32)      { simd.ReLU(s[0], s[1]) }
func leakyKernel(s [][]float32, a *[2]float32)     { simd.LeakyReLU(s[0], s[1], a[0]) }
func eluKernel(s [][]float32, a *[2]float32)       { simd.ELU(s[0], s[1], a[0]) }
func clampKernel(s [][]float32, a *[2]float32)     { simd.Clamp(s[0], s[1], a[0], a[1]) }
func scaleKernel(s [][]float32, a *[2]float32)     { simd.Scale(s[0], s[1], a[0]) }
func addScalarKernel(s [][]float32, a *[2]float32) { simd.AddScalar(s[0], s[1], a[0]) }

// fillHost is Fill for the CPU's own kernels: dst is a checked host tensor,
// so it goes straight to the kernel, not through Fill's checks and routing.
func fillHost(dst *Tensor, v float32) { run("Fill", dst.shape, fillKernel, [2]float32{v}, dst) }

func fillKernel(s [][]float32, a *[2]float32) {
	for i := range s[0] {
		s[0][i] = a[0]
	}
}

// ElemOp names an op of the Elementwise family (ElementwiseKernels).
type ElemOp uint8

// The ops of the Elementwise family, each named after its tensor function.
const (
	// Binary: dst = op(a, b).
	ElemAdd ElemOp = iota + 1
	ElemSub
	ElemMul
	ElemDiv
	ElemMaximum
	ElemMinimum
	ElemPow
	// Binary comparisons: dst = 1 where the relation holds, else 0.
	ElemGreater
	ElemGreaterEqual
	ElemLess
	ElemLessEqual
	ElemEqual
	ElemNotEqual
	// Binary, elemfn.go: remainders and logical masks.
	ElemMod
	ElemFmod
	ElemLogicalAnd
	ElemLogicalOr
	ElemLogicalXor
	// Unary: dst = op(x).
	ElemExp
	ElemLog
	ElemSigmoid
	ElemSiLU
	ElemTanh
	ElemSoftplus
	ElemErf
	ElemGELU
	ElemGELUTanh
	ElemAbs
	ElemNeg
	ElemSqrt
	ElemReLU
	ElemSin // elemfn.go, as the ones to ElemSign
	ElemCos
	ElemTan
	ElemLog1p
	ElemExpm1
	ElemFloor
	ElemCeil
	ElemRound
	ElemSign
	// Unary with arguments: dst = op(x; arg[0], arg[1]).
	ElemLeakyReLU // alpha
	ElemELU       // alpha
	ElemClamp     // lo, hi
	ElemScale     // s
	ElemAddScalar // s
	ElemFill      // v; no x
	// Unary masks without a gradient (elemfn.go).
	ElemIsNaN
	ElemIsInf
	ElemIsFinite
	ElemLogicalNot
	numElemOps
)

// elemKernels is the CPU's kernel of each ElemOp.
var elemKernels = [numElemOps]kernel{
	ElemAdd: addKernel, ElemSub: subKernel, ElemMul: mulKernel, ElemDiv: divKernel,
	ElemMaximum: maxKernel, ElemMinimum: minKernel, ElemPow: powKernel,
	ElemGreater: gtKernel, ElemGreaterEqual: geKernel, ElemLess: ltKernel, ElemLessEqual: leKernel,
	ElemEqual: eqKernel, ElemNotEqual: neKernel,
	ElemExp: expKernel, ElemLog: logKernel, ElemSigmoid: sigmoidKernel, ElemSiLU: siluKernel,
	ElemTanh: tanhKernel, ElemSoftplus: softplusKernel, ElemErf: erfKernel, ElemGELU: geluKernel,
	ElemGELUTanh: geluTanhKernel, ElemAbs: absKernel, ElemNeg: negKernel, ElemSqrt: sqrtKernel,
	ElemReLU: reluKernel, ElemLeakyReLU: leakyKernel, ElemELU: eluKernel, ElemClamp: clampKernel,
	ElemScale: scaleKernel, ElemAddScalar: addScalarKernel, ElemFill: fillKernel,
	ElemMod: modKernel, ElemFmod: fmodKernel, ElemLogicalAnd: andKernel, ElemLogicalOr: orKernel,
	ElemLogicalXor: xorKernel, ElemSin: sinKernel, ElemCos: cosKernel, ElemTan: tanKernel,
	ElemLog1p: log1pKernel, ElemExpm1: expm1Kernel, ElemFloor: floorKernel, ElemCeil: ceilKernel,
	ElemRound: roundKernel, ElemSign: signKernel, ElemIsNaN: isNaNKernel, ElemIsInf: isInfKernel,
	ElemIsFinite: finiteKernel, ElemLogicalNot: notKernel,
}

// elemKernel returns the CPU's kernel of op, which must be one of want's
// kind (binary ops and comparisons, or unary ones).
func elemKernel(op ElemOp, binary bool) kernel {
	if op == 0 || op >= numElemOps || (op < ElemExp) != binary {
		panic(fmt.Sprintf("tensor: Elementwise: op %d is not one of the method's ops", op))
	}
	return elemKernels[op]
}

// Binary is the CPU's binary ops and comparisons: host operands checked
// to broadcast to dst, none overlapping dst.
func (cpuKernels) Binary(op ElemOp, dst, a, b *Tensor) error {
	run("Elementwise", dst.shape, elemKernel(op, true), [2]float32{}, dst, a, b)
	return nil
}

// Unary is the CPU's unary ops, as Binary; x is nil for ElemFill.
func (cpuKernels) Unary(op ElemOp, dst, x *Tensor, arg [2]float32) error {
	k := elemKernel(op, false)
	if op == ElemFill {
		run("Fill", dst.shape, k, arg, dst)
		return nil
	}
	run("Elementwise", dst.shape, k, arg, dst, x)
	return nil
}

// Where is the CPU's Where, as Binary.
func (cpuKernels) Where(dst, cond, a, b *Tensor) error {
	run("Where", dst.shape, whereKernel, [2]float32{}, dst, cond, a, b)
	return nil
}
