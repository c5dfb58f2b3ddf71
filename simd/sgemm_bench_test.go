package simd

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// BenchmarkSgemm reports GFLOP/s (2·m·n·k per call) per level, thread count
// and shape: BenchmarkSgemm/avx512/threads=1/512x512x512.
func BenchmarkSgemm(b *testing.B) {
	shapes := [][3]int{
		{64, 64, 64}, {128, 128, 128}, {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048},
		{64, 784, 256}, {64, 256, 128}, {256, 3136, 128}, // MLP and conv-as-GEMM shapes
	}
	if testing.Short() {
		shapes = shapes[:4]
	}
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	threadCounts := []int{1}
	if procs > 1 {
		threadCounts = append(threadCounts, procs)
	}
	for _, l := range dispatch.Levels() {
		for _, threads := range threadCounts {
			for _, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				b.Run(fmt.Sprintf("%v/threads=%d/%dx%dx%d", l, threads, m, n, k), func(b *testing.B) {
					if l == dispatch.Generic && m*n*k > 512*512*512 {
						b.Skip("generic level: sizes up to 512 only")
					}
					dispatch.SetLevel(l)
					runtime.GOMAXPROCS(threads)
					r := rand.New(rand.NewPCG(1, 2))
					a, bb, c := randSlice(r, m*k), randSlice(r, k*n), make([]float32, m*n)
					Sgemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
					b.ResetTimer()
					for b.Loop() {
						Sgemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
					}
					b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
