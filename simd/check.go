package simd

import (
	"fmt"
	"unsafe"
)

// checkLen2 panics unless len(dst) == len(x), or if they partially overlap.
func checkLen2(fn string, dst, x []float32, dn, xn string) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("simd.%s: length mismatch: len(%s)=%d len(%s)=%d", fn, dn, len(dst), xn, len(x)))
	}
	if partialOverlap(dst, x) {
		panic(fmt.Sprintf("simd.%s: %s and %s partially overlap", fn, dn, xn))
	}
}

// checkLen3 panics unless len(dst) == len(a) == len(b), or if dst partially
// overlaps a or b.
func checkLen3(fn string, dst, a, b []float32) {
	if len(dst) != len(a) || len(dst) != len(b) {
		panic(fmt.Sprintf("simd.%s: length mismatch: len(dst)=%d len(a)=%d len(b)=%d", fn, len(dst), len(a), len(b)))
	}
	if partialOverlap(dst, a) || partialOverlap(dst, b) {
		panic(fmt.Sprintf("simd.%s: dst partially overlaps an input", fn))
	}
}

// checkSameLen panics unless len(a) == len(b) (for reductions of two inputs).
func checkSameLen(fn string, a, b []float32) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("simd.%s: length mismatch: len(a)=%d len(b)=%d", fn, len(a), len(b)))
	}
}

// partialOverlap reports whether a and b share memory without being the same
// slice (same start). Both have the same length when called.
func partialOverlap(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if pa == pb {
		return false
	}
	return pa < pb+uintptr(len(b))*4 && pb < pa+uintptr(len(a))*4
}
