package lanesblas

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// The differential tests call every overridden routine of both widths and
// gonum's own with the same arguments, valid and invalid: the panic values
// must be equal (testblas only checks that a bad argument panics, and has no
// float32 tests), and results must agree within the error bound of a sum of
// n terms in T (n·eps·Σ|terms| for each implementation, so twice that).

// routines is one width's set of overridden routines, of one implementation.
type routines[T float] struct {
	dot   func(n int, x []T, incX int, y []T, incY int) T
	nrm2  func(n int, x []T, incX int) T
	asum  func(n int, x []T, incX int) T
	iamax func(n int, x []T, incX int) int
	swap  func(n int, x []T, incX int, y []T, incY int)
	copy  func(n int, x []T, incX int, y []T, incY int)
	axpy  func(n int, alpha T, x []T, incX int, y []T, incY int)
	scal  func(n int, alpha T, x []T, incX int)
	gemv  func(tA blas.Transpose, m, n int, alpha T, a []T, lda int, x []T, incX int, beta T, y []T, incY int)
	ger   func(m, n int, alpha T, x []T, incX int, y []T, incY int, a []T, lda int)
	gemm  func(tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)
	symv  func(ul blas.Uplo, n int, alpha T, a []T, lda int, x []T, incX int, beta T, y []T, incY int)
	trmv  func(ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []T, lda int, x []T, incX int)
	trsv  func(ul blas.Uplo, tA blas.Transpose, d blas.Diag, n int, a []T, lda int, x []T, incX int)
	syrk  syrkFunc[T]
	syr2k syr2kFunc[T]
	trsm  triFunc[T]
	trmm  triFunc[T]
	symm  symmFunc[T]
}

func routines64(i interface {
	blas.Float64Level1
	blas.Float64Level2
	blas.Float64Level3
}) routines[float64] {
	return routines[float64]{i.Ddot, i.Dnrm2, i.Dasum, i.Idamax, i.Dswap, i.Dcopy, i.Daxpy, i.Dscal, i.Dgemv, i.Dger, i.Dgemm, i.Dsymv, i.Dtrmv, i.Dtrsv, i.Dsyrk, i.Dsyr2k, i.Dtrsm, i.Dtrmm, i.Dsymm}
}

func routines32(i interface {
	blas.Float32Level1
	blas.Float32Level2
	blas.Float32Level3
}) routines[float32] {
	return routines[float32]{i.Sdot, i.Snrm2, i.Sasum, i.Isamax, i.Sswap, i.Scopy, i.Saxpy, i.Sscal, i.Sgemv, i.Sger, i.Sgemm, i.Ssymv, i.Strmv, i.Strsv, i.Ssyrk, i.Ssyr2k, i.Strsm, i.Strmm, i.Ssymm}
}

func TestAgainstGonum(t *testing.T) {
	forEachLevel(t, func(t *testing.T) {
		t.Run("float64", func(t *testing.T) {
			diffAll(t, routines64(Implementation{}), routines64(gonum.Implementation{}), 0x1p-53)
		})
		t.Run("float32", func(t *testing.T) {
			diffAll(t, routines32(Implementation{}), routines32(gonum.Implementation{}), 0x1p-24)
		})
	})
}

// catch runs f and returns what it panicked with, or nil.
func catch(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

func randVec[T float](r *rand.Rand, n int) []T {
	x := make([]T, max(n, 0))
	for i := range x {
		x[i] = T(r.Float64()*2 - 1)
	}
	return x
}

func clone[T float](x []T) []T { return append([]T(nil), x...) }

// near reports whether got is within 2·n·eps·scale of want (NaN matching
// NaN, infinities equal).
func near[T float](got, want T, n int, eps, scale float64) bool {
	g, w := float64(got), float64(want)
	if g != g || w != w {
		return g != g && w != w
	}
	if math.IsInf(w, 0) || math.IsInf(g, 0) {
		return g == w
	}
	return math.Abs(g-w) <= 2*float64(max(n, 1))*eps*scale+math.SmallestNonzeroFloat64
}

func sumAbs[T float](x []T) float64 {
	s := 0.0
	for _, v := range x {
		s += math.Abs(float64(v))
	}
	return s
}

func diffAll[T float](t *testing.T, got, want routines[T], eps float64) {
	r := rand.New(rand.NewPCG(1, 2))
	incs := []int{1, 2, -1, 0}
	sizes := []int{-1, 0, 1, 2, 3, 7, 8, 31, 33, 100, 257}
	nan, inf := T(math.NaN()), T(math.Inf(1))
	for _, n := range sizes {
		for _, short := range []int{-1, 0, 3} {
			for _, incX := range incs {
				for _, incY := range incs {
					ln := max(n, 1)*max(incX, -incX, 1) + short
					for _, shortY := range []int{0, 1} { // y shorter than x too
						x, y := randVec[T](r, ln), randVec[T](r, max(ln-shortY, 0))
						name := fmt.Sprintf("n=%d len(x)=%d len(y)=%d incX=%d incY=%d", n, len(x), len(y), incX, incY)
						diffL1(t, name, got, want, n, x, incX, y, incY, eps)
					}
				}
			}
		}
	}
	// Special values for nrm2, asum and iamax: NaN first or later, with and
	// without ±Inf, ties in magnitude, huge and tiny (overflow, underflow).
	bigF, tinyF := math.MaxFloat32, math.SmallestNonzeroFloat32
	if eps < 0x1p-30 {
		bigF, tinyF = math.MaxFloat64, math.SmallestNonzeroFloat64
	}
	big, tiny := T(bigF), T(tinyF)
	specials := [][]T{
		{nan, 1, 2}, {1, nan, 2}, {1, 2, nan}, {inf, nan, 1}, {nan, -inf, 1}, {1, -inf, 2},
		{-3, 3, 1}, {3, -3, 1}, {1, -3, 3}, {0, -0, 0}, {-2, 1, 2},
		{big, big, -big}, {tiny, tiny, -tiny, 0}, {big, tiny, 1},
	}
	for i, s := range specials {
		name := fmt.Sprintf("special %d %v", i, s)
		diffL1(t, name, got, want, len(s), s, 1, clone(s), 1, eps)
	}
	// Partial overlap of x and y (delegated).
	for _, d := range []int{1, 3} {
		buf := randVec[T](r, 40)
		buf2 := clone(buf)
		got.copy(30, buf, 1, buf[d:], 1)
		want.copy(30, buf2, 1, buf2[d:], 1)
		for i := range buf {
			if buf[i] != buf2[i] {
				t.Errorf("copy overlapping by %d: element %d: got %v want %v", d, i, buf[i], buf2[i])
				break
			}
		}
		buf = randVec[T](r, 40)
		buf2 = clone(buf)
		got.axpy(30, 0.5, buf, 1, buf[d:], 1)
		want.axpy(30, 0.5, buf2, 1, buf2[d:], 1)
		for i := range buf {
			if !near(buf[i], buf2[i], 2, eps, 4) {
				t.Errorf("axpy overlapping by %d: element %d: got %v want %v", d, i, buf[i], buf2[i])
				break
			}
		}
		buf = randVec[T](r, 40)
		buf2 = clone(buf)
		got.swap(30, buf, 1, buf[d:], 1)
		want.swap(30, buf2, 1, buf2[d:], 1)
		for i := range buf {
			if buf[i] != buf2[i] {
				t.Errorf("swap overlapping by %d: element %d: got %v want %v", d, i, buf[i], buf2[i])
				break
			}
		}
	}
	diffL2L3(t, r, got, want, eps)
	diffSymTri(t, r, got, want, eps)
	diffRec(t, r, got, want, eps)
}

// diffRec compares syrk, syr2k, trsm, trmm and symm, whose recursion on
// gemm starts above recBase, at sizes on both sides of it and odd splits,
// every side, triangle, transpose and diagonal, and invalid arguments.
func diffRec[T float](t *testing.T, r *rand.Rand, got, want routines[T], eps float64) {
	for _, ul := range []blas.Uplo{blas.Upper, blas.Lower, 'X'} {
		for _, tA := range transposes {
			for _, n := range []int{-1, 0, 7, recBase, recBase + 1, 75, 150} {
				for _, k := range []int{-1, 0, 5, 70} {
					for _, pad := range []int{-1, 2} {
						for _, short := range []int{-1, 0} {
							row, col := n, k
							if isTrans(tA) {
								row, col = k, n
							}
							lda, ldb, ldc := max(col, 1)+pad, max(col, 1)+pad+1, max(n, 1)+pad
							a := randVec[T](r, max(lda*(row-1)+col, 0)+short)
							b := randVec[T](r, max(ldb*(row-1)+col, 0)+short)
							c := randVec[T](r, max(ldc*(n-1)+n, 0)+short)
							for _, ab := range [][2]T{{0, 2}, {1, 0}, {-0.5, 1}, {-0.5, 2}} {
								alpha, beta := ab[0], ab[1]
								desc := fmt.Sprintf("ul=%c tA=%c n=%d k=%d lda=%d ldb=%d ldc=%d len=%d,%d,%d alpha=%v beta=%v", ul, tA, n, k, lda, ldb, ldc, len(a), len(b), len(c), alpha, beta)
								cg, cw := clone(c), clone(c)
								pg := catch(func() { got.syrk(ul, tA, n, k, alpha, a, lda, beta, cg, ldc) })
								pw := catch(func() { want.syrk(ul, tA, n, k, alpha, a, lda, beta, cw, ldc) })
								if pg != pw {
									t.Fatalf("syrk %s: panics with %v, gonum with %v", desc, pg, pw)
								}
								compareVec(t, "syrk "+desc, cg, cw, max(k, 1), eps, float64(2*max(k, 1)+2))
								cg, cw = clone(c), clone(c)
								pg = catch(func() { got.syr2k(ul, tA, n, k, alpha, a, lda, b, ldb, beta, cg, ldc) })
								pw = catch(func() { want.syr2k(ul, tA, n, k, alpha, a, lda, b, ldb, beta, cw, ldc) })
								if pg != pw {
									t.Fatalf("syr2k %s: panics with %v, gonum with %v", desc, pg, pw)
								}
								compareVec(t, "syr2k "+desc, cg, cw, 2*max(k, 1), eps, float64(2*max(k, 1)+2))
							}
						}
					}
				}
			}
		}
	}
	for _, side := range []blas.Side{blas.Left, blas.Right, 'X'} {
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower, 'X'} {
			for _, tA := range transposes {
				for _, d := range []blas.Diag{blas.NonUnit, blas.Unit, 'X'} {
					for _, m := range []int{-1, 0, 7, recBase + 1, 75} {
						for _, n := range []int{-1, 0, 3, 40} {
							for _, short := range []int{-1, 0} {
								ka := n
								if side == blas.Left {
									ka = m
								}
								lda, ldb := max(ka, 1)+1, max(n, 1)+2
								a := randVec[T](r, max(lda*(ka-1)+ka, 0)+short)
								for i := range max(ka, 0) {
									// A well-conditioned triangle, unit diagonal or not: small
									// off-diagonal elements, diagonal near 1.
									for j := range ka {
										if i*lda+j < len(a) {
											a[i*lda+j] /= T(ka)
										}
									}
									if i*lda+i < len(a) {
										a[i*lda+i] += 1
									}
								}
								b := randVec[T](r, max(ldb*(m-1)+n, 0)+short)
								for _, alpha := range []T{0, 1, -1.5} {
									desc := fmt.Sprintf("side=%c ul=%c tA=%c d=%c m=%d n=%d len=%d,%d alpha=%v", side, ul, tA, d, m, n, len(a), len(b), alpha)
									for _, f := range []struct {
										name      string
										got, want triFunc[T]
									}{{"trsm", got.trsm, want.trsm}, {"trmm", got.trmm, want.trmm}} {
										bg, bw := clone(b), clone(b)
										pg := catch(func() { f.got(side, ul, tA, d, m, n, alpha, a, lda, bg, ldb) })
										pw := catch(func() { f.want(side, ul, tA, d, m, n, alpha, a, lda, bw, ldb) })
										if pg != pw {
											t.Fatalf("%s %s: panics with %v, gonum with %v", f.name, desc, pg, pw)
										}
										compareVec(t, f.name+" "+desc, bg, bw, max(ka, 1), eps, 8)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	for _, side := range []blas.Side{blas.Left, blas.Right, 'X'} {
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower, 'X'} {
			for _, m := range []int{-1, 0, 7, recBase + 1, 75} {
				for _, n := range []int{-1, 0, 3, 40, 70} {
					for _, pad := range []int{-1, 2} {
						for _, short := range []int{-1, 0} {
							ka := n
							if side == blas.Left {
								ka = m
							}
							lda, ldb, ldc := max(ka, 1)+pad, max(n, 1)+pad+1, max(n, 1)+pad
							a := randVec[T](r, max(lda*(ka-1)+ka, 0)+short)
							b := randVec[T](r, max(ldb*(m-1)+n, 0)+short)
							c := randVec[T](r, max(ldc*(m-1)+n, 0)+short)
							for _, ab := range [][2]T{{0, 1}, {0, 0}, {0, 2}, {1, 0}, {-0.5, 1}, {-0.5, 2}} {
								alpha, beta := ab[0], ab[1]
								desc := fmt.Sprintf("symm side=%c ul=%c m=%d n=%d lda=%d ldb=%d ldc=%d len=%d,%d,%d alpha=%v beta=%v", side, ul, m, n, lda, ldb, ldc, len(a), len(b), len(c), alpha, beta)
								cg, cw := clone(c), clone(c)
								pg := catch(func() { got.symm(side, ul, m, n, alpha, a, lda, b, ldb, beta, cg, ldc) })
								pw := catch(func() { want.symm(side, ul, m, n, alpha, a, lda, b, ldb, beta, cw, ldc) })
								if pg != pw {
									t.Fatalf("%s: panics with %v, gonum with %v", desc, pg, pw)
								}
								compareVec(t, desc, cg, cw, max(ka, 1), eps, float64(2*max(ka, 1)+2))
							}
						}
					}
				}
			}
		}
	}
}

// diffSymTri compares symv, trmv and trsv on valid and invalid arguments
// (A diagonally dominant, so that trsv's solution stays of the size of b).
func diffSymTri[T float](t *testing.T, r *rand.Rand, got, want routines[T], eps float64) {
	uplos := []blas.Uplo{blas.Upper, blas.Lower, 'X'}
	diags := []blas.Diag{blas.NonUnit, blas.Unit, 'X'}
	for _, ul := range uplos {
		for _, n := range []int{-1, 0, 1, 2, 5, 40} {
			for _, pad := range []int{-1, 0, 3} {
				for _, inc := range []int{1, -1, 2, 0} {
					for _, short := range []int{-1, 0} {
						lda := max(n, 1) + pad
						a := randVec[T](r, max(lda*(n-1)+n, 0)+short)
						for i := 0; i < n && i*lda+i < len(a); i++ {
							a[i*lda+i] += T(n)
						}
						x := randVec[T](r, max(n, 1)*2+short)
						y := randVec[T](r, max(n, 1)*2+short)
						scale := float64(2*n + 2)
						for _, alpha := range []T{0, 1, -0.5} {
							for _, beta := range []T{0, 1, -0.5} {
								desc := fmt.Sprintf("symv ul=%c n=%d lda=%d len(a)=%d inc=%d len(x)=%d alpha=%v beta=%v", ul, n, lda, len(a), inc, len(x), alpha, beta)
								yg, yw := clone(y), clone(y)
								pg := catch(func() { got.symv(ul, n, alpha, a, lda, x, inc, beta, yg, inc) })
								pw := catch(func() { want.symv(ul, n, alpha, a, lda, x, inc, beta, yw, inc) })
								if pg != pw {
									t.Fatalf("%s: panics with %v, gonum with %v", desc, pg, pw)
								}
								compareVec(t, desc, yg, yw, n*n, eps, scale)
							}
						}
						for _, tA := range transposes {
							for _, d := range diags {
								desc := fmt.Sprintf("ul=%c tA=%c d=%c n=%d lda=%d len(a)=%d inc=%d len(x)=%d", ul, tA, d, n, lda, len(a), inc, len(x))
								xg, xw := clone(x), clone(x)
								pg := catch(func() { got.trmv(ul, tA, d, n, a, lda, xg, inc) })
								pw := catch(func() { want.trmv(ul, tA, d, n, a, lda, xw, inc) })
								if pg != pw {
									t.Fatalf("trmv %s: panics with %v, gonum with %v", desc, pg, pw)
								}
								compareVec(t, "trmv "+desc, xg, xw, n, eps, scale*scale)
								xg, xw = clone(x), clone(x)
								pg = catch(func() { got.trsv(ul, tA, d, n, a, lda, xg, inc) })
								pw = catch(func() { want.trsv(ul, tA, d, n, a, lda, xw, inc) })
								if pg != pw {
									t.Fatalf("trsv %s: panics with %v, gonum with %v", desc, pg, pw)
								}
								compareVec(t, "trsv "+desc, xg, xw, n*n, eps, scale)
							}
						}
					}
				}
			}
		}
	}
}

// diffL1 compares every Level 1 routine on one set of arguments.
func diffL1[T float](t *testing.T, name string, got, want routines[T], n int, x []T, incX int, y []T, incY int, eps float64) {
	t.Helper()
	scale := sumAbs(x) * 2
	var g, w T
	pg := catch(func() { g = got.dot(n, x, incX, y, incY) })
	pw := catch(func() { w = want.dot(n, x, incX, y, incY) })
	if pg != pw || pg == nil && !near(g, w, n, eps, scale) {
		t.Errorf("%s: dot = %v (panic %v), gonum %v (panic %v)", name, g, pg, w, pw)
	}
	pg = catch(func() { g = got.nrm2(n, x, incX) })
	pw = catch(func() { w = want.nrm2(n, x, incX) })
	if pg != pw || pg == nil && !near(g, w, n, eps, float64(w)) {
		t.Errorf("%s: nrm2 = %v (panic %v), gonum %v (panic %v)", name, g, pg, w, pw)
	}
	pg = catch(func() { g = got.asum(n, x, incX) })
	pw = catch(func() { w = want.asum(n, x, incX) })
	if pg != pw || pg == nil && !near(g, w, n, eps, scale) {
		t.Errorf("%s: asum = %v (panic %v), gonum %v (panic %v)", name, g, pg, w, pw)
	}
	var ig, iw int
	pg = catch(func() { ig = got.iamax(n, x, incX) })
	pw = catch(func() { iw = want.iamax(n, x, incX) })
	if pg != pw || ig != iw {
		t.Errorf("%s: iamax = %v (panic %v), gonum %v (panic %v)", name, ig, pg, iw, pw)
	}
	// The routines that write: each on its own copies.
	writers := []struct {
		name  string
		run   func(r routines[T], x, y []T)
		exact bool
	}{
		{"swap", func(r routines[T], x, y []T) { r.swap(n, x, incX, y, incY) }, true},
		{"copy", func(r routines[T], x, y []T) { r.copy(n, x, incX, y, incY) }, true},
		{"axpy", func(r routines[T], x, y []T) { r.axpy(n, 0.75, x, incX, y, incY) }, false},
		{"axpy alpha=0", func(r routines[T], x, y []T) { r.axpy(n, 0, x, incX, y, incY) }, true},
		{"scal", func(r routines[T], x, y []T) { r.scal(n, -1.5, x, incX) }, true},
		{"scal alpha=0", func(r routines[T], x, y []T) { r.scal(n, 0, x, incX) }, true},
	}
	for _, wr := range writers {
		xg, yg, xw, yw := clone(x), clone(y), clone(x), clone(y)
		pg := catch(func() { wr.run(got, xg, yg) })
		pw := catch(func() { wr.run(want, xw, yw) })
		if pg != pw {
			t.Errorf("%s: %s panics with %v, gonum with %v", name, wr.name, pg, pw)
			continue
		}
		for i := range xg {
			if xg[i] != xw[i] && !(xg[i] != xg[i] && xw[i] != xw[i]) {
				t.Errorf("%s: %s: x[%d] = %v, gonum %v", name, wr.name, i, xg[i], xw[i])
				break
			}
		}
		for i := range yg {
			ok := yg[i] == yw[i] || yg[i] != yg[i] && yw[i] != yw[i]
			if !wr.exact {
				ok = near(yg[i], yw[i], 2, eps, 2*math.Abs(float64(yw[i]))+1)
			}
			if !ok {
				t.Errorf("%s: %s: y[%d] = %v, gonum %v", name, wr.name, i, yg[i], yw[i])
				break
			}
		}
	}
}

var transposes = []blas.Transpose{blas.NoTrans, blas.Trans, blas.ConjTrans, 'X'}

// diffL2L3 compares gemv, ger and gemm on valid and invalid shapes,
// strides, increments and lengths, with alpha and beta 0, 1 and others.
func diffL2L3[T float](t *testing.T, r *rand.Rand, got, want routines[T], eps float64) {
	dims := []int{-1, 0, 1, 3, 17, 70}
	scalars := []T{0, 1, -0.5}
	for _, tA := range transposes {
		for _, m := range dims {
			for _, n := range dims {
				for _, pad := range []int{-1, 0, 2} {
					for _, inc := range []int{1, -1, 2} {
						for _, short := range []int{-1, 0} {
							lda := max(n, 1) + pad
							lenA := max(lda*(m-1)+n, 0) + short
							a := randVec[T](r, lenA)
							x, y := randVec[T](r, (max(m, n, 1))*2+short), randVec[T](r, (max(m, n, 1))*2+short)
							for _, alpha := range scalars {
								for _, beta := range scalars {
									name := fmt.Sprintf("tA=%c m=%d n=%d lda=%d lenA=%d inc=%d len(x)=%d alpha=%v beta=%v", tA, m, n, lda, lenA, inc, len(x), alpha, beta)
									yg, yw := clone(y), clone(y)
									pg := catch(func() { got.gemv(tA, m, n, alpha, a, lda, x, inc, beta, yg, inc) })
									pw := catch(func() { want.gemv(tA, m, n, alpha, a, lda, x, inc, beta, yw, inc) })
									if pg != pw {
										t.Fatalf("%s: gemv panics with %v, gonum with %v", name, pg, pw)
									}
									scale := float64(max(m, n) + 1) // elements are in [-1, 1]
									// gonum's float32 GemvT with beta == 0 clears all of
									// y, past its n elements too: compare the operand,
									// and require the rest untouched here.
									if lenY := gemvLenY(tA, m, n); inc == 1 && pg == nil && lenY < len(y) {
										compareVec(t, name+": gemv past y", yg[lenY:], y[lenY:], 1, eps, 0)
										yg, yw = yg[:lenY], yw[:lenY]
									}
									compareVec(t, name+": gemv", yg, yw, max(m, n), eps, scale)
								}
								ag, aw := clone(a), clone(a)
								pg := catch(func() { got.ger(m, n, alpha, x, inc, y, inc, ag, lda) })
								pw := catch(func() { want.ger(m, n, alpha, x, inc, y, inc, aw, lda) })
								if pg != pw {
									t.Fatalf("%s: ger panics with %v, gonum with %v", name(tA, m, n, lda, lenA, inc), pg, pw)
								}
								compareVec(t, "ger "+name(tA, m, n, lda, lenA, inc)+fmt.Sprintf(" alpha=%v", alpha), ag, aw, 2, eps, 4)
							}
						}
					}
				}
			}
		}
	}
	gdims := []int{-1, 0, 1, 5, 33}
	for _, tA := range transposes {
		for _, tB := range transposes {
			for _, m := range gdims {
				for _, n := range gdims {
					for _, k := range gdims {
						for _, pad := range []int{-1, 1} {
							for _, short := range []int{-1, 0} {
								ar, ac := m, k
								if isTrans(tA) {
									ar, ac = k, m
								}
								br, bc := k, n
								if isTrans(tB) {
									br, bc = n, k
								}
								lda, ldb, ldc := max(ac, 1)+pad, max(bc, 1)+pad, max(n, 1)+pad
								a := randVec[T](r, max((ar-1)*lda+ac, 0)+short)
								b := randVec[T](r, max((br-1)*ldb+bc, 0)+short)
								c := randVec[T](r, max((m-1)*ldc+n, 0)+short)
								for _, alpha := range scalars {
									for _, beta := range scalars {
										cg, cw := clone(c), clone(c)
										desc := fmt.Sprintf("gemm tA=%c tB=%c m=%d n=%d k=%d lda=%d ldb=%d ldc=%d len=%d,%d,%d alpha=%v beta=%v",
											tA, tB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c), alpha, beta)
										pg := catch(func() { got.gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, cg, ldc) })
										pw := catch(func() { want.gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, cw, ldc) })
										if pg != pw {
											t.Fatalf("%s: panics with %v, gonum with %v", desc, pg, pw)
										}
										compareVec(t, desc, cg, cw, max(k, 1), eps, 2*float64(max(k, 1)))
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

func gemvLenY(tA blas.Transpose, m, n int) int {
	if tA == blas.NoTrans {
		return max(m, 0)
	}
	return max(n, 0)
}

func name(tA blas.Transpose, m, n, lda, lenA, inc int) string {
	return fmt.Sprintf("tA=%c m=%d n=%d lda=%d lenA=%d inc=%d", tA, m, n, lda, lenA, inc)
}

// compareVec fails unless got and want agree within near's bound element by
// element (elements outside the operands must be equal, which near checks
// too: they are untouched by both).
func compareVec[T float](t *testing.T, desc string, got, want []T, n int, eps, scale float64) {
	t.Helper()
	for i := range got {
		if !near(got[i], want[i], n, eps, scale) {
			t.Fatalf("%s: element %d = %v, gonum %v", desc, i, got[i], want[i])
		}
	}
}
