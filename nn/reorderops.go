package nn

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// This file holds the tape's reorderings and selections: Flip, Roll,
// Tile, MaskedSelect and Scatter (MaskedFill is in shapeops.go). Their
// forwards are package tensor's functions of the same names, written into
// the tape's buffers (tensor's ...Into forms), as their backwards
// (MaskedSelect's result is sized by tensor.MaskedCount first). All of
// them run on x's device, their backwards too.

// Flip returns x reversed along axes (tensor.Flip). The gradient is the
// output's flipped back.
func (tp *Tape) Flip(x *Var, axes ...int) *Var {
	const op = "Flip"
	tp.use(op, "x", x)
	for _, a := range axes {
		axisOf(op, x, a)
	}
	y := tp.like(x.value)
	tensor.FlipInto(y, x.value, axes...)
	out, nd := tp.result(y, backFlip, x)
	if nd != nil {
		nd.axes = slices.Clone(axes)
	}
	return out
}

func backFlip(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.FlipInto(dx, n.out.grad, n.axes...)
	tp.flush(x, dx, add)
}

// Roll returns x with its elements shifted along axes, wrapping around
// (tensor.Roll, torch.roll; no axes: as if flattened, one shift). The
// gradient is the output's rolled back by the opposite shifts.
func (tp *Tape) Roll(x *Var, shifts []int, axes ...int) *Var {
	const op = "Roll"
	tp.use(op, "x", x)
	y := tp.like(x.value)
	tensor.RollInto(y, x.value, shifts, axes...)
	out, nd := tp.result(y, backRoll, x)
	if nd != nil {
		nd.axes = append(slices.Clone(shifts), axes...)
		nd.dims = len(shifts)
	}
	return out
}

func backRoll(tp *Tape, n *node) {
	back := make([]int, n.dims)
	for i, s := range n.axes[:n.dims] {
		back[i] = -s
	}
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.RollInto(dx, n.out.grad, back, n.axes[n.dims:]...)
	tp.flush(x, dx, add)
}

// Tile returns x repeated reps[i] times along dimension i (tensor.Tile,
// torch.tile: fewer reps than dimensions are padded with leading 1s, more
// view x with leading dimensions of size 1). The gradient of an element of
// x is the sum of the output's over its copies.
func (tp *Tape) Tile(x *Var, reps ...int) *Var {
	const op = "Tile"
	tp.use(op, "x", x)
	shape, dims := tensor.TileShape(x.value, reps...)
	y := tp.allocOn(x.value.Device(), shape[:dims]...)
	tensor.TileInto(y, x.value, reps...)
	out, nd := tp.result(y, backTile, x)
	if nd != nil {
		nd.axes = slices.Clone(reps)
	}
	return out
}

// backTile sums the output's gradient, viewed as [r0, d0, r1, d1, ...]
// (a pair only where the rep is not 1), into x's, viewed as [1, d0, 1,
// d1, ...].
func backTile(tp *Tape, n *node) {
	x, reps := n.in[0], n.axes
	xs := x.value.Shape()
	dims := max(len(reps), len(xs))
	var gs, ds []int
	for i := range dims {
		d, r := 1, 1
		if j := i - (dims - len(xs)); j >= 0 {
			d = xs[j]
		}
		if j := i - (dims - len(reps)); j >= 0 {
			r = reps[j]
		}
		if r != 1 {
			gs, ds = append(gs, r), append(ds, 1)
		}
		gs, ds = append(gs, d), append(ds, d)
	}
	dx, beta := tp.gradAcc(x)
	zeroIfFirst(dx, beta)
	if dx.Len() == 0 {
		return
	}
	tensor.SumToInto(dx.Reshape(ds...), n.out.grad.Reshape(gs...))
}

// MaskedSelect returns the elements of x where mask (a constant) is
// nonzero, as a 1-D Var (tensor.MaskedSelect: x and mask broadcast
// together). The gradient goes back to the selected elements (summed over
// the dimensions x was broadcast along); the others get 0. On a device
// the forward waits once for MaskedCount, and the backward scatters the
// gradient to the positions MaskedSelect picks out of 0, 1, ... (an
// Arange made on the host and copied there: exact up to 2²⁴ elements).
func (tp *Tape) MaskedSelect(x *Var, mask *tensor.Tensor) *Var {
	const op = "MaskedSelect"
	tp.use(op, "x", x)
	mustTensor(op, "mask", mask)
	y := tp.allocOn(x.value.Device(), tensor.MaskedCount(x.value, mask))
	tensor.MaskedSelectInto(y, x.value, mask)
	out, nd := tp.result(y, backMaskedSelect, x)
	if nd != nil {
		nd.saved[0] = mask
	}
	return out
}

func backMaskedSelect(tp *Tape, n *node) {
	x, mask := n.in[0], n.saved[0]
	shape, _ := tensor.BroadcastShape(x.value.Shape(), mask.Shape())
	if dev := x.value.Device(); dev != tensor.CPU {
		full := tp.allocOn(dev, shape...)
		tensor.Fill(full, 0)
		count := full.Len()
		if count > 1<<24 {
			panic(fmt.Sprintf("nn: MaskedSelect: the gradient of a selection from %d elements on %v (more than 2²⁴, whose positions a float32 index does not hold)", count, dev))
		}
		if count > 0 {
			at, err := tensor.Arange(0, float64(count), 1).Reshape(shape...).To(dev)
			if err != nil {
				panic(fmt.Sprintf("nn: MaskedSelect: copying the positions to %v: %v", dev, err))
			}
			tensor.Scatter(full.Reshape(count), 0, tensor.MaskedSelect(at, mask), n.out.grad)
		}
		tp.reduceGrad(x, full)
		return
	}
	full := tp.alloc(shape...)
	tensor.Fill(full, 0)
	md := mask.BroadcastTo(shape...).Contiguous().Data()
	g, fd := hostData(n.out.grad), full.Data()
	j := 0
	for i, m := range md {
		if m != 0 {
			fd[i] = g[j]
			j++
		}
	}
	tp.reduceGrad(x, full)
}

// Scatter returns a copy of dst with src's elements written at the
// positions index names along axis, as torch.scatter (out of place;
// tensor.Scatter: index and src of one shape; a target named twice takes
// the later of src's elements in row-major order). The gradient of dst is
// the output's with the written positions zeroed; that of src is the
// output's gathered at index (tensor.Gather), as PyTorch's, so a src
// element overwritten by a later one still gets the gradient of its
// target. index is a constant.
func (tp *Tape) Scatter(dst *Var, axis int, index *tensor.Tensor, src *Var) *Var {
	const op = "Scatter"
	tp.use(op, "dst", dst)
	tp.use(op, "src", src)
	mustTensor(op, "index", index)
	axis = axisOf(op, dst, axis)
	if !slices.Equal(index.Shape(), src.value.Shape()) {
		panic(fmt.Sprintf("nn: %s: index shape %v and src shape %v differ", op, index.Shape(), src.value.Shape()))
	}
	y := tp.like(dst.value)
	tensor.CopyInto(y, dst.value)
	tensor.Scatter(y, axis, index, src.value)
	out, nd := tp.result(y, backScatter, dst, src)
	if nd != nil {
		nd.saved[0], nd.idx[0] = index, axis
	}
	return out
}

func backScatter(tp *Tape, n *node) {
	g, index, axis := n.out.grad, n.saved[0], n.idx[0]
	if d := n.in[0]; d.requires {
		keep, zeros := tp.like(g), tp.like(index)
		tensor.Fill(keep, 1)
		tensor.Fill(zeros, 0)
		tensor.Scatter(keep, axis, index, zeros)
		tensor.MulInto(keep, keep, g)
		tp.addGrad(d, keep)
	}
	if s := n.in[1]; s.requires {
		ds, add := tp.gradFor(s)
		tensor.GatherInto(ds, g, axis, index)
		tp.flush(s, ds, add)
	}
}
