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

// MaxPool2D sets dst (and indices, unless nil) to tensor.MaxPool2D(x, p).
func (g *GPU) MaxPool2D(dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	return g.pool("MaxPool2D", 0, dst, indices, x, p)
}

// AvgPool2D sets dst to tensor.AvgPool2D(x, p).
func (g *GPU) AvgPool2D(dst, x *tensor.Tensor, p tensor.PoolParams) error {
	return g.pool("AvgPool2D", 1, dst, nil, x, p)
}

func (g *GPU) pool(op string, kind int, dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	if !g.opened() {
		return errNilGPU
	}
	out := tensor.Pool2DShape(x, p) // checks x and p, panicking as tensor does
	if !slices.Equal(dst.Shape(), out[:]) || (indices != nil && !slices.Equal(indices.Shape(), out[:])) {
		panic(fmt.Sprintf("cudaplugin: %s: shape %v gives output %v, got dst %v", op, x.Shape(), out, dst.Shape()))
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
	ptrs := g.deviceOperands(op, dst, indices, x)
	lp := C.LanesPool{planes: C.longlong(xs[0] * xs[1]), h: C.int(xs[2]), w: C.int(xs[3]), oh: C.int(out[2]), ow: C.int(out[3]),
		kh: C.int(p.Kernel[0]), kw: C.int(p.Kernel[1]), sh: C.int(sh), sw: C.int(sw), ph: C.int(p.Padding[0]), pw: C.int(p.Padding[1]),
		exclude_pad: cbool(p.ExcludePad)}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_pool2d", C.lanes_pool_at(g.stream, C.int(kind), &lp, C.uintptr_t(ptrs[0]), C.uintptr_t(ptrs[1]), C.uintptr_t(ptrs[2])))
}
