package tensor

import (
	"fmt"
	"slices"
)

// The scans and the sorts work along one axis on the CPU. The scans walk
// x in its row-major order (a contiguous copy when x is not contiguous),
// carrying a float64 accumulator per position across the axis; the sorts
// view x with the axis last (again a contiguous copy when that view is
// not contiguous), sort each row on its own, and write the result back in
// x's shape. A device tensor makes them panic naming the op and the
// device.

// rowsJob runs a function over a range of rows: the ops of this file,
// sort.go and foldaxes.go split their independent rows over the workers
// with it (parallel: from par.SplitFrom elements of work).
type rowsJob func(lo, hi int)

func (f rowsJob) RunRange(lo, hi int) { f(lo, hi) }

// alongRows returns x's elements with axis moved last, as contiguous rows
// of x.shape[axis] elements. The slice may be x's storage: it must not be
// written.
func alongRows(op string, x *Tensor, axis int) []float32 {
	x.hostOnly(op)
	return moveAxisLast(x, axis).hostData(op)
}

// fromRows returns a new tensor of shape holding rows, laid out as
// alongRows gives them (axis last); rows is used as the storage when axis
// is the last one.
func fromRows(op string, rows []float32, shape []int, axis int) *Tensor {
	if axis == len(shape)-1 {
		return FromSlice(rows, shape...)
	}
	dst := alloc(op, shape)
	perm := make([]int, 0, len(shape))
	for i, d := range shape {
		if i != axis {
			perm = append(perm, d)
		}
	}
	cpuKernels{}.CopyInto(moveAxisLast(dst, axis), FromSlice(rows, append(perm, shape[axis])...))
	return dst
}

// intoFrom copies src into dst (of src's shape) for an ...Into form, and
// returns dst.
func intoFrom(op string, dst, src *Tensor) *Tensor {
	checkNil(op, "dst", dst)
	if !slices.Equal(dst.shape, src.shape) {
		panic(fmt.Sprintf("tensor: %s: dst shape %v, want %v", op, dst.shape, src.shape))
	}
	return copyInto(op, dst, src)
}

// CumSum returns the cumulative sums of x along axis (negative counts
// from the end), as torch.cumsum: y[..., i, ...] = Σ_{j ≤ i} x[..., j, ...].
// Each prefix is accumulated in float64 and rounded once, so every output
// is within half an ulp of the exact prefix sum plus i·2⁻⁵³·Σ_{j≤i}|x_j|
// however long the axis (a float32 running sum would drift by up to
// i·2⁻²⁴ of it). NaN and Inf propagate as in IEEE arithmetic. A 0-d x is
// a line of one element along axis 0 or -1, as PyTorch.
func CumSum(x *Tensor, axis int) *Tensor { return scan("CumSum", x, axis, false) }

// CumSumInto sets dst, of x's shape, to CumSum(x, axis) and returns dst.
func CumSumInto(dst, x *Tensor, axis int) *Tensor {
	return intoFrom("CumSumInto", dst, scan("CumSumInto", x, axis, false))
}

// CumProd returns the cumulative products of x along axis, as
// torch.cumprod: y[..., i, ...] = Π_{j ≤ i} x[..., j, ...], accumulated
// in float64 and rounded once (within half an ulp of the exact prefix
// product plus a relative i·2⁻⁵³).
func CumProd(x *Tensor, axis int) *Tensor { return scan("CumProd", x, axis, true) }

// CumProdInto sets dst, of x's shape, to CumProd(x, axis) and returns dst.
func CumProdInto(dst, x *Tensor, axis int) *Tensor {
	return intoFrom("CumProdInto", dst, scan("CumProdInto", x, axis, true))
}

// scanBlock is the number of columns a scan along an inner axis carries
// at once (one float64 accumulator each).
const scanBlock = 256

// scan is CumSum (prod: CumProd) of x along axis, in x's row-major
// order: x as [outer, n, inner] (n along axis), each column of inner
// elements accumulated down the n rows, in blocks of scanBlock columns
// split over the workers (rows of n elements when inner is 1).
func scan(op string, x *Tensor, axis int, prod bool) *Tensor {
	if x1, ok := asLine(op, x, axis); ok {
		return scan(op, x1, 0, prod).Reshape()
	}
	axis = x.axis(op, axis)
	x.hostOnly(op)
	if x.Len() == 0 {
		return alloc(op, x.shape)
	}
	src := x.hostData(op)
	n, inner := x.shape[axis], 1
	for _, d := range x.shape[axis+1:] {
		inner *= d
	}
	outer := len(src) / (n * inner)
	start := 0.0
	if prod {
		start = 1
	}
	out := make([]float32, len(src))
	if inner == 1 {
		parallel(rowsJob(func(lo, hi int) {
			for r := lo * n; r < hi*n; r += n {
				acc := start
				for i, v := range src[r : r+n] {
					if prod {
						acc *= float64(v)
					} else {
						acc += float64(v)
					}
					out[r+i] = float32(acc)
				}
			}
		}), outer, len(src))
		return FromSlice(out, x.shape...)
	}
	blocks := (inner + scanBlock - 1) / scanBlock
	parallel(rowsJob(func(lo, hi int) {
		var acc [scanBlock]float64
		for j := lo; j < hi; j++ {
			o, c0 := j/blocks, j%blocks*scanBlock
			a := acc[:min(scanBlock, inner-c0)]
			for c := range a {
				a[c] = start
			}
			for i := range n {
				base := (o*n+i)*inner + c0
				xs, ys := src[base:base+len(a)], out[base:base+len(a)]
				for c, v := range xs {
					if prod {
						a[c] *= float64(v)
					} else {
						a[c] += float64(v)
					}
					ys[c] = float32(a[c])
				}
			}
		}
	}), outer*blocks, len(src))
	return FromSlice(out, x.shape...)
}
