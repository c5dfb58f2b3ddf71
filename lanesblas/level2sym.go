package lanesblas

import "gonum.org/v1/gonum/blas"

// The symmetric and triangular Level 2 routines with a unit increment, a
// dot product and an axpy per row of A (row-major, so a row of the stored
// triangle is contiguous). Each returns false, asking for delegation, when
// a vector overlaps A or (symv) x overlaps y, where the order in which
// gonum reads and writes decides the result.

// checkTri is gonum's check of trmv and trsv's arguments with incX == 1; it
// reports whether there is anything to do.
func checkTri[T float](ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []T, lda int, x []T) bool {
	if ul != blas.Lower && ul != blas.Upper {
		panic(badUplo)
	}
	checkTrans(tA)
	if d != blas.NonUnit && d != blas.Unit {
		panic(badDiag)
	}
	if n < 0 {
		panic(nLT0)
	}
	if lda < max(1, n) {
		panic(badLdA)
	}
	if n == 0 {
		return false
	}
	if len(a) < lda*(n-1)+n {
		panic(shortA)
	}
	if len(x) <= n-1 {
		panic(shortX)
	}
	return true
}

// symv: y = alpha·A·x + beta·y with A symmetric, one triangle stored. Row i
// of the stored triangle gives y[i] its dot product and the other elements
// of y an axpy (the mirrored column).
func symv[T float](k *kernels[T], ul blas.Uplo, n int, alpha T, a []T, lda int, x []T, beta T, y []T) (ok bool) {
	if ul != blas.Lower && ul != blas.Upper {
		panic(badUplo)
	}
	if n < 0 {
		panic(nLT0)
	}
	if lda < max(1, n) {
		panic(badLdA)
	}
	if n == 0 {
		return true
	}
	if len(a) < lda*(n-1)+n {
		panic(shortA)
	}
	if len(x) <= n-1 {
		panic(shortX)
	}
	if len(y) <= n-1 {
		panic(shortY)
	}
	if alpha == 0 && beta == 1 {
		return true
	}
	a, x, y = a[:lda*(n-1)+n], x[:n], y[:n]
	if overlap(x, y) || overlap(y, a) {
		return false
	}
	if beta != 1 {
		scal(k, n, beta, y)
	}
	if alpha == 0 {
		return true
	}
	for i := range n {
		row := a[i*lda : i*lda+n]
		ax := alpha * x[i]
		if ul == blas.Upper {
			y[i] += alpha*k.dot(row[i+1:], x[i+1:]) + ax*row[i]
			k.axpy(y[i+1:], ax, row[i+1:])
		} else {
			y[i] += alpha*k.dot(row[:i], x[:i]) + ax*row[i]
			k.axpy(y[:i], ax, row[:i])
		}
	}
	return true
}

// trmv: x = op(A)·x with A triangular. Without a transpose row i is a dot
// product (ordered so that it reads only elements not yet overwritten);
// with one, row i is an axpy into the elements that later rows no longer
// read.
func trmv[T float](k *kernels[T], ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []T, lda int, x []T) (ok bool) {
	if !checkTri(ul, tA, d, n, a, lda, x) {
		return true
	}
	a, x = a[:lda*(n-1)+n], x[:n]
	if overlap(x, a) {
		return false
	}
	nonUnit := d == blas.NonUnit
	diag := func(i int) T {
		if nonUnit {
			return a[i*lda+i]
		}
		return 1
	}
	switch {
	case tA == blas.NoTrans && ul == blas.Upper:
		for i := range n {
			x[i] = diag(i)*x[i] + k.dot(a[i*lda+i+1:i*lda+n], x[i+1:])
		}
	case tA == blas.NoTrans:
		for i := n - 1; i >= 0; i-- {
			x[i] = diag(i)*x[i] + k.dot(a[i*lda:i*lda+i], x[:i])
		}
	case ul == blas.Upper: // x = Aᵀx, Aᵀ lower
		for i := n - 1; i >= 0; i-- {
			k.axpy(x[i+1:], x[i], a[i*lda+i+1:i*lda+n])
			x[i] *= diag(i)
		}
	default: // x = Aᵀx, Aᵀ upper
		for i := range n {
			k.axpy(x[:i], x[i], a[i*lda:i*lda+i])
			x[i] *= diag(i)
		}
	}
	return true
}

// trsv solves op(A)·x = b (b given in x) by substitution: without a
// transpose row i is a dot product with the solved part; with one, solved
// x[i] is subtracted from the rest by an axpy of row i.
func trsv[T float](k *kernels[T], ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []T, lda int, x []T) (ok bool) {
	if !checkTri(ul, tA, d, n, a, lda, x) {
		return true
	}
	a, x = a[:lda*(n-1)+n], x[:n]
	if overlap(x, a) {
		return false
	}
	nonUnit := d == blas.NonUnit
	solve := func(i int, v T) T {
		if nonUnit {
			return v / a[i*lda+i]
		}
		return v
	}
	switch {
	case tA == blas.NoTrans && ul == blas.Upper:
		for i := n - 1; i >= 0; i-- {
			x[i] = solve(i, x[i]-k.dot(a[i*lda+i+1:i*lda+n], x[i+1:]))
		}
	case tA == blas.NoTrans:
		for i := range n {
			x[i] = solve(i, x[i]-k.dot(a[i*lda:i*lda+i], x[:i]))
		}
	case ul == blas.Upper: // Aᵀ lower: forward
		for i := range n {
			x[i] = solve(i, x[i])
			k.axpy(x[i+1:], -x[i], a[i*lda+i+1:i*lda+n])
		}
	default: // Aᵀ upper: backward
		for i := n - 1; i >= 0; i-- {
			x[i] = solve(i, x[i])
			k.axpy(x[:i], -x[i], a[i*lda:i*lda+i])
		}
	}
	return true
}

// Dsymv computes y = alpha·A·x + beta·y for symmetric A.
func (impl Implementation) Dsymv(ul blas.Uplo, n int, alpha float64, a []float64, lda int, x []float64, incX int, beta float64, y []float64, incY int) {
	if incX != 1 || incY != 1 || !symv(k64, ul, n, alpha, a, lda, x, beta, y) {
		impl.Implementation.Dsymv(ul, n, alpha, a, lda, x, incX, beta, y, incY)
	}
}

// Ssymv computes y = alpha·A·x + beta·y for symmetric A.
func (impl Implementation) Ssymv(ul blas.Uplo, n int, alpha float32, a []float32, lda int, x []float32, incX int, beta float32, y []float32, incY int) {
	if incX != 1 || incY != 1 || !symv(k32, ul, n, alpha, a, lda, x, beta, y) {
		impl.Implementation.Ssymv(ul, n, alpha, a, lda, x, incX, beta, y, incY)
	}
}

// Dtrmv computes x = op(A)·x for triangular A.
func (impl Implementation) Dtrmv(ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []float64, lda int, x []float64, incX int) {
	if incX != 1 || !trmv(k64, ul, tA, d, n, a, lda, x) {
		impl.Implementation.Dtrmv(ul, tA, d, n, a, lda, x, incX)
	}
}

// Strmv computes x = op(A)·x for triangular A.
func (impl Implementation) Strmv(ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []float32, lda int, x []float32, incX int) {
	if incX != 1 || !trmv(k32, ul, tA, d, n, a, lda, x) {
		impl.Implementation.Strmv(ul, tA, d, n, a, lda, x, incX)
	}
}

// Dtrsv solves op(A)·x = b for triangular A, b given in x.
func (impl Implementation) Dtrsv(ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []float64, lda int, x []float64, incX int) {
	if incX != 1 || !trsv(k64, ul, tA, d, n, a, lda, x) {
		impl.Implementation.Dtrsv(ul, tA, d, n, a, lda, x, incX)
	}
}

// Strsv solves op(A)·x = b for triangular A, b given in x.
func (impl Implementation) Strsv(ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []float32, lda int, x []float32, incX int) {
	if incX != 1 || !trsv(k32, ul, tA, d, n, a, lda, x) {
		impl.Implementation.Strsv(ul, tA, d, n, a, lda, x, incX)
	}
}
