package simd

import "math"

// elemfnKernels is the family of Sin, Cos, Tan, Log1p and Expm1. Kernels
// receive slices of equal length. The sin, cos and tan kernels compute every
// element with |x| <= approx.TrigMax (and NaN, ±Inf: NaN) and leave the others
// to the caller: they store such an x unchanged and return how many they
// left (trigFix then computes them from the input in float64).
type elemfnKernels struct {
	sin, cos, tan func(dst, x []float32) int
	log1p, expm1  func(dst, x []float32)
}

var elemfn table[elemfnKernels]

// Sin sets dst[i] = sin(x[i]), within 1 ULP (the bound rule of Exp; the
// sweeps measure 0.500 ULP at most, to three decimals: the reduction and
// the polynomial run in float64, within about 2^-12 float32 ULP, and round
// once to float32), at every level. |x| <= 2^24 reduces by Cody-Waite with a two-part float64 π/2 (internal/approx); larger |x| is
// computed by float64 math.Sin (Payne-Hanek reduction), so every input gives
// the correctly reduced result. Sin(±0) = ±0, Sin(±Inf) = NaN, NaN for NaN.
// dst may be x (exactly, not partly overlapping).
func Sin(dst, x []float32) {
	checkLen2("Sin", dst, x, "dst", "x")
	trigFix(dst, x, elemfn.get().sin(dst, x), math.Sin)
}

// Cos sets dst[i] = cos(x[i]), within 1 ULP, on Sin's reduction (0.500
// ULP the largest error measured), math.Cos beyond 2^24. Cos(±0) = 1,
// Cos(±Inf) = NaN, NaN for NaN. dst may be x.
func Cos(dst, x []float32) {
	checkLen2("Cos", dst, x, "dst", "x")
	trigFix(dst, x, elemfn.get().cos(dst, x), math.Cos)
}

// Tan sets dst[i] = tan(x[i]), within 1 ULP, as the float64 quotient of
// Sin's and Cos's polynomials on their common reduction, rounded once (0.500
// ULP the largest error measured; near the poles as well: the largest
// |Tan| of a float32 below 2^24 is Tan(252.89821) = 2.389e8), math.Tan beyond
// 2^24. Tan(±0) = ±0, Tan(±Inf) = NaN, NaN for NaN. dst may be x.
func Tan(dst, x []float32) {
	checkLen2("Tan", dst, x, "dst", "x")
	k := elemfn.get().tan
	if len(x) == 0 || &dst[0] != &x[0] {
		trigFix(dst, x, k(dst, x), math.Tan)
		return
	}
	// In place: a kernel's result can exceed 2^24 (near the poles), so the
	// elements it left are found in a copy of the input, a block at a time.
	var buf [256]float32
	for i := 0; i < len(x); i += len(buf) {
		b := buf[:min(len(buf), len(x)-i)]
		copy(b, x[i:])
		trigFix(dst[i:i+len(b)], b, k(dst[i:i+len(b)], b), math.Tan)
	}
}

// Log1p sets dst[i] = log(1 + x[i]), within 1 ULP (0.500 ULP the
// largest error measured), as LogF64's algorithm on 1 + x in float64 (exact
// there for 2^-29 <= |x| < 2^29) rounded once; |x| < 2^-25 gives x itself.
// Log1p(-1) = -Inf, Log1p(x < -1) = NaN, Log1p(+Inf) = +Inf, Log1p(-0) =
// -0, NaN for NaN. dst may be x.
func Log1p(dst, x []float32) {
	checkLen2("Log1p", dst, x, "dst", "x")
	elemfn.get().log1p(dst, x)
}

// Expm1 sets dst[i] = e^x[i] - 1, within 1 ULP (0.500 ULP the
// largest error measured), as ELUF64's expm1 in float64 (2^n·u + (2^n - 1),
// no cancellation near 0) rounded once; |x| < 2^-25 gives x itself.
// Expm1(-Inf) = -1, Expm1(+Inf) = +Inf (and for x > 88.7228), Expm1(-0) =
// -0, NaN for NaN. dst may be x.
func Expm1(dst, x []float32) {
	checkLen2("Expm1", dst, x, "dst", "x")
	elemfn.get().expm1(dst, x)
}

// trigFix computes, in float64 by f, the elements a sin, cos or tan kernel
// left (left of them, with |x| > approx.TrigMax), reading them from x, or,
// where dst is x, from dst, where the kernel stored them unchanged (Sin and
// Cos store nothing else above 1 in magnitude; Tan in place copies its input
// first). left == 0 costs nothing.
func trigFix(dst, x []float32, left int, f func(float64) float64) {
	if left == 0 {
		return
	}
	for i, v := range x {
		if v > trigMax || v < -trigMax {
			dst[i] = float32(f(float64(v)))
			if left--; left == 0 {
				return
			}
		}
	}
}

// trigKernel makes an assembly kernel (which stores x where |x| >
// TrigMax) a sin, cos or tan kernel of the family: it counts those
// elements first, before dst (possibly x) is written, behind a check of
// the largest magnitude by the Max and Min reductions, so that inputs
// within the bound cost two fast passes and no per-element test.
func trigKernel(k func(dst, x []float32)) func(dst, x []float32) int {
	return func(dst, x []float32) int {
		left := 0
		if len(x) > 0 {
			if m := max(Max(x), -Min(x)); !(m <= trigMax) { // NaN too: count
				for _, v := range x {
					if v > trigMax || v < -trigMax {
						left++
					}
				}
			}
		}
		k(dst, x)
		return left
	}
}
