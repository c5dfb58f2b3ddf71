package lanesblas

import (
	"sync"
	"unsafe"

	"github.com/lanesgo/lanes/simd"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Implementation is gonum's BLAS with lanes' kernels for the routines listed
// in the package documentation; the embedded gonum.Implementation provides
// every other routine.
type Implementation struct {
	gonum.Implementation
}

var (
	_ blas.Float64 = Implementation{}
	_ blas.Float32 = Implementation{}
)

// gonum's panic values (blas/gonum/errors.go), so that a caller that
// recovers them sees the same strings as with gonum's implementation.
const (
	zeroIncX     = "blas: zero x index increment"
	zeroIncY     = "blas: zero y index increment"
	mLT0         = "blas: m < 0"
	nLT0         = "blas: n < 0"
	kLT0         = "blas: k < 0"
	badUplo      = "blas: illegal triangle"
	badSide      = "blas: illegal side"
	badTranspose = "blas: illegal transpose"
	badDiag      = "blas: illegal diagonal"
	badLdA       = "blas: bad leading dimension of A"
	badLdB       = "blas: bad leading dimension of B"
	badLdC       = "blas: bad leading dimension of C"
	shortX       = "blas: insufficient length of x"
	shortY       = "blas: insufficient length of y"
	shortA       = "blas: insufficient length of a"
	shortB       = "blas: insufficient length of b"
	shortC       = "blas: insufficient length of c"
)

type float interface{ ~float32 | ~float64 }

// kernels is one width's set of simd kernels; the routines are written once
// over it.
type kernels[T float] struct {
	dot            func(a, b []T) T
	axpy           func(y []T, alpha T, x []T)
	scale          func(dst, a []T, s T)
	sumAbs, norm   func(x []T) T
	argMax, argMin func(x []T) int
	gemv           func(transA bool, m, n int, alpha T, a []T, lda int, x []T, beta T, y []T)
	gemm           func(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)
	// scratch pools *[recBase*recBase]T blocks (syrkDiag's).
	scratch *sync.Pool
}

var (
	k64 = &kernels[float64]{
		dot: simd.DotF64, axpy: simd.AxpyF64, scale: simd.ScaleF64,
		sumAbs: simd.SumAbsF64, norm: simd.NormF64,
		argMax: simd.ArgMaxF64, argMin: simd.ArgMinF64,
		gemv: simd.Dgemv, gemm: simd.Dgemm,
		scratch: &sync.Pool{New: func() any { return new([recBase * recBase]float64) }},
	}
	k32 = &kernels[float32]{
		dot: simd.Dot, axpy: simd.Axpy, scale: simd.Scale,
		sumAbs: simd.SumAbs, norm: simd.Norm,
		argMax: simd.ArgMax, argMin: simd.ArgMin,
		gemv: simd.Sgemv, gemm: simd.Sgemm,
		scratch: &sync.Pool{New: func() any { return new([recBase * recBase]float32) }},
	}
)

// partialOverlap reports whether a and b share memory without being the
// same slice start (the kernels' aliasing rule allows only the latter).
func partialOverlap[T float](a, b []T) bool {
	return overlap(a, b) && unsafe.SliceData(a) != unsafe.SliceData(b)
}

// overlap reports whether a and b share any memory.
func overlap[T float](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	size := unsafe.Sizeof(a[0])
	return pa < pb+uintptr(len(b))*size && pb < pa+uintptr(len(a))*size
}

func isTrans(t blas.Transpose) bool { return t == blas.Trans || t == blas.ConjTrans }

func checkTrans(t blas.Transpose) {
	if t != blas.NoTrans && t != blas.Trans && t != blas.ConjTrans {
		panic(badTranspose)
	}
}
