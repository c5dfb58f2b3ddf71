//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_grid_sample_at(lanes_stream s, int pass, LanesSample *p, uintptr_t y, uintptr_t acc, uintptr_t x, uintptr_t grid, uintptr_t dy) {
	return lanes_grid_sample(s, pass, p, (float *)y, (double *)acc, (const float *)x, (const float *)grid, (const float *)dy);
}
static int lanes_affine_grid_at(lanes_stream s, int pass, LanesSample *p, uintptr_t y, uintptr_t x) {
	return lanes_affine_grid(s, pass, p, (float *)y, (const float *)x);
}
static int lanes_interpolate_at(lanes_stream s, int pass, LanesSample *p, uintptr_t y, uintptr_t acc, uintptr_t x) {
	return lanes_interpolate(s, pass, p, (float *)y, (double *)acc, (const float *)x);
}
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// The Sample family (tensor.SampleKernels): GridSample, AffineGrid,
// Interpolate and their gradients, each a launch of sample.cu's kernels
// over contiguous operands (gathered when strided; a strided or
// overlapping result written through a temporary). Every value is
// computed in double and rounded once, every sum in the CPU's order
// without fused multiply-adds: the results are the CPU's bit for bit. The
// gradients of the input are one thread per image plane (N·C threads, each
// summing over its plane's output positions into double scratch), so
// they are slow for few planes: deterministic rather than atomic.

// sampleGeometry returns the kernels' description of a resampling of
// input x [N, C, H, W] (or, for AffineGrid, [N, ·, H, W]) to [·, ·, ho, wo].
func sampleGeometry(op string, xs []int, ho, wo int) (C.LanesSample, error) {
	if !fitsInt32(xs[0], xs[1], xs[2], xs[3], ho, wo, xs[2]*xs[3], ho*wo) {
		return C.LanesSample{}, fmt.Errorf("cudaplugin: %s: input %v resampled to %d×%d does not fit the kernels' 32-bit sizes", op, xs, ho, wo)
	}
	return C.LanesSample{n: C.int(xs[0]), c: C.int(xs[1]), h: C.int(xs[2]), w: C.int(xs[3]), ho: C.int(ho), wo: C.int(wo)}, nil
}

// sampleRun runs launch with the contiguous inputs ins (nil ones absent)
// and, for each result outs[i] that is not nil, its contiguous target;
// scratch doubles of device memory when not 0.
func (g *GPU) sampleRun(op string, outs, ins []*tensor.Tensor, scratch int, launch func(y []uintptr, acc uintptr, x []uintptr) C.int) error {
	if !g.opened() {
		return errNilGPU
	}
	c := &call{g: g}
	defer c.release()
	iv := make([]operand, len(ins))
	for i, t := range ins {
		if t != nil {
			iv[i] = c.on(op, len(outs)+i, t)
		}
	}
	ov := make([]operand, len(outs))
	for i, t := range outs {
		if t != nil {
			ov[i] = c.on(op, i, t)
		}
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	x := make([]uintptr, len(ins))
	var read []operand
	for i, t := range ins {
		if t == nil {
			continue
		}
		var err error
		if iv[i], err = c.contiguous(iv[i]); err != nil {
			return err
		}
		x[i] = iv[i].ptr
		read = append(read, iv[i])
	}
	targets := make([]target, len(outs))
	y := make([]uintptr, len(outs))
	for i, t := range outs {
		if t == nil || t.Len() == 0 {
			continue
		}
		var err error
		if targets[i], err = c.into(t, ov[i], read...); err != nil {
			return err
		}
		y[i] = targets[i].ptr
	}
	var acc uintptr
	if scratch > 0 {
		var err error
		if acc, err = c.scratch(2 * scratch); err != nil {
			return err
		}
	}
	if err := check(op, launch(y, acc, x)); err != nil {
		return err
	}
	for i, t := range outs {
		if t != nil && t.Len() > 0 {
			if err := c.finish(targets[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// GridSample implements tensor.SampleKernels: one thread per grid point.
func (g *GPU) GridSample(dst, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	const op = "GridSample"
	s, err := gridGeometry(op, input, grid, p)
	if err != nil {
		return err
	}
	return g.sampleRun(op, []*tensor.Tensor{dst}, []*tensor.Tensor{input, grid}, 0, func(y []uintptr, _ uintptr, x []uintptr) C.int {
		return C.lanes_grid_sample_at(g.stream, 0, &s, C.uintptr_t(y[0]), 0, C.uintptr_t(x[0]), C.uintptr_t(x[1]), 0)
	})
}

// GridSampleBackward implements tensor.SampleKernels: dinput one thread
// per plane (after one per grid point, which puts its source coordinates
// in the scratch for every channel), dgrid one per grid point.
func (g *GPU) GridSampleBackward(dinput, dgrid, dy, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	const op = "GridSampleBackward"
	s, err := gridGeometry(op, input, grid, p)
	if err != nil {
		return err
	}
	scratch := 0
	if dinput != nil {
		scratch = input.Len() + grid.Len() // the sums, then two coordinates per grid point
	}
	read := input
	if dgrid == nil {
		read = nil // dinput's kernel reads only its shape: no contiguous copy
	}
	return g.sampleRun(op, []*tensor.Tensor{dinput, dgrid}, []*tensor.Tensor{dy, read, grid}, scratch, func(y []uintptr, acc uintptr, x []uintptr) C.int {
		if dinput != nil {
			if r := C.lanes_grid_sample_at(g.stream, 1, &s, C.uintptr_t(y[0]), C.uintptr_t(acc), C.uintptr_t(x[1]), C.uintptr_t(x[2]), C.uintptr_t(x[0])); r != 0 || dgrid == nil {
				return r
			}
		}
		return C.lanes_grid_sample_at(g.stream, 2, &s, C.uintptr_t(y[1]), 0, C.uintptr_t(x[1]), C.uintptr_t(x[2]), C.uintptr_t(x[0]))
	})
}

func gridGeometry(op string, input, grid *tensor.Tensor, p tensor.GridSampleParams) (C.LanesSample, error) {
	s, err := sampleGeometry(op, input.Shape(), grid.Dim(1), grid.Dim(2))
	s.mode, s.padding, s.align = C.int(p.Mode), C.int(p.Padding), cbool(p.AlignCorners)
	return s, err
}

// AffineGrid implements tensor.SampleKernels: one thread per grid point.
func (g *GPU) AffineGrid(dst, theta *tensor.Tensor, alignCorners bool) error {
	const op = "AffineGrid"
	s, err := sampleGeometry(op, []int{dst.Dim(0), 1, dst.Dim(1), dst.Dim(2)}, dst.Dim(1), dst.Dim(2))
	if err != nil {
		return err
	}
	s.align = cbool(alignCorners)
	return g.sampleRun(op, []*tensor.Tensor{dst}, []*tensor.Tensor{theta}, 0, func(y []uintptr, _ uintptr, x []uintptr) C.int {
		return C.lanes_affine_grid_at(g.stream, 0, &s, C.uintptr_t(y[0]), C.uintptr_t(x[0]))
	})
}

// AffineGridBackward implements tensor.SampleKernels: one thread per
// element of dtheta, summing over the grid.
func (g *GPU) AffineGridBackward(dtheta, dgrid *tensor.Tensor, alignCorners bool) error {
	const op = "AffineGridBackward"
	s, err := sampleGeometry(op, []int{dgrid.Dim(0), 1, dgrid.Dim(1), dgrid.Dim(2)}, dgrid.Dim(1), dgrid.Dim(2))
	if err != nil {
		return err
	}
	s.align = cbool(alignCorners)
	return g.sampleRun(op, []*tensor.Tensor{dtheta}, []*tensor.Tensor{dgrid}, 0, func(y []uintptr, _ uintptr, x []uintptr) C.int {
		return C.lanes_affine_grid_at(g.stream, 1, &s, C.uintptr_t(y[0]), C.uintptr_t(x[0]))
	})
}

// Interpolate implements tensor.SampleKernels: one thread per output
// element, its taps computed as tensor's from tensor.InterpolateScale.
func (g *GPU) Interpolate(dst, x *tensor.Tensor, p tensor.InterpolateParams) error {
	const op = "Interpolate"
	s, err := interpGeometry(op, x.Shape(), dst.Shape(), p)
	if err != nil {
		return err
	}
	return g.sampleRun(op, []*tensor.Tensor{dst}, []*tensor.Tensor{x}, 0, func(y []uintptr, _ uintptr, xs []uintptr) C.int {
		return C.lanes_interpolate_at(g.stream, 0, &s, C.uintptr_t(y[0]), 0, C.uintptr_t(xs[0]))
	})
}

// InterpolateBackward implements tensor.SampleKernels: one thread per
// plane.
func (g *GPU) InterpolateBackward(dx, dy *tensor.Tensor, p tensor.InterpolateParams) error {
	const op = "InterpolateBackward"
	s, err := interpGeometry(op, dx.Shape(), dy.Shape(), p)
	if err != nil {
		return err
	}
	return g.sampleRun(op, []*tensor.Tensor{dx}, []*tensor.Tensor{dy}, dx.Len(), func(y []uintptr, acc uintptr, xs []uintptr) C.int {
		return C.lanes_interpolate_at(g.stream, 1, &s, C.uintptr_t(y[0]), C.uintptr_t(acc), C.uintptr_t(xs[0]))
	})
}

func interpGeometry(op string, xs, ys []int, p tensor.InterpolateParams) (C.LanesSample, error) {
	s, err := sampleGeometry(op, xs, ys[2], ys[3])
	s.mode, s.align = C.int(p.Mode), cbool(p.AlignCorners)
	s.scale_h = C.float(tensor.InterpolateScale(xs[2], ys[2], p.Scale[0], p.Mode, p.AlignCorners))
	s.scale_w = C.float(tensor.InterpolateScale(xs[3], ys[3], p.Scale[1], p.Mode, p.AlignCorners))
	return s, err
}
