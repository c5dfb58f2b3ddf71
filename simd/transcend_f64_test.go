package simd

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// The float64 transcendentals (ExpF64, LogF64, SigmoidF64, TanhF64, SiLUF64,
// SoftplusF64, ErfF64, GELUF64, GELUTanhF64, ELUF64, LeakyReLUF64) are measured in float64 ULPs
// of the exact result (math/big, transcend_ref_test.go, refPrec = 160 bits),
// the float32 rule at float64's spacing: 2^(e-52) for |v| in [2^e, 2^(e+1)),
// 2^-1074 below 2^-1022.

// f64Case is one float64 transcendental: its public function, its generic
// algorithm, the exact reference, its bound and the inputs to measure it on
// (inputs whose result is NaN or ±Inf are TestTranscendF64Special's).
type f64Case struct {
	name  string
	run   func(dst, x []float64)
	gen   func(x float64) float64 // the generic algorithm, one element
	exact func(x float64) *big.Float
	bound float64
	// inputs returns the measured inputs: random over the whole domain and
	// the regions where the algorithm is weakest.
	inputs func(r *rand.Rand, n int) []float64
}

var f64Cases = []f64Case{
	{"ExpF64", ExpF64, exp64, func(x float64) *big.Float { return bigExp(bf(x, refPrec+40)) }, 1, expF64Inputs},
	{"LogF64", LogF64, log64, logExactF64, 1, logF64Inputs},
	{"SigmoidF64", SigmoidF64, sigmoid64, func(x float64) *big.Float { return bigSigmoid(bf(x, refPrec+40)) }, 2, sigmoidF64Inputs},
	{"TanhF64", TanhF64, tanh64, tanhExactF64, 2, tanhF64Inputs},
	{"SiLUF64", SiLUF64, silu64, func(x float64) *big.Float {
		s := bigSigmoid(bf(x, refPrec+40))
		return s.Mul(s, bf(x, refPrec+40))
	}, 2, sigmoidF64Inputs},
	{"SoftplusF64", SoftplusF64, softplus64, softplusExactF64, 2, sigmoidF64Inputs},
	{"ErfF64", ErfF64, erf64, erfExactF64, 1, erfF64Inputs},
	{"GELUF64", GELUF64, gelu64, geluExactF64, 3, geluF64Inputs},
	{"GELUTanhF64", GELUTanhF64, geluTanh64, geluTanhExactF64, 2, geluTanhF64Inputs},
	{"ELUF64", func(dst, x []float64) { ELUF64(dst, x, 1) }, func(x float64) float64 {
		if x > 0 {
			return x
		}
		return elu64(x)
	}, func(x float64) *big.Float {
		if x > 0 {
			return bf(x, refPrec)
		}
		return bigExpm1(bf(x, refPrec+40))
	}, 1, eluF64Inputs},
	// LeakyReLUF64 with alpha = 0.01: one rounded product.
	{"LeakyReLUF64", func(dst, x []float64) { LeakyReLUF64(dst, x, 0.01) }, func(x float64) float64 {
		if x > 0 {
			return x
		}
		return 0.01 * x
	}, func(x float64) *big.Float {
		if x > 0 {
			return bf(x, refPrec)
		}
		return new(big.Float).SetPrec(refPrec).Mul(bf(0.01, refPrec), bf(x, refPrec))
	}, 0.5, func(r *rand.Rand, n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Float64frombits(r.Uint64() % 0x7ff0000000000000)
			if i%2 == 1 {
				xs[i] = -xs[i]
			}
		}
		return xs
	}},
}

// softplusExactF64 is max(x, 0) + log1p(e^-|x|).
func softplusExactF64(x float64) *big.Float {
	const p = refPrec + 40
	l := bigLog1p(bigExp(bf(-math.Abs(x), p)))
	if x > 0 {
		l.Add(l, bf(x, p))
	}
	return l
}

// erfExactF64 is erf from its series up to |x| = 6 and 1 - erfc (the
// continued fraction) beyond; the sign of x put back.
func erfExactF64(x float64) *big.Float {
	const p = refPrec + 40
	a := bf(math.Abs(x), p)
	var e *big.Float
	if math.Abs(x) <= 6 {
		e = bigErf(a)
	} else {
		e = erfcCF(a, p)
		e.Sub(bf(1, p), e)
	}
	if x < 0 {
		e.Neg(e)
	}
	return e
}

// geluExactF64 is x/2·erfc(-x/√2): x/2·erfc(|x|/√2) below 0, x/2·(1 +
// erf(x/√2)) above (2 - erfc beyond x/√2 = 6).
func geluExactF64(x float64) *big.Float {
	const p = refPrec + 40
	if x == 0 {
		return bf(0, p)
	}
	t := new(big.Float).SetPrec(p).Quo(bf(math.Abs(x), p), refConst().sqrt2)
	tf, _ := t.Float64()
	var phi *big.Float // 2·Φ(x)
	switch {
	case x < 0 && tf > 5:
		phi = erfcCF(t, p)
	case x < 0:
		phi = bigErfc(t)
	case tf > 6:
		phi = erfcCF(t, p)
		phi.Sub(bf(2, p), phi)
	default:
		phi = bigErf(t)
		phi.Add(phi, bf(1, p))
	}
	return phi.Mul(phi, bf(x/2, p))
}

// geluTanhExactF64 is x/(1+e^-2u), u = √(2/π)·(x + 0.044715·x³), the
// decimal 0.044715 taken exactly.
func geluTanhExactF64(x float64) *big.Float {
	const p = refPrec + 40
	c := refConst()
	k, _ := new(big.Float).SetPrec(p).SetString("0.044715")
	xb := bf(x, p)
	u := new(big.Float).SetPrec(p).Mul(xb, xb)
	u.Mul(u, xb)
	u.Mul(u, k)
	u.Add(u, xb)
	u.Mul(u, c.sqrt2)
	u.Quo(u, c.sqrtPi)
	u.Mul(u, bf(-2, p))
	e := bigExp(u)
	e.Add(e, bf(1, p))
	return e.Quo(xb, e)
}

// erfF64Inputs: uniform over [-6.5, 6.5], near 0 (down to the denormals),
// and around the approximation's switches 0.84375, 1.25 and 1/0.35.
func erfF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 4 {
		case 0:
			xs = append(xs, (r.Float64()*2-1)*6.5)
		case 1:
			xs = append(xs, (r.Float64()*2-1)*math.Ldexp(1, -r.IntN(1080)))
		case 2:
			b := []float64{0.84375, 1.25, 1 / 0.35, 0.25}[r.IntN(4)]
			xs = append(xs, b*(1+(r.Float64()*2-1)*1e-3))
		default:
			xs = append(xs, -r.Float64()*3)
		}
	}
	return xs
}

// geluF64Inputs: uniform over [-40, 12], near 0 (down to the denormals),
// around the switches √2·{0.25, 0.84375, 1.25, 1/0.35}, and over the
// underflow edge [-39, -36].
func geluF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 5 {
		case 0:
			xs = append(xs, -40+r.Float64()*52)
		case 1:
			xs = append(xs, (r.Float64()*2-1)*math.Ldexp(1, -r.IntN(1080)))
		case 2:
			b := math.Sqrt2 * []float64{0.25, 0.84375, 1.25, 1 / 0.35}[r.IntN(4)]
			x := b * (1 + (r.Float64()*2-1)*1e-3)
			if r.IntN(2) == 0 {
				x = -x
			}
			xs = append(xs, x)
		case 3:
			xs = append(xs, -36-r.Float64()*3)
		default:
			xs = append(xs, (r.Float64()*2-1)*4)
		}
	}
	return xs
}

// geluTanhF64Inputs: uniform over [-26, 12], near 0, over [-4, 4] and the
// underflow edge [-22.5, -20].
func geluTanhF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 4 {
		case 0:
			xs = append(xs, -26+r.Float64()*38)
		case 1:
			xs = append(xs, (r.Float64()*2-1)*math.Ldexp(1, -r.IntN(1080)))
		case 2:
			xs = append(xs, (r.Float64()*2-1)*4)
		default:
			xs = append(xs, -20-r.Float64()*2.5)
		}
	}
	return xs
}

// eluF64Inputs: uniform over [-45, 1], tiny negatives (down to the
// denormals), and the reduction's boundaries -(k+1/2)·ln2.
func eluF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 3 {
		case 0:
			xs = append(xs, -45+r.Float64()*46)
		case 1:
			xs = append(xs, -math.Ldexp(r.Float64(), -r.IntN(1080)))
		default:
			k := float64(r.IntN(60))
			xs = append(xs, -(k+0.5)*math.Ln2+(r.Float64()*2-1)*1e-9)
		}
	}
	return xs
}

// tanhExactF64 is E/(E+2) with E = e^(2|x|) - 1, the sign of x put back.
func tanhExactF64(x float64) *big.Float {
	const p = refPrec + 40
	e := bigExpm1(bf(2*math.Abs(x), p))
	d := new(big.Float).SetPrec(p).Add(e, bf(2, p))
	e.Quo(e, d)
	if x < 0 {
		e.Neg(e)
	}
	return e
}

// sigmoidF64Inputs: uniform over [-40, 40] (where the result is not 0 or 1
// to the last bit), near 0, into the tiny and denormal results below -700,
// and uniform over [-800, 800].
func sigmoidF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 4 {
		case 0:
			xs = append(xs, (r.Float64()*2-1)*40)
		case 1:
			xs = append(xs, (r.Float64()*2-1)*math.Ldexp(1, -r.IntN(60)))
		case 2:
			xs = append(xs, -700-r.Float64()*45)
		default:
			xs = append(xs, (r.Float64()*2-1)*800)
		}
	}
	return xs
}

// tanhF64Inputs: uniform over [-20, 20] (tanh is ±1 in float64 beyond
// 19.06), near 0, at the reduction's boundaries 2|x| = (k+1/2)·ln2, and over
// [-1, 1], where E/(E+2) carries most of the digits.
func tanhF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 4 {
		case 0:
			xs = append(xs, (r.Float64()*2-1)*20)
		case 1:
			xs = append(xs, (r.Float64()*2-1)*math.Ldexp(1, -r.IntN(60)))
		case 2:
			k := float64(r.IntN(60))
			x := (k+0.5)*math.Ln2/2 + (r.Float64()*2-1)*1e-9
			if r.IntN(2) == 0 {
				x = -x
			}
			xs = append(xs, x)
		default:
			xs = append(xs, r.Float64()*2-1)
		}
	}
	return xs
}

func logExactF64(x float64) *big.Float { return bigLog(bf(x, refPrec+40)) }

// expF64Inputs: uniform over the range that neither overflows nor rounds to
// 0, near 0 (where 1 + hi carries the result), near the reduction's
// boundaries ±ln2/2 + n·ln2, and into the denormal results.
func expF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 4 {
		case 0:
			xs = append(xs, -745.1+r.Float64()*(709.78+745.1))
		case 1:
			xs = append(xs, (r.Float64()*2-1)*math.Ldexp(1, -r.IntN(60)))
		case 2:
			k := float64(r.IntN(2046) - 1023)
			xs = append(xs, (k+0.5)*math.Ln2+(r.Float64()*2-1)*1e-9)
		default:
			xs = append(xs, -708.4-r.Float64()*36.7)
		}
	}
	return xs
}

// logF64Inputs: random bit patterns of positive floats (every exponent,
// denormals included), near 1 (where f carries the result), and around √2,
// where the reduction switches.
func logF64Inputs(r *rand.Rand, n int) []float64 {
	xs := make([]float64, 0, n)
	for len(xs) < n {
		switch len(xs) % 3 {
		case 0:
			xs = append(xs, math.Float64frombits(r.Uint64()&^(1<<63)%0x7ff0000000000000))
		case 1:
			xs = append(xs, 1+(r.Float64()*2-1)*math.Ldexp(1, -r.IntN(50)))
		default:
			xs = append(xs, math.Ldexp(math.Sqrt2*(1+(r.Float64()*2-1)*1e-6), r.IntN(200)-100))
		}
	}
	return xs
}

// ulpErr64 is |got - exact| in float64 ULPs at exact. An exact value that
// rounds to ±Inf must be met by that infinity; a got of ±Inf for a finite
// exact counts as ±2^1024. The result is +Inf where no finite error
// describes the miss.
func ulpErr64(got float64, exact *big.Float) float64 {
	want, _ := exact.Float64()
	switch {
	case math.IsInf(want, 0):
		if got == want {
			return 0
		}
		return math.Inf(1)
	case math.IsNaN(got):
		return math.Inf(1)
	}
	g := new(big.Float).SetPrec(exact.Prec())
	if math.IsInf(got, 0) {
		g.SetMantExp(bf(math.Copysign(1, got), 2), 1024)
	} else {
		g.SetFloat64(got)
	}
	d := g.Sub(g, exact)
	d.Abs(d)
	e := exact.MantExp(nil) // |exact| in [2^(e-1), 2^e)
	ulpExp := max(e-1-52, -1074)
	if exact.Sign() == 0 {
		ulpExp = -1074
	}
	q, _ := d.SetMantExp(d, -ulpExp).Float64()
	return q
}

// f64Samples is the number of random inputs measured per function
// (LANES_F64_SAMPLES overrides it; -short takes a tenth).
func f64Samples() int {
	if s, err := strconv.Atoi(os.Getenv("LANES_F64_SAMPLES")); err == nil && s > 0 {
		return s
	}
	if testing.Short() {
		return 600
	}
	return 20000
}

// TestTranscendF64ULP measures the float64 transcendentals at every level against the
// exact reference, computed once per input, and checks the bound.
func TestTranscendF64ULP(t *testing.T) {
	for _, c := range f64Cases {
		t.Run(c.name, func(t *testing.T) { testF64ULP(t, c) })
	}
}

func testF64ULP(t *testing.T, c f64Case) {
	xs := c.inputs(rand.New(rand.NewPCG(11, 12)), f64Samples())
	exact := make([]*big.Float, len(xs))
	for i, x := range xs {
		exact[i] = c.exact(x)
	}
	got := make([]float64, len(xs))
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		c.run(got, xs)
		worst, at := 0.0, 0
		for i := range xs {
			if e := ulpErr64(got[i], exact[i]); !(e <= worst) {
				worst, at = e, i
			}
		}
		if !(worst <= c.bound) {
			t.Fatalf("%s(%v) = %v, exact %s: %.3f ULP > %g", c.name, xs[at], got[at], exact[at].Text('g', 20), worst, c.bound)
		}
		t.Logf("%s at %v: largest error %.3f ULP (x = %v) over %d inputs", c.name, l, worst, xs[at], len(xs))
	})
}

// TestTranscendF64Special checks the values IEEE and the docs fix.
func TestTranscendF64Special(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		f    func(dst, x []float64)
		name string
		x    []float64
		want []float64
	}{
		{ExpF64, "ExpF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 710, 709.79, -746, -745.2, 1e-300, -1e-300},
			[]float64{nan, inf, 0, 1, 1, inf, inf, 0, 0, 1, 1}},
		{LogF64, "LogF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), -1, -1e-310, 1, math.SmallestNonzeroFloat64},
			[]float64{nan, inf, nan, -inf, -inf, nan, nan, 0, -744.4400719213812}},
		{SigmoidF64, "SigmoidF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 800, -800, 38, 37, -745.2, -708, math.SmallestNonzeroFloat64},
			[]float64{nan, 1, 0, 0.5, 0.5, 1, 0, 1, 1 - 0x1p-53, 0, 3.307553003638408e-308, 0.5}},
		{SiLUF64, "SiLUF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 41, 1e300, -800, -1e300, -760, math.SmallestNonzeroFloat64},
			[]float64{nan, inf, math.Copysign(0, -1), 0, math.Copysign(0, -1), 41, 1e300, math.Copysign(0, -1), math.Copysign(0, -1), math.Copysign(0, -1), 0}},
		{TanhF64, "TanhF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 19.1, -19.1, 20, 1e300, -1e300, 1e-300, -5e-324, 0x1p-1022},
			[]float64{nan, 1, -1, 0, math.Copysign(0, -1), 1, -1, 1, 1, -1, 1e-300, -5e-324, 0x1p-1022}},
		{SoftplusF64, "SoftplusF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 800, 38, -800, -745.2, math.SmallestNonzeroFloat64},
			[]float64{nan, inf, 0, math.Ln2, math.Ln2, 800, 38, 0, 0, math.Ln2}},
		{ErfF64, "ErfF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 6, -6, 5.95, 1e300, -1e300, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64},
			[]float64{nan, 1, -1, 0, math.Copysign(0, -1), 1, -1, 1, 1, -1, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64}},
		{GELUF64, "GELUF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 10.5, 1e300, -39.5, -1e300},
			[]float64{nan, inf, math.Copysign(0, -1), 0, math.Copysign(0, -1), 10.5, 1e300, math.Copysign(0, -1), math.Copysign(0, -1)}},
		{GELUTanhF64, "GELUTanhF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), 10.5, 1e300, -25.5, -1e300},
			[]float64{nan, inf, math.Copysign(0, -1), 0, math.Copysign(0, -1), 10.5, 1e300, math.Copysign(0, -1), math.Copysign(0, -1)}},
		{func(dst, x []float64) { ELUF64(dst, x, 1) }, "ELUF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), -40, -1e300, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64},
			[]float64{nan, inf, -1, 0, 0, -1, -1, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64}},
		{func(dst, x []float64) { ELUF64(dst, x, 0.5) }, "ELUF64(alpha=0.5)",
			[]float64{-inf, 2, -1e300},
			[]float64{-0.5, 2, -0.5}},
		{func(dst, x []float64) { LeakyReLUF64(dst, x, 0.01) }, "LeakyReLUF64",
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), -1, 3},
			[]float64{nan, inf, -inf, 0, math.Copysign(0, -1), -0.01, 3}},
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range cases {
			got := make([]float64, len(c.x))
			c.f(got, c.x)
			for i := range got {
				if !sameFloat(got[i], c.want[i]) {
					t.Errorf("%s(%v) = %v, want %v", c.name, c.x[i], got[i], c.want[i])
				}
			}
		}
	})
}

// TestTranscendF64Lengths runs every length 0..257 and a long one at every
// level, at unaligned starts and in place, with canaries around dst: every
// level runs the generic algorithm's operations, so results agree with it
// bit for bit.
func TestTranscendF64Lengths(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(13, uint64(l)))
		for _, c := range f64Cases {
			for _, n := range testLengths {
				a := newGuardedOf[float64](n, (n+1)%4)
				fill(r, a.s(), 800, 7)
				if c.name == "LogF64" {
					for i, v := range a.s() {
						if i%3 != 0 {
							a.s()[i] = math.Abs(v) // mostly in the domain
						}
					}
				}
				x := append([]float64(nil), a.s()...)
				d := newGuardedOf[float64](n, n%4)
				c.run(d.s(), a.s())
				d.check(t, c.name)
				a.check(t, c.name)
				for i, v := range x {
					if want := c.gen(v); !sameFloat(d.s()[i], want) {
						t.Fatalf("%s n=%d: x[%d]=%v got %v, generic %v", c.name, n, i, v, d.s()[i], want)
					}
				}
				c.run(a.s(), a.s())
				for i := range x {
					if !sameFloat(a.s()[i], d.s()[i]) {
						t.Fatalf("%s n=%d in place: [%d] %v != %v", c.name, n, i, a.s()[i], d.s()[i])
					}
				}
			}
		}
	})
}

func TestTranscendF64AllocsAndPanics(t *testing.T) {
	x, d := make([]float64, 1000), make([]float64, 1000)
	for i := range x {
		x[i] = float64(i) + 0.5
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range f64Cases {
			if n := testing.AllocsPerRun(20, func() { c.run(d, x) }); n != 0 {
				t.Errorf("%s: %v allocations per call", c.name, n)
			}
		}
	})
	for _, c := range f64Cases {
		expectPanic(t, fmt.Sprintf("simd.%s: length mismatch: len(dst)=2 len(x)=3", c.name), func() { c.run(make([]float64, 2), make([]float64, 3)) })
	}
}
