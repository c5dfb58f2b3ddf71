//go:build !purego

package simd

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lanesgo/lanes/dispatch"
)

// BenchmarkFMAPeak measures this core's vector FMA throughput with the
// generated fmaPeak kernels (independent chains, nothing but FMAs): the
// ceiling the Sgemm figures are a fraction of. GFLOP/s counts 2 per lane.
func BenchmarkFMAPeak(b *testing.B) {
	benchFMAPeak(b, fmaPeakAVX512, fmaPeakAVX2, 16)
}

// BenchmarkFMAPeakF64 is BenchmarkFMAPeak with float64 FMAs (VFMADD231PD,
// half the lanes): the ceiling of the Dgemm figures.
func BenchmarkFMAPeakF64(b *testing.B) {
	benchFMAPeak(b, fmaPeakF64AVX512, fmaPeakF64AVX2, 8)
}

// benchFMAPeak runs the peak kernels of AVX-512 (lanes per zmm) and AVX2
// (half as many per ymm).
func benchFMAPeak(b *testing.B, avx512, avx2 func(int), lanes int) {
	for _, c := range []struct {
		l      dispatch.Level
		f      func(int)
		chains int
		lanes  int
	}{
		{dispatch.AVX512, avx512, 24, lanes},
		{dispatch.AVX2, avx2, 12, lanes / 2},
	} {
		b.Run(c.l.String(), func(b *testing.B) {
			if !dispatch.Supports(c.l) {
				b.Skip("level not available")
			}
			const iters = 1 << 16
			for b.Loop() {
				c.f(iters)
			}
			flops := 2 * float64(c.chains*c.lanes) * iters * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkDgemmPeak alternates blocks of Dgemm calls (n×n×n) with runs of
// the float64 FMA peak kernel doing the same number of flops on as many
// threads (each on its own locked goroutine, at once), and reports both
// rates and Dgemm's share of the peak: on a machine shared with other
// work, both then see the same load, where a peak measured in a separate
// benchmark does not; with two threads the peak is that of both cores
// busy, which is the ceiling of a threaded product. It runs one thread
// and GOMAXPROCS threads. Each iteration runs peak, calls, calls, peak
// (neither is always the one measured first), and a block is at least
// 5 GFLOP (about 50 ms at the peak; several calls when n < 1024): with one
// call against one peak run of a few milliseconds, 512³ showed 55-65% where
// 256³ and 1024³ showed about 80% and BenchmarkDgemm found 512³ no slower
// than 1024³. Metrics: GFLOP/s (Dgemm), peak-GFLOP/s, %peak (total over
// total) and median-%peak (of the per-iteration ratios). Names:
// BenchmarkDgemmPeak/avx512/threads=1/1024.
func BenchmarkDgemmPeak(b *testing.B) {
	benchGemmPeak(b, dgemmAPI, fmaPeakF64AVX512, fmaPeakF64AVX2, 8)
}

// BenchmarkSgemmPeak is BenchmarkDgemmPeak for Sgemm and the float32 peak.
func BenchmarkSgemmPeak(b *testing.B) {
	benchGemmPeak(b, sgemmAPI, fmaPeakAVX512, fmaPeakAVX2, 16)
}

func benchGemmPeak[T float](b *testing.B, api gemmAPI[T], avx512, avx2 func(int), lanes int) {
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	threadCounts := []int{1}
	if procs > 1 {
		threadCounts = append(threadCounts, procs)
	}
	sizes := []int{256, 512, 1024, 2048}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, c := range []struct {
		l     dispatch.Level
		peak  func(int)
		flops float64 // per peak iteration
	}{
		{dispatch.AVX512, avx512, 2 * 24 * float64(lanes)},
		{dispatch.AVX2, avx2, 2 * 12 * float64(lanes/2)},
	} {
		for _, threads := range threadCounts {
			for _, n := range sizes {
				b.Run(fmt.Sprintf("%v/threads=%d/%d", c.l, threads, n), func(b *testing.B) {
					if !dispatch.Supports(c.l) {
						b.Skip("level not available")
					}
					dispatch.SetLevel(c.l)
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
					r := rand.New(rand.NewPCG(1, 2))
					x, y, z := randOf[T](r, n*n), randOf[T](r, n*n), make([]T, n*n)
					reps := max(1, int(5e9*float64(threads)/(2*float64(n)*float64(n)*float64(n))))
					flops := 2 * float64(n) * float64(n) * float64(n) * float64(reps) // a block
					call := func() time.Duration {
						t0 := time.Now()
						for range reps {
							api.gemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
						}
						return time.Since(t0)
					}
					call()
					// Peak iterations of a block's flops, split over the threads.
					iters := max(1, int(flops/c.flops/float64(threads)))
					var tg, tp time.Duration
					var ratios []float64
					var wg sync.WaitGroup
					peak := func() time.Duration {
						t0 := time.Now()
						for range threads {
							wg.Add(1)
							go func() {
								defer wg.Done()
								runtime.LockOSThread()
								defer runtime.UnlockOSThread()
								c.peak(iters)
							}()
						}
						wg.Wait()
						return time.Since(t0)
					}
					for b.Loop() {
						p := peak()
						g := call() + call()
						p += peak()
						tg, tp = tg+g, tp+p
						ratios = append(ratios, p.Seconds()/g.Seconds())
					}
					gf := 2 * flops * float64(b.N) / tg.Seconds() / 1e9
					pf := 2 * c.flops * float64(iters*threads) * float64(b.N) / tp.Seconds() / 1e9
					slices.Sort(ratios)
					b.ReportMetric(gf, "GFLOP/s")
					b.ReportMetric(pf, "peak-GFLOP/s")
					b.ReportMetric(100*gf/pf, "%peak")
					b.ReportMetric(100*ratios[len(ratios)/2], "median-%peak")
				})
			}
		}
	}
}
