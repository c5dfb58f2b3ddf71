//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"

static float *lanes_fptr(uintptr_t p) { return (float *)p; }
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/tensor"
)

// operand is a tensor's elements on the device: the address of the view's
// first element, its shape and strides.
type operand struct {
	ptr     uintptr
	shape   []int
	strides []int
}

func (o operand) aligned() bool { return o.ptr%16 == 0 }

func isContiguous(shape, strides []int) bool {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != s {
			return false
		}
		s *= shape[i]
	}
	return true
}

// call is one operation on the device stream: the temporaries it made and
// whether host memory is involved (then it ends synchronized).
type call struct {
	g     *GPU
	temps []*deviceMemory
}

func (c *call) release() {
	for _, m := range c.temps {
		m.Release()
	}
}

func (c *call) temp(n int) (*deviceMemory, error) {
	m, err := c.g.alloc(n)
	if err == nil {
		c.temps = append(c.temps, m)
	}
	return m, err
}

// scratchFunc returns device memory of n floats for an op's own use, valid
// until the op's work on its stream is done.
type scratchFunc func(n int) (uintptr, error)

// scratch is a scratchFunc for ops on the device stream: a temporary,
// released with the call (later users of the memory queue on the same
// stream).
func (c *call) scratch(n int) (uintptr, error) {
	m, err := c.temp(n)
	if err != nil {
		return 0, err
	}
	return m.ptr(0), nil
}

// splitK sets a kernel's split-K fields: splits parts of per floats each
// in a workspace from scratch, or no split (0, nil) for splits 1.
func splitK(splits *C.int, partial **C.float, n, per int, scratch scratchFunc) error {
	if n <= 1 {
		*splits, *partial = 0, nil
		return nil
	}
	p, err := scratch(n * per)
	if err != nil {
		return err
	}
	*splits, *partial = C.int(n), C.lanes_fptr(C.uintptr_t(p))
	return nil
}

// input returns t on the device: a device tensor of this GPU as it is, a
// host tensor uploaded (row-major) into a temporary.
func (c *call) input(op string, t *tensor.Tensor) (operand, error) {
	if mem, off, ok := tensor.DeviceView(t); ok {
		m, mine := mem.(*deviceMemory)
		if !mine || m.g != c.g {
			return operand{}, fmt.Errorf("cudaplugin: %s: a tensor on %v given to the GPU of %v", op, mem.Device(), c.g.dev)
		}
		return operand{ptr: m.ptr(off), shape: t.Shape(), strides: t.Strides()}, nil
	}
	data := t.Data()
	m, err := c.temp(len(data))
	if err != nil {
		return operand{}, err
	}
	if len(data) > 0 {
		if err := c.g.upload(m.ptr(0), data); err != nil {
			return operand{}, err
		}
	}
	return operand{ptr: m.ptr(0), shape: t.Shape(), strides: shape.ContiguousStrides(t.Shape())}, nil
}

// contiguous returns o itself when it is row-major contiguous, else a
// gathered copy in a temporary.
func (c *call) contiguous(o operand) (operand, error) {
	if isContiguous(o.shape, o.strides) {
		return o, nil
	}
	n := 1
	for _, d := range o.shape {
		n *= d
	}
	m, err := c.temp(n)
	if err != nil {
		return operand{}, err
	}
	if err := c.g.gather(c.g.stream, m.ptr(0), o, n); err != nil {
		return operand{}, err
	}
	return operand{ptr: m.ptr(0), shape: o.shape, strides: shape.ContiguousStrides(o.shape)}, nil
}

// output returns where the result for dst goes: dst's own memory when it
// is a contiguous device tensor of this GPU, else a temporary that finish
// copies into host dst.
func (c *call) output(op string, dst *tensor.Tensor) (uintptr, error) {
	if mem, off, ok := tensor.DeviceView(dst); ok {
		m, mine := mem.(*deviceMemory)
		if !mine || m.g != c.g {
			return 0, fmt.Errorf("cudaplugin: %s: dst on %v given to the GPU of %v", op, mem.Device(), c.g.dev)
		}
		if !dst.IsContiguous() {
			return 0, fmt.Errorf("cudaplugin: %s: dst of shape %v and strides %v is not contiguous", op, dst.Shape(), dst.Strides())
		}
		return m.ptr(off), nil
	}
	m, err := c.temp(dst.Len())
	if err != nil {
		return 0, err
	}
	return m.ptr(0), nil
}

// finish copies the result into a host dst (and so waits for it); a device
// dst is left to the stream.
func (c *call) finish(dst *tensor.Tensor, out uintptr) error {
	if dst.Device() != tensor.CPU || dst.Len() == 0 {
		return nil
	}
	if dst.IsContiguous() {
		return c.g.download(dst.Data(), out)
	}
	tmp := make([]float32, dst.Len())
	if err := c.g.download(tmp, out); err != nil {
		return err
	}
	tensor.CopyInto(dst, tensor.FromSlice(tmp, dst.Shape()...))
	return nil
}

func anyDevice(ts ...*tensor.Tensor) bool {
	for _, t := range ts {
		if t != nil && t.Device() != tensor.CPU {
			return true
		}
	}
	return false
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// deviceOperands checks that the operands of a device-only op are contiguous
// tensors on this GPU and returns their addresses; anything else is a
// programmer error.
func (g *GPU) deviceOperands(op string, ts ...*tensor.Tensor) []uintptr {
	ptrs := make([]uintptr, len(ts))
	for i, t := range ts {
		if t == nil {
			continue
		}
		mem, off, ok := tensor.DeviceView(t)
		m, mine := mem.(*deviceMemory)
		if !ok || !mine || m.g != g {
			panic(fmt.Sprintf("cudaplugin: %s: operand %d (shape %v) is on %v, want %v (use To)", op, i, t.Shape(), t.Device(), g.dev))
		}
		if !t.IsContiguous() {
			panic(fmt.Sprintf("cudaplugin: %s: operand %d of shape %v and strides %v is not contiguous (use GPU.Contiguous)", op, i, t.Shape(), t.Strides()))
		}
		ptrs[i] = m.ptr(off)
	}
	return ptrs
}

func sameShape(op string, a, b *tensor.Tensor) {
	if !slices.Equal(a.Shape(), b.Shape()) {
		panic(fmt.Sprintf("cudaplugin: %s: shapes %v and %v differ", op, a.Shape(), b.Shape()))
	}
}
