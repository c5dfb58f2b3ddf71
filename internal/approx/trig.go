package approx

// Sin, Cos and Tan of float32 (package simd) reduce and evaluate in float64:
// x = n·π/2 + r with n = round(x·TwoOverPi), r = fma(-n, PiO2Hi, x) then
// fma(-n, PiO2Lo, r) (PiO2Hi the float64 nearest π/2, PiO2Lo the float64
// nearest π/2 - PiO2Hi, so the pair carries π/2 to about 2^-107). For |x| <=
// TrigMax, n < 2^24 and the reduction's error is below 2^-82 absolute, far
// below any float32 input's distance to a multiple of π/2 (the sweeps of
// simd's tests find no error above the rounding to float32). Beyond TrigMax
// the kernels leave the element to float64 math.Sin/Cos/Tan (Payne-Hanek),
// so no input gives a silently wrong number.
const (
	TwoOverPi = 0.63661977236758134308 // 2/π
	PiO2Hi    = 1.5707963267948966     // 0x3ff921fb54442d18
	PiO2Lo    = 6.123233995736766e-17  // π/2 - PiO2Hi
	TrigMax   = 0x1p24
	// TrigTiny: below it sin(x) and tan(x) round to x in float32 (x²/3 <
	// 2^-28), which also keeps the sign of -0.
	TrigTiny = 0x1p-13
)

// SinPoly are s3..s11 of sin(r) = r + r³·(s3 + s5·r² + ... + s11·r⁸) and
// CosPoly c2..c12 of cos(r) = 1 + r²·(c2 + c4·r² + ... + c12·r¹⁰), the Taylor
// coefficients on |r| <= π/4 (+2^-20) in float64: truncation below 1e-11
// relative for sin and 1e-12 for cos (measured by trig_test.go), 2^-36 and
// 2^-39, so the float64 evaluation and the one rounding to float32 decide.
var SinPoly = [...]float64{
	-1.0 / 6,
	1.0 / 120,
	-1.0 / 5040,
	1.0 / 362880,
	-1.0 / 39916800,
}

var CosPoly = [...]float64{
	-1.0 / 2,
	1.0 / 24,
	-1.0 / 720,
	1.0 / 40320,
	-1.0 / 3628800,
	1.0 / 479001600,
}

// Log1p and Expm1 of float32 (package simd) evaluate LogF64's and ELUF64's
// expm1 in float64 and round once: log64(1 + x) (1 + x exact in float64 for
// 2^-29 <= |x| < 2^29) and expm1x64 of x clamped to [ELU64Min, Expm1Max]
// (e^x - 1 rounds to -1 below, and to +Inf in float32 above: e^100 > 2^128).
// Below Expm1Tiny in magnitude e^x - 1 and log(1 + x) round to x in float32
// (relative distance |x|/2 < 2^-26), which also keeps the sign of -0.
const (
	Expm1Max  = 100.0
	Expm1Tiny = 0x1p-25
)
