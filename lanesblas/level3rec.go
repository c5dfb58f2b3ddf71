package lanesblas

import "gonum.org/v1/gonum/blas"

// syrk and trsm recurse on halves of C (syrk) or of the triangle (trsm):
// the off-diagonal blocks, where nearly all the work is once n is large,
// are lanes' gemm; the blocks of recBase or fewer on the diagonal are
// gonum's unblocked trsm, called through the embedded implementation, and
// for syrk a gemm into scratch (syrkDiag).
const recBase = 32

type (
	syrkFunc[T float] func(ul blas.Uplo, tA blas.Transpose, n, k int, alpha T, a []T, lda int, beta T, c []T, ldc int)
	trsmFunc[T float] func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int)
)

// syrk is Dsyrk and Ssyrk: gonum's checks, then syrkRec (small, empty or
// alpha == 0 cases go to gonum whole).
func syrk[T float](k *kernels[T], base syrkFunc[T], ul blas.Uplo, tA blas.Transpose, n, kk int, alpha T, a []T, lda int, beta T, c []T, ldc int) {
	if ul != blas.Lower && ul != blas.Upper {
		panic(badUplo)
	}
	checkTrans(tA)
	if n < 0 {
		panic(nLT0)
	}
	if kk < 0 {
		panic(kLT0)
	}
	row, col := kk, n
	if tA == blas.NoTrans {
		row, col = n, kk
	}
	if lda < max(1, col) {
		panic(badLdA)
	}
	if ldc < max(1, n) {
		panic(badLdC)
	}
	if n == 0 {
		return
	}
	if len(a) < lda*(row-1)+col {
		panic(shortA)
	}
	if len(c) < ldc*(n-1)+n {
		panic(shortC)
	}
	if alpha == 0 || kk == 0 || n <= recBase {
		base(ul, tA, n, kk, alpha, a, lda, beta, c, ldc)
		return
	}
	syrkRec(k, ul, tA, n, kk, alpha, a, lda, beta, c, ldc)
}

// syrkRec updates the ul triangle of C (n×n) with alpha·op(A)·op(A)ᵀ: the two
// diagonal halves by recursion, the off-diagonal block by gemm.
func syrkRec[T float](k *kernels[T], ul blas.Uplo, tA blas.Transpose, n, kk int, alpha T, a []T, lda int, beta T, c []T, ldc int) {
	if n <= recBase {
		syrkDiag(k, ul, tA, n, kk, alpha, a, lda, beta, c, ldc)
		return
	}
	p := n / 2
	trans := isTrans(tA)
	var a2 []T // the rows of op(A) from p: rows of A, or columns with trans
	if trans {
		a2 = a[p:]
	} else {
		a2 = a[p*lda:]
	}
	syrkRec(k, ul, tA, p, kk, alpha, a, lda, beta, c, ldc)
	syrkRec(k, ul, tA, n-p, kk, alpha, a2, lda, beta, c[p*ldc+p:], ldc)
	if ul == blas.Upper { // C12 = alpha·op(A)1·op(A)2ᵀ + beta·C12
		k.gemm(trans, !trans, p, n-p, kk, alpha, a, lda, a2, lda, beta, c[p:], ldc)
	} else { // C21 = alpha·op(A)2·op(A)1ᵀ + beta·C21
		k.gemm(trans, !trans, n-p, p, kk, alpha, a2, lda, a, lda, beta, c[p*ldc:], ldc)
	}
}

// syrkDiag is a diagonal block of syrkRec (n <= recBase): the whole n×n
// product alpha·op(A)·op(A)ᵀ by gemm into a pooled scratch block, then its
// ul triangle added to beta·C (C not read when beta == 0). The gemm does
// twice the multiply-adds of the triangle, at several times the speed of
// gonum's unblocked dsyrk, which did half of a Cholesky's syrk work here.
func syrkDiag[T float](k *kernels[T], ul blas.Uplo, tA blas.Transpose, n, kk int, alpha T, a []T, lda int, beta T, c []T, ldc int) {
	trans := isTrans(tA)
	p := k.scratch.Get().(*[recBase * recBase]T)
	defer k.scratch.Put(p)
	w := p[:n*n]
	k.gemm(trans, !trans, n, n, kk, alpha, a, lda, a, lda, 0, w, n)
	for i := range n {
		lo, hi := i, n // the columns of row i in the triangle
		if ul == blas.Lower {
			lo, hi = 0, i+1
		}
		row, src := c[i*ldc+lo:i*ldc+hi], w[i*n+lo:i*n+hi]
		if beta == 0 {
			copy(row, src)
			continue
		}
		for j, v := range src {
			row[j] = row[j]*beta + v
		}
	}
}

// trsm is Dtrsm and Strsm: gonum's checks, then B is scaled by alpha and
// trsmRec solves with alpha = 1 (small or alpha == 0 cases go to gonum whole).
func trsm[T float](k *kernels[T], base trsmFunc[T], s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int) {
	if s != blas.Left && s != blas.Right {
		panic(badSide)
	}
	if ul != blas.Lower && ul != blas.Upper {
		panic(badUplo)
	}
	checkTrans(tA)
	if d != blas.NonUnit && d != blas.Unit {
		panic(badDiag)
	}
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	ka := n
	if s == blas.Left {
		ka = m
	}
	if lda < max(1, ka) {
		panic(badLdA)
	}
	if ldb < max(1, n) {
		panic(badLdB)
	}
	if m == 0 || n == 0 {
		return
	}
	if len(a) < lda*(ka-1)+ka {
		panic(shortA)
	}
	if len(b) < ldb*(m-1)+n {
		panic(shortB)
	}
	if alpha == 0 || ka <= recBase {
		base(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	if alpha != 1 {
		for i := range m {
			row := b[i*ldb : i*ldb+n]
			k.scale(row, row, alpha)
		}
	}
	trsmRec(k, base, s, ul, tA, d, m, n, a, lda, b, ldb)
}

// trsmRec solves op(A)·X = B (Left) or X·op(A) = B (Right) in place of B,
// splitting the triangle op(A) in halves: solve with one diagonal half,
// subtract its part of the product from the other rows (Left) or columns
// (Right) of B by gemm, solve with the other half.
func trsmRec[T float](k *kernels[T], base trsmFunc[T], s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, a []T, lda int, b []T, ldb int) {
	left := s == blas.Left
	size := n
	if left {
		size = m
	}
	if size <= recBase {
		base(s, ul, tA, d, m, n, 1, a, lda, b, ldb)
		return
	}
	p := size / 2
	trans := isTrans(tA)
	a22 := a[p*lda+p:]
	// The off-diagonal blocks of op(A): lo = op(A)[p:, :p], up = op(A)[:p, p:].
	lo, up := a[p*lda:], a[p:]
	if trans {
		lo, up = up, lo
	}
	if left {
		b2 := b[p*ldb:]
		if (ul == blas.Lower) != trans { // op(A) lower: forward
			trsmRec(k, base, s, ul, tA, d, p, n, a, lda, b, ldb)
			k.gemm(trans, false, m-p, n, p, -1, lo, lda, b, ldb, 1, b2, ldb)
			trsmRec(k, base, s, ul, tA, d, m-p, n, a22, lda, b2, ldb)
		} else {
			trsmRec(k, base, s, ul, tA, d, m-p, n, a22, lda, b2, ldb)
			k.gemm(trans, false, p, n, m-p, -1, up, lda, b2, ldb, 1, b, ldb)
			trsmRec(k, base, s, ul, tA, d, p, n, a, lda, b, ldb)
		}
		return
	}
	b2 := b[p:]
	if (ul == blas.Upper) != trans { // op(A) upper: X1 first
		trsmRec(k, base, s, ul, tA, d, m, p, a, lda, b, ldb)
		k.gemm(false, trans, m, n-p, p, -1, b, ldb, up, lda, 1, b2, ldb)
		trsmRec(k, base, s, ul, tA, d, m, n-p, a22, lda, b2, ldb)
	} else {
		trsmRec(k, base, s, ul, tA, d, m, n-p, a22, lda, b2, ldb)
		k.gemm(false, trans, m, p, n-p, -1, b2, ldb, lo, lda, 1, b, ldb)
		trsmRec(k, base, s, ul, tA, d, m, p, a, lda, b, ldb)
	}
}

// Dsyrk computes the ul triangle of C = alpha·op(A)·op(A)ᵀ + beta·C.
func (impl Implementation) Dsyrk(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	syrk(k64, impl.Implementation.Dsyrk, ul, tA, n, k, alpha, a, lda, beta, c, ldc)
}

// Ssyrk computes the ul triangle of C = alpha·op(A)·op(A)ᵀ + beta·C.
func (impl Implementation) Ssyrk(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int) {
	syrk(k32, impl.Implementation.Ssyrk, ul, tA, n, k, alpha, a, lda, beta, c, ldc)
}

// Dtrsm solves op(A)·X = alpha·B or X·op(A) = alpha·B for triangular A, X
// written over B.
func (impl Implementation) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	trsm(k64, impl.Implementation.Dtrsm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Strsm solves op(A)·X = alpha·B or X·op(A) = alpha·B for triangular A, X
// written over B.
func (impl Implementation) Strsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float32, a []float32, lda int, b []float32, ldb int) {
	trsm(k32, impl.Implementation.Strsm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}
