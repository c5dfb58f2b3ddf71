package nn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lanesgo/lanes/tensor"
)

// This file holds the operations that move elements without arithmetic:
// Permute and Transpose, Slice and Split, Concat and Stack, and the
// selections Where and MaskedFill. Their results are contiguous tensors
// of the tape's (tensor.CopyInto of a view of the operand), so that later
// operations see the dense layout they expect; their backward passes
// write the output's gradient through the same view of the operand's.

// Permute returns x with its dimensions reordered: dimension i of the
// result is dimension axes[i] of x (negative axes count from the end).
// The gradient is the output's permuted back.
func (tp *Tape) Permute(x *Var, axes ...int) *Var { return tp.permute("Permute", x, axes) }

// Transpose returns x with dimensions a and b swapped (negative ones count
// from the end): Permute with those two axes exchanged.
func (tp *Tape) Transpose(x *Var, a, b int) *Var {
	const op = "Transpose"
	tp.use(op, "x", x)
	a, b = axisOf(op, x, a), axisOf(op, x, b)
	axes := make([]int, x.value.Dims())
	for i := range axes {
		axes[i] = i
	}
	axes[a], axes[b] = b, a
	return tp.permute(op, x, axes)
}

func (tp *Tape) permute(op string, x *Var, axes []int) *Var {
	tp.use(op, "x", x)
	if len(axes) != x.value.Dims() {
		panic(fmt.Sprintf("nn: %s: axes %v for x of shape %v", op, axes, x.value.Shape()))
	}
	perm := make([]int, len(axes))
	var seen [tensor.MaxDims]bool
	shape := make([]int, len(axes))
	for i, a := range axes {
		a = axisOf(op, x, a)
		if seen[a] {
			panic(fmt.Sprintf("nn: %s: repeated axis in %v for x of shape %v", op, axes, x.value.Shape()))
		}
		seen[a] = true
		perm[i], shape[i] = a, x.value.Dim(a)
	}
	y := tp.allocOn(x.value.Device(), shape...)
	tensor.CopyInto(y, x.value.Permute(perm...))
	out, nd := tp.result(y, backPermute, x)
	if nd != nil {
		nd.axes = perm
	}
	return out
}

// backPermute adds the output's gradient to x's through x's gradient
// permuted as x was.
func backPermute(tp *Tape, n *node) {
	x := n.in[0]
	dx, beta := tp.gradAcc(x)
	dxp := dx.Permute(n.axes...)
	if beta == 0 {
		tensor.CopyInto(dxp, n.out.grad)
		return
	}
	tensor.AddInto(dxp, dxp, n.out.grad)
}

// Slice returns the elements start, start+step, ... (below end) of x along
// axis, with tensor.Slice's rules (Python's: negative start and end count
// from the end and both are clamped to the dimension; step > 0). The
// gradient goes to those elements of x; the others get 0.
func (tp *Tape) Slice(x *Var, axis, start, end, step int) *Var {
	const op = "Slice"
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	if step <= 0 {
		panic(fmt.Sprintf("nn: %s: step %d must be positive (x of shape %v)", op, step, x.value.Shape()))
	}
	view := x.value.Slice(axis, start, end, step)
	y := tp.like(view)
	tensor.CopyInto(y, view)
	out, nd := tp.result(y, backSlice, x)
	if nd != nil {
		nd.idx = [4]int{axis, start, end, step}
	}
	return out
}

// backSlice adds the output's gradient to the sliced elements of x's.
func backSlice(tp *Tape, n *node) {
	x := n.in[0]
	dx, beta := tp.gradAcc(x)
	zeroIfFirst(dx, beta)
	v := dx.Slice(n.idx[0], n.idx[1], n.idx[2], n.idx[3])
	tensor.AddInto(v, v, n.out.grad)
}

// Split returns x cut along axis into pieces of the given sizes (which
// must add up to the dimension): a Slice for each.
func (tp *Tape) Split(x *Var, axis int, sizes ...int) []*Var {
	const op = "Split"
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	total := 0
	for _, s := range sizes {
		if s < 0 {
			panic(fmt.Sprintf("nn: %s: negative size in %v (x of shape %v)", op, sizes, x.value.Shape()))
		}
		total += s
	}
	if total != x.value.Dim(axis) {
		panic(fmt.Sprintf("nn: %s: sizes %v add up to %d, not dimension %d of x of shape %v", op, sizes, total, axis, x.value.Shape()))
	}
	out := make([]*Var, len(sizes))
	at := 0
	for i, s := range sizes {
		out[i] = tp.Slice(x, axis, at, at+s, 1)
		at += s
	}
	return out
}

// Concat returns xs joined along axis (negative counts from the end);
// their other dimensions must be equal. Each one's gradient is its slice
// of the output's.
func (tp *Tape) Concat(axis int, xs ...*Var) *Var {
	const op = "Concat"
	if len(xs) == 0 {
		panic("nn: Concat: no operands")
	}
	for i, x := range xs {
		tp.use(op, fmt.Sprintf("xs[%d]", i), x)
	}
	axis = axisOf(op, xs[0], axis)
	shape := xs[0].value.Shape()
	shape[axis] = 0
	ts := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		ts[i] = x.value
		s := x.value.Shape()
		if len(s) != len(shape) || !slices.Equal(s[:axis], shape[:axis]) || !slices.Equal(s[axis+1:], shape[axis+1:]) {
			panic(fmt.Sprintf("nn: %s: shapes %s differ outside axis %d", op, shapesOf(xs), axis))
		}
		shape[axis] += s[axis]
	}
	y := tp.allocOn(deviceOf(op, ts...), shape...)
	out := tp.newVar()
	out.value = y
	at := 0
	for _, x := range xs {
		d := x.value.Dim(axis)
		tensor.CopyInto(y.Slice(axis, at, at+d, 1), x.value)
		if nd := tp.record(out, backConcat, x); nd != nil {
			nd.idx = [4]int{axis, at, at + d, 1}
		}
		at += d
	}
	return out
}

// backConcat adds its slice of the output's gradient to one operand's.
func backConcat(tp *Tape, n *node) {
	tp.addGrad(n.in[0], n.out.grad.Slice(n.idx[0], n.idx[1], n.idx[2], n.idx[3]))
}

// Stack returns xs, all of one shape, joined along a new axis (in [-r-1,
// r] for operands of r dimensions, negative counting from the end): each
// reshaped with a dimension of size 1 there, then Concat.
func (tp *Tape) Stack(axis int, xs ...*Var) *Var {
	const op = "Stack"
	if len(xs) == 0 {
		panic("nn: Stack: no operands")
	}
	for i, x := range xs {
		tp.use(op, fmt.Sprintf("xs[%d]", i), x)
	}
	shape := xs[0].value.Shape()
	r := len(shape)
	if axis < -r-1 || axis > r {
		panic(fmt.Sprintf("nn: %s: axis %d out of range for operands of shape %v", op, axis, shape))
	}
	if axis < 0 {
		axis += r + 1
	}
	for _, x := range xs {
		if !slices.Equal(x.value.Shape(), shape) {
			panic(fmt.Sprintf("nn: %s: shapes %s differ", op, shapesOf(xs)))
		}
	}
	one := slices.Insert(shape, axis, 1)
	us := make([]*Var, len(xs))
	for i, x := range xs {
		us[i] = tp.Reshape(x, one...)
	}
	return tp.Concat(axis, us...)
}

// shapesOf lists the shapes of vs for a panic message.
func shapesOf(vs []*Var) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, v.value.Shape())
	}
	return b.String()
}

// Where returns a where cond is nonzero (NaN counts as nonzero) and b
// elsewhere, the three broadcast together (tensor.Where). cond is a
// constant (a mask of 0 and 1, as tensor's comparisons give); the
// gradient goes to a where cond is nonzero and to b elsewhere, summed over
// the dimensions each was broadcast along.
func (tp *Tape) Where(cond *tensor.Tensor, a, b *Var) *Var {
	const op = "Where"
	mustTensor(op, "cond", cond)
	tp.use(op, "a", a)
	tp.use(op, "b", b)
	shape, ok := tensor.BroadcastShape(cond.Shape(), a.value.Shape())
	if ok {
		shape, ok = tensor.BroadcastShape(shape, b.value.Shape())
	}
	if !ok {
		panic(fmt.Sprintf("nn: %s: shapes %v (cond), %v and %v do not broadcast", op, cond.Shape(), a.value.Shape(), b.value.Shape()))
	}
	y := tp.allocOn(deviceOf(op, cond, a.value, b.value), shape...)
	tensor.WhereInto(y, cond, a.value, b.value)
	out, nd := tp.result(y, backWhere, a, b)
	if nd != nil {
		nd.saved[0] = cond
	}
	return out
}

func backWhere(tp *Tape, n *node) {
	g, cond := n.out.grad, n.saved[0]
	zero := tp.zero(g.Device())
	for i, v := range n.in[:2] {
		if !v.requires {
			continue
		}
		src := tp.like(g)
		if i == 0 {
			tensor.WhereInto(src, cond, g, zero)
		} else {
			tensor.WhereInto(src, cond, zero, g)
		}
		tp.reduceGrad(v, src)
	}
}

// MaskedFill returns x with value where mask is nonzero (mask broadcasts
// to x's shape): Where(mask, value, x), so x's gradient is 0 where the
// mask is set (as PyTorch's masked_fill; -Inf before a Softmax masks
// attention).
func (tp *Tape) MaskedFill(x *Var, mask *tensor.Tensor, value float32) *Var {
	const op = "MaskedFill"
	tp.use(op, "x", x)
	mustTensor(op, "mask", mask)
	if s, ok := tensor.BroadcastShape(mask.Shape(), x.value.Shape()); !ok || !slices.Equal(s, x.value.Shape()) {
		panic(fmt.Sprintf("nn: %s: mask of shape %v does not broadcast to x's shape %v", op, mask.Shape(), x.value.Shape()))
	}
	v := tp.Const(tp.scalar(deviceOf(op, mask, x.value), value))
	return tp.Where(mask, v, x)
}
