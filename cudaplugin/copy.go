//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_copy_at(lanes_stream s, const LanesShape *shape, uintptr_t y, const LanesStrides *ys, uintptr_t x, const LanesStrides *xs) {
	return lanes_copy(s, shape, (float *)y, ys, (const float *)x, xs);
}
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// The Copy family (tensor.CopyKernels) and the plugin's Contiguous: every
// copy is one strided copy kernel (copy.cu), whatever the layouts.

// copyView queues dst = src, two views of one shape on the GPU; src may
// broadcast (strides 0). They must not overlap but as the very same view.
func (g *GPU) copyView(dst, src operand) error {
	if dst.len() == 0 || dst.ptr == src.ptr && slices.Equal(dst.strides, src.strides) {
		return nil
	}
	return merge(dst.shape, dst.strides, src.strides).each(func(ls *C.LanesShape, ss []C.LanesStrides, offs []int) error {
		return check("lanes_copy", C.lanes_copy_at(g.stream, ls, C.uintptr_t(dst.ptr+uintptr(offs[0])*4), &ss[0], C.uintptr_t(src.ptr+uintptr(offs[1])*4), &ss[1]))
	})
}

// Contiguous returns t when it is a contiguous tensor on the GPU, else a
// contiguous copy on the GPU (a host t is uploaded; a device view is
// gathered on the device).
func (g *GPU) Contiguous(t *tensor.Tensor) (*tensor.Tensor, error) {
	if !g.opened() {
		return nil, errNilGPU
	}
	if t.Device() == tensor.CPU {
		return t.To(g.dev)
	}
	c := &call{g: g}
	defer c.release()
	if t.IsContiguous() {
		c.deviceOperands("Contiguous", t)
		return t, nil
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	o, err := c.input("Contiguous", t)
	if err != nil {
		return nil, err
	}
	m, err := g.alloc(t.Len())
	if err != nil {
		return nil, err
	}
	if err := g.copyView(dense(m.ptr(0), o.shape), o); err != nil {
		m.Release()
		return nil, err
	}
	return tensor.FromDeviceMemory(m, t.Shape()...), nil
}

// CopyInto implements tensor.CopyKernels: dst = src broadcast to dst's
// shape, any strides on both sides (src overlapping dst is copied aside
// first).
func (g *GPU) CopyInto(dst, src *tensor.Tensor) error {
	return g.Concat(dst, 0, []*tensor.Tensor{src})
}

// Concat implements tensor.CopyKernels: dst = ts joined along axis, each
// copied into its slice of dst; CopyInto is the one-operand case, whose
// operand broadcasts. Inputs that overlap dst are copied aside before
// anything is written.
func (g *GPU) Concat(dst *tensor.Tensor, axis int, ts []*tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	c := &call{g: g}
	defer c.release()
	d, on, err := c.view("Copy", "dst", dst)
	if err != nil {
		return err
	}
	if !on {
		return fmt.Errorf("cudaplugin: Copy: dst on %v given to the GPU of %v", dst.Device(), g.dev)
	}
	parts := make([]operand, len(ts))
	srcs := make([]operand, len(ts))
	at := 0
	for i, t := range ts {
		part := d // dst's slice for t along axis (all of dst for CopyInto)
		if len(ts) > 1 {
			part.shape = slices.Clone(d.shape)
			part.shape[axis] = t.Dim(axis)
			part.ptr += uintptr(at*d.strides[axis]) * 4
			at += t.Dim(axis)
		}
		src, err := c.input("Copy", t)
		if err != nil {
			return err
		}
		src = src.broadcast(part.shape)
		if err := c.aside(d, true, &src); err != nil {
			return err
		}
		parts[i], srcs[i] = part, src
	}
	for i := range ts {
		if err := g.copyView(parts[i], srcs[i]); err != nil {
			return err
		}
	}
	return nil
}
