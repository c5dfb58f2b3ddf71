package lanesblas

import "gonum.org/v1/gonum/blas"

// gemv is Dgemv and Sgemv with unit increments: gonum's checks, then the
// simd kernel (rows are dot products without a transpose, axpys of rows
// with one).
func gemv[T float](k *kernels[T], tA blas.Transpose, m, n int, alpha T, a []T, lda int, x []T, beta T, y []T) {
	checkTrans(tA)
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	if lda < max(1, n) {
		panic(badLdA)
	}
	lenX, lenY := m, n
	if tA == blas.NoTrans {
		lenX, lenY = n, m
	}
	if m == 0 || n == 0 {
		return
	}
	if (lenX-1)*1 >= len(x) {
		panic(shortX)
	}
	if (lenY-1)*1 >= len(y) {
		panic(shortY)
	}
	if len(a) < lda*(m-1)+n {
		panic(shortA)
	}
	if alpha == 0 && beta == 1 {
		return
	}
	x, y = x[:lenX], y[:lenY]
	if alpha == 0 {
		scal(k, lenY, beta, y)
		return
	}
	k.gemv(isTrans(tA), m, n, alpha, a, lda, x, beta, y)
}

// ger is Dger and Sger with unit increments: A[i,:] += alpha·x[i]·y, one
// axpy per row. It delegates when y overlaps A (a row's axpy would read
// what an earlier one wrote, and simd.Axpy refuses a partial overlap).
func ger[T float](k *kernels[T], m, n int, alpha T, x, y, a []T, lda int) (ok bool) {
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	if lda < max(1, n) {
		panic(badLdA)
	}
	if m == 0 || n == 0 {
		return true
	}
	if len(x) <= m-1 {
		panic(shortX)
	}
	if len(y) <= n-1 {
		panic(shortY)
	}
	if len(a) < lda*(m-1)+n {
		panic(shortA)
	}
	if alpha == 0 {
		return true
	}
	a = a[:lda*(m-1)+n]
	x, y = x[:m], y[:n]
	if overlap(y, a) || overlap(x, a) {
		return false
	}
	for i, xi := range x {
		k.axpy(a[i*lda:i*lda+n], alpha*xi, y)
	}
	return true
}

// Dgemv computes y = alpha·op(A)·x + beta·y.
func (impl Implementation) Dgemv(tA blas.Transpose, m, n int, alpha float64, a []float64, lda int, x []float64, incX int, beta float64, y []float64, incY int) {
	if incX != 1 || incY != 1 {
		impl.Implementation.Dgemv(tA, m, n, alpha, a, lda, x, incX, beta, y, incY)
		return
	}
	gemv(k64, tA, m, n, alpha, a, lda, x, beta, y)
}

// Sgemv computes y = alpha·op(A)·x + beta·y.
func (impl Implementation) Sgemv(tA blas.Transpose, m, n int, alpha float32, a []float32, lda int, x []float32, incX int, beta float32, y []float32, incY int) {
	if incX != 1 || incY != 1 {
		impl.Implementation.Sgemv(tA, m, n, alpha, a, lda, x, incX, beta, y, incY)
		return
	}
	gemv(k32, tA, m, n, alpha, a, lda, x, beta, y)
}

// Dger computes A += alpha·x·yᵀ.
func (impl Implementation) Dger(m, n int, alpha float64, x []float64, incX int, y []float64, incY int, a []float64, lda int) {
	if incX != 1 || incY != 1 || !ger(k64, m, n, alpha, x, y, a, lda) {
		impl.Implementation.Dger(m, n, alpha, x, incX, y, incY, a, lda)
	}
}

// Sger computes A += alpha·x·yᵀ.
func (impl Implementation) Sger(m, n int, alpha float32, x []float32, incX int, y []float32, incY int, a []float32, lda int) {
	if incX != 1 || incY != 1 || !ger(k32, m, n, alpha, x, y, a, lda) {
		impl.Implementation.Sger(m, n, alpha, x, incX, y, incY, a, lda)
	}
}
