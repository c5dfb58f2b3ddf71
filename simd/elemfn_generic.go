package simd

import (
	"math"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/internal/approx"
)

// The generic kernels of Sin, Cos, Tan, Log1p and Expm1 restate, one element
// at a time, the algorithm of the generated assembly (asm/gen/transcend,
// asm/gen/arm64) with the constants of internal/approx.

func init() {
	elemfn.set(dispatch.Generic, &elemfnKernels{
		sin: trigGeneric(sin64r), cos: trigGeneric(cos64r), tan: trigGeneric(tan64r),
		log1p: mapGeneric(log1p32), expm1: mapGeneric(expm132),
	})
}

const trigMax = float32(approx.TrigMax)

// trigGeneric maps f over x, leaving |x| > TrigMax to trigFix (stored
// unchanged, counted).
func trigGeneric(f func(x float64) float64) func(dst, x []float32) int {
	return func(dst, x []float32) int {
		left := 0
		x = x[:len(dst)]
		for i, v := range x {
			if v > trigMax || v < -trigMax {
				dst[i] = v
				left++
				continue
			}
			dst[i] = float32(f(float64(v)))
		}
		return left
	}
}

// trigReduce returns r and the quadrant n mod 4 with x = n·π/2 + r, |r| <=
// π/4 + 2^-20, for |x| <= TrigMax (NaN and ±Inf give a NaN r).
func trigReduce(x float64) (r float64, q int) {
	n := math.RoundToEven(x * approx.TwoOverPi)
	r = math.FMA(-n, approx.PiO2Hi, x)
	r = math.FMA(-n, approx.PiO2Lo, r)
	if n != n { // NaN or ±Inf input: r is NaN already
		return r, 0
	}
	return r, int(int32(n)) & 3
}

// sinPoly and cosPoly are sin(r) and cos(r) on the reduced range.
func sinPoly(r float64) float64 {
	z := r * r
	return math.FMA(r*z, horner64(approx.SinPoly[:], z), r)
}

func cosPoly(r float64) float64 {
	z := r * r
	return math.FMA(z, horner64(approx.CosPoly[:], z), 1)
}

// sin64r, cos64r, tan64r: the float64 values that round to the float32
// results; |x| < TrigTiny gives x (sin, tan), keeping -0.
func sin64r(x float64) float64 {
	if math.Abs(x) < approx.TrigTiny {
		return x
	}
	r, q := trigReduce(x)
	s := sinPoly(r)
	if q&1 != 0 {
		s = cosPoly(r)
	}
	if q&2 != 0 {
		s = -s
	}
	return s
}

func cos64r(x float64) float64 {
	r, q := trigReduce(x)
	q++
	c := sinPoly(r)
	if q&1 != 0 {
		c = cosPoly(r)
	}
	if q&2 != 0 {
		c = -c
	}
	return c
}

// tan64r: s/c in even quadrants, -c/s in odd ones.
func tan64r(x float64) float64 {
	if math.Abs(x) < approx.TrigTiny {
		return x
	}
	r, q := trigReduce(x)
	s, c := sinPoly(r), cosPoly(r)
	if q&1 != 0 {
		return -c / s
	}
	return s / c
}

// log1p32 is log64(1 + x) rounded to float32: 1 + x is exact in float64
// for 2^-29 <= |x| < 2^29 (and within 2^-53 relative above, which moves the
// logarithm by less than 2^-53 absolute); |x| < Expm1Tiny gives x.
func log1p32(x float32) float32 {
	if absOf(x) < approx.Expm1Tiny {
		return x
	}
	return float32(log64(1 + float64(x)))
}

// expm132 is expm1x64 rounded to float32, x clamped to [ELU64Min,
// Expm1Max] (e^x - 1 rounds to -1 below, to +Inf above); |x| < Expm1Tiny
// gives x.
func expm132(x float32) float32 {
	if absOf(x) < approx.Expm1Tiny {
		return x
	}
	return float32(expm1x64(minimumOf(maximumOf(float64(x), approx.ELU64Min), approx.Expm1Max)))
}
