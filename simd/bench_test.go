package simd

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

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
func benchInputs(n int) (dst, a, b []float32) { return benchInputsOf[float32](n) }

func benchInputsOf[T float](n int) (dst, a, b []T) {
	r := rand.New(rand.NewPCG(1, 2))
	dst, a, b = make([]T, n), make([]T, n), make([]T, n)
	for i := range a {
		a[i] = 0.5 + unit[T](r)
		b[i] = 0.5 + unit[T](r)
	}
	return
}

// size is the byte size of a T, for SetBytes.
func size[T float]() int64 { return int64(unsafe.Sizeof(T(0))) }

func benchBinary[T float](b *testing.B, f func(dst, a, b []T)) {
	benchLevels(b, func(b *testing.B, n int) {
		dst, x, y := benchInputsOf[T](n)
		b.SetBytes(3 * size[T]() * int64(n))
		for b.Loop() {
			f(dst, x, y)
		}
	})
}

func benchUnary[T float](b *testing.B, f func(dst, x []T)) {
	benchLevels(b, func(b *testing.B, n int) {
		dst, x, _ := benchInputsOf[T](n)
		b.SetBytes(2 * size[T]() * int64(n))
		for b.Loop() {
			f(dst, x)
		}
	})
}

var sinkF float32
var sinkD float64
var sinkI int

func benchReduce[T float](b *testing.B, f func(x []T) T) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x, _ := benchInputsOf[T](n)
		b.SetBytes(size[T]() * int64(n))
		for b.Loop() {
			sinkD = float64(f(x))
		}
	})
}

func benchArg[T float](b *testing.B, f func(x []T) int) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x, _ := benchInputsOf[T](n)
		b.SetBytes(size[T]() * int64(n))
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

func BenchmarkDot(b *testing.B)    { benchDot(b, Dot) }
func BenchmarkDotF64(b *testing.B) { benchDot(b, DotF64) }

func benchDot[T float](b *testing.B, dot func(a, b []T) T) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x, y := benchInputsOf[T](n)
		b.SetBytes(2 * size[T]() * int64(n))
		for b.Loop() {
			sinkD = float64(dot(x, y))
		}
	})
}

// The float64 forms, at the same sizes (SetBytes counts their 8-byte
// elements).
func BenchmarkAddF64(b *testing.B)     { benchBinary(b, AddF64) }
func BenchmarkSubF64(b *testing.B)     { benchBinary(b, SubF64) }
func BenchmarkMulF64(b *testing.B)     { benchBinary(b, MulF64) }
func BenchmarkDivF64(b *testing.B)     { benchBinary(b, DivF64) }
func BenchmarkMaximumF64(b *testing.B) { benchBinary(b, MaximumF64) }
func BenchmarkMinimumF64(b *testing.B) { benchBinary(b, MinimumF64) }
func BenchmarkAddScalarF64(b *testing.B) {
	benchUnary(b, func(d, x []float64) { AddScalarF64(d, x, 1.5) })
}
func BenchmarkScaleF64(b *testing.B) { benchUnary(b, func(d, x []float64) { ScaleF64(d, x, 1.5) }) }
func BenchmarkAbsF64(b *testing.B)   { benchUnary(b, AbsF64) }
func BenchmarkNegF64(b *testing.B)   { benchUnary(b, NegF64) }
func BenchmarkSqrtF64(b *testing.B)  { benchUnary(b, SqrtF64) }
func BenchmarkReLUF64(b *testing.B)  { benchUnary(b, ReLUF64) }
func BenchmarkClampF64(b *testing.B) {
	benchUnary(b, func(d, x []float64) { ClampF64(d, x, 0.75, 1.25) })
}
func BenchmarkAxpyF64(b *testing.B) {
	benchLevels(b, func(b *testing.B, n int) {
		y, x, _ := benchInputsOf[float64](n)
		b.SetBytes(int64(24 * n))
		for b.Loop() {
			AxpyF64(y, 1e-7, x)
		}
	})
}
func BenchmarkSumF64(b *testing.B)    { benchReduce(b, SumF64) }
func BenchmarkSumAbsF64(b *testing.B) { benchReduce(b, SumAbsF64) }
func BenchmarkMaxF64(b *testing.B)    { benchReduce(b, MaxF64) }
func BenchmarkMinF64(b *testing.B)    { benchReduce(b, MinF64) }
func BenchmarkNormF64(b *testing.B)   { benchReduce(b, NormF64) }
func BenchmarkArgMaxF64(b *testing.B) { benchArg(b, ArgMaxF64) }
func BenchmarkArgMinF64(b *testing.B) { benchArg(b, ArgMinF64) }

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

// benchTransF64 is benchTrans for the float64 forms, on the same values.
func benchTransF64(b *testing.B, f func(dst, x []float64), positive bool) {
	benchLevels(b, func(b *testing.B, n int) {
		_, x32 := benchSpread(n, positive)
		dst, x := make([]float64, n), make([]float64, n)
		for i, v := range x32 {
			x[i] = float64(v)
		}
		b.SetBytes(int64(16 * n))
		for b.Loop() {
			f(dst, x)
		}
	})
}

func BenchmarkExpF64(b *testing.B)      { benchTransF64(b, ExpF64, false) }
func BenchmarkLogF64(b *testing.B)      { benchTransF64(b, LogF64, true) }
func BenchmarkSigmoidF64(b *testing.B)  { benchTransF64(b, SigmoidF64, false) }
func BenchmarkSiLUF64(b *testing.B)     { benchTransF64(b, SiLUF64, false) }
func BenchmarkTanhF64(b *testing.B)     { benchTransF64(b, TanhF64, false) }
func BenchmarkSoftplusF64(b *testing.B) { benchTransF64(b, SoftplusF64, false) }
func BenchmarkErfF64(b *testing.B)      { benchTransF64(b, ErfF64, false) }
func BenchmarkGELUF64(b *testing.B)     { benchTransF64(b, GELUF64, false) }
func BenchmarkGELUTanhF64(b *testing.B) { benchTransF64(b, GELUTanhF64, false) }
func BenchmarkELUF64(b *testing.B) {
	benchTransF64(b, func(d, x []float64) { ELUF64(d, x, 1) }, false)
}
func BenchmarkLeakyReLUF64(b *testing.B) {
	benchTransF64(b, func(d, x []float64) { LeakyReLUF64(d, x, 0.01) }, false)
}
func BenchmarkSoftmaxF64(b *testing.B)    { benchTransF64(b, SoftmaxF64, false) }
func BenchmarkLogSoftmaxF64(b *testing.B) { benchTransF64(b, LogSoftmaxF64, false) }
func BenchmarkLogSumExpF64(b *testing.B) {
	benchTransF64(b, func(_, x []float64) { sinkD = LogSumExpF64(x) }, false)
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
