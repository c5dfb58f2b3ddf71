package nn

import (
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// The sampling and geometry ops: tensor's AffineGrid, GridSample and
// Interpolate and their backwards, on the host; they allocate their
// results.

// AffineGrid returns the sampling grid [N, H, W, 2] of the affine maps
// theta [N, 2, 3] for an output of size [N, C, H, W] (PyTorch's
// affine_grid); its gradient flows to theta.
func (tp *Tape) AffineGrid(theta *Var, size []int, alignCorners bool) *Var {
	tp.use("AffineGrid", "theta", theta)
	size = slices.Clone(size)
	out, _ := tp.result(tensor.AffineGrid(theta.value, size, alignCorners), func(tp *Tape, n *node) {
		tp.addGrad(theta, tensor.AffineGridBackward(n.out.grad, size, alignCorners))
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
	out, _ := tp.result(tensor.GridSample(input.value, grid.value, p), func(tp *Tape, n *node) {
		dx, dg := tensor.GridSampleBackward(n.out.grad, input.value, grid.value, p)
		if input.requires {
			tp.addGrad(input, dx)
		}
		if grid.requires {
			tp.addGrad(grid, dg)
		}
	}, input, grid)
	return out
}

// Interpolate resizes x [N, C, H, W] (PyTorch's interpolate,
// tensor.Interpolate: nearest or bilinear, by size or scale factor).
func (tp *Tape) Interpolate(x *Var, p tensor.InterpolateParams) *Var {
	tp.use("Interpolate", "x", x)
	shape := x.value.Shape()
	out, _ := tp.result(tensor.Interpolate(x.value, p), func(tp *Tape, n *node) {
		tp.addGrad(x, tensor.InterpolateBackward(n.out.grad, shape, p))
	}, x)
	return out
}
