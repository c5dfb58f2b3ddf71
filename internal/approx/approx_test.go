package approx

import (
	"math"
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
