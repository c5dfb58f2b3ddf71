package approx

import (
	"math"
	"math/big"
	"testing"
)

// TestExpm1Poly checks the claimed truncation error of the expm1 polynomial
// (evaluated in float64 with the float32 coefficients) over the reduced range.
func TestExpm1Poly(t *testing.T) {
	worst := 0.0
	for i := -10000; i <= 10000; i++ {
		r := float64(i) / 10000 * (math.Ln2/2 + 0x1p-20)
		p := 0.0
		for k := len(Expm1Poly) - 1; k >= 0; k-- {
			p = p*r + float64(Expm1Poly[k])
		}
		got := r + r*r*p
		want := math.Expm1(r)
		if r != 0 {
			worst = max(worst, math.Abs(got-want)/math.Abs(want))
		}
	}
	// A float32 ULP is at least 2^-24 relative; stay below 0.3 of it.
	if worst > 0.3*0x1p-24 {
		t.Fatalf("expm1 polynomial relative error %g > 0.3 ULP", worst)
	}
	t.Logf("expm1 polynomial: max relative error %.3g (%.3f float32 ULP)", worst, worst/0x1p-24)
}

func TestAtanhPoly(t *testing.T) {
	worst := 0.0
	for i := -10000; i <= 10000; i++ {
		s := float64(i) / 10000 / 3 // |s| <= 1/3
		z := s * s
		p := 0.0
		for k := len(AtanhPoly) - 1; k >= 0; k-- {
			p = p*z + float64(AtanhPoly[k])
		}
		got := 2*s + s*z*p
		want := 2 * math.Atanh(s)
		if s != 0 {
			worst = max(worst, math.Abs(got-want)/math.Abs(want))
		}
	}
	if worst > 0x1p-26 {
		t.Fatalf("atanh series relative error %g > 2^-26", worst)
	}
	t.Logf("atanh series: max relative error %.3g (%.3f float32 ULP)", worst, worst/0x1p-24)
}

func TestCodyWaite(t *testing.T) {
	if math.Float32bits(Ln2Hi)&0x1ff != 0 {
		t.Fatalf("Ln2Hi has low bits set: %#x", math.Float32bits(Ln2Hi))
	}
	if d := math.Abs(float64(float32(Ln2Hi)) + float64(float32(Ln2Lo)) - math.Ln2); d > 1e-13 {
		t.Fatalf("Ln2Hi+Ln2Lo differs from ln2 by %g", d)
	}
}

// TestCodyWaite64 checks that n·Ln2Hi64 is exact for every n the float64
// exp can take (|n| <= 1077: at most 11 bits beside Ln2Hi64's 32), and that
// Ln2Hi64 + Ln2Lo64 is ln2 to within Ln2Lo64's rounding (2^-86, far below
// a float64 ULP of any n·ln2).
func TestCodyWaite64(t *testing.T) {
	if b := math.Float64bits(Ln2Hi64); b&(1<<21-1) != 0 {
		t.Fatalf("Ln2Hi64 has more than 32 significant bits: %#x", b)
	}
	for n := -1077.0; n <= 1077; n++ {
		if math.FMA(n, Ln2Hi64, -n*Ln2Hi64) != 0 {
			t.Fatalf("n·Ln2Hi64 rounds for n = %v", n)
		}
	}
	sum := new(big.Float).SetPrec(200).SetFloat64(Ln2Hi64)
	sum.Add(sum, new(big.Float).SetPrec(200).SetFloat64(Ln2Lo64))
	exact := new(big.Float).SetPrec(200)
	exact.SetString("0.693147180559945309417232121458176568075500134360255254120680009493393621969694715605863326996418687542")
	d, _ := sum.Sub(sum, exact).Float64()
	// Ln2Lo64 is ln2 - Ln2Hi64 rounded once: within half its ULP (2^-86).
	if math.Abs(d) > 0x1p-86 {
		t.Fatalf("Ln2Hi64+Ln2Lo64 differs from ln2 by %g", d)
	}
}

// TestFloat64Pairs checks the float64 pairs (hi + lo to 106 bits) of
// GELUF64 and GELUTanhF64 against math/big: π by Machin's formula, ln 2 as
// 2·atanh(1/3).
func TestFloat64Pairs(t *testing.T) {
	const p = 256
	series := func(x *big.Float, alternate bool) *big.Float { // Σ ±x^(2k+1)/(2k+1)
		x2 := new(big.Float).SetPrec(p).Mul(x, x)
		pow := new(big.Float).SetPrec(p).Set(x)
		sum := new(big.Float).SetPrec(p).Set(x)
		for k := 1; k < 200; k++ {
			pow.Mul(pow, x2)
			if alternate {
				pow.Neg(pow)
			}
			sum.Add(sum, new(big.Float).SetPrec(p).Quo(pow, big.NewFloat(float64(2*k+1))))
		}
		return sum
	}
	inv := func(n float64) *big.Float { return new(big.Float).SetPrec(p).Quo(big.NewFloat(1), big.NewFloat(n)) }
	pi := new(big.Float).SetPrec(p).Mul(series(inv(5), true), big.NewFloat(16))
	pi.Sub(pi, new(big.Float).SetPrec(p).Mul(series(inv(239), true), big.NewFloat(4)))
	ln2 := new(big.Float).SetPrec(p).Mul(series(inv(3), false), big.NewFloat(2))
	c1 := new(big.Float).SetPrec(p).Quo(big.NewFloat(2), pi)
	c1.Sqrt(c1).Mul(c1, big.NewFloat(2))
	k, _ := new(big.Float).SetPrec(p).SetString("0.044715")
	c3 := new(big.Float).SetPrec(p).Mul(c1, k)
	geluK := new(big.Float).SetPrec(p).Quo(ln2, big.NewFloat(2))
	geluK.Add(geluK, big.NewFloat(0.5625))
	for _, c := range []struct {
		name   string
		hi, lo float64
		exact  *big.Float
	}{
		{"Sqrt1_2", Sqrt1_2Hi, Sqrt1_2Lo, new(big.Float).SetPrec(p).Sqrt(big.NewFloat(0.5))},
		{"GELUK64", GELUK64Hi, GELUK64Lo, geluK},
		{"GELUTanhC1", GELUTanhC1Hi, GELUTanhC1Lo, c1},
		{"GELUTanhC3", GELUTanhC3Hi, GELUTanhC3Lo, c3},
	} {
		d := new(big.Float).SetPrec(p).Sub(c.exact, big.NewFloat(c.hi))
		d.Sub(d, big.NewFloat(c.lo))
		rel, _ := d.Quo(d, c.exact).Float64()
		if hi, _ := c.exact.Float64(); hi != c.hi || math.Abs(rel) > 0x1p-105 {
			t.Errorf("%s: hi %v (exact rounds to %v), pair off by %g relative", c.name, c.hi, hi, rel)
		}
	}
}
