package lanesblas

import (
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/testlapack"
)

// TestTestlapack runs gonum's LAPACK test suite (lapack/testlapack) for a
// representative set of factorizations and solvers with Implementation
// installed as blas64 (gonum's LAPACK calls blas64.Implementation()), at
// every level: Cholesky (Dpotrf up to n = 500, blocked on Dsyrk, Dtrsm and
// Dgemm), LU, QR, SVD and triangular inversion. The suites' own residual
// checks go through blas64 too, so through Implementation, whose routines
// testblas and TestAgainstGonum check against gonum's.
func TestTestlapack(t *testing.T) {
	if testing.Short() {
		t.Skip("testlapack is long; -short skips it")
	}
	blas64.Use(Implementation{})
	defer blas64.Use(gonum.Implementation{})
	impl := lapackgonum.Implementation{}
	tests := []struct {
		name string
		f    func(t *testing.T)
	}{
		{"Dpotrf", func(t *testing.T) { testlapack.DpotrfTest(t, impl) }},
		{"Dpotrs", func(t *testing.T) { testlapack.DpotrsTest(t, impl) }},
		{"Dgetrf", func(t *testing.T) { testlapack.DgetrfTest(t, impl) }},
		{"Dgetrs", func(t *testing.T) { testlapack.DgetrsTest(t, impl) }},
		{"Dgeqrf", func(t *testing.T) { testlapack.DgeqrfTest(t, impl) }},
		{"Dgesvd", func(t *testing.T) { testlapack.DgesvdTest(t, impl, 1e-13) }},
		{"Dtrtri", func(t *testing.T) { testlapack.DtrtriTest(t, impl) }},
	}
	forEachLevel(t, func(t *testing.T) {
		for _, tc := range tests {
			t.Run(tc.name, tc.f)
		}
	})
}
