//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_reduce_at(lanes_stream s, int op, const LanesReduce *r, uintptr_t y, uintptr_t x, int ddof, int acc) {
	return lanes_reduce(s, op, r, (float *)y, (const float *)x, ddof, acc);
}
static int lanes_reduce_norm_at(lanes_stream s, const LanesReduce *r, uintptr_t y, uintptr_t x, double p) {
	return lanes_reduce_norm(s, r, (float *)y, (const float *)x, p);
}
static int lanes_argreduce_at(lanes_stream s, int op, const LanesReduce *r, uintptr_t y, uintptr_t x) {
	return lanes_argreduce(s, op, r, (float *)y, (const float *)x);
}
static int lanes_softmax_at(lanes_stream s, int log, const LanesReduce *r, uintptr_t y, uintptr_t x) {
	return lanes_softmax(s, log, r, (float *)y, (const float *)x);
}
static int lanes_softmax_backward_at(lanes_stream s, int log, const LanesReduce *r, uintptr_t dx, uintptr_t y, uintptr_t dy) {
	return lanes_softmax_backward(s, log, r, (float *)dx, (const float *)y, (const float *)dy);
}
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// The Reduce family (tensor.ReduceKernels) and the plugin's SoftmaxRows:
// every op is one kernel over rows (reduce.cu, kernels.h: LanesReduce),
// one block per row, reading its operands through their strides (any
// views, broadcast ones included): the reductions over any axes
// (lanes_reduce; SumTo is its accumulating sum), ArgMax and ArgMin
// (lanes_argreduce), Softmax and LogSoftmax (lanes_softmax) and their
// gradients (lanes_softmax_backward).

// rowsOf returns the descriptor of a kernel over the rows of operands of
// one shape (y, x and z: their views at that shape; z may be nil), the
// dimensions set in inner making a row's elements, the others the rows.
// ok is false when either part has more than maxDims dimensions once
// merged.
func rowsOf(shape []int, inner []bool, y, x, z operand) (r C.LanesReduce, ok bool) {
	if z.shape == nil {
		z = x
	}
	var part [2]struct{ shape, ys, xs, zs []int }
	for i, d := range shape {
		p := &part[0]
		if inner[i] {
			p = &part[1]
		}
		p.shape = append(p.shape, d)
		p.ys = append(p.ys, y.strides[i])
		p.xs = append(p.xs, x.strides[i])
		p.zs = append(p.zs, z.strides[i])
	}
	fill := func(p struct{ shape, ys, xs, zs []int }, ls *C.LanesShape, ss ...*C.LanesStrides) bool {
		m := merge(p.shape, p.ys, p.xs, p.zs)
		if len(m.shape) > maxDims {
			return false
		}
		ls.dims, ls.n = C.int(len(m.shape)), C.longlong(m.n)
		for k, d := range m.shape {
			ls.shape[k] = C.longlong(d)
			for j, s := range ss {
				s.s[k] = C.longlong(m.strides[j][k])
			}
		}
		return true
	}
	ok = fill(part[0], &r.outer, &r.yo, &r.xo, &r.zo) && fill(part[1], &r.inner, &r.yi, &r.xi, &r.zi)
	return r, ok
}

// axisMask returns the mask of axes of a tensor of rank dims.
func axisMask(dims int, axes ...int) []bool {
	m := make([]bool, dims)
	for _, a := range axes {
		m[a] = true
	}
	return m
}

// rows returns the descriptor of a kernel over rows of x (see rowsOf),
// y viewed at x's shape; when it does not fit the kernels (more than
// maxDims dimensions in a part once merged) x is first copied into a
// temporary with the rows' dimensions first, which merges them. in is x
// as the kernel reads it.
func (c *call) rows(op string, inner []bool, y, x, z operand) (r C.LanesReduce, in operand, err error) {
	if r, ok := rowsOf(x.shape, inner, y, x, z); ok {
		return r, x, nil
	}
	if z.shape != nil {
		return r, x, fmt.Errorf("cudaplugin: %s: operands of shape %v with strides %v, %v and %v have too many dimensions that do not merge", op, x.shape, y.strides, x.strides, z.strides)
	}
	var perm []int
	for _, in := range []bool{false, true} {
		for i := range x.shape {
			if inner[i] == in {
				perm = append(perm, i)
			}
		}
	}
	pv := operand{ptr: x.ptr, shape: make([]int, len(perm)), strides: make([]int, len(perm))}
	for k, i := range perm {
		pv.shape[k], pv.strides[k] = x.shape[i], x.strides[i]
	}
	t, err := c.copied(pv)
	if err != nil {
		return r, x, err
	}
	// t back in x's order of dimensions, each with its stride in t.
	in = operand{ptr: t.ptr, shape: x.shape, strides: make([]int, len(perm))}
	for k, i := range perm {
		in.strides[i] = t.strides[k]
	}
	if r, ok := rowsOf(x.shape, inner, y, in, operand{}); ok {
		return r, in, nil
	}
	return r, x, fmt.Errorf("cudaplugin: %s: result of shape %v and strides %v has too many dimensions that do not merge", op, y.shape, y.strides)
}

// reduceInto runs lanes_reduce's op over the axes in inner of x into dst
// (x's shape with size 1 along them, or fewer leading dimensions: it
// broadcasts to x), adding to it when accumulate is set.
func (g *GPU) reduceInto(name string, code C.int, dst, x *tensor.Tensor, inner []bool, ddof int, accumulate bool) error {
	if !fitsInt32(ddof) {
		return fmt.Errorf("cudaplugin: %s: ddof %d does not fit the kernels' 32-bit sizes", name, ddof)
	}
	return g.alongRows(name, dst, x, inner, func(r *C.LanesReduce, d, in C.uintptr_t) error {
		return check("lanes_reduce", C.lanes_reduce_at(g.stream, code, r, d, in, C.int(ddof), cbool(accumulate)))
	})
}

// alongRows runs launch over the rows of x along the axes in inner, into
// dst: x's shape, or x's shape with size 1 along the axes in inner (or
// fewer leading dimensions: it broadcasts to x). launch gets the rows and
// the device addresses of dst and of x (a copy of x where x overlaps dst
// without being it). Nothing runs when dst is empty; a nil or closed g
// gives errNilGPU.
func (g *GPU) alongRows(name string, dst, x *tensor.Tensor, inner []bool, launch func(r *C.LanesReduce, d, in C.uintptr_t) error) error {
	return g.alongRowsWith(name, dst, x, nil, inner, func(_ *call, r *C.LanesReduce, d, in, _ C.uintptr_t) error {
		return launch(r, d, in)
	})
}

// alongRowsWith is alongRows with a third operand z (nil: none), of x's
// shape as dst then is (a gradient's dy), read along the same rows; launch
// also gets the call (for scratch) and z's device address (0 without z;
// z too is copied where it overlaps dst without being it).
func (g *GPU) alongRowsWith(name string, dst, x, z *tensor.Tensor, inner []bool, launch func(c *call, r *C.LanesReduce, d, in, zp C.uintptr_t) error) error {
	if !g.opened() {
		return errNilGPU
	}
	c := &call{g: g}
	defer c.release()
	xo, do := c.on(name, 1, x), c.on(name, 0, dst)
	var zo operand
	if z != nil {
		zo = c.on(name, 2, z)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if dst.Len() == 0 {
		return nil
	}
	if err := c.aside(do, true, &xo, &zo); err != nil {
		return err
	}
	r, in, err := c.rows(name, inner, do.broadcast(x.Shape()), xo, zo)
	if err != nil {
		return err
	}
	return launch(c, &r, C.uintptr_t(do.ptr), C.uintptr_t(in.ptr), C.uintptr_t(zo.ptr))
}

// Reduce implements tensor.ReduceKernels: every tensor.ReduceOp over any
// axes of any view. Sum, Max, Min and LogSumExp accumulate in float32
// (LogSumExp about the row's maximum), Mean, Var and Std in float64 (Var
// and Std by the corrected two-pass formula).
func (g *GPU) Reduce(op tensor.ReduceOp, dst, x *tensor.Tensor, axes []int, ddof int) error {
	if !g.opened() {
		return errNilGPU
	}
	if op < tensor.ReduceSum || op > tensor.ReduceAll {
		panic(fmt.Sprintf("cudaplugin: Reduce: op %d is not a reduction", op))
	}
	return g.reduceInto("Reduce", C.int(op), dst, x, axisMask(x.Dims(), axes...), ddof, false)
}

// NormP implements tensor.ReduceKernels: Norm of any order p over any
// axes of any view (lanes_reduce_norm: one block per row, in double, the
// elements scaled by max|x| (min|x| for p < 0) as the CPU's; its sums
// combine in the block's tree order, not the CPU's sequential one).
func (g *GPU) NormP(dst, x *tensor.Tensor, axes []int, p float64) error {
	return g.alongRows("NormP", dst, x, axisMask(x.Dims(), axes...), func(r *C.LanesReduce, d, in C.uintptr_t) error {
		return check("lanes_reduce_norm", C.lanes_reduce_norm_at(g.stream, r, d, in, C.double(p)))
	})
}

// SumTo implements tensor.ReduceKernels: dst += the sums of x over the
// axes along which dst broadcasts to x's shape (any views; an x that
// overlaps dst is copied first).
func (g *GPU) SumTo(dst, x *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	inner := make([]bool, x.Dims())
	lead := x.Dims() - dst.Dims()
	for i := range inner {
		inner[i] = i < lead || dst.Dim(i-lead) == 1 && x.Dim(i) != 1
	}
	return g.reduceInto("SumTo", C.int(tensor.ReduceSum), dst, x, inner, 0, true)
}

// ArgReduce implements tensor.ReduceKernels: the index of the first
// maximum or minimum (or NaN) along axis, any views (an x that overlaps
// dst is copied first, as alongRows does).
func (g *GPU) ArgReduce(op tensor.ArgOp, dst, x *tensor.Tensor, axis int) error {
	if !g.opened() {
		return errNilGPU
	}
	if op != tensor.ArgOpMax && op != tensor.ArgOpMin {
		panic(fmt.Sprintf("cudaplugin: ArgReduce: op %d is not an index reduction", op))
	}
	return g.alongRows("ArgReduce", dst, x, axisMask(x.Dims(), axis), func(r *C.LanesReduce, d, in C.uintptr_t) error {
		return check("lanes_argreduce", C.lanes_argreduce_at(g.stream, C.int(op), r, d, in))
	})
}

// Softmax implements tensor.ReduceKernels: dst = tensor.Softmax(x, axis)
// or LogSoftmax, along any axis of any views (dst may be x; an x that
// overlaps dst otherwise is copied first).
func (g *GPU) Softmax(dst, x *tensor.Tensor, axis int, log bool) error {
	return g.alongRows("Softmax", dst, x, axisMask(x.Dims(), axis), func(r *C.LanesReduce, d, in C.uintptr_t) error {
		return check("lanes_softmax", C.lanes_softmax_at(g.stream, cbool(log), r, d, in))
	})
}

// SoftmaxBackward implements tensor.ReduceKernels: dx from the softmax's
// (or log softmax's) output y and dy along any axis, any views (dx may be
// y or dy; an operand that overlaps dx otherwise is copied first).
func (g *GPU) SoftmaxBackward(dx, y, dy *tensor.Tensor, axis int, log bool) error {
	return g.alongRowsWith("SoftmaxBackward", dx, y, dy, axisMask(dx.Dims(), axis), func(_ *call, r *C.LanesReduce, d, yp, gyp C.uintptr_t) error {
		return check("lanes_softmax_backward", C.lanes_softmax_backward_at(g.stream, cbool(log), r, d, yp, gyp))
	})
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
	c := &call{g: g}
	defer c.release()
	p := c.deviceOperands("SoftmaxRows", dst, x)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if x.Len() == 0 {
		return nil
	}
	sh := x.Shape()
	r, _ := rowsOf(sh, axisMask(len(sh), len(sh)-1), dense(p[0], sh), dense(p[1], sh), operand{})
	return check("lanes_softmax", C.lanes_softmax_at(g.stream, 0, &r, C.uintptr_t(p[0]), C.uintptr_t(p[1])))
}
