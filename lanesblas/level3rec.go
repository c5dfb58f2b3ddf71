package lanesblas

import "gonum.org/v1/gonum/blas"

// syrk and syr2k recurse on halves of C, trsm, trmm and symm on halves of
// A: the off-diagonal blocks, where nearly all the work is once n is
// large, are lanes' gemm; the blocks of recBase or fewer on the diagonal
// are gonum's unblocked trsm, called through the embedded implementation,
// and for the others gemms through scratch (syrkDiag, trmmDiag, symmDiag).
const recBase = 32

type (
	syrkFunc[T float]  func(ul blas.Uplo, tA blas.Transpose, n, k int, alpha T, a []T, lda int, beta T, c []T, ldc int)
	syr2kFunc[T float] func(ul blas.Uplo, tA blas.Transpose, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)
	triFunc[T float]   func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int)
	symmFunc[T float]  func(s blas.Side, ul blas.Uplo, m, n int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)
)

// syrk is Dsyrk and Ssyrk: gonum's checks, then syrkRec (small, empty or
// alpha == 0 cases go to gonum whole).
func syrk[T float](k *kernels[T], base syrkFunc[T], ul blas.Uplo, tA blas.Transpose, n, kk int, alpha T, a []T, lda int, beta T, c []T, ldc int) {
	// With B = A, checkSyrk's checks of B repeat those of A: gonum's syrk
	// checks are its syr2k checks without B's.
	if checkSyrk(ul, tA, n, kk, a, lda, a, lda, c, ldc) {
		return
	}
	if alpha == 0 || kk == 0 || n <= recBase {
		base(ul, tA, n, kk, alpha, a, lda, beta, c, ldc)
		return
	}
	syrkRec(k, false, ul, tA, n, kk, alpha, a, lda, a, lda, beta, c, ldc)
}

// syr2k is Dsyr2k and Ssyr2k: gonum's checks, then syrkRec with both
// products (small, empty or alpha == 0 cases go to gonum whole).
func syr2k[T float](k *kernels[T], base syr2kFunc[T], ul blas.Uplo, tA blas.Transpose, n, kk int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if checkSyrk(ul, tA, n, kk, a, lda, b, ldb, c, ldc) {
		return
	}
	if alpha == 0 || kk == 0 || n <= recBase {
		base(ul, tA, n, kk, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	syrkRec(k, true, ul, tA, n, kk, alpha, a, lda, b, ldb, beta, c, ldc)
}

// checkSyrk is gonum's argument checks of syr2k (and syrk, with b = a), in
// gonum's order; it reports whether the call is a quick return (n == 0).
func checkSyrk[T float](ul blas.Uplo, tA blas.Transpose, n, kk int, a []T, lda int, b []T, ldb int, c []T, ldc int) (empty bool) {
	if ul != blas.Lower && ul != blas.Upper {
		panic(badUplo)
	}
	checkTrans(tA)
	if n < 0 {
		panic(nLT0)
	}
	if kk < 0 {
		panic(kLT0)
	}
	row, col := kk, n
	if tA == blas.NoTrans {
		row, col = n, kk
	}
	if lda < max(1, col) {
		panic(badLdA)
	}
	if ldb < max(1, col) {
		panic(badLdB)
	}
	if ldc < max(1, n) {
		panic(badLdC)
	}
	if n == 0 {
		return true
	}
	if len(a) < lda*(row-1)+col {
		panic(shortA)
	}
	if len(b) < ldb*(row-1)+col {
		panic(shortB)
	}
	if len(c) < ldc*(n-1)+n {
		panic(shortC)
	}
	return false
}

// syrkRec updates the ul triangle of C (n×n) with alpha·op(A)·op(B)ᵀ, plus
// alpha·op(B)·op(A)ᵀ when two (syr2k; syrk passes B = A and !two): the two
// diagonal halves by recursion, the off-diagonal block by gemm (two gemms
// when two).
func syrkRec[T float](k *kernels[T], two bool, ul blas.Uplo, tA blas.Transpose, n, kk int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if n <= recBase {
		syrkDiag(k, two, ul, tA, n, kk, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	p := n / 2
	trans := isTrans(tA)
	// The rows of op(A) and op(B) from p: rows of A and B, or columns with
	// trans.
	var a2, b2 []T
	if trans {
		a2, b2 = a[p:], b[p:]
	} else {
		a2, b2 = a[p*lda:], b[p*ldb:]
	}
	syrkRec(k, two, ul, tA, p, kk, alpha, a, lda, b, ldb, beta, c, ldc)
	syrkRec(k, two, ul, tA, n-p, kk, alpha, a2, lda, b2, ldb, beta, c[p*ldc+p:], ldc)
	// The off-diagonal block, C12 (Upper) or C21 (Lower): its rows are
	// those of the halves r of op(A) and op(B), its columns those of the
	// halves c; it becomes alpha·op(A)r·op(B)cᵀ (+ alpha·op(B)r·op(A)cᵀ)
	// + beta·C.
	rows, cols, ar, br, ac, bc, off := p, n-p, a, b, a2, b2, c[p:]
	if ul == blas.Lower {
		rows, cols, ar, br, ac, bc, off = n-p, p, a2, b2, a, b, c[p*ldc:]
	}
	k.gemm(trans, !trans, rows, cols, kk, alpha, ar, lda, bc, ldb, beta, off, ldc)
	if two {
		k.gemm(trans, !trans, rows, cols, kk, alpha, br, ldb, ac, lda, 1, off, ldc)
	}
}

// syrkDiag is a diagonal block of syrkRec (n <= recBase): the whole n×n
// product W = alpha·op(A)·op(B)ᵀ by gemm into a pooled scratch block, then
// the ul triangle of W (of W + Wᵀ when two) added to beta·C (C not read
// when beta == 0). The gemm does twice the multiply-adds of the triangle,
// at several times the speed of gonum's unblocked dsyrk, which did half of
// a Cholesky's syrk work here.
func syrkDiag[T float](k *kernels[T], two bool, ul blas.Uplo, tA blas.Transpose, n, kk int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	trans := isTrans(tA)
	p := k.scratch.Get().(*[recBase * recBase]T)
	defer k.scratch.Put(p)
	w := p[:n*n]
	k.gemm(trans, !trans, n, n, kk, alpha, a, lda, b, ldb, 0, w, n)
	for i := range n {
		lo, hi := i, n // the columns of row i in the triangle
		if ul == blas.Lower {
			lo, hi = 0, i+1
		}
		row := c[i*ldc+lo : i*ldc+hi]
		for j := range row {
			v := w[i*n+lo+j]
			if two {
				v += w[(lo+j)*n+i]
			}
			if beta != 0 {
				v += row[j] * beta
			}
			row[j] = v
		}
	}
}

// trsm is Dtrsm and Strsm: gonum's checks, then B is scaled by alpha and
// triRec solves with alpha = 1 (small or alpha == 0 cases go to gonum whole).
func trsm[T float](k *kernels[T], base triFunc[T], s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int) {
	if checkTri3(s, ul, tA, d, m, n, a, lda, b, ldb) {
		return
	}
	if alpha == 0 || triSize(s, m, n) <= recBase {
		base(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	if alpha != 1 {
		for i := range m {
			row := b[i*ldb : i*ldb+n]
			k.scale(row, row, alpha)
		}
	}
	triRec(k, base, true, s, ul, tA, d, m, n, 1, a, lda, b, ldb)
}

// trmm is Dtrmm and Strmm: gonum's checks, then triRec multiplies in
// place of B (small or alpha == 0 cases go to gonum whole).
func trmm[T float](k *kernels[T], base triFunc[T], s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int) {
	if checkTri3(s, ul, tA, d, m, n, a, lda, b, ldb) {
		return
	}
	if alpha == 0 || triSize(s, m, n) <= recBase {
		base(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	triRec(k, func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int) {
		trmmDiag(k, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
	}, false, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// checkTri3 is gonum's argument checks of trsm and trmm, in gonum's order;
// it reports whether the call is a quick return (m or n zero).
func checkTri3[T float](s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, a []T, lda int, b []T, ldb int) (empty bool) {
	if s != blas.Left && s != blas.Right {
		panic(badSide)
	}
	if ul != blas.Lower && ul != blas.Upper {
		panic(badUplo)
	}
	checkTrans(tA)
	if d != blas.NonUnit && d != blas.Unit {
		panic(badDiag)
	}
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	ka := triSize(s, m, n)
	if lda < max(1, ka) {
		panic(badLdA)
	}
	if ldb < max(1, n) {
		panic(badLdB)
	}
	if m == 0 || n == 0 {
		return true
	}
	if len(a) < lda*(ka-1)+ka {
		panic(shortA)
	}
	if len(b) < ldb*(m-1)+n {
		panic(shortB)
	}
	return false
}

// triSize is the order of the triangular (or symmetric) A that multiplies
// the m×n B from side s.
func triSize(s blas.Side, m, n int) int {
	if s == blas.Left {
		return m
	}
	return n
}

// triRec is trsm (solve) and trmm (!solve) in place of B, splitting the
// triangle op(A) in halves. B's two halves (rows with side Left, columns
// with Right) are a source and a destination: the product of the source
// half with op(A)'s off-diagonal block is part of the destination's. trsm
// solves with the source's diagonal block, subtracts that product from the
// destination by gemm, then solves with the destination's; trmm multiplies
// the destination by its diagonal block, adds alpha times that product
// (the source still unchanged), then multiplies the source. base takes
// the blocks of recBase or fewer, with alpha: gonum's unblocked trsm, or
// trmmDiag.
func triRec[T float](k *kernels[T], base triFunc[T], solve bool, s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int) {
	left := s == blas.Left
	size := triSize(s, m, n)
	if size <= recBase {
		base(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
		return
	}
	p := size / 2
	trans := isTrans(tA)
	// The halves: h1 is B's first p rows (Left) or columns (Right) with
	// op(A)'s first diagonal block, h2 the rest with the second.
	type half struct {
		m, n int
		a, b []T
	}
	h1, h2 := half{m, p, a, b}, half{m, n - p, a[p*lda+p:], b[p:]}
	if left {
		h1, h2 = half{p, n, a, b}, half{m - p, n, a[p*lda+p:], b[p*ldb:]}
	}
	// The off-diagonal blocks of op(A): lo = op(A)[p:, :p], up = op(A)[:p, p:].
	lo, up := a[p*lda:], a[p:]
	if trans {
		lo, up = up, lo
	}
	opLower := (ul == blas.Lower) != trans
	// With op(A) lower, X·op(A)'s first columns need the last ones (and
	// op(A)·X's last rows the first ones); upper is the reverse.
	src, dst, off := h1, h2, lo
	if !opLower {
		src, dst, off = h2, h1, up
	}
	if !left {
		src, dst = dst, src
	}
	coef := alpha
	if solve {
		coef = -1
	}
	rec := func(h half) { triRec(k, base, solve, s, ul, tA, d, h.m, h.n, alpha, h.a, lda, h.b, ldb) }
	if solve {
		rec(src)
	} else {
		rec(dst)
	}
	if left {
		k.gemm(trans, false, dst.m, n, src.m, coef, off, lda, src.b, ldb, 1, dst.b, ldb)
	} else {
		k.gemm(false, trans, m, dst.n, src.n, coef, src.b, ldb, off, lda, 1, dst.b, ldb)
	}
	if solve {
		rec(dst)
	} else {
		rec(src)
	}
}

// symm is Dsymm and Ssymm: gonum's checks, then symmRec (small, empty or
// alpha == 0 cases go to gonum whole).
func symm[T float](k *kernels[T], base symmFunc[T], s blas.Side, ul blas.Uplo, m, n int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if s != blas.Right && s != blas.Left {
		panic(badSide)
	}
	if ul != blas.Lower && ul != blas.Upper {
		panic(badUplo)
	}
	if m < 0 {
		panic(mLT0)
	}
	if n < 0 {
		panic(nLT0)
	}
	ka := triSize(s, m, n)
	if lda < max(1, ka) {
		panic(badLdA)
	}
	if ldb < max(1, n) {
		panic(badLdB)
	}
	if ldc < max(1, n) {
		panic(badLdC)
	}
	if m == 0 || n == 0 {
		return
	}
	if len(a) < lda*(ka-1)+ka {
		panic(shortA)
	}
	if len(b) < ldb*(m-1)+n {
		panic(shortB)
	}
	if len(c) < ldc*(m-1)+n {
		panic(shortC)
	}
	if alpha == 0 || ka <= recBase {
		base(s, ul, m, n, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	symmRec(k, s, ul, m, n, alpha, a, lda, b, ldb, beta, c, ldc)
}

// symmRec computes C = alpha·A·B + beta·C (Left) or alpha·B·A + beta·C
// (Right) for the symmetric A stored in its ul triangle, splitting A in
// halves: each half of C (rows with Left, columns with Right) is its
// diagonal block's product by recursion, then the off-diagonal block's
// product, U = A[:p, p:] or its transpose, added by gemm. U is stored as
// it is with Upper and as Uᵀ = A[p:, :p] with Lower.
func symmRec[T float](k *kernels[T], s blas.Side, ul blas.Uplo, m, n int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	size := triSize(s, m, n)
	if size <= recBase {
		symmDiag(k, s, ul, m, n, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	p := size / 2
	a22 := a[p*lda+p:]
	u, ut := a[p:], false // U, and whether it is stored transposed
	if ul == blas.Lower {
		u, ut = a[p*lda:], true
	}
	if s == blas.Left { // C1 = A11·B1 + U·B2, C2 = Uᵀ·B1 + A22·B2
		b2, c2 := b[p*ldb:], c[p*ldc:]
		symmRec(k, s, ul, p, n, alpha, a, lda, b, ldb, beta, c, ldc)
		k.gemm(ut, false, p, n, m-p, alpha, u, lda, b2, ldb, 1, c, ldc)
		symmRec(k, s, ul, m-p, n, alpha, a22, lda, b2, ldb, beta, c2, ldc)
		k.gemm(!ut, false, m-p, n, p, alpha, u, lda, b, ldb, 1, c2, ldc)
		return
	}
	// C1 = B1·A11 + B2·Uᵀ, C2 = B1·U + B2·A22
	b2, c2 := b[p:], c[p:]
	symmRec(k, s, ul, m, p, alpha, a, lda, b, ldb, beta, c, ldc)
	k.gemm(false, !ut, m, p, n-p, alpha, b2, ldb, u, lda, 1, c, ldc)
	symmRec(k, s, ul, m, n-p, alpha, a22, lda, b2, ldb, beta, c2, ldc)
	k.gemm(false, ut, m, n-p, p, alpha, b, ldb, u, lda, 1, c2, ldc)
}

// symmDiag is a diagonal block of symmRec (A of order recBase or less):
// the ul triangle of A mirrored into a full square in a pooled scratch
// block, then one gemm (C not read when beta == 0).
func symmDiag[T float](k *kernels[T], s blas.Side, ul blas.Uplo, m, n int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	size := triSize(s, m, n)
	p := k.scratch.Get().(*[recBase * recBase]T)
	defer k.scratch.Put(p)
	w := p[:size*size]
	square(w, a, lda, size, ul, true, false)
	if s == blas.Left {
		k.gemm(false, false, m, n, m, alpha, w, m, b, ldb, beta, c, ldc)
	} else {
		k.gemm(false, false, m, n, n, alpha, b, ldb, w, n, beta, c, ldc)
	}
}

// trmmDiag is a diagonal block of trmm's triRec (A of order recBase or
// less): the triangle of A copied into a full square in scratch (zeros in
// the other triangle, ones on the diagonal when unit), then B multiplied
// by gemm a square of at most recBase columns (Left) or rows (Right) at a
// time, each copied to a second scratch block first (gemm's C may not
// overlap its operands). It replaces gonum's unblocked trmm, which did a
// fraction of trmm's work at a fraction of gemm's speed. Unlike gonum it
// multiplies A's zero elements too (an Inf or NaN in B spreads further).
func trmmDiag[T float](k *kernels[T], s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha T, a []T, lda int, b []T, ldb int) {
	size := triSize(s, m, n)
	pw, pt := k.scratch.Get().(*[recBase * recBase]T), k.scratch.Get().(*[recBase * recBase]T)
	defer k.scratch.Put(pw)
	defer k.scratch.Put(pt)
	w := pw[:size*size]
	square(w, a, lda, size, ul, false, d == blas.Unit)
	trans := isTrans(tA)
	if s == blas.Left { // B[:, j:j+cw] = alpha·op(W)·B[:, j:j+cw]
		for j := 0; j < n; j += recBase {
			cw := min(recBase, n-j)
			t := pt[:size*cw]
			for i := range size {
				copy(t[i*cw:i*cw+cw], b[i*ldb+j:i*ldb+j+cw])
			}
			k.gemm(trans, false, size, cw, size, alpha, w, size, t, cw, 0, b[j:], ldb)
		}
		return
	}
	for i := 0; i < m; i += recBase { // B[i:i+rh, :] = alpha·B[i:i+rh, :]·op(W)
		rh := min(recBase, m-i)
		t := pt[:rh*size]
		for r := range rh {
			copy(t[r*size:r*size+size], b[(i+r)*ldb:(i+r)*ldb+size])
		}
		k.gemm(false, trans, rh, size, size, alpha, t, size, w, size, 0, b[i*ldb:], ldb)
	}
}

// square writes the ul triangle of the size×size A into the square w
// (row stride size): mirrored into the other triangle when sym, else that
// triangle zero, and ones on the diagonal when unit.
func square[T float](w, a []T, lda, size int, ul blas.Uplo, sym, unit bool) {
	if !sym {
		clear(w)
	}
	for i := range size {
		lo, hi := i, size // the stored columns of row i
		if ul == blas.Lower {
			lo, hi = 0, i+1
		}
		for j, v := range a[i*lda+lo : i*lda+hi] {
			w[i*size+lo+j] = v
			if sym {
				w[(lo+j)*size+i] = v
			}
		}
		if unit {
			w[i*size+i] = 1
		}
	}
}

// Dsyrk computes the ul triangle of C = alpha·op(A)·op(A)ᵀ + beta·C.
func (impl Implementation) Dsyrk(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	syrk(k64, impl.Implementation.Dsyrk, ul, tA, n, k, alpha, a, lda, beta, c, ldc)
}

// Ssyrk computes the ul triangle of C = alpha·op(A)·op(A)ᵀ + beta·C.
func (impl Implementation) Ssyrk(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int) {
	syrk(k32, impl.Implementation.Ssyrk, ul, tA, n, k, alpha, a, lda, beta, c, ldc)
}

// Dtrsm solves op(A)·X = alpha·B or X·op(A) = alpha·B for triangular A, X
// written over B.
func (impl Implementation) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	trsm(k64, impl.Implementation.Dtrsm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Strsm solves op(A)·X = alpha·B or X·op(A) = alpha·B for triangular A, X
// written over B.
func (impl Implementation) Strsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float32, a []float32, lda int, b []float32, ldb int) {
	trsm(k32, impl.Implementation.Strsm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Dsyr2k computes the ul triangle of C = alpha·op(A)·op(B)ᵀ +
// alpha·op(B)·op(A)ᵀ + beta·C.
func (impl Implementation) Dsyr2k(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	syr2k(k64, impl.Implementation.Dsyr2k, ul, tA, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Ssyr2k computes the ul triangle of C = alpha·op(A)·op(B)ᵀ +
// alpha·op(B)·op(A)ᵀ + beta·C.
func (impl Implementation) Ssyr2k(ul blas.Uplo, tA blas.Transpose, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	syr2k(k32, impl.Implementation.Ssyr2k, ul, tA, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dsymm computes C = alpha·A·B + beta·C (Left) or C = alpha·B·A + beta·C
// (Right) for the symmetric A stored in its ul triangle.
func (impl Implementation) Dsymm(s blas.Side, ul blas.Uplo, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	symm(k64, impl.Implementation.Dsymm, s, ul, m, n, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Ssymm computes C = alpha·A·B + beta·C (Left) or C = alpha·B·A + beta·C
// (Right) for the symmetric A stored in its ul triangle.
func (impl Implementation) Ssymm(s blas.Side, ul blas.Uplo, m, n int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	symm(k32, impl.Implementation.Ssymm, s, ul, m, n, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Dtrmm computes B = alpha·op(A)·B (Left) or B = alpha·B·op(A) (Right) for
// triangular A, in place of B.
func (impl Implementation) Dtrmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	trmm(k64, impl.Implementation.Dtrmm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Strmm computes B = alpha·op(A)·B (Left) or B = alpha·B·op(A) (Right) for
// triangular A, in place of B.
func (impl Implementation) Strmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float32, a []float32, lda int, b []float32, ldb int) {
	trmm(k32, impl.Implementation.Strmm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}
