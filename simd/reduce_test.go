package simd

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// sumBound is the documented error bound n·eps·Σ|terms| (eps = 2⁻²⁴ or
// 2⁻⁵³), plus n times the smallest denormal for products that underflow.
func sumBound[T float](n int, absSum float64) float64 {
	return float64(n)*eps[T]()*absSum + float64(n)*tiny[T]()
}

// exactSums returns Σ x[i], Σ |x[i]| and Σ x[i]·y[i] (y may be nil) with
// twice float64's precision: Ogita, Rump and Oishi's Sum2 and Dot2
// (TwoSum, and TwoProduct through math.FMA). Each result is within
// 2⁻⁵³·|result| + (n·2⁻⁵³)²·Σ|terms| of the exact value (refErr), which
// checkSum adds to the tolerance; for float32 inputs it is far below it.
func exactSums[T float](x, y []T) (sum, abs, dot, dotAbs float64) {
	var s, sc, a, ac, d, dc float64
	for i, v := range x {
		f := float64(v)
		s, sc = twoSumAcc(s, sc, f)
		a, ac = twoSumAcc(a, ac, math.Abs(f))
		if y != nil {
			// The conversion keeps p rounded: Go may otherwise fuse the
			// product into the sums below (arm64 does).
			p := float64(f * float64(y[i]))
			pe := math.FMA(f, float64(y[i]), -p) // p + pe = f·y exactly
			d, dc = twoSumAcc(d, dc, p)
			dc += pe
			dotAbs += math.Abs(p)
		}
	}
	return s + sc, a + ac, d + dc, dotAbs
}

// twoSumAcc adds v to the running sum s, collecting the rounding error of
// the addition (Knuth's TwoSum, exact) in c.
func twoSumAcc(s, c, v float64) (float64, float64) {
	t := s + v
	bv := t - s
	err := (s - (t - bv)) + (v - bv)
	return t, c + err
}

// refErr bounds the error of exactSums' result r over n terms of absolute sum abs.
func refErr(n int, r, abs float64) float64 {
	g := float64(n) * 0x1p-53
	return 0x1p-53*math.Abs(r) + g*g*abs
}

func checkSum[T float](t *testing.T, what string, got T, exact, absSum float64, n int) {
	t.Helper()
	bound := sumBound[T](n, absSum) + refErr(n, exact, absSum)
	if d := math.Abs(float64(got) - exact); !(d <= bound) {
		t.Fatalf("%s: got %v, exact %v, error %g > bound %g", what, got, exact, d, bound)
	}
}

// TestExactSums checks the reference against math/big.
func TestExactSums(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{1, 2, 17, 1000} {
		for _, scale := range []float64{1, 1e-300, 1e300} {
			x, y := make([]float64, n), make([]float64, n)
			fill(r, x, scale, 0)
			fill(r, y, 1, 0)
			sum, abs, dot, dotAbs := exactSums(x, y)
			bs, ba, bd := bigF(0), bigF(0), bigF(0)
			for i := range x {
				bs.Add(bs, bigF(x[i]))
				ba.Add(ba, bigF(math.Abs(x[i])))
				bd.Add(bd, bigF(0).Mul(bigF(x[i]), bigF(y[i])))
			}
			for _, c := range []struct {
				name     string
				got, abs float64
				want     *big.Float
			}{{"sum", sum, abs, bs}, {"abs", abs, abs, ba}, {"dot", dot, dotAbs, bd}} {
				want, _ := c.want.Float64()
				if d := math.Abs(c.got - want); d > refErr(n, want, c.abs)+tiny[float64]() {
					t.Errorf("n=%d scale=%g %s: %v, math/big %v", n, scale, c.name, c.got, want)
				}
			}
		}
	}
}

// bigF is v as a big.Float precise enough for exact sums of float64
// products (their exponents span about 4200 bits).
func bigF(v float64) *big.Float { return new(big.Float).SetPrec(4400).SetFloat64(v) }

// sumScales are the magnitudes TestSums fills with: 1, and ones near each end
// of T's range.
func sumScales[T float]() []T {
	if isF32[T]() {
		return []T{1, 1e-30, 1e20}
	}
	lo, hi := 1e-300, 1e300 // variables: T(constant) must fit float32 too
	return []T{1, T(lo), T(hi)}
}

// sumLengths adds to testLengths lengths in the ranges where the AVX-512 dot
// and sumAbs kernels run their L2 blocks (asm/gen/reduce: l2Min..l2Max bytes
// of input) at both widths, with a remainder after them: 10007 for dot,
// 20011 for both (float32 sumAbs starts at 16384).
var sumLengths = append(append([]int(nil), testLengths...), 10007, 20011)

func TestSums(t *testing.T)    { testSums[float32](t) }
func TestSumsF64(t *testing.T) { testSums[float64](t) }

func testSums[T float](t *testing.T) {
	sum := either[func([]T) T](Sum, SumF64)
	sumAbs := either[func([]T) T](SumAbs, SumAbsF64)
	dot := either[func(a, b []T) T](Dot, DotF64)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(4, uint64(l)))
		for _, n := range sumLengths {
			for _, scale := range sumScales[T]() {
				a, b := newGuardedOf[T](n, n%4), newGuardedOf[T](n, (n+1)%4)
				fill(r, a.s(), scale, 0)
				fill(r, b.s(), 1, 0)
				s, abs, d, dotAbs := exactSums(a.s(), b.s())
				what := fmt.Sprintf("n=%d scale=%g", n, scale)
				checkSum(t, "Sum "+what, sum(a.s()), s, abs, n)
				checkSum(t, "SumAbs "+what, sumAbs(a.s()), abs, abs, n)
				checkSum(t, "Dot "+what, dot(a.s(), b.s()), d, dotAbs, n)
				a.check(t, what)
				b.check(t, what)
			}
		}
	})
}

// TestSumsAnyAddress: a sum's additions are ordered by the elements'
// indexes alone, so the same values give the same bits wherever they lie
// (a copy, a view one element in, another rank's buffer). Reductions
// that aligned their loads to the address broke this (docs/kernels.md).
func TestSumsAnyAddress(t *testing.T)    { testSumsAnyAddress[float32](t) }
func TestSumsAnyAddressF64(t *testing.T) { testSumsAnyAddress[float64](t) }

func testSumsAnyAddress[T float](t *testing.T) {
	sum := either[func([]T) T](Sum, SumF64)
	sumAbs := either[func([]T) T](SumAbs, SumAbsF64)
	dot := either[func(a, b []T) T](Dot, DotF64)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(9, uint64(l)))
		for _, n := range []int{17, 100, 1000, 4099, 20000} {
			x, y := make([]T, n), make([]T, n)
			fill(r, x, 1, 0)
			fill(r, y, 1, 0)
			want := [3]T{sum(x), sumAbs(x), dot(x, y)}
			bx, by := make([]T, n+16), make([]T, n+16)
			for off := range 16 {
				a, b := bx[off:off+n], by[(off*7)%16:(off*7)%16+n]
				copy(a, x)
				copy(b, y)
				got := [3]T{sum(a), sumAbs(a), dot(a, b)}
				for k, name := range []string{"Sum", "SumAbs", "Dot"} {
					if math.Float64bits(float64(got[k])) != math.Float64bits(float64(want[k])) {
						t.Fatalf("n=%d offset %d: %s = %v, at the original address %v", n, off, name, got[k], want[k])
					}
				}
			}
		}
	})
}

func TestSumsSpecial(t *testing.T)    { testSumsSpecial[float32](t) }
func TestSumsSpecialF64(t *testing.T) { testSumsSpecial[float64](t) }

func testSumsSpecial[T float](t *testing.T) {
	sum := either[func([]T) T](Sum, SumF64)
	sumAbs := either[func([]T) T](SumAbs, SumAbsF64)
	dot := either[func(a, b []T) T](Dot, DotF64)
	nan, inf := T(math.NaN()), T(math.Inf(1))
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, n := range []int{1, 7, 8, 15, 16, 17, 64, 65, 200} {
			for _, at := range []int{0, n / 2, n - 1} {
				x, ones := make([]T, n), make([]T, n)
				for i := range ones {
					ones[i] = 1
				}
				x[at] = nan
				if v := sum(x); !isNaN(v) {
					t.Fatalf("Sum with NaN at %d of %d = %v", at, n, v)
				}
				if v := dot(x, ones); !isNaN(v) {
					t.Fatalf("Dot with NaN at %d of %d = %v", at, n, v)
				}
				if v := sumAbs(x); !isNaN(v) {
					t.Fatalf("SumAbs with NaN at %d of %d = %v", at, n, v)
				}
				x[at] = -inf
				if v := sum(x); v != -inf {
					t.Fatalf("Sum with -Inf = %v", v)
				}
				if v := sumAbs(x); v != inf {
					t.Fatalf("SumAbs with -Inf = %v", v)
				}
			}
		}
		if sum(nil) != 0 || sumAbs(nil) != 0 || dot(nil, nil) != 0 {
			t.Fatal("empty reductions are not 0")
		}
		// Overflow is IEEE: the sum of two largest finite values is +Inf.
		if v := sum([]T{maxOf[T](), maxOf[T]()}); v != inf {
			t.Fatalf("Sum overflow = %v", v)
		}
	})
}

// refExtreme returns the extreme by the documented rule (NaN wins) and the
// index of its first occurrence (±0 equal).
func refExtreme[T float](x []T, less func(a, b T) bool) (T, int) {
	m, at := x[0], 0
	for i, v := range x {
		if isNaN(v) {
			return v, i
		}
		if less(m, v) {
			m, at = v, i
		}
	}
	return m, at
}

// extremaOf returns Max, Min, ArgMax and ArgMin at element type T.
func extremaOf[T float]() (maxF, minF func([]T) T, argMax, argMin func([]T) int) {
	return either[func([]T) T](Max, MaxF64), either[func([]T) T](Min, MinF64),
		either[func([]T) int](ArgMax, ArgMaxF64), either[func([]T) int](ArgMin, ArgMinF64)
}

func TestExtrema(t *testing.T)    { testExtrema[float32](t) }
func TestExtremaF64(t *testing.T) { testExtrema[float64](t) }

func testExtrema[T float](t *testing.T) {
	gt := func(a, b T) bool { return a < b }
	lt := func(a, b T) bool { return a > b }
	maxF, minF, argMax, argMin := extremaOf[T]()
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(5, uint64(l)))
		for _, n := range testLengths[1:] {
			for _, every := range []int{0, 97, 13} {
				x := newGuardedOf[T](n, n%4)
				fill(r, x.s(), 1e3, every)
				if every == 0 && n > 3 {
					// Repeated extremes: the first must win.
					x.s()[n/3], x.s()[2*n/3] = 5e3, 5e3
					x.s()[n/4], x.s()[n-1] = -5e3, -5e3
				}
				what := fmt.Sprintf("n=%d specials every %d", n, every)
				checkExtreme(t, "Max "+what, maxF(x.s()), argMax(x.s()), x.s(), gt)
				checkExtreme(t, "Min "+what, minF(x.s()), argMin(x.s()), x.s(), lt)
				x.check(t, what)
			}
		}
	})
}

func checkExtreme[T float](t *testing.T, what string, got T, at int, x []T, less func(a, b T) bool) {
	t.Helper()
	want, wantAt := refExtreme(x, less)
	if isNaN(want) != isNaN(got) || (!isNaN(want) && want != got) {
		t.Fatalf("%s: value %v, want %v", what, got, want)
	}
	if at != wantAt {
		t.Fatalf("%s: index %d (x=%v), want %d (x=%v)", what, at, x[at], wantAt, x[wantAt])
	}
}

// TestExtremaNaNEverywhere puts a single NaN at every position of short slices
// (first lane, every tail lane, every unrolled vector).
func TestExtremaNaNEverywhere(t *testing.T)    { testExtremaNaNEverywhere[float32](t, "") }
func TestExtremaNaNEverywhereF64(t *testing.T) { testExtremaNaNEverywhere[float64](t, "F64") }

func testExtremaNaNEverywhere[T float](t *testing.T, suffix string) {
	maxF, minF, argMax, argMin := extremaOf[T]()
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for n := 1; n <= 140; n++ {
			x := make([]T, n)
			for i := range x {
				x[i] = T(i % 17)
			}
			for at := 0; at < n; at++ {
				x[at] = T(math.NaN())
				if !isNaN(maxF(x)) || !isNaN(minF(x)) || argMax(x) != at || argMin(x) != at {
					t.Fatalf("n=%d NaN at %d: Max=%v Min=%v ArgMax=%d ArgMin=%d", n, at, maxF(x), minF(x), argMax(x), argMin(x))
				}
				x[at] = T(at % 17)
			}
		}
		inf := T(math.Inf(1))
		x := []T{-inf, -inf, 3, inf, inf}
		if maxF(x) != inf || argMax(x) != 3 || minF(x) != -inf || argMin(x) != 0 {
			t.Fatal("infinities")
		}
		if argMax(nil) != -1 || argMin(nil) != -1 {
			t.Fatal("ArgMax/ArgMin of empty slice is not -1")
		}
		expectPanic(t, "simd.Max"+suffix+": empty slice", func() { maxF(nil) })
		expectPanic(t, "simd.Min"+suffix+": empty slice", func() { minF([]T{}) })
	})
}

func TestNorm(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(6, uint64(l)))
		for _, n := range testLengths {
			// Large and tiny scales overflow or underflow a float32 sum of squares.
			for _, scale := range []float32{1, 3e38, 1e-38, 1e-44} {
				x := newGuarded(n, n%4)
				fill(r, x.s(), scale, 0)
				var ss float64
				for _, v := range x.s() {
					ss += float64(v) * float64(v)
				}
				want := float32(math.Sqrt(ss))
				got := Norm(x.s())
				if d := math.Abs(float64(got) - float64(want)); d > ulp(want) {
					t.Fatalf("Norm n=%d scale=%g = %v, want %v", n, scale, got, want)
				}
				x.check(t, "Norm")
			}
		}
		nan, inf := float32(math.NaN()), float32(math.Inf(1))
		if v := Norm([]float32{1, -inf, 2}); v != inf {
			t.Fatalf("Norm with -Inf = %v", v)
		}
		if v := Norm([]float32{1, nan, 2}); !isNaN32(v) {
			t.Fatalf("Norm with NaN = %v", v)
		}
		if v := Norm(nil); v != 0 {
			t.Fatalf("Norm(nil) = %v", v)
		}
	})
}

// refNorm64 is sqrt(Σ x[i]²) with twice float64's precision: the elements
// are scaled by a power of two that keeps the squares in range, the sum of
// squares is exactSums' Dot2 (a pair hi + lo), and the root is corrected to
// first order in lo. Its error is far below NormF64's bound.
func refNorm64(x []float64) float64 {
	big := 0.0
	for _, v := range x {
		big = max(big, math.Abs(v))
	}
	if big == 0 || math.IsInf(big, 0) || math.IsNaN(big) {
		return big
	}
	_, e := math.Frexp(big)
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = math.Ldexp(v, -e) // exact unless below 2^-1074 of big
	}
	var hi, lo float64
	for _, v := range y {
		p := float64(v * v) // rounded, not fused into the sum (see exactSums)
		pe := math.FMA(v, v, -p)
		t := hi + p
		bv := t - hi
		lo += (hi - (t - bv)) + (p - bv) + pe
		hi = t
	}
	hi, lo = hi+lo, lo-((hi+lo)-hi)
	r := math.Sqrt(hi)
	r += (math.FMA(-r, r, hi) + lo) / (2 * r)
	return math.Ldexp(r, e)
}

func TestNormF64(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(6, uint64(l)))
		for _, n := range testLengths {
			// 1e200 and 1e-200 overflow and underflow the plain sum of
			// squares; 1e-310 is all denormals; 1e-160 straddles the
			// threshold of the scaled path.
			for _, scale := range []float64{1, 1e200, 1e-200, 1e-310, 1e-160, 1e150} {
				x := newGuardedOf[float64](n, n%4)
				fill(r, x.s(), scale, 0)
				want := refNorm64(x.s())
				got := NormF64(x.s())
				bound := (float64(n)/2+1)*0x1p-53*want + tiny[float64]()
				if d := math.Abs(got - want); !(d <= bound) {
					t.Fatalf("NormF64 n=%d scale=%g = %v, want %v (error %g > %g)", n, scale, got, want, d, bound)
				}
				x.check(t, "NormF64")
			}
		}
		nan, inf := math.NaN(), math.Inf(1)
		for _, c := range []struct {
			x    []float64
			want float64
		}{
			{[]float64{1, -inf, 2}, inf},
			{[]float64{1, nan, 2}, nan},
			{[]float64{nan, 1, -inf}, inf},
			{[]float64{1e300, inf, nan}, inf},
			{[]float64{math.Ldexp(3, -1070), math.Ldexp(4, -1070)}, math.Ldexp(5, -1070)},
			{[]float64{math.Ldexp(3, 600), math.Ldexp(-4, 600)}, math.Ldexp(5, 600)},
			{[]float64{0, -0.0}, 0},
			{nil, 0},
		} {
			if got := NormF64(c.x); !sameFloat(got, c.want) {
				t.Fatalf("NormF64(%v) = %v, want %v", c.x, got, c.want)
			}
		}
	})
}

func TestReducePanics(t *testing.T) {
	expectPanic(t, "simd.Dot: length mismatch: len(a)=2 len(b)=3", func() { Dot(make([]float32, 2), make([]float32, 3)) })
	expectPanic(t, "simd.DotF64: length mismatch: len(a)=2 len(b)=3", func() { DotF64(make([]float64, 2), make([]float64, 3)) })
}

func TestReduceNoAlloc(t *testing.T) {
	x, y := make([]float32, 1000), make([]float32, 1000)
	x[500] = 1
	x64, y64 := make([]float64, 1000), make([]float64, 1000)
	x64[500] = 1
	tiny64 := []float64{1e-300, 2e-300} // NormF64's scaled path
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for name, f := range map[string]func(){
			"Sum": func() { Sum(x) }, "SumAbs": func() { SumAbs(x) }, "Dot": func() { Dot(x, y) },
			"Max": func() { Max(x) }, "Min": func() { Min(x) }, "ArgMax": func() { ArgMax(x) },
			"ArgMin": func() { ArgMin(x) }, "Norm": func() { Norm(x) },
			"SumF64": func() { SumF64(x64) }, "SumAbsF64": func() { SumAbsF64(x64) }, "DotF64": func() { DotF64(x64, y64) },
			"MaxF64": func() { MaxF64(x64) }, "MinF64": func() { MinF64(x64) }, "ArgMaxF64": func() { ArgMaxF64(x64) },
			"ArgMinF64": func() { ArgMinF64(x64) }, "NormF64": func() { NormF64(x64) },
			"NormF64 scaled": func() { NormF64(tiny64) },
		} {
			if n := testing.AllocsPerRun(20, f); n != 0 {
				t.Errorf("%s: %v allocations per call", name, n)
			}
		}
	})
}

func TestReduceTablesComplete(t *testing.T) {
	checkReduceTable(t, &reduce)
	checkReduceTable(t, &reduceF64)
}

// checkReduceTable checks that no level left a kernel unset.
func checkReduceTable[T float](t *testing.T, tab *table[reduceKernels[T]]) {
	for l := range dispatch.NumLevels {
		k := tab.at(dispatch.Level(l))
		if k == nil {
			continue
		}
		if k.sum == nil || k.sumAbs == nil || k.dot == nil || k.max == nil || k.min == nil ||
			k.sumSquares == nil || k.indexEq == nil || k.indexNaN == nil {
			t.Errorf("level %v: %T table has a nil kernel", dispatch.Level(l), *k)
		}
	}
}

func FuzzDot(f *testing.F)    { fuzzDot(f, Dot) }
func FuzzDotF64(f *testing.F) { fuzzDot(f, DotF64) }

func fuzzDot[T float](f *testing.F, dot func(a, b []T) T) {
	f.Add([]byte("0123456789abcdef0123456789abcdef01234567"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, off uint8) {
		x := floatsOf[T](data)
		o := min(int(off)%4, len(x))
		a := x[o:]
		b := make([]T, len(a))
		for i := range b {
			b[i] = x[len(x)-1-i]
		}
		_, _, exact, abs := exactSums(a, b)
		want := dotGeneric(a, b)
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			got := dot(a, b)
			switch {
			case isNaN(want) || math.IsInf(abs, 0) || math.IsNaN(abs) || abs > float64(maxOf[T]())/2:
				// Non-finite or overflowing inputs: the result depends on the
				// order of additions; only NaN-ness of a NaN input is fixed.
				if math.IsNaN(exact) && !isNaN(got) && !math.IsInf(float64(got), 0) {
					t.Fatalf("Dot = %v, exact NaN", got)
				}
			default:
				checkSum(t, "Dot", got, exact, abs, len(a))
			}
		})
	})
}

func FuzzMax(f *testing.F)    { fuzzMax(f, Max) }
func FuzzMaxF64(f *testing.F) { fuzzMax(f, MaxF64) }

func fuzzMax[T float](f *testing.F, maxF func([]T) T) {
	f.Add([]byte("0123456789abcdef0123456789abcdef01234567"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x := floatsOf[T](data)
		if len(x) == 0 {
			return
		}
		want := maxGeneric(x)
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			if got := maxF(x); isNaN(got) != isNaN(want) || (!isNaN(want) && got != want) {
				t.Fatalf("Max = %v, generic %v", got, want)
			}
		})
	})
}

func FuzzArgMax(f *testing.F) {
	fuzzArgMax(f, ArgMax, []byte("\x00\x00\xc0\x7f0123456789abcdef01234567\x00\x00\xc0\x7f"))
}

func FuzzArgMaxF64(f *testing.F) {
	fuzzArgMax(f, ArgMaxF64, []byte("\x00\x00\x00\x00\x00\x00\xf8\x7f0123456789abcdef01234567\x00\x00\x00\x00\x00\x00\xf8\x7f"))
}

// fuzzArgMax seeds with plain bytes and with NaNs (nan, at both ends).
func fuzzArgMax[T float](f *testing.F, argMax func([]T) int, nan []byte) {
	f.Add([]byte("0123456789abcdef0123456789abcdef01234567"))
	f.Add(nan)
	f.Fuzz(func(t *testing.T, data []byte) {
		x := floatsOf[T](data)
		want := -1
		if len(x) > 0 {
			_, want = refExtreme(x, func(a, b T) bool { return a < b })
		}
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			if got := argMax(x); got != want {
				t.Fatalf("ArgMax = %d, want %d", got, want)
			}
		})
	})
}
