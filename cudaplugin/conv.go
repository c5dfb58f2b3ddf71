//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_conv_at(lanes_stream s, int cfg, LanesConv *c, uintptr_t x, uintptr_t w, uintptr_t bias, uintptr_t y, int gx, int gy, int gz) {
	c->x = (const float *)x;
	c->w = (const float *)w;
	c->bias = (const float *)bias;
	c->y = (float *)y;
	return lanes_conv2d(s, cfg, c, gx, gy, gz);
}
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// Conv2D implements tensor.ConvKernels: dst = tensor.Conv2D(x, w, bias,
// p), as MatMul for where it runs.
func (g *GPU) Conv2D(dst, x, w, bias *tensor.Tensor, p tensor.ConvParams) error {
	if !g.opened() {
		return errNilGPU
	}
	cs := planConv("Conv2D", x.Shape(), w.Shape(), p.Stride, p.Padding, p.Dilation, p.Groups)
	if want := []int{cs.n, cs.cout, cs.oh, cs.ow}; !slices.Equal(dst.Shape(), want) {
		panic(fmt.Sprintf("cudaplugin: Conv2D: shapes %v and %v give output %v, got %v", x.Shape(), w.Shape(), want, dst.Shape()))
	}
	if bias != nil && (bias.Dims() != 1 || bias.Dim(0) != cs.cout) {
		panic(fmt.Sprintf("cudaplugin: Conv2D: bias shape %v for %d output channels", bias.Shape(), cs.cout))
	}
	if !cs.fitsInt32() {
		return fmt.Errorf("cudaplugin: Conv2D: shapes %v and %v too large for the kernel's 32-bit counts", x.Shape(), w.Shape())
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if !anyDevice(dst, x, w, bias) {
		in := [][]float32{x.Data(), w.Data()}
		if bias != nil {
			in = append(in, bias.Data())
		}
		return g.offload(dst, in, func(st C.lanes_stream, ptrs []uintptr, out uintptr, scratch scratchFunc) error {
			var bp uintptr
			if bias != nil {
				bp = ptrs[2]
			}
			return g.conv(st, cs, p.ReLU, ptrs[0], ptrs[1], bp, out, scratch)
		})
	}
	c := &call{g: g}
	defer c.release()
	var ops []operand // x, w and bias unless nil
	for _, t := range []*tensor.Tensor{x, w, bias} {
		if t == nil {
			continue
		}
		o, err := c.input("Conv2D", t)
		if err == nil {
			o, err = c.contiguous(o)
		}
		if err != nil {
			return err
		}
		ops = append(ops, o)
	}
	out, err := c.output("Conv2D", dst, false, ops...)
	if err != nil {
		return err
	}
	var bp uintptr
	if bias != nil {
		bp = ops[2].ptr
	}
	if err := g.conv(g.stream, cs, p.ReLU, ops[0].ptr, ops[1].ptr, bp, out.ptr, c.scratch); err != nil {
		return err
	}
	return c.finish(out)
}

// Conv2DBackwardInput implements tensor.ConvKernels. The plugin has no
// kernel for it yet: it returns an error naming it, which package tensor
// turns into the op's panic on device tensors (host work never comes
// here: tensor does not offload the gradients).
func (g *GPU) Conv2DBackwardInput(dx, dy, w *tensor.Tensor, p tensor.ConvParams) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel("Conv2DBackwardInput")
}

// Conv2DBackwardWeight implements tensor.ConvKernels; as
// Conv2DBackwardInput, it has no kernel yet.
func (g *GPU) Conv2DBackwardWeight(dw, dy, x *tensor.Tensor, p tensor.ConvParams) error {
	if !g.opened() {
		return errNilGPU
	}
	return noKernel("Conv2DBackwardWeight")
}

// conv queues one implicit-GEMM convolution (bias may be 0: none).
func (g *GPU) conv(stream C.lanes_stream, cs convShape, relu bool, x, w, bias, y uintptr, scratch scratchFunc) error {
	m, n, k := cs.gemm()
	if m == 0 || n == 0 {
		return nil
	}
	plan, err := planTiles(m, n, k, cs.gr, g.info.Processors)
	if err != nil {
		return err
	}
	var splits C.int
	var partial *C.float
	if err := splitK(&splits, &partial, plan.splits, cs.cout*n, scratch); err != nil {
		return err
	}
	cv := C.LanesConv{n: C.int(cs.n), c: C.int(cs.c), h: C.int(cs.h), w_: C.int(cs.w), cout: C.int(cs.cout),
		kh: C.int(cs.kh), kw: C.int(cs.kw), sh: C.int(cs.sh), sw: C.int(cs.sw), ph: C.int(cs.ph), pw: C.int(cs.pw),
		dh: C.int(cs.dh), dw: C.int(cs.dw), groups: C.int(cs.gr), oh: C.int(cs.oh), ow: C.int(cs.ow),
		vec_w: cbool(w%16 == 0 && k%4 == 0), relu: cbool(relu), splits: splits, partial: partial}
	return check("lanes_conv2d", C.lanes_conv_at(stream, C.int(plan.cfg.id), &cv, C.uintptr_t(x), C.uintptr_t(w), C.uintptr_t(bias), C.uintptr_t(y),
		C.int(plan.gx), C.int(plan.gy), C.int(plan.gz)))
}
