//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_pool_backward_at(lanes_stream s, int kind, LanesPool *p, uintptr_t dx, uintptr_t dy, uintptr_t idx, uintptr_t err) {
	return lanes_pool2d_backward(s, kind, p, (float *)dx, (const float *)dy, (const float *)idx, (float *)err);
}
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
// (lanes_pool2d) and their gradients (lanes_pool2d_backward), with fixed
// windows or adaptive ones (LanesPool.adaptive).

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

// MaxPool2DBackward implements tensor.PoolKernels: dx = 0 but for each
// dy element added at its index (atomically, so windows sharing a
// maximum add in any order); an index that names no element of its
// plane makes it return an error after the kernel (read back from a
// device flag: the call waits for the stream). Any views.
func (g *GPU) MaxPool2DBackward(dx, dy, indices *tensor.Tensor, p tensor.PoolParams) error {
	return g.poolBackward("MaxPool2DBackward", 0, dx, dy, indices, p)
}

// AvgPool2DBackward implements tensor.PoolKernels: each dx element the
// sum of the dy elements of the windows holding it over their sizes (a
// gather, no atomics). Any views.
func (g *GPU) AvgPool2DBackward(dx, dy *tensor.Tensor, p tensor.PoolParams) error {
	return g.poolBackward("AvgPool2DBackward", 1, dx, dy, nil, p)
}

// poolBackward runs lanes_pool2d_backward of kind for dx: dy and indices
// read contiguous (gathered when not), dx written directly when it is
// contiguous and overlaps neither, else through a temporary.
func (g *GPU) poolBackward(op string, kind int, dx, dy, indices *tensor.Tensor, p tensor.PoolParams) error {
	if !g.opened() {
		return errNilGPU
	}
	lp, err := poolGeometry(op, dx.Shape(), p)
	if err != nil {
		return err
	}
	return g.poolBackwardWith(op, kind, &lp, dx, dy, indices)
}

// poolBackwardWith runs lanes_pool2d_backward of kind over lp's planes
// (poolBackward).
func (g *GPU) poolBackwardWith(op string, kind int, lp *C.LanesPool, dx, dy, indices *tensor.Tensor) (err error) {
	c := &call{g: g}
	defer c.release()
	do, gyo := c.on(op, 0, dx), c.on(op, 1, dy)
	var io operand
	if indices != nil {
		io = c.on(op, 2, indices)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if dx.Len() == 0 {
		return nil
	}
	if gyo, err = c.contiguous(gyo); err != nil {
		return err
	}
	ins := []operand{gyo}
	var flag uintptr
	if indices != nil {
		if io, err = c.contiguous(io); err != nil {
			return err
		}
		ins = append(ins, io)
		if flag, err = c.badFlag(); err != nil {
			return err
		}
	}
	out, err := c.into(dx, do, ins...)
	if err != nil {
		return err
	}
	if kind == 0 {
		if err := check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(out.ptr), C.size_t(4*dx.Len()), g.stream)); err != nil {
			return err
		}
	}
	if err := check("lanes_pool2d_backward", C.lanes_pool_backward_at(g.stream, C.int(kind), lp, C.uintptr_t(out.ptr), C.uintptr_t(gyo.ptr), C.uintptr_t(io.ptr), C.uintptr_t(flag))); err != nil {
		return err
	}
	if flag != 0 {
		v, bad, err := c.badValue(flag)
		if err != nil {
			return err
		}
		if bad {
			return fmt.Errorf("cudaplugin: %s: index %v is not an element of an input plane of %d", op, v, lp.h*lp.w)
		}
	}
	return c.finish(out)
}

// poolGeometry returns the kernels' description of pooling an input of
// shape xs (NCHW) with p.
func poolGeometry(op string, xs []int, p tensor.PoolParams) (C.LanesPool, error) {
	out := tensor.Pool2DShape(tensor.New(1, 1, 1, 1).Expand(xs...), p) // one element, viewed at xs
	sh, sw := p.Stride[0], p.Stride[1]
	if sh == 0 {
		sh = p.Kernel[0]
	}
	if sw == 0 {
		sw = p.Kernel[1]
	}
	if !fitsInt32(xs[2], xs[3], out[2], out[3], p.Kernel[0], p.Kernel[1], sh, sw, p.Padding[0], p.Padding[1]) {
		return C.LanesPool{}, fmt.Errorf("cudaplugin: %s: shape %v with %+v does not fit the kernels' 32-bit sizes", op, xs, p)
	}
	return C.LanesPool{planes: C.longlong(xs[0] * xs[1]), h: C.int(xs[2]), w: C.int(xs[3]), oh: C.int(out[2]), ow: C.int(out[3]),
		kh: C.int(p.Kernel[0]), kw: C.int(p.Kernel[1]), sh: C.int(sh), sw: C.int(sw), ph: C.int(p.Padding[0]), pw: C.int(p.Padding[1]),
		exclude_pad: cbool(p.ExcludePad)}, nil
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
	lp, err := poolGeometry(op, xs, p)
	if err != nil {
		return err
	}
	return g.poolWith(op, kind, &lp, dst, indices, x)
}

// poolWith runs lanes_pool2d of kind over lp's planes: x read contiguous
// (gathered when not), dst (nil: a temporary) and indices (nil: none)
// written directly when contiguous, else through temporaries.
func (g *GPU) poolWith(op string, kind int, lp *C.LanesPool, dst, indices, x *tensor.Tensor) (err error) {
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
	n := int(lp.planes) * int(lp.oh) * int(lp.ow)
	if xo.len() == 0 || n == 0 {
		return nil
	}
	if xo, err = c.contiguous(xo); err != nil {
		return err
	}
	var targets [2]target
	for i, t := range []*tensor.Tensor{dst, indices} {
		if t == nil {
			if i == 1 {
				continue
			}
			// No dst: the kernel's maxima go to a temporary.
			m, err := c.temp(n)
			if err != nil {
				return err
			}
			targets[i] = target{ptr: m.ptr(0)}
			continue
		}
		if targets[i], err = c.into(t, outs[i], xo); err != nil {
			return err
		}
	}
	if err := check("lanes_pool2d", C.lanes_pool_at(g.stream, C.int(kind), lp, C.uintptr_t(targets[0].ptr), C.uintptr_t(targets[1].ptr), C.uintptr_t(xo.ptr))); err != nil {
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

// adaptiveGeometry returns the kernels' description of an adaptive
// pooling of x [..., H, W] to out [..., OH, OW] (tensor has checked them).
func adaptiveGeometry(op string, xs, out []int) (C.LanesPool, error) {
	nd := len(xs)
	planes := 1
	for _, d := range xs[:nd-2] {
		planes *= d
	}
	h, w, oh, ow := xs[nd-2], xs[nd-1], out[nd-2], out[nd-1]
	if !fitsInt32(h, w, oh, ow, h*w, oh*ow) {
		return C.LanesPool{}, fmt.Errorf("cudaplugin: %s: shape %v pooled to %v does not fit the kernels' 32-bit sizes", op, xs, out)
	}
	return C.LanesPool{planes: C.longlong(planes), h: C.int(h), w: C.int(w), oh: C.int(oh), ow: C.int(ow), adaptive: 1}, nil
}

// AdaptiveMaxPool2D implements tensor.PoolKernels: lanes_pool2d's max
// over adaptive windows; indices may be nil. Any views.
func (g *GPU) AdaptiveMaxPool2D(dst, indices, x *tensor.Tensor) error {
	return g.adaptive("AdaptiveMaxPool2D", 0, dst, indices, x)
}

// AdaptiveAvgPool2D implements tensor.PoolKernels: lanes_pool2d's mean
// over adaptive windows, summed in double. Any views.
func (g *GPU) AdaptiveAvgPool2D(dst, x *tensor.Tensor) error {
	return g.adaptive("AdaptiveAvgPool2D", 1, dst, nil, x)
}

func (g *GPU) adaptive(op string, kind int, dst, indices, x *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	lp, err := adaptiveGeometry(op, x.Shape(), dst.Shape())
	if err != nil {
		return err
	}
	return g.poolWith(op, kind, &lp, dst, indices, x)
}

// AdaptiveMaxPool2DBackward implements tensor.PoolKernels as
// MaxPool2DBackward (atomic adds; a bad index an error after the kernel).
func (g *GPU) AdaptiveMaxPool2DBackward(dx, dy, indices *tensor.Tensor) error {
	return g.adaptiveBackward("AdaptiveMaxPool2DBackward", 0, dx, dy, indices)
}

// AdaptiveAvgPool2DBackward implements tensor.PoolKernels: a gather of
// the windows holding each dx element, in the CPU's order (its sums bit
// for bit).
func (g *GPU) AdaptiveAvgPool2DBackward(dx, dy *tensor.Tensor) error {
	return g.adaptiveBackward("AdaptiveAvgPool2DBackward", 1, dx, dy, nil)
}

func (g *GPU) adaptiveBackward(op string, kind int, dx, dy, indices *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	lp, err := adaptiveGeometry(op, dx.Shape(), dy.Shape())
	if err != nil {
		return err
	}
	return g.poolBackwardWith(op, kind, &lp, dx, dy, indices)
}
