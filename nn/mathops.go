package nn

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// This file holds the elementwise functions of one operand (beside the
// activations), the softmaxes, and the reductions over chosen axes.

// elemFuncs are the elementwise functions the tape offers beside the
// activations: tensor's forward op. Their gradients are all
// tensor.UnaryGradInto's (backElem).
var elemFuncs = map[tensor.ElemOp]func(dst, x *tensor.Tensor, arg [2]float32){
	tensor.ElemExp:      func(dst, x *tensor.Tensor, _ [2]float32) { tensor.ExpInto(dst, x) },
	tensor.ElemLog:      func(dst, x *tensor.Tensor, _ [2]float32) { tensor.LogInto(dst, x) },
	tensor.ElemSqrt:     func(dst, x *tensor.Tensor, _ [2]float32) { tensor.SqrtInto(dst, x) },
	tensor.ElemClamp:    func(dst, x *tensor.Tensor, a [2]float32) { tensor.ClampInto(dst, x, a[0], a[1]) },
	tensor.ElemSoftplus: func(dst, x *tensor.Tensor, _ [2]float32) { tensor.SoftplusInto(dst, x) },
	tensor.ElemErf:      func(dst, x *tensor.Tensor, _ [2]float32) { tensor.ErfInto(dst, x) },
	tensor.ElemNeg:      func(dst, x *tensor.Tensor, _ [2]float32) { tensor.NegInto(dst, x) },
	tensor.ElemAddScalar: func(dst, x *tensor.Tensor, a [2]float32) {
		tensor.AddScalarInto(dst, x, a[0])
	},
}

// Exp returns eˣ elementwise; its gradient is g·eˣ (from the output).
func (tp *Tape) Exp(x *Var) *Var { return tp.elemFunc("Exp", tensor.ElemExp, [2]float32{}, x) }

// Log returns the natural logarithm of x elementwise (NaN below 0, -Inf
// at 0); its gradient is g/x (±Inf at 0).
func (tp *Tape) Log(x *Var) *Var { return tp.elemFunc("Log", tensor.ElemLog, [2]float32{}, x) }

// Sqrt returns √x elementwise (NaN below 0); its gradient is g/(2√x), +Inf
// at 0 (from the output).
func (tp *Tape) Sqrt(x *Var) *Var { return tp.elemFunc("Sqrt", tensor.ElemSqrt, [2]float32{}, x) }

// Softplus returns log(1 + eˣ) elementwise (tensor.Softplus); its
// gradient is g·σ(x).
func (tp *Tape) Softplus(x *Var) *Var {
	return tp.elemFunc("Softplus", tensor.ElemSoftplus, [2]float32{}, x)
}

// Erf returns the error function of x elementwise (tensor.Erf); its
// gradient is g·2/√π·e^(-x²).
func (tp *Tape) Erf(x *Var) *Var { return tp.elemFunc("Erf", tensor.ElemErf, [2]float32{}, x) }

// Neg returns -x; its gradient is -g.
func (tp *Tape) Neg(x *Var) *Var { return tp.elemFunc("Neg", tensor.ElemNeg, [2]float32{}, x) }

// AddScalar returns x + s elementwise; its gradient is g.
func (tp *Tape) AddScalar(x *Var, s float32) *Var {
	return tp.elemFunc("AddScalar", tensor.ElemAddScalar, [2]float32{s}, x)
}

// Clamp returns x limited to [lo, hi] elementwise; its gradient is g where
// lo ≤ x ≤ hi (both ends included, as PyTorch's) and 0 elsewhere and at
// NaN.
func (tp *Tape) Clamp(x *Var, lo, hi float32) *Var {
	if !(lo <= hi) {
		panic(fmt.Sprintf("nn: Clamp: lo %v above hi %v", lo, hi))
	}
	return tp.elemFunc("Clamp", tensor.ElemClamp, [2]float32{lo, hi}, x)
}

// elemFunc applies the elementwise function e (of elemFuncs) to x.
func (tp *Tape) elemFunc(op string, e tensor.ElemOp, arg [2]float32, x *Var) *Var {
	tp.use(op, "x", x)
	y := tp.like(x.value)
	elemFuncs[e](y, x.value, arg)
	return tp.elemResult(y, e, arg, x)
}

// elemResult records y = e(x; arg), an elementwise op whose gradient is
// tensor.UnaryGradInto's for e (the activations and elemFuncs).
func (tp *Tape) elemResult(y *tensor.Tensor, e tensor.ElemOp, arg [2]float32, x *Var) *Var {
	out, nd := tp.result(y, backElem, x)
	if nd != nil {
		nd.dims, nd.f = int(e), arg
	}
	return out
}

func backElem(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.UnaryGradInto(dx, tensor.ElemOp(n.dims), n.out.grad, x.value, n.out.value, n.f)
	tp.flush(x, dx, add)
}

// axisOf returns axis of x (negative counts from the end, as tensor's
// axes) or panics naming op and x's shape.
func axisOf(op string, x *Var, axis int) int {
	d := x.value.Dims()
	if axis < -d || axis >= d {
		panic(fmt.Sprintf("nn: %s: axis %d out of range for x of shape %v", op, axis, x.value.Shape()))
	}
	if axis < 0 {
		axis += d
	}
	return axis
}

// Softmax returns e^x / Σ e^x along axis (negative counts from the end):
// tensor.SoftmaxInto, its gradient tensor.SoftmaxBackwardInto from the
// output. An axis of no element gives an empty result.
func (tp *Tape) Softmax(x *Var, axis int) *Var { return tp.softmax("Softmax", x, axis, false) }

// LogSoftmax returns x - log Σ e^x along axis (negative counts from the
// end): tensor.LogSoftmaxInto, its gradient tensor.LogSoftmaxBackwardInto
// from the output.
func (tp *Tape) LogSoftmax(x *Var, axis int) *Var { return tp.softmax("LogSoftmax", x, axis, true) }

func (tp *Tape) softmax(op string, x *Var, axis int, log bool) *Var {
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	y := tp.like(x.value)
	if log {
		tensor.LogSoftmaxInto(y, x.value, axis)
	} else {
		tensor.SoftmaxInto(y, x.value, axis)
	}
	out, nd := tp.result(y, backSoftmax, x)
	if nd != nil {
		nd.dims = axis
		if log {
			nd.f[0] = 1
		}
	}
	return out
}

func backSoftmax(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	if n.f[0] != 0 {
		tensor.LogSoftmaxBackwardInto(dx, n.out.value, n.out.grad, n.dims)
	} else {
		tensor.SoftmaxBackwardInto(dx, n.out.value, n.out.grad, n.dims)
	}
	tp.flush(x, dx, add)
}

// SumAxes returns the sum of x over axes (every axis when none is given;
// negative ones count from the end), keeping each as a dimension of size 1
// when keepdims is set, else removing it. A sum over no element is 0. The
// gradient is the output's broadcast back over the summed axes.
func (tp *Tape) SumAxes(x *Var, keepdims bool, axes ...int) *Var {
	return tp.reduce("SumAxes", x, keepdims, axes, false)
}

// MeanAxes returns the mean of x over axes, as SumAxes (the sum scaled by
// 1/n, n the number of elements each output folds; NaN when n is 0, as
// tensor.Mean and PyTorch). The gradient is the output's broadcast back
// and scaled by 1/n.
func (tp *Tape) MeanAxes(x *Var, keepdims bool, axes ...int) *Var {
	return tp.reduce("MeanAxes", x, keepdims, axes, true)
}

// reduceShape checks axes of x for op and returns the shape with each
// reduced axis of size 1 (keep), the output's shape and the number of
// elements folded into each output.
func reduceShape(op string, x *Var, keepdims bool, axes []int) (keep, out []int, n int) {
	shape := x.value.Shape()
	keep, n = slices.Clone(shape), 1
	var mask [tensor.MaxDims]bool
	for _, a := range axes {
		a = axisOf(op, x, a)
		if mask[a] {
			panic(fmt.Sprintf("nn: %s: repeated axis in %v for x of shape %v", op, axes, shape))
		}
		mask[a] = true
	}
	out = []int{}
	for i, d := range shape {
		if len(axes) == 0 || mask[i] {
			keep[i] = 1
			n *= d
			if !keepdims {
				continue
			}
		}
		out = append(out, keep[i])
	}
	return keep, out, n
}

// reduce is SumAxes (mean false) and MeanAxes after their checks: the sum
// (tensor.SumToInto into a zeroed tensor of the kept shape), scaled by 1/n
// for the mean, viewed without the reduced axes unless keepdims.
func (tp *Tape) reduce(op string, x *Var, keepdims bool, axes []int, mean bool) *Var {
	tp.use(op, "x", x)
	keep, shape, n := reduceShape(op, x, keepdims, axes)
	yk := tp.allocOn(x.value.Device(), keep...)
	tensor.Fill(yk, 0)
	tensor.SumToInto(yk, x.value)
	scale := float32(1)
	if mean {
		// 1/0 = +Inf, and the empty sum 0 times it is NaN.
		scale = 1 / float32(n)
		tensor.ScaleInto(yk, yk, scale)
	}
	y := yk
	if !keepdims {
		y = tp.view(yk, shape...)
	}
	out, nd := tp.result(y, backReduce, x)
	if nd != nil {
		nd.f[0], nd.axes = scale, keep
	}
	return out
}

// backReduce broadcasts the output's gradient, scaled, to x's shape.
func backReduce(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.ScaleInto(dx, tp.view(n.out.grad, n.axes...), n.f[0])
	tp.flush(x, dx, add)
}

// MaxAxes returns the maximum of x over axes, as SumAxes (tensor.Max:
// NaN when a reduced element is NaN). A reduction over no element panics,
// as tensor.Max (also when the result has no element).
// The gradient of an output is split evenly among the elements equal to
// it (the maximum if unique, as PyTorch's amax); where the maximum is NaN
// the gradients of its elements are NaN. Unlike the other operations'
// results, which reuse the tape's storage, the maximum is tensor.Max's,
// new storage each step (package tensor has no MaxInto).
func (tp *Tape) MaxAxes(x *Var, keepdims bool, axes ...int) *Var {
	const op = "MaxAxes"
	tp.use(op, "x", x)
	_, shape, n := reduceShape(op, x, keepdims, axes)
	if n == 0 {
		panic(fmt.Sprintf("nn: %s: maximum over no element (axes %v of x of shape %v)", op, axes, x.value.Shape()))
	}
	yk := tensor.Max(x.value, true, axes...)
	y := yk
	if !keepdims {
		y = tp.view(yk, shape...)
	}
	out, nd := tp.result(y, backMax, x)
	if nd != nil {
		nd.saved[0] = yk
	}
	return out
}

// backMax sends g·[x = max]/count to x, count the elements equal to the
// maximum.
func backMax(tp *Tape, n *node) {
	x, yk := n.in[0], n.saved[0]
	w := tp.like(x.value)
	tensor.EqualInto(w, x.value, yk)
	count := tp.like(yk)
	tensor.Fill(count, 0)
	tensor.SumToInto(count, w)
	g := tp.like(yk)
	tensor.DivInto(g, tp.viewLike(n.out.grad, yk), count)
	dx, add := tp.gradFor(x)
	tensor.MulInto(dx, w, g)
	tp.flush(x, dx, add)
}
