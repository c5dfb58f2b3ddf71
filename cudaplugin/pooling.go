//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_pool_at(lanes_stream s, int kind, LanesPool *p, uintptr_t y, uintptr_t idx, uintptr_t x) {
	return lanes_pool2d(s, kind, p, (float *)y, (float *)idx, (const float *)x);
}
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// The Pool family (tensor.PoolKernels): max and average pooling forward
// (lanes_pool2d); their gradients have no kernel yet.

// MaxPool2D implements tensor.PoolKernels: it sets dst and indices to
// tensor.MaxPool2D(x, p), the maxima
// and the index of each in its input plane. Either may be nil to skip it,
// not both. The tensors are on the GPU, with any strides.
func (g *GPU) MaxPool2D(dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	return g.pool("MaxPool2D", 0, dst, indices, x, p)
}

// AvgPool2D implements tensor.PoolKernels: dst = tensor.AvgPool2D(x, p),
// as MaxPool2D.
func (g *GPU) AvgPool2D(dst, x *tensor.Tensor, p tensor.PoolParams) error {
	return g.pool("AvgPool2D", 1, dst, nil, x, p)
}

// MaxPool2DBackward implements tensor.PoolKernels; it has no kernel yet.
func (g *GPU) MaxPool2DBackward(dx, dy, indices *tensor.Tensor, p tensor.PoolParams) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel("MaxPool2DBackward")
}

// AvgPool2DBackward implements tensor.PoolKernels; it has no kernel yet.
func (g *GPU) AvgPool2DBackward(dx, dy *tensor.Tensor, p tensor.PoolParams) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel("AvgPool2DBackward")
}

func (g *GPU) pool(op string, kind int, dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	if !g.opened() {
		return errNilGPU
	}
	out := tensor.Pool2DShape(x, p) // checks x and p, panicking as tensor does
	if dst == nil && indices == nil {
		panic(fmt.Sprintf("cudaplugin: %s: neither dst nor indices", op))
	}
	for _, t := range []*tensor.Tensor{dst, indices} {
		if t != nil && !slices.Equal(t.Shape(), out[:]) {
			panic(fmt.Sprintf("cudaplugin: %s: shape %v gives output %v, got %v", op, x.Shape(), out, t.Shape()))
		}
	}
	xs := x.Shape()
	if indices != nil {
		checkPoolIndices(op, xs)
	}
	sh, sw := p.Stride[0], p.Stride[1]
	if sh == 0 {
		sh = p.Kernel[0]
	}
	if sw == 0 {
		sw = p.Kernel[1]
	}
	if !fitsInt32(xs[2], xs[3], out[2], out[3], p.Kernel[0], p.Kernel[1], sh, sw, p.Padding[0], p.Padding[1]) {
		return fmt.Errorf("cudaplugin: %s: shape %v with %+v does not fit the kernels' 32-bit sizes", op, xs, p)
	}
	c := &call{g: g}
	defer c.release()
	xo := c.on(op, 2, x)
	var outs [2]operand // dst's and indices' views, for those given
	for i, t := range []*tensor.Tensor{dst, indices} {
		if t != nil {
			outs[i] = c.on(op, i, t)
		}
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if xo.len() == 0 || out[0]*out[1]*out[2]*out[3] == 0 {
		return nil
	}
	xo, err := c.contiguous(xo)
	if err != nil {
		return err
	}
	var targets [2]target
	for i, t := range []*tensor.Tensor{dst, indices} {
		if t == nil {
			if i == 1 {
				continue
			}
			// No dst: the kernel's maxima go to a temporary.
			m, err := c.temp(out[0] * out[1] * out[2] * out[3])
			if err != nil {
				return err
			}
			targets[i] = target{ptr: m.ptr(0)}
			continue
		}
		if targets[i], err = c.into(t, outs[i], false, xo); err != nil {
			return err
		}
	}
	lp := C.LanesPool{planes: C.longlong(xs[0] * xs[1]), h: C.int(xs[2]), w: C.int(xs[3]), oh: C.int(out[2]), ow: C.int(out[3]),
		kh: C.int(p.Kernel[0]), kw: C.int(p.Kernel[1]), sh: C.int(sh), sw: C.int(sw), ph: C.int(p.Padding[0]), pw: C.int(p.Padding[1]),
		exclude_pad: cbool(p.ExcludePad)}
	if err := check("lanes_pool2d", C.lanes_pool_at(g.stream, C.int(kind), &lp, C.uintptr_t(targets[0].ptr), C.uintptr_t(targets[1].ptr), C.uintptr_t(xo.ptr))); err != nil {
		return err
	}
	for _, t := range targets {
		if t.dst != nil {
			if err := c.finish(t); err != nil {
				return err
			}
		}
	}
	return nil
}
