//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_softmax_at(lanes_stream s, uintptr_t y, uintptr_t x, long long rows, int cols) {
	return lanes_softmax_rows(s, (float *)y, (const float *)x, rows, cols);
}
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// The Reduce family (tensor.ReduceKernels) and the plugin's SoftmaxRows.
// Kernels so far: the softmax of rows (lanes_softmax_rows), which
// Softmax runs along any axis; the reductions, LogSoftmax, SumTo and
// SoftmaxBackward return ErrNoKernel.

// Reduce implements tensor.ReduceKernels; it has no kernel yet.
func (g *GPU) Reduce(op tensor.ReduceOp, dst, x *tensor.Tensor, axes []int, ddof int) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel(fmt.Sprintf("Reduce (tensor.ReduceOp %d)", op))
}

// ArgReduce implements tensor.ReduceKernels; it has no kernel yet.
func (g *GPU) ArgReduce(op tensor.ArgOp, dst, x *tensor.Tensor, axis int) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel(fmt.Sprintf("ArgReduce (tensor.ArgOp %d)", op))
}

// SumTo implements tensor.ReduceKernels; it has no kernel yet.
func (g *GPU) SumTo(dst, x *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel("SumTo")
}

// Softmax implements tensor.ReduceKernels: dst = tensor.Softmax(x, axis)
// along any axis, any views on the GPU (dst may be x): x, its axis made
// the last, is gathered into rows unless it is already, and the rows'
// softmax goes to dst's view with the axis last, directly or through a
// temporary. LogSoftmax (log) has no kernel yet.
func (g *GPU) Softmax(dst, x *tensor.Tensor, axis int, log bool) error {
	if !g.opened() {
		return errNilGPU
	}
	if log {
		return noKernel("Softmax (LogSoftmax)")
	}
	if axis < 0 {
		axis += x.Dims()
	}
	cols := x.Dim(axis)
	if !fitsInt32(cols) {
		return fmt.Errorf("cudaplugin: Softmax: %d elements along axis %d do not fit the kernels' 32-bit sizes", cols, axis)
	}
	c := &call{g: g}
	defer c.release()
	xo, do := c.on("Softmax", 1, x).axisLast(axis), c.on("Softmax", 0, dst).axisLast(axis)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if x.Len() == 0 {
		return nil
	}
	xo, err := c.contiguous(xo)
	if err != nil {
		return err
	}
	out, err := c.into(dst, do, true, xo)
	if err != nil {
		return err
	}
	if err := check("lanes_softmax_rows", C.lanes_softmax_at(g.stream, C.uintptr_t(out.ptr), C.uintptr_t(xo.ptr), C.longlong(x.Len()/cols), C.int(cols))); err != nil {
		return err
	}
	return c.finish(out)
}

// SoftmaxBackward implements tensor.ReduceKernels; it has no kernel yet.
func (g *GPU) SoftmaxBackward(dx, y, dy *tensor.Tensor, axis int, log bool) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel("SoftmaxBackward")
}

// axisLast returns o with its axis moved to the end.
func (o operand) axisLast(axis int) operand {
	last := len(o.shape) - 1
	s, st := slices.Clone(o.shape), slices.Clone(o.strides)
	copy(s[axis:], o.shape[axis+1:])
	copy(st[axis:], o.strides[axis+1:])
	s[last], st[last] = o.shape[axis], o.strides[axis]
	return operand{ptr: o.ptr, shape: s, strides: st}
}

// SoftmaxRows sets dst to the softmax of x along its last axis, as
// tensor.Softmax(x, -1); dst may be x. Both are contiguous tensors on the
// GPU (tensor.Softmax takes any views and axis).
func (g *GPU) SoftmaxRows(dst, x *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape("SoftmaxRows", dst, x)
	if x.Dims() == 0 {
		panic("cudaplugin: SoftmaxRows: a scalar has no rows")
	}
	cols := x.Dim(-1)
	if !fitsInt32(cols) {
		return fmt.Errorf("cudaplugin: SoftmaxRows: %d columns do not fit the kernels' 32-bit sizes", cols)
	}
	c := &call{g: g}
	defer c.release()
	p := c.deviceOperands("SoftmaxRows", dst, x)
	rows := 0
	if cols > 0 {
		rows = x.Len() / cols
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_softmax_rows", C.lanes_softmax_at(g.stream, C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.longlong(rows), C.int(cols)))
}
