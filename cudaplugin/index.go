//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_masked_select_at(lanes_stream s, const LanesShape *sh, const LanesStrides *xs, const LanesStrides *ms, uintptr_t y,
		long long ystride, uintptr_t x, uintptr_t mask, uintptr_t scratch) {
	return lanes_masked_select(s, sh, xs, ms, (float *)y, ystride, (const float *)x, (const float *)mask, (long long *)scratch);
}
static int lanes_index_at(lanes_stream s, int mode, const LanesIndex *p, uintptr_t y, uintptr_t x, uintptr_t idx, uintptr_t err) {
	return lanes_index(s, mode, p, (float *)y, (const float *)x, (const float *)idx, (float *)err);
}
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// The Index family (tensor.IndexKernels): IndexSelect, Gather, IndexAdd,
// ScatterAdd, Scatter and OneHot, each one launch of lanes_index
// (index.cu, kernels.h: LanesIndex) over the positions of its index, every
// operand through its strides; IndexAdd and ScatterAdd add with float
// atomics, so repeated indices accumulate in any order; Scatter walks
// each line along the axis in order in one thread, so a repeated target
// takes the later element, as on the CPU. The index values are checked
// by the kernel: one that names no position is skipped and reported in a
// device flag, which the op reads after the kernel (so each op waits for
// the stream) and returns as an error naming the value.

// Modes of lanes_index.
const (
	indexGather = iota
	indexScatterAdd
	indexOneHot
	indexScatter
)

// indexWalk is one lanes_index launch: the walk's shape and axis and
// the operands, each of the walk's rank (x absent for OneHot) but a 1-D
// index along the axis (vector).
type indexWalk struct {
	op        string
	mode      int
	shape     []int
	axis      int
	n         int // the positions the values name
	negative  bool
	vector    bool
	y, x, idx operand
}

// runIndex launches w (an input that overlaps y is copied first) and
// reads back the flag of bad index values.
func (c *call) runIndex(w indexWalk) error {
	g := c.g
	if slices.Contains(w.shape, 0) {
		return nil
	}
	if err := c.aside(w.y, false, &w.x, &w.idx); err != nil {
		return err
	}
	ys, xs, is := w.y.strides, make([]int, len(w.shape)), w.idx.strides
	if w.x.shape != nil {
		xs = w.x.strides
	}
	switch {
	case w.vector:
		is = make([]int, len(w.shape))
		is[w.axis] = w.idx.strides[0]
	case w.mode == indexOneHot:
		is = append(slices.Clone(is), 0)
	}
	var p C.LanesIndex
	rest := slices.Delete(slices.Clone(w.shape), w.axis, w.axis+1)
	drop := func(s []int) []int { return slices.Delete(slices.Clone(s), w.axis, w.axis+1) }
	m := merge(rest, drop(ys), drop(xs), drop(is))
	if len(m.shape) > maxDims {
		return fmt.Errorf("cudaplugin: %s: operands of shape %v have too many dimensions that do not merge", w.op, w.shape)
	}
	p.rest.dims, p.rest.n = C.int(len(m.shape)), C.longlong(m.n)
	for k, d := range m.shape {
		p.rest.shape[k] = C.longlong(d)
		p.ys.s[k], p.xs.s[k], p.is.s[k] = C.longlong(m.strides[0][k]), C.longlong(m.strides[1][k]), C.longlong(m.strides[2][k])
	}
	p.len, p.n, p.negative = C.longlong(w.shape[w.axis]), C.longlong(w.n), cbool(w.negative)
	p.ya, p.xa, p.ia = C.longlong(ys[w.axis]), C.longlong(xs[w.axis]), C.longlong(is[w.axis])
	flag, err := c.badFlag()
	if err != nil {
		return err
	}
	x := w.x.ptr
	if w.x.shape == nil {
		x = w.idx.ptr // OneHot reads no x
	}
	if err := check("lanes_index", C.lanes_index_at(g.stream, C.int(w.mode), &p, C.uintptr_t(w.y.ptr), C.uintptr_t(x), C.uintptr_t(w.idx.ptr), C.uintptr_t(flag))); err != nil {
		return err
	}
	v, bad, err := c.badValue(flag)
	switch {
	case err != nil:
		return err
	case !bad:
		return nil
	case w.mode == indexOneHot:
		return fmt.Errorf("cudaplugin: %s: label %v not in 0..%d", w.op, v, w.n-1)
	}
	return fmt.Errorf("cudaplugin: %s: index %v is not an integer in %d..%d", w.op, v, -w.n, w.n-1)
}

// indexOp runs the walk that set builds from the views of the operands
// (on this GPU).
func (g *GPU) indexOp(op string, set func(c *call) indexWalk) error {
	if !g.opened() {
		return errNilGPU
	}
	c := &call{g: g}
	defer c.release()
	w := set(c)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return c.runIndex(w)
}

// IndexSelect implements tensor.IndexKernels.
func (g *GPU) IndexSelect(dst, t *tensor.Tensor, axis int, index *tensor.Tensor) error {
	return g.indexOp("IndexSelect", func(c *call) indexWalk {
		y, x, i := c.on("IndexSelect", 0, dst), c.on("IndexSelect", 1, t), c.on("IndexSelect", 2, index)
		return indexWalk{op: "IndexSelect", mode: indexGather, shape: y.shape, axis: axis, n: t.Dim(axis), negative: true,
			vector: true, y: y, x: x, idx: i}
	})
}

// Gather implements tensor.IndexKernels.
func (g *GPU) Gather(dst, t *tensor.Tensor, axis int, index *tensor.Tensor) error {
	return g.indexOp("Gather", func(c *call) indexWalk {
		y, x, i := c.on("Gather", 0, dst), c.on("Gather", 1, t), c.on("Gather", 2, index)
		return indexWalk{op: "Gather", mode: indexGather, shape: i.shape, axis: axis, n: t.Dim(axis), negative: true,
			y: y, x: x, idx: i}
	})
}

// IndexAdd implements tensor.IndexKernels.
func (g *GPU) IndexAdd(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return g.indexOp("IndexAdd", func(c *call) indexWalk {
		y, i, x := c.on("IndexAdd", 0, dst), c.on("IndexAdd", 1, index), c.on("IndexAdd", 2, src)
		return indexWalk{op: "IndexAdd", mode: indexScatterAdd, shape: x.shape, axis: axis, n: dst.Dim(axis), negative: true,
			vector: true, y: y, x: x, idx: i}
	})
}

// ScatterAdd implements tensor.IndexKernels.
func (g *GPU) ScatterAdd(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return g.indexOp("ScatterAdd", func(c *call) indexWalk {
		y, i, x := c.on("ScatterAdd", 0, dst), c.on("ScatterAdd", 1, index), c.on("ScatterAdd", 2, src)
		return indexWalk{op: "ScatterAdd", mode: indexScatterAdd, shape: i.shape, axis: axis, n: dst.Dim(axis), negative: true,
			y: y, x: x, idx: i}
	})
}

// Scatter implements tensor.IndexKernels: the later of src's elements
// for a target named twice (one thread per line along axis).
func (g *GPU) Scatter(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return g.indexOp("Scatter", func(c *call) indexWalk {
		y, i, x := c.on("Scatter", 0, dst), c.on("Scatter", 1, index), c.on("Scatter", 2, src)
		return indexWalk{op: "Scatter", mode: indexScatter, shape: i.shape, axis: axis, n: dst.Dim(axis), negative: true,
			y: y, x: x, idx: i}
	})
}

// MaskedSelect implements tensor.IndexKernels: a compaction in three
// launches over chunks of LANES_SELECT_CHUNK (256) elements (index.cu: the chunks' counts,
// their prefix sums in one thread, each chunk's scan in shared memory),
// deterministic, in the CPU's row-major order. An x or mask that
// overlaps dst is copied first.
func (g *GPU) MaskedSelect(dst, x, mask *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	const op = "MaskedSelect"
	c := &call{g: g}
	defer c.release()
	y, xo, mo := c.on(op, 0, dst), c.on(op, 1, x), c.on(op, 2, mask)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if dst.Len() == 0 {
		return nil
	}
	if err := c.aside(y, false, &xo, &mo); err != nil {
		return err
	}
	// One part of rows holds every dimension (x read as y too: dst is 1-D).
	r, ok := rowsOf(xo.shape, axisMask(len(xo.shape)), xo, xo, mo)
	if !ok {
		return fmt.Errorf("cudaplugin: %s: operands of shape %v have too many dimensions that do not merge", op, xo.shape)
	}
	chunks := (int(r.outer.n) + C.LANES_SELECT_CHUNK - 1) / C.LANES_SELECT_CHUNK
	scratch, err := c.scratch(2 * chunks) // long longs
	if err != nil {
		return err
	}
	return check("lanes_masked_select", C.lanes_masked_select_at(g.stream, &r.outer, &r.xo, &r.zo, C.uintptr_t(y.ptr), C.longlong(y.strides[0]),
		C.uintptr_t(xo.ptr), C.uintptr_t(mo.ptr), C.uintptr_t(scratch)))
}

// OneHot implements tensor.IndexKernels: a 1 at each label of dst (new,
// zero-filled).
func (g *GPU) OneHot(dst, labels *tensor.Tensor) error {
	return g.indexOp("OneHot", func(c *call) indexWalk {
		y, i := c.on("OneHot", 0, dst), c.on("OneHot", 1, labels)
		d := len(y.shape) - 1
		return indexWalk{op: "OneHot", mode: indexOneHot, shape: append(slices.Clone(i.shape), 1), axis: d, n: y.shape[d],
			y: y, idx: i}
	})
}
