package simd

import (
	"math"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/internal/approx"
)

// The generic transcendental kernels restate, one element at a time, the
// algorithm the generated assembly runs (asm/gen/transcend), with the same
// constants (internal/approx) and the same order of roundings, so every level
// gives answers within the documented bounds of each other.

func init() {
	transcend.set(dispatch.Generic, &transcendKernels{
		exp: mapGeneric(exp32), log: mapGeneric(log32), sigmoid: mapGeneric(sigmoid32),
		silu: mapGeneric(silu32), tanh: mapGeneric(tanh32), softplus: mapGeneric(softplus32),
		erf: mapGeneric(erf32), gelu: mapGeneric(gelu32), geluTanh: mapGeneric(geluTanh32),
		leakyReLU: leakyReLUGeneric[float32], elu: eluGeneric(expm1x32),
		expSum: expSumGeneric,
	})
	transcendF64.set(dispatch.Generic, &transcendKernelsF64{
		exp: mapGeneric(exp64), log: mapGeneric(log64),
		sigmoid: mapGeneric(sigmoid64), tanh: mapGeneric(tanh64), silu: mapGeneric(silu64),
		softplus: mapGeneric(softplus64), erf: mapGeneric(erf64), gelu: mapGeneric(gelu64),
		geluTanh: mapGeneric(geluTanh64), leakyReLU: leakyReLUGeneric[float64], elu: eluGeneric(elu64),
		expSum: expSumGeneric64,
	})
}

// horner evaluates Σ c[k]·x^k with one FMA per coefficient, the order the
// assembly uses. (Estrin's scheme, with a chain log2 as deep, measured slower:
// the kernels are bound by instruction throughput, not latency.)
func horner(c []float32, x float32) float32 {
	p := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		p = fma32(p, x, c[i])
	}
	return p
}

func mapGeneric[T float](f func(T) T) func(dst, x []T) {
	return func(dst, x []T) {
		x = x[:len(dst)]
		for i, v := range x {
			dst[i] = f(v)
		}
	}
}

// fma32 is a fused multiply-add in float32: a·b is exact in float64, so only
// the sum rounds (twice, to float64 then float32; the difference from a single
// rounding is far below the bounds and rarer than one in 2^29).
func fma32(a, b, c float32) float32 { return float32(math.FMA(float64(a), float64(b), float64(c))) }

// scale32 returns p·2^n rounded once to float32 (denormals and overflow as IEEE).
func scale32(p, n float32) float32 { return float32(math.Ldexp(float64(p), int(n))) }

// clamp32 limits x to [lo, hi]; NaN passes through (Clamp's rule).
func clamp32(x, lo, hi float32) float32 { return minimumOf(maximumOf(x, lo), hi) }

// expReduce splits x (+ lo, a correction below x's ULP) into n and
// q = expm1(r) with x + lo = n·ln2 + r. x must be clamped.
func expReduce(x, lo float32) (n, q float32) {
	n = float32(math.RoundToEven(float64(x * approx.Log2E)))
	r := fma32(-n, approx.Ln2Hi, x)
	r = fma32(-n, approx.Ln2Lo, r)
	r += lo
	p := horner(approx.Expm1Poly[:], r)
	return n, fma32(r*r, p, r)
}

// expReducePair clamps x to the exp range and reduces x + lo, dropping lo where
// the clamp changed x (lo is then meaningless next to the clamped value).
func expReducePair(x, lo float32) (n, q float32) {
	c := clamp32(x, approx.ExpMin, approx.ExpMax)
	if c != x {
		lo = 0
	}
	return expReduce(c, lo)
}

func exp32(x float32) float32 {
	n, q := expReduce(clamp32(x, approx.ExpMin, approx.ExpMax), 0)
	return scale32(1+q, n)
}

// expm1x32 is e^x - 1 for x >= Expm1Min (clamped): 2^n·q + (2^n - 1), exact
// for n = 0, so small |x| keeps full relative accuracy.
func expm1x32(x float32) float32 {
	n, q := expReduce(clamp32(x, approx.Expm1Min, approx.ExpMax), 0)
	t := scale32(1, n)
	return fma32(t, q, t-1)
}

// expNegAbs returns e^-|x| as p·2^n with p = 1 + q (q = expm1 of the
// reduced argument, before 1 + q rounds), and as e: the common start of
// Sigmoid, SiLU and Softplus (-|x| <= 0 needs only the lower clamp).
func expNegAbs(x float32) (q, p, n, e float32) {
	n, q = expReduce(maximumOf(-absOf(x), approx.ExpMin), 0)
	p = 1 + q
	return q, p, n, scale32(p, n)
}

// sigmoid32: with e = e^-|x|, 1/(1+e) for x >= 0 and e/(1+e) for x < 0.
// Where e is denormal, 1+e is 1 and the result is e itself, correctly
// rounded, so tiny results keep their precision.
func sigmoid32(x float32) float32 {
	_, _, _, e := expNegAbs(x)
	num := float32(1)
	if x < 0 {
		num = e
	}
	return num / (1 + e)
}

// silu32 is x·sigmoid(x): x/(1+e) for x >= 0 and (x·p)·2^n/(1+e) for x < 0,
// with e = e^-|x| = p·2^n; x·p is taken as x + x·q, one rounding instead of
// two (1 + q, then the product), and scaled on its own so that results next
// to the denormals keep their precision. x is raised to SiLUMin first: below
// ExpMin the result rounds to -0 (the limit at -Inf), which x·e^ExpMin with
// x >= SiLUMin also gives.
func silu32(x float32) float32 {
	x = maximumOf(x, approx.SiLUMin)
	q, _, n, e := expNegAbs(x)
	d := 1 + e
	num := x
	if x < 0 {
		num = scale32(fma32(x, q, x), n)
	}
	return num / d
}

// tanh32: E = expm1(2|x|), tanh = ±E/(E+2); |x| is clamped to TanhMax.
func tanh32(x float32) float32 {
	y := clamp32(absOf(x), 0, approx.TanhMax)
	e := expm1x32(2 * y)
	t := e / (e + 2)
	return withSign(t, x)
}

// softplus32 = max(x, 0) + log1p(e^-|x|), with log1p(e) = 2s·(1 + s²R(s²)/2),
// s = e/(2+e), and 2s = w·2^n, w = 2p/(2+e), scaled last for tiny results;
// w + w·(s²R(s²)/2) is one fused multiply-add, so the series adds a single
// rounding.
func softplus32(x float32) float32 {
	_, p, n, e := expNegAbs(x)
	d := 2 + e
	s := e / d
	w := (p + p) / d
	z := s * s
	l := scale32(fma32(w, z*(horner(approx.AtanhPoly[:], z)*0.5), w), n)
	return maximumOf(x, 0) + l
}

// log32: x = m·2^k, m in [0.75, 1.5); s = (m-1)/(m+1);
// log x = k·Ln2Hi + (2s + (s³·R(s²) + k·Ln2Lo)).
func log32(x float32) float32 {
	switch {
	case x != x || x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case math.IsInf(float64(x), 1):
		return x
	}
	fr, ex := math.Frexp(float64(x)) // x = fr·2^ex, fr in [0.5, 1)
	m, k := float32(2*fr), float32(ex-1)
	if m >= 1.5 {
		m, k = float32(fr), float32(ex)
	}
	s := (m - 1) / (m + 1)
	z := s * s
	p := horner(approx.AtanhPoly[:], z)
	lo := fma32(s*z, p, k*approx.Ln2Lo)
	hi := (s + s) + lo
	return fma32(k, approx.Ln2Hi, hi)
}

// horner64 is horner for float64: Σ c[k]·x^k, one FMA per coefficient.
func horner64(c []float64, x float64) float64 {
	p := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		p = math.FMA(p, x, c[i])
	}
	return p
}

// exp64 is ExpF64 for one element (internal/approx: the Exp64 block):
// x = n·ln2 + (hi - lo), e^(hi-lo) = (1 + hi) - lo + r²·P(r) with 1 + hi
// split exactly (Fast2Sum, |hi| < 1), so the sum rounds once; then ·2^n,
// rounded once (denormal results too). The conversions keep each product
// rounded where the assembly rounds it (Go may fuse otherwise).
func exp64(x float64) float64 {
	return scale64(exp64Parts(minimumOf(maximumOf(x, approx.Exp64Min), approx.Exp64Max)))
}

// exp64Parts returns e^x as p·2^n before the scaling (p in [0.7, 1.42]),
// for x in [-1400, Exp64Max].
func exp64Parts(x float64) (float64, float64) {
	n := math.RoundToEven(x * approx.Log2E)
	hi := math.FMA(-n, approx.Ln2Hi64, x) // exact
	lo := float64(n * approx.Ln2Lo64)
	r := hi - lo
	q := float64(float64(r*r) * horner64(approx.Expm1Poly64[:], r))
	s := 1 + hi
	e := (1 - s) + hi // 1 + hi = s + e exactly
	return s + ((e - lo) + q), n
}

// expm1x64 is e^x - 1 for x in [ELU64Min, 2·Tanh64Max] on exp64's reduction:
// x = n·ln2 + (hi - lo), e^x - 1 = 2^n·u + (2^n - 1) with u = hi + (q - lo)
// = expm1(hi - lo), one FMA; for n = 0 that is u, so small x keeps its
// relative accuracy.
func expm1x64(x float64) float64 {
	n := math.RoundToEven(x * approx.Log2E)
	hi := math.FMA(-n, approx.Ln2Hi64, x) // exact
	lo := float64(n * approx.Ln2Lo64)
	r := hi - lo
	q := float64(float64(r*r) * horner64(approx.Expm1Poly64[:], r))
	u := hi + (q - lo)
	t := scale64(1, n)
	return math.FMA(t, u, t-1)
}

// sigmoid64 is SigmoidF64 for one element: e = exp64(-|x|), then 1/(1+e)
// for x >= 0 and e/(1+e) below (quoSum), so tiny results keep their digits.
func sigmoid64(x float64) float64 {
	e := exp64(-math.Abs(x))
	num := 1.0
	if x < 0 {
		num = e
	}
	return quoSum(num, 0, e, 1)
}

// tanh64 is TanhF64 for one element: E/(E+2) with E = e^(2|x|) - 1
// (expm1x64, |x| clamped to Tanh64Max), the sign of x put back.
//
// quoSum returns num/(e+c) as good as rounded once from the exact
// quotient: d + err = e + c exactly (TwoSum), t = num·(1/d), then the
// remainder num - t·(d+err) (the FMA gives num - t·d exactly) times 1/d
// corrects t. (A plain num/(e+c) rounds twice: TanhF64 measured 2.1 ULP.)
//
// The numerator is num + lo, lo below num's ULP (SiLUF64's exact product
// error; 0 for the others, where adding it changes no result).
func quoSum(num, lo, e, c float64) float64 {
	d := e + c
	bb := d - e
	err := (e - (d - bb)) + (c - bb)
	r := 1 / d
	t := float64(num * r)
	res := math.FMA(-t, d, num)
	return math.FMA(math.FMA(-t, err, res)+lo, r, t)
}

// silu64 is SiLUF64 for one element: x·e/(1+e) for x < 0 with e = e^x and
// the product x·e carried exactly (its FMA error into quoSum), x/(1+e^-x)
// above; x is clamped below at -800 (the result is -0 there) and the sign
// of x put back; x > 40 gives x (the sigmoid is 1 in float64), x < -708
// gives x·e^x with the product taken before e^x's scaling by 2^n, so
// denormal results round once.
func silu64(x float64) float64 {
	xc := maximumOf(x, -800)
	p, n := exp64Parts(-math.Abs(xc))
	e := scale64(p, n)
	num, lo := xc, 0.0
	if xc < 0 {
		num = float64(xc * e)
		lo = math.FMA(xc, e, -num)
	}
	t := quoSum(num, lo, e, 1)
	t = withSign(t, x)
	switch {
	case x > 40:
		return x
	case x < -708: // e^x is near the denormals and 1 + e^x is 1: x·p·2^n
		return scale64(float64(xc*p), n)
	}
	return t
}

func tanh64(x float64) float64 {
	y := minimumOf(maximumOf(math.Abs(x), 0), approx.Tanh64Max)
	e := expm1x64(y + y)
	t := quoSum(e, 0, e, 2)
	return withSign(t, x)
}

// exp64Pair is e^(d + c) for a correction c below d's ULP (the exact error
// of d = x - shift): exp64 with c carried into the reduction, x = n·ln2 +
// hi + lm, lm = c - n·Ln2Lo64 rounded once. c is dropped where the clamp
// changed d or c is NaN.
func exp64Pair(d, c float64) float64 {
	xc := minimumOf(maximumOf(d, approx.Exp64Min), approx.Exp64Max)
	if xc != d || c != c {
		c = 0
	}
	return scale64(exp64PairParts(xc, c))
}

// exp64PairParts returns e^(d + c) as p·2^n before the scaling (d in
// [-1400, Exp64Max], c below d's ULP).
func exp64PairParts(d, c float64) (float64, float64) {
	n := math.RoundToEven(d * approx.Log2E)
	hi := math.FMA(-n, approx.Ln2Hi64, d) // exact
	lm := math.FMA(-n, approx.Ln2Lo64, c)
	r := hi + lm
	q := float64(float64(r*r) * horner64(approx.Expm1Poly64[:], r))
	s := 1 + hi
	e := (1 - s) + hi // 1 + hi = s + e exactly
	return s + ((e + lm) + q), n
}

// expSumGeneric64 is expSumGeneric for float64: dst[i] = e^(x[i]-shift) with
// x[i]-shift carried exactly (TwoSum), dst nil: only the sum.
func expSumGeneric64(dst, x []float64, shift float64) float64 {
	var sum float64
	for i, v := range x {
		e := exp64Pair(twoSum(v, -shift))
		if dst != nil {
			dst[i] = e
		}
		sum += e
	}
	return sum
}

// scale64 returns y·2^n rounded once (math.Ldexp rounds a denormal result
// once; overflow gives ±Inf).
func scale64(y, n float64) float64 { return math.Ldexp(y, int(n)) }

// log64 is LogF64 for one element (internal/approx: the Log1pPoly64 block):
// x = m·2^k with m in [√2/2, √2), f = m - 1, s = f/(2+f), h = f²/2,
// log x = k·Ln2Hi64 + (f - (h - (s·(h + z·P(z)) + k·Ln2Lo64))), z = s².
func log64(x float64) float64 {
	switch {
	case x != x || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	}
	fr, ex := math.Frexp(x) // x = fr·2^ex, fr in [0.5, 1)
	m, k := 2*fr, float64(ex-1)
	if m >= math.Sqrt2 {
		m, k = fr, float64(ex)
	}
	f := m - 1 // exact
	s := f / (2 + f)
	z := float64(s * s)
	r := float64(z * horner64(approx.Log1pPoly64[:], z))
	h := float64(0.5 * f * f)
	t := math.FMA(s, h+r, float64(k*approx.Ln2Lo64))
	return math.FMA(k, approx.Ln2Hi64, f-(h-t))
}

func leakyReLUGeneric[T float](dst, x []T, alpha T) {
	x = x[:len(dst)]
	for i, v := range x {
		if v > 0 {
			dst[i] = v
		} else {
			dst[i] = alpha * v
		}
	}
}

// eluGeneric returns ELU's generic kernel with e^x - 1 from expm1
// (expm1x32, elu64).
func eluGeneric[T float](expm1 func(T) T) func(dst, x []T, alpha T) {
	return func(dst, x []T, alpha T) {
		x = x[:len(dst)]
		for i, v := range x {
			if v > 0 {
				dst[i] = v
			} else {
				dst[i] = alpha * expm1(v)
			}
		}
	}
}

// expSumGeneric sets dst[i] = e^(x[i]-shift) (dst may be nil: no store) and
// returns the float64 sum of the results. x[i]-shift is carried as a rounded
// difference plus its exact error (TwoSum), so the exponent is exact.
func expSumGeneric(dst, x []float32, shift float32) float64 {
	var sum float64
	for i, v := range x {
		d, lo := twoSum(v, -shift)
		n, q := expReducePair(d, lo)
		e := scale32(1+q, n)
		if dst != nil {
			dst[i] = e
		}
		sum += float64(e)
	}
	return sum
}

// twoSum returns s = a+b rounded and the exact error e = (a+b) - s
// (Knuth's TwoSum; e is 0 when s is not finite).
func twoSum[T float](a, b T) (s, e T) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	if e != e {
		e = 0
	}
	return s, e
}

// subF64 sets dst[i] = float32(float64(x[i]) - c), one rounding: LogSoftmax's
// last pass, plain Go at every level (not yet a kernel of its own).
func subF64(dst, x []float32, c float64) {
	x = x[:len(dst)]
	for i, v := range x {
		dst[i] = float32(float64(v) - c)
	}
}

// erfSmall is erf(x) = x·(C0 + z·P(z)) for |x| < ErfSplit.
func erfSmall(x float32) float32 {
	z := x * x
	p := horner(approx.ErfPoly[:], z)
	return fma32(x, approx.ErfC0Hi, x*fma32(z, p, approx.ErfC0Lo))
}

// erf32: below ErfSplit x·(C0 + z·P(z)); above, ±(1 - e^(-x²)·Q(u)).
func erf32(x float32) float32 {
	a := absOf(x)
	if a < approx.ErfSplit {
		return erfSmall(x)
	}
	r := 1 - erfcTail(clamp32(a, 0, approx.ErfMax), 1, 0.5) // erf(ErfMax) rounds to 1
	return withSign(r, x)
}

// erfcTail returns e^(-x²·s)·Q(u), u = 1/(1+h·|x|) - centre, with x² exact
// and the reciprocal carried to about 2^-40 so u is accurate to its last bit:
// erf uses s = 1, h = 1/2 (erfc(|x|)); GELU s = 1/2, h = 1/(2√2) (2·Φ(-|x|)).
// The product is 2^n·(Q + q·Q) with e^(-x²·s) = 2^n·(1+q), so 1 + q never
// rounds on its own. Q is (c0 + c1·u) + u·(u·P2(u)) rather than Horner's
// c0 + u·(c1 + u·P2(u)): for u near -0.3 (|x| ≈ 5 in GELU) Q ≈ 0.16 is the
// difference of 0.43 and 0.27, and the rounding of the inner c1 + u·P2 ≈ 0.9
// would come through twice as large relative to Q; c0 + c1·u rounds far
// less, and u·P2 is smaller.
func erfcTail(x float32, s, h float32) float32 {
	hi := x * x
	lo := fma32(x, x, -hi)
	n, q := expReduce(-hi*s, -lo*s) // |x| <= 6.5: no clamp needed
	a := absOf(x)
	d := fma32(a, h, 1)
	dErr := fma32(a, h, 1-d)
	t := 1 / d
	r := fma32(-t, d, 1)
	tLo := t * (r - t*dErr)
	u := (t - approx.ErfcxCentre) + tLo
	c := approx.ErfcxPoly[:]
	p2 := horner(c[2:], u)
	p := fma32(u, u*p2, fma32(c[1], u, c[0]))
	return scale32(fma32(q, p, p), n)
}

// gelu32 = x·Φ(x) with E = Φ(-|x|) = e^(-x²/2)·Q(|x|/√2)/2:
// x·E for x < 0, x - x·E for x >= 0 (E is accurate to about 3 ULP on the
// whole range, so no separate form near 0 is needed).
func gelu32(x float32) float32 {
	if x > approx.GELUMax {
		return x
	}
	if x < approx.GELUMin {
		return float32(math.Copysign(0, -1))
	}
	xc := clamp32(x, approx.GELUMin, approx.GELUMax)
	e := 0.5 * erfcTail(xc, 0.5, 0.35355339)
	if xc < 0 {
		return xc * e
	}
	return fma32(-xc, e, xc)
}

// geluTanh32 = x/(1+e^w), w = -x·(C1 + C3·x²) in float64, split into a pair.
func geluTanh32(x float32) float32 {
	if x > approx.GELUTanhMax {
		return x
	}
	xc := clamp32(x, -approx.GELUTanhMax, approx.GELUTanhMax)
	x64 := float64(xc)
	w := -x64 * math.FMA(approx.TanhC3, x64*x64, approx.TanhC1)
	hi := float32(w)
	lo := float32(w - float64(hi))
	n, q := expReducePair(hi, lo)
	return xc / (1 + scale32(1+q, n))
}

// softplus64 is SoftplusF64 for one element: max(x, 0) + log1p(e), e =
// exp64(-|x|), with log1p(e) = log64(u) + c/u, u = 1 + e rounded and c = e
// - (u - 1) its exact error (u - 1 is exact for u in [1, 2]): for e below
// 2^-53, u = 1 and the result is c = e.
func softplus64(x float64) float64 {
	e := exp64(-absOf(x))
	u := 1 + e
	c := e - (u - 1)
	return maximumOf(x, 0) + (log64(u) + c/u)
}

// erfRatio64 is the rational part of erf below ErfNear64 (internal/approx,
// fdlibm's): PP/QQ at z = y² below ErfSplit64 (erf(y) = y + y·r), PA/QA at
// s = (y - 1) + yl above (erf(y) = Erx64 + r); yl is y's low part (GELUF64's
// y = |x|/√2 as a pair; 0 for ErfF64).
func erfRatio64(y, yl float64) float64 {
	if y < approx.ErfSplit64 {
		z := float64(y * y)
		return horner64(approx.ErfPP64[:], z) / horner64(approx.ErfQQ64[:], z)
	}
	s := (y - 1) + yl
	return horner64(approx.ErfPA64[:], s) / horner64(approx.ErfQA64[:], s)
}

// erfcExp64 is the exponential of erfc's tail (fdlibm's erfc(y) =
// e^(-y² - 0.5625 + R/S)/y, R/S at s = 1/y²): e^(-k·(h + l) - (kHi + kLo) +
// R/S) with y² = k·(h + l) exactly (h + l = t² as a pair, k = 1 or 1/2) and
// the constant kHi + kLo (0.5625, or with ln √2 for GELUF64). -k·h + (R/S -
// kHi) is split exactly (TwoSum) and the low parts join the correction of
// exp64Pair.
func erfcExp64(h, l, s, k, kHi, kLo float64) float64 {
	var r, q float64
	if s > approx.ErfTailSplit64 {
		r, q = horner64(approx.ErfRA64[:], s), horner64(approx.ErfSA64[:], s)
	} else {
		r, q = horner64(approx.ErfRB64[:], s), horner64(approx.ErfSB64[:], s)
	}
	u := r/q - kHi
	a := float64(-k * h)
	d := a + u
	bb := d - a
	e := (a - (d - bb)) + (u - bb)
	return exp64Pair(d, (e-float64(k*l))-kLo)
}

// erf64 is ErfF64 for one element: x + x·r below ErfSplit64, ±(Erx64 + r)
// below ErfNear64 (erfRatio64), ±(1 - erfc(|x|)) above, |x| clamped to
// Erf64Max.
func erf64(x float64) float64 {
	a := absOf(x)
	if a < approx.ErfNear64 {
		r := erfRatio64(a, 0)
		if a < approx.ErfSplit64 {
			return math.FMA(x, r, x)
		}
		return withSign(approx.Erx64+r, x)
	}
	t := minimumOf(maximumOf(a, approx.ErfNear64), approx.Erf64Max)
	h := float64(t * t)
	l := math.FMA(t, t, -h)
	e := erfcExp64(h, l, 1/h, 1, 0.5625, 0)
	return withSign(1-e/t, x)
}

// gelu64 is GELUF64 for one element: with y = |x|/√2 as a pair (y, yl) and
// g = |x|·Φ(-|x|) = |x|/2·erfc(y), x·Φ(x) is -g for x < 0 and x - g above.
// Below y = ErfNear64 erfc(y) is 1 - (y + yl + y·r) below ErfSplit64, with
// 1 - y split exactly (Fast2Sum: the two roundings left are of y·r + yl and
// of the last difference), and (1 - Erx64) - r above; g = |x|·(erfc/2). In the tail g = erfc(y)·|x|/2 = e^(-x²/2 -
// GELUK64 + R/S)·(|x|/2)/(y·e^-ln√2) is the exponential alone (|x|/(2y) =
// 1/√2), x² exact.
func gelu64(x float64) float64 {
	if x > approx.GELU64Max {
		return x
	}
	xc := minimumOf(maximumOf(x, approx.GELU64Min), approx.GELU64Max)
	a := absOf(xc)
	y := float64(a * approx.Sqrt1_2Hi)
	m, g := withSign(1, xc), 0.0 // xc·Φ(xc) = xc - m·g (x >= 0), m·g (x < 0)
	if y < approx.ErfNear64 {
		yl := math.FMA(a, approx.Sqrt1_2Hi, -y) + float64(a*approx.Sqrt1_2Lo)
		r := erfRatio64(y, yl)
		h, e, my, t := 1-approx.Erx64, 0.0, 1.0, 0.0 // erfc = h - (my·r + t - e)
		if y < approx.ErfSplit64 {
			h = 1 - y
			e, my, t = (1-h)-y, y, yl
		}
		m, g = xc, (h-(math.FMA(my, r, t)-e))*0.5
	} else {
		t := maximumOf(a, 1)
		h := float64(t * t)
		l := math.FMA(t, t, -h)
		g = erfcExp64(h, l, 2/h, 0.5, approx.GELUK64Hi, approx.GELUK64Lo)
	}
	if xc < 0 {
		return float64(m * g)
	}
	return withSign(math.FMA(-m, g, xc), xc) // GELUF64(-0) = -0
}

// geluTanh64 is GELUTanhF64 for one element: x·σ(v), v = x·(C1 + C3·x²)
// carried as a pair (vh, vl) (geluTanhArg64), then SiLUF64's quotient with
// e = e^-|v| (x clamped to [GELUTanh64Min, GELU64Max]; vh < -708 takes
// x·p·2^n with the product before e's scaling, as SiLUF64 below -708).
func geluTanh64(x float64) float64 {
	if x > approx.GELU64Max {
		return x
	}
	xc := minimumOf(maximumOf(x, approx.GELUTanh64Min), approx.GELU64Max)
	vh, vl := geluTanhArg64(xc)
	d, c := -vh, -vl // -|v|
	if vh < 0 {
		d, c = vh, vl
	}
	p, n := exp64PairParts(d, c)
	e := scale64(p, n)
	num, lo := xc, 0.0
	if vh < 0 {
		num = float64(xc * e)
		lo = math.FMA(xc, e, -num)
	}
	if vh < -708 { // e is near the denormals and 1 + e is 1: x·p·2^n
		return scale64(float64(xc*p), n)
	}
	return withSign(quoSum(num, lo, e, 1), xc)
}

// geluTanhArg64 returns v = x·(C1 + C3·x²) as vh + vl: x² and C3·x² as
// exact products (FMA), C1 + C3·x² by TwoSum, the low parts summed in
// float64, then x times the pair.
func geluTanhArg64(x float64) (vh, vl float64) {
	x2 := float64(x * x)
	x2l := math.FMA(x, x, -x2)
	th := float64(approx.GELUTanhC3Hi * x2)
	tl := math.FMA(approx.GELUTanhC3Hi, x2, -th)
	kh := approx.GELUTanhC1Hi + th
	bb := kh - approx.GELUTanhC1Hi
	ke := (approx.GELUTanhC1Hi - (kh - bb)) + (th - bb)
	kl := ke + (tl + (float64(approx.GELUTanhC3Hi*x2l) + (float64(approx.GELUTanhC3Lo*x2) + approx.GELUTanhC1Lo)))
	vh = float64(x * kh)
	vl = math.FMA(x, kh, -vh) + float64(x*kl)
	return vh, vl
}

// elu64 is e^x - 1 for ELUF64's x <= 0 (expm1x64, x raised to ELU64Min).
func elu64(x float64) float64 { return expm1x64(maximumOf(x, approx.ELU64Min)) }
