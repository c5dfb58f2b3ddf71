package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/lanesgo/lanes/simd"
	"github.com/lanesgo/lanes/tensor"
)

// This file holds the differentiable operations on dense values: linear
// algebra, elementwise arithmetic, activations, reductions and reshapes.
// Each forward writes into storage from the tape and each backward adds
// into the gradients of the inputs that require one. They run on the
// device of their operands: through package tensor's functions, which
// route there, and on the host through a few fused paths of their own
// (gemm, Linear's bias seeding the product, the bias gradients).

// gradAcc returns v's gradient tensor and the beta with which to write a
// contribution into it: 0 for the first contribution (overwrite), 1 after
// (add), for kernels such as Sgemm that accumulate for free.
func (tp *Tape) gradAcc(v *Var) (g *tensor.Tensor, beta float32) {
	v.reluMasked = false
	if v.gradOK {
		return v.grad, 1
	}
	g, _ = tp.gradFor(v)
	v.gradOK = true
	return g, 0
}

// addGrad adds src (of v's shape) to v's gradient.
func (tp *Tape) addGrad(v *Var, src *tensor.Tensor) {
	g, beta := tp.gradAcc(v)
	if beta == 0 {
		tensor.CopyInto(g, src)
		return
	}
	tensor.AddInto(g, g, src)
}

// gemm sets c to op(a)·op(b) (beta 0) or adds it to c (beta 1), where
// op(m) is m, or its transpose when ta (tb) is set; a, b and c are
// contiguous matrices on one device. On the host it is one simd.Sgemm,
// which accumulates for free; on a device it is tensor.MatMulInto of the
// transposed views, through a tape buffer when it adds.
func (tp *Tape) gemm(ta, tb bool, a, b *tensor.Tensor, beta float32, c *tensor.Tensor) {
	if onHost(c) {
		m, n, k := c.Dim(0), c.Dim(1), a.Dim(1)
		if ta {
			k = a.Dim(0)
		}
		simd.Sgemm(ta, tb, m, n, k, 1, hostData(a), ld(a.Dim(1)), hostData(b), ld(b.Dim(1)), beta, c.Data(), ld(n))
		return
	}
	if ta {
		a = a.T()
	}
	if tb {
		b = b.T()
	}
	if beta == 0 {
		tensor.MatMulInto(c, a, b)
		return
	}
	t := tp.like(c)
	tensor.MatMulInto(t, a, b)
	tensor.AddInto(c, c, t)
}

// zeroIfFirst clears g, a gradient gradAcc returned, when beta says it is
// the first contribution (for ops that can only add, as SumToInto).
func zeroIfFirst(g *tensor.Tensor, beta float32) {
	if beta == 0 {
		tensor.Fill(g, 0)
	}
}

// matrix returns the two dimensions of a 2-D operand.
func matrix(op, name string, v *Var) (rows, cols int) {
	if v.value.Dims() != 2 {
		panic(fmt.Sprintf("nn: %s: %s of shape %v is not a matrix", op, name, v.value.Shape()))
	}
	return v.value.Dim(0), v.value.Dim(1)
}

// ld returns the leading dimension of a row-major matrix of the given
// number of columns: simd.Sgemm wants at least 1 even for a matrix of no
// columns, which it then does not read.
func ld(cols int) int { return max(cols, 1) }

// MatMul returns a·b for matrices a [m, k] and b [k, n], and for stacks
// of them: operands of more than two dimensions are stacks of matrices in
// their last two, and their leading (batch) dimensions broadcast, as
// tensor.MatMul's (NumPy's matmul without its 1-D vectors: a [B, 1, m, k]
// times b [H, k, n] is [B, H, m, n]). Any dimension may be 0; with k = 0
// the product is zeros. The gradients are g·bᵀ and aᵀ·g, each summed over
// the batch dimensions its operand was broadcast along. Matrices are one
// simd.Sgemm on the host; stacks are tensor.MatMulInto.
func (tp *Tape) MatMul(a, b *Var) *Var {
	const op = "MatMul"
	tp.use(op, "a", a)
	tp.use(op, "b", b)
	av, bv := a.value, b.value
	if av.Dims() < 2 || bv.Dims() < 2 || av.Dim(-1) != bv.Dim(-2) {
		if av.Dims() < 2 || bv.Dims() < 2 {
			panic(fmt.Sprintf("nn: %s: shapes %v and %v: both operands need two dimensions or more (a matrix or a stack of them)", op, av.Shape(), bv.Shape()))
		}
		panic(fmt.Sprintf("nn: %s: shapes %v and %v do not match", op, av.Shape(), bv.Shape()))
	}
	dev := deviceOf(op, av, bv)
	if av.Dims() == 2 && bv.Dims() == 2 {
		y := tp.allocOn(dev, av.Dim(0), bv.Dim(1))
		tp.gemm(false, false, av, bv, 0, y)
		out, _ := tp.result(y, backMatMul, a, b)
		return out
	}
	batch, ok := tensor.BroadcastShape(av.Shape()[:av.Dims()-2], bv.Shape()[:bv.Dims()-2])
	if !ok {
		panic(fmt.Sprintf("nn: %s: shapes %v and %v: the batch dimensions do not broadcast", op, av.Shape(), bv.Shape()))
	}
	y := tp.allocOn(dev, append(batch, av.Dim(-2), bv.Dim(-1))...)
	tensor.MatMulInto(y, av, bv)
	out, _ := tp.result(y, backMatMul, a, b)
	return out
}

func backMatMul(tp *Tape, n *node) {
	a, b, g := n.in[0], n.in[1], n.out.grad
	if g.Dims() > 2 || a.value.Dims() > 2 || b.value.Dims() > 2 {
		// Stacks: each product at g's batch shape, summed back to the
		// operand's.
		if a.requires {
			tp.reduceGrad(a, tp.matmul(g, b.value.T(), a.value))
		}
		if b.requires {
			tp.reduceGrad(b, tp.matmul(a.value.T(), g, b.value))
		}
		return
	}
	if a.requires {
		da, beta := tp.gradAcc(a)
		tp.gemm(false, true, g, b.value, beta, da)
	}
	if b.requires {
		db, beta := tp.gradAcc(b)
		tp.gemm(true, false, a.value, g, beta, db)
	}
}

// matmul returns x·y (tensor.MatMulInto) in tape storage: stacks whose
// batch shape is that of g's product, each matrix of the shape of like's.
func (tp *Tape) matmul(x, y, like *tensor.Tensor) *tensor.Tensor {
	shape, _ := tensor.BroadcastShape(x.Shape()[:x.Dims()-2], y.Shape()[:y.Dims()-2])
	dst := tp.allocOn(like.Device(), append(shape, like.Dim(-2), like.Dim(-1))...)
	return tensor.MatMulInto(dst, x, y)
}

// Linear returns act(x·wᵀ + b) for x [n, in], a weight w [out, in] (the
// layout of PyTorch's nn.Linear) and a bias b [out] or nil, in one pass on
// the host: the bias seeds the output that Sgemm adds to, and the
// activation runs on the result in place (on a device: the product, the
// bias added, the activation in place). Any of n, in and out may be 0;
// with in = 0 the output is act(b) (act(0) without a bias).
func (tp *Tape) Linear(x, w, b *Var, act Act) *Var {
	const op = "Linear"
	tp.use(op, "x", x)
	tp.use(op, "weight", w)
	tp.useOpt(op, "bias", b)
	rows, in := matrix(op, "x", x)
	outs, in2 := matrix(op, "w", w)
	if in != in2 {
		panic(fmt.Sprintf("nn: %s: x of shape %v does not match weight of shape %v", op, x.value.Shape(), w.value.Shape()))
	}
	if b != nil && (b.value.Len() != outs || b.value.Dims() != 1) {
		panic(fmt.Sprintf("nn: %s: bias of shape %v does not match weight of shape %v", op, b.value.Shape(), w.value.Shape()))
	}
	dev := deviceOf(op, x.value, w.value, value(b))
	z := tp.allocOn(dev, rows, outs)
	switch {
	case b == nil:
		tp.gemm(false, true, x.value, w.value, 0, z)
	case dev == tensor.CPU:
		zd, bd := z.Data(), hostData(b.value)
		for r := range rows {
			copy(zd[r*outs:(r+1)*outs], bd)
		}
		tp.gemm(false, true, x.value, w.value, 1, z)
	default:
		tp.gemm(false, true, x.value, w.value, 0, z)
		tensor.AddInto(z, z, b.value)
	}
	y, pre := tp.activate(act, z)
	out, nd := tp.result(y, backLinear, x, w, b)
	if nd != nil {
		nd.act, nd.saved[0] = act, pre
	}
	return out
}

// activate applies act to z, in place when its gradient can be computed
// from the output alone; otherwise into new storage, and then it returns
// the input it will need as pre.
func (tp *Tape) activate(act Act, z *tensor.Tensor) (y, pre *tensor.Tensor) {
	if act.Kind == ActNone {
		return z, nil
	}
	if act.fromOutput() {
		act.apply(z, z)
		return z, nil
	}
	y = tp.like(z)
	act.apply(y, z)
	return y, z
}

// actInputGrad returns the gradient with respect to an activation's input,
// given the gradient g of its output y (and its input pre when saved).
func (tp *Tape) actInputGrad(act Act, g, y, pre *tensor.Tensor) *tensor.Tensor {
	if act.Kind == ActNone {
		return g
	}
	dz := tp.like(y)
	act.gradInto(dz, g, pre, y)
	return dz
}

func backLinear(tp *Tape, n *node) {
	x, w, b := n.in[0], n.in[1], n.in[2]
	dz := tp.actInputGrad(n.act, n.out.grad, n.out.value, n.saved[0])
	if x.requires {
		dx, beta := tp.gradAcc(x)
		tp.gemm(false, false, dz, w.value, beta, dx)
	}
	if w.requires {
		dw, beta := tp.gradAcc(w)
		tp.gemm(true, false, dz, x.value, beta, dw)
	}
	if b != nil && b.requires {
		db, beta := tp.gradAcc(b)
		if !onHost(db) {
			zeroIfFirst(db, beta)
			tensor.SumToInto(db, dz)
			return
		}
		rows, outs := dz.Dim(0), dz.Dim(1)
		ones := tp.alloc(rows).Data()
		for i := range ones {
			ones[i] = 1
		}
		simd.Sgemv(true, rows, outs, 1, hostData(dz), ld(outs), ones, beta, db.Data())
	}
}

// Activate returns act(x) elementwise.
func (tp *Tape) Activate(x *Var, act Act) *Var {
	tp.use("Activate", "x", x)
	if act.Kind == ActNone {
		return x
	}
	y := tp.like(x.value)
	act.apply(y, x.value)
	e, arg := act.elem()
	return tp.elemResult(y, e, arg, x)
}

// ReLU returns max(x, 0).
func (tp *Tape) ReLU(x *Var) *Var { return tp.Activate(x, Act{Kind: ActReLU}) }

// LeakyReLU returns x where x > 0 and alpha·x elsewhere.
func (tp *Tape) LeakyReLU(x *Var, alpha float32) *Var {
	return tp.Activate(x, Act{Kind: ActLeakyReLU, Alpha: alpha})
}

// ELU returns x where x > 0 and alpha·(eˣ - 1) elsewhere.
func (tp *Tape) ELU(x *Var, alpha float32) *Var {
	return tp.Activate(x, Act{Kind: ActELU, Alpha: alpha})
}

// GELU returns x·Φ(x) with the exact (erf) Φ.
func (tp *Tape) GELU(x *Var) *Var { return tp.Activate(x, Act{Kind: ActGELU}) }

// SiLU returns x·σ(x).
func (tp *Tape) SiLU(x *Var) *Var { return tp.Activate(x, Act{Kind: ActSiLU}) }

// Sigmoid returns 1/(1 + e⁻ˣ).
func (tp *Tape) Sigmoid(x *Var) *Var { return tp.Activate(x, Act{Kind: ActSigmoid}) }

// Tanh returns tanh(x).
func (tp *Tape) Tanh(x *Var) *Var { return tp.Activate(x, Act{Kind: ActTanh}) }

type binaryKind int

const (
	addOp binaryKind = iota
	subOp
	mulOp
	divOp
	powOp
	maxOp
	minOp
)

// Add returns a + b with broadcasting.
func (tp *Tape) Add(a, b *Var) *Var { return tp.binary("Add", addOp, a, b) }

// Sub returns a - b with broadcasting.
func (tp *Tape) Sub(a, b *Var) *Var { return tp.binary("Sub", subOp, a, b) }

// Mul returns a·b elementwise with broadcasting.
func (tp *Tape) Mul(a, b *Var) *Var { return tp.binary("Mul", mulOp, a, b) }

// Div returns a/b elementwise with broadcasting (IEEE: x/0 is ±Inf or
// NaN, and so are the gradients there). The gradients are g/b for a and
// -g·(a/b)/b for b.
func (tp *Tape) Div(a, b *Var) *Var { return tp.binary("Div", divOp, a, b) }

// Pow returns a^b elementwise with broadcasting (tensor.Pow: math.Pow's
// special cases, so a negative a with a non-integer b is NaN). The
// gradients are g·b·a^(b-1) for a and g·a^b·ln a for b; the latter is 0
// where a^b is 0 (at a = 0, where ln a = -Inf, as PyTorch's) and NaN where
// a < 0. For a constant exponent, pass it as a Const (of shape [] to
// broadcast).
func (tp *Tape) Pow(a, b *Var) *Var { return tp.binary("Pow", powOp, a, b) }

// Maximum returns the elementwise maximum of a and b with broadcasting
// (NaN where either is NaN). The gradient goes to the larger operand; on a
// tie (a = b) each gets half of it, as PyTorch's; where either is NaN
// neither gets any.
func (tp *Tape) Maximum(a, b *Var) *Var { return tp.binary("Maximum", maxOp, a, b) }

// Minimum returns the elementwise minimum of a and b with broadcasting;
// its gradient follows Maximum's rules, to the smaller operand.
func (tp *Tape) Minimum(a, b *Var) *Var { return tp.binary("Minimum", minOp, a, b) }

func (tp *Tape) binary(op string, kind binaryKind, a, b *Var) *Var {
	tp.use(op, "a", a)
	tp.use(op, "b", b)
	shape := broadcast(op, a.value, b.value)
	y := tp.allocOn(deviceOf(op, a.value, b.value), shape...)
	switch kind {
	case addOp:
		tensor.AddInto(y, a.value, b.value)
	case subOp:
		tensor.SubInto(y, a.value, b.value)
	case mulOp:
		tensor.MulInto(y, a.value, b.value)
	case divOp:
		tensor.DivInto(y, a.value, b.value)
	case powOp:
		tensor.PowInto(y, a.value, b.value)
	case maxOp:
		tensor.MaximumInto(y, a.value, b.value)
	case minOp:
		tensor.MinimumInto(y, a.value, b.value)
	}
	out, nd := tp.result(y, backBinary, a, b)
	if nd != nil {
		nd.dims = int(kind)
	}
	return out
}

// broadcast returns the shape a and b broadcast to, or panics naming both.
func broadcast(op string, a, b *tensor.Tensor) []int {
	shape, ok := tensor.BroadcastShape(a.Shape(), b.Shape())
	if !ok {
		panic(fmt.Sprintf("nn: %s: shapes %v and %v do not broadcast", op, a.Shape(), b.Shape()))
	}
	return shape
}

// backBinary sends the gradient g of y = a op b to each operand that
// requires one, summed over the dimensions it was broadcast along:
//
//	op        to a                       to b
//	Add       g                          g
//	Sub       g                          -g
//	Mul       g·b                        g·a
//	Div       g/b                        -g·y/b
//	Pow       g·b·a^(b-1)                g·y·ln a, 0 where y = 0
//	Maximum   g·[a > b] + g/2·[a = b]    g·[b > a] + g/2·[a = b]
//	Minimum   g·[a < b] + g/2·[a = b]    g·[b < a] + g/2·[a = b]
func backBinary(tp *Tape, n *node) {
	g, y := n.out.grad, n.out.value
	for i, v := range n.in[:2] {
		if !v.requires {
			continue
		}
		a, b := n.in[0].value, n.in[1].value
		src := g
		switch kind := binaryKind(n.dims); {
		case kind == mulOp:
			src = tp.like(g)
			tensor.MulInto(src, g, n.in[1-i].value)
		case kind == subOp && i == 1:
			src = tp.like(g)
			tensor.NegInto(src, g)
		case kind == divOp && i == 0:
			src = tp.like(g)
			tensor.DivInto(src, g, b)
		case kind == divOp:
			src = tp.like(g)
			tensor.MulInto(src, g, y)
			tensor.DivInto(src, src, b)
			tensor.NegInto(src, src)
		case kind == powOp && i == 0:
			bm1 := tp.like(b)
			tensor.AddScalarInto(bm1, b, -1)
			src = tp.like(g)
			tensor.PowInto(src, a, bm1)
			tensor.MulInto(src, src, b)
			tensor.MulInto(src, src, g)
		case kind == powOp:
			lna := tp.like(a)
			tensor.LogInto(lna, a)
			src = tp.like(g)
			tensor.MulInto(src, y, lna)
			// 0·ln 0 = NaN where a = 0 (and y = 0): the gradient is 0
			// there, as PyTorch's.
			tensor.WhereInto(src, y, src, tp.zero(y.Device()))
			tensor.MulInto(src, src, g)
		case kind == maxOp || kind == minOp:
			// The weight of this operand: 1 where it wins, ½ on a tie.
			x, other := n.in[i].value, n.in[1-i].value
			src = tp.like(g)
			tie := tp.like(g)
			if kind == maxOp {
				tensor.GreaterInto(src, x, other)
			} else {
				tensor.LessInto(src, x, other)
			}
			tensor.EqualInto(tie, x, other)
			tensor.ScaleInto(tie, tie, 0.5)
			tensor.AddInto(src, src, tie)
			tensor.MulInto(src, src, g)
		}
		tp.reduceGrad(v, src)
	}
}

// zero returns a tensor of shape [] holding 0 on dev, from the tape.
func (tp *Tape) zero(dev tensor.Device) *tensor.Tensor { return tp.scalar(dev, 0) }

// scalar returns a tensor of shape [] holding v on dev, from the tape.
func (tp *Tape) scalar(dev tensor.Device, v float32) *tensor.Tensor {
	return tensor.Fill(tp.allocOn(dev), v)
}

// reduceGrad adds src, the gradient of a result v was broadcast to, to v's
// gradient.
func (tp *Tape) reduceGrad(v *Var, src *tensor.Tensor) {
	if sameShapeAs(src, v.value) {
		tp.addGrad(v, src)
		return
	}
	dv, beta := tp.gradAcc(v)
	zeroIfFirst(dv, beta)
	tensor.SumToInto(dv, src)
}

// Scale returns s·x.
func (tp *Tape) Scale(x *Var, s float32) *Var {
	tp.use("Scale", "x", x)
	y := tp.like(x.value)
	tensor.ScaleInto(y, x.value, s)
	out, nd := tp.result(y, backScale, x)
	if nd != nil {
		nd.f[0] = s
	}
	return out
}

func backScale(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.ScaleInto(dx, n.out.grad, n.f[0])
	tp.flush(x, dx, add)
}

// Sum returns the sum of every element of x as a tensor of shape [] (0
// when x has none): SumAxes(x, false).
func (tp *Tape) Sum(x *Var) *Var { return tp.reduce("Sum", x, false, nil, false) }

// Mean returns the mean of every element of x as a tensor of shape []: NaN
// when x has none, as tensor.Mean and PyTorch (MeanAxes(x, false)).
func (tp *Tape) Mean(x *Var) *Var { return tp.reduce("Mean", x, false, nil, true) }

// Reshape returns x with a new shape of the same length, sharing its
// storage; one dimension may be -1, inferred from the others unless they
// hold no element (as PyTorch, which refuses to guess it then: reshaping
// [0, 28, 28] to [-1, 784] gives [0, 784], to [-1, 0] panics).
func (tp *Tape) Reshape(x *Var, shape ...int) *Var {
	const op = "Reshape"
	tp.use(op, "x", x)
	n, infer := 1, -1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			panic(fmt.Sprintf("nn: %s: bad shape %v for x of shape %v", op, fmtDims(shape), x.value.Shape()))
		case d != 0 && n > math.MaxInt/d:
			panic(fmt.Sprintf("nn: %s: shape %v overflows int", op, fmtDims(shape)))
		default:
			n *= d
		}
	}
	total := x.value.Len()
	if infer >= 0 {
		if n == 0 {
			panic(fmt.Sprintf("nn: %s: shape %v for x of shape %v: the -1 could be any size, as the other dimensions hold no element", op, fmtDims(shape), x.value.Shape()))
		}
		if total%n != 0 {
			panic(fmt.Sprintf("nn: %s: shape %v does not fit x of shape %v", op, fmtDims(shape), x.value.Shape()))
		}
		shape = slices.Clone(shape)
		shape[infer] = total / n
		n = total
	}
	if n != total {
		panic(fmt.Sprintf("nn: %s: shape %v does not fit x of shape %v", op, fmtDims(shape), x.value.Shape()))
	}
	out, _ := tp.result(tp.view(x.value, shape...), backReshape, x)
	return out
}

func backReshape(tp *Tape, n *node) {
	x := n.in[0]
	tp.addGrad(x, tp.viewLike(n.out.grad, x.value))
}

// fmtDims formats dims as %v does. It formats a copy, so that dims does
// not escape: a caller's variadic shape (Reshape(x, n, d)) then stays on
// its stack, and a training step allocates nothing for it.
func fmtDims(dims []int) string { return fmt.Sprint(slices.Clone(dims)) }

// Flatten returns x [n, d1, d2, ...] reshaped to [n, d1·d2·...] (as
// PyTorch's nn.Flatten, also when n is 0: [0, 28, 28] gives [0, 784]).
func (tp *Tape) Flatten(x *Var) *Var {
	tp.use("Flatten", "x", x)
	if x.value.Dims() < 1 {
		panic(fmt.Sprintf("nn: Flatten: x of shape %v has no leading axis", x.value.Shape()))
	}
	rest := 1
	for i := 1; i < x.value.Dims(); i++ {
		d := x.value.Dim(i)
		if d != 0 && rest > math.MaxInt/d {
			panic(fmt.Sprintf("nn: Flatten: x of shape %v: the flattened size overflows int", x.value.Shape()))
		}
		rest *= d
	}
	return tp.Reshape(x, x.value.Dim(0), rest)
}

// ActKind names an activation function.
type ActKind int

// The activations.
const (
	ActNone ActKind = iota
	ActReLU
	ActLeakyReLU
	ActELU
	ActGELU
	ActSiLU
	ActSigmoid
	ActTanh
)

var actNames = [...]string{"None", "ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid", "Tanh"}

func (k ActKind) String() string {
	if k >= 0 && int(k) < len(actNames) {
		return actNames[k]
	}
	return fmt.Sprintf("ActKind(%d)", int(k))
}

// Act is an activation with its parameter: Alpha is LeakyReLU's negative
// slope and ELU's α. The forward passes are package tensor's (its simd
// kernels on the host, accuracy as documented there); the gradients are
// computed in float32 from the saved output, or from the input where the
// output does not determine it (GELU, SiLU, and LeakyReLU or ELU with
// α ≤ 0).
type Act struct {
	Kind  ActKind
	Alpha float32
}

// fromOutput reports whether the gradient is a function of the output, so
// that the activation can overwrite its input.
func (a Act) fromOutput() bool {
	switch a.Kind {
	case ActReLU, ActSigmoid, ActTanh:
		return true
	case ActLeakyReLU, ActELU:
		return a.Alpha > 0
	}
	return false
}

// apply sets dst = a(x) (dst may be x) with tensor's unary op, on the
// operands' device.
func (a Act) apply(dst, x *tensor.Tensor) {
	switch a.Kind {
	case ActNone:
		tensor.CopyInto(dst, x)
	case ActReLU:
		tensor.ReLUInto(dst, x)
	case ActLeakyReLU:
		tensor.LeakyReLUInto(dst, x, a.Alpha)
	case ActELU:
		tensor.ELUInto(dst, x, a.Alpha)
	case ActGELU:
		tensor.GELUInto(dst, x)
	case ActSiLU:
		tensor.SiLUInto(dst, x)
	case ActSigmoid:
		tensor.SigmoidInto(dst, x)
	case ActTanh:
		tensor.TanhInto(dst, x)
	default:
		panic(fmt.Sprintf("nn: unknown activation %v", a.Kind))
	}
}

// reluAct is the ReLU, whose gradient the fused Conv2D and MaxPool2D
// backward passes apply.
var reluAct = Act{Kind: ActReLU}

// elem returns the tensor op of the activation and its arguments.
func (a Act) elem() (tensor.ElemOp, [2]float32) {
	switch a.Kind {
	case ActReLU:
		return tensor.ElemReLU, [2]float32{}
	case ActLeakyReLU:
		return tensor.ElemLeakyReLU, [2]float32{a.Alpha}
	case ActELU:
		return tensor.ElemELU, [2]float32{a.Alpha}
	case ActGELU:
		return tensor.ElemGELU, [2]float32{}
	case ActSiLU:
		return tensor.ElemSiLU, [2]float32{}
	case ActSigmoid:
		return tensor.ElemSigmoid, [2]float32{}
	case ActTanh:
		return tensor.ElemTanh, [2]float32{}
	}
	panic(fmt.Sprintf("nn: unknown activation %v", a.Kind))
}

// gradInto sets dx to the gradient with respect to the activation's input,
// given the output gradient g, the input x (nil when the gradient comes
// from the output) and the output y: tensor.UnaryGradInto, on the
// operands' device (see it for the formulas and their special values).
func (a Act) gradInto(dx, g, x, y *tensor.Tensor) {
	op, arg := a.elem()
	tensor.UnaryGradInto(dx, op, g, x, y, arg)
}
