package tensor

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/lanesgo/lanes/simd"
)

// The gradients of the unary ops, fused with the product by the incoming
// gradient (one pass, one launch on a device): what a backward pass needs
// from each activation.

// UnaryGrad returns dx = dy·f'(x), the gradient with respect to its input
// of the unary op f = op(·; arg) (ElemExp ... ElemAddScalar, with the
// arguments the forward op took: alpha, lo and hi, s), given the
// gradient dy of its output. x is the op's input and y its output; each
// op reads one of them, and the other may be nil:
//
//	op             reads                dx
//	ElemExp        y                    dy·y
//	ElemLog        x                    dy/x
//	ElemSigmoid    y                    dy·y·(1-y)
//	ElemSiLU       x                    dy·s·(1 + x·(1-s)), s = sigmoid(x)
//	ElemTanh       y                    dy·(1-y²)
//	ElemSoftplus   x                    dy·sigmoid(x)
//	ElemErf        x                    dy·2/√π·e^(-x²)
//	ElemGELU       x                    dy·(Φ(x) + x·φ(x)), Φ the normal CDF, φ its density
//	ElemGELUTanh   x                    dy·s·(1 + 2c·x·(1+3a·x²)·(1-s)), s = sigmoid(2c·(x + a·x³)),
//	                                    c = √(2/π), a = 0.044715
//	ElemAbs        x                    dy·sign(x) (sign(±0) = 0)
//	ElemNeg        neither              -dy
//	ElemSqrt       y                    dy/(2y)
//	ElemReLU       y, else x            dy where v > 0, 0 where v <= 0 (v is y or x)
//	ElemLeakyReLU  y if alpha > 0,      dy where v > 0, alpha·dy where v <= 0
//	               else x
//	ElemELU        y if alpha > 0,      dy where v > 0; where v <= 0, dy·(y + alpha) from y,
//	               else x               dy·alpha·e^x from x
//	ElemClamp      x                    dy where lo <= x <= hi, else 0
//	ElemScale      neither              s·dy
//	ElemAddScalar  neither              dy
//	ElemSin        x                    dy·cos(x)
//	ElemCos        x                    -dy·sin(x)
//	ElemTan        y                    dy·(1 + y²)
//	ElemLog1p      x                    dy/(1 + x)
//	ElemExpm1      y                    dy·(y + 1)
//	ElemFloor, ElemCeil, ElemRound, ElemSign
//	               neither              0 (PyTorch's zeros, NaN dy included)
//
// "y, else x" reads y when it is given; an op that needs x or y panics
// without it. The special values follow PyTorch's backward formulas: the
// gradient of ReLU at 0 is 0 (and dy at NaN), LeakyReLU's alpha·dy at 0
// and NaN, ELU's dy at NaN, Clamp's 0 at NaN, and the others' are the
// formula's (NaN propagates; Sigmoid and Tanh at y = ±1 or 0 give 0,
// Sqrt at y = 0 and Log at x = 0 give ±Inf). Where the formula would give
// Inf·0 = NaN at x = ±Inf, SiLU, GELU and GELUTanh give their limits, 1
// at +Inf and 0 at -Inf (PyTorch gives NaN). ElemFill, the masks (ElemIsNaN ...) and
// the binary ops panic.
//
// dy, x and y (those given) must have the shape of dx (no broadcasting);
// any of them may be views with any strides, and dx may be one of them
// (in place). The result is within a few ulp of dy·f' of the float32
// operands for the ops computed from their output or with exact
// arithmetic, and for the transcendental ones within the bounds that
// docs/accuracy.md states.
//
// With an operand on a device the gradient runs on that device's
// Elementwise family (UnaryBackward), as the elementwise ops do.
func UnaryGrad(op ElemOp, dy, x, y *Tensor, arg [2]float32) *Tensor {
	const name = "UnaryGrad"
	checkNil(name, "dy", dy)
	rx, ry := gradOperands(name, op, dy, x, y, arg)
	dev := deviceOn(name, nil, dy, x, y)
	k := elementwiseOn(name, dev, nil, dy, x, y)
	dx := result(name, dev, dy.shape, dy, x, y)
	ran(name, k.UnaryBackward(op, dx, dy, rx, ry, arg), dx, dy, x, y)
	return dx
}

// UnaryGradInto sets dx = UnaryGrad(op, dy, x, y, arg) and returns dx.
func UnaryGradInto(dx *Tensor, op ElemOp, dy, x, y *Tensor, arg [2]float32) *Tensor {
	const name = "UnaryGradInto"
	checkNil(name, "dx, dy", dx, dy)
	checkWritable(name, dx)
	if !slices.Equal(dy.shape, dx.shape) {
		panic(fmt.Sprintf("tensor: %s: dy shape %v and dx shape %v differ", name, dy.shape, dx.shape))
	}
	rx, ry := gradOperands(name, op, dx, x, y, arg)
	dev := deviceOn(name, dx, dy, x, y)
	k := elementwiseOn(name, dev, dx, dy, x, y)
	if dev == CPU {
		dy = unalias(dx, dy)
		if rx != nil {
			rx = unalias(dx, rx)
		}
		if ry != nil {
			ry = unalias(dx, ry)
		}
	}
	ran(name, k.UnaryBackward(op, dx, dy, rx, ry, arg), dx, dy, x, y)
	return dx
}

// gradOperands checks op, and x and y against like (dx or dy), and
// returns the operand that op's gradient reads (the other nil; both nil
// for the ops that read neither).
func gradOperands(name string, op ElemOp, like, x, y *Tensor, arg [2]float32) (rx, ry *Tensor) {
	if op < ElemExp || op >= ElemFill {
		panic(fmt.Sprintf("tensor: %s: op %d has no gradient (the unary ops ElemExp ... ElemAddScalar have)", name, op))
	}
	for _, t := range []*Tensor{x, y} {
		if t != nil && !slices.Equal(t.shape, like.shape) {
			panic(fmt.Sprintf("tensor: %s: shapes %s: x and y must have dy's shape %v", name, shapesOf([]*Tensor{x, y}), like.shape))
		}
	}
	g := &gradKernels[op]
	fromY := g.y != nil && (g.x == nil || op == ElemReLU || arg[0] > 0)
	switch {
	case g.none != nil:
		return nil, nil
	case fromY && y != nil:
		return nil, y
	case g.x != nil && x != nil:
		return x, nil
	}
	need := "x, the op's input"
	switch {
	case fromY && g.x != nil:
		need = "x or y, the op's input or output"
	case fromY:
		need = "y, the op's output"
	}
	panic(fmt.Sprintf("tensor: %s: the gradient of %s(arg %v) needs %s", name, g.name, arg, need))
}

// UnaryBackward is the CPU's UnaryGrad: host operands of dx's shape, none
// overlapping dx other than exactly (in place).
func (cpuKernels) UnaryBackward(op ElemOp, dx, dy, x, y *Tensor, arg [2]float32) error {
	if op < ElemExp || op >= ElemFill {
		panic(fmt.Sprintf("tensor: UnaryBackward: op %d has no gradient", op))
	}
	g := &gradKernels[op]
	switch {
	case g.none != nil:
		run("UnaryGrad", dx.shape, g.none, arg, dx, dy)
	case y != nil && g.y != nil:
		run("UnaryGrad", dx.shape, g.y, arg, dx, dy, y)
	case x != nil && g.x != nil:
		run("UnaryGrad", dx.shape, g.x, arg, dx, dy, x)
	default:
		panic(fmt.Sprintf("tensor: UnaryBackward: the gradient of %s lacks its operand", g.name))
	}
	return nil
}

// gradKernels holds, for each unary op, the CPU's kernels of its gradient:
// s[0] = dx, s[1] = dy, and s[2] the op's input (x), or its output (y),
// or nothing (none); an op has the kernels for the operands it can read.
var gradKernels = [numElemOps]struct {
	name       string
	none, x, y kernel
}{
	ElemExp:       {name: "Exp", y: expGrad},
	ElemLog:       {name: "Log", x: logGrad},
	ElemSigmoid:   {name: "Sigmoid", y: sigmoidGrad},
	ElemSiLU:      {name: "SiLU", x: siluGrad},
	ElemTanh:      {name: "Tanh", y: tanhGrad},
	ElemSoftplus:  {name: "Softplus", x: softplusGrad},
	ElemErf:       {name: "Erf", x: erfGrad},
	ElemGELU:      {name: "GELU", x: geluGrad},
	ElemGELUTanh:  {name: "GELUTanh", x: geluTanhGrad},
	ElemAbs:       {name: "Abs", x: absGrad},
	ElemNeg:       {name: "Neg", none: negGrad},
	ElemSqrt:      {name: "Sqrt", y: sqrtGrad},
	ElemReLU:      {name: "ReLU", x: reluGrad, y: reluGrad},
	ElemLeakyReLU: {name: "LeakyReLU", x: leakyGrad, y: leakyGrad},
	ElemELU:       {name: "ELU", x: eluGradX, y: eluGradY},
	ElemClamp:     {name: "Clamp", x: clampGrad},
	ElemScale:     {name: "Scale", none: scaleGrad},
	ElemAddScalar: {name: "AddScalar", none: addScalarGrad},
	ElemSin:       {name: "Sin", x: sinGrad},
	ElemCos:       {name: "Cos", x: cosGrad},
	ElemTan:       {name: "Tan", y: tanGrad},
	ElemLog1p:     {name: "Log1p", x: log1pGrad},
	ElemExpm1:     {name: "Expm1", y: expm1Grad},
	ElemFloor:     {name: "Floor", none: zeroGrad},
	ElemCeil:      {name: "Ceil", none: zeroGrad},
	ElemRound:     {name: "Round", none: zeroGrad},
	ElemSign:      {name: "Sign", none: zeroGrad},
}

func expGrad(s [][]float32, _ *[2]float32)   { simd.Mul(s[0], s[1], s[2]) }
func logGrad(s [][]float32, _ *[2]float32)   { simd.Div(s[0], s[1], s[2]) }
func negGrad(s [][]float32, _ *[2]float32)   { simd.Neg(s[0], s[1]) }
func scaleGrad(s [][]float32, a *[2]float32) { simd.Scale(s[0], s[1], a[0]) }

func addScalarGrad(s [][]float32, _ *[2]float32) { copy(s[0], s[1]) }

// operands returns dx, dy and v (s[2]) cut to one length.
func operands(s [][]float32) (dx, dy, v []float32) {
	n := len(s[0])
	return s[0], s[1][:n], s[2][:n]
}

// reluGrad keeps dy where v (y or x) is not <= 0 (NaN included) and
// writes +0 elsewhere, four elements a step: the comparisons compile to
// conditional moves, not branches (the signs are random in training), and
// the step of four (one bounds check each) took a quarter less time than
// one element a step, or than nn's bit test (which zeroed the gradient at
// -NaN), over 4096 and 65536 elements on the development machine.
func reluGrad(s [][]float32, _ *[2]float32) {
	dx, dy, v := operands(s)
	i := 0
	for ; i+3 < len(v); i += 4 {
		w, g, d := v[i:i+4:i+4], dy[i:i+4:i+4], dx[i:i+4:i+4]
		m0, m1, m2, m3 := keepAbove0(w[0]), keepAbove0(w[1]), keepAbove0(w[2]), keepAbove0(w[3])
		d[0] = math.Float32frombits(math.Float32bits(g[0]) & m0)
		d[1] = math.Float32frombits(math.Float32bits(g[1]) & m1)
		d[2] = math.Float32frombits(math.Float32bits(g[2]) & m2)
		d[3] = math.Float32frombits(math.Float32bits(g[3]) & m3)
	}
	for ; i < len(v); i++ {
		dx[i] = math.Float32frombits(math.Float32bits(dy[i]) & keepAbove0(v[i]))
	}
}

// keepAbove0 returns all ones unless v <= 0 (so for NaN too), else 0.
func keepAbove0(v float32) uint32 {
	m := uint32(0xffffffff)
	if v <= 0 {
		m = 0
	}
	return m
}

// oneBits is the bits of 1.
const oneBits = 0x3f800000

// leakyGrad: dx = dy where v > 0, alpha·dy elsewhere (NaN included), the
// factor chosen by a conditional move on its bits.
func leakyGrad(s [][]float32, a *[2]float32) {
	dx, dy, v := operands(s)
	alpha := math.Float32bits(a[0])
	for i, e := range v {
		f := alpha
		if e > 0 {
			f = oneBits
		}
		dx[i] = dy[i] * math.Float32frombits(f)
	}
}

// eluGradY: dx = dy where y <= 0 does not hold, dy·(y + alpha) where it
// does, as leakyGrad.
func eluGradY(s [][]float32, a *[2]float32) {
	dx, dy, y := operands(s)
	alpha := a[0]
	for i, e := range y {
		f := math.Float32bits(e + alpha)
		if !(e <= 0) {
			f = oneBits
		}
		dx[i] = dy[i] * math.Float32frombits(f)
	}
}

func clampGrad(s [][]float32, a *[2]float32) {
	dx, dy, x := operands(s)
	lo, hi := a[0], a[1]
	for i, e := range x {
		if e >= lo && e <= hi {
			dx[i] = dy[i]
		} else {
			dx[i] = 0
		}
	}
}

// absGrad multiplies dy by sign(x): ±1 (the sign bit of x on 1's bits),
// 0 for ±0, x itself for NaN.
func absGrad(s [][]float32, _ *[2]float32) {
	dx, dy, x := operands(s)
	for i, e := range x {
		b := math.Float32bits(e)
		m := b & 0x7fffffff
		nonzero := uint32(-int32(m) >> 31)
		nan := uint32((0x7f800000 - int64(m)) >> 63)
		sign := (b&0x80000000 | 0x3f800000) & nonzero &^ nan
		dx[i] = dy[i] * math.Float32frombits(sign|b&nan)
	}
}

// The gradients built on simd's transcendental kernels run over pieces of
// at most chunk elements, with scratch space from gradTemps: the pieces
// stay in the L1 cache between the kernels, and every input element is
// read before its dx is written, so that dx may be an operand.

type gradTemp [3][chunk]float32

var gradTemps = sync.Pool{New: func() any { return new(gradTemp) }}

// byPieces runs piece over s (dx, dy, v) in pieces of at most chunk
// elements.
func byPieces(s [][]float32, a *[2]float32, piece func(dx, dy, v []float32, t *gradTemp, a *[2]float32)) {
	dx, dy, v := operands(s)
	t := gradTemps.Get().(*gradTemp)
	for lo := 0; lo < len(dx); lo += chunk {
		hi := min(lo+chunk, len(dx))
		piece(dx[lo:hi], dy[lo:hi], v[lo:hi], t, a)
	}
	gradTemps.Put(t)
}

func sqrtGrad(s [][]float32, a *[2]float32) { byPieces(s, a, sqrtGradPiece) }

// sqrtGradPiece: dx = dy/(2y), PyTorch's formula.
func sqrtGradPiece(dx, dy, y []float32, t *gradTemp, _ *[2]float32) {
	twoY := t[0][:len(dx)]
	simd.Add(twoY, y, y)
	simd.Div(dx, dy, twoY)
}

func sigmoidGrad(s [][]float32, a *[2]float32) { byPieces(s, a, sigmoidGradPiece) }

// sigmoidGradPiece: dx = dy·(y·(1-y)).
func sigmoidGradPiece(dx, dy, y []float32, t *gradTemp, _ *[2]float32) {
	d := oneMinus(t[0][:len(dx)], y)
	simd.Mul(d, d, y)
	simd.Mul(dx, dy, d)
}

func tanhGrad(s [][]float32, a *[2]float32) { byPieces(s, a, tanhGradPiece) }

// tanhGradPiece: dx = dy·((1-y)·(1+y)), PyTorch's dy·(1-y²) with the
// factors that keep 1 - y² accurate where |y| is near 1 (1 - y is exact
// for y in [0.5, 1], and 1 + y for y in [-1, -0.5]).
func tanhGradPiece(dx, dy, y []float32, t *gradTemp, _ *[2]float32) {
	n := len(dx)
	d, p := oneMinus(t[0][:n], y), t[1][:n]
	simd.AddScalar(p, y, 1)
	simd.Mul(d, d, p)
	simd.Mul(dx, dy, d)
}

// oneMinus sets dst = 1 - v (exactly as a subtraction: -v + 1) and
// returns it.
func oneMinus(dst, v []float32) []float32 {
	simd.Neg(dst, v)
	simd.AddScalar(dst, dst, 1)
	return dst
}

func softplusGrad(s [][]float32, a *[2]float32) { byPieces(s, a, softplusGradPiece) }

func softplusGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	sg := t[0][:len(dx)]
	simd.Sigmoid(sg, x)
	simd.Mul(dx, dy, sg)
}

func erfGrad(s [][]float32, a *[2]float32) { byPieces(s, a, erfGradPiece) }

// erfGradPiece: dx = dy·2/√π·e^(-x²). x² is exact in float64: e^(-x²) is
// e^(-h)·(1 - l), h the float32 rounding of x² and l = x² - h, so that
// the rounding of x² (2⁻²⁴·x² relative) does not enter. x is clamped to
// [-11, 11], beyond which e^(-x²) is 0 in float32 (and h finite).
func erfGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	n := len(dx)
	e, xc := t[0][:n], t[1][:n]
	simd.Clamp(xc, x, -11, 11)
	for i, v := range xc {
		e[i] = -float32(float64(v) * float64(v))
	}
	simd.Exp(e, e)
	for i, v := range xc {
		sq := float64(v) * float64(v)
		l := sq - float64(float32(sq))
		dx[i] = float32(float64(dy[i]) * (2 / math.SqrtPi) * float64(e[i]) * (1 - l))
	}
}

func eluGradX(s [][]float32, a *[2]float32) { byPieces(s, a, eluGradXPiece) }

func eluGradXPiece(dx, dy, x []float32, t *gradTemp, a *[2]float32) {
	e := t[0][:len(dx)]
	simd.Exp(e, x)
	alpha := a[0]
	for i, v := range x {
		f := math.Float32bits(alpha * e[i])
		if !(v <= 0) {
			f = oneBits
		}
		dx[i] = dy[i] * math.Float32frombits(f)
	}
}

func siluGrad(s [][]float32, a *[2]float32) { byPieces(s, a, siluGradPiece) }

// siluGradPiece: dx = dy·s·(1 + x·(1-s)), s = sigmoid(x), the formula of
// nn's SiLU and PyTorch's, with 1 - s computed as sigmoid(-x), which
// keeps its relative accuracy where s is near 1 (1 - s would cancel, an
// error of 2⁻²⁴·x in the result). x is clamped to the finite range so
// that ±Inf gives the limits (1 at +Inf, 0 at -Inf) instead of Inf·0.
func siluGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	n := len(dx)
	sg, xc, sn := t[0][:n], t[1][:n], t[2][:n]
	simd.Sigmoid(sg, x)
	simd.Clamp(xc, x, -math.MaxFloat32, math.MaxFloat32)
	simd.Neg(sn, xc)
	simd.Sigmoid(sn, sn)
	simd.Mul(sn, sn, xc)
	simd.AddScalar(sn, sn, 1)
	simd.Mul(sn, sn, sg)
	simd.Mul(dx, dy, sn)
}

func geluGrad(s [][]float32, a *[2]float32) { byPieces(s, a, geluGradPiece) }

// geluGradPiece: dx = dy·(Φ(x) + x·φ(x)), Φ(x) = (1 + erf(x/√2))/2 and
// φ(x) = e^(-x²/2)/√(2π), x clamped as in siluGradPiece (x² = +Inf and
// e^(-x²/2) = 0 beyond 2⁶⁴, so x·φ(x) is 0 there).
func geluGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	n := len(dx)
	xc, cdf, pdf := t[0][:n], t[1][:n], t[2][:n]
	simd.Clamp(xc, x, -math.MaxFloat32, math.MaxFloat32)
	simd.Scale(cdf, xc, 1/math.Sqrt2)
	simd.Erf(cdf, cdf)
	simd.Scale(cdf, cdf, 0.5)
	simd.AddScalar(cdf, cdf, 0.5)
	simd.Mul(pdf, xc, xc)
	simd.Scale(pdf, pdf, -0.5)
	simd.Exp(pdf, pdf)
	simd.Mul(pdf, pdf, xc)
	simd.Scale(pdf, pdf, 0.3989422804014327) // 1/√(2π)
	simd.Add(cdf, cdf, pdf)
	simd.Mul(dx, dy, cdf)
}

func geluTanhGrad(s [][]float32, a *[2]float32) { byPieces(s, a, geluTanhGradPiece) }

// geluTanhGradPiece: with s = sigmoid(2u) = (1 + tanh(u))/2, u = c·(x +
// a·x³), GELUTanh(x) = x·s and dx = dy·s·(1 + 2c·x·(1+3a·x²)·(1-s)), in
// which s and 1 - s = sigmoid(-2u) keep their relative accuracy where they
// are tiny (1 + tanh(u) and 1 - s would cancel). x is clamped to [-20,
// 20], beyond which the derivative rounds to 1 and 0 in float32 and s is
// 1 and 0 (2u passes ±600), so that x³ stays finite.
func geluTanhGradPiece(dx, dy, x []float32, t *gradTemp, _ *[2]float32) {
	const (
		c = 0.7978845608028654 // √(2/π)
		a = 0.044715
	)
	n := len(dx)
	xc, sg, sn := t[0][:n], t[1][:n], t[2][:n]
	simd.Clamp(xc, x, -20, 20)
	// sg = 2u = 2c·x·(1 + a·x²)
	simd.Mul(sg, xc, xc)
	simd.Scale(sg, sg, a)
	simd.AddScalar(sg, sg, 1)
	simd.Mul(sg, sg, xc)
	simd.Scale(sg, sg, 2*c)
	simd.Neg(sn, sg)
	simd.Sigmoid(sg, sg)
	simd.Sigmoid(sn, sn)
	// sn = 1 + 2c·x·(1 + 3a·x²)·sigmoid(-2u), in xc's place (x², then
	// the rest).
	simd.Mul(sn, sn, xc)
	simd.Mul(xc, xc, xc)
	simd.Scale(xc, xc, 3*a)
	simd.AddScalar(xc, xc, 1)
	simd.Mul(sn, sn, xc)
	simd.Scale(sn, sn, 2*c)
	simd.AddScalar(sn, sn, 1)
	simd.Mul(sn, sn, sg)
	simd.Mul(dx, dy, sn)
}
