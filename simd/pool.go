package simd

import "fmt"

// poolKernels is the pooling family.
type poolKernels struct {
	maxPool2x2   func(dst, idx, x []float32, w, oh, ow int)
	maxUnpool2x2 func(dx, dy, idx []float32, w, oh, ow int) bool
}

var pool table[poolKernels]

// MaxPool2x2 pools an h×w plane x (row-major) in 2×2 windows at stride 2,
// the common CNN pooling: for i < h/2 and j < w/2, dst[i·(w/2)+j] is the
// maximum of x[2i·w+2j], x[2i·w+2j+1], x[(2i+1)·w+2j] and
// x[(2i+1)·w+2j+1], and idx[i·(w/2)+j] is that element's index in x, as a
// float32 (exact, since the kernel refuses planes of 2²⁴ elements or more).
// Among equal values (-0 equals +0) the first in that order wins, and a
// window holding a NaN has the first of its NaNs as its maximum. An odd
// last row or column is not pooled (PyTorch's floor mode).
//
// It is exact: values are copied, never computed. dst or idx may be nil
// to skip it; they must not overlap x. It panics, naming the lengths, when
// len(x) != h·w (h·w computed without overflow: sizes whose product wraps
// round int are refused) or dst or idx does not have (h/2)·(w/2) elements.
// On AVX-512 it handles 16 windows a step with masked compares (no
// branches); the other levels run a branch-free Go loop.
func MaxPool2x2(dst, idx, x []float32, h, w int) {
	checkPlane("MaxPool2x2", "x", len(x), h, w)
	oh, ow := h/2, w/2
	switch {
	case dst != nil && len(dst) != oh*ow:
		panic(fmt.Sprintf("simd: MaxPool2x2: len(dst) = %d, want (h/2)·(w/2) = %d for a %d×%d plane", len(dst), oh*ow, h, w))
	case idx != nil && len(idx) != oh*ow:
		panic(fmt.Sprintf("simd: MaxPool2x2: len(idx) = %d, want (h/2)·(w/2) = %d for a %d×%d plane", len(idx), oh*ow, h, w))
	}
	if oh*ow == 0 || dst == nil && idx == nil {
		return
	}
	pool.get().maxPool2x2(dst, idx, x, w, oh, ow)
}

// MaxUnpool2x2 is the gradient of MaxPool2x2: it sets dx, an h×w plane, to
// dy[o] at the element idx[o] names in window o (as MaxPool2x2 numbers
// windows and elements) and to zero at the window's other elements and
// in an odd last row or column. It reports false when some idx[o] names
// no element of window o (MaxPool2x2's indices always do); dx is then
// partly written and the caller must scatter dy itself.
//
// It is exact. dx must not overlap dy or idx. It panics, naming the
// lengths, when len(dx) != h·w or dy or idx does not have (h/2)·(w/2)
// elements.
func MaxUnpool2x2(dx, dy, idx []float32, h, w int) bool {
	checkPlane("MaxUnpool2x2", "dx", len(dx), h, w)
	oh, ow := h/2, w/2
	if len(dy) != oh*ow || len(idx) != oh*ow {
		panic(fmt.Sprintf("simd: MaxUnpool2x2: len(dy) = %d, len(idx) = %d, want (h/2)·(w/2) = %d for a %d×%d plane", len(dy), len(idx), oh*ow, h, w))
	}
	if w%2 != 0 {
		for r := 0; r < 2*oh; r++ {
			dx[r*w+w-1] = 0
		}
	}
	clear(dx[2*oh*w:])
	if oh*ow == 0 {
		return true
	}
	return pool.get().maxUnpool2x2(dx, dy, idx, w, oh, ow)
}

// checkPlane panics unless the plane (name, of n elements) is h×w and small
// enough for its indices to be exact in float32. h·w is computed without
// overflow, so sizes whose product wraps round to n are refused too.
func checkPlane(op, name string, n, h, w int) {
	hw, ok := mulInt(h, w)
	switch {
	case !ok:
		panic(fmt.Sprintf("simd: %s: len(%s) = %d, want h·w = %d·%d, which is negative or overflows int", op, name, n, h, w))
	case hw != n:
		panic(fmt.Sprintf("simd: %s: len(%s) = %d, want h·w = %d·%d", op, name, n, h, w))
	case hw >= 1<<24:
		panic(fmt.Sprintf("simd: %s: a plane of %d·%d elements: indices from 2²⁴ on are not exact in float32", op, h, w))
	}
}
