package lanesblas

import (
	"os"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"gonum.org/v1/gonum/blas/testblas"
)

// forEachLevel runs f at every dispatch level this CPU and build offer (as
// package simd's tests do), failing if LANES_TEST_REQUIRE names a level that
// is not offered.
func forEachLevel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	if req := os.Getenv("LANES_TEST_REQUIRE"); req != "" {
		l, err := dispatch.ParseLevel(req)
		if err != nil {
			t.Fatalf("LANES_TEST_REQUIRE: %v", err)
		}
		if !dispatch.Supports(l) {
			t.Fatalf("LANES_TEST_REQUIRE=%s but this CPU/build supports only %v", req, dispatch.Levels())
		}
	}
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, l := range dispatch.Levels() {
		if _, err := dispatch.SetLevel(l); err != nil {
			t.Fatal(err)
		}
		t.Run(l.String(), f)
	}
}

// TestTestblas runs gonum's own BLAS test suite (blas/testblas, float64: it
// has no float32 tests) against Implementation at every level: the
// routines Implementation overrides, and the ones it delegates (they pass
// through the embedding unchanged, which the suite confirms). The suite's
// Level 3 matrices are small (below recBase, so gonum's unblocked routines
// run there); TestAgainstGonum covers the recursive paths.
func TestTestblas(t *testing.T) {
	impl := Implementation{}
	tests := []struct {
		name string
		f    func(t *testing.T)
	}{
		// Overridden.
		{"Ddot", func(t *testing.T) { testblas.DdotTest(t, impl) }},
		{"Daxpy", func(t *testing.T) { testblas.DaxpyTest(t, impl) }},
		{"Dscal", func(t *testing.T) { testblas.DscalTest(t, impl) }},
		{"Dnrm2", func(t *testing.T) { testblas.Dnrm2Test(t, impl) }},
		{"Dasum", func(t *testing.T) { testblas.DasumTest(t, impl) }},
		{"Idamax", func(t *testing.T) { testblas.IdamaxTest(t, impl) }},
		{"Dcopy", func(t *testing.T) { testblas.DcopyTest(t, impl) }},
		{"Dswap", func(t *testing.T) { testblas.DswapTest(t, impl) }},
		{"Dgemv", func(t *testing.T) { testblas.DgemvTest(t, impl) }},
		{"Dger", func(t *testing.T) { testblas.DgerTest(t, impl) }},
		{"Dgemm", func(t *testing.T) { testblas.TestDgemm(t, impl) }},
		{"Dsyr2k", func(t *testing.T) { testblas.Dsyr2kTest(t, impl) }},
		{"Dsymm", func(t *testing.T) { testblas.DsymmTest(t, impl) }},
		{"Dtrmm", func(t *testing.T) { testblas.DtrmmTest(t, impl) }},
		{"Dsymv", func(t *testing.T) { testblas.DsymvTest(t, impl) }},
		{"Dtrmv", func(t *testing.T) { testblas.DtrmvTest(t, impl) }},
		{"Dtrsv", func(t *testing.T) { testblas.DtrsvTest(t, impl) }},
		{"Dsyrk", func(t *testing.T) { testblas.DsyrkTest(t, impl) }},
		{"Dtrsm", func(t *testing.T) { testblas.DtrsmTest(t, impl) }},
		// Delegated to gonum.
		{"Drot", func(t *testing.T) { testblas.DrotTest(t, impl) }},
		{"Drotm", func(t *testing.T) { testblas.DrotmTest(t, impl) }},
		{"Drotg", func(t *testing.T) { testblas.DrotgTest(t, impl, false) }},
		{"Drotmg", func(t *testing.T) { testblas.DrotmgTest(t, impl) }},
		{"Dtxmv", func(t *testing.T) { testblas.DtxmvTest(t, impl) }},
		{"Dgbmv", func(t *testing.T) { testblas.DgbmvTest(t, impl) }},
		{"Dsyr", func(t *testing.T) { testblas.DsyrTest(t, impl) }},
		{"Dsyr2", func(t *testing.T) { testblas.Dsyr2Test(t, impl) }},
	}
	forEachLevel(t, func(t *testing.T) {
		for _, tc := range tests {
			t.Run(tc.name, tc.f)
		}
	})
}
