package tensor

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/lanesgo/lanes/simd"
)

// The benchmarks pair each tensor operation (GOMAXPROCS goroutines) with
// its anchor: the same elements through the simd kernel on one goroutine
// (BenchmarkX/simd-1thread), so the ratio comes from one run.

func oneThread(b *testing.B) func() {
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

func BenchmarkBroadcastAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, row, dst := RandN(r, 4096, 1024), RandN(r, 1024), New(4096, 1024)
	b.Run("tensor/4096x1024+1024", func(b *testing.B) {
		b.SetBytes(3 * 4 * 4096 * 1024)
		for b.Loop() {
			AddInto(dst, x, row)
		}
	})
	b.Run("simd-1thread/4096x1024+4096x1024", func(b *testing.B) {
		defer oneThread(b)()
		full := row.BroadcastTo(4096, 1024).Clone().Data()
		b.SetBytes(3 * 4 * 4096 * 1024)
		for b.Loop() {
			simd.Add(dst.Data(), x.Data(), full)
		}
	})
}

func BenchmarkSoftmax(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	x, dst := RandN(r, 4096, 1024), New(4096, 1024)
	b.Run("tensor/4096x1024", func(b *testing.B) {
		b.SetBytes(2 * 4 * 4096 * 1024)
		for b.Loop() {
			SoftmaxInto(dst, x, -1)
		}
	})
	b.Run("simd-1thread/4096x1024", func(b *testing.B) {
		defer oneThread(b)()
		xd, dd := x.Data(), dst.Data()
		b.SetBytes(2 * 4 * 4096 * 1024)
		for b.Loop() {
			for i := 0; i < 4096; i++ {
				simd.Softmax(dd[i*1024:(i+1)*1024], xd[i*1024:(i+1)*1024])
			}
		}
	})
}

// BenchmarkBatchedMatMul compares 64 products of 128×128 matrices with one
// Sgemm of the same multiply-adds (8192×128 @ 128×128), both on GOMAXPROCS
// goroutines.
func BenchmarkBatchedMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	a, w, dst := RandN(r, 64, 128, 128), RandN(r, 64, 128, 128), New(64, 128, 128)
	flops := 2 * 64 * 128 * 128 * 128.0
	b.Run("tensor/64x128x128x128", func(b *testing.B) {
		for b.Loop() {
			MatMulInto(dst, a, w)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("sgemm/8192x128x128", func(b *testing.B) {
		for b.Loop() {
			simd.Sgemm(false, false, 8192, 128, 128, 1, a.Data(), 128, w.Data()[:128*128], 128, 0, dst.Data(), 128)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
