package simd

import (
	"math"
	"strconv"
)

// reduceKernels is the reduction family. Kernels receive non-empty slices where
// the API requires it (max, min, indexEq, indexNaN) and any length otherwise.
type reduceKernels struct {
	sum, sumAbs func(x []float32) float32
	dot         func(a, b []float32) float32
	// max and min return NaN if any element is NaN.
	max, min func(x []float32) float32
	// sumSquares64 returns Σ x[i]² accumulated in float64.
	sumSquares64 func(x []float32) float64
	// indexEq returns the first i with x[i] == v, or -1; indexNaN the first NaN, or -1.
	indexEq  func(x []float32, v float32) int
	indexNaN func(x []float32) int
}

var reduce table[reduceKernels]

// Sum returns Σ x[i] (0 for an empty slice), accumulated in several float32
// lanes: within len(x)·2⁻²⁴·Σ|x[i]| of the exact sum.
func Sum(x []float32) float32 { return reduce.get().sum(x) }

// SumAbs returns Σ |x[i]|, with Sum's error bound.
func SumAbs(x []float32) float32 { return reduce.get().sumAbs(x) }

// Dot returns Σ a[i]·b[i], within len(a)·2⁻²⁴·Σ|a[i]·b[i]| of the exact value.
// It panics if the lengths differ.
func Dot(a, b []float32) float32 {
	checkSameLen("Dot", a, b)
	return reduce.get().dot(a, b)
}

// Max returns the largest element, or NaN if any element is NaN. It panics on
// an empty slice. Between +0 and -0 either may be returned.
func Max(x []float32) float32 {
	if len(x) == 0 {
		panic("simd.Max: empty slice")
	}
	return reduce.get().max(x)
}

// Min returns the smallest element, or NaN if any element is NaN. It panics on
// an empty slice. Between +0 and -0 either may be returned.
func Min(x []float32) float32 {
	if len(x) == 0 {
		panic("simd.Min: empty slice")
	}
	return reduce.get().min(x)
}

// ArgMax returns the index of the first largest element, the index of the first
// NaN if there is one, or -1 for an empty slice. +0 and -0 count as equal.
func ArgMax(x []float32) int {
	if len(x) == 0 {
		return -1
	}
	k := reduce.get()
	return argFind(k, x, k.max(x))
}

// ArgMin returns the index of the first smallest element, the index of the first
// NaN if there is one, or -1 for an empty slice. +0 and -0 count as equal.
func ArgMin(x []float32) int {
	if len(x) == 0 {
		return -1
	}
	k := reduce.get()
	return argFind(k, x, k.min(x))
}

// argFind locates the first element equal to the extreme m, or the first NaN
// when m is NaN. Two passes (extreme, then an early-exit scan) beat tracking
// indices in every lane.
func argFind(k *reduceKernels, x []float32, m float32) int {
	if m != m {
		return k.indexNaN(x)
	}
	return k.indexEq(x, m)
}

// Norm returns the Euclidean norm sqrt(Σ x[i]²). It accumulates in float64, so
// it neither overflows nor underflows for any finite input and is within 1 ULP
// of the correctly rounded result; +Inf if any element is ±Inf, NaN if any is
// NaN (and none is ±Inf).
func Norm(x []float32) float32 {
	return float32(math.Sqrt(reduce.get().sumSquares64(x)))
}

func ftoa(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }
