package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// farLength reaches the kernels' far path (asm/gen/reduce: farMin bytes of
// input and more, a software prefetch ahead of every line) at both widths
// for every reduction (float32 Sum from 2^18 elements, float64 Dot from
// 2^16), and leaves a remainder after the last block: a part of a block, a
// vector and a tail of 3.
const farLength = 1<<18 + 8 + 3

func TestSumsFar(t *testing.T)    { testSumsFar[float32](t) }
func TestSumsFarF64(t *testing.T) { testSumsFar[float64](t) }

func testSumsFar[T float](t *testing.T) {
	sum := either[func([]T) T](Sum, SumF64)
	sumAbs := either[func([]T) T](SumAbs, SumAbsF64)
	dot := either[func(a, b []T) T](Dot, DotF64)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(11, uint64(l)))
		// 2^20+11: past farMax for dot (16 and 8 MB), which takes its L2 loop.
		for _, n := range []int{farLength, farLength + 61, 1<<20 + 11} {
			a, b := newGuardedOf[T](n, 1), newGuardedOf[T](n, 2)
			fill(r, a.s(), 1, 0)
			fill(r, b.s(), 1, 0)
			for i := range a.s() {
				if i%3 == 0 {
					a.s()[i] = -a.s()[i] // sumAbs differs from sum
				}
			}
			s, abs, d, dotAbs := exactSums(a.s(), b.s())
			what := fmt.Sprintf("n=%d", n)
			got := [3]T{sum(a.s()), sumAbs(a.s()), dot(a.s(), b.s())}
			checkSum(t, "Sum "+what, got[0], s, abs, n)
			checkSum(t, "SumAbs "+what, got[1], abs, abs, n)
			checkSum(t, "Dot "+what, got[2], d, dotAbs, n)
			a.check(t, what)
			b.check(t, what)
			// The same values elsewhere give the same bits.
			x, y := make([]T, n+5), make([]T, n+7)
			copy(x[5:], a.s())
			copy(y[7:], b.s())
			moved := [3]T{sum(x[5:]), sumAbs(x[5:]), dot(x[5:], y[7:])}
			for k, name := range []string{"Sum", "SumAbs", "Dot"} {
				if math.Float64bits(float64(moved[k])) != math.Float64bits(float64(got[k])) {
					t.Fatalf("%s %s: %v at another address, %v at the first", name, what, moved[k], got[k])
				}
			}
		}
	})
}

func TestExtremaFar(t *testing.T)    { testExtremaFar[float32](t) }
func TestExtremaFarF64(t *testing.T) { testExtremaFar[float64](t) }

func testExtremaFar[T float](t *testing.T) {
	gt := func(a, b T) bool { return a < b }
	lt := func(a, b T) bool { return a > b }
	maxF, minF, argMax, argMin := extremaOf[T]()
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(12, uint64(l)))
		n := farLength
		x := newGuardedOf[T](n, 3)
		fill(r, x.s(), 1e3, 0)
		// The extremes in the prefetched blocks, in the remainder, at the end.
		for _, at := range []int{0, 1, 4097, n/2 + 9, n - 20, n - 1} {
			s := x.s()
			keep := s[at]
			for _, v := range []T{5e3, -5e3, T(math.Inf(1)), T(math.Inf(-1))} {
				s[at] = v
				what := fmt.Sprintf("n=%d %v at %d", n, v, at)
				checkExtreme(t, "Max "+what, maxF(s), argMax(s), s, gt)
				checkExtreme(t, "Min "+what, minF(s), argMin(s), s, lt)
			}
			s[at] = T(math.NaN())
			if !isNaN(maxF(s)) || !isNaN(minF(s)) {
				t.Fatalf("n=%d NaN at %d: Max=%v Min=%v", n, at, maxF(s), minF(s))
			}
			s[at] = keep
		}
		x.check(t, "extrema")
	})
}

func TestNormFarF64(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(13, uint64(l)))
		x := make([]float64, farLength)
		fill(r, x, 3, 0)
		var ss, c float64
		for _, v := range x {
			ss, c = twoSumAcc(ss, c, v*v)
		}
		want := math.Sqrt(ss + c)
		got := NormF64(x)
		if bound := (float64(len(x))/2 + 2) * 0x1p-53 * want; !(math.Abs(got-want) <= bound) {
			t.Fatalf("NormF64 n=%d = %v, want %v within %g", len(x), got, want, bound)
		}
	})
}
