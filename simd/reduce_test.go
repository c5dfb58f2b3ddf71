package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// sumBound is the documented error bound n·2⁻²⁴·Σ|terms|, plus n times the
// smallest denormal for products that underflow.
func sumBound(n int, absSum float64) float64 {
	return float64(n)*math.Ldexp(absSum, -24) + float64(n)*math.SmallestNonzeroFloat32
}

func checkSum(t *testing.T, what string, got float32, exact, absSum float64, n int) {
	t.Helper()
	if d := math.Abs(float64(got) - exact); !(d <= sumBound(n, absSum)) {
		t.Fatalf("%s: got %v, exact %v, error %g > bound %g", what, got, exact, d, sumBound(n, absSum))
	}
}

func TestSums(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(4, uint64(l)))
		for _, n := range testLengths {
			for _, scale := range []float32{1, 1e-30, 1e20} {
				a, b := newGuarded(n, n%4), newGuarded(n, (n+1)%4)
				fill(r, a.s(), scale, 0)
				fill(r, b.s(), 1, 0)
				var sum, abs, dot, dotAbs float64
				for i, v := range a.s() {
					sum += float64(v)
					abs += math.Abs(float64(v))
					p := float64(v) * float64(b.s()[i])
					dot += p
					dotAbs += math.Abs(p)
				}
				what := fmt.Sprintf("n=%d scale=%g", n, scale)
				checkSum(t, "Sum "+what, Sum(a.s()), sum, abs, n)
				checkSum(t, "SumAbs "+what, SumAbs(a.s()), abs, abs, n)
				checkSum(t, "Dot "+what, Dot(a.s(), b.s()), dot, dotAbs, n)
				a.check(t, what)
				b.check(t, what)
			}
		}
	})
}

func TestSumsSpecial(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, n := range []int{1, 7, 8, 15, 16, 17, 64, 65, 200} {
			for _, at := range []int{0, n / 2, n - 1} {
				x, ones := make([]float32, n), make([]float32, n)
				for i := range ones {
					ones[i] = 1
				}
				x[at] = nan
				if v := Sum(x); !isNaN32(v) {
					t.Fatalf("Sum with NaN at %d of %d = %v", at, n, v)
				}
				if v := Dot(x, ones); !isNaN32(v) {
					t.Fatalf("Dot with NaN at %d of %d = %v", at, n, v)
				}
				if v := SumAbs(x); !isNaN32(v) {
					t.Fatalf("SumAbs with NaN at %d of %d = %v", at, n, v)
				}
				x[at] = -inf
				if v := Sum(x); v != -inf {
					t.Fatalf("Sum with -Inf = %v", v)
				}
				if v := SumAbs(x); v != inf {
					t.Fatalf("SumAbs with -Inf = %v", v)
				}
			}
		}
		if Sum(nil) != 0 || SumAbs(nil) != 0 || Dot(nil, nil) != 0 {
			t.Fatal("empty reductions are not 0")
		}
		// Overflow is IEEE: the sum of two MaxFloat32 is +Inf.
		if v := Sum([]float32{math.MaxFloat32, math.MaxFloat32}); v != inf {
			t.Fatalf("Sum overflow = %v", v)
		}
	})
}

// refExtreme returns the extreme by the documented rule (NaN wins) and the
// index of its first occurrence (±0 equal).
func refExtreme(x []float32, less func(a, b float32) bool) (float32, int) {
	m, at := x[0], 0
	for i, v := range x {
		if isNaN32(v) {
			return v, i
		}
		if less(m, v) {
			m, at = v, i
		}
	}
	return m, at
}

func TestExtrema(t *testing.T) {
	gt := func(a, b float32) bool { return a < b }
	lt := func(a, b float32) bool { return a > b }
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(5, uint64(l)))
		for _, n := range testLengths[1:] {
			for _, every := range []int{0, 97, 13} {
				x := newGuarded(n, n%4)
				fill(r, x.s(), 1e3, every)
				if every == 0 && n > 3 {
					// Repeated extremes: the first must win.
					x.s()[n/3], x.s()[2*n/3] = 5e3, 5e3
					x.s()[n/4], x.s()[n-1] = -5e3, -5e3
				}
				what := fmt.Sprintf("n=%d specials every %d", n, every)
				checkExtreme(t, "Max "+what, Max(x.s()), ArgMax(x.s()), x.s(), gt)
				checkExtreme(t, "Min "+what, Min(x.s()), ArgMin(x.s()), x.s(), lt)
				x.check(t, what)
			}
		}
	})
}

func checkExtreme(t *testing.T, what string, got float32, at int, x []float32, less func(a, b float32) bool) {
	t.Helper()
	want, wantAt := refExtreme(x, less)
	if isNaN32(want) != isNaN32(got) || (!isNaN32(want) && want != got) {
		t.Fatalf("%s: value %v, want %v", what, got, want)
	}
	if at != wantAt {
		t.Fatalf("%s: index %d (x=%v), want %d (x=%v)", what, at, x[at], wantAt, x[wantAt])
	}
}

// TestExtremaNaNEverywhere puts a single NaN at every position of short slices
// (first lane, every tail lane, every unrolled vector).
func TestExtremaNaNEverywhere(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for n := 1; n <= 140; n++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i % 17)
			}
			for at := 0; at < n; at++ {
				x[at] = float32(math.NaN())
				if !isNaN32(Max(x)) || !isNaN32(Min(x)) || ArgMax(x) != at || ArgMin(x) != at {
					t.Fatalf("n=%d NaN at %d: Max=%v Min=%v ArgMax=%d ArgMin=%d", n, at, Max(x), Min(x), ArgMax(x), ArgMin(x))
				}
				x[at] = float32(at % 17)
			}
		}
		inf := float32(math.Inf(1))
		x := []float32{-inf, -inf, 3, inf, inf}
		if Max(x) != inf || ArgMax(x) != 3 || Min(x) != -inf || ArgMin(x) != 0 {
			t.Fatal("infinities")
		}
		if ArgMax(nil) != -1 || ArgMin(nil) != -1 {
			t.Fatal("ArgMax/ArgMin of empty slice is not -1")
		}
		expectPanic(t, "simd.Max: empty slice", func() { Max(nil) })
		expectPanic(t, "simd.Min: empty slice", func() { Min([]float32{}) })
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

func TestReducePanics(t *testing.T) {
	expectPanic(t, "simd.Dot: length mismatch: len(a)=2 len(b)=3", func() { Dot(make([]float32, 2), make([]float32, 3)) })
}

func TestReduceNoAlloc(t *testing.T) {
	x, y := make([]float32, 1000), make([]float32, 1000)
	x[500] = 1
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for name, f := range map[string]func(){
			"Sum": func() { Sum(x) }, "SumAbs": func() { SumAbs(x) }, "Dot": func() { Dot(x, y) },
			"Max": func() { Max(x) }, "Min": func() { Min(x) }, "ArgMax": func() { ArgMax(x) },
			"ArgMin": func() { ArgMin(x) }, "Norm": func() { Norm(x) },
		} {
			if n := testing.AllocsPerRun(20, f); n != 0 {
				t.Errorf("%s: %v allocations per call", name, n)
			}
		}
	})
}

func TestReduceTablesComplete(t *testing.T) {
	for l := range dispatch.NumLevels {
		k := reduce.at(dispatch.Level(l))
		if k == nil {
			continue
		}
		if k.sum == nil || k.sumAbs == nil || k.dot == nil || k.max == nil || k.min == nil ||
			k.sumSquares64 == nil || k.indexEq == nil || k.indexNaN == nil {
			t.Errorf("level %v: reduce table has a nil kernel", dispatch.Level(l))
		}
	}
}

func FuzzDot(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef01234567"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, off uint8) {
		x := floatsFromBytes(data)
		o := min(int(off)%4, len(x))
		a := x[o:]
		b := make([]float32, len(a))
		var exact, abs float64
		for i := range b {
			b[i] = x[len(x)-1-i]
			p := float64(a[i]) * float64(b[i])
			exact += p
			abs += math.Abs(p)
		}
		want := dotGeneric(a, b)
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			got := Dot(a, b)
			switch {
			case isNaN32(want) || math.IsInf(abs, 0) || math.IsNaN(abs) || abs > math.MaxFloat32/2:
				// Non-finite or overflowing inputs: the result depends on the
				// order of additions; only NaN-ness of a NaN input is fixed.
				if math.IsNaN(exact) && !isNaN32(got) && !math.IsInf(float64(got), 0) {
					t.Fatalf("Dot = %v, exact NaN", got)
				}
			default:
				checkSum(t, "Dot", got, exact, abs, len(a))
			}
		})
	})
}

func FuzzMax(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef01234567"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x := floatsFromBytes(data)
		if len(x) == 0 {
			return
		}
		want := maxGeneric(x)
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			if got := Max(x); isNaN32(got) != isNaN32(want) || (!isNaN32(want) && got != want) {
				t.Fatalf("Max = %v, generic %v", got, want)
			}
		})
	})
}

func FuzzArgMax(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef01234567"))
	f.Add([]byte("\x00\x00\xc0\x7f0123456789abcdef01234567\x00\x00\xc0\x7f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x := floatsFromBytes(data)
		want := -1
		if len(x) > 0 {
			_, want = refExtreme(x, func(a, b float32) bool { return a < b })
		}
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			if got := ArgMax(x); got != want {
				t.Fatalf("ArgMax = %d, want %d", got, want)
			}
		})
	})
}
