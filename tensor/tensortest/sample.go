package tensortest

import "github.com/lanesgo/lanes/tensor"

// The Sample family (tensor.SampleKernels) on host copies, by the CPU's.

func (k kernels) GridSample(dst, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	return k.do("Sample.GridSample", 1, []*tensor.Tensor{dst, input, grid}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.GridSample(h[0], h[1], h[2], p)
	})
}

func (k kernels) GridSampleBackward(dinput, dgrid, dy, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	return k.do("Sample.GridSampleBackward", 2, []*tensor.Tensor{dinput, dgrid, dy, input, grid}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.GridSampleBackward(h[0], h[1], h[2], h[3], h[4], p)
	})
}

func (k kernels) AffineGrid(dst, theta *tensor.Tensor, alignCorners bool) error {
	return k.do("Sample.AffineGrid", 1, []*tensor.Tensor{dst, theta}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.AffineGrid(h[0], h[1], alignCorners)
	})
}

func (k kernels) AffineGridBackward(dtheta, dgrid *tensor.Tensor, alignCorners bool) error {
	return k.do("Sample.AffineGridBackward", 1, []*tensor.Tensor{dtheta, dgrid}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.AffineGridBackward(h[0], h[1], alignCorners)
	})
}

func (k kernels) Interpolate(dst, x *tensor.Tensor, p tensor.InterpolateParams) error {
	return k.do("Sample.Interpolate", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.Interpolate(h[0], h[1], p)
	})
}

func (k kernels) InterpolateBackward(dx, dy *tensor.Tensor, p tensor.InterpolateParams) error {
	return k.do("Sample.InterpolateBackward", 1, []*tensor.Tensor{dx, dy}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.InterpolateBackward(h[0], h[1], p)
	})
}
