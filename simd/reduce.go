package simd

import (
	"math"
	"strconv"
	"unsafe"
)

// reduceKernels is the reduction family for elements of type T. Kernels
// receive non-empty slices where the API requires it (max, min, indexEq,
// indexNaN) and any length otherwise.
type reduceKernels[T float] struct {
	sum, sumAbs func(x []T) T
	dot         func(a, b []T) T
	// max and min return NaN if any element is NaN.
	max, min func(x []T) T
	// sumSquares returns Σ x[i]² accumulated in float64 (float32 elements
	// widened exactly, so no square overflows or underflows).
	sumSquares func(x []T) float64
	// indexEq returns the first i with x[i] == v, or -1; indexNaN the first NaN, or -1.
	indexEq  func(x []T, v T) int
	indexNaN func(x []T) int
}

var (
	reduce    table[reduceKernels[float32]]
	reduceF64 table[reduceKernels[float64]]
)

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
func ArgMax(x []float32) int { return argMax(reduce.get(), x) }

// ArgMin returns the index of the first smallest element, the index of the first
// NaN if there is one, or -1 for an empty slice. +0 and -0 count as equal.
func ArgMin(x []float32) int { return argMin(reduce.get(), x) }

func argMax[T float](k *reduceKernels[T], x []T) int {
	if len(x) == 0 {
		return -1
	}
	return argFind(k, x, k.max(x))
}

func argMin[T float](k *reduceKernels[T], x []T) int {
	if len(x) == 0 {
		return -1
	}
	return argFind(k, x, k.min(x))
}

// argFind locates the first element equal to the extreme m, or the first NaN
// when m is NaN. Two passes (extreme, then an early-exit scan) beat tracking
// indices in every lane.
func argFind[T float](k *reduceKernels[T], x []T, m T) int {
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
	return float32(math.Sqrt(reduce.get().sumSquares(x)))
}

// The float64 forms. Sums accumulate in several float64 lanes (at AVX-512
// eight vectors of eight, one sequential chain per lane, the chains added
// pairwise at the end); the order differs from a sequential loop, and the
// error is within len(x)·2⁻⁵³·Σ|terms| of the exact result.

// SumF64 returns Σ x[i] (0 for an empty slice), within len(x)·2⁻⁵³·Σ|x[i]|
// of the exact sum.
func SumF64(x []float64) float64 { return reduceF64.get().sum(x) }

// SumAbsF64 returns Σ |x[i]| (BLAS dasum with a unit stride), with SumF64's
// error bound.
func SumAbsF64(x []float64) float64 { return reduceF64.get().sumAbs(x) }

// DotF64 returns Σ a[i]·b[i] (BLAS ddot with unit strides), within
// len(a)·2⁻⁵³·Σ|a[i]·b[i]| of the exact value (the SIMD levels fuse each
// product into its sum). It panics if the lengths differ.
func DotF64(a, b []float64) float64 {
	checkSameLen("DotF64", a, b)
	return reduceF64.get().dot(a, b)
}

// MaxF64 returns the largest element, or NaN if any element is NaN. It panics
// on an empty slice. Between +0 and -0 either may be returned.
func MaxF64(x []float64) float64 {
	if len(x) == 0 {
		panic("simd.MaxF64: empty slice")
	}
	return reduceF64.get().max(x)
}

// MinF64 returns the smallest element, or NaN if any element is NaN. It panics
// on an empty slice. Between +0 and -0 either may be returned.
func MinF64(x []float64) float64 {
	if len(x) == 0 {
		panic("simd.MinF64: empty slice")
	}
	return reduceF64.get().min(x)
}

// ArgMaxF64 returns the index of the first largest element, the index of the
// first NaN if there is one, or -1 for an empty slice. +0 and -0 count as equal.
func ArgMaxF64(x []float64) int { return argMax(reduceF64.get(), x) }

// ArgMinF64 returns the index of the first smallest element, the index of the
// first NaN if there is one, or -1 for an empty slice. +0 and -0 count as equal.
func ArgMinF64(x []float64) int { return argMin(reduceF64.get(), x) }

// NormF64 returns the Euclidean norm sqrt(Σ x[i]²) (BLAS dnrm2 with a unit
// stride): +Inf if any element is ±Inf, else NaN if any is NaN. It sums the
// squares as DotF64 sums its products (fused, in several lanes) and is
// within (len(x)/2+1)·2⁻⁵³ relative error of the exact norm; where that sum
// overflows or may have lost bits to underflow (below 2⁻⁹⁷⁰), it sums again
// with every element scaled by a power of two, so that no finite input
// overflows or underflows.
func NormF64(x []float64) float64 {
	ss := reduceF64.get().sumSquares(x)
	switch {
	case ss >= 0x1p-970 && ss <= math.MaxFloat64, len(x) == 0:
		return math.Sqrt(ss)
	case ss != ss: // only a NaN element makes the sum of squares NaN
		if hasInf(x) {
			return math.Inf(1)
		}
		return ss
	}
	return normScaled(x)
}

// hasInf reports whether an element of x is ±Inf.
func hasInf(x []float64) bool {
	k := reduceF64.get()
	return k.indexEq(x, math.Inf(1)) >= 0 || k.indexEq(x, math.Inf(-1)) >= 0
}

// normScaled is NormF64 for sums of squares out of float64's range (x is not
// empty and has no NaN; an all-zero x gives 0): the largest |x[i]| picks a
// power of two 2^e that scales it into [0.5, 1), the squares of x[i]·2^-e
// are summed (exactly scaled, tiny ones lost only where they are below
// 2⁻¹⁰⁷⁴ of the largest), and the root is scaled back.
func normScaled(x []float64) float64 {
	k := reduceF64.get()
	big := max(math.Abs(k.max(x)), math.Abs(k.min(x)))
	if math.IsInf(big, 0) {
		return big
	}
	_, e := math.Frexp(big)
	// 2^-e in two factors: for a denormal big, 2^-e alone overflows.
	s1, s2 := math.Ldexp(1, -e/2), math.Ldexp(1, -e+e/2)
	var a0, a1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		u, v := x[i]*s1*s2, x[i+1]*s1*s2
		a0 += u * u
		a1 += v * v
	}
	if i < len(x) {
		u := x[i] * s1 * s2
		a0 += u * u
	}
	return math.Ldexp(math.Sqrt(a0+a1), e)
}

func ftoa[T float](f T) string {
	return strconv.FormatFloat(float64(f), 'g', -1, 8*int(unsafe.Sizeof(f)))
}
