//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_philox_at(lanes_stream s, const LanesShape *shape, long long first, uintptr_t y, const LanesStrides *ys, uintptr_t x, const LanesStrides *xs, unsigned thr, float scale, unsigned long long seed, unsigned long long offset) {
	return lanes_philox(s, shape, first, (float *)y, ys, (const float *)x, xs, thr, scale, seed, offset);
}
*/
import "C"

import (
	"math"

	"github.com/lanesgo/lanes/tensor"
)

// The Random family (tensor.RandomKernels): Philox4x32-10 on the device
// (random.cu), the very numbers of the CPU's kernels (tensor/random.go)
// for the same seed and offset, bit for bit, whatever the layouts.

// Uniform implements tensor.RandomKernels: each element of dst (any
// view) is the uniform of its row-major position in seed's stream from
// counter block offset.
func (g *GPU) Uniform(dst *tensor.Tensor, seed, offset uint64) error {
	if !g.opened() {
		return errNilGPU
	}
	return g.philox("Uniform", dst, nil, 0, seed, offset)
}

// Dropout implements tensor.RandomKernels: dst = x·mask, the mask 0 where
// the element's uniform is below p and 1/(1-p) elsewhere; any views, dst
// possibly x.
func (g *GPU) Dropout(dst, x *tensor.Tensor, p float32, seed, offset uint64) error {
	if !g.opened() {
		return errNilGPU
	}
	return g.philox("Dropout", dst, x, p, seed, offset)
}

// philox runs lanes_philox over dst (and x) through mapOp. An element is
// dropped when the top 24 bits of its word are below ⌈p·2²⁴⌉, as on the
// CPU; each launch (several only for more than LANES_MAX_DIMS dimensions
// that do not merge, which each makes in row-major order) starts at the
// row-major index of its first element.
func (g *GPU) philox(op string, dst, x *tensor.Tensor, p float32, seed, offset uint64) error {
	if err := g.refuseCapture(op, "its Philox offset advances on the host each step, and a replay would draw the same numbers again"); err != nil {
		return err
	}
	var in []*tensor.Tensor
	if x != nil {
		in = []*tensor.Tensor{x}
	}
	thr := C.uint(math.Ceil(float64(p) * (1 << 24)))
	scale := 1 / (1 - p)
	first := 0
	return g.mapOp(op, dst, in, func(ls *C.LanesShape, ptr []uintptr, s []C.LanesStrides) error {
		var xp C.uintptr_t
		xs := (*C.LanesStrides)(nil)
		if len(ptr) > 1 {
			xp, xs = C.uintptr_t(ptr[1]), &s[1]
		}
		err := check("lanes_philox", C.lanes_philox_at(g.stream, ls, C.longlong(first), C.uintptr_t(ptr[0]), &s[0], xp, xs, thr, C.float(scale),
			C.ulonglong(seed), C.ulonglong(offset)))
		first += int(ls.n)
		return err
	})
}
