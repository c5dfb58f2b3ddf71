//go:build !purego

package simd

import (
	"testing"

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
