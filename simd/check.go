package simd

import (
	"fmt"
	"math"
	"math/bits"
	"unsafe"
)

// mulInt returns a·b for a, b >= 0 and whether it is representable as an
// int. Every product of sizes in package simd goes through it (or through
// fitsMatrix), so that a huge size or stride is refused rather than
// wrapping round to a small number that passes a length check.
func mulInt(a, b int) (int, bool) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return int(lo), a >= 0 && b >= 0 && hi == 0 && lo <= math.MaxInt
}

// fitsMatrix reports whether a rows×cols matrix stored with row stride ld
// (ld >= max(1, cols), checked before) fits in n elements, that is
// (rows-1)·ld + cols <= n, computed without overflow. An empty matrix
// (rows or cols 0) fits anywhere.
func fitsMatrix(n, rows, cols, ld int) bool {
	if rows == 0 || cols == 0 {
		return true
	}
	return n >= cols && rows-1 <= (n-cols)/ld
}

// matrixSpan is the number of elements a rows×cols matrix with row stride ld
// reaches from its first, (rows-1)·ld + cols, or 0 when it is empty. Call it
// only after fitsMatrix said yes (it cannot overflow then).
func matrixSpan(rows, cols, ld int) int {
	if rows == 0 || cols == 0 {
		return 0
	}
	return (rows-1)*ld + cols
}

// checkLen2 panics unless len(dst) == len(x), or if they partially overlap.
func checkLen2[T float](fn string, dst, x []T, dn, xn string) {
	if len(dst) != len(x) {
		panic(fmt.Sprintf("simd.%s: length mismatch: len(%s)=%d len(%s)=%d", fn, dn, len(dst), xn, len(x)))
	}
	if partialOverlap(dst, x) {
		panic(fmt.Sprintf("simd.%s: %s and %s partially overlap", fn, dn, xn))
	}
}

// checkLen3 panics unless len(dst) == len(a) == len(b), or if dst partially
// overlaps a or b.
func checkLen3[T float](fn string, dst, a, b []T) {
	if len(dst) != len(a) || len(dst) != len(b) {
		panic(fmt.Sprintf("simd.%s: length mismatch: len(dst)=%d len(a)=%d len(b)=%d", fn, len(dst), len(a), len(b)))
	}
	if partialOverlap(dst, a) || partialOverlap(dst, b) {
		panic(fmt.Sprintf("simd.%s: dst partially overlaps an input", fn))
	}
}

// checkSameLen panics unless len(a) == len(b) (for reductions of two inputs).
func checkSameLen[T float](fn string, a, b []T) {
	if len(a) != len(b) {
		panic(fmt.Sprintf("simd.%s: length mismatch: len(a)=%d len(b)=%d", fn, len(a), len(b)))
	}
}

// partialOverlap reports whether a and b share memory without being the same
// slice (same start). Both have the same length when called.
func partialOverlap[T float](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if pa == pb {
		return false
	}
	size := unsafe.Sizeof(a[0])
	return pa < pb+uintptr(len(b))*size && pb < pa+uintptr(len(a))*size
}
