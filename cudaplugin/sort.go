//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_sort_at(lanes_stream s, const LanesReduce *r, uintptr_t vals, uintptr_t idx, uintptr_t x, uintptr_t scratch, long long blocks, long long k, int desc, int median) {
	return lanes_sort(s, r, (float *)vals, (float *)idx, (const float *)x, (unsigned long long *)scratch, blocks, k, desc, median);
}
static int lanes_scan_at(lanes_stream s, const LanesReduce *r, uintptr_t y, uintptr_t x, int prod) {
	return lanes_scan(s, r, (float *)y, (const float *)x, prod);
}
static int lanes_cumprod_backward_at(lanes_stream s, const LanesReduce *r, uintptr_t dx, uintptr_t x, uintptr_t dy, uintptr_t scratch) {
	return lanes_cumprod_backward(s, r, (float *)dx, (const float *)x, (const float *)dy, (double *)scratch);
}
*/
import "C"

import (
	"github.com/lanesgo/lanes/tensor"
)

// The Sort family (tensor.SortKernels): sort.cu's kernels over the rows
// of a LanesReduce (rows: every axis but the sorted or scanned one),
// reading and writing their operands through their strides (an x that
// overlaps a result is copied first). The sorts run one block per row, a
// bitonic sort of 64-bit keys (order key, position) in shared memory for
// rows of up to sortSharedKeys, else in a scratch buffer of
// sortScratchKeys keys at most (fewer rows at once when the rows are
// long: the grid's blocks stride over them); the scans one thread per
// line. Results equal the CPU's bit for bit.

// sortSharedKeys is the most keys a row sorts in shared memory (sort.cu's
// SORT_SHARED); longer rows take a scratch buffer.
const sortSharedKeys = C.LANES_SORT_SHARED

// sortScratchKeys bounds the keys of a sort's scratch (8 bytes each):
// 2²⁵ keys, 256 MiB, or one row's when it is longer.
const sortScratchKeys = 1 << 25

// sortBlocks is the grid of a sort of rows rows of p keys each (p a power
// of 2): at most 4096 blocks, and sortScratchKeys keys in all.
func sortBlocks(rows, p int) int {
	return max(1, min(rows, 4096, sortScratchKeys/p))
}

// Sort implements tensor.SortKernels: the first k elements of each row of
// x along axis in the stable order, and their positions, any views.
func (g *GPU) Sort(values, indices, x *tensor.Tensor, axis, k int, descending bool) error {
	return g.sortRows("Sort", values, indices, x, axis, k, descending, false)
}

// Median implements tensor.SortKernels: each row's lower median (its
// first NaN when it holds one) and its position.
func (g *GPU) Median(values, indices, x *tensor.Tensor, axis int) error {
	return g.sortRows("Median", values, indices, x, axis, 1, false, true)
}

// sortRows runs lanes_sort.
func (g *GPU) sortRows(op string, values, indices, x *tensor.Tensor, axis, k int, descending, median bool) error {
	if !g.opened() {
		return errNilGPU
	}
	c := &call{g: g}
	defer c.release()
	xo, io := c.on(op, 2, x), c.on(op, 1, indices)
	vo := io
	if values != nil {
		vo = c.on(op, 0, values)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	n := x.Dim(axis)
	if x.Len() == 0 || k == 0 {
		return nil
	}
	if err := c.aside(io, false, &xo); err != nil {
		return err
	}
	if values != nil {
		if err := c.aside(vo, false, &xo); err != nil {
			return err
		}
	}
	r, in, err := c.rows(op, axisMask(x.Dims(), axis), vo, xo, io)
	if err != nil {
		return err
	}
	p := int(C.lanes_sort_pad(C.longlong(n))) // lanes_sort's padded row length
	blocks := sortBlocks(x.Len()/n, p)
	var scratch uintptr
	if p > sortSharedKeys {
		if scratch, err = c.scratch(2 * blocks * p); err != nil {
			return err
		}
	}
	var vp C.uintptr_t
	if values != nil {
		vp = C.uintptr_t(vo.ptr)
	}
	return check("lanes_sort", C.lanes_sort_at(g.stream, &r, vp, C.uintptr_t(io.ptr), C.uintptr_t(in.ptr), C.uintptr_t(scratch),
		C.longlong(blocks), C.longlong(k), cbool(descending), cbool(median)))
}

// Scan implements tensor.SortKernels: CumSum or CumProd along axis, any
// views (dst may be x).
func (g *GPU) Scan(dst, x *tensor.Tensor, axis int, prod bool) error {
	return g.alongRows("Scan", dst, x, axisMask(x.Dims(), axis), func(r *C.LanesReduce, d, in C.uintptr_t) error {
		return check("lanes_scan", C.lanes_scan_at(g.stream, r, d, in, cbool(prod)))
	})
}

// CumProdBackward implements tensor.SortKernels: the gradient of CumProd
// along axis, any views, the prefix products in a temporary of 2·len(x)
// floats.
func (g *GPU) CumProdBackward(dx, x, dy *tensor.Tensor, axis int) error {
	return g.alongRowsWith("CumProdBackward", dx, x, dy, axisMask(x.Dims(), axis), func(c *call, r *C.LanesReduce, d, xp, gyp C.uintptr_t) error {
		scratch, err := c.scratch(2 * x.Len())
		if err != nil {
			return err
		}
		return check("lanes_cumprod_backward", C.lanes_cumprod_backward_at(g.stream, r, d, xp, gyp, C.uintptr_t(scratch)))
	})
}
