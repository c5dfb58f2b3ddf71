package simd

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// Benchmarks are named Benchmark<Func>/<level>/<n> so benchstat can compare
// them across commits and levels. SetBytes counts every byte a call reads and
// writes (Add at n: 12·n), the convention the peer anchors use, so MB/s is
// memory traffic.

var benchSizes = []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}

// benchSizesFor trims the 10M size in -short runs.
func benchSizesFor(b *testing.B) []int {
	if testing.Short() {
		return benchSizes[:3]
	}
	return benchSizes
}

// benchLevels runs f for every level this CPU supports, restoring the level after.
func benchLevels(b *testing.B, f func(b *testing.B, n int)) {
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, l := range dispatch.Levels() {
		for _, n := range benchSizesFor(b) {
			b.Run(fmt.Sprintf("%v/%d", l, n), func(b *testing.B) {
				if _, err := dispatch.SetLevel(l); err != nil {
					b.Fatal(err)
				}
				f(b, n)
			})
		}
	}
}

// benchInputs returns three slices of length n with values in [0.5, 1.5)
// (positive so Sqrt does real work, away from zero so Div is not special).
func benchInputs(n int) (dst, a, b []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	dst, a, b = make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i] = 0.5 + r.Float32()
		b[i] = 0.5 + r.Float32()
	}
	return
}

func benchBinary(b *testing.B, f func(dst, a, b []float32)) {
	benchLevels(b, func(b *testing.B, n int) {
		dst, x, y := benchInputs(n)
		b.SetBytes(int64(12 * n))
		for b.Loop() {
			f(dst, x, y)
		}
	})
}

func benchUnary(b *testing.B, f func(dst, x []float32)) {
	benchLevels(b, func(b *testing.B, n int) {
		dst, x, _ := benchInputs(n)
		b.SetBytes(int64(8 * n))
		for b.Loop() {
			f(dst, x)
		}
	})
}

var sinkF float32
var sinkI int

func benchReduce(b *testing.B, f func(x []float32) float32) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x, _ := benchInputs(n)
		b.SetBytes(int64(4 * n))
		for b.Loop() {
			sinkF = f(x)
		}
	})
}

func benchArg(b *testing.B, f func(x []float32) int) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x, _ := benchInputs(n)
		b.SetBytes(int64(4 * n))
		for b.Loop() {
			sinkI = f(x)
		}
	})
}

func BenchmarkAdd(b *testing.B)     { benchBinary(b, Add) }
func BenchmarkSub(b *testing.B)     { benchBinary(b, Sub) }
func BenchmarkMul(b *testing.B)     { benchBinary(b, Mul) }
func BenchmarkDiv(b *testing.B)     { benchBinary(b, Div) }
func BenchmarkMaximum(b *testing.B) { benchBinary(b, Maximum) }
func BenchmarkMinimum(b *testing.B) { benchBinary(b, Minimum) }

func BenchmarkAddScalar(b *testing.B) {
	benchUnary(b, func(d, x []float32) { AddScalar(d, x, 1.5) })
}
func BenchmarkScale(b *testing.B) { benchUnary(b, func(d, x []float32) { Scale(d, x, 1.5) }) }
func BenchmarkAbs(b *testing.B)   { benchUnary(b, Abs) }
func BenchmarkNeg(b *testing.B)   { benchUnary(b, Neg) }
func BenchmarkSqrt(b *testing.B)  { benchUnary(b, Sqrt) }
func BenchmarkReLU(b *testing.B)  { benchUnary(b, ReLU) }
func BenchmarkClamp(b *testing.B) {
	benchUnary(b, func(d, x []float32) { Clamp(d, x, 0.75, 1.25) })
}

// BenchmarkAxpy reads x and y and writes y: 12 bytes per element.
func BenchmarkAxpy(b *testing.B) {
	benchLevels(b, func(b *testing.B, n int) {
		y, x, _ := benchInputs(n)
		b.SetBytes(int64(12 * n))
		for b.Loop() {
			Axpy(y, 1e-7, x)
		}
	})
}

func BenchmarkSum(b *testing.B)    { benchReduce(b, Sum) }
func BenchmarkSumAbs(b *testing.B) { benchReduce(b, SumAbs) }
func BenchmarkMax(b *testing.B)    { benchReduce(b, Max) }
func BenchmarkMin(b *testing.B)    { benchReduce(b, Min) }
func BenchmarkNorm(b *testing.B)   { benchReduce(b, Norm) }
func BenchmarkArgMax(b *testing.B) { benchArg(b, ArgMax) }
func BenchmarkArgMin(b *testing.B) { benchArg(b, ArgMin) }

func BenchmarkDot(b *testing.B) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x, y := benchInputs(n)
		b.SetBytes(int64(8 * n))
		for b.Loop() {
			sinkF = Dot(x, y)
		}
	})
}

// benchSpread returns inputs in [-10, 10) (positive in [1e-3, 20) for Log), the
// range activations see.
func benchSpread(n int, positive bool) (dst, x []float32) {
	r := rand.New(rand.NewPCG(3, 4))
	dst, x = make([]float32, n), make([]float32, n)
	for i := range x {
		if positive {
			x[i] = 1e-3 + 20*r.Float32()
		} else {
			x[i] = 20*r.Float32() - 10
		}
	}
	return
}

func benchTrans(b *testing.B, f func(dst, x []float32), positive bool) {
	benchLevels(b, func(b *testing.B, n int) {
		dst, x := benchSpread(n, positive)
		b.SetBytes(int64(8 * n))
		for b.Loop() {
			f(dst, x)
		}
	})
}

func BenchmarkExp(b *testing.B)      { benchTrans(b, Exp, false) }
func BenchmarkLog(b *testing.B)      { benchTrans(b, Log, true) }
func BenchmarkSigmoid(b *testing.B)  { benchTrans(b, Sigmoid, false) }
func BenchmarkSiLU(b *testing.B)     { benchTrans(b, SiLU, false) }
func BenchmarkTanh(b *testing.B)     { benchTrans(b, Tanh, false) }
func BenchmarkSoftplus(b *testing.B) { benchTrans(b, Softplus, false) }
func BenchmarkErf(b *testing.B)      { benchTrans(b, Erf, false) }
func BenchmarkGELU(b *testing.B)     { benchTrans(b, GELU, false) }
func BenchmarkGELUTanh(b *testing.B) { benchTrans(b, GELUTanh, false) }
func BenchmarkELU(b *testing.B) {
	benchTrans(b, func(d, x []float32) { ELU(d, x, 1) }, false)
}
func BenchmarkLeakyReLU(b *testing.B) {
	benchTrans(b, func(d, x []float32) { LeakyReLU(d, x, 0.01) }, false)
}
func BenchmarkSoftmax(b *testing.B)    { benchTrans(b, Softmax, false) }
func BenchmarkLogSoftmax(b *testing.B) { benchTrans(b, LogSoftmax, false) }
func BenchmarkLogSumExp(b *testing.B) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x := benchSpread(n, false)
		b.SetBytes(int64(4 * n))
		for b.Loop() {
			sinkF = LogSumExp(x)
		}
	})
}
