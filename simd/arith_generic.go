package simd

import (
	"math"
	"unsafe"

	"github.com/lanesgo/lanes/dispatch"
)

// The generic elementwise kernels: the Generic level on every machine, the only
// level under -tags purego and on architectures without assembly, and the
// reference every other level is tested against. Each is written once for
// both element types; the compiler makes one copy of the code per type.

func init() {
	arith.set(dispatch.Generic, arithGeneric[float32]())
	arithF64.set(dispatch.Generic, arithGeneric[float64]())
}

func arithGeneric[T float]() *arithKernels[T] {
	return &arithKernels[T]{
		add: addGeneric[T], sub: subGeneric[T], mul: mulGeneric[T], div: divGeneric[T],
		maximum: maximumGeneric[T], minimum: minimumGeneric[T],
		addScalar: addScalarGeneric[T], scale: scaleGeneric[T], axpy: axpyGeneric[T],
		abs: absGeneric[T], neg: negGeneric[T], sqrt: sqrtGeneric[T], relu: reluGeneric[T],
		clamp: clampGeneric[T],
	}
}

func addGeneric[T float](dst, a, b []T) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func subGeneric[T float](dst, a, b []T) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] - b[i]
	}
}

func mulGeneric[T float](dst, a, b []T) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func divGeneric[T float](dst, a, b []T) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}

// maximumOf is Maximum's rule for one element (maximum32 and maximum64 in the
// kernels' docs):
//
//	if a > b || a != a { return a } else { return b }
//
// written as a bit select so that the compiler emits no branch: with random
// data a branch mispredicts half the time and costs ten times the arithmetic.
func maximumOf[T float](a, b T) T { return selectOf(b2u(a > b)|b2u(a != a), a, b) }

// minimumOf is Minimum's rule: if a < b || a != a { a } else { b }.
func minimumOf[T float](a, b T) T { return selectOf(b2u(a < b)|b2u(a != a), a, b) }

// signBit is the sign bit of a T in the bits of bitsOf.
func signBit[T float]() uint64 { return 1 << (8*unsafe.Sizeof(T(0)) - 1) }

// bitsOf is the IEEE representation of x; fromBits its inverse. The size
// tests are constants in each instantiation, and the helpers are written
// without calls so that the kernels' loops inline them.
func bitsOf[T float](x T) uint64 {
	if unsafe.Sizeof(x) == 4 {
		return uint64(*(*uint32)(unsafe.Pointer(&x)))
	}
	return *(*uint64)(unsafe.Pointer(&x))
}

func fromBits[T float](u uint64) T {
	if unsafe.Sizeof(T(0)) == 4 {
		v := uint32(u)
		return *(*T)(unsafe.Pointer(&v))
	}
	return *(*T)(unsafe.Pointer(&u))
}

// absOf clears the sign bit: |x|, NaN stays NaN, -0 becomes +0.
func absOf[T float](x T) T { return fromBits[T](bitsOf(x) &^ signBit[T]()) }

// withSign returns |t| with the sign of s (t must be non-negative).
func withSign[T float](t, s T) T { return fromBits[T](bitsOf(t) | bitsOf(s)&signBit[T]()) }

// b2u is 1 for true and 0 for false; the compiler turns it into a SETcc.
func b2u(c bool) uint64 {
	if c {
		return 1
	}
	return 0
}

// selectOf returns a if pick is 1 and b if it is 0, without a branch.
func selectOf[T float](pick uint64, a, b T) T {
	m := -pick
	if unsafe.Sizeof(a) == 4 {
		r := *(*uint32)(unsafe.Pointer(&a))&uint32(m) | *(*uint32)(unsafe.Pointer(&b))&^uint32(m)
		return *(*T)(unsafe.Pointer(&r))
	}
	r := *(*uint64)(unsafe.Pointer(&a))&m | *(*uint64)(unsafe.Pointer(&b))&^m
	return *(*T)(unsafe.Pointer(&r))
}

func maximumGeneric[T float](dst, a, b []T) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = maximumOf(a[i], b[i])
	}
}

func minimumGeneric[T float](dst, a, b []T) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = minimumOf(a[i], b[i])
	}
}

func addScalarGeneric[T float](dst, a []T, s T) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + s
	}
}

func scaleGeneric[T float](dst, a []T, s T) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * s
	}
}

func axpyGeneric[T float](y []T, alpha T, x []T) {
	x = x[:len(y)]
	for i := range y {
		// The explicit conversion forbids the compiler from fusing (Go spec).
		y[i] += T(alpha * x[i])
	}
}

func absGeneric[T float](dst, x []T) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = absOf(x[i])
	}
}

func negGeneric[T float](dst, x []T) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = fromBits[T](bitsOf(x[i]) ^ signBit[T]())
	}
}

func sqrtGeneric[T float](dst, x []T) {
	x = x[:len(dst)]
	for i := range dst {
		// For float32, rounding the float64 root is correctly rounded
		// (53 >= 2*24+2); for float64 it is math.Sqrt itself.
		dst[i] = T(math.Sqrt(float64(x[i])))
	}
}

func reluGeneric[T float](dst, x []T) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = maximumOf(x[i], 0)
	}
}

func clampGeneric[T float](dst, x []T, lo, hi T) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] = minimumOf(maximumOf(x[i], lo), hi)
	}
}
