// Package simd provides float32 slice kernels (elementwise arithmetic, reductions,
// and more in other files) that run with AVX-512, AVX2 or NEON assembly when the
// CPU has it and portable Go otherwise.
//
// Conventions shared by every function:
//
//   - The destination comes first. All slices of one call must have the same
//     length; a mismatch is a programmer error and panics with a message naming
//     the function and every length, e.g.
//     "simd.Add: length mismatch: len(dst)=3 len(a)=4 len(b)=4".
//   - dst may be the very same slice as an input (in place), but must not
//     partially overlap one; a partial overlap panics.
//   - Empty slices are fine: elementwise kernels do nothing, Sum returns 0,
//     ArgMax/ArgMin return -1. Max and Min of an empty slice panic.
//   - NaN propagates as in NumPy: a NaN input gives a NaN output for Maximum,
//     Minimum, ReLU, Clamp, Max and Min; ArgMax and ArgMin return the index of
//     the first NaN.
//   - Elementwise arithmetic (Add, Sub, Mul, Div, Sqrt, AddScalar, Scale, Abs,
//     Neg, Maximum, Minimum, ReLU, Clamp) is exact IEEE-754 single precision and
//     gives bit-identical results at every level. Axpy may use a fused
//     multiply-add (one rounding instead of two), so results can differ by 1 ULP
//     between levels.
//   - Reductions accumulate in several independent float32 lanes, so the order
//     of additions differs from a sequential loop: the error of Sum, Dot and
//     SumAbs is within n·2⁻²⁴·Σ|terms| of the exact result. Norm accumulates in
//     float64 and is within 1 ULP of the correctly rounded result without
//     overflow or underflow for any finite input.
//   - The transcendental functions state their accuracy in float32 ULPs of
//     the exact result: within k ULP means |got - f(x)| <= k·ulp(f(x)), with
//     ulp(v) the spacing of float32 values at v (a correctly rounded result is
//     within 0.5). The bounds, with in parentheses the largest error measured
//     against an exact (math/big) reference at the AVX-512, AVX2 and generic
//     levels over every x with 2^-20 <= |x| < 2^8 (for Log every positive x),
//     and the same at AVX-512 over every finite x: Exp 2 (1.06), Log 2
//     (1.97), Sigmoid 3 (2.40), SiLU 3 (2.77), Tanh 3 (2.42), Softplus 3
//     (2.80), ELU 2 before the product with alpha (0.87), Erf 3 (1.01), GELU
//     4 (3.71), GELUTanh 4 (1.99); GELU and GELUTanh also accept 1e-7
//     absolute where |f(x)| < 1e-6. Softmax is within 4 ULP, LogSoftmax
//     within 4 ULP or 1e-6 absolute, LogSumExp within 2 ULP or 3e-7
//     absolute. The tests check every bound at every level against the exact
//     reference, over a stride through all 2^32 inputs (LANES_EXHAUSTIVE=1:
//     all of them) and the hardest inputs known.
//   - No kernel allocates.
//
// The level is chosen by package dispatch: once at start-up from the CPU and
// LANES_SIMD, and at run time by dispatch.SetLevel. Each call reads the level
// once, without a lock.
package simd
