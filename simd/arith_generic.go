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

func maximum32(a, b float32) float32 {
	if a > b || a != a {
		return a
	}
	return b
}

func minimum32(a, b float32) float32 {
	if a < b || a != a {
		return a
	}
	return b
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
		dst[i] = math.Float32frombits(math.Float32bits(x[i]) &^ (1 << 31))
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
