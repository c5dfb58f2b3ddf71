package simd

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// BenchmarkSgemm reports GFLOP/s (2·m·n·k per call) per level, thread count
// and shape: BenchmarkSgemm/avx512/threads=1/512x512x512.
func BenchmarkSgemm(b *testing.B) { benchGemm(b, sgemmAPI) }

// BenchmarkDgemm is BenchmarkSgemm for Dgemm: BenchmarkDgemm/avx512/threads=1/512x512x512.
// Its ceiling is BenchmarkFMAPeakF64 (half of BenchmarkFMAPeak's figure).
func BenchmarkDgemm(b *testing.B) { benchGemm(b, dgemmAPI) }

func benchGemm[T float](b *testing.B, api gemmAPI[T]) {
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
					a, bb, c := randOf[T](r, m*k), randOf[T](r, k*n), make([]T, m*n)
					api.gemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
					b.ResetTimer()
					for b.Loop() {
						api.gemm(false, false, m, n, k, 1, a, k, bb, n, 0, c, n)
					}
					b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkSgemmDirect compares, on small shapes, the packed path with the
// unpacked one (rows of Axpy, or of Dot for transposed B) at the active
// level; it measured useDirect's rule (LANES_GEMM_SHAPES=1x256x128,...
// picks the shapes). Names:
// BenchmarkSgemmDirect/avx512/NN/16x16x16/packed.
func BenchmarkSgemmDirect(b *testing.B) { benchGemmDirect(b, sgemmAPI) }

// BenchmarkDgemmDirect is BenchmarkSgemmDirect for Dgemm.
func BenchmarkDgemmDirect(b *testing.B) { benchGemmDirect(b, dgemmAPI) }

func benchGemmDirect[T float](b *testing.B, api gemmAPI[T]) {
	shapes := [][3]int{
		{2, 2, 2}, {4, 4, 4}, {8, 8, 8}, {12, 12, 12}, {16, 16, 16}, {24, 24, 24}, {32, 32, 32}, {48, 48, 48}, {64, 64, 64},
		{1, 256, 128}, {1, 1024, 1024}, {4, 256, 128}, {16, 64, 256}, {64, 8, 64}, {100, 3, 100},
		{2, 256, 128}, {6, 256, 128}, {8, 256, 128}, {12, 256, 128}, {8, 32, 256}, {8, 1024, 1024}, {16, 1024, 1024},
		{64, 16, 256}, {256, 4, 256}, {8, 64, 64},
	}
	if f := os.Getenv("LANES_GEMM_SHAPES"); f != "" { // e.g. "1x256x128,8x64x64"
		shapes = nil
		for _, s := range strings.Split(f, ",") {
			var m, n, k int
			fmt.Sscanf(s, "%dx%dx%d", &m, &n, &k)
			shapes = append(shapes, [3]int{m, n, k})
		}
	}
	prev := dispatch.Active()
	defer func() { dispatch.SetLevel(prev); gemmForce = 0 }()
	for _, l := range dispatch.Levels() {
		dispatch.SetLevel(l)
		for _, tb := range []bool{false, true} {
			for _, s := range shapes {
				m, n, k := s[0], s[1], s[2]
				r := rand.New(rand.NewPCG(1, 2))
				a, bb, c := randOf[T](r, m*k), randOf[T](r, k*n), make([]T, m*n)
				ldb := n
				if tb {
					ldb = k
				}
				for _, path := range []string{"packed", "direct"} {
					tr := "NN"
					if tb {
						tr = "NT"
					}
					b.Run(fmt.Sprintf("%v/%s/%dx%dx%d/%s", l, tr, m, n, k, path), func(b *testing.B) {
						gemmForce = 1
						if path == "direct" {
							gemmForce = 2
						}
						for b.Loop() {
							api.gemm(false, tb, m, n, k, 1, a, k, bb, ldb, 0, c, n)
						}
						b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
			}
		}
	}
}
