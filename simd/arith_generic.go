package simd

import (
	"math"

	"github.com/lanesgo/lanes/dispatch"
)

// The generic elementwise kernels: the Generic level on every machine, the only
// level under -tags purego and on architectures without assembly, and the
// reference every other level is tested against.

func init() {
	arith.set(dispatch.Generic, &arithKernels{
		add: addGeneric, sub: subGeneric, mul: mulGeneric, div: divGeneric,
		maximum: maximumGeneric, minimum: minimumGeneric,
		addScalar: addScalarGeneric, scale: scaleGeneric, axpy: axpyGeneric,
		abs: absGeneric, neg: negGeneric, sqrt: sqrtGeneric, relu: reluGeneric,
		clamp: clampGeneric,
	})
}

func addGeneric(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func subGeneric(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] - b[i]
	}
}

func mulGeneric(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func divGeneric(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}

// maximum32 is Maximum's rule for one element:
//
//	if a > b || a != a { return a } else { return b }
//
// written as a bit select so that the compiler emits no branch: with random
// data a branch mispredicts half the time and costs ten times the arithmetic.
func maximum32(a, b float32) float32 { return select32(b2u(a > b)|b2u(a != a), a, b) }

// minimum32 is Minimum's rule: if a < b || a != a { a } else { b }.
func minimum32(a, b float32) float32 { return select32(b2u(a < b)|b2u(a != a), a, b) }

// abs32 clears the sign bit: |x|, NaN stays NaN, -0 becomes +0.
func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// withSign returns |t| with the sign of s (t must be non-negative).
func withSign(t, s float32) float32 {
	return math.Float32frombits(math.Float32bits(t) | math.Float32bits(s)&(1<<31))
}

// b2u is 1 for true and 0 for false; the compiler turns it into a SETcc.
func b2u(c bool) uint32 {
	if c {
		return 1
	}
	return 0
}

// select32 returns a if pick is 1 and b if it is 0, without a branch.
func select32(pick uint32, a, b float32) float32 {
	m := -pick
	return math.Float32frombits(math.Float32bits(a)&m | math.Float32bits(b)&^m)
}

func maximumGeneric(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = maximum32(a[i], b[i])
	}
}

func minimumGeneric(dst, a, b []float32) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = minimum32(a[i], b[i])
	}
}

func addScalarGeneric(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + s
	}
}

func scaleGeneric(dst, a []float32, s float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * s
	}
}

func axpyGeneric(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		// The explicit conversion forbids the compiler from fusing (Go spec).
		y[i] += float32(alpha * x[i])
	}
}

func absGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = abs32(x[i])
	}
}

func negGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(math.Float32bits(x[i]) ^ (1 << 31))
	}
}

func sqrtGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		// Rounding the float64 root to float32 is correctly rounded (53 >= 2*24+2).
		dst[i] = float32(math.Sqrt(float64(x[i])))
	}
}

func reluGeneric(dst, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = maximum32(x[i], 0)
	}
}

func clampGeneric(dst, x []float32, lo, hi float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = minimum32(maximum32(x[i], lo), hi)
	}
}
