// Package gonummat times gonum's mat package (Dense.Mul, Cholesky, LU,
// SVD) with several blas64 implementations installed in turn, in one
// process: gonum's own, lanesblas, and (cmd/gonummat, -tags openblas)
// OpenBLAS through gonum's netlib cgo wrapper. Every round installs each
// implementation in turn (the order rotating from round to round), pauses
// so that the previous one's idle threads stop spinning, warms up with one
// call and times a block of back-to-back calls; the tables show the median
// per-call time over the rounds. Each implementation's result is checked
// against gonum's (the product, the factor's log-determinant, the singular
// values) before any timing is reported.
package gonummat

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/mat"
)

// Impl is one blas64 implementation under test.
type Impl struct {
	Name string
	BLAS blas.Float64
}

// Config is one run.
type Config struct {
	// Impls are the implementations, the reference first (its results are
	// the ones the others are checked against); Subject names the one the
	// speed-up columns are about (lanes).
	Impls   []Impl
	Subject string
	// MulSizes are the n of the n×n Dense.Mul cases, FactorN the n of
	// Cholesky and LU, SVDN the n of the SVD (0 leaves a case out).
	MulSizes      []int
	FactorN, SVDN int
	Rounds        int           // samples per cell (median shown)
	MinTime       time.Duration // the least time of one timed block
	Pause         time.Duration // idle time before each block
	// Peak, when not nil, measures the float64 FMA peak of the cores the
	// run uses, in GFLOP/s; it runs once per round of the Dense.Mul cases.
	Peak     func() float64
	Progress io.Writer // nil: no progress lines
}

// Case is one operation at one size.
type Case struct {
	Name  string  // "Dense.Mul", "Cholesky", "LU", "SVD"
	N     int     // the matrix order
	Flops float64 // floating-point operations of one call (Dense.Mul: 2n³; others 0, their Factorize includes a condition estimate)
	// Times are the median per-call times, by implementation, in the order
	// of Config.Impls.
	Times []time.Duration
}

// Result is a run's measurements.
type Result struct {
	Config Config
	Cases  []Case
	// Peak is the median of the peak samples (0 without Config.Peak).
	Peak float64
}

// op is a case's work: run is the timed call, check returns the values
// compared between implementations (after a run) and tol their tolerance
// relative to the largest magnitude of the reference's.
type op struct {
	name  string
	n     int
	flops float64
	run   func()
	check func() []float64
	tol   float64
}

func randDense(r *rand.Rand, n int) *mat.Dense {
	d := make([]float64, n*n)
	for i := range d {
		d[i] = r.Float64()
	}
	return mat.NewDense(n, n, d)
}

// spd is a symmetric positive definite n×n matrix: X·Xᵀ + n·I.
func spd(r *rand.Rand, n int) *mat.SymDense {
	x := randDense(r, n)
	var s mat.SymDense
	s.SymOuterK(1, x)
	for i := range n {
		s.SetSym(i, i, s.At(i, i)+float64(n))
	}
	return &s
}

const eps = 0x1p-53

func (c Config) ops() []op {
	r := rand.New(rand.NewPCG(22, 5))
	var ops []op
	for _, n := range c.MulSizes {
		x, y := randDense(r, n), randDense(r, n)
		var z mat.Dense
		ops = append(ops, op{
			name: "Dense.Mul", n: n, flops: 2 * float64(n) * float64(n) * float64(n),
			run:   func() { z.Mul(x, y) },
			check: func() []float64 { return slices.Clone(z.RawMatrix().Data) },
			// Elements in [0, 1): each product is a sum of n terms of at
			// most 1, the largest about n/4; two roundings of n·eps·n.
			tol: 2 * float64(n) * eps * 4,
		})
	}
	if n := c.FactorN; n > 0 {
		s := spd(r, n)
		var ch mat.Cholesky
		ops = append(ops, op{
			name: "Cholesky", n: n,
			run: func() {
				if !ch.Factorize(s) {
					panic("gonummat: Cholesky: matrix not positive definite")
				}
			},
			check: func() []float64 { return []float64{ch.LogDet()} },
			tol:   1e-10,
		})
		a := randDense(r, n)
		var lu mat.LU
		ops = append(ops, op{
			name: "LU", n: n,
			run: func() { lu.Factorize(a) },
			check: func() []float64 {
				ld, sign := lu.LogDet()
				return []float64{ld, sign}
			},
			tol: 1e-10,
		})
	}
	if n := c.SVDN; n > 0 {
		a := randDense(r, n)
		var svd mat.SVD
		ops = append(ops, op{
			name: "SVD", n: n,
			run: func() {
				if !svd.Factorize(a, mat.SVDThin) {
					panic("gonummat: SVD did not converge")
				}
			},
			check: func() []float64 { return svd.Values(nil) },
			tol:   1e-11,
		})
	}
	return ops
}

// Run measures every case of c; it fails if an implementation's results
// differ from the reference's beyond the case's tolerance.
func Run(c Config) (*Result, error) {
	if len(c.Impls) == 0 || c.Rounds < 1 {
		return nil, errors.New("gonummat: no implementations or no rounds")
	}
	defer blas64.Use(gonum.Implementation{})
	res := &Result{Config: c}
	var peaks []float64
	for _, o := range c.ops() {
		if err := check(c, o); err != nil {
			return nil, err
		}
		samples := make([][]time.Duration, len(c.Impls))
		for round := range c.Rounds {
			if c.Peak != nil && o.name == "Dense.Mul" {
				peaks = append(peaks, c.Peak())
			}
			for j := range c.Impls {
				i := (round + j) % len(c.Impls)
				blas64.Use(c.Impls[i].BLAS)
				samples[i] = append(samples[i], timeBlock(c, o.run))
			}
		}
		cs := Case{Name: o.name, N: o.n, Flops: o.flops}
		for i, s := range samples {
			cs.Times = append(cs.Times, median(s))
			if c.Progress != nil {
				fmt.Fprintf(c.Progress, "%s n=%d %s: %v\n", o.name, o.n, c.Impls[i].Name, cs.Times[i])
			}
		}
		res.Cases = append(res.Cases, cs)
	}
	if len(peaks) > 0 {
		res.Peak = median(peaks)
	}
	return res, nil
}

// check runs o once with every implementation and compares its values
// with the first implementation's.
func check(c Config, o op) error {
	var ref []float64
	for i, im := range c.Impls {
		blas64.Use(im.BLAS)
		o.run()
		got := o.check()
		if i == 0 {
			ref = got
			continue
		}
		if len(got) != len(ref) {
			return fmt.Errorf("gonummat: %s n=%d: %s gives %d values, %s %d", o.name, o.n, im.Name, len(got), c.Impls[0].Name, len(ref))
		}
		scale := 0.0
		for _, v := range ref {
			scale = max(scale, math.Abs(v))
		}
		for k := range got {
			if !(math.Abs(got[k]-ref[k]) <= o.tol*max(scale, 1)) {
				return fmt.Errorf("gonummat: %s n=%d: %s's value %d is %v, %s's %v (tolerance %.3g)", o.name, o.n, im.Name, k, got[k], c.Impls[0].Name, ref[k], o.tol*max(scale, 1))
			}
		}
	}
	return nil
}

// timeBlock pauses, warms up with one call and returns the per-call time
// of a block of calls lasting at least c.MinTime.
func timeBlock(c Config, f func()) time.Duration {
	time.Sleep(c.Pause)
	t0 := time.Now()
	f()
	one := time.Since(t0)
	reps := 1
	if one > 0 && one < c.MinTime {
		reps = int(c.MinTime/one) + 1
	}
	t0 = time.Now()
	for range reps {
		f()
	}
	return time.Since(t0) / time.Duration(reps)
}

func median[T int64 | float64 | time.Duration](s []T) T {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}
