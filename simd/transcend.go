package simd

import "math"

// transcendKernels is the transcendental family. Kernels receive slices of
// equal length.
type transcendKernels struct {
	exp, log, sigmoid, silu, tanh, softplus func(dst, x []float32)
	erf, gelu, geluTanh                     func(dst, x []float32)
	leakyReLU, elu                          func(dst, x []float32, alpha float32)
	// expSum sets dst[i] = e^(x[i]-shift), with x[i]-shift taken exactly, and
	// returns the float64 sum of what it stored; dst nil: only the sum.
	expSum func(dst, x []float32, shift float32) float64
}

var transcend table[transcendKernels]

// transcendKernelsF64 is the family's float64 part.
type transcendKernelsF64 struct {
	exp, log, sigmoid, tanh, silu, softplus func(dst, x []float64)
	erf, gelu, geluTanh                     func(dst, x []float64)
	leakyReLU, elu                          func(dst, x []float64, alpha float64)
	// expSum is expSum's float64 form (dst nil: only the sum).
	expSum func(dst, x []float64, shift float64) float64
}

var transcendF64 table[transcendKernelsF64]

// The accuracy bounds below are in float32 ULPs of the exact result: a bound
// of k ULP means |got - f(x)| <= k·ulp(f(x)), with f(x) the real value and
// ulp(v) the spacing of float32 values at v (2^(e-23) for |v| in
// [2^e, 2^(e+1)), 2^-149 in the denormal range); a correctly rounded result
// is within 0.5. The tests check them at every level against an exact
// reference (math/big, transcend_ref_test.go) by a sweep over float32 bit
// patterns (LANES_EXHAUSTIVE=1 sweeps all 2^32) and at the hardest inputs
// known; package doc lists the largest errors measured. Every level runs the
// same range reduction and polynomial (internal/approx), so levels agree
// within the bounds. Results are exact-rounded IEEE in the denormal range as
// well: nothing is flushed to zero early.

// Exp sets dst[i] = e^x[i], within 2 ULP. Exp(-Inf) = 0, Exp(+Inf) = +Inf,
// +Inf for x > 88.7228, denormal results down to x ≈ -103.97, NaN for NaN.
func Exp(dst, x []float32) {
	checkLen2("Exp", dst, x, "dst", "x")
	transcend.get().exp(dst, x)
}

// Log sets dst[i] to the natural logarithm of x[i], within 2 ULP (denormal
// inputs included). Log(0) = -Inf, Log(x<0) = NaN, Log(+Inf) = +Inf, NaN for NaN.
func Log(dst, x []float32) {
	checkLen2("Log", dst, x, "dst", "x")
	transcend.get().log(dst, x)
}

// ExpF64 sets dst[i] = e^x[i] for float64, within 1 ULP of float64 (the
// same ULP rule at float64's spacing; 0.774 ULP the largest error measured),
// with the same result at every level. ExpF64(-Inf) = 0, ExpF64(+Inf) = +Inf, +Inf for x > 709.78,
// denormal results down to x ≈ -745.13 (rounded once), NaN for NaN.
func ExpF64(dst, x []float64) {
	checkLen2("ExpF64", dst, x, "dst", "x")
	transcendF64.get().exp(dst, x)
}

// LogF64 sets dst[i] to the natural logarithm of x[i] for float64, within 1
// ULP of float64 (denormal inputs included; 0.795 ULP the largest error
// measured), with the same result at every level. LogF64(±0) = -Inf,
// LogF64(x<0) = NaN, LogF64(+Inf) = +Inf, NaN for NaN.
func LogF64(dst, x []float64) {
	checkLen2("LogF64", dst, x, "dst", "x")
	transcendF64.get().log(dst, x)
}

// SigmoidF64 is Sigmoid for float64: dst[i] = 1/(1+e^-x[i]), computed as
// e^x/(1+e^x) for x < 0 with e^-|x| from ExpF64's algorithm and the quotient
// corrected by its FMA remainder (one rounding, not two), within 2 ULP of
// float64 (1.348 ULP the largest error measured against math/big over 10⁶
// inputs), with the same result at every level. SigmoidF64(-800) = 0, tiny
// results accurate into the denormals, SigmoidF64(-Inf) = 0,
// SigmoidF64(+Inf) = 1, NaN for NaN.
func SigmoidF64(dst, x []float64) {
	checkLen2("SigmoidF64", dst, x, "dst", "x")
	transcendF64.get().sigmoid(dst, x)
}

// SiLUF64 is SiLU for float64: dst[i] = x[i]·SigmoidF64(x[i]), computed as
// x·e^x/(1+e^x) below 0 with the product x·e^x carried exactly into
// SigmoidF64's corrected quotient (below -708, x·e^x with the product taken
// before e^x's scaling, so denormal results round once), within 2 ULP of
// float64 (1.394 ULP the largest error measured against math/big over 10⁶
// inputs), with the same result at every level. SiLUF64(x > 40) = x,
// SiLUF64(-Inf) = -0 (the limit), SiLUF64(+Inf) = +Inf, SiLUF64(-0) = -0,
// NaN for NaN.
func SiLUF64(dst, x []float64) {
	checkLen2("SiLUF64", dst, x, "dst", "x")
	transcendF64.get().silu(dst, x)
}

// TanhF64 is Tanh for float64: E/(E+2) with E = e^(2|x|)-1 on ExpF64's
// reduction (no cancellation near 0) and the quotient corrected as
// SigmoidF64's, within 2 ULP of float64 (1.523 ULP the largest error
// measured against math/big over 10⁶ inputs), with the same result at every
// level. TanhF64(±large) = ±1, TanhF64(-0) = -0, NaN for NaN.
func TanhF64(dst, x []float64) {
	checkLen2("TanhF64", dst, x, "dst", "x")
	transcendF64.get().tanh(dst, x)
}

// SoftplusF64 is Softplus for float64: dst[i] = max(x, 0) + log1p(e^-|x|),
// log1p(e) as LogF64(u) + c/u with u = 1 + e rounded and c its exact error,
// within 2 ULP of float64 (1.788 ULP the largest error measured
// against math/big), with the same result at every level.
// SoftplusF64(x > 37) = x, SoftplusF64(+Inf) = +Inf, SoftplusF64(-Inf) = 0,
// tiny results (x < -37: e^x) accurate into the denormals, NaN for NaN.
func SoftplusF64(dst, x []float64) {
	checkLen2("SoftplusF64", dst, x, "dst", "x")
	transcendF64.get().softplus(dst, x)
}

// ErfF64 is Erf for float64, on fdlibm's rational approximations
// (internal/approx): x + x·P/Q(x²) below |x| = 0.84375, ±(0.845 + P/Q(|x|-1))
// below 1.25, ±(1 - e^(-x² - 0.5625 + R/S(1/x²))/|x|) above with x² exact,
// within 1 ULP of float64 (0.820 ULP the largest error measured against
// math/big), with the same result at every level. ErfF64(±Inf) = ±1 (and
// ±1 beyond |x| ≈ 5.9), ErfF64(-0) = -0, denormals x·2/√π rounded once, NaN
// for NaN.
func ErfF64(dst, x []float64) {
	checkLen2("ErfF64", dst, x, "dst", "x")
	transcendF64.get().erf(dst, x)
}

// GELUF64 is GELU for float64: dst[i] = x·Φ(x) = x/2·erfc(-x/√2), with
// erfc from ErfF64's approximations at y = |x|/√2 carried as a pair, and
// in the tail (y >= 1.25) |x|·Φ(-|x|) = e^(-x²/2 - 0.5625 - ln√2 + R/S)
// with x² exact (no division, no cancellation on the negative side), within
// 3 ULP of float64 (2.358 ULP the largest error measured against math/big),
// with the same result at every level. GELUF64(x > 10) = x, GELUF64(x < -39)
// = -0 (the result is below the denormals from -38.6), GELUF64(-0) = -0,
// GELUF64(+Inf) = +Inf, GELUF64(-Inf) = -0, NaN for NaN.
func GELUF64(dst, x []float64) {
	checkLen2("GELUF64", dst, x, "dst", "x")
	transcendF64.get().gelu(dst, x)
}

// GELUTanhF64 is GELUTanh for float64: dst[i] = x·σ(v), v = 2√(2/π)·(x +
// 0.044715·x³) carried to about 2^-100 relative (the constants as pairs,
// x² and x³ exact), then SiLUF64's corrected quotient with e^-|v|, within
// 2 ULP of float64 (1.415 ULP the largest error measured against
// math/big), with the same result at every level. GELUTanhF64(x > 10) = x,
// GELUTanhF64(x < -25) = -0 (below the denormals from about -22),
// GELUTanhF64(-0) = -0, GELUTanhF64(+Inf) = +Inf, GELUTanhF64(-Inf) = -0,
// NaN for NaN.
func GELUTanhF64(dst, x []float64) {
	checkLen2("GELUTanhF64", dst, x, "dst", "x")
	transcendF64.get().geluTanh(dst, x)
}

// LeakyReLUF64 is LeakyReLU for float64: dst[i] = x[i] if x[i] > 0, else
// alpha·x[i] (one rounded product). NaN stays NaN.
func LeakyReLUF64(dst, x []float64, alpha float64) {
	checkLen2("LeakyReLUF64", dst, x, "dst", "x")
	transcendF64.get().leakyReLU(dst, x, alpha)
}

// ELUF64 is ELU for float64: dst[i] = x[i] if x[i] > 0, else alpha·(e^x[i]
// - 1), e^x - 1 on ExpF64's reduction without cancellation (TanhF64's
// expm1), within 1 ULP of float64 before the product with alpha (0.852 ULP
// the largest error measured against math/big over 2·10⁵ inputs), with the
// same result at every level. ELUF64(-Inf) = -alpha, ELUF64(-0) = 0 (e^-0 -
// 1 = +0), NaN for NaN.
func ELUF64(dst, x []float64, alpha float64) {
	checkLen2("ELUF64", dst, x, "dst", "x")
	transcendF64.get().elu(dst, x, alpha)
}

// Sigmoid sets dst[i] = 1/(1+e^-x[i]), within 3 ULP. For x < 0 it is computed
// as e^x/(1+e^x), so tiny results are accurate down to the denormals:
// Sigmoid(-100) = 3.7e-44 (the correctly rounded value, not 0 and not NaN),
// Sigmoid(-Inf) = 0, Sigmoid(+Inf) = 1, NaN for NaN.
func Sigmoid(dst, x []float32) {
	checkLen2("Sigmoid", dst, x, "dst", "x")
	transcend.get().sigmoid(dst, x)
}

// SiLU sets dst[i] = x[i]·Sigmoid(x[i]) (also called swish), within 3 ULP.
// SiLU(-Inf) = -0 (the limit), SiLU(+Inf) = +Inf, NaN for NaN.
func SiLU(dst, x []float32) {
	checkLen2("SiLU", dst, x, "dst", "x")
	transcend.get().silu(dst, x)
}

// Tanh sets dst[i] to the hyperbolic tangent of x[i], within 3 ULP, computed
// as E/(E+2) with E = e^(2|x|)-1 (no cancellation near 0). Tanh(±large) = ±1,
// Tanh(-0) = -0, NaN for NaN.
func Tanh(dst, x []float32) {
	checkLen2("Tanh", dst, x, "dst", "x")
	transcend.get().tanh(dst, x)
}

// Softplus sets dst[i] = log(1+e^x[i]), within 3 ULP, as
// max(x,0) + log1p(e^-|x|): Softplus(100) = 100, Softplus(-100) = 3.7e-44,
// Softplus(+Inf) = +Inf, Softplus(-Inf) = 0, NaN for NaN.
func Softplus(dst, x []float32) {
	checkLen2("Softplus", dst, x, "dst", "x")
	transcend.get().softplus(dst, x)
}

// Erf sets dst[i] to the error function of x[i], within 3 ULP: x·P(x²) below
// |x| = 0.875, ±(1 - e^(-x²)·Q) above. Erf(±Inf) = ±1, Erf(-0) = -0, NaN for NaN.
func Erf(dst, x []float32) {
	checkLen2("Erf", dst, x, "dst", "x")
	transcend.get().erf(dst, x)
}

// GELU sets dst[i] = x[i]·Φ(x[i]) = x/2·(1+erf(x/√2)), the exact (erf) form,
// within 4 ULP, or within 1e-7 absolute where |result| < 1e-6. It is computed
// from Φ(-|x|) = e^(-x²/2)·Q/2 with x² exact, so the negative side has no
// cancellation. GELU(+Inf) = +Inf, GELU(-Inf) = -0, NaN for NaN.
func GELU(dst, x []float32) {
	checkLen2("GELU", dst, x, "dst", "x")
	transcend.get().gelu(dst, x)
}

// GELUTanh sets dst[i] = x/2·(1+tanh(√(2/π)·(x+0.044715·x³))), the tanh
// approximation of GELU used by GPT-2 and BERT, within 4 ULP (or 1e-7
// absolute where |result| < 1e-6), computed as x/(1+e^w) with w in float64.
// GELUTanh(+Inf) = +Inf, GELUTanh(-Inf) = -0, NaN for NaN.
func GELUTanh(dst, x []float32) {
	checkLen2("GELUTanh", dst, x, "dst", "x")
	transcend.get().geluTanh(dst, x)
}

// LeakyReLU sets dst[i] = x[i] if x[i] > 0, else alpha·x[i] (exact: one
// rounded product). NaN stays NaN.
func LeakyReLU(dst, x []float32, alpha float32) {
	checkLen2("LeakyReLU", dst, x, "dst", "x")
	transcend.get().leakyReLU(dst, x, alpha)
}

// ELU sets dst[i] = x[i] if x[i] > 0, else alpha·(e^x[i] - 1), with e^x - 1
// computed without cancellation (within 2 ULP before the product with alpha).
// ELU(-Inf) = -alpha, NaN for NaN.
func ELU(dst, x []float32, alpha float32) {
	checkLen2("ELU", dst, x, "dst", "x")
	transcend.get().elu(dst, x, alpha)
}

// Softmax sets dst = e^(x - max x) / Σ e^(x - max x) in three passes (the max,
// the exponentials with their float64 sum, one scaling), allocating nothing.
// x[i] - max is carried exactly into the exponential and the sum is
// accumulated in float64, so every output is within 4 ULP of the exact
// softmax and the outputs sum to 1 within 1e-6. dst may be x.
//
// Special rows give NumPy's result for exp(x - x.max()) / sum(...): a row with
// +Inf, a row of only -Inf, or a row with NaN gives NaN everywhere. An empty
// row is fine and does nothing.
func Softmax(dst, x []float32) {
	checkLen2("Softmax", dst, x, "dst", "x")
	if len(x) == 0 {
		return
	}
	m := Max(x)
	k := transcend.get()
	sum := k.expSum(dst, x, m)
	Scale(dst, dst, float32(1/sum))
}

// LogSoftmax sets dst = x - max x - log Σ e^(x - max x), each element within
// 4 ULP or 1e-6 absolute of the exact result (the final subtraction is done
// in float64; the absolute part covers results near 0, as LogSumExp's).
// Special rows as Softmax: NaN everywhere. dst may be x.
func LogSoftmax(dst, x []float32) {
	checkLen2("LogSoftmax", dst, x, "dst", "x")
	if len(x) == 0 {
		return
	}
	m := Max(x)
	sum := transcend.get().expSum(nil, x, m)
	subF64(dst, x, float64(m)+math.Log(sum))
}

// LogSumExp returns log Σ e^x[i], computed as max + log Σ e^(x - max) with the
// sum in float64, within 2 ULP or 3e-7 absolute, whichever is larger: the
// exponentials are float32 values (2^-22 relative each at most), so where the
// result is near 0 by cancellation (max ≈ -log Σ e^(x - max)) only the
// absolute bound holds; LogSumExp([-0.45867515, -1]) is 2.8e-9 for the exact
// -4.5e-10. It returns -Inf for an empty slice or one of only -Inf (as
// scipy.special.logsumexp), +Inf if any element is +Inf (and none is NaN),
// and NaN if any element is NaN.
func LogSumExp(x []float32) float32 {
	if len(x) == 0 {
		return float32(math.Inf(-1))
	}
	m := Max(x)
	if math.IsInf(float64(m), 0) || m != m {
		return m // +Inf, all -Inf, or NaN
	}
	sum := transcend.get().expSum(nil, x, m)
	return float32(float64(m) + math.Log(sum))
}

// SoftmaxF64 is Softmax for float64: dst = e^(x - max x) / Σ e^(x - max x)
// in three passes (MaxF64, the exponentials with their sum, one ScaleF64),
// allocating nothing. x[i] - max is carried exactly into the exponential
// (ExpF64's algorithm, within 1 ULP), so every output is within 2 ULP plus
// the sum's relative error (SumF64's bound, len(x)·2⁻⁵³) of the exact
// softmax (the largest error measured against math/big, transcend_f64 tests:
// 3.5 ULP for rows up to 257 long, 15.8 ULP for 4099 at the generic level,
// whose sum is one sequential chain). dst may be x. Special rows as Softmax: a row with +Inf, a row of
// only -Inf, or a row with NaN gives NaN everywhere; an empty row does
// nothing.
func SoftmaxF64(dst, x []float64) {
	checkLen2("SoftmaxF64", dst, x, "dst", "x")
	if len(x) == 0 {
		return
	}
	m := MaxF64(x)
	sum := transcendF64.get().expSum(dst, x, m)
	ScaleF64(dst, dst, 1/sum)
}

// LogSoftmaxF64 is LogSoftmax for float64: dst = (x - max x) - log Σ e^(x -
// max x), the two subtractions rounded apart (both terms are <= 0, so
// nothing cancels). Each element is within 1.5 ULP plus the error of the
// logarithm of the sum, (len(x)+2)·2⁻⁵³ absolute at most (measured: 1.45 ULP,
// or 2.8e-15 absolute for a 4099-long row). Special rows as
// Softmax: NaN everywhere. dst may be x.
func LogSoftmaxF64(dst, x []float64) {
	checkLen2("LogSoftmaxF64", dst, x, "dst", "x")
	if len(x) == 0 {
		return
	}
	m := MaxF64(x)
	sum := transcendF64.get().expSum(nil, x, m)
	AddScalarF64(dst, x, -m)
	AddScalarF64(dst, dst, -math.Log(sum))
}

// LogSumExpF64 is LogSumExp for float64: max + log Σ e^(x - max), the
// exponentials of the exact differences summed in float64, within 1 ULP
// plus (len(x)+2+|log Σ|)·2⁻⁵³ absolute (the sum's error and the logarithm's
// rounding; where the result is near 0 by cancellation only the absolute part
// holds; measured: 0.93 ULP, or 5.4e-16 absolute). It returns
// -Inf for an empty slice or one of only -Inf, +Inf if any element is +Inf
// (and none is NaN), and NaN if any element is NaN.
func LogSumExpF64(x []float64) float64 {
	if len(x) == 0 {
		return math.Inf(-1)
	}
	m := MaxF64(x)
	if math.IsInf(m, 0) || m != m {
		return m // +Inf, all -Inf, or NaN
	}
	return m + math.Log(transcendF64.get().expSum(nil, x, m))
}

// expSumOf joins the storing and the sum-only kernels into the family's
// expSum (dst nil: only the sum).
func expSumOf[T float](store func(dst, x []T, shift T) float64, only func(x []T, shift T) float64) func(dst, x []T, shift T) float64 {
	return func(dst, x []T, shift T) float64 {
		if dst == nil {
			return only(x, shift)
		}
		return store(dst, x, shift)
	}
}
