package approx

import (
	"math"
	"math/big"
	"testing"
)

// TestTrigReduction checks PiO2Hi + PiO2Lo against π/2 to 2^-106 relative
// (π from math/big's digits), that TwoOverPi is 2/π rounded, and the
// truncation of SinPoly and CosPoly on |r| <= π/4 + 2^-20 against math.Sin
// and math.Cos (within a float64 ULP each; the claims are 1e-11 and 1e-12).
func TestTrigReduction(t *testing.T) {
	const p = 256
	pi, _ := new(big.Float).SetPrec(p).SetString("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798")
	half := new(big.Float).SetPrec(p).Quo(pi, big.NewFloat(2))
	d := new(big.Float).SetPrec(p).Sub(half, big.NewFloat(PiO2Hi))
	d.Sub(d, big.NewFloat(PiO2Lo))
	if rel, _ := d.Quo(d, half).Float64(); math.Abs(rel) > 0x1p-106 {
		t.Errorf("PiO2Hi+PiO2Lo off π/2 by %g relative", rel)
	}
	if hi, _ := half.Float64(); hi != PiO2Hi {
		t.Errorf("PiO2Hi = %v, π/2 rounds to %v", PiO2Hi, hi)
	}
	if want, _ := new(big.Float).SetPrec(p).Quo(big.NewFloat(2), pi).Float64(); want != TwoOverPi {
		t.Errorf("TwoOverPi = %v, want %v", TwoOverPi, want)
	}
	var worstS, worstC float64
	for i := 1; i <= 20000; i++ {
		r := (math.Pi/4 + 0x1p-20) * float64(i) / 20000
		z := r * r
		s := r + r*z*horner64(SinPoly[:], z)
		c := 1 + z*horner64(CosPoly[:], z)
		worstS = math.Max(worstS, math.Abs(s-math.Sin(r))/math.Sin(r))
		worstC = math.Max(worstC, math.Abs(c-math.Cos(r))/math.Cos(r))
	}
	t.Logf("sin truncation %.3g, cos %.3g relative", worstS, worstC)
	if worstS > 1e-11 || worstC > 1e-12 {
		t.Errorf("sin truncation %.3g (claim 1e-11), cos %.3g (claim 1e-12)", worstS, worstC)
	}
}

func horner64(c []float64, x float64) float64 {
	p := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		p = math.FMA(p, x, c[i])
	}
	return p
}
