// Package lanesblas is a gonum BLAS implementation (blas.Float64 and
// blas.Float32) whose hot routines run on lanes' SIMD kernels (package simd:
// AVX-512, AVX2, NEON or portable Go, chosen by package dispatch). Install it
// for a whole process with
//
//	blas64.Use(lanesblas.Implementation{})
//	blas32.Use(lanesblas.Implementation{})
//
// after which gonum's mat (Dense.Mul, Cholesky, LU, SVD...), stat, optimize
// and lapack reach lanes through blas64 and blas32.
//
// Implementation embeds gonum's own pure-Go implementation
// (gonum.org/v1/gonum/blas/gonum) and overrides, in both widths:
//
//   - Level 1: dot, axpy, scal, nrm2, asum, iamax, copy, swap. Unit
//     increments run on simd (Dot/DotF64, Axpy/AxpyF64, Scale/ScaleF64,
//     Norm/NormF64, SumAbs/SumAbsF64, ArgMax/ArgMin and Max/Min); copy is Go's
//     copy and swap a chunked copy through a stack buffer. Other increments,
//     and x and y that partially overlap, are delegated to gonum.
//   - Level 2: gemv (Sgemv/Dgemv), ger (an axpy per row of A), symv (a dot
//     and an axpy per row of the stored triangle), trmv and trsv (a dot or an
//     axpy per row) with unit increments; other increments, and vectors that
//     overlap A (or x overlapping y in symv), are delegated.
//   - Level 3: gemm (Sgemm/Dgemm, packed and threaded over lanes' worker
//     pool); syrk, syr2k, symm, trmm and trsm recursive on halves, the
//     off-diagonal blocks by lanes' gemm (syr2k's by two). The diagonal
//     blocks of 32 or fewer are, for trsm, gonum's unblocked routine; for
//     syrk and syr2k a gemm of the whole square block (alpha·op(A)·op(B)ᵀ)
//     into scratch whose triangle (plus its transpose for syr2k) is added
//     to C; for symm the stored triangle mirrored into a full square in
//     scratch, then one gemm; for trmm the triangle copied into a square
//     (zeros in the other half), then gemms on copies of 32-wide slices of
//     B. gemm multiplies every element of A it is given, where gonum's
//     trmm skips A's zeros, so an Inf or NaN in B reaches more elements of
//     the result than with gonum. trsm first scales B by alpha,
//     then solves with alpha = 1, so its rounding differs from gonum's,
//     which scales row by row; trmm multiplies by alpha in each block. syrk
//     and syr2k with alpha == 0 or k == 0, symm, trmm and trsm with alpha
//     == 0, and all five at sizes (n, or the order of A) of 32 or fewer, are
//     gonum's whole.
//
// Everything else is gonum's, through the embedded implementation.
//
// Arguments are checked exactly as gonum checks them, in gonum's order and
// with gonum's panic values (the strings of gonum's blas/gonum package), so a
// program that recovers gonum's panics sees the same ones.
//
// Semantics follow gonum where the kernels could differ:
//
//   - Snrm2/Dnrm2 neither overflow nor underflow for finite input (the simd
//     norms accumulate in float64 or rescale); a vector holding both ±Inf and
//     NaN gives gonum's NaN (the call is delegated when the simd norm is +Inf).
//   - Isamax/Idamax return the first index of the largest |x[i]|, as gonum;
//     when x holds a NaN the call is delegated, because gonum's rule (a NaN
//     is skipped unless it is x[0]) is not simd.ArgMax's (the first NaN).
//   - Results of dot, nrm2, asum, gemv and gemm are summed in a different
//     order than gonum's (several SIMD lanes, fused multiply-adds), within the
//     error bounds documented in package simd.
//   - Dgemm and Sgemm with alpha == 0 do not read A and B (gonum multiplies
//     them by zero, so an Inf there gives NaN in gonum and not here).
//
// Implementation is a value type with no state: it is safe for concurrent use.
package lanesblas
