package simd

import (
	"math"
	"math/big"
	"sync"
)

// The exact reference of the transcendental tests: every function evaluated
// in math/big with refPrec bits carried through (more where a formula cancels:
// erf's series and 1 - erf), then rounded once to float64. A float32 result
// is measured against that float64 in float32 ULPs (ulpErr); the rounding to
// float64 moves the reference by at most 2^-29 float32 ULP, so the measure is
// exact to far below the 0.01 ULP the bounds are stated in.
//
// The series are plain (Taylor after range reduction, atanh for logarithms,
// a continued fraction for erfc's far tail) and written for clarity, not
// speed: one evaluation costs tens of microseconds, so the sweeps measure
// against a float64 formula first and against these only where that comes
// near the bound (refMargin and worstSet in transcend_test.go).

const refPrec = 160

// refConst holds ln 2, √π and √2 to refPrec+64 bits, computed once from
// series (no typed-in digits to get wrong; TestTranscendRefAgree checks them
// against the math package's float64 constants).
var refConst = sync.OnceValue(func() (c struct{ ln2, sqrtPi, sqrt2 *big.Float }) {
	const p = refPrec + 64
	// ln 2 = 2·atanh(1/3).
	third := new(big.Float).SetPrec(p).Quo(bf(1, p), bf(3, p))
	c.ln2 = new(big.Float).SetPrec(p).Mul(bf(2, p), bigAtanh(third, p))
	// π = 16·atan(1/5) - 4·atan(1/239) (Machin).
	a5 := bigAtan(new(big.Float).SetPrec(p).Quo(bf(1, p), bf(5, p)), p)
	a239 := bigAtan(new(big.Float).SetPrec(p).Quo(bf(1, p), bf(239, p)), p)
	pi := new(big.Float).SetPrec(p).Sub(a5.Mul(a5, bf(16, p)), a239.Mul(a239, bf(4, p)))
	c.sqrtPi = new(big.Float).SetPrec(p).Sqrt(pi)
	c.sqrt2 = new(big.Float).SetPrec(p).Sqrt(bf(2, p))
	return c
})

// bf returns v as a big.Float of precision p (v is exact in it: float64
// values only).
func bf(v float64, p uint) *big.Float { return new(big.Float).SetPrec(p).SetFloat64(v) }

// done reports whether term no longer changes sum at precision p.
func done(term, sum *big.Float, p uint) bool {
	if term.Sign() == 0 {
		return true
	}
	if sum.Sign() == 0 {
		return false
	}
	return term.MantExp(nil) < sum.MantExp(nil)-int(p)-2
}

// bigAtanh returns atanh(s) = Σ s^(2k+1)/(2k+1) for |s| <= 1/3.
func bigAtanh(s *big.Float, p uint) *big.Float { return oddSeries(s, p, false) }

// bigAtan returns atan(s) = Σ (-1)^k s^(2k+1)/(2k+1) for |s| <= 1/5.
func bigAtan(s *big.Float, p uint) *big.Float { return oddSeries(s, p, true) }

// oddSeries returns Σ (±1)^k s^(2k+1)/(2k+1), the signs alternating when
// alternate is set (atan) and all positive otherwise (atanh).
func oddSeries(s *big.Float, p uint, alternate bool) *big.Float {
	s2 := new(big.Float).SetPrec(p).Mul(s, s)
	if alternate {
		s2.Neg(s2)
	}
	pow := new(big.Float).SetPrec(p).Set(s)
	sum := new(big.Float).SetPrec(p).Set(s)
	t := new(big.Float).SetPrec(p)
	for k := 1; ; k++ {
		pow.Mul(pow, s2)
		t.Quo(pow, bf(float64(2*k+1), p))
		if done(t, sum, p) {
			return sum
		}
		sum.Add(sum, t)
	}
}

// bigExp returns e^x to refPrec bits for |x| <= 2000: x = k·ln2 + r, then
// the Taylor series of e^(r/256) squared eight times.
func bigExp(x *big.Float) *big.Float {
	const p = refPrec + 40
	c := refConst()
	xf, _ := x.Float64()
	k := math.Round(xf / math.Ln2)
	r := new(big.Float).SetPrec(p).Mul(bf(k, p), c.ln2)
	r.Sub(new(big.Float).SetPrec(p).Set(x), r)
	r.SetMantExp(r, -8)
	sum := bf(1, p)
	t := bf(1, p)
	for n := 1; ; n++ {
		t.Mul(t, r)
		t.Quo(t, bf(float64(n), p))
		if done(t, sum, p) {
			break
		}
		sum.Add(sum, t)
	}
	for range 8 {
		sum.Mul(sum, sum)
	}
	return sum.SetMantExp(sum, int(k))
}

// bigExpm1 returns e^x - 1 to refPrec bits: the Taylor series itself below
// |x| = 1/2 (no cancellation, tiny x included), e^x - 1 above.
func bigExpm1(x *big.Float) *big.Float {
	const p = refPrec + 40
	if xf, _ := x.Float64(); math.Abs(xf) >= 0.5 {
		e := bigExp(x)
		return e.Sub(e, bf(1, p))
	}
	sum := new(big.Float).SetPrec(p).Set(x)
	t := new(big.Float).SetPrec(p).Set(x)
	for n := 2; ; n++ {
		t.Mul(t, x)
		t.Quo(t, bf(float64(n), p))
		if done(t, sum, p) {
			return sum
		}
		sum.Add(sum, t)
	}
}

// bigLog1p returns log(1+e) for e in [0, 1] as 2·atanh(e/(2+e)), which keeps
// full relative precision for tiny e.
func bigLog1p(e *big.Float) *big.Float {
	const p = refPrec + 40
	d := new(big.Float).SetPrec(p).Add(bf(2, p), e)
	s := new(big.Float).SetPrec(p).Quo(e, d)
	r := bigAtanh(s, p)
	return r.Mul(r, bf(2, p))
}

// bigLog returns log(y) for y > 0: y = m·2^k with m in [0.75, 1.5), then
// k·ln2 + 2·atanh((m-1)/(m+1)).
func bigLog(y *big.Float) *big.Float {
	const p = refPrec + 40
	m := new(big.Float).SetPrec(p)
	k := y.MantExp(m) // m in [0.5, 1)
	if m.Cmp(bf(0.75, p)) < 0 {
		m.SetMantExp(m, 1)
		k--
	}
	num := new(big.Float).SetPrec(p).Sub(m, bf(1, p))
	den := new(big.Float).SetPrec(p).Add(m, bf(1, p))
	r := bigAtanh(num.Quo(num, den), p)
	r.Mul(r, bf(2, p))
	kl := new(big.Float).SetPrec(p).Mul(bf(float64(k), p), refConst().ln2)
	return r.Add(r, kl)
}

// bigErf returns erf(t) for 0 <= t <= 6 from its Taylor series
// 2/√π·Σ (-1)^n t^(2n+1)/(n!(2n+1)), whose terms reach e^(t²) before they
// fall: the series carries 3t² extra bits (for that growth and for a later
// 1 - erf) beyond refPrec.
func bigErf(t *big.Float) *big.Float {
	tf, _ := t.Float64()
	p := uint(refPrec + 64 + int(3*tf*tf))
	t2 := new(big.Float).SetPrec(p).Mul(t, t)
	t2.Neg(t2)
	pow := new(big.Float).SetPrec(p).Set(t) // (-1)^n t^(2n+1)/n!
	sum := new(big.Float).SetPrec(p).Set(t)
	term := new(big.Float).SetPrec(p)
	for n := 1; ; n++ {
		pow.Mul(pow, t2)
		pow.Quo(pow, bf(float64(n), p))
		term.Quo(pow, bf(float64(2*n+1), p))
		if n > int(2*tf*tf) && done(term, sum, p) {
			break
		}
		sum.Add(sum, term)
	}
	sum.Mul(sum, bf(2, p))
	return sum.Quo(sum, refConst().sqrtPi)
}

// bigErfc returns erfc(t) for t >= 0: 1 - erf(t) up to t = 5, and beyond
// e^(-t²)/√π / (t + (1/2)/(t + 1/(t + (3/2)/(t + ...)))), the continued
// fraction, evaluated from 400 terms down (it has converged to refPrec bits
// long before for t > 5; TestTranscendRefAgree checks the two forms agree
// at 5).
func bigErfc(t *big.Float) *big.Float {
	const p = refPrec + 40
	tf, _ := t.Float64()
	if tf <= 5 {
		e := bigErf(t)
		return e.Sub(bf(1, e.Prec()), e)
	}
	return erfcCF(t, p)
}

func erfcCF(t *big.Float, p uint) *big.Float {
	f := new(big.Float).SetPrec(p).Set(t)
	q := new(big.Float).SetPrec(p)
	for k := 400; k >= 1; k-- {
		q.Quo(bf(float64(k)/2, p), f)
		f.Add(t, q)
	}
	t2 := new(big.Float).SetPrec(p).Mul(t, t)
	e := bigExp(t2.Neg(t2))
	e.Quo(e, refConst().sqrtPi)
	return e.Quo(e, f)
}

// bigSigmoid returns 1/(1+e^-x) for finite |x| <= 1000: e^x/(1+e^x) for
// x < 0.
func bigSigmoid(x *big.Float) *big.Float {
	const p = refPrec + 40
	if x.Sign() < 0 {
		e := bigExp(x)
		d := new(big.Float).SetPrec(p).Add(bf(1, p), e)
		return e.Quo(e, d)
	}
	e := bigExp(new(big.Float).Neg(x))
	e.Add(e, bf(1, p))
	return e.Quo(bf(1, p), e)
}

// Reference functions: the exact value at a float32 input, rounded to
// float64. Inputs beyond |x| = 1000 (and the infinities) take the limits:
// the exact values round to those in float64.

func refExpExact(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 1000:
		return math.Inf(1)
	case x < -1000:
		return 0
	}
	return f64(bigExp(bf(x, refPrec)))
}

func refLogExact(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	}
	return f64(bigLog(bf(x, refPrec)))
}

func refSigmoidExact(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 1000:
		return 1
	case x < -1000:
		return 0
	}
	return f64(bigSigmoid(bf(x, refPrec)))
}

func refSiLUExact(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 1000:
		return x
	case x < -1000:
		return math.Copysign(0, -1)
	}
	s := bigSigmoid(bf(x, refPrec))
	return f64(s.Mul(s, bf(x, refPrec)))
}

func refTanhExact(x float64) float64 {
	switch {
	case math.IsNaN(x) || x == 0:
		return x
	case math.Abs(x) > 1000:
		return math.Copysign(1, x)
	}
	// tanh|x| = E/(E+2), E = e^(2|x|) - 1.
	e := bigExpm1(bf(2*math.Abs(x), refPrec))
	d := new(big.Float).SetPrec(e.Prec()).Add(e, bf(2, refPrec))
	return math.Copysign(f64(e.Quo(e, d)), x)
}

func refSoftplusExact(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 1000:
		return x
	case x < -1000:
		return 0
	}
	// max(x, 0) + log1p(e^-|x|).
	l := bigLog1p(bigExp(bf(-math.Abs(x), refPrec)))
	if x > 0 {
		l.Add(l, bf(x, refPrec))
	}
	return f64(l)
}

// refELUExact is ELU with alpha = 1: e^x - 1 for x <= 0.
func refELUExact(x float64) float64 {
	switch {
	case math.IsNaN(x) || x > 0:
		return x
	case x < -1000:
		return -1
	}
	return f64(bigExpm1(bf(x, refPrec)))
}

func refErfExact(x float64) float64 {
	switch {
	case math.IsNaN(x) || x == 0:
		return x
	case math.Abs(x) > 6: // erfc(6) < 2^-55: erf rounds to ±1
		return math.Copysign(1, x)
	}
	return math.Copysign(f64(bigErf(bf(math.Abs(x), refPrec))), x)
}

// refGELUExact is x·Φ(x) = x/2·erfc(-x/√2).
func refGELUExact(x float64) float64 {
	const p = refPrec + 40
	switch {
	case math.IsNaN(x):
		return x
	case x > 1000:
		return x
	case x < -50: // |GELU| < 50·e^-1250: rounds to -0
		return math.Copysign(0, -1)
	case x == 0:
		return x
	}
	t := new(big.Float).SetPrec(p).Quo(bf(math.Abs(x), p), refConst().sqrt2)
	var phi *big.Float // Φ(x)·2
	if x < 0 {
		phi = bigErfc(t)
	} else if tf, _ := t.Float64(); tf > 6 {
		// erfc(t) < 2^-55 relative to 2: 1 + erf(t) = 2 - erfc(t).
		phi = bigErfc(t)
		phi.Sub(bf(2, p), phi)
	} else {
		phi = bigErf(t)
		phi.Add(phi, bf(1, p))
	}
	phi.Mul(phi, bf(x/2, p))
	return f64(phi)
}

// refGELUTanhExact is x/(1+e^-2u), u = √(2/π)·(x + 0.044715·x³), with the
// decimal 0.044715 taken exactly.
func refGELUTanhExact(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 1000:
		return x
	case x < -1000:
		return math.Copysign(0, -1)
	}
	return f64(geluTanhExactF64(x))
}

// f64 rounds v to the nearest float64.
func f64(v *big.Float) float64 {
	f, _ := v.Float64()
	return f
}

// ulpErr is |got - want| in float32 ULPs at want (the spacing of float32
// values around the exact result want, 2^-149 in the denormal range): the
// error measure of every accuracy bound in the package. A want that rounds
// to ±Inf in float32 must be met by that infinity exactly; a got of ±Inf for
// a finite want counts as ±2^128, IEEE's view of overflow. NaN must meet NaN.
// The result is +Inf where no finite error describes the miss.
func ulpErr(got float32, want float64) float64 {
	g := float64(got)
	switch {
	case math.IsNaN(want) || math.IsNaN(g):
		if math.IsNaN(want) && math.IsNaN(g) {
			return 0
		}
		return math.Inf(1)
	case math.IsInf(float64(float32(want)), 0):
		if float32(want) == got {
			return 0
		}
		return math.Inf(1)
	case math.IsInf(g, 0):
		g = math.Copysign(0x1p128, g)
	}
	return math.Abs(g-want) / ulpAt(want)
}

// ulpAt is the spacing of float32 values at the real number v: 2^(e-23) for
// |v| in [2^e, 2^(e+1)), 2^-149 below 2^-126.
func ulpAt(v float64) float64 {
	a := math.Abs(v)
	if a < 0x1p-126 {
		return 0x1p-149
	}
	_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
	return math.Ldexp(1, e-1-23)
}
