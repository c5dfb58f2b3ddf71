package nn

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// The sampling and geometry ops: tensor's AffineGrid, GridSample and
// Interpolate and their backwards (the ...Into forms), on the device of
// their operands, in the tape's buffers.

// AffineGrid returns the sampling grid [N, H, W, 2] of the affine maps
// theta [N, 2, 3] for an output of size [N, C, H, W] (PyTorch's
// affine_grid); its gradient flows to theta.
func (tp *Tape) AffineGrid(theta *Var, size []int, alignCorners bool) *Var {
	const op = "AffineGrid"
	tp.use(op, "theta", theta)
	if len(size) != 4 || size[2] < 0 || size[3] < 0 {
		panic(fmt.Sprintf("nn: %s: theta of shape %v and size %v, want [N 2 3] and [N C H W]", op, theta.value.Shape(), size))
	}
	size = slices.Clone(size)
	y := tp.allocOn(theta.value.Device(), size[0], size[2], size[3], 2)
	tensor.AffineGridInto(y, theta.value, size, alignCorners)
	out, _ := tp.result(y, func(tp *Tape, n *node) {
		dt, add := tp.gradFor(theta)
		tensor.AffineGridBackwardInto(dt, n.out.grad, size, alignCorners)
		tp.flush(theta, dt, add)
	}, theta)
	return out
}

// GridSample samples input [N, C, H, W] at grid [N, Ho, Wo, 2] (PyTorch's
// grid_sample, tensor.GridSample); gradients flow to both (the grid's is
// 0 for nearest).
func (tp *Tape) GridSample(input, grid *Var, p tensor.GridSampleParams) *Var {
	const op = "GridSample"
	tp.use(op, "input", input)
	tp.use(op, "grid", grid)
	if input.value.Dims() != 4 || grid.value.Dims() != 4 {
		tensor.GridSample(input.value, grid.value, p) // its panic
	}
	y := tp.allocOn(input.value.Device(), input.value.Dim(0), input.value.Dim(1), grid.value.Dim(1), grid.value.Dim(2))
	tensor.GridSampleInto(y, input.value, grid.value, p)
	out, _ := tp.result(y, func(tp *Tape, n *node) {
		var dx, dg *tensor.Tensor
		var addX, addG bool
		if input.requires {
			dx, addX = tp.gradFor(input)
		}
		if grid.requires {
			dg, addG = tp.gradFor(grid)
		}
		tensor.GridSampleBackwardInto(dx, dg, n.out.grad, input.value, grid.value, p)
		if input.requires {
			tp.flush(input, dx, addX)
		}
		if grid.requires {
			tp.flush(grid, dg, addG)
		}
	}, input, grid)
	return out
}

// Interpolate resizes x [N, C, H, W] (PyTorch's interpolate,
// tensor.Interpolate: nearest or bilinear, by size or scale factor).
func (tp *Tape) Interpolate(x *Var, p tensor.InterpolateParams) *Var {
	tp.use("Interpolate", "x", x)
	s := tensor.InterpolateShape(x.value, p)
	y := tp.allocOn(x.value.Device(), s[:]...)
	tensor.InterpolateInto(y, x.value, p)
	out, _ := tp.result(y, func(tp *Tape, n *node) {
		dx, add := tp.gradFor(x)
		tensor.InterpolateBackwardInto(dx, n.out.grad, p)
		tp.flush(x, dx, add)
	}, x)
	return out
}
