package lanesblas

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// alternate times f with gonum's own BLAS and with Implementation installed,
// the two alternating in every iteration of one process (so that a loaded
// machine slows both alike), and reports each one's time per call and the
// ratio.
func alternate(b *testing.B, f func()) {
	f() // warm up: allocations, the worker pool
	defer blas64.Use(gonum.Implementation{})
	var tGonum, tLanes time.Duration
	for b.Loop() {
		blas64.Use(gonum.Implementation{})
		t0 := time.Now()
		f()
		t1 := time.Now()
		blas64.Use(Implementation{})
		f()
		tLanes += time.Since(t1)
		tGonum += t1.Sub(t0)
	}
	b.ReportMetric(float64(tGonum.Nanoseconds())/float64(b.N), "gonum-ns/op")
	b.ReportMetric(float64(tLanes.Nanoseconds())/float64(b.N), "lanes-ns/op")
	b.ReportMetric(float64(tGonum)/float64(tLanes), "speedup")
}

func randDense(r *rand.Rand, n int) *mat.Dense {
	d := make([]float64, n*n)
	for i := range d {
		d[i] = r.Float64()
	}
	return mat.NewDense(n, n, d)
}

// BenchmarkDenseMul is mat.Dense.Mul at n = 1024.
func BenchmarkDenseMul(b *testing.B) {
	const n = 1024
	r := rand.New(rand.NewPCG(1, 1))
	x, y := randDense(r, n), randDense(r, n)
	var c mat.Dense
	alternate(b, func() { c.Mul(x, y) })
}

// spd returns a symmetric positive definite n×n matrix.
func spd(n int) *mat.SymDense {
	r := rand.New(rand.NewPCG(1, 2))
	x := randDense(r, n)
	var s mat.SymDense
	s.SymOuterK(1, x) // x·xᵀ
	for i := range n {
		s.SetSym(i, i, s.At(i, i)+float64(n))
	}
	return &s
}

// BenchmarkCholesky is mat.Cholesky.Factorize at n = 1024: gonum's Dpotrf
// (Dsyrk, Dtrsm and Dgemm on blocks, Dpotf2 on the diagonal ones), then
// the condition estimate Dpocon, whose Dlatrs runs Level 1 routines down
// the columns of the row-major factor (increments of n: gonum's own here
// too).
func BenchmarkCholesky(b *testing.B) {
	s := spd(1024)
	var ch mat.Cholesky
	alternate(b, func() {
		if !ch.Factorize(s) {
			b.Fatal("not positive definite")
		}
	})
}

// BenchmarkDpotrf is the factorization alone (lapack64.Potrf, upper, as
// mat.Cholesky calls it) at n = 1024, on a fresh copy each time.
func BenchmarkDpotrf(b *testing.B) {
	const n = 1024
	s := spd(n)
	src := s.RawSymmetric()
	work := blas64.Symmetric{N: n, Stride: n, Data: make([]float64, n*n), Uplo: blas.Upper}
	alternate(b, func() {
		copy(work.Data, src.Data)
		if _, ok := lapack64.Potrf(work); !ok {
			b.Fatal("not positive definite")
		}
	})
}

// BenchmarkLevel3 is Dsyr2k, Dsymm and Dtrmm (through blas64, so gonum's
// or Implementation as installed) at n = 256 and 1024, square operands.
func BenchmarkLevel3(b *testing.B) {
	for _, n := range []int{256, 1024} {
		r := rand.New(rand.NewPCG(1, 3))
		x, y, z := randDense(r, n), randDense(r, n), randDense(r, n)
		gx, gy, gz := x.RawMatrix(), y.RawMatrix(), z.RawMatrix()
		sym := blas64.Symmetric{N: n, Stride: n, Data: gx.Data, Uplo: blas.Lower}
		tri := blas64.Triangular{N: n, Stride: n, Data: gx.Data, Uplo: blas.Upper, Diag: blas.Unit}
		symC := blas64.Symmetric{N: n, Stride: n, Data: gz.Data, Uplo: blas.Upper}
		b.Run(fmt.Sprintf("Dsyr2k/n=%d", n), func(b *testing.B) {
			alternate(b, func() { blas64.Syr2k(blas.NoTrans, 1, gx, gy, 0, symC) })
		})
		b.Run(fmt.Sprintf("Dsymm/n=%d", n), func(b *testing.B) {
			alternate(b, func() { blas64.Symm(blas.Left, 1, sym, gy, 0, gz) })
		})
		b.Run(fmt.Sprintf("Dtrmm/n=%d", n), func(b *testing.B) {
			// A unit upper triangle with off-diagonal elements in [0, 1/n²):
			// repeated products stay bounded.
			for i := range n {
				for j := i + 1; j < n; j++ {
					gx.Data[i*n+j] /= float64(n * n)
				}
			}
			alternate(b, func() { blas64.Trmm(blas.Right, blas.NoTrans, 1, tri, gy) })
		})
	}
}
