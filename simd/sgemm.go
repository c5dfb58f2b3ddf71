package simd

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/internal/par"

	"github.com/klauspost/cpuid/v2"
)

// gemmKernels is the GEMM family of one level at one element width: a
// register-blocked microkernel for mr×nr tiles of C from packed panels (see
// asm/gen/sgemm, which writes the float32 and the float64 ones).
type gemmKernels[T float] struct {
	mr, nr int
	// kernel sets the mr×nr tile at c (row stride ldc) to
	// alpha·Σ_p a[p·mr+i]·b[p·nr+j] + beta·c, not reading c when beta == 0.
	kernel func(k int, a, b, c []T, ldc int, alpha, beta T)
	// tails[r], where the level has it (see withTails), is kernel for the
	// first r < mr rows of the tile: it reads the same mr-row panels of A
	// and writes r rows of c. A row panel of A with fewer than mr rows runs
	// on the smallest tail that covers them (rowKernel).
	tails []func(k int, a, b, c []T, ldc int, alpha, beta T)
	bl    blocking // derived from mr, nr, the element size and the caches by newGemmKernels
	// Transposing packs, where the level has them (nil uses the Go loops):
	// dst[p·w+i] = src[i·ld+p] for p < kc and i < mr (packMR: full panels
	// of A) or i < 16 (pack16: full panels of a transposed B, 16 columns at
	// a time; nr is a multiple of 16).
	packMR, pack16 func(dst, src []T, ld, w, kc int)
	// packN, where the level has it (nil uses the Go loop), is the copying
	// pack of a block of B, kc rows of cols columns at row stride ld, into
	// panels of nr columns (see packB): dst[q·nr·kc + p·nr + j] =
	// src[p·ld + q·nr + j], with zeros past cols in the last panel.
	packN func(dst, src []T, ld, kc, cols int)
}

// newGemmKernels describes a microkernel and derives its cache blocking once.
func newGemmKernels[T float](mr, nr int, kernel func(k int, a, b, c []T, ldc int, alpha, beta T)) *gemmKernels[T] {
	return &gemmKernels[T]{mr: mr, nr: nr, kernel: kernel, bl: blockingFor(mr, nr, int(unsafe.Sizeof(T(0))))}
}

// withTails sets the row-tail kernels of k to tails, the generator's table
// of them (sgemmTails14x32AVX512, ...: indexed by the rows each computes).
// It returns k.
func (k *gemmKernels[T]) withTails(tails []func(k int, a, b, c []T, ldc int, alpha, beta T)) *gemmKernels[T] {
	if len(tails) > k.mr {
		panic(fmt.Sprintf("simd: a %d-row tail of a %d×%d kernel", len(tails)-1, k.mr, k.nr))
	}
	k.tails = tails
	return k
}

// rowKernel returns the kernel for a row panel of A with mrr ≤ mr valid
// rows, and how many rows of its tile it computes (mrr ≤ rows ≤ mr).
func (k *gemmKernels[T]) rowKernel(mrr int) (func(k int, a, b, c []T, ldc int, alpha, beta T), int) {
	for r := mrr; r < len(k.tails); r++ {
		if k.tails[r] != nil {
			return k.tails[r], r
		}
	}
	return k.kernel, k.mr
}

// gemmFamily is what the GEMM driver keeps per element type: the
// microkernels of every level, the scratch lists, and the row operations of
// edge tiles, beta scaling and gemv (the elementwise and reduction kernels
// of the active level).
type gemmFamily[T float] struct {
	kernels table[gemmKernels[T]]
	works   freelist.Stack[gemmWork[T]]
	tasks   freelist.Stack[gemmTask[T]]
	shares  freelist.Stack[gemmShared[T]]

	add   func(dst, a, b []T)         // dst = a + b
	axpy  func(y []T, alpha T, x []T) // y += alpha·x
	scale func(dst, a []T, s T)       // dst = s·a
	dot   func(a, b []T) T
}

// sgemmFamily is Sgemm's; dgemmFamily (dgemm.go) is Dgemm's.
var sgemmFamily = gemmFamily[float32]{
	add:   func(dst, a, b []float32) { arith.get().add(dst, a, b) },
	axpy:  func(y []float32, alpha float32, x []float32) { arith.get().axpy(y, alpha, x) },
	scale: func(dst, a []float32, s float32) { arith.get().scale(dst, a, s) },
	dot:   func(a, b []float32) float32 { return reduce.get().dot(a, b) },
}

// familyOf returns the GEMM family of T.
func familyOf[T float]() *gemmFamily[T] {
	if f, ok := any(&sgemmFamily).(*gemmFamily[T]); ok {
		return f
	}
	return any(&dgemmFamily).(*gemmFamily[T])
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, with
// BLAS semantics: op(X) is X or, when trans is set, Xᵀ; op(A) is m×k, op(B)
// is k×n and C is m×n. A is stored with row stride lda (m rows of k, or k rows
// of m when transA), B with ldb (k rows of n, or n rows of k when transB), C
// with ldc. When beta == 0, C's old contents are not read (NaN included);
// when alpha == 0 or k == 0, A and B are not read.
//
// Each element is a float32 dot product of length k accumulated in a
// different order than a sequential loop: the error is within
// k·2⁻²⁴·Σ_p |A_ip|·|B_pj| (times |alpha|) plus the rounding of the beta term.
//
// Sizes that are negative, strides smaller than a row, or slices too short
// for the sizes and strides panic with a message naming them; the bounds
// are computed without overflow, so no stride passes by wrapping round
// int. C must not
// overlap A or B. Products of at least 2²² multiply-adds are split over the
// calling goroutine and a persistent pool of GOMAXPROCS-1 workers, which
// spin for a while before they park (LANES_SPIN, see docs/workers.md); Sgemm is
// safe for concurrent use and, after warm-up, allocates nothing (packing
// buffers are pooled).
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkGemm("Sgemm", transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// SgemmStrided computes batch products C_i = alpha·op(A_i)·op(B_i) + beta·C_i
// where X_i starts at element i·strideX of x (a stride of 0 shares one
// matrix between all products, as for a weight matrix). Semantics and checks
// are Sgemm's, applied to every product; (batch-1)·stride is checked without
// overflow too. An empty operand (k == 0) is not read and its stride is not
// checked.
func SgemmStrided(transA, transB bool, m, n, k int, alpha float32, a []float32, lda, strideA int, b []float32, ldb, strideB int, beta float32, c []float32, ldc, strideC int, batch int) {
	gemmStrided("SgemmStrided", transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch)
}

// gemmStrided is SgemmStrided and DgemmStrided; fn names the caller in panics.
func gemmStrided[T float](fn string, transA, transB bool, m, n, k int, alpha T, a []T, lda, strideA int, b []T, ldb, strideB int, beta T, c []T, ldc, strideC int, batch int) {
	if batch < 0 || strideA < 0 || strideB < 0 || strideC < 0 {
		panic(fmt.Sprintf("simd.%s: negative batch=%d or stride (strideA=%d strideB=%d strideC=%d)", fn, batch, strideA, strideB, strideC))
	}
	if batch == 0 {
		return
	}
	// The first product must fit; the last starts furthest into every slice
	// (last·stride, checked by division so that it cannot wrap round).
	sa, sb, sc := checkGemm(fn, transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	last := batch - 1
	checkStride := func(name string, x []T, span, stride int) {
		if span > 0 && stride > 0 && last > (len(x)-span)/stride {
			panic(fmt.Sprintf("simd.%s: len(%s)=%d too short for batch=%d products of %d elements each at stride%s=%d (m=%d n=%d k=%d)",
				fn, name, len(x), batch, span, strings.ToUpper(name), stride, m, n, k))
		}
	}
	checkStride("a", a, sa, strideA)
	checkStride("b", b, sb, strideB)
	checkStride("c", c, sc, strideC)
	if sc == 0 {
		return // C is empty: nothing to compute
	}
	for i := 0; i < batch; i++ {
		// An operand that is empty (k == 0) is not read: its stride may
		// point anywhere.
		var ai, bi []T
		if sa > 0 {
			ai = a[i*strideA:]
		}
		if sb > 0 {
			bi = b[i*strideB:]
		}
		gemm(transA, transB, m, n, k, alpha, ai, lda, bi, ldb, beta, c[i*strideC:], ldc)
	}
}

// Sgemv computes y = alpha·op(A)·x + beta·y for the row-major m×n matrix A
// (row stride lda): op(A) = A takes x of length n and y of length m; with
// transA, op(A) = Aᵀ takes x of length m and y of length n. When beta == 0,
// y's old contents are not read. Rows are dot products (Dot) without transA
// and sums of scaled rows (Axpy) with it, so the error bound is Dot's. No
// product is skipped: 0·Inf in A and x gives NaN, as in Sgemm.
func Sgemv(transA bool, m, n int, alpha float32, a []float32, lda int, x []float32, beta float32, y []float32) {
	checkGemv("Sgemv", transA, m, n, a, lda, x, y)
	gemv(transA, m, n, alpha, a, lda, x, beta, y)
}

// checkGemv panics on sizes, a stride or lengths that do not fit (fn names
// the caller: Sgemv, Dgemv).
func checkGemv[T float](fn string, transA bool, m, n int, a []T, lda int, x, y []T) {
	if m < 0 || n < 0 {
		panic(fmt.Sprintf("simd.%s: negative size m=%d n=%d", fn, m, n))
	}
	if lda < max(1, n) {
		panic(fmt.Sprintf("simd.%s: lda=%d < n=%d", fn, lda, n))
	}
	if !fitsMatrix(len(a), m, n, lda) {
		panic(fmt.Sprintf("simd.%s: len(a)=%d too short for m=%d n=%d lda=%d", fn, len(a), m, n, lda))
	}
	lx, ly := n, m
	if transA {
		lx, ly = m, n
	}
	if len(x) != lx || len(y) != ly {
		panic(fmt.Sprintf("simd.%s: len(x)=%d len(y)=%d, want %d and %d for m=%d n=%d transA=%v", fn, len(x), len(y), lx, ly, m, n, transA))
	}
}

// gemv is Sgemv and Dgemv after their checks (also the rows of the unpacked
// GEMM path). alpha == 0 or an empty A leaves beta·y; otherwise every
// product is taken, so NaN and ±Inf in A or x propagate as in the exact
// arithmetic (0·Inf = NaN).
func gemv[T float](transA bool, m, n int, alpha T, a []T, lda int, x []T, beta T, y []T) {
	fam := familyOf[T]()
	if alpha == 0 || m == 0 || n == 0 {
		// Nothing to add (an empty A may be an empty slice: no row of it
		// can be sliced).
		scaleC(1, len(y), beta, y, len(y))
		return
	}
	if !transA {
		dot := fam.dot
		for i := range y {
			d := alpha * dot(a[i*lda:i*lda+n], x)
			if beta != 0 {
				d += beta * y[i]
			}
			y[i] = d
		}
		return
	}
	scaleC(1, n, beta, y, n)
	axpy := fam.axpy
	for i := 0; i < m; i++ {
		axpy(y, alpha*x[i], a[i*lda:i*lda+n])
	}
}

// checkGemm panics on sizes, strides or lengths that do not fit, and
// returns the number of elements of a, b and c the product reaches (0 for an
// empty operand). Every bound is checked without overflow (fitsMatrix), so
// that no stride, however large, passes by wrapping round.
func checkGemm[T float](fn string, transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) (sa, sb, sc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("simd.%s: negative size m=%d n=%d k=%d", fn, m, n, k))
	}
	check := func(name string, x []T, ld, rows, cols int, trans bool) int {
		if trans {
			rows, cols = cols, rows
		}
		if ld < max(1, cols) {
			panic(fmt.Sprintf("simd.%s: ld%s=%d < %d columns of %s (m=%d n=%d k=%d, trans=%v)", fn, name, ld, cols, name, m, n, k, trans))
		}
		if !fitsMatrix(len(x), rows, cols, ld) {
			panic(fmt.Sprintf("simd.%s: len(%s)=%d too short for %d×%d with ld%s=%d (m=%d n=%d k=%d, trans=%v)", fn, name, len(x), rows, cols, name, ld, m, n, k, trans))
		}
		return matrixSpan(rows, cols, ld)
	}
	return check("a", a, lda, m, k, transA), check("b", b, ldb, k, n, transB), check("c", c, ldc, m, n, false)
}

// Blocking, from the data cache sizes cpuid reports and the element size
// (4 or 8 bytes), for gemmRange's loop nest. kc is the depth of the mr×kc
// panel of A that stays in L1 while the row of tiles streams the panels of
// B past it: half of L1 (384 with a 48 KiB L1 for float32 14-row and
// float64 8-row panels, up to 512). nc makes the packed kc×nc block of B
// half of L2, where its panels are read from; mc makes the packed mc×kc
// block of A (read once per block of B, panel by panel) a quarter of L3.
// Where cpuid reports no L3 (the development machine: Zen 5, 1 MiB L2,
// its L3 shared with other tenants), the block of A is three times L2,
// measured there: Dgemm took 1.5-2% less time at n = 1024 and 2048 with
// 3 MiB blocks (mc = 1024) than with the 2 MiB of a quarter of an 8 MiB
// L3 (mc = 680, the assumption before), as with 4 MiB, while 6 MiB
// (mc = 2048) was 2% slower at 2048 (median time ratios, products
// alternating, TestGemmPaired); Sgemm with 3 MiB (mc from 1358 to 2044)
// was within ±0.5%. A larger block packs each block of B fewer times, but
// its panels come from further away.
type blocking struct{ mc, kc, nc int }

func blockingFor(mr, nr, size int) blocking {
	l1, l2, l3 := cpuid.CPU.Cache.L1D, cpuid.CPU.Cache.L2, cpuid.CPU.Cache.L3
	if l1 <= 0 {
		l1 = 32 << 10
	}
	if l2 <= 0 {
		l2 = 512 << 10
	}
	aBlock := l3 / 4
	if l3 <= 0 {
		aBlock = 3 * l2
	}
	kc := min(512, max(64, (l1/2)/(mr*size)/64*64))
	nc := max(nr, (l2/2)/(kc*size)/nr*nr)
	mc := max(mr, aBlock/(kc*size)/mr*mr)
	return blocking{mc: mc, kc: kc, nc: nc}
}

// gemmWork is the packing space of one goroutine. The family's free list
// (gemmFamily.works) is a freelist.Stack rather than a sync.Pool, so that
// packing buffers grown for the largest products stay grown.
type gemmWork[T float] struct {
	ap, bp, tile []T
	subs         [][]T // a shared A block's sub-blocks, as gemmRange takes them
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}

// parallelGemm is the size (m·n·k) from which a product is split over the
// worker pool; smaller ones run on the calling goroutine. With the pool of
// internal/par and the split of splitCols, measured on Zen 5 with two
// threads (AVX-512, BenchmarkTrainStep, runs side by side): 2²¹, 2²² and
// 2²³ gave 0.47-0.50 ms for the MLP and 10.6-11.4 ms for the CNN, 2²⁰
// 0.52-0.58 and 12.7-13.2. Against the old 2²⁵ and the longer-side split:
// MLP 0.66-0.73 vs 0.47-0.57 ms, CNN 11.8-13.0 vs 10.5-11.3; Sgemm 256³
// 186-190 vs 238-314 GFLOP/s, 512³ 287 vs 346-355.
const parallelGemm = 1 << 22

// gemm is Sgemm and Dgemm after their checks.
func gemm[T float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	fam := familyOf[T]()
	kern := fam.kernels.get()
	if useDirect(kern, transA, transB, m, n) {
		gemmDirect(transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	threads := runtime.GOMAXPROCS(0)
	if m*n*k < parallelGemm || threads == 1 {
		gemmRange(kern, nil, 0, transA, transB, 0, m, 0, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	// Split C in whole tiles (see splitCols), one part per thread. The
	// operand every part reads in full (B when split by rows, A by
	// columns) is packed once, block by block, by the first part that
	// needs the block (gemmShared).
	tilesM, tilesN := (m+kern.mr-1)/kern.mr, (n+kern.nr-1)/kern.nr
	t := fam.tasks.Get()
	*t = gemmTask[T]{kern: kern, transA: transA, transB: transB, m: m, n: n, k: k,
		alpha: alpha, beta: beta, a: a, b: b, c: c, lda: lda, ldb: ldb, ldc: ldc,
		byCols: splitCols(m, n, tilesM, tilesN, threads)}
	tiles := t.tiles()
	parts := min(threads, tiles)
	var sh *gemmShared[T]
	if parts > 1 {
		sh = fam.shares.Get()
		if !sh.reset(kern, t.byCols, m, n, k, parts) {
			fam.shares.Put(sh)
			sh = nil
		}
	}
	t.shared = sh
	par.For(t, tiles, threads)
	*t = gemmTask[T]{}
	fam.tasks.Put(t)
	if sh != nil {
		fam.shares.Put(sh)
	}
}

// maxSharedPack is the largest operand (in bytes, packed) that the parts
// of a threaded product pack once for all; a larger one is packed by each
// part, block by block, into its own L2-sized buffers.
const maxSharedPack = 64 << 20

// gemmShared is the packed copy of the operand that all parts of a
// threaded product read: B (k×n) when C is split by rows, A (m×k) when by
// columns. It holds every block of gemmRange's loop nest, strip by strip
// of kc (the strip of rows pc.. of op(B), or columns pc.. of op(A), at
// element pc·w, w the operand's padded width), each block cut into subs
// sub-blocks of whole panels (one per part), and a state per sub-block:
// the first part to need one claims it (0 → 1), packs it and publishes it
// (2); a part that finds it published reads it, and one that finds it
// claimed but not yet published packs its own copy (no part ever waits).
// Part r takes the sub-blocks of a block from the r-th on (gemmRange's
// rot), so that the parts, which reach each block together, pack
// different sub-blocks and read the others' rather than each packing the
// whole block. The packs are copies, and a sub-block holds whole rows or
// columns of C's tiles, so the results do not depend on who packed or in
// which order the sub-blocks were taken.
type gemmShared[T float] struct {
	isA    bool // A is the shared operand (C split by columns)
	w      int  // padded width: n rounded up to nr (B), m to mr (A)
	buf    []T
	states []atomic.Int32
	step   int // blocks along the width (nc or mc steps)
	subs   int // sub-blocks of a block
}

// reset prepares s for a product, or reports false when the operand is
// too large to be packed whole (maxSharedPack).
func (s *gemmShared[T]) reset(kern *gemmKernels[T], isA bool, m, n, k, subs int) bool {
	unit, width, limit := kern.nr, n, kern.bl.nc
	if isA {
		unit, width, limit = kern.mr, m, kern.bl.mc
	}
	s.isA = isA
	s.w = (width + unit - 1) / unit * unit
	if s.w*k*int(unsafe.Sizeof(T(0))) > maxSharedPack {
		return false
	}
	s.buf = grow(s.buf, s.w*k)
	step := evenBlock(width, limit, unit)
	s.step = (width + step - 1) / step
	kcStep := evenBlock(k, kern.bl.kc, 8) // gemmRange's k blocks
	s.subs = subs
	blocks := s.step * ((k + kcStep - 1) / kcStep) * subs
	if cap(s.states) < blocks {
		s.states = make([]atomic.Int32, blocks)
	}
	s.states = s.states[:blocks]
	for i := range s.states {
		s.states[i].Store(0)
	}
	return true
}

// block returns sub-block si of the packed block pi (along k), bi (along
// the width): size elements that start at column or row x0 of the width,
// packing them with pack if no part has claimed them; ok is false when
// another part is packing them still, and then nothing was done (the
// caller packs a copy of its own rather than wait: a part that waits for
// another one's pack would stall for as long as the operating system
// leaves that one's thread off its core).
func (s *gemmShared[T]) block(pi, bi, si, pc, kc, x0, size int, pack func(dst []T)) (blk []T, ok bool) {
	dst := s.buf[pc*s.w+x0*kc : pc*s.w+x0*kc+size]
	st := &s.states[(pi*s.step+bi)*s.subs+si]
	switch {
	case st.Load() == 2:
		return dst, true
	case st.CompareAndSwap(0, 1):
		pack(dst)
		st.Store(2)
		return dst, true
	}
	return nil, false
}

// sub returns sub-block si of the block (pi, bi) whose width starts at
// base: its rows or columns x0..end (whole panels) packed by pack, by
// this part if no part has claimed them, or into own[x0·kc:end·kc], the
// part's own buffer for the block, if another part is packing them still.
func (s *gemmShared[T]) sub(pi, bi, si, pc, kc, base, x0, end int, own []T, pack func(dst []T)) []T {
	blk, ok := s.block(pi, bi, si, pc, kc, base+x0, (end-x0)*kc, pack)
	if !ok {
		blk = own[x0*kc : end*kc]
		pack(blk)
	}
	return blk
}

// eachSub calls f for the sub-blocks of a block of panels panels of unit
// rows or columns, extent of them in use, from sub-block rot on (a part's
// own first): f(si, x0, x1, end) for the rows or columns x0..x1 in use of
// sub-block si, whose panels end at end. Empty sub-blocks are skipped.
func eachSub(subs, rot, panels, unit, extent int, f func(si, x0, x1, end int)) {
	for t := range subs {
		si := (rot + t) % subs
		p0, p1 := si*panels/subs, (si+1)*panels/subs
		if p0 < p1 {
			f(si, p0*unit, min(extent, p1*unit), p1*unit)
		}
	}
}

// useDirect decides whether a product skips packing and runs as one gemv
// per row of C (gemmDirect). Measured with BenchmarkSgemmDirect on Zen 5,
// GFLOP/s packed vs unpacked (AVX-512; AVX2 agrees where not said): B not
// transposed 13.7 vs 39.6 at m = 2, 27.4 vs 39.2 at m = 4, 39 vs 39.6 at
// m = 6 (n = 256, k = 128), and packed 2-15x faster on squares from 8³ and
// on narrow n. B transposed with the in-register transposing pack
// (AVX-512): 19 vs 37 at m = 2, even at m = 4, 55 vs 37 at m = 6, 72 vs 37
// at m = 8, but 18.5 vs 49.8 at n = 4 (256×4×256) and 10.4 vs 21.5 at
// 100×3×100; with the Go pack (AVX2 and the others), unpacked is faster up
// to m = 8 (0.14-0.61 of the packed time) and even at m = 12. A transposed
// always packs (its rows are strided).
func useDirect[T float](kern *gemmKernels[T], transA, transB bool, m, n int) bool {
	switch {
	case transA:
		return false
	case gemmForce != 0:
		return gemmForce == 2
	case !transB:
		return m <= 4
	case kern.pack16 == nil:
		return m <= 8 || n <= 4
	}
	return m <= 4 || n <= 4
}

// gemmForce overrides useDirect for BenchmarkSgemmDirect: 1 packs, 2 does not.
var gemmForce = 0

// gemmDirect computes C = alpha·A·op(B) + beta·C without packing: row i of
// C is the gemv of op(B)ᵀ with row i of A (a sum of Axpy over the rows of
// B, or a Dot with each row of a transposed B).
func gemmDirect[T float](transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	rows, cols := k, n // B as stored
	if transB {
		rows, cols = n, k
	}
	for i := 0; i < m; i++ {
		gemv(!transB, rows, cols, alpha, b, ldb, a[i*lda:i*lda+k], beta, c[i*ldc:i*ldc+n])
	}
}

// splitCols reports whether a product is split by columns of C (each part
// then packs all of A and its share of B) rather than by rows (each packs
// all of B): by columns when A is the smaller (m ≤ n), as long as there
// are a tile of columns for each thread; else by rows if there are enough
// rows; else along the side with more tiles. nn's fc1 (64×128×3136, 2
// threads) packs 1.6 MB a part this way instead of 2.0.
func splitCols(m, n, tilesM, tilesN, threads int) bool {
	switch {
	case m <= n && tilesN >= threads:
		return true
	case m > n && tilesM >= threads:
		return false
	}
	return tilesN >= tilesM
}

// gemmTask is a product run by par.For over the tiles of one side of C:
// columns of nr when byCols (see splitCols), else rows of mr.
type gemmTask[T float] struct {
	kern           *gemmKernels[T]
	transA, transB bool
	m, n, k        int
	alpha, beta    T
	a, b, c        []T
	lda, ldb, ldc  int
	byCols         bool
	shared         *gemmShared[T] // nil: every part packs its own copies
}

// tiles is the number of tiles along C's split side: the items that
// par.For cuts into parts.
func (t *gemmTask[T]) tiles() int {
	if t.byCols {
		return (t.n + t.kern.nr - 1) / t.kern.nr
	}
	return (t.m + t.kern.mr - 1) / t.kern.mr
}

// RunRange computes tiles lo..hi of C's split side.
func (t *gemmTask[T]) RunRange(lo, hi int) {
	r0, r1, c0, c1 := 0, t.m, 0, t.n
	if t.byCols {
		c0, c1 = lo*t.kern.nr, min(t.n, hi*t.kern.nr)
	} else {
		r0, r1 = lo*t.kern.mr, min(t.m, hi*t.kern.mr)
	}
	rot := 0 // this part's index among the shared operand's sub-blocks
	if t.shared != nil {
		rot = par.PartOf(lo, t.tiles(), t.shared.subs)
	}
	gemmRange(t.kern, t.shared, rot, t.transA, t.transB, r0, r1, c0, c1, t.k, t.alpha, t.a, t.lda, t.b, t.ldb, t.beta, t.c, t.ldc)
}

// scaleC sets C = beta·C, or 0 when beta == 0.
func scaleC[T float](m, n int, beta T, c []T, ldc int) {
	scale := familyOf[T]().scale
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 0:
			clear(row)
		case 1:
		default:
			scale(row, row, beta)
		}
	}
}

// gemmRange computes rows r0..r1 and columns c0..c1 of C, all of k, with the
// BLIS loop nest, its roles arranged for a microkernel that broadcasts A and
// loads vectors of B: blocks of A (mc rows, kc deep, packed once and kept
// in L3), panels of B (nc columns, kc deep, packed into L2), then for each
// mr-row panel of A (kept in L1) the tiles of a row of nr-column panels of
// B streamed from L2. C is walked along its rows, nr columns at a time.
//
// With shared, one operand comes packed from it instead (see gemmShared),
// sub-block by sub-block from the rot-th on: the part then covers all of
// that operand's side (all rows when A is shared, all columns when B is).
func gemmRange[T float](kern *gemmKernels[T], shared *gemmShared[T], rot int, transA, transB bool, r0, r1, c0, c1, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	mr, nr, bl := kern.mr, kern.nr, kern.bl
	fam := familyOf[T]()
	w := fam.works.Get()
	defer fam.works.Put(w)
	w.tile = grow(w.tile, mr*nr)
	// The shared operand comes from shared, sub-block by sub-block; the
	// other is packed into the work's own buffers (w.ap is also where a
	// part packs its own copy of a shared A sub-block, w.bp of B's).
	sharedA, sharedB := shared != nil && shared.isA, shared != nil && !shared.isA
	subs := 1
	if shared != nil {
		subs = shared.subs
	}
	if sharedA {
		w.subs = grow(w.subs, subs)
		defer clear(w.subs)
	}
	mcStep, kcStep, ncStep := evenBlock(r1-r0, bl.mc, mr), evenBlock(k, bl.kc, 8), evenBlock(c1-c0, bl.nc, nr)
	for ic := r0; ic < r1; ic += mcStep {
		mc := min(mcStep, r1-ic)
		mcp := (mc + mr - 1) / mr * mr
		for pc := 0; pc < k; pc += kcStep {
			kc := min(kcStep, k-pc)
			w.ap = grow(w.ap, mcp*kc)
			if sharedA {
				clear(w.subs) // A's sub-blocks, taken when first needed
			} else {
				packA(kern, w.ap, a, lda, transA, ic, mc, pc, kc)
			}
			bEff := beta
			if pc > 0 {
				bEff = 1
			}
			for jc := c0; jc < c1; jc += ncStep {
				nc := min(ncStep, c1-jc)
				ncp := (nc + nr - 1) / nr * nr
				w.bp = grow(w.bp, ncp*kc)
				if !sharedB {
					packB(kern, w.bp, b, ldb, transB, pc, kc, jc, nc)
				}
				switch {
				case sharedA:
					eachSub(subs, rot, mcp/mr, mr, mc, func(si, rs0, rs1, end int) {
						if w.subs[si] == nil {
							w.subs[si] = shared.sub(pc/kcStep, (ic-r0)/mcStep, si, pc, kc, ic-r0, rs0, end, w.ap, func(dst []T) {
								packA(kern, dst, a, lda, transA, ic+rs0, rs1-rs0, pc, kc)
							})
						}
						gemmBlock(kern, w.subs[si], w.bp, w.tile, kc, rs1-rs0, nc, alpha, bEff, c[(ic+rs0)*ldc+jc:], ldc)
					})
				case sharedB:
					eachSub(subs, rot, ncp/nr, nr, nc, func(si, cs0, cs1, end int) {
						blk := shared.sub(pc/kcStep, (jc-c0)/ncStep, si, pc, kc, jc-c0, cs0, end, w.bp, func(dst []T) {
							packB(kern, dst, b, ldb, transB, pc, kc, jc+cs0, cs1-cs0)
						})
						gemmBlock(kern, w.ap, blk, w.tile, kc, mc, cs1-cs0, alpha, bEff, c[ic*ldc+jc+cs0:], ldc)
					})
				default:
					gemmBlock(kern, w.ap, w.bp, w.tile, kc, mc, nc, alpha, bEff, c[ic*ldc+jc:], ldc)
				}
			}
		}
	}
}

// gemmBlock computes the mc×nc block of C at c from the packed blocks ap
// (of A) and bp (of B), kc deep: for each panel of A, the row of tiles
// against every panel of B. Edge tiles are computed on the zero-padded
// panels into tile (mr×nr), and their valid part added to C; a row panel
// of fewer than mr rows runs on the level's row-tail kernel for them
// (rowKernel), straight into C when it covers exactly those rows.
func gemmBlock[T float](kern *gemmKernels[T], ap, bp, tile []T, kc, mc, nc int, alpha, beta T, c []T, ldc int) {
	mr, nr := kern.mr, kern.nr
	fam := familyOf[T]()
	for ir := 0; ir < mc; ir += mr {
		aPanel := ap[ir*kc : (ir+mr)*kc]
		mrr := min(mr, mc-ir)
		kernel, rows := kern.kernel, mr
		if mrr < mr {
			kernel, rows = kern.rowKernel(mrr)
		}
		for jr := 0; jr < nc; jr += nr {
			bPanel := bp[jr*kc : (jr+nr)*kc]
			nrr := min(nr, nc-jr)
			off := ir*ldc + jr
			if mrr == rows && nrr == nr {
				kernel(kc, aPanel, bPanel, c[off:], ldc, alpha, beta)
				continue
			}
			kernel(kc, aPanel, bPanel, tile, nr, alpha, 0)
			// dst = src + beta·dst, fused as in the kernel's store.
			for i := 0; i < mrr; i++ {
				dst := c[off+i*ldc : off+i*ldc+nrr]
				src := tile[i*nr : i*nr+nrr]
				switch beta {
				case 0:
				case 1:
					fam.add(src, src, dst)
				default:
					fam.axpy(src, beta, dst)
				}
				copy(dst, src)
			}
		}
	}
}

// evenBlock returns the step that cuts n into as few blocks of at most
// limit as it can, of about equal size rounded up to a multiple of unit
// (limit is one): k = 1030 with kc = 512 runs as 344, 344, 342 rather than
// 512, 512, 6, whose last block would pay a pass over C for 6 steps, and
// 1024 rows with mc = 168 as six blocks of 154 and one of 100 rather than
// six of 168 and one of 16, which would reuse each B slab for one panel.
func evenBlock(n, limit, unit int) int {
	blocks := (n + limit - 1) / limit
	per := (n + blocks - 1) / blocks
	return min(limit, (per+unit-1)/unit*unit)
}

// packA copies rows ic..ic+mc and columns pc..pc+kc of op(A) into panels of
// mr rows: panel q holds, for each p, the mr values op(A)[ic+q·mr+i][pc+p]
// contiguously; rows past mc are zero.
func packA[T float](kern *gemmKernels[T], ap, a []T, lda int, trans bool, ic, mc, pc, kc int) {
	mr := kern.mr
	for q := 0; q*mr < mc; q++ {
		panel := ap[q*mr*kc : (q+1)*mr*kc]
		rows := min(mr, mc-q*mr)
		i0 := ic + q*mr
		if !trans && rows == mr && kern.packMR != nil {
			kern.packMR(panel, a[i0*lda+pc:], lda, mr, kc)
			continue
		}
		if trans {
			// op(A)[i][p] = a[p·lda + i]: each p is a contiguous run of rows.
			for p := 0; p < kc; p++ {
				dst := panel[p*mr : p*mr+mr]
				copy(dst, a[(pc+p)*lda+i0:(pc+p)*lda+i0+rows])
				clear(dst[rows:])
			}
			continue
		}
		if rows < mr {
			clear(panel)
		}
		// Four rows at a time: four read streams, one pass over the panel
		// per group.
		i := 0
		for ; i+4 <= rows; i += 4 {
			r0 := a[(i0+i)*lda+pc : (i0+i)*lda+pc+kc]
			r1 := a[(i0+i+1)*lda+pc : (i0+i+1)*lda+pc+kc]
			r2 := a[(i0+i+2)*lda+pc : (i0+i+2)*lda+pc+kc]
			r3 := a[(i0+i+3)*lda+pc : (i0+i+3)*lda+pc+kc]
			for p := range r0 {
				d := panel[p*mr+i : p*mr+i+4 : p*mr+i+4]
				d[0], d[1], d[2], d[3] = r0[p], r1[p], r2[p], r3[p]
			}
		}
		for ; i < rows; i++ {
			src := a[(i0+i)*lda+pc : (i0+i)*lda+pc+kc]
			for p, v := range src {
				panel[p*mr+i] = v
			}
		}
	}
}

// packB copies rows pc..pc+kc and columns jc..jc+nc of op(B) into panels of
// nr columns: panel q holds, for each p, the nr values op(B)[pc+p][jc+q·nr+j]
// contiguously; columns past nc are zero.
func packB[T float](kern *gemmKernels[T], bp, b []T, ldb int, trans bool, pc, kc, jc, nc int) {
	nr := kern.nr
	if !trans && kern.packN != nil {
		kern.packN(bp, b[pc*ldb+jc:], ldb, kc, nc)
		return
	}
	if !trans {
		// Row by row of B, so that it is read in order (panel by panel, every
		// row would be a new page).
		for p := 0; p < kc; p++ {
			row := b[(pc+p)*ldb+jc : (pc+p)*ldb+jc+nc]
			for q := 0; q*nr < nc; q++ {
				dst := bp[q*nr*kc+p*nr : q*nr*kc+p*nr+nr]
				clear(dst[copy(dst, row[q*nr:]):])
			}
		}
		return
	}
	for q := 0; q*nr < nc; q++ {
		panel := bp[q*nr*kc : (q+1)*nr*kc]
		cols := min(nr, nc-q*nr)
		j0 := jc + q*nr
		if cols == nr && kern.pack16 != nil {
			for j := 0; j < nr; j += 16 {
				kern.pack16(panel[j:], b[(j0+j)*ldb+pc:], ldb, nr, kc)
			}
			continue
		}
		// op(B)[p][j] = b[j·ldb + p]: each column j is a contiguous run of p.
		for j := 0; j < cols; j++ {
			src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
			for p, v := range src {
				panel[p*nr+j] = v
			}
		}
		for j := cols; j < nr; j++ {
			for p := 0; p < kc; p++ {
				panel[p*nr+j] = 0
			}
		}
	}
}
