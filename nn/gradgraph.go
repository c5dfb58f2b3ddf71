package nn

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"

	"github.com/lanesgo/lanes/tensor"
)

// This file holds Tape.Grad, the functional gradient (PyTorch's
// torch.autograd.grad), and the second backward of each operation that
// supports higher-order gradients: its vector-Jacobian product written in
// the tape's own operations (graphGrads), so that with CreateGraph the
// gradients are Vars on the tape that a later Backward or Grad
// differentiates again (Hessian-vector products, gradient penalties).
// The first-order Backward does not use any of it.

// GradOptions are Tape.Grad's options.
type GradOptions struct {
	// GradOutputs are the gradients of outputs to start from, one per
	// output of its shape (PyTorch's grad_outputs); nil means ones, which
	// needs outputs of one element. With CreateGraph they may themselves
	// require gradients.
	GradOutputs []*Var
	// CreateGraph records the gradient computation on the tape, so that the
	// returned gradients can be differentiated again.
	CreateGraph bool
}

// Grad returns the gradients of the sum of outputs (each weighted by its
// GradOutputs entry, ones by default) with respect to each of inputs:
// Vars of the inputs' shapes, or nil for an input the outputs do not
// depend on. Unlike Backward it adds nothing to the parameters' gradients
// (Var.Grad is left as it was) and does not consume the tape: Backward,
// BackwardRetain and Grad may follow it in the same step.
//
// Without CreateGraph the gradients are computed by the operations'
// first-order backward passes, exactly as Backward computes them (the same
// kernels in the same order: the same bits), and the returned Vars are
// constants. With CreateGraph each operation's gradient is computed by
// tape operations (recorded even when SetGrad is off), so the results are
// Vars that require gradients where they depend on something that does:
// differentiate a function of them with Backward or Grad for a
// Hessian-vector product or a gradient penalty. The operations that
// support it are the elementwise arithmetic with broadcasting (Add, Sub,
// Mul, Div, Pow, Maximum, Minimum, Scale, Neg, AddScalar, Where,
// MaskedFill), MatMul and Linear, the activations and elementwise
// functions (ReLU, LeakyReLU, ELU, GELU, SiLU, Sigmoid, Tanh, Softplus,
// Erf, Exp, Log, Sqrt, Clamp), the reductions (Sum, Mean, SumAxes,
// MeanAxes, MaxAxes), Softmax and LogSoftmax, the losses MSE,
// CrossEntropy and BCEWithLogits, and Reshape, Flatten, Permute,
// Transpose, Concat, Stack, Split and Slice (step 1); through any other
// operation Grad panics ("nn: Tape.Grad: create_graph through op Conv2D
// is not supported") rather than give a wrong number. Piecewise-linear
// operations (ReLU, Clamp, Maximum, MaxAxes, ...) have a second
// derivative of 0 almost everywhere, as PyTorch's. Gradients and their
// Vars live in the tape's storage until Reset (a parameter's gradient
// without CreateGraph is new memory of its own). A loss's target must stay
// unchanged until the Grad that differentiates through the loss.
func (tp *Tape) Grad(outputs, inputs []*Var, opts GradOptions) []*Var {
	const op = "Tape.Grad"
	if len(outputs) == 0 {
		panic("nn: Tape.Grad: no outputs")
	}
	if opts.GradOutputs != nil && len(opts.GradOutputs) != len(outputs) {
		panic(fmt.Sprintf("nn: %s: %d grad outputs for %d outputs", op, len(opts.GradOutputs), len(outputs)))
	}
	for i, o := range outputs {
		tp.use(op, fmt.Sprintf("outputs[%d]", i), o)
		if !o.requires {
			panic(fmt.Sprintf("nn: %s: outputs[%d] of shape %v does not depend on anything that requires a gradient (were gradients off?)", op, i, o.value.Shape()))
		}
		if opts.GradOutputs == nil {
			if o.value.Len() != 1 {
				panic(fmt.Sprintf("nn: %s: outputs[%d] of shape %v is not a single value and no grad output was given", op, i, o.value.Shape()))
			}
			continue
		}
		g := opts.GradOutputs[i]
		tp.use(op, fmt.Sprintf("GradOutputs[%d]", i), g)
		if !sameShapeAs(g.value, o.value) {
			panic(fmt.Sprintf("nn: %s: GradOutputs[%d] of shape %v for outputs[%d] of shape %v", op, i, g.value.Shape(), i, o.value.Shape()))
		}
	}
	for i, v := range inputs {
		tp.use(op, fmt.Sprintf("inputs[%d]", i), v)
		if !v.requires {
			panic(fmt.Sprintf("nn: %s: inputs[%d] of shape %v does not require a gradient", op, i, v.value.Shape()))
		}
	}
	if tp.consumed {
		panic(fmt.Sprintf("nn: %s: the tape was consumed by an earlier Backward; call BackwardRetain to backpropagate more than once, or Reset to start a new step", op))
	}
	if opts.CreateGraph {
		return tp.gradGraph(outputs, inputs, opts.GradOutputs)
	}
	return tp.gradValues(outputs, inputs, opts.GradOutputs)
}

// gradValues is Grad without CreateGraph: Backward's pass, seeded from
// every output, with the parameters' gradients set aside and restored.
func (tp *Tape) gradValues(outputs, inputs, seeds []*Var) []*Var {
	type kept struct {
		v    *Var
		grad *tensor.Tensor
		ok   bool
	}
	var params []kept
	setAside := func(v *Var) {
		if v == nil || !v.param {
			return
		}
		for _, k := range params {
			if k.v == v {
				return
			}
		}
		params = append(params, kept{v, v.grad, v.gradOK})
		v.grad, v.gradOK = nil, false
	}
	for i := range tp.nodes {
		tp.nodes[i].out.gradOK = false
		for _, v := range tp.nodes[i].in {
			setAside(v)
		}
	}
	for _, v := range inputs {
		setAside(v)
	}
	defer func() {
		for _, k := range params {
			k.v.grad, k.v.gradOK = k.grad, k.ok
		}
	}()
	for i, o := range outputs {
		g, add := tp.gradFor(o)
		if seeds == nil {
			tensor.Fill(g, 1)
		} else {
			tensor.CopyInto(g, seeds[i].value)
		}
		tp.flush(o, g, add)
	}
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		n := &tp.nodes[i]
		if n.out.gradOK {
			n.back(tp, n)
		}
	}
	res := make([]*Var, len(inputs))
	for i, v := range inputs {
		if v.gradOK {
			res[i] = tp.Const(v.grad)
		}
	}
	return res
}

// gradGraph is Grad with CreateGraph: each recorded node's gradGraph
// function, from the last node to the first, on gradients kept as Vars,
// for the nodes between the inputs and the outputs only (a gradient
// penalty's Grad with respect to x records nothing for the weights'
// gradients).
func (tp *Tape) gradGraph(outputs, inputs, seeds []*Var) []*Var {
	prev := tp.SetGrad(true)
	defer tp.SetGrad(prev)
	grads := make(map[*Var]*Var)
	add := func(v, g *Var) {
		if old := grads[v]; old != nil {
			g = tp.Add(old, g)
		}
		grads[v] = g
	}
	for i, o := range outputs {
		if seeds != nil {
			add(o, seeds[i])
		} else {
			add(o, tp.constFill(o.value, 1))
		}
	}
	// leads: the Vars that inputs flow into; gradients go to no other.
	leads := make(map[*Var]bool, len(inputs))
	for _, v := range inputs {
		leads[v] = true
	}
	last := len(tp.nodes)
	for i := range last {
		n := &tp.nodes[i]
		for _, v := range n.in {
			if v != nil && leads[v] {
				leads[n.out] = true
				break
			}
		}
	}
	for i := last - 1; i >= 0; i-- {
		n := tp.nodes[i] // a copy: the operations below append to tp.nodes
		g := grads[n.out]
		if g == nil || !leads[n.out] {
			continue
		}
		var want [3]bool
		for j, v := range n.in {
			want[j] = v != nil && v.requires && leads[v]
		}
		if want == [3]bool{} {
			continue // n made an input (or a Var below one) from other Vars
		}
		f := graphGrads[backPC(n.back)]
		if f == nil {
			panic(fmt.Sprintf("nn: Tape.Grad: create_graph through op %s is not supported", backName(n.back)))
		}
		gs := f(tp, &n, g, want)
		for j, v := range n.in {
			if want[j] && gs[j] != nil {
				add(v, gs[j])
			}
		}
	}
	res := make([]*Var, len(inputs))
	for i, v := range inputs {
		res[i] = grads[v]
	}
	return res
}

// A gradGraphFunc returns, as tape operations on g (the gradient of n's
// output), the gradient of each input j of n for which want[j] is set
// (nil for the others): the second backward of an operation.
type gradGraphFunc func(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var

// graphGrads maps each first-order backward function (by its code
// address) to its operation's gradGraphFunc.
var graphGrads = map[uintptr]gradGraphFunc{}

func init() {
	for _, r := range []struct {
		back func(*Tape, *node)
		grad gradGraphFunc
	}{
		{backBinary, gradBinary},
		{backScale, gradScale},
		{backElem, gradElem},
		{backReduce, gradReduce},
		{backMax, gradMax},
		{backSoftmax, gradSoftmax},
		{backMatMul, gradMatMul},
		{backLinear, gradLinear},
		{backLoss, gradLoss},
		{backReshape, gradReshape},
		{backPermute, gradPermute},
		{backSlice, gradSlice},
		{backConcat, gradConcat},
		{backWhere, gradWhere},
		{backRemainder, gradRemainder},
	} {
		graphGrads[backPC(r.back)] = r.grad
	}
}

func backPC(back func(*Tape, *node)) uintptr { return reflect.ValueOf(back).Pointer() }

// backName returns the operation of a backward function backFoo: Foo.
func backName(back func(*Tape, *node)) string {
	name := "unknown"
	if f := runtime.FuncForPC(backPC(back)); f != nil {
		name = f.Name()
	}
	name = name[strings.LastIndexByte(name, '.')+1:]
	return strings.TrimPrefix(name, "back")
}

// constFill returns a constant of like's shape and device filled with v.
func (tp *Tape) constFill(like *tensor.Tensor, v float32) *Var {
	return tp.Const(tensor.Fill(tp.like(like), v))
}

// sumTo returns g summed over the dimensions along which like's shape was
// broadcast to g's, reshaped to like's shape (g itself when they match).
func (tp *Tape) sumTo(g *Var, like *tensor.Tensor) *Var {
	if sameShapeAs(g.value, like) {
		return g
	}
	gs, ls := g.value.Shape(), like.Shape()
	lead := len(gs) - len(ls)
	var axes []int
	for i := range gs {
		if i < lead || (ls[i-lead] == 1 && gs[i] != 1) {
			axes = append(axes, i)
		}
	}
	return tp.Reshape(tp.SumAxes(g, true, axes...), ls...)
}

// oneMinus returns 1 - y.
func (tp *Tape) oneMinus(y *Var) *Var { return tp.AddScalar(tp.Neg(y), 1) }

// gradBinary: the table of backBinary, in tape operations.
// gradRemainder is Mod's and Fmod's: g for a, and for b g times the
// constant -q (the quotient rounded as backRemainder's, piecewise
// constant), each summed to its operand's shape.
func gradRemainder(tp *Tape, n *node, g *Var, want [3]bool) (gs [3]*Var) {
	a, b := n.in[0], n.in[1]
	if want[0] {
		gs[0] = tp.sumTo(g, a.value)
	}
	if want[1] {
		gs[1] = tp.sumTo(tp.Mul(g, tp.Const(tp.negQuotient(n, g.value))), b.value)
	}
	return gs
}

func gradBinary(tp *Tape, n *node, g *Var, want [3]bool) (gs [3]*Var) {
	a, b, y := n.in[0], n.in[1], n.out
	for i := range 2 {
		if !want[i] {
			continue
		}
		var src *Var
		switch kind := binaryKind(n.dims); {
		case kind == addOp, kind == subOp && i == 0:
			src = g
		case kind == subOp:
			src = tp.Neg(g)
		case kind == mulOp:
			src = tp.Mul(g, n.in[1-i])
		case kind == divOp && i == 0:
			src = tp.Div(g, b)
		case kind == divOp:
			src = tp.Neg(tp.Div(tp.Mul(g, y), b))
		case kind == powOp && i == 0:
			src = tp.Mul(g, tp.Mul(b, tp.Pow(a, tp.AddScalar(b, -1))))
		case kind == powOp:
			// g·y·ln a, 0 where y = 0 (as backBinary).
			p := tp.Mul(y, tp.Log(a))
			p = tp.Where(y.value, p, tp.Const(tp.zero(p.value.Device())))
			src = tp.Mul(g, p)
		default: // maxOp, minOp: a constant weight (backBinary's).
			x, other := n.in[i].value, n.in[1-i].value
			w := tp.allocOn(g.value.Device(), g.value.Shape()...)
			tie := tp.like(w)
			if binaryKind(n.dims) == maxOp {
				tensor.GreaterInto(w, x, other)
			} else {
				tensor.LessInto(w, x, other)
			}
			tensor.EqualInto(tie, x, other)
			tensor.ScaleInto(tie, tie, 0.5)
			tensor.AddInto(w, w, tie)
			src = tp.Mul(g, tp.Const(w))
		}
		gs[i] = tp.sumTo(src, n.in[i].value)
	}
	return gs
}

func gradScale(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	return [3]*Var{tp.Scale(g, n.f[0])}
}

func gradElem(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	return [3]*Var{tp.elemGradGraph(tensor.ElemOp(n.dims), n.f, g, n.in[0], n.out)}
}

// elemGradGraph returns g·f'(x) for the elementwise op e (arguments arg)
// with input x and output y, in tape operations. x may be nil for the ops
// whose gradient comes from the output (Act.fromOutput).
func (tp *Tape) elemGradGraph(e tensor.ElemOp, arg [2]float32, g, x, y *Var) *Var {
	switch e {
	case tensor.ElemExp:
		return tp.Mul(g, y)
	case tensor.ElemLog:
		return tp.Div(g, x)
	case tensor.ElemSqrt:
		return tp.Div(g, tp.Scale(y, 2))
	case tensor.ElemSigmoid:
		return tp.Mul(g, tp.Mul(y, tp.oneMinus(y)))
	case tensor.ElemTanh:
		return tp.Mul(g, tp.oneMinus(tp.Mul(y, y)))
	case tensor.ElemSoftplus:
		return tp.Mul(g, tp.Sigmoid(x))
	case tensor.ElemSiLU: // s·(1 + x·(1-s))
		s := tp.Sigmoid(x)
		return tp.Mul(g, tp.Mul(s, tp.AddScalar(tp.Mul(x, tp.oneMinus(s)), 1)))
	case tensor.ElemGELU: // Φ(x) + x·φ(x)
		cdf := tp.AddScalar(tp.Scale(tp.Erf(tp.Scale(x, 1/math.Sqrt2)), 0.5), 0.5)
		pdf := tp.Scale(tp.Exp(tp.Scale(tp.Mul(x, x), -0.5)), float32(1/math.Sqrt(2*math.Pi)))
		return tp.Mul(g, tp.Add(cdf, tp.Mul(x, pdf)))
	case tensor.ElemErf:
		return tp.Mul(g, tp.Scale(tp.Exp(tp.Neg(tp.Mul(x, x))), float32(2/math.Sqrt(math.Pi))))
	case tensor.ElemSin:
		return tp.Mul(g, tp.Cos(x))
	case tensor.ElemCos:
		return tp.Neg(tp.Mul(g, tp.Sin(x)))
	case tensor.ElemTan: // 1 + tan²
		return tp.Mul(g, tp.AddScalar(tp.Mul(y, y), 1))
	case tensor.ElemLog1p:
		return tp.Div(g, tp.AddScalar(x, 1))
	case tensor.ElemExpm1: // eˣ = y + 1
		return tp.Mul(g, tp.AddScalar(y, 1))
	case tensor.ElemFloor, tensor.ElemCeil, tensor.ElemRound, tensor.ElemSign:
		// Piecewise constant: the gradient is 0 (a constant, as Backward's).
		return tp.constFill(g.value, 0)
	case tensor.ElemNeg:
		return tp.Neg(g)
	case tensor.ElemScale:
		return tp.Scale(g, arg[0])
	case tensor.ElemAddScalar:
		return g
	case tensor.ElemReLU, tensor.ElemLeakyReLU, tensor.ElemClamp:
		// Piecewise linear: f' is a constant, the first-order gradient of
		// ones.
		return tp.Mul(g, tp.Const(tp.elemSlope(e, arg, x, y)))
	case tensor.ElemELU:
		// 1 where the input is positive, else α·eˣ = y + α.
		pos := tp.positive(x, y)
		return tp.Mul(g, tp.Where(pos, tp.constFill(pos, 1), tp.AddScalar(y, arg[0])))
	}
	panic(fmt.Sprintf("nn: Tape.Grad: create_graph through elementwise op %d is not supported", e))
}

// elemSlope returns f'(x) of a piecewise-linear elementwise op e as a
// constant: its first-order gradient for an output gradient of ones (read
// from y, and from x when given: x is nil only for ops whose gradient comes
// from the output).
func (tp *Tape) elemSlope(e tensor.ElemOp, arg [2]float32, x, y *Var) *tensor.Tensor {
	var xv *tensor.Tensor
	if x != nil {
		xv = x.value
	}
	d := tensor.Fill(tp.like(y.value), 1)
	return tensor.UnaryGradInto(d, e, d, xv, y.value, arg)
}

// positive returns the constant [v > 0], v being x when given, else y.
func (tp *Tape) positive(x, y *Var) *tensor.Tensor {
	v := y.value
	if x != nil {
		v = x.value
	}
	return tensor.GreaterInto(tp.like(v), v, tp.zero(v.Device()))
}

// gradReduce: the output's gradient broadcast back to x's shape and
// scaled (a product with a constant, whose own gradient sums it back).
func gradReduce(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	x := n.in[0]
	return [3]*Var{tp.Mul(tp.Reshape(g, n.axes...), tp.constFill(x.value, n.f[0]))}
}

// gradMax: g·[x = max]/count, the weight a constant.
func gradMax(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	x, yk := n.in[0], n.saved[0]
	w := tp.like(x.value)
	tensor.EqualInto(w, x.value, yk)
	count := tensor.Fill(tp.like(yk), 0)
	tensor.SumToInto(count, w)
	tensor.DivInto(w, w, count)
	return [3]*Var{tp.Mul(tp.Reshape(g, yk.Shape()...), tp.Const(w))}
}

// gradSoftmax: y·(g - Σ g·y) for Softmax, g - eʸ·Σ g for LogSoftmax,
// the sums along the axis.
func gradSoftmax(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	y, axis := n.out, n.dims
	if n.f[0] != 0 {
		return [3]*Var{tp.Sub(g, tp.Mul(tp.Exp(y), tp.SumAxes(g, true, axis)))}
	}
	return [3]*Var{tp.Mul(y, tp.Sub(g, tp.SumAxes(tp.Mul(g, y), true, axis)))}
}

// gradMatMul: g·bᵀ and aᵀ·g, summed over the batch dimensions each
// operand was broadcast along.
func gradMatMul(tp *Tape, n *node, g *Var, want [3]bool) (gs [3]*Var) {
	a, b := n.in[0], n.in[1]
	if want[0] {
		gs[0] = tp.sumTo(tp.MatMul(g, tp.Transpose(b, -2, -1)), a.value)
	}
	if want[1] {
		gs[1] = tp.sumTo(tp.MatMul(tp.Transpose(a, -2, -1), g), b.value)
	}
	return gs
}

// gradLinear: the activation's gradient (from the output, or from the
// saved pre-activation made a Var of x, w and b), then
// dz·w, dzᵀ·x and the column sums of dz.
func gradLinear(tp *Tape, n *node, g *Var, want [3]bool) (gs [3]*Var) {
	x, w, b := n.in[0], n.in[1], n.in[2]
	dz := g
	if n.act.Kind != ActNone {
		var z *Var
		if pre := n.saved[0]; pre != nil {
			// The saved pre-activation as a Var: a Linear without
			// activation, recorded with no product recomputed.
			z, _ = tp.result(pre, backLinear, x, w, b)
		}
		e, arg := n.act.elem()
		dz = tp.elemGradGraph(e, arg, g, z, n.out)
	}
	if want[0] {
		gs[0] = tp.MatMul(dz, w)
	}
	if want[1] {
		gs[1] = tp.MatMul(tp.Transpose(dz, 0, 1), x)
	}
	if want[2] {
		gs[2] = tp.SumAxes(dz, false, 0)
	}
	return gs
}

// gradLoss: the loss's gradient recomputed from the prediction (MSE:
// 2(p - t)/N; CrossEntropy: (softmax(p) - onehot(labels))/N;
// BCEWithLogits: (σ(p) - t)/N), times g.
func gradLoss(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	p, target := n.in[0], n.saved[1]
	count := float32(p.value.Len())
	var d *Var
	switch lossKind(n.dims) {
	case lossMSE:
		d = tp.Scale(tp.Sub(p, tp.Const(target)), 2/count)
	case lossCrossEntropy:
		rows := float32(p.value.Dim(0))
		d = tp.Scale(tp.Sub(tp.Softmax(p, 1), tp.Const(tensor.OneHot(target, p.value.Dim(1)))), 1/rows)
	case lossBCEWithLogits:
		d = tp.Scale(tp.Sub(tp.Sigmoid(p), tp.Const(target)), 1/count)
	default:
		panic(fmt.Sprintf("nn: Tape.Grad: create_graph through loss %d is not supported", n.dims))
	}
	return [3]*Var{tp.Mul(d, g)}
}

func gradReshape(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	return [3]*Var{tp.Reshape(g, n.in[0].value.Shape()...)}
}

// gradPermute: the output's gradient permuted back.
func gradPermute(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	inv := make([]int, len(n.axes))
	for i, a := range n.axes {
		inv[a] = i
	}
	return [3]*Var{tp.Permute(g, inv...)}
}

// gradSlice: the output's gradient between zeros along the axis (step 1
// only).
func gradSlice(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	x := n.in[0]
	axis, step := n.idx[0], n.idx[3]
	if step != 1 {
		panic(fmt.Sprintf("nn: Tape.Grad: create_graph through op Slice with step %d is not supported", step))
	}
	d := x.value.Dim(axis)
	start := n.idx[1]
	if start < 0 {
		start += d
	}
	start = min(max(start, 0), d)
	end := start + g.value.Dim(axis)
	parts := make([]*Var, 0, 3)
	pad := func(size int) {
		if size > 0 {
			shape := x.value.Shape()
			shape[axis] = size
			parts = append(parts, tp.Const(tensor.Fill(tp.allocOn(x.value.Device(), shape...), 0)))
		}
	}
	pad(start)
	parts = append(parts, g)
	pad(d - end)
	if len(parts) == 1 {
		return [3]*Var{g}
	}
	return [3]*Var{tp.Concat(axis, parts...)}
}

// gradConcat: the operand's slice of the output's gradient.
func gradConcat(tp *Tape, n *node, g *Var, want [3]bool) [3]*Var {
	return [3]*Var{tp.Slice(g, n.idx[0], n.idx[1], n.idx[2], n.idx[3])}
}

// gradWhere: g where cond is set to a, elsewhere to b, each summed back
// to its shape.
func gradWhere(tp *Tape, n *node, g *Var, want [3]bool) (gs [3]*Var) {
	cond := n.saved[0]
	zero := tp.Const(tp.zero(g.value.Device()))
	if want[0] {
		gs[0] = tp.sumTo(tp.Where(cond, g, zero), n.in[0].value)
	}
	if want[1] {
		gs[1] = tp.sumTo(tp.Where(cond, zero, g), n.in[1].value)
	}
	return gs
}
