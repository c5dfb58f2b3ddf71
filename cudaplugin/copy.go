//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_gather_at(lanes_stream s, uintptr_t y, uintptr_t x, LanesGather *g) {
	return lanes_gather(s, (float *)y, (const float *)x, g);
}
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// gather copies the n elements of view o into contiguous memory at dst.
func (g *GPU) gather(stream C.lanes_stream, dst uintptr, o operand, n int) error {
	if n == 0 {
		return nil
	}
	// Merge nothing; pad to at least one dimension.
	shape, strides := o.shape, o.strides
	if len(shape) == 0 {
		shape, strides = []int{1}, []int{0}
	}
	if len(shape) > C.LANES_GATHER_DIMS {
		return fmt.Errorf("cudaplugin: a view of %d dimensions (at most %d on the device)", len(shape), C.LANES_GATHER_DIMS)
	}
	var gd C.LanesGather
	gd.dims = C.int(len(shape))
	gd.n = C.longlong(n)
	for i := range shape {
		gd.shape[i] = C.longlong(shape[i])
		gd.strides[i] = C.longlong(strides[i])
	}
	return check("lanes_gather", C.lanes_gather_at(stream, C.uintptr_t(dst), C.uintptr_t(o.ptr), &gd))
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
	if t.IsContiguous() {
		g.deviceOperands("Contiguous", t)
		return t, nil
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	c := &call{g: g}
	defer c.release()
	o, err := c.input("Contiguous", t)
	if err != nil {
		return nil, err
	}
	m, err := g.alloc(t.Len())
	if err != nil {
		return nil, err
	}
	if err := g.gather(g.stream, m.ptr(0), o, t.Len()); err != nil {
		m.Release()
		return nil, err
	}
	return tensor.FromDeviceMemory(m, t.Shape()...), nil
}
