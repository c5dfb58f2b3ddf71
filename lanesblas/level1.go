package lanesblas

import "math"

// The Level 1 routines with unit increments, written once for both widths.
// Each checks its arguments in gonum's order with gonum's panic values
// (increments of 1 pass gonum's increment checks); a false ok asks the
// caller to delegate the call to gonum (a case whose semantics the kernels
// do not share).

func dot[T float](k *kernels[T], n int, x, y []T) T {
	if n <= 0 {
		if n == 0 {
			return 0
		}
		panic(nLT0)
	}
	if len(x) < n {
		panic(shortX)
	}
	if len(y) < n {
		panic(shortY)
	}
	return k.dot(x[:n], y[:n])
}

// nrm2 delegates when the norm is +Inf: gonum returns NaN when x also holds
// a NaN, the simd norms +Inf.
func nrm2[T float](k *kernels[T], n int, x []T) (r T, ok bool) {
	if len(x) <= n-1 {
		panic(shortX)
	}
	if n < 2 {
		if n == 1 {
			return T(math.Abs(float64(x[0]))), true
		}
		if n == 0 {
			return 0, true
		}
		panic(nLT0)
	}
	r = k.norm(x[:n])
	return r, !math.IsInf(float64(r), 0)
}

func asum[T float](k *kernels[T], n int, x []T) T {
	if n < 0 {
		panic(nLT0)
	}
	if len(x) <= n-1 {
		panic(shortX)
	}
	return k.sumAbs(x[:n])
}

// iamax is the first index of the largest |x[i]|: the first index of the
// largest or of the smallest element, whichever is larger in magnitude (the
// earlier one on a tie). It delegates when x holds a NaN (gonum skips a NaN
// unless it is x[0]; simd.ArgMax returns the first NaN).
func iamax[T float](k *kernels[T], n int, x []T) (idx int, ok bool) {
	if len(x) <= n-1 {
		panic(shortX)
	}
	if n < 2 {
		if n == 1 {
			return 0, true
		}
		if n == 0 {
			return -1, true
		}
		panic(nLT0)
	}
	x = x[:n]
	i := k.argMax(x)
	if x[i] != x[i] {
		return 0, false
	}
	j := k.argMin(x)
	hi, lo := x[i], -x[j]
	switch {
	case hi > lo:
		return i, true
	case lo > hi:
		return j, true
	}
	return min(i, j), true
}

// checkXY is the length check of swap, copy and axpy with unit increments;
// it reports whether there is anything to do.
func checkXY[T float](n int, x, y []T) bool {
	if n < 1 {
		if n == 0 {
			return false
		}
		panic(nLT0)
	}
	if len(x) <= n-1 {
		panic(shortX)
	}
	if len(y) <= n-1 {
		panic(shortY)
	}
	return true
}

// swapChunk is the number of elements swap moves through its stack buffer
// at a time.
const swapChunk = 256

// swap exchanges x[:n] and y[:n] by copies through a stack buffer (memmove
// beats an element loop); it delegates when they partially overlap, where
// gonum's element order decides the result.
func swap[T float](n int, x, y []T) (ok bool) {
	if !checkXY(n, x, y) {
		return true
	}
	x, y = x[:n], y[:n]
	if partialOverlap(x, y) {
		return false
	}
	var buf [swapChunk]T
	for len(x) > 0 {
		c := min(len(x), swapChunk)
		copy(buf[:c], x[:c])
		copy(x[:c], y[:c])
		copy(y[:c], buf[:c])
		x, y = x[c:], y[c:]
	}
	return true
}

// copyVec is Go's copy; it delegates when x and y partially overlap, where
// gonum's element order decides the result.
func copyVec[T float](n int, x, y []T) (ok bool) {
	if !checkXY(n, x, y) {
		return true
	}
	x, y = x[:n], y[:n]
	if partialOverlap(x, y) {
		return false
	}
	copy(y, x)
	return true
}

// axpy delegates when x and y partially overlap (simd.Axpy refuses it).
func axpy[T float](k *kernels[T], n int, alpha T, x, y []T) (ok bool) {
	if !checkXY(n, x, y) || alpha == 0 {
		return true
	}
	x, y = x[:n], y[:n]
	if partialOverlap(x, y) {
		return false
	}
	k.axpy(y, alpha, x)
	return true
}

func scal[T float](k *kernels[T], n int, alpha T, x []T) {
	if n < 1 {
		if n == 0 {
			return
		}
		panic(nLT0)
	}
	if n-1 >= len(x) {
		panic(shortX)
	}
	x = x[:n]
	if alpha == 0 {
		clear(x)
		return
	}
	k.scale(x, x, alpha)
}

// Ddot computes Σ x[i]·y[i]; see Implementation.
func (impl Implementation) Ddot(n int, x []float64, incX int, y []float64, incY int) float64 {
	if incX != 1 || incY != 1 {
		return impl.Implementation.Ddot(n, x, incX, y, incY)
	}
	return dot(k64, n, x, y)
}

// Sdot computes Σ x[i]·y[i] in float32; see Implementation.
func (impl Implementation) Sdot(n int, x []float32, incX int, y []float32, incY int) float32 {
	if incX != 1 || incY != 1 {
		return impl.Implementation.Sdot(n, x, incX, y, incY)
	}
	return dot(k32, n, x, y)
}

// Dnrm2 computes the Euclidean norm of x without overflow or underflow.
func (impl Implementation) Dnrm2(n int, x []float64, incX int) float64 {
	if incX == 1 {
		if r, ok := nrm2(k64, n, x); ok {
			return r
		}
	}
	return impl.Implementation.Dnrm2(n, x, incX)
}

// Snrm2 computes the Euclidean norm of x without overflow or underflow.
func (impl Implementation) Snrm2(n int, x []float32, incX int) float32 {
	if incX == 1 {
		if r, ok := nrm2(k32, n, x); ok {
			return r
		}
	}
	return impl.Implementation.Snrm2(n, x, incX)
}

// Dasum computes Σ |x[i]|.
func (impl Implementation) Dasum(n int, x []float64, incX int) float64 {
	if incX != 1 {
		return impl.Implementation.Dasum(n, x, incX)
	}
	return asum(k64, n, x)
}

// Sasum computes Σ |x[i]|.
func (impl Implementation) Sasum(n int, x []float32, incX int) float32 {
	if incX != 1 {
		return impl.Implementation.Sasum(n, x, incX)
	}
	return asum(k32, n, x)
}

// Idamax returns the first index of the largest |x[i]|, -1 if n == 0.
func (impl Implementation) Idamax(n int, x []float64, incX int) int {
	if incX == 1 {
		if i, ok := iamax(k64, n, x); ok {
			return i
		}
	}
	return impl.Implementation.Idamax(n, x, incX)
}

// Isamax returns the first index of the largest |x[i]|, -1 if n == 0.
func (impl Implementation) Isamax(n int, x []float32, incX int) int {
	if incX == 1 {
		if i, ok := iamax(k32, n, x); ok {
			return i
		}
	}
	return impl.Implementation.Isamax(n, x, incX)
}

// Dswap exchanges the elements of x and y.
func (impl Implementation) Dswap(n int, x []float64, incX int, y []float64, incY int) {
	if incX != 1 || incY != 1 || !swap(n, x, y) {
		impl.Implementation.Dswap(n, x, incX, y, incY)
	}
}

// Sswap exchanges the elements of x and y.
func (impl Implementation) Sswap(n int, x []float32, incX int, y []float32, incY int) {
	if incX != 1 || incY != 1 || !swap(n, x, y) {
		impl.Implementation.Sswap(n, x, incX, y, incY)
	}
}

// Dcopy copies x into y.
func (impl Implementation) Dcopy(n int, x []float64, incX int, y []float64, incY int) {
	if incX != 1 || incY != 1 || !copyVec(n, x, y) {
		impl.Implementation.Dcopy(n, x, incX, y, incY)
	}
}

// Scopy copies x into y.
func (impl Implementation) Scopy(n int, x []float32, incX int, y []float32, incY int) {
	if incX != 1 || incY != 1 || !copyVec(n, x, y) {
		impl.Implementation.Scopy(n, x, incX, y, incY)
	}
}

// Daxpy sets y[i] += alpha·x[i].
func (impl Implementation) Daxpy(n int, alpha float64, x []float64, incX int, y []float64, incY int) {
	if incX != 1 || incY != 1 || !axpy(k64, n, alpha, x, y) {
		impl.Implementation.Daxpy(n, alpha, x, incX, y, incY)
	}
}

// Saxpy sets y[i] += alpha·x[i].
func (impl Implementation) Saxpy(n int, alpha float32, x []float32, incX int, y []float32, incY int) {
	if incX != 1 || incY != 1 || !axpy(k32, n, alpha, x, y) {
		impl.Implementation.Saxpy(n, alpha, x, incX, y, incY)
	}
}

// Dscal sets x[i] *= alpha (0 when alpha == 0, NaN and Inf included).
func (impl Implementation) Dscal(n int, alpha float64, x []float64, incX int) {
	if incX != 1 {
		impl.Implementation.Dscal(n, alpha, x, incX)
		return
	}
	scal(k64, n, alpha, x)
}

// Sscal sets x[i] *= alpha (0 when alpha == 0, NaN and Inf included).
func (impl Implementation) Sscal(n int, alpha float32, x []float32, incX int) {
	if incX != 1 {
		impl.Implementation.Sscal(n, alpha, x, incX)
		return
	}
	scal(k32, n, alpha, x)
}
