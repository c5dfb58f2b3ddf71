package lanesblas

import (
	"testing"

	"gonum.org/v1/gonum/blas"
)

// TestNoAllocs: after warm-up the overridden routines allocate nothing, at
// sizes that take the recursive and threaded paths too.
func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: syrk's, syr2k's and symm's scratch allocates then")
	}
	const n = 200
	impl := Implementation{}
	a := make([]float64, n*n)
	b := make([]float64, n*n)
	c := make([]float64, n*n)
	x := make([]float64, n)
	y := make([]float64, n)
	for i := range a {
		a[i] = float64(i%7) / 7
		b[i] = float64(i%5) / 5
	}
	for i := range n {
		a[i*n+i] += n
		x[i] = float64(i)
	}
	calls := []struct {
		name string
		f    func()
	}{
		{"Ddot", func() { impl.Ddot(n, x, 1, y, 1) }},
		{"Dnrm2", func() { impl.Dnrm2(n, x, 1) }},
		{"Idamax", func() { impl.Idamax(n, x, 1) }},
		{"Dswap", func() { impl.Dswap(n, x, 1, y, 1) }},
		{"Daxpy", func() { impl.Daxpy(n, 0.5, x, 1, y, 1) }},
		{"Dgemv", func() { impl.Dgemv(blas.Trans, n, n, 1, a, n, x, 1, 0, y, 1) }},
		{"Dger", func() { impl.Dger(n, n, 1e-9, x, 1, y, 1, c, n) }},
		{"Dsymv", func() { impl.Dsymv(blas.Upper, n, 1, a, n, x, 1, 0, y, 1) }},
		{"Dtrsv", func() { impl.Dtrsv(blas.Lower, blas.Trans, blas.NonUnit, n, a, n, x, 1) }},
		{"Dgemm", func() { impl.Dgemm(blas.NoTrans, blas.Trans, n, n, n, 1, a, n, b, n, 0, c, n) }},
		{"Dsyrk", func() { impl.Dsyrk(blas.Upper, blas.Trans, n, n, 1, a, n, 0, c, n) }},
		{"Dtrsm", func() { impl.Dtrsm(blas.Left, blas.Upper, blas.Trans, blas.NonUnit, n, n, 1, a, n, b, n) }},
		{"Dsyr2k", func() { impl.Dsyr2k(blas.Lower, blas.NoTrans, n, n, 1, a, n, b, n, 0, c, n) }},
		{"Dsymm", func() { impl.Dsymm(blas.Right, blas.Lower, n, n, 1, a, n, b, n, 0, c, n) }},
		{"Dtrmm", func() { impl.Dtrmm(blas.Right, blas.Lower, blas.NoTrans, blas.Unit, n, n, 1e-3, a, n, b, n) }},
	}
	for _, tc := range calls {
		tc.f() // warm-up: the worker pool, packing buffers, scratch
		if got := testing.AllocsPerRun(20, tc.f); got != 0 {
			t.Errorf("%s: %v allocations per call", tc.name, got)
		}
	}
}
