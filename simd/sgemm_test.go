package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// The GEMM tests are written once for both widths: each runs for Sgemm and
// for Dgemm (TestSgemmX and TestDgemmX) through gemmAPI.

// gemmAPI is the public GEMM API of one element width.
type gemmAPI[T float] struct {
	name    string // Sgemm or Dgemm; the strided and gemv forms are name+"Strided", name[:1]+"gemv"
	gemm    func(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)
	strided func(transA, transB bool, m, n, k int, alpha T, a []T, lda, strideA int, b []T, ldb, strideB int, beta T, c []T, ldc, strideC int, batch int)
	gemv    func(transA bool, m, n int, alpha T, a []T, lda int, x []T, beta T, y []T)
}

var (
	sgemmAPI = gemmAPI[float32]{"Sgemm", Sgemm, SgemmStrided, Sgemv}
	dgemmAPI = gemmAPI[float64]{"Dgemm", Dgemm, DgemmStrided, Dgemv}
)

func (api gemmAPI[T]) gemvName() string { return api.name[:1] + "gemv" }

// gemmCase is one product with its operands laid out in padded storage.
type gemmCase[T float] struct {
	api            gemmAPI[T]
	transA, transB bool
	m, n, k        int
	alpha, beta    T
	lda, ldb, ldc  int
	a, b, c        []T
}

// newGemmCase fills A, B, C with values in [-1, 1), strides pad elements
// longer than the rows, and each operand starting off elements into its
// buffer (off = 1 or 3: not on a vector boundary).
func newGemmCase[T float](api gemmAPI[T], r *rand.Rand, transA, transB bool, m, n, k int, alpha, beta T, pad, off int) *gemmCase[T] {
	g := &gemmCase[T]{api: api, transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	g.lda, g.ldb, g.ldc = max(1, ac+pad), max(1, bc+pad), max(1, n+pad)
	g.a = randOf[T](r, off+max(0, (ar-1)*g.lda+ac))[off:]
	g.b = randOf[T](r, off+max(0, (br-1)*g.ldb+bc))[off:]
	g.c = randOf[T](r, max(0, (m-1)*g.ldc+n))
	return g
}

// randOf returns n values in [-1, 1) of T's precision.
func randOf[T float](r *rand.Rand, n int) []T {
	s := make([]T, n)
	fill(r, s, 1, 0)
	return s
}

// randSlice is randOf for float32 (the benchmarks' operands).
func randSlice(r *rand.Rand, n int) []float32 { return randOf[float32](r, n) }

func (g *gemmCase[T]) at(x []T, ld int, trans bool, i, j int) float64 {
	if trans {
		return float64(x[j*ld+i])
	}
	return float64(x[i*ld+j])
}

// dot2 returns Σ x_p·y_p for the products prod(p), p < k, computed in
// double-double (Ogita, Rump and Oishi's Dot2: each product split exactly
// with an FMA, the sum compensated with TwoSum), and Σ|x_p·y_p|. Its error
// is within 2⁻⁵³·|Σ| + k²·2⁻¹⁰⁶·Σ|x_p·y_p|: a reference more precise than
// float64, as a float64 product needs.
func dot2(k int, prod func(p int) (float64, float64)) (s, abs float64) {
	var hi, lo float64
	for p := 0; p < k; p++ {
		x, y := prod(p)
		ph := x * y
		pl := math.FMA(x, y, -ph)
		sh := hi + ph
		bv := sh - hi
		sl := (hi - (sh - bv)) + (ph - bv)
		hi, lo = sh, lo+sl+pl
		abs += math.Abs(ph)
	}
	return hi + lo, abs
}

// check runs the product on a copy of C placed between canaries and
// compares with the double-double product (dot2); the bound is
// (k+2)·u·Σ|A||B|·|alpha| plus the rounding of the beta term (u the unit
// roundoff of T), plus 4·2⁻⁵³ of both terms for the float64 rounding of
// alpha·s + beta·c in the reference itself.
func (g *gemmCase[T]) check(t *testing.T, what string) {
	t.Helper()
	const guard = 9
	buf := make([]T, len(g.c)+2*guard)
	canary := T(math.NaN())
	for i := range buf {
		buf[i] = canary
	}
	c := buf[guard : guard+len(g.c) : guard+len(g.c)]
	copy(c, g.c)
	g.api.gemm(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
	for i := 0; i < g.m; i++ {
		for j := 0; j < g.n; j++ {
			s, sa := dot2(g.k, func(p int) (float64, float64) {
				return g.at(g.a, g.lda, g.transA, i, p), g.at(g.b, g.ldb, g.transB, p, j)
			})
			alpha, beta, old := float64(g.alpha), float64(g.beta), float64(g.c[i*g.ldc+j])
			want := alpha * s
			if g.beta != 0 {
				want += beta * old
			}
			ta, tb := math.Abs(alpha)*sa, math.Abs(beta*old)
			u := eps[T]()
			bound := (float64(g.k)+2)*u*ta + 2*u*tb + 4*0x1p-53*(ta+tb) + 1e-300
			if got := float64(c[i*g.ldc+j]); !(math.Abs(got-want) <= bound) {
				t.Fatalf("%s: C[%d][%d] = %v, want %v (bound %g)", what, i, j, got, want, bound)
			}
		}
	}
	// Padding between rows of C is untouched (rows that start within c:
	// i·ldc is not formed past it, where a huge ldc would wrap), and so are
	// the canaries around it.
	for i := 0; i < g.m && len(c) > 0 && i <= (len(c)-1)/g.ldc; i++ {
		for j := g.n; j < g.ldc && i*g.ldc+j < len(c); j++ {
			if bitsOf(c[i*g.ldc+j]) != bitsOf(g.c[i*g.ldc+j]) {
				t.Fatalf("%s: wrote C padding at [%d][%d]", what, i, j)
			}
		}
	}
	for i := range guard {
		if bitsOf(buf[i]) != bitsOf(canary) || bitsOf(buf[len(buf)-1-i]) != bitsOf(canary) {
			t.Fatalf("%s: wrote outside C (canary %d from an end)", what, i)
		}
	}
}

var gemmSizes = []int{0, 1, 2, 3, 7, 16, 17, 31, 33, 63, 65, 127, 129, 255, 257}

func TestSgemm(t *testing.T) { testGemm(t, sgemmAPI) }
func TestDgemm(t *testing.T) { testGemm(t, dgemmAPI) }

func testGemm[T float](t *testing.T, api gemmAPI[T]) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(11, uint64(l)))
		count := 0
		for mi, m := range gemmSizes {
			for _, shift := range []int{0, 5, 9} { // sparse crossing of the sizes
				n := gemmSizes[(mi+shift)%len(gemmSizes)]
				k := gemmSizes[(mi+2*shift+3)%len(gemmSizes)]
				if testing.Short() && m*n*k > 64*64*64 {
					continue
				}
				for tr := 0; tr < 4; tr++ {
					ab := [][2]T{{1, 0}, {1, 1}, {-0.5, 0.25}, {2, -1}}[(count+tr)%4]
					pad, off := count%3, 1+2*(count%2)
					g := newGemmCase(api, r, tr&1 != 0, tr&2 != 0, m, n, k, ab[0], ab[1], pad, off)
					g.check(t, fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v pad=%d off=%d", m, n, k, g.transA, g.transB, ab[0], ab[1], pad, off))
					count++
				}
			}
		}
	})
}

// TestSgemmTileEdges runs every m and n around the level's microkernel tile
// (mr±1, 2·mr±1, likewise nr) with every transpose, k across a kc panel
// boundary too: the edge tiles and the zero-padded panels.
func TestSgemmTileEdges(t *testing.T) { testGemmTileEdges(t, sgemmAPI) }
func TestDgemmTileEdges(t *testing.T) { testGemmTileEdges(t, dgemmAPI) }

func testGemmTileEdges[T float](t *testing.T, api gemmAPI[T]) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		kern := familyOf[T]().kernels.get()
		around := func(x int) []int { return []int{x - 1, x, x + 1, 2*x - 1, 2*x + 1} }
		r := rand.New(rand.NewPCG(17, uint64(l)))
		ks := []int{1, 5}
		if !testing.Short() {
			ks = append(ks, kern.bl.kc+1)
		}
		count := 0
		for _, m := range around(kern.mr) {
			for _, n := range around(kern.nr) {
				for _, k := range ks {
					tr := count % 4
					ab := [][2]T{{1, 0}, {-1.5, 0.5}}[count%2]
					g := newGemmCase(api, r, tr&1 != 0, tr&2 != 0, m, n, k, ab[0], ab[1], count%2, 1)
					g.check(t, fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v", m, n, k, g.transA, g.transB))
					count++
				}
			}
		}
	})
}

// TestSgemmLarge crosses the blocking sizes (kc, mc) and the threading cut.
func TestSgemmLarge(t *testing.T) { testGemmLarge(t, sgemmAPI) }
func TestDgemmLarge(t *testing.T) { testGemmLarge(t, dgemmAPI) }

func testGemmLarge[T float](t *testing.T, api gemmAPI[T]) {
	if testing.Short() || raceEnabled {
		t.Skip("large products: not in -short or -race runs")
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(12, uint64(l)))
		for _, s := range [][3]int{{700, 301, 450}, {64, 784, 256}, {333, 97, 1030}} {
			g := newGemmCase(api, r, l == dispatch.AVX2, false, s[0], s[1], s[2], 1.5, 0.5, 1, 1)
			g.check(t, fmt.Sprintf("m=%d n=%d k=%d", s[0], s[1], s[2]))
		}
	})
}

func TestSgemmSpecial(t *testing.T) { testGemmSpecial(t, sgemmAPI) }
func TestDgemmSpecial(t *testing.T) { testGemmSpecial(t, dgemmAPI) }

func testGemmSpecial[T float](t *testing.T, api gemmAPI[T]) {
	nan := T(math.NaN())
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, size := range []int{5, 40} {
			r := rand.New(rand.NewPCG(13, uint64(size)))
			a, b := randOf[T](r, size*size), randOf[T](r, size*size)
			// beta == 0 ignores NaN in C, at every transpose.
			c := make([]T, size*size)
			for tr := 0; tr < 4; tr++ {
				for i := range c {
					c[i] = nan
				}
				api.gemm(tr&1 != 0, tr&2 != 0, size, size, size, 1, a, size, b, size, 0, c, size)
				for i, v := range c {
					if v != v {
						t.Fatalf("size %d transA=%v transB=%v: beta=0 kept a NaN of C at %d", size, tr&1 != 0, tr&2 != 0, i)
					}
				}
			}
			// alpha == 0 does not read A or B: C = beta·C.
			an := make([]T, size*size)
			for i := range an {
				an[i] = nan
			}
			for i := range c {
				c[i] = 2
			}
			api.gemm(false, false, size, size, size, 0, an, size, an, size, 0.5, c, size)
			for i, v := range c {
				if v != 1 {
					t.Fatalf("size %d: alpha=0 gave C[%d]=%v, want 1", size, i, v)
				}
			}
			// k == 0, beta == 0: C = 0.
			api.gemm(false, false, size, size, 0, 1, nil, 1, nil, size, 0, c, size)
			for i, v := range c {
				if v != 0 {
					t.Fatalf("size %d: k=0 gave C[%d]=%v", size, i, v)
				}
			}
		}
	})
}

func TestSgemmPanics(t *testing.T) { testGemmPanics(t, sgemmAPI) }
func TestDgemmPanics(t *testing.T) { testGemmPanics(t, dgemmAPI) }

func testGemmPanics[T float](t *testing.T, api gemmAPI[T]) {
	a, b, c := make([]T, 12), make([]T, 12), make([]T, 12)
	name, gv := "simd."+api.name, "simd."+api.gemvName()
	expectPanic(t, name+": negative size m=-1", func() { api.gemm(false, false, -1, 3, 4, 1, a, 4, b, 3, 0, c, 3) })
	expectPanic(t, name+": lda=3 < 4 columns of a", func() { api.gemm(false, false, 3, 3, 4, 1, a, 3, b, 3, 0, c, 3) })
	expectPanic(t, name+": len(b)=12 too short for 4×4", func() { api.gemm(false, false, 3, 4, 4, 1, a, 4, b, 4, 0, c, 4) })
	big := make([]T, 60)
	expectPanic(t, name+": len(c)=12 too short for 5×3", func() { api.gemm(false, false, 5, 3, 3, 1, big, 3, b, 3, 0, c, 3) })
	expectPanic(t, name+"Strided: len(c)=12 too short for batch=2 products of 9 elements each at strideC=6", func() {
		api.strided(false, false, 3, 3, 3, 1, big, 3, 9, big, 3, 9, 0, c, 3, 6, 2)
	})
	expectPanic(t, name+"Strided: negative batch=-1", func() {
		api.strided(false, false, 3, 3, 3, 1, big, 3, 9, big, 3, 9, 0, c, 3, 6, -1)
	})
	expectPanic(t, gv+": len(x)=12 len(y)=12, want 4 and 3", func() { api.gemv(false, 3, 4, 1, a, 4, b, 0, c) })
	expectPanic(t, gv+": negative size m=-2", func() { api.gemv(false, -2, 4, 1, a, 4, b, 0, c) })
	expectPanic(t, gv+": lda=3 < n=4", func() { api.gemv(false, 3, 4, 1, a, 3, b, 0, c) })
}

// TestSgemmConcurrent runs products large enough for the worker pool from
// several goroutines at once (run under -race by CI).
func TestSgemmConcurrent(t *testing.T) { testGemmConcurrent(t, sgemmAPI) }
func TestDgemmConcurrent(t *testing.T) { testGemmConcurrent(t, dgemmAPI) }

func testGemmConcurrent[T float](t *testing.T, api gemmAPI[T]) {
	const m, n = 256, 256
	k := parallelGemm/(m*n) + 1 // just above the cut-off: split over the pool
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 14))
			for it := 0; it < 2; it++ {
				g := newGemmCase(api, r, w%2 == 0, it%2 == 0, m+w, n, k, 1, 0.5, 1, 1)
				g.check(t, fmt.Sprintf("goroutine %d iteration %d", w, it))
			}
		}()
	}
	wg.Wait()
}

func TestSgemmStridedAndGemv(t *testing.T) { testGemmStridedAndGemv(t, sgemmAPI) }
func TestDgemmStridedAndGemv(t *testing.T) { testGemmStridedAndGemv(t, dgemmAPI) }

func testGemmStridedAndGemv[T float](t *testing.T, api gemmAPI[T]) {
	tol := 1e3 * eps[T]() // far below any wrong element, above the rounding of k = 20 terms
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(15, uint64(l)))
		const m, n, k, batch = 9, 20, 13, 3
		a, b := randOf[T](r, batch*m*k), randOf[T](r, k*n) // B shared: stride 0
		c := make([]T, batch*m*n)
		api.strided(false, false, m, n, k, 1, a, k, m*k, b, n, 0, 0, c, n, m*n, batch)
		for i := 0; i < batch; i++ {
			want := make([]T, m*n)
			api.gemm(false, false, m, n, k, 1, a[i*m*k:(i+1)*m*k], k, b, n, 0, want, n)
			for j := range want {
				if d := math.Abs(float64(want[j] - c[i*m*n+j])); d > tol {
					t.Fatalf("batch %d: [%d] %v vs %v", i, j, c[i*m*n+j], want[j])
				}
			}
		}
		// gemv against the 1-column gemm, both orientations.
		for _, trans := range []bool{false, true} {
			A := randOf[T](r, m*(n+2))
			lx, ly := n, m
			if trans {
				lx, ly = m, n
			}
			x, y := randOf[T](r, lx), randOf[T](r, ly)
			want := append([]T(nil), y...)
			api.gemm(trans, false, ly, 1, lx, 0.75, A, n+2, x, 1, -0.5, want, 1)
			api.gemv(trans, m, n, 0.75, A, n+2, x, -0.5, y)
			for i := range y {
				if d := math.Abs(float64(want[i] - y[i])); d > tol {
					t.Fatalf("%s trans=%v: y[%d] = %v, want %v", api.gemvName(), trans, i, y[i], want[i])
				}
			}
		}
	})
}

func TestSgemmAllocs(t *testing.T) { testGemmAllocs(t, sgemmAPI) }
func TestDgemmAllocs(t *testing.T) { testGemmAllocs(t, dgemmAPI) }

func testGemmAllocs[T float](t *testing.T, api gemmAPI[T]) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	r := rand.New(rand.NewPCG(16, 1))
	const s = 128
	a, b, c := randOf[T](r, s*s), randOf[T](r, s*s), make([]T, s*s)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		f := func() { api.gemm(false, true, s, s, s, 1, a, s, b, s, 0, c, s) }
		f()
		if n := testing.AllocsPerRun(20, f); n != 0 {
			t.Errorf("%s %d³ allocates %v times per call (GOMAXPROCS=%d)", api.name, s, n, runtime.GOMAXPROCS(0))
		}
		g := func() { api.strided(false, false, 16, 16, 16, 1, a, 16, 256, b, 16, 0, 0, c, 16, 256, 4) }
		if n := testing.AllocsPerRun(20, g); n != 0 {
			t.Errorf("%sStrided allocates %v times per call", api.name, n)
		}
		v := func() { api.gemv(true, s, s, 1, a, s, b[:s], 0.5, c[:s]) }
		if n := testing.AllocsPerRun(20, v); n != 0 {
			t.Errorf("%s allocates %v times per call", api.gemvName(), n)
		}
	})
}

// TestSgemmPathsPropagateNaN checks that the unpacked path (m = 1) and the
// packed one (m = 16) both turn 0·Inf into NaN, for B plain and transposed.
func TestSgemmPathsPropagateNaN(t *testing.T) { testGemmPathsPropagateNaN(t, sgemmAPI) }
func TestDgemmPathsPropagateNaN(t *testing.T) { testGemmPathsPropagateNaN(t, dgemmAPI) }

func testGemmPathsPropagateNaN[T float](t *testing.T, api gemmAPI[T]) {
	forEachLevel(t, func(t *testing.T, _ dispatch.Level) {
		const n, k = 8, 5
		for _, m := range []int{1, 16} {
			for _, tb := range []bool{false, true} {
				a := make([]T, m*k) // all zero
				b := make([]T, k*n)
				for i := range b {
					b[i] = T(math.Inf(1))
				}
				ldb := n
				if tb {
					ldb = k
				}
				c := make([]T, m*n)
				api.gemm(false, tb, m, n, k, 1, a, k, b, ldb, 0, c, n)
				for i, v := range c {
					if v == v {
						t.Fatalf("m=%d transB=%v: C[%d] = %v, want NaN (0·Inf)", m, tb, i, v)
					}
				}
			}
		}
	})
}

// TestPackTransposing checks the levels' transposing packs against the Go
// loops they replace: every kc from 1 to 40 (the one-vector blocks and their
// masked tails), row strides wider than kc, values that must come through
// bit for bit (NaN payload, -0, denormal), and a canary after the panel.
func TestPackTransposing(t *testing.T) {
	t.Run("float32", func(t *testing.T) {
		testPackTransposing(t, []float32{float32(math.NaN()), math.Float32frombits(0x7fc01234), float32(math.Copysign(0, -1)), math.Float32frombits(1), float32(math.Inf(-1))})
	})
	t.Run("float64", func(t *testing.T) {
		testPackTransposing(t, []float64{math.NaN(), math.Float64frombits(0x7ff8000000012345), math.Copysign(0, -1), math.Float64frombits(1), math.Inf(-1)})
	})
}

func testPackTransposing[T float](t *testing.T, specials []T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		kern := familyOf[T]().kernels.get()
		if kern.packMR == nil && kern.pack16 == nil {
			t.Skip("no transposing pack at this level")
		}
		goKern := *kern
		goKern.packMR, goKern.pack16 = nil, nil
		r := rand.New(rand.NewPCG(21, uint64(l)))
		const canary = -12345.5
		for kc := 1; kc <= 40; kc++ { // gemmRange never packs kc = 0
			for _, extra := range []int{0, 3, 61} {
				ld := kc + extra
				// A: 2 full panels of mr rows plus a partial one (Go path).
				rows := 2*kern.mr + 1
				a := randOf[T](r, rows*ld+1)
				for i, v := range specials {
					a[(i*7919)%len(a)] = v
				}
				mcp := (rows + kern.mr - 1) / kern.mr * kern.mr
				got, want := make([]T, mcp*kc+1), make([]T, mcp*kc+1)
				got[mcp*kc], want[mcp*kc] = canary, canary
				packA(kern, got, a, ld, false, 0, rows, 0, kc)
				packA(&goKern, want, a, ld, false, 0, rows, 0, kc)
				comparePacked(t, fmt.Sprintf("packA kc=%d ld=%d", kc, ld), got, want)
				// Transposed B: one full nr panel plus 5 columns (Go path).
				cols := kern.nr + 5
				b := randOf[T](r, cols*ld+1)
				for i, v := range specials {
					b[(i*7907)%len(b)] = v
				}
				ncp := 2 * kern.nr
				got, want = make([]T, ncp*kc+1), make([]T, ncp*kc+1)
				got[ncp*kc], want[ncp*kc] = canary, canary
				packB(kern, got, b, ld, true, 0, kc, 0, cols)
				packB(&goKern, want, b, ld, true, 0, kc, 0, cols)
				comparePacked(t, fmt.Sprintf("packB kc=%d ld=%d", kc, ld), got, want)
			}
		}
	})
}

func comparePacked[T float](t *testing.T, what string, got, want []T) {
	t.Helper()
	for i := range want {
		if bitsOf(got[i]) != bitsOf(want[i]) {
			t.Fatalf("%s: element %d = %v, want %v (bits differ)", what, i, got[i], want[i])
		}
	}
}

// TestSgemmOverflowingStrides gives the GEMM functions and gemv strides so
// large that (rows-1)·ld + cols, or the last product's start, wraps round
// int: each must panic naming the function and the operand, and write
// nothing (the canaries around C stay), at every level. Before the checks
// were overflow-proof, such strides passed them and the assembly wrote past
// C (ld·4 bytes wraps too) or faulted in the transposing pack.
func TestSgemmOverflowingStrides(t *testing.T) { testGemmOverflowingStrides(t, sgemmAPI) }
func TestDgemmOverflowingStrides(t *testing.T) { testGemmOverflowingStrides(t, dgemmAPI) }

func testGemmOverflowingStrides[T float](t *testing.T, api gemmAPI[T]) {
	const huge = 1<<62 + 8 // ld·4 (or ·8) bytes wraps to 32 (64): rows 8 elements apart
	name := "simd." + api.name
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(21, uint64(l)))
		for _, tc := range []struct {
			name           string
			transA, transB bool
			m, n, k        int
			lda, ldb, ldc  int
			want           string
		}{
			{"ldc", false, false, 64, 32, 8, 8, 32, huge, ": len(c)=2048 too short for 64×32 with ldc=4611686018427387912"},
			{"ldc small m", false, false, 3, 4, 4, 4, 4, huge, ": len(c)=12 too short for 3×4"},
			{"lda", false, false, 64, 32, 8, huge, 32, 32, ": len(a)=512 too short for 64×8 with lda=4611686018427387912"},
			{"lda transA", true, false, 64, 32, 64, huge, 32, 32, ": len(a)=4096 too short for 64×64"},
			{"ldb", false, false, 16, 32, 64, 64, huge, 32, ": len(b)=2048 too short for 64×32"},
			{"ldb transB", false, true, 16, 64, 32, 32, huge, 64, ": len(b)=2048 too short for 64×32"},
			{"ld MaxInt", false, false, 2, 4, 4, 4, 4, math.MaxInt, ": len(c)=8 too short for 2×4"},
		} {
			ra, ca := tc.m, tc.k
			if tc.transA {
				ra, ca = ca, ra
			}
			rb, cb := tc.k, tc.n
			if tc.transB {
				rb, cb = cb, rb
			}
			a, b := randOf[T](r, ra*ca), randOf[T](r, rb*cb)
			g := newGuardedOf[T](tc.m*tc.n, 3)
			expectPanic(t, name+tc.want, func() {
				api.gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, a, tc.lda, b, tc.ldb, 0, g.s(), tc.ldc)
			})
			g.check(t, tc.name)
		}

		// The strided form: the last product's start (batch-1)·stride wraps.
		a, b := randOf[T](r, 4*4), randOf[T](r, 4*4)
		g := newGuardedOf[T](4*4, 5)
		expectPanic(t, name+"Strided: len(c)=16 too short for batch=5 products of 16 elements each at strideC=4611686018427387904", func() {
			api.strided(false, false, 4, 4, 4, 1, a, 4, 0, b, 4, 0, 0, g.s(), 4, 1<<62, 5)
		})
		expectPanic(t, name+"Strided: len(a)=16 too short for batch=3 products", func() {
			api.strided(false, false, 4, 4, 4, 1, a, 4, math.MaxInt, b, 4, 0, 0, g.s(), 4, 0, 3)
		})
		expectPanic(t, name+"Strided: len(c)=16 too short for 64×4 with ldc=4611686018427387912", func() {
			api.strided(false, false, 64, 4, 4, 1, randOf[T](r, 256), 4, 0, b, 4, 0, 0, g.s(), huge, 0, 2)
		})
		g.check(t, api.name+"Strided")
		// An empty operand (k == 0) is not read, so its stride is free.
		api.strided(false, false, 4, 4, 0, 1, nil, 1, math.MaxInt, nil, 4, math.MaxInt, 0, g.s(), 4, 0, 3)
		for i, v := range g.s() {
			if v != 0 {
				t.Fatalf("%sStrided k=0: C[%d] = %v, want 0", api.name, i, v)
			}
		}
		g.check(t, api.name+"Strided k=0")

		// gemv: (m-1)·lda + n wraps.
		x, y := randOf[T](r, 8), newGuardedOf[T](64, 2)
		expectPanic(t, "simd."+api.gemvName()+": len(a)=512 too short for m=64 n=8 lda=4611686018427387912", func() {
			api.gemv(false, 64, 8, 1, randOf[T](r, 512), huge, x, 0, y.s())
		})
		y.check(t, api.gemvName())
	})
}

// FuzzSgemmArgs calls Sgemm with arbitrary sizes and strides (any int64,
// overflowing products included) on operands of 300 elements: a call either
// panics with a message naming simd.Sgemm and leaves C and the memory
// around it untouched, or fits and matches the exact product.
func FuzzSgemmArgs(f *testing.F) { fuzzGemmArgs(f, sgemmAPI) }

// FuzzDgemmArgs is FuzzSgemmArgs for Dgemm.
func FuzzDgemmArgs(f *testing.F) { fuzzGemmArgs(f, dgemmAPI) }

func fuzzGemmArgs[T float](f *testing.F, api gemmAPI[T]) {
	f.Add(int64(3), int64(4), int64(5), int64(5), int64(4), int64(4), uint8(0))
	f.Add(int64(64), int64(32), int64(8), int64(8), int64(32), int64(1<<62+8), uint8(0))
	f.Add(int64(64), int64(4), int64(4), int64(1<<62+8), int64(4), int64(4), uint8(1))
	f.Add(int64(2), int64(4), int64(4), int64(4), int64(math.MaxInt64), int64(4), uint8(2))
	f.Add(int64(-1), int64(4), int64(4), int64(4), int64(4), int64(4), uint8(3))
	f.Add(int64(10), int64(10), int64(0), int64(1), int64(10), int64(10), uint8(0))
	f.Add(int64(15), int64(17), int64(13), int64(13), int64(17), int64(17), uint8(3))
	const size = 300
	r := rand.New(rand.NewPCG(22, 23))
	a, b, c0 := randOf[T](r, size), randOf[T](r, size), randOf[T](r, size)
	prefix := "simd." + api.name + ": "
	f.Fuzz(func(t *testing.T, m, n, k, lda, ldb, ldc int64, flags uint8) {
		transA, transB := flags&1 != 0, flags&2 != 0
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			g := newGuardedOf[T](size, 1)
			copy(g.s(), c0)
			var msg any
			func() {
				defer func() { msg = recover() }()
				api.gemm(transA, transB, int(m), int(n), int(k), 1, a, int(lda), b, int(ldb), 0.5, g.s(), int(ldc))
			}()
			if msg != nil {
				if s, ok := msg.(string); !ok || !strings.HasPrefix(s, prefix) {
					t.Fatalf("m=%d n=%d k=%d lda=%d ldb=%d ldc=%d: panic %v, want a message naming %s", m, n, k, lda, ldb, ldc, msg, prefix)
				}
				g.check(t, "refused call")
				for i, v := range g.s() {
					if v != c0[i] {
						t.Fatalf("m=%d n=%d k=%d lda=%d ldb=%d ldc=%d: refused call wrote C[%d]", m, n, k, lda, ldb, ldc, i)
					}
				}
				return
			}
			g.check(t, "accepted call")
			gc := &gemmCase[T]{api: api, transA: transA, transB: transB, m: int(m), n: int(n), k: int(k), alpha: 1, beta: 0.5,
				lda: int(lda), ldb: int(ldb), ldc: int(ldc), a: a, b: b, c: c0}
			gc.check(t, fmt.Sprintf("m=%d n=%d k=%d lda=%d ldb=%d ldc=%d", m, n, k, lda, ldb, ldc))
		})
	})
}

// TestSgemvEmpty: an empty A (m or n zero, as empty slices) gives y = beta·y
// in both orientations at every level (with transA and n = 0, or without it
// and m > 0 = n, the rows of A were sliced out of an empty slice).
func TestSgemvEmpty(t *testing.T) { testGemvEmpty(t, sgemmAPI) }
func TestDgemvEmpty(t *testing.T) { testGemvEmpty(t, dgemmAPI) }

func testGemvEmpty[T float](t *testing.T, api gemmAPI[T]) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, tc := range []struct {
			trans bool
			m, n  int
		}{{false, 3, 0}, {true, 3, 0}, {false, 0, 3}, {true, 0, 3}, {false, 0, 0}} {
			lx, ly := tc.n, tc.m
			if tc.trans {
				lx, ly = tc.m, tc.n
			}
			x, y := make([]T, lx), newGuardedOf[T](ly, 1)
			for i := range x {
				x[i] = 1
			}
			for i := range y.s() {
				y.s()[i] = 4
			}
			api.gemv(tc.trans, tc.m, tc.n, 2, make([]T, tc.m*tc.n), max(1, tc.n), x, 0.5, y.s())
			for i, v := range y.s() {
				if v != 2 {
					t.Fatalf("trans=%v m=%d n=%d: y[%d] = %v, want 0.5·4", tc.trans, tc.m, tc.n, i, v)
				}
			}
			y.check(t, fmt.Sprintf("trans=%v m=%d n=%d", tc.trans, tc.m, tc.n))
		}
	})
}

// TestSgemmSharedPack runs threaded products with the blocking shrunk so
// that they cross several blocks of every loop (kc, mc, nc), split by rows
// (B packed once for all parts) and by columns (A packed once), every
// transpose, at 1, 2 and 3 threads: each against the reference, and the
// threaded results bit for bit the one-thread result.
func TestSgemmSharedPack(t *testing.T) { testGemmSharedPack(t, sgemmAPI) }
func TestDgemmSharedPack(t *testing.T) { testGemmSharedPack(t, dgemmAPI) }

func testGemmSharedPack[T float](t *testing.T, api gemmAPI[T]) {
	if testing.Short() {
		t.Skip("large products: not in -short runs")
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		kern := familyOf[T]().kernels.get()
		saved := kern.bl
		defer func() { kern.bl = saved }()
		kern.bl = blocking{mc: 3 * kern.mr, kc: 40, nc: 2 * kern.nr}
		r := rand.New(rand.NewPCG(15, uint64(l)))
		// m·n·k above parallelGemm: rows (m > n) and columns (m ≤ n).
		shapes := [][3]int{{170, 150, 200}, {150, 171, 190}}
		trans := [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}}
		if raceEnabled { // the race detector's share: one split, two transposes
			shapes, trans = shapes[1:], trans[2:]
		}
		for _, s := range shapes {
			for _, tr := range trans {
				g := newGemmCase(api, r, tr[0], tr[1], s[0], s[1], s[2], 1.5, 0.5, 1, 1)
				var first []T
				for _, threads := range []int{1, 2, 3} {
					runtime.GOMAXPROCS(threads)
					what := fmt.Sprintf("m=%d n=%d k=%d trans=%v threads=%d", s[0], s[1], s[2], tr, threads)
					g.check(t, what)
					c := slices.Clone(g.c)
					api.gemm(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
					if first == nil {
						first = c
						continue
					}
					for i := range c {
						if bitsOf(c[i]) != bitsOf(first[i]) {
							t.Fatalf("%s: C[%d] = %v, %v with one thread", what, i, c[i], first[i])
						}
					}
				}
			}
		}
	})
}

// TestGemmRowTails runs each row-tail kernel of each level (see
// gemmKernels.tails) against the full kernel on the same packed panels: its
// rows must be the full kernel's bit for bit, for beta 0 (over a C of NaN,
// which must not be read), 1 and -0.5, and the rows below it, inside the
// tile and past it, must stay untouched. The products that use them are
// TestSgemmTileEdges's and TestSgemm's.
func TestGemmRowTails(t *testing.T) {
	testGemmRowTails(t, sgemmFamily.kernels.get)
	testGemmRowTails(t, dgemmFamily.kernels.get)
}

func testGemmRowTails[T float](t *testing.T, kernels func() *gemmKernels[T]) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		kern := kernels()
		r := rand.New(rand.NewPCG(23, uint64(l)))
		tails := 0
		for rows, tail := range kern.tails {
			if tail == nil {
				continue
			}
			tails++
			if got, n := kern.rowKernel(rows); n != rows || got == nil {
				t.Fatalf("rowKernel(%d) covers %d rows", rows, n)
			}
			for _, k := range []int{0, 1, 5, 29, 64} {
				a, b := randOf[T](r, kern.mr*k), randOf[T](r, kern.nr*k)
				ldc := kern.nr + 3
				for _, beta := range []T{0, 1, -0.5} {
					old := randOf[T](r, (kern.mr+1)*ldc)
					if beta == 0 {
						for i := range rows * ldc {
							old[i] = T(math.NaN())
						}
					}
					want, got := slices.Clone(old), slices.Clone(old)
					kern.kernel(k, a, b, want, ldc, 1.5, beta)
					tail(k, a, b, got, ldc, 1.5, beta)
					for i := range got {
						row, col := i/ldc, i%ldc
						w := want[i]
						if row >= rows || col >= kern.nr {
							w = old[i]
						}
						if bitsOf(got[i]) != bitsOf(w) {
							t.Fatalf("%d-row tail of %d×%d, k=%d beta=%v: c[%d][%d] = %v, want %v", rows, kern.mr, kern.nr, k, beta, row, col, got[i], w)
						}
					}
				}
			}
		}
		if l >= dispatch.AVX2 && tails == 0 {
			t.Fatalf("no row tails at %v", l)
		}
	})
}
