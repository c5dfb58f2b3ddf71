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
	for _, c := range []struct {
		l      dispatch.Level
		f      func(int)
		chains int
		lanes  int
	}{
		{dispatch.AVX512, fmaPeakAVX512, 24, 16},
		{dispatch.AVX2, fmaPeakAVX2, 12, 8},
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
