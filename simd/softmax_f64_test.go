package simd

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// The float64 Softmax family against an exact reference (math/big at
// refPrec+40 bits): m = max x, S = Σ e^(x-m) exact, e^(x-m)/S, (x-m) - log S
// and m + log S, each rounded once from the exact value by ulpErr64.

// softmaxRowF64 is one row and its exact results.
type softmaxRowF64 struct {
	name         string
	x            []float64
	soft, lsoft  []*big.Float
	lse, logSumS *big.Float
}

func newSoftmaxRowF64(name string, x []float64) softmaxRowF64 {
	const p = refPrec + 40
	r := softmaxRowF64{name: name, x: x}
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	es := make([]*big.Float, len(x))
	s := bf(0, p)
	for i, v := range x {
		d := new(big.Float).SetPrec(p).Sub(bf(v, p), bf(m, p)) // exact
		if d.Cmp(bf(-2000, p)) < 0 {
			es[i] = bf(0, p) // e^-2000 is far below 2^-1074·S: 0 to every digit that shows
		} else {
			es[i] = bigExp(d)
		}
		s.Add(s, es[i])
	}
	ls := bigLog(s)
	for i, v := range x {
		r.soft = append(r.soft, new(big.Float).SetPrec(p).Quo(es[i], s))
		d := new(big.Float).SetPrec(p).Sub(bf(v, p), bf(m, p))
		r.lsoft = append(r.lsoft, d.Sub(d, ls))
	}
	r.lse = new(big.Float).SetPrec(p).Add(bf(m, p), ls)
	r.logSumS = ls
	return r
}

// softmaxRowsF64 are the measured rows: random rows of every length 0..80
// and some longer ones at three scales (the largest puts most exponentials
// into the denormals or to 0), and rows whose log-sum-exp cancels to near 0.
func softmaxRowsF64() []softmaxRowF64 {
	r := rand.New(rand.NewPCG(21, 22))
	var rows []softmaxRowF64
	lengths := []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 4099}
	if testing.Short() {
		lengths = lengths[:20]
	}
	for _, n := range lengths {
		for _, scale := range []float64{1, 30, 800} {
			x := make([]float64, n)
			fill(r, x, scale, 0)
			rows = append(rows, newSoftmaxRowF64(fmt.Sprintf("n=%d scale=%g", n, scale), x))
		}
	}
	ln2 := math.Ln2
	for i, x := range [][]float64{
		{-ln2, -ln2}, // log-sum-exp = ln2 - fl(ln2) ≈ 2.3e-17
		{-math.Log(4), -math.Log(4), -math.Log(4), -math.Log(4)},
		{-0.45867514538708193, -1},
		{0, -745.5, -1000, -1e300}, // exponentials that round to 0 or the denormals
		{-708.5, 0, -709, -744},
		{1e300, -1e300, 1e300},
	} {
		rows = append(rows, newSoftmaxRowF64(fmt.Sprintf("hard row %d", i), x))
	}
	return rows
}

// ulp64 is the spacing of float64 values at |v| (2^-1074 below 2^-1022).
func ulp64(v float64) float64 {
	_, e := math.Frexp(math.Abs(v))
	return math.Ldexp(1, max(e-53, -1074))
}

// absErr64 is |got - exact| (a finite got).
func absErr64(got float64, exact *big.Float) float64 {
	d := new(big.Float).SetPrec(exact.Prec()).SetFloat64(got)
	d.Sub(d, exact)
	f, _ := d.Abs(d).Float64()
	return f
}

func TestSoftmaxF64(t *testing.T) {
	rows := softmaxRowsF64()
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		var worstSoft, worstLSoft, worstLSoftAbs, worstLSE, worstLSEAbs float64
		var softAt string
		for k, row := range rows {
			n := len(row.x)
			fn := float64(n)
			x := newGuardedOf[float64](n, k%4)
			copy(x.s(), row.x)
			d := newGuardedOf[float64](n, (k+1)%4)
			SoftmaxF64(d.s(), x.s())
			d.check(t, "SoftmaxF64")
			x.check(t, "SoftmaxF64")
			var sum float64
			for i, v := range d.s() {
				e := ulpErr64(v, row.soft[i])
				want, _ := row.soft[i].Float64()
				// 2 ULP plus the sum's relative error n·2^-53.
				if bound := 2 + fn*0x1p-53*want/ulp64(want); !(e <= bound) {
					t.Fatalf("SoftmaxF64 %s: [%d] x=%v got %v want %v (%.3f ULP > %.3f)", row.name, i, row.x[i], v, want, e, bound)
				}
				if e > worstSoft {
					worstSoft, softAt = e, row.name
				}
				sum += v
			}
			if math.Abs(sum-1) > (fn+2)*0x1p-52 {
				t.Fatalf("SoftmaxF64 %s: sums to %v", row.name, sum)
			}
			// In place gives the same bits.
			y := append([]float64(nil), row.x...)
			SoftmaxF64(y, y)
			for i := range y {
				if !sameFloat(y[i], d.s()[i]) {
					t.Fatalf("SoftmaxF64 %s in place differs at %d: %v != %v", row.name, i, y[i], d.s()[i])
				}
			}

			LogSoftmaxF64(d.s(), x.s())
			d.check(t, "LogSoftmaxF64")
			for i, v := range d.s() {
				e := ulpErr64(v, row.lsoft[i])
				want, _ := row.lsoft[i].Float64()
				if bound := 1.5 + (fn+2)*0x1p-53/ulp64(want); !(e <= bound) {
					t.Fatalf("LogSoftmaxF64 %s: [%d] x=%v got %v want %v (%.3f ULP > %.3f)", row.name, i, row.x[i], v, want, e, bound)
				}
				if e <= 1.5 {
					worstLSoft = math.Max(worstLSoft, e)
				} else {
					worstLSoftAbs = math.Max(worstLSoftAbs, absErr64(v, row.lsoft[i]))
				}
			}
			copy(y, row.x)
			LogSoftmaxF64(y, y)
			for i := range y {
				if !sameFloat(y[i], d.s()[i]) {
					t.Fatalf("LogSoftmaxF64 %s in place differs at %d", row.name, i)
				}
			}

			if n == 0 {
				continue
			}
			got := LogSumExpF64(x.s())
			e, a := ulpErr64(got, row.lse), absErr64(got, row.lse)
			ls, _ := row.logSumS.Float64()
			if abs := (fn + 2 + math.Abs(ls)) * 0x1p-53; !(e <= 1 || a <= abs) {
				t.Fatalf("LogSumExpF64 %s: got %v want %s (%.3f ULP > 1, and %.3g > %.3g absolute)", row.name, got, row.lse.Text('g', 20), e, a, abs)
			}
			if e <= 1 {
				worstLSE = math.Max(worstLSE, e)
			} else {
				worstLSEAbs = math.Max(worstLSEAbs, a)
			}
		}
		t.Logf("largest errors over %d rows: SoftmaxF64 %.3f ULP (%s), LogSoftmaxF64 %.3f ULP (%.3g absolute where beyond 1.5 ULP), LogSumExpF64 %.3f ULP (%.3g absolute where beyond 1 ULP)",
			len(rows), worstSoft, softAt, worstLSoft, worstLSoftAbs, worstLSE, worstLSEAbs)
	})
}

// TestExpSumF64Lengths checks the float64 expSum kernel at every level,
// every length 0..257 and a long one, unaligned, with canaries: the stored
// exponentials are exp64Pair's bit for bit, and the sum is theirs within
// the summation bound; the sum-only form gives the same sum.
func TestExpSumF64Lengths(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(23, uint64(l)))
		k := transcendF64.get()
		for _, n := range testLengths {
			x := newGuardedOf[float64](n, (n+3)%4)
			fill(r, x.s(), 800, 5)
			shift := 0.0
			if n > 0 {
				shift = x.s()[r.IntN(n)]
			}
			d := newGuardedOf[float64](n, n%4)
			got := k.expSum(d.s(), x.s(), shift)
			d.check(t, "expSum")
			x.check(t, "expSum")
			want := make([]float64, n)
			wsum := expSumGeneric64(want, x.s(), shift)
			var abs float64
			for i, v := range want {
				if !sameFloat(d.s()[i], v) {
					t.Fatalf("expSum n=%d shift=%v: x[%d]=%v got %v, generic %v", n, shift, i, x.s()[i], d.s()[i], v)
				}
				abs += math.Abs(v)
			}
			only := k.expSum(nil, x.s(), shift)
			for _, s := range []float64{got, only} {
				if !sameFloat(s, wsum) && !(math.Abs(s-wsum) <= float64(n)*0x1p-52*abs) {
					t.Fatalf("expSum n=%d shift=%v: sum %v, generic %v", n, shift, s, wsum)
				}
			}
		}
	})
}

func TestSoftmaxF64SpecialRows(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	rows := map[string][]float64{
		"+Inf":    {1, inf, 2},
		"all-Inf": {-inf, -inf, -inf},
		"NaN":     {1, nan, 2},
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for name, x := range rows {
			d := make([]float64, len(x))
			for _, f := range []func(d, x []float64){SoftmaxF64, LogSoftmaxF64} {
				f(d, x)
				for i, v := range d {
					if v == v {
						t.Fatalf("%s row: [%d] = %g, want NaN (NumPy's result)", name, i, v)
					}
				}
			}
		}
		for _, c := range []struct {
			x    []float64
			want float64
		}{
			{nil, -inf}, {[]float64{-inf, -inf}, -inf}, {[]float64{1, inf}, inf}, {[]float64{1, nan, inf}, nan},
			{[]float64{-inf, 2}, 2}, {[]float64{math.MaxFloat64, math.MaxFloat64}, math.MaxFloat64}, // + ln2, far below its ULP
			{[]float64{-745, -745}, -745 + math.Ln2},
		} {
			if got := LogSumExpF64(c.x); !sameFloat(got, c.want) {
				t.Fatalf("LogSumExpF64(%v) = %v, want %v", c.x, got, c.want)
			}
		}
		SoftmaxF64(nil, nil)
		LogSoftmaxF64(nil, nil)
		// One dominant element: exact 0s and 1; -Inf elements give 0 and -Inf.
		d := make([]float64, 4)
		SoftmaxF64(d, []float64{-1e300, 0, -1e300, -inf})
		if d[0] != 0 || d[1] != 1 || d[2] != 0 || d[3] != 0 {
			t.Fatalf("SoftmaxF64(-1e300, 0, -1e300, -Inf) = %v", d)
		}
		LogSoftmaxF64(d, []float64{-1e300, 0, -1e300, -inf})
		if d[0] != -1e300 || d[1] != 0 || d[2] != -1e300 || d[3] != -inf {
			t.Fatalf("LogSoftmaxF64(-1e300, 0, -1e300, -Inf) = %v", d)
		}
	})
}

func TestSoftmaxF64AllocsAndPanics(t *testing.T) {
	x, d := make([]float64, 1000), make([]float64, 1000)
	for i := range x {
		x[i] = float64(i) / 100
	}
	fs := map[string]func(){
		"SoftmaxF64": func() { SoftmaxF64(d, x) }, "LogSoftmaxF64": func() { LogSoftmaxF64(d, x) },
		"LogSumExpF64": func() { LogSumExpF64(x) },
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for name, f := range fs {
			if n := testing.AllocsPerRun(20, f); n != 0 {
				t.Errorf("%s: %v allocations per call", name, n)
			}
		}
	})
	for _, name := range []string{"SoftmaxF64", "LogSoftmaxF64"} {
		f := map[string]func(d, x []float64){"SoftmaxF64": SoftmaxF64, "LogSoftmaxF64": LogSoftmaxF64}[name]
		expectPanic(t, "simd."+name+": length mismatch: len(dst)=2 len(x)=3", func() { f(make([]float64, 2), make([]float64, 3)) })
	}
}
