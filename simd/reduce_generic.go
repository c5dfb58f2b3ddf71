package simd

import "github.com/lanesgo/lanes/dispatch"

func init() {
	reduce.set(dispatch.Generic, reduceGeneric[float32]())
	reduceF64.set(dispatch.Generic, reduceGeneric[float64]())
}

func reduceGeneric[T float]() *reduceKernels[T] {
	return &reduceKernels[T]{
		sum: sumGeneric[T], sumAbs: sumAbsGeneric[T], dot: dotGeneric[T],
		max: maxGeneric[T], min: minGeneric[T], sumSquares: sumSquaresGeneric[T],
		indexEq: indexEqGeneric[T], indexNaN: indexNaNGeneric[T],
	}
}

// The generic reductions use four independent accumulators, like the SIMD
// levels use several vector registers: it breaks the add latency chain and
// keeps the same error bound.

func sumGeneric[T float](x []T) T {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func sumAbsGeneric[T float](x []T) T {
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += absOf(x[i])
		s1 += absOf(x[i+1])
		s2 += absOf(x[i+2])
		s3 += absOf(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += absOf(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func dotGeneric[T float](a, b []T) T {
	var s0, s1, s2, s3 T
	b = b[:len(a)]
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += T(a[i] * b[i])
		s1 += T(a[i+1] * b[i+1])
		s2 += T(a[i+2] * b[i+2])
		s3 += T(a[i+3] * b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += T(a[i] * b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// maxGeneric and minGeneric use Go's built-in max and min, which propagate
// NaN and compile without branches, in four independent chains.
func maxGeneric[T float](x []T) T {
	m0, m1, m2, m3 := x[0], x[0], x[0], x[0]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m0 = max(m0, x[i])
		m1 = max(m1, x[i+1])
		m2 = max(m2, x[i+2])
		m3 = max(m3, x[i+3])
	}
	for ; i < len(x); i++ {
		m0 = max(m0, x[i])
	}
	return max(max(m0, m1), max(m2, m3))
}

func minGeneric[T float](x []T) T {
	m0, m1, m2, m3 := x[0], x[0], x[0], x[0]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m0 = min(m0, x[i])
		m1 = min(m1, x[i+1])
		m2 = min(m2, x[i+2])
		m3 = min(m3, x[i+3])
	}
	for ; i < len(x); i++ {
		m0 = min(m0, x[i])
	}
	return min(min(m0, m1), min(m2, m3))
}

// sumSquaresGeneric widens each element to float64 (exactly) and sums the
// squares in two chains.
func sumSquaresGeneric[T float](x []T) float64 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		a, b := float64(x[i]), float64(x[i+1])
		s0 += a * a
		s1 += b * b
	}
	for ; i < len(x); i++ {
		a := float64(x[i])
		s0 += a * a
	}
	return s0 + s1
}

func indexEqGeneric[T float](x []T, v T) int {
	for i, e := range x {
		if e == v {
			return i
		}
	}
	return -1
}

func indexNaNGeneric[T float](x []T) int {
	for i, e := range x {
		if e != e {
			return i
		}
	}
	return -1
}
