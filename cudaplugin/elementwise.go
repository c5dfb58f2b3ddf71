//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_bias_act_at(lanes_stream s, uintptr_t y, uintptr_t x, uintptr_t bias, long long n, int ch, long long inner, int act) {
	return lanes_bias_act(s, (float *)y, (const float *)x, (const float *)bias, n, ch, inner, act);
}
static int lanes_binary_at(lanes_stream s, int op, uintptr_t y, uintptr_t a, uintptr_t b, long long n) {
	return lanes_binary(s, op, (float *)y, (const float *)a, (const float *)b, n);
}
*/
import "C"

import (
	"fmt"
	"math"

	"github.com/lanesgo/lanes/tensor"
)

// The Elementwise family (tensor.ElementwiseKernels) and the plugin's
// BiasAct, Add and Mul. Kernels so far: add and multiply (lanes_binary),
// bias and ReLU (lanes_bias_act); a zero fill is a memset. The family's
// other ops return ErrNoKernel.

// binaryCodes are lanes_binary's op codes for the binary ops it runs.
var binaryCodes = map[tensor.ElemOp]C.int{tensor.ElemAdd: 0, tensor.ElemMul: 1}

// Binary implements tensor.ElementwiseKernels for ElemAdd and ElemMul:
// dst = op(a, b), the operands broadcast to dst's shape and any views (a
// broadcast, strided or overlapping operand is gathered into a
// temporary first; b may be a 0-d host scalar, uploaded). The other ops
// return ErrNoKernel.
func (g *GPU) Binary(op tensor.ElemOp, dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	code, ok := binaryCodes[op]
	if !ok {
		return noKernel(fmt.Sprintf("Binary (tensor.ElemOp %d)", op))
	}
	return g.elementwise("Binary", dst, []*tensor.Tensor{a, b}, func(out uintptr, in []operand) error {
		return check("lanes_binary", C.lanes_binary_at(g.stream, code, C.uintptr_t(out), C.uintptr_t(in[0].ptr), C.uintptr_t(in[1].ptr), C.longlong(dst.Len())))
	})
}

// Unary implements tensor.ElementwiseKernels for ElemReLU (x broadcast to
// dst's shape, any views, as Binary's operands) and ElemFill of 0; the
// other ops, and fills of other values, return ErrNoKernel.
func (g *GPU) Unary(op tensor.ElemOp, dst, x *tensor.Tensor, arg [2]float32) error {
	if !g.opened() {
		return errNilGPU
	}
	switch {
	case op == tensor.ElemReLU:
		return g.elementwise("Unary", dst, []*tensor.Tensor{x}, func(out uintptr, in []operand) error {
			return check("lanes_bias_act", C.lanes_bias_act_at(g.stream, C.uintptr_t(out), C.uintptr_t(in[0].ptr), 0, C.longlong(dst.Len()), 1, 1, C.int(ReLU)))
		})
	case op == tensor.ElemFill && arg[0] == 0 && !math.Signbit(float64(arg[0])):
		return g.elementwise("Unary", dst, nil, func(out uintptr, _ []operand) error {
			return check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(out), C.size_t(4*dst.Len()), g.stream))
		})
	case op == tensor.ElemFill:
		return noKernel(fmt.Sprintf("Unary (tensor.ElemFill of %v, not 0)", arg[0]))
	}
	return noKernel(fmt.Sprintf("Unary (tensor.ElemOp %d)", op))
}

// Where implements tensor.ElementwiseKernels; it has no kernel yet.
func (g *GPU) Where(dst, cond, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel("Where")
}

// UnaryBackward implements tensor.ElementwiseKernels; it has no kernel
// yet.
func (g *GPU) UnaryBackward(op tensor.ElemOp, dx, dy, x, y *tensor.Tensor, arg [2]float32) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel(fmt.Sprintf("UnaryBackward (tensor.ElemOp %d)", op))
}

// elementwise runs a kernel over dst's elements in row-major order: each
// input on this GPU (or a 0-d host scalar, uploaded), broadcast to dst's
// shape and made contiguous, and the output dst itself or a temporary
// copied into it (tensor has checked the shapes). launch queues the
// kernel.
func (g *GPU) elementwise(op string, dst *tensor.Tensor, inputs []*tensor.Tensor, launch func(out uintptr, in []operand) error) error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	c := &call{g: g}
	defer c.release()
	if dst.Len() == 0 {
		return nil
	}
	in := make([]operand, len(inputs))
	for i, t := range inputs {
		o, err := c.input(op, t)
		if err == nil {
			o, err = c.contiguous(o.broadcast(dst.Shape()))
		}
		if err != nil {
			return err
		}
		in[i] = o
	}
	out, err := c.output(op, dst, true, in...)
	if err != nil {
		return err
	}
	if err := launch(out.ptr, in); err != nil {
		return err
	}
	return c.finish(out)
}

// BiasAct sets dst to act(x + bias) with bias (nil: none) broadcast along
// x's axis (1 for an NCHW convolution output, -1 for a linear layer's).
// dst may be x. Every tensor is a contiguous tensor on the GPU.
func (g *GPU) BiasAct(dst, x, bias *tensor.Tensor, axis int, act Activation) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape("BiasAct", dst, x)
	shape := x.Shape()
	if axis < 0 {
		axis += len(shape)
	}
	if axis < 0 || axis >= len(shape) {
		panic(fmt.Sprintf("cudaplugin: BiasAct: axis out of range for shape %v", shape))
	}
	if bias != nil && (bias.Dims() != 1 || bias.Dim(0) != shape[axis]) {
		panic(fmt.Sprintf("cudaplugin: BiasAct: bias shape %v for axis %d of %v", bias.Shape(), axis, shape))
	}
	if act != Identity && act != ReLU {
		panic(fmt.Sprintf("cudaplugin: BiasAct: unknown activation %d", act))
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	if !fitsInt32(shape[axis]) {
		return fmt.Errorf("cudaplugin: BiasAct: %d channels do not fit the kernels' 32-bit sizes", shape[axis])
	}
	c := &call{g: g}
	defer c.release()
	p := c.deviceOperands("BiasAct", dst, x, bias)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_bias_act", C.lanes_bias_act_at(g.stream, C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.uintptr_t(p[2]),
		C.longlong(x.Len()), C.int(shape[axis]), C.longlong(max(inner, 1)), C.int(act)))
}

// Add sets dst = a + b elementwise (same shapes; dst may be a or b).
// Every tensor is a contiguous tensor on the GPU (tensor.Add takes any).
func (g *GPU) Add(dst, a, b *tensor.Tensor) error { return g.binary("Add", tensor.ElemAdd, dst, a, b) }

// Mul sets dst = a · b elementwise (same shapes; dst may be a or b), as
// Add.
func (g *GPU) Mul(dst, a, b *tensor.Tensor) error { return g.binary("Mul", tensor.ElemMul, dst, a, b) }

func (g *GPU) binary(op string, e tensor.ElemOp, dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape(op, a, b)
	sameShape(op, dst, a)
	c := &call{g: g}
	defer c.release()
	p := c.deviceOperands(op, dst, a, b)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_binary", C.lanes_binary_at(g.stream, binaryCodes[e], C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.uintptr_t(p[2]), C.longlong(a.Len())))
}
