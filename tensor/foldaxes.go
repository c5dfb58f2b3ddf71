package tensor

import (
	"fmt"
	"math"
)

// The reductions of this file (Prod, Norm, Any, All) take axes and
// keepdims as Sum does, in float64: on the host x is viewed with the
// reduced axes last (a contiguous copy when that view is not contiguous),
// and each row of the reduced elements is folded in float64 and rounded
// once to float32. On a device they are ops of the Reduce family
// (ReduceProd, ReduceNorm1, ReduceNorm2, ReduceNormInf, ReduceAny,
// ReduceAll), folded in float64 in the device's order; Norm's other
// orders p by the family's NormP, the same algorithm in float64 (its
// sums in the device's order).

// foldRows returns the elements of x with the axes in mask moved last, in
// their order, as contiguous rows of n elements (one per output element,
// in the row-major order of the kept axes), and n.
func foldRows(op string, x *Tensor, mask [MaxDims]bool) (rows []float32, n int) {
	x.hostOnly(op)
	perm := make([]int, 0, len(x.shape))
	n = 1
	for i := range x.shape {
		if !mask[i] {
			perm = append(perm, i)
		}
	}
	for i, d := range x.shape {
		if mask[i] {
			perm = append(perm, i)
			n *= d
		}
	}
	return x.Permute(perm...).hostData(op), n
}

// foldAxes is the common part of the reductions of this file: it checks
// x and axes, and returns a new tensor of the output shape whose element
// i is f of row i of the reduced elements (foldRows), rounded to float32.
// A reduction over no element panics unless empty is set.
// On a device it runs red of the Reduce family, or onDev when it is
// given.
func foldAxes(op string, x *Tensor, axes []int, keepdims, empty bool, red ReduceOp, onDev func(k ReduceKernels, dst *Tensor, axes []int) error, f func(row []float32) float64) *Tensor {
	checkNil(op, "x", x)
	mask := reduceAxes(op, x, axes)
	keep, out, count := reducedShapes(x, mask, keepdims)
	if count == 0 && !empty {
		panic(fmt.Sprintf("tensor: %s: zero-size reduction over axes %v of shape %v (no identity)", op, axes, x.shape))
	}
	if x.Device() != CPU {
		if onDev != nil {
			return reduceOnDeviceBy(op, x, mask, keep, out, onDev)
		}
		return reduceOnDevice(op, red, x, mask, keep, out, 0)
	}
	dst := alloc(op, out)
	if dst.Len() == 0 {
		return dst
	}
	rows, n := foldRows(op, x, mask)
	parallel(rowsJob(func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dst.data[i] = float32(f(rows[i*n : (i+1)*n]))
		}
	}), dst.Len(), len(rows))
	return dst
}

// Prod returns the product over axes (all when none are given; negative
// ones count from the end), keeping each reduced axis with size 1 when
// keepdims is set, as torch.prod. The product of no element is 1. It is
// accumulated in float64 and rounded once: within half an ulp of the
// exact product plus a relative n·2⁻⁵³ for n factors (an intermediate
// product overflows or underflows only past float64's range, not
// float32's); a NaN factor, or 0 times Inf, gives NaN.
func Prod(x *Tensor, keepdims bool, axes ...int) *Tensor {
	return foldAxes("Prod", x, axes, keepdims, true, ReduceProd, nil, prod64)
}

func prod64(row []float32) float64 {
	p := 1.0
	for _, v := range row {
		p *= float64(v)
	}
	return p
}

// Norm returns the vector p-norm over axes (all when none are given), as
// torch.linalg.vector_norm(x, ord=p, dim=axes, keepdim=keepdims):
// (Σ|x|^p)^(1/p) for finite p ≠ 0, max|x| for p = +Inf, min|x| for p =
// -Inf, and the number of nonzero elements for p = 0 (NaN counting as
// nonzero). NaN elements give NaN for p ≠ 0. It is computed in float64 and rounded once: for p = 2 the squares
// of float32 values neither overflow nor underflow in float64, so Norm of
// [3e30, 4e30] is 5e30 and of [3e-30, 4e-30] 5e-30, within an ulp; other
// finite p scale the elements by max|x| first, so neither overflows
// needlessly (within a few ulps for moderate n). The norm of no element is
// 0 for finite p ≥ 0; for p = ±Inf and p < 0 (no identity) it panics, as
// PyTorch raises, and so does a NaN p. On a device p = 1, 2 and +Inf
// are Reduce ops, the other orders the Reduce family's NormP: the same
// algorithm in float64, its sums in the device's order (within a few ulps
// of the host's).
func Norm(x *Tensor, p float64, keepdims bool, axes ...int) *Tensor {
	const op = "Norm"
	if math.IsNaN(p) {
		panic(fmt.Sprintf("tensor: %s: order p = NaN (x of shape %v)", op, shapeOf(x)))
	}
	var red ReduceOp
	switch {
	case p == 1:
		red = ReduceNorm1
	case p == 2:
		red = ReduceNorm2
	case math.IsInf(p, 1):
		red = ReduceNormInf
	}
	empty := p >= 0 && !math.IsInf(p, 1)
	var normP func(k ReduceKernels, dst *Tensor, axes []int) error
	if red == 0 {
		normP = func(k ReduceKernels, dst *Tensor, axes []int) error { return k.NormP(dst, x, axes, p) }
	}
	return foldAxes(op, x, axes, keepdims, empty, red, normP, func(row []float32) float64 { return vectorNorm(row, p) })
}

// NormP is the CPU's Norm of any order p (ReduceKernels.NormP).
func (cpuKernels) NormP(dst, x *Tensor, axes []int, p float64) error {
	var mask [MaxDims]bool
	for _, a := range axes {
		mask[a] = true
	}
	foldInto("Norm", dst, x, mask, func(row []float32) float64 { return vectorNorm(row, p) })
	return nil
}

// shapeOf returns t's shape for a message, nil for a nil t.
func shapeOf(t *Tensor) []int {
	if t == nil {
		return nil
	}
	return t.shape
}

// vectorNorm is the p-norm of row in float64 (see Norm).
func vectorNorm(row []float32, p float64) float64 {
	hi, lo, nan := 0.0, math.Inf(1), false
	for _, v := range row {
		a := math.Abs(float64(v))
		nan = nan || a != a
		hi, lo = max(hi, a), min(lo, a)
	}
	switch {
	case p == 0:
		n := 0
		for _, v := range row {
			if v != 0 { // NaN too
				n++
			}
		}
		return float64(n)
	case nan:
		return math.NaN()
	case math.IsInf(p, 1):
		return hi
	case math.IsInf(p, -1):
		return lo
	case p == 2:
		s := 0.0
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		return math.Sqrt(s)
	case p == 1:
		s := 0.0
		for _, v := range row {
			s += math.Abs(float64(v))
		}
		return s
	}
	if p < 0 && lo == 0 {
		return 0 // a term of |0|^p = +Inf
	}
	// Scaled by m = max|x| (min|x| for p < 0, whose terms grow as |x|
	// shrinks): every term is at most 1, at least one is 1.
	m := hi
	if p < 0 {
		m = lo
	}
	if m == 0 || math.IsInf(m, 0) {
		return m
	}
	s := 0.0
	for _, v := range row {
		s += math.Pow(math.Abs(float64(v))/m, p)
	}
	return m * math.Pow(s, 1/p)
}

// Any returns 1 where some element over axes is nonzero (NaN counts as
// nonzero) and 0 elsewhere, as torch.any (whose booleans are 0 and 1
// here): Any of no element is 0.
func Any(x *Tensor, keepdims bool, axes ...int) *Tensor {
	return foldAxes("Any", x, axes, keepdims, true, ReduceAny, nil, any64)
}

func any64(row []float32) float64 {
	for _, v := range row {
		if v != 0 {
			return 1
		}
	}
	return 0
}

// All returns 1 where every element over axes is nonzero (NaN counts as
// nonzero) and 0 elsewhere, as torch.all: All of no element is 1.
func All(x *Tensor, keepdims bool, axes ...int) *Tensor {
	return foldAxes("All", x, axes, keepdims, true, ReduceAll, nil, all64)
}

func all64(row []float32) float64 {
	for _, v := range row {
		if v == 0 {
			return 0
		}
	}
	return 1
}

// folds are the Reduce family's ops of this file, each row's fold.
var folds = [numReduceOps]func(row []float32) float64{ReduceProd: prod64, ReduceAny: any64, ReduceAll: all64,
	ReduceNorm1:   func(row []float32) float64 { return vectorNorm(row, 1) },
	ReduceNorm2:   func(row []float32) float64 { return vectorNorm(row, 2) },
	ReduceNormInf: func(row []float32) float64 { return vectorNorm(row, math.Inf(1)) }}

// foldInto sets dst, x's shape with the axes in mask of size 1, to f of
// each row of x's elements over them (the CPU's Reduce of this file's
// ops).
func foldInto(op string, dst, x *Tensor, mask [MaxDims]bool, f func(row []float32) float64) {
	o := target(dst)
	od := o.hostData(op)
	if len(od) > 0 {
		rows, n := foldRows(op, x, mask)
		for i := range od {
			od[i] = float32(f(rows[i*n : (i+1)*n]))
		}
	}
	finish(dst, o)
}
