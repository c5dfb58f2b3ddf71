package lanesblas

import "gonum.org/v1/gonum/blas"

// gemm is Dgemm and Sgemm: gonum's checks and quick returns, then the simd
// packed kernel.
func gemm[T float](k *kernels[T], tA, tB blas.Transpose, m, n, kk int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	checkTrans(tA)
	checkTrans(tB)
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	if kk < 0 {
		panic(kLT0)
	}
	aTrans, bTrans := isTrans(tA), isTrans(tB)
	if aTrans {
		if lda < max(1, m) {
			panic(badLdA)
		}
	} else if lda < max(1, kk) {
		panic(badLdA)
	}
	if bTrans {
		if ldb < max(1, kk) {
			panic(badLdB)
		}
	} else if ldb < max(1, n) {
		panic(badLdB)
	}
	if ldc < max(1, n) {
		panic(badLdC)
	}
	if m == 0 || n == 0 {
		return
	}
	if aTrans {
		if len(a) < (kk-1)*lda+m {
			panic(shortA)
		}
	} else if len(a) < (m-1)*lda+kk {
		panic(shortA)
	}
	if bTrans {
		if len(b) < (n-1)*ldb+kk {
			panic(shortB)
		}
	} else if len(b) < (kk-1)*ldb+n {
		panic(shortB)
	}
	if len(c) < (m-1)*ldc+n {
		panic(shortC)
	}
	if (alpha == 0 || kk == 0) && beta == 1 {
		return
	}
	k.gemm(aTrans, bTrans, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dgemm computes C = alpha·op(A)·op(B) + beta·C.
func (Implementation) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	gemm(k64, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C.
func (Implementation) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	gemm(k32, tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}
