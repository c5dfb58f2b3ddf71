// Package approx holds the constants of lanes' transcendental approximations:
// the one table that the generic Go kernels (package simd) and the assembly
// generators (asm/gen/transcend) both read, so every level runs the same
// algorithm. Each block says how its numbers were derived and what error they
// give; approx_test.go checks those claims in float64.
package approx

import "math"

// Exp range reduction (Cody-Waite): x = n·ln2 + r with n = round(x·Log2E) and
// r = (x - n·Ln2Hi) - n·Ln2Lo. Ln2Hi has its 9 low significand bits clear, so
// n·Ln2Hi is exact for |n| < 2^9 and the first subtraction is exact; Ln2Lo is
// the float32 nearest ln2 - Ln2Hi. |r| <= ln2/2 + 2^-20.
const (
	Log2E = 1.44269504088896341 // 1/ln2
	Ln2Hi = 0.693145751953125   // 0x3f317200
	Ln2Lo = 1.428606765330187e-06
)

// Exp limits: inputs are clamped to [ExpMin, ExpMax] before the reduction, so
// n stays in [-159, 128] (split in two halves above 2^-126 where the level
// scales with integer bit tricks): e^ExpMax overflows to +Inf and e^ExpMin
// rounds to 0, as e^x does for every x beyond them. x·e^x (SiLU) also rounds
// to -0 for x < ExpMin.
const (
	ExpMax = 89.0
	ExpMin = -110.0
	// SiLUMin: |x|·e^ExpMin rounds to 0 for |x| <= 128; SiLU raises its input
	// to SiLUMin, so x·e^x of any x < ExpMin comes out -0.
	SiLUMin = -128.0
)

// Expm1Poly are the coefficients c2..c7 of expm1(r) = r + r²·(c2 + c3·r + ... +
// c7·r⁵) on |r| <= ln2/2: the Taylor coefficients 1/k!, rounded to float32.
// Truncation and coefficient rounding together stay below 1.8e-8 relative
// (0.3 float32 ULP, measured by approx_test.go); exp = 2^n·(1 + expm1(r)).
var Expm1Poly = [...]float32{
	1.0 / 2,
	1.0 / 6,
	1.0 / 24,
	1.0 / 120,
	1.0 / 720,
	1.0 / 5040,
}

// Log reduction: x = m·2^k with m in [0.75, 1.5) (the interval AVX-512's
// VGETMANTPS gives with imm8 = 3, and what the bit manipulation of the other
// levels reproduces), then s = (m-1)/(m+1) in [-1/7, 1/5] and
// log(m) = 2·atanh(s) = 2s + s³·R(s²). log1p(e) for e in [0, 1] (Softplus)
// uses the same series with s = e/(2+e) in [0, 1/3].
//
// AtanhPoly are the coefficients of R(z) = Σ_{k>=1} 2·z^(k-1)/(2k+1), the
// Taylor series of (2·atanh(s) - 2s)/s³ in z = s², cut after 8 terms and
// rounded to float32: for |s| <= 1/3 the relative error stays below 1e-9
// (0.02 float32 ULP, measured by approx_test.go).
var AtanhPoly = [...]float32{
	2.0 / 3,
	2.0 / 5,
	2.0 / 7,
	2.0 / 9,
	2.0 / 11,
	2.0 / 13,
	2.0 / 15,
	2.0 / 17,
}

// TanhMax: tanh(x) rounds to ±1 in float32 for |x| > 9.01; inputs are clamped
// to it so expm1(2|x|) stays finite.
const TanhMax = 10.0

// Expm1Min: expm1(x) rounds to -1 for x < -17.4; inputs are clamped to it so
// 2^n stays a normal float32 (n >= -29).
const Expm1Min = -20.0

// Erf below ErfSplit: erf(x) = x·(ErfC0Hi + (ErfC0Lo + z·P(z))), z = x², with
// 2/√π as a float32 pair and ErfPoly = P fitted by `go run ./internal/approx/fit`
// (near-minimax relative error of the correction term, 0.46 ULP of it with
// float32 coefficients; the correction is at most a quarter of the result).
const (
	ErfSplit = 0.875
	ErfMax   = 4.5 // erf rounds to ±1 beyond 3.92; the tail clamps |x| to ErfMax
	ErfC0Hi  = 1.1283792
	ErfC0Lo  = -5.8635383e-08
)

var ErfPoly = [...]float32{
	-0.37612638,
	0.11283722,
	-0.026858341,
	0.00519204,
	-0.0007969745,
	7.345451e-05,
}

// erfc(a) = e^(-a²)·Q(u) for a >= 0, with u = 1/(1+a/2) - ErfcxCentre (u in
// [-0.36, 1/3] for a in [0, 4.5]; beyond, erfc is below 2^-25 of erf and of
// the GELU results that use it). ErfcxPoly = Q, fitted by
// `go run ./internal/approx/fit`: relative error 1.1e-8 (0.18 ULP) with
// float32 coefficients. a² enters the exponential exactly, as a float32 pair.
const ErfcxCentre = float32(2.0 / 3)

var ErfcxPoly = [...]float32{
	0.4275836,
	1.2294542,
	1.2818418,
	0.6077502,
	-0.12970547,
	-0.20904785,
	0.07236924,
	0.072686315,
	-0.061765842,
	0.00033611662,
	0.04371662,
}

// GELU limits: GELU(x) = x for x > GELUMax (Φ(x) rounds to 1) and -0 for
// x < GELUMin (|GELU(x)| < 6e-10 there, inside the 1e-7 absolute bound);
// inputs are clamped to them, so x²/2 <= 21.2 needs no clamp in the
// exponential and |x|/√2 <= 4.6 stays in ErfcxPoly's fitted range.
const (
	GELUMax = 10.0
	GELUMin = -6.5
)

// GELUTanh: 0.5·x·(1+tanh(√(2/π)·(x+0.044715·x³))) = x/(1+e^w) with
// w = -x·(TanhC1 + TanhC3·x²), computed in float64 and split into a float32
// pair, so the exponential sees w exactly. Inputs are clamped to
// ±GELUTanhMax (beyond it the result is x, or -0).
const (
	TanhC1      = 1.5957691216057308 // 2·√(2/π)
	TanhC3      = 0.071354816272782  // 2·√(2/π)·0.044715
	GELUTanhMax = 20.0
)

// Float64 exp (ExpF64): x is clamped to [Exp64Min, Exp64Max] (e^x overflows
// above 709.79 and rounds to 0 below -745.14), n = round(x·Log2E) and
// x = n·ln2 + r with r = hi - lo, hi = x - n·Ln2Hi64 (exact: Ln2Hi64 is ln2
// cut to 32 significant bits and |n| <= 1077 has 11) and lo = n·Ln2Lo64.
// e^r = 1 + r + r²·P(r) with P the Taylor coefficients 1/k!, k = 2..13
// (Expm1Poly64): the truncation is below 5e-18 relative on |r| <= ln2/2
// (0.05 float64 ULP); 1 + hi is split exactly (Fast2Sum) so that the sum
// rounds once, and the result is within 0.9 ULP before the scaling by 2^n
// (measured: see the package doc of simd).
const (
	Exp64Max = 710.0
	Exp64Min = -746.0
	// Tanh64Max clamps TanhF64's |x|: above 19.06, 1 - tanh x < 2^-54 and
	// tanh x rounds to 1 in float64; at 20, e^(2·20) - 1 is far from overflow.
	Tanh64Max = 20.0
	Ln2Hi64   = 0x1.62e42feep-1
	Ln2Lo64   = math.Ln2 - Ln2Hi64 // an exact constant expression, rounded once
)

var Expm1Poly64 = [...]float64{
	1.0 / 2,
	1.0 / 6,
	1.0 / 24,
	1.0 / 120,
	1.0 / 720,
	1.0 / 5040,
	1.0 / 40320,
	1.0 / 362880,
	1.0 / 3628800,
	1.0 / 39916800,
	1.0 / 479001600,
	1.0 / 6227020800,
}

// Float64 log (LogF64): x = m·2^k with m in [√2/2, √2), f = m - 1 (exact),
// s = f/(2+f) and log(1+f) = 2·atanh(s) = f - (h - s·(h + R)) with h = f²/2
// and R = z·P(z), z = s², P(z) = Σ 2·z^(j-1)/(2j+1), j = 1..11 (Log1pPoly64,
// the atanh Taylor series: on |s| <= 0.1716 the truncation is below 1e-18
// relative, 0.01 ULP). f is exact and carries the result; the correction's
// roundings stay below 0.4 ULP; log x = k·Ln2Hi64 + (f - (h - (s·(h + R) +
// k·Ln2Lo64))), with k·Ln2Hi64 exact (|k| <= 1075).
var Log1pPoly64 = [...]float64{
	2.0 / 3,
	2.0 / 5,
	2.0 / 7,
	2.0 / 9,
	2.0 / 11,
	2.0 / 13,
	2.0 / 15,
	2.0 / 17,
	2.0 / 19,
	2.0 / 21,
	2.0 / 23,
}
