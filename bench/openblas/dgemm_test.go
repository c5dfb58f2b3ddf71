//go:build openblas

package openblas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/simd"
)

func randf64(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.Float64()*2 - 1
	}
	return s
}

// TestDgemmMatchesOpenBLAS compares simd.Dgemm with OpenBLAS's dgemm on
// every transpose, padded strides and alpha, beta != 1: the two may differ
// only by the rounding of two float64 dot products, 2·k·2⁻⁵³·Σ|A||B| an
// element (values in [-1, 1): within 2k·2⁻⁵³·k).
func TestDgemmMatchesOpenBLAS(t *testing.T) {
	t.Log(Config())
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][3]int{{1, 1, 1}, {15, 17, 13}, {64, 33, 129}, {200, 300, 517}} {
		m, n, k := s[0], s[1], s[2]
		for tr := 0; tr < 4; tr++ {
			ta, tb := tr&1 != 0, tr&2 != 0
			lda, ldb, ldc := k+3, n+1, n+2
			if ta {
				lda = m + 3
			}
			if tb {
				ldb = k + 1
			}
			a, b := randf64(r, max(m, k)*lda), randf64(r, max(n, k)*ldb)
			c := randf64(r, m*ldc)
			got, want := slices.Clone(c), slices.Clone(c)
			simd.Dgemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, -0.5, got, ldc)
			Dgemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, -0.5, want, ldc)
			bound := 2 * float64(k+2) * 0x1p-53 * 1.5 * float64(k)
			for i := range got {
				if math.Abs(got[i]-want[i]) > bound {
					t.Fatalf("m=%d n=%d k=%d transA=%v transB=%v: C[%d] = %v, OpenBLAS %v", m, n, k, ta, tb, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkDgemm compares simd.Dgemm (at the best level) with OpenBLAS's
// dgemm on n×n×n products, on 1 and GOMAXPROCS threads, together with the
// float64 FMA peak of as many cores (FMAPeak on that many goroutines).
// Each iteration measures the peak, then a block of back-to-back lanes
// calls, then a block of OpenBLAS calls (the first call of a block, which
// wakes its threads, is not timed), with a pause of 150 ms around each
// block so that neither's idle threads still spin (lanes' for LANES_SPIN,
// 2 ms by default; OpenBLAS's for about 2²⁸ cycles) while the other runs.
// The metrics are medians over the iterations: lanes-GFLOP/s,
// openblas-GFLOP/s, peak-GFLOP/s, lanes/openblas and lanes-%peak (both
// medians of per-iteration ratios). Run with -benchtime=Nx; names:
// BenchmarkDgemm/threads=2/1024.
func BenchmarkDgemm(b *testing.B) {
	b.Log(Config())
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	threads := []int{1}
	if procs > 1 {
		threads = append(threads, procs)
	}
	sizes := []int{256, 512, 1024, 2048}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, th := range threads {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("threads=%d/%d", th, n), func(b *testing.B) {
				runtime.GOMAXPROCS(th)
				SetThreads(th)
				r := rand.New(rand.NewPCG(uint64(n), 7))
				x, y, z := randf64(r, n*n), randf64(r, n*n), make([]float64, n*n)
				flops := 2 * float64(n) * float64(n) * float64(n)
				reps := max(3, (1<<30)/(n*n*n))
				block := func(f func()) float64 {
					time.Sleep(150 * time.Millisecond)
					f()
					t0 := time.Now()
					for range reps {
						f()
					}
					return flops * float64(reps) / time.Since(t0).Seconds() / 1e9
				}
				lanes := func() { simd.Dgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n) }
				blas := func() { Dgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n) }
				var lg, og, pg, ratio, share []float64
				for b.Loop() {
					p := PeakGFLOPs(th, 20*time.Millisecond)
					l, o := block(lanes), block(blas)
					lg, og, pg = append(lg, l), append(og, o), append(pg, p)
					ratio, share = append(ratio, l/o), append(share, 100*l/p)
				}
				b.ReportMetric(median(lg), "lanes-GFLOP/s")
				b.ReportMetric(median(og), "openblas-GFLOP/s")
				b.ReportMetric(median(pg), "peak-GFLOP/s")
				b.ReportMetric(median(ratio), "lanes/openblas")
				b.ReportMetric(median(share), "lanes-%peak")
			})
		}
	}
	b.Log("lanes level:", dispatch.Active())
}

func median(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}
