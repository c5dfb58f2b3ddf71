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

// Float64 erf and erfc (ErfF64, GELUF64): the rational approximations of
// FreeBSD's msun s_erf.c (as in Go's math.Erf), which came with this notice:
//
//	Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//	Developed at SunPro, a Sun Microsystems, Inc. business.
//	Permission to use, copy, modify, and distribute this
//	software is freely granted, provided that this notice
//	is preserved.
//
// For y in [0, ErfSplit64): erf(y) = y + y·PP(z)/QQ(z), z = y² (|PP/QQ -
// (erf(y)-y)/y| <= 2^-57.9). For y in [ErfSplit64, ErfNear64): erf(y) =
// Erx64 + PA(s)/QA(s), s = y - 1 (|PA/QA - (erf(y)-Erx64)| <= 2^-59.06;
// Erx64 has 24 significant bits, so 1 - Erx64 is exact). For y >=
// ErfNear64: erfc(y) = e^(-y² - 0.5625 + R(s)/S(s))/y, s = 1/y², with RA/SA
// for y < 1/0.35 (s > ErfTailSplit64) and RB/SB up to y = 28 (|R/S - f| <
// 2^-61.5). The polynomials are listed from the constant term up, the
// denominators with their leading 1.
const (
	Erx64          = 8.45062911510467529297e-01
	ErfSplit64     = 0.84375
	ErfNear64      = 1.25
	ErfTailSplit64 = 0.35 * 0.35 // s = 1/y² above it: y < 1/0.35
	// Erf64Max clamps ErfF64's |x| in the tail: erfc(6) < 2^-54, erf rounds
	// to ±1 beyond.
	Erf64Max = 6.0
	// GELUF64: x·Φ(x) rounds to x above GELU64Max (Φ(-10) < 2^-76) and to
	// -0 below GELU64Min (|x·Φ(x)| < 2^-1075); y = |x|/√2 <= 27.6 stays
	// in RB/SB's range. Sqrt1_2Hi + Sqrt1_2Lo is 1/√2 to 106 bits (math/big).
	GELU64Max = 10.0
	GELU64Min = -39.0
	Sqrt1_2Hi = 0x1.6a09e667f3bcdp-01
	Sqrt1_2Lo = -0x1.bdd3413b26456p-55
	// GELUK64Hi + GELUK64Lo = 0.5625 + ln2/2: erfc(y)/√2 =
	// e^(-y² - GELUK64 + R/S)/y with ln √2 folded into the exponent.
	GELUK64Hi = 0x1.d17217f7d1cf8p-01
	GELUK64Lo = -0x1.950d871319ffp-55
)

var (
	ErfPP64 = [...]float64{1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02, -5.77027029648944159157e-03, -2.37630166566501626084e-05}
	ErfQQ64 = [...]float64{1, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03, 1.32494738004321644526e-04, -3.96022827877536812320e-06}
	ErfPA64 = [...]float64{-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01, 3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02, -2.16637559486879084300e-03}
	ErfQA64 = [...]float64{1, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02, 1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02}
	ErfRA64 = [...]float64{-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01, -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02, -8.12874355063065934246e+01, -9.81432934416914548592e+00}
	ErfSA64 = [...]float64{1, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02, 6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02}
	ErfRB64 = [...]float64{-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01, -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03, -4.83519191608651397019e+02}
	ErfSB64 = [...]float64{1, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02, -2.24409524465858183362e+01}
)

// GELUTanhF64: x·σ(v), v = x·(C1 + C3·x²) with C1 = 2·√(2/π) and C3 =
// C1·0.044715 each as a pair of float64 (math/big, 106 bits), so that v is
// carried to about 2^-100 relative: e^-|v| near the underflow (|v| ≈ 745)
// needs v to 2^-63. x is clamped to [GELUTanh64Min, GELU64Max]: beyond 10,
// σ(v) rounds to 1; below -25, v < -1155 and x·e^v rounds to -0.
const (
	GELUTanhC1Hi  = 0x1.9884533d43651p+00
	GELUTanhC1Lo  = -0x1.cbc0d30ebfd15p-54
	GELUTanhC3Hi  = 0x1.2444f2a4d8b4bp-04
	GELUTanhC3Lo  = -0x1.6c843a29d1c7p-61
	GELUTanh64Min = -25.0
	// ELU64Min clamps ELUF64's x: e^x - 1 rounds to -1 below -38.
	ELU64Min = -40.0
)
