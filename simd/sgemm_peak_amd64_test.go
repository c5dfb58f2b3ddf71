//go:build !purego

package simd

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
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

// BenchmarkDgemmPeak alternates one Dgemm call (one thread, n×n×n) with a
// run of the float64 FMA peak kernel of about the same duration, and
// reports both rates and Dgemm's share of the peak: on a machine shared
// with other work, both then see the same load, where a peak measured in
// a separate benchmark does not. Metrics: GFLOP/s (Dgemm), peak-GFLOP/s,
// %peak (total over total) and median-%peak (of the per-call ratios).
// Names: BenchmarkDgemmPeak/avx512/1024.
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
	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
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
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%v/%d", c.l, n), func(b *testing.B) {
				if !dispatch.Supports(c.l) {
					b.Skip("level not available")
				}
				dispatch.SetLevel(c.l)
				r := rand.New(rand.NewPCG(1, 2))
				x, y, z := randOf[T](r, n*n), randOf[T](r, n*n), make([]T, n*n)
				flops := 2 * float64(n) * float64(n) * float64(n)
				call := func() time.Duration {
					t0 := time.Now()
					api.gemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
					return time.Since(t0)
				}
				call()
				// Peak iterations of about one call's flops at the peak.
				iters := max(1, int(flops/c.flops))
				var tg, tp time.Duration
				var ratios []float64
				for b.Loop() {
					t0 := time.Now()
					c.peak(iters)
					p := time.Since(t0)
					g := call()
					tg, tp = tg+g, tp+p
					ratios = append(ratios, p.Seconds()/(c.flops*float64(iters))*flops/g.Seconds())
				}
				gf, pf := flops*float64(b.N)/tg.Seconds()/1e9, c.flops*float64(iters)*float64(b.N)/tp.Seconds()/1e9
				slices.Sort(ratios)
				b.ReportMetric(gf, "GFLOP/s")
				b.ReportMetric(pf, "peak-GFLOP/s")
				b.ReportMetric(100*gf/pf, "%peak")
				b.ReportMetric(100*ratios[len(ratios)/2], "median-%peak")
			})
		}
	}
}
