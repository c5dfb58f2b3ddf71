package simd

// Dgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float64
// matrices: Sgemm's semantics, checks and panics at float64 (BLAS dgemm,
// row-major). op(X) is X or, when trans is set, Xᵀ; op(A) is m×k, op(B) is
// k×n and C is m×n. A is stored with row stride lda (m rows of k, or k rows
// of m when transA), B with ldb (k rows of n, or n rows of k when transB), C
// with ldc. When beta == 0, C's old contents are not read (NaN included);
// when alpha == 0 or k == 0, A and B are not read.
//
// Each element is a float64 dot product of length k accumulated in a
// different order than a sequential loop (fused multiply-adds at the SIMD
// levels): the error is within k·2⁻⁵³·Σ_p |A_ip|·|B_pj| (times |alpha|)
// plus the rounding of the beta term.
//
// Sizes that are negative, strides smaller than a row, or slices too short
// for the sizes and strides panic with a message naming them; the bounds
// are computed without overflow. C must not overlap A or B. Products of at
// least 2²² multiply-adds are split over the calling goroutine and the
// worker pool (see Sgemm and docs/workers.md); Dgemm is safe for concurrent
// use and, after warm-up, allocates nothing.
//
// The microkernels come from Sgemm's generators, emitted at float64:
//
//	AVX-512 8×16: 16 zmm accumulators (two vectors of 8 doubles a row); per
//	              k step 2 loads of B and 8 broadcasts of A for 16 FMAs;
//	AVX2     6×8: 12 ymm accumulators, 2 loads and 6 broadcasts per 12 FMAs
//	              (Sgemm's 6×16 at half the lanes);
//	NEON     8×6: 24 accumulators, 4 loads of A and 3 of B per 24 FMLAs by
//	              element (Sgemm's 8×12 at half the lanes);
//	generic  4×8.
//
// On AVX-512, 16 independent accumulators cover the FMA latency (4 cycles)
// times the two FMA pipes twice over, and 0.63 loads per FMA stay within two
// vector loads a cycle. Sgemm's 14-row plan at half the lanes (14×16, 28
// accumulators, 0.57 loads per FMA) was the first candidate, but at the
// sizes products usually have (multiples of 8) 14 rows leave a partial
// panel, computed in full into a scratch tile, in every column of tiles,
// and with a row stride that is a multiple of 4 KiB the 14 rows of a C tile
// share one set of the 12-way L1 where 8 rows fit. Measured on the shared
// Zen 5, the two alternating in one process (median of the time ratios,
// quartiles within ±20% on that machine): 8×16 faster by 3.6% (256³),
// 8.7% (512³), 8.5% (1024³) and 3.1% (2048³); 8×24 (24 accumulators, 0.46
// loads per FMA, but partial tiles along n) was within 2% of 14×16 from
// 256³ to 1024³.
//
// The blocking (blockingFor) follows the element size: kc = 384 (the
// 8×384 float64 panel of A is 24 KiB, half of Zen 5's 48 KiB L1), nc = 160
// columns (the kc×nc block of B is half of the 1 MiB L2) and mc the rows
// of a quarter of L3, or of three times L2 where cpuid reports no L3
// (1024 here); the blocks are then evened out (evenBlock).
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	checkGemm("Dgemm", transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// DgemmStrided computes batch products C_i = alpha·op(A_i)·op(B_i) + beta·C_i
// where X_i starts at element i·strideX of x (a stride of 0 shares one
// matrix between all products). Semantics and checks are Dgemm's, applied
// to every product, as SgemmStrided's are Sgemm's.
func DgemmStrided(transA, transB bool, m, n, k int, alpha float64, a []float64, lda, strideA int, b []float64, ldb, strideB int, beta float64, c []float64, ldc, strideC int, batch int) {
	gemmStrided("DgemmStrided", transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

// Dgemv computes y = alpha·op(A)·x + beta·y for the row-major m×n float64
// matrix A (row stride lda): Sgemv's semantics and checks at float64. Rows
// are DotF64 without transA and AxpyF64 with it, so the error bound is
// DotF64's, n·2⁻⁵³·Σ|A_ij·x_j| per element.
func Dgemv(transA bool, m, n int, alpha float64, a []float64, lda int, x []float64, beta float64, y []float64) {
	checkGemv("Dgemv", transA, m, n, a, lda, x, y)
	gemv(transA, m, n, alpha, a, lda, x, beta, y)
}

// dgemmFamily is Dgemm's GEMM family; its row operations (edge tiles, beta
// scaling, the unpacked path and Dgemv) are the float64 kernels of the
// elementwise and reduction families (AddF64, AxpyF64, ScaleF64, DotF64).
var dgemmFamily = gemmFamily[float64]{
	add:   func(dst, a, b []float64) { arithF64.get().add(dst, a, b) },
	axpy:  func(y []float64, alpha float64, x []float64) { arithF64.get().axpy(y, alpha, x) },
	scale: func(dst, a []float64, s float64) { arithF64.get().scale(dst, a, s) },
	dot:   func(a, b []float64) float64 { return reduceF64.get().dot(a, b) },
}
