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

	"github.com/lanesgo/lanes/tensor"
)

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
	p := g.deviceOperands("BiasAct", dst, x, bias)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_bias_act", C.lanes_bias_act_at(g.stream, C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.uintptr_t(p[2]),
		C.longlong(x.Len()), C.int(shape[axis]), C.longlong(max(inner, 1)), C.int(act)))
}

// Add sets dst = a + b elementwise (same shapes; dst may be a or b).
func (g *GPU) Add(dst, a, b *tensor.Tensor) error { return g.binary("Add", 0, dst, a, b) }

// Mul sets dst = a · b elementwise (same shapes; dst may be a or b).
func (g *GPU) Mul(dst, a, b *tensor.Tensor) error { return g.binary("Mul", 1, dst, a, b) }

func (g *GPU) binary(op string, code int, dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape(op, a, b)
	sameShape(op, dst, a)
	p := g.deviceOperands(op, dst, a, b)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_binary", C.lanes_binary_at(g.stream, C.int(code), C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.uintptr_t(p[2]), C.longlong(a.Len())))
}
