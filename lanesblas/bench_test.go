package lanesblas

import (
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/mat"
)

// BenchmarkDenseMul times mat.Dense.Mul at n = 1024 with gonum's own BLAS and
// with Implementation installed, alternating the two in every iteration of
// one process (so that a loaded machine slows both alike), and reports each
// one's time per product and their ratio.
func BenchmarkDenseMul(b *testing.B) {
	const n = 1024
	r := rand.New(rand.NewPCG(1, 1))
	data := func() []float64 {
		d := make([]float64, n*n)
		for i := range d {
			d[i] = r.Float64()
		}
		return d
	}
	x, y := mat.NewDense(n, n, data()), mat.NewDense(n, n, data())
	var c mat.Dense
	c.Mul(x, y) // allocate c outside the timing
	defer blas64.Use(gonum.Implementation{})
	var tGonum, tLanes time.Duration
	for b.Loop() {
		blas64.Use(gonum.Implementation{})
		t0 := time.Now()
		c.Mul(x, y)
		t1 := time.Now()
		blas64.Use(Implementation{})
		c.Mul(x, y)
		tLanes += time.Since(t1)
		tGonum += t1.Sub(t0)
	}
	b.ReportMetric(float64(tGonum.Nanoseconds())/float64(b.N), "gonum-ns/mul")
	b.ReportMetric(float64(tLanes.Nanoseconds())/float64(b.N), "lanes-ns/mul")
	b.ReportMetric(float64(tGonum)/float64(tLanes), "speedup")
}
