package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// gemmCase is one product with its operands laid out in padded storage.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	lda, ldb, ldc  int
	a, b, c        []float32
}

// newGemmCase fills A, B, C with values in [-1, 1) and strides pad elements
// longer than the rows.
func newGemmCase(r *rand.Rand, transA, transB bool, m, n, k int, alpha, beta float32, pad int) *gemmCase {
	g := &gemmCase{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	g.lda, g.ldb, g.ldc = max(1, ac+pad), max(1, bc+pad), max(1, n+pad)
	g.a = randSlice(r, max(0, (ar-1)*g.lda+ac))
	g.b = randSlice(r, max(0, (br-1)*g.ldb+bc))
	g.c = randSlice(r, max(0, (m-1)*g.ldc+n))
	return g
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = r.Float32()*2 - 1
	}
	return s
}

func (g *gemmCase) at(x []float32, ld int, trans bool, i, j int) float64 {
	if trans {
		return float64(x[j*ld+i])
	}
	return float64(x[i*ld+j])
}

// check runs Sgemm on a copy of C and compares with the float64 product;
// the bound is k·2⁻²⁴·Σ|A||B|·|alpha| plus the rounding of the beta term.
func (g *gemmCase) check(t *testing.T, what string) {
	t.Helper()
	c := append([]float32(nil), g.c...)
	Sgemm(g.transA, g.transB, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, c, g.ldc)
	for i := 0; i < g.m; i++ {
		for j := 0; j < g.n; j++ {
			var s, sa float64
			for p := 0; p < g.k; p++ {
				v := g.at(g.a, g.lda, g.transA, i, p) * g.at(g.b, g.ldb, g.transB, p, j)
				s += v
				sa += math.Abs(v)
			}
			want := float64(g.alpha) * s
			old := float64(g.c[i*g.ldc+j])
			if g.beta != 0 {
				want += float64(g.beta) * old
			}
			bound := (float64(g.k)+2)*0x1p-24*math.Abs(float64(g.alpha))*sa + 2*0x1p-24*math.Abs(float64(g.beta)*old) + 1e-30
			if got := float64(c[i*g.ldc+j]); !(math.Abs(got-want) <= bound) {
				t.Fatalf("%s: C[%d][%d] = %v, want %v (bound %g)", what, i, j, got, want, bound)
			}
		}
	}
	// Padding between rows of C is untouched (rows that start within c:
	// i·ldc is not formed past it, where a huge ldc would wrap).
	for i := 0; i < g.m && len(c) > 0 && i <= (len(c)-1)/g.ldc; i++ {
		for j := g.n; j < g.ldc && i*g.ldc+j < len(c); j++ {
			if c[i*g.ldc+j] != g.c[i*g.ldc+j] {
				t.Fatalf("%s: wrote C padding at [%d][%d]", what, i, j)
			}
		}
	}
}

var gemmSizes = []int{0, 1, 2, 3, 7, 16, 17, 31, 33, 63, 65, 127, 129, 255, 257}

func TestSgemm(t *testing.T) {
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
					ab := [][2]float32{{1, 0}, {1, 1}, {-0.5, 0.25}, {2, -1}}[(count+tr)%4]
					g := newGemmCase(r, tr&1 != 0, tr&2 != 0, m, n, k, ab[0], ab[1], count%3)
					g.check(t, fmt.Sprintf("m=%d n=%d k=%d transA=%v transB=%v alpha=%v beta=%v pad=%d", m, n, k, g.transA, g.transB, ab[0], ab[1], count%3))
					count++
				}
			}
		}
	})
}

// TestSgemmLarge crosses the blocking sizes (kc, mc) and the threading cut.
func TestSgemmLarge(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("large products: not in -short or -race runs")
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(12, uint64(l)))
		for _, s := range [][3]int{{700, 301, 450}, {64, 784, 256}, {333, 97, 1030}} {
			g := newGemmCase(r, l == dispatch.AVX2, false, s[0], s[1], s[2], 1.5, 0.5, 1)
			g.check(t, fmt.Sprintf("m=%d n=%d k=%d", s[0], s[1], s[2]))
		}
	})
}

func TestSgemmSpecial(t *testing.T) {
	nan := float32(math.NaN())
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, size := range []int{5, 40} {
			r := rand.New(rand.NewPCG(13, uint64(size)))
			a, b := randSlice(r, size*size), randSlice(r, size*size)
			// beta == 0 ignores NaN in C.
			c := make([]float32, size*size)
			for i := range c {
				c[i] = nan
			}
			Sgemm(false, false, size, size, size, 1, a, size, b, size, 0, c, size)
			for i, v := range c {
				if v != v {
					t.Fatalf("size %d: beta=0 kept a NaN of C at %d", size, i)
				}
			}
			// alpha == 0 does not read A or B: C = beta·C.
			an := make([]float32, size*size)
			for i := range an {
				an[i] = nan
			}
			for i := range c {
				c[i] = 2
			}
			Sgemm(false, false, size, size, size, 0, an, size, an, size, 0.5, c, size)
			for i, v := range c {
				if v != 1 {
					t.Fatalf("size %d: alpha=0 gave C[%d]=%v, want 1", size, i, v)
				}
			}
			// k == 0, beta == 0: C = 0.
			Sgemm(false, false, size, size, 0, 1, nil, 1, nil, size, 0, c, size)
			for i, v := range c {
				if v != 0 {
					t.Fatalf("size %d: k=0 gave C[%d]=%v", size, i, v)
				}
			}
		}
	})
}

func TestSgemmPanics(t *testing.T) {
	a, b, c := make([]float32, 12), make([]float32, 12), make([]float32, 12)
	expectPanic(t, "simd.Sgemm: negative size m=-1", func() { Sgemm(false, false, -1, 3, 4, 1, a, 4, b, 3, 0, c, 3) })
	expectPanic(t, "simd.Sgemm: lda=3 < 4 columns of a", func() { Sgemm(false, false, 3, 3, 4, 1, a, 3, b, 3, 0, c, 3) })
	expectPanic(t, "simd.Sgemm: len(b)=12 too short for 4×4", func() { Sgemm(false, false, 3, 4, 4, 1, a, 4, b, 4, 0, c, 4) })
	big := make([]float32, 60)
	expectPanic(t, "simd.Sgemm: len(c)=12 too short for 5×3", func() { Sgemm(false, false, 5, 3, 3, 1, big, 3, b, 3, 0, c, 3) })
	expectPanic(t, "simd.SgemmStrided: len(c)=12 too short for batch=2 products of 9 elements each at strideC=6", func() {
		SgemmStrided(false, false, 3, 3, 3, 1, big, 3, 9, big, 3, 9, 0, c, 3, 6, 2)
	})
	expectPanic(t, "simd.Sgemv: len(x)=12 len(y)=12, want 4 and 3", func() { Sgemv(false, 3, 4, 1, a, 4, b, 0, c) })
}

// TestSgemmConcurrent runs products large enough for the worker pool from
// several goroutines at once (run under -race by CI).
func TestSgemmConcurrent(t *testing.T) {
	const m, n = 256, 256
	k := parallelGemm/(m*n) + 1 // just above the cut-off: split over the pool
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 14))
			for it := 0; it < 2; it++ {
				g := newGemmCase(r, w%2 == 0, it%2 == 0, m+w, n, k, 1, 0.5, 1)
				g.check(t, fmt.Sprintf("goroutine %d iteration %d", w, it))
			}
		}()
	}
	wg.Wait()
}

func TestSgemmStridedAndGemv(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(15, uint64(l)))
		const m, n, k, batch = 9, 20, 13, 3
		a, b := randSlice(r, batch*m*k), randSlice(r, k*n) // B shared: stride 0
		c := make([]float32, batch*m*n)
		SgemmStrided(false, false, m, n, k, 1, a, k, m*k, b, n, 0, 0, c, n, m*n, batch)
		for i := 0; i < batch; i++ {
			g := &gemmCase{m: m, n: n, k: k, alpha: 1, lda: k, ldb: n, ldc: n,
				a: a[i*m*k : (i+1)*m*k], b: b, c: make([]float32, m*n)}
			want := append([]float32(nil), g.c...)
			Sgemm(false, false, m, n, k, 1, g.a, k, b, n, 0, want, n)
			for j := range want {
				if d := math.Abs(float64(want[j] - c[i*m*n+j])); d > 1e-5 {
					t.Fatalf("batch %d: [%d] %v vs %v", i, j, c[i*m*n+j], want[j])
				}
			}
		}
		// Sgemv against the 1-column Sgemm, both orientations.
		for _, trans := range []bool{false, true} {
			A := randSlice(r, m*(n+2))
			lx, ly := n, m
			if trans {
				lx, ly = m, n
			}
			x, y := randSlice(r, lx), randSlice(r, ly)
			want := append([]float32(nil), y...)
			Sgemm(trans, false, ly, 1, lx, 0.75, A, n+2, x, 1, -0.5, want, 1)
			Sgemv(trans, m, n, 0.75, A, n+2, x, -0.5, y)
			for i := range y {
				if d := math.Abs(float64(want[i] - y[i])); d > 1e-5 {
					t.Fatalf("Sgemv trans=%v: y[%d] = %v, want %v", trans, i, y[i], want[i])
				}
			}
		}
	})
}

func TestSgemmAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	r := rand.New(rand.NewPCG(16, 1))
	const s = 128
	a, b, c := randSlice(r, s*s), randSlice(r, s*s), make([]float32, s*s)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		f := func() { Sgemm(false, true, s, s, s, 1, a, s, b, s, 0, c, s) }
		f()
		if n := testing.AllocsPerRun(20, f); n != 0 {
			t.Errorf("Sgemm %d³ allocates %v times per call (GOMAXPROCS=%d)", s, n, runtime.GOMAXPROCS(0))
		}
		g := func() { SgemmStrided(false, false, 16, 16, 16, 1, a, 16, 256, b, 16, 0, 0, c, 16, 256, 4) }
		if n := testing.AllocsPerRun(20, g); n != 0 {
			t.Errorf("SgemmStrided allocates %v times per call", n)
		}
	})
}

// TestSgemmPathsPropagateNaN checks that the unpacked path (m = 1) and the
// packed one (m = 16) both turn 0·Inf into NaN, for B plain and transposed.
func TestSgemmPathsPropagateNaN(t *testing.T) {
	forEachLevel(t, func(t *testing.T, _ dispatch.Level) {
		const n, k = 8, 5
		for _, m := range []int{1, 16} {
			for _, tb := range []bool{false, true} {
				a := make([]float32, m*k) // all zero
				b := make([]float32, k*n)
				for i := range b {
					b[i] = float32(math.Inf(1))
				}
				ldb := n
				if tb {
					ldb = k
				}
				c := make([]float32, m*n)
				Sgemm(false, tb, m, n, k, 1, a, k, b, ldb, 0, c, n)
				for i, v := range c {
					if !isNaN32(v) {
						t.Fatalf("m=%d transB=%v: C[%d] = %v, want NaN (0·Inf)", m, tb, i, v)
					}
				}
			}
		}
	})
}

// TestPackTransposing checks the levels' transposing packs against the Go
// loops they replace: every kc from 1 to 40 (the 16-wide blocks and their
// masked tails), row strides wider than kc, values that must come through
// bit for bit (NaN payload, -0, denormal), and a canary after the panel.
func TestPackTransposing(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		kern := gemm.get()
		if kern.packMR == nil && kern.pack16 == nil {
			t.Skip("no transposing pack at this level")
		}
		goKern := *kern
		goKern.packMR, goKern.pack16 = nil, nil
		r := rand.New(rand.NewPCG(21, uint64(l)))
		specials := []float32{float32(math.NaN()), math.Float32frombits(0x7fc01234), float32(math.Copysign(0, -1)), math.Float32frombits(1), float32(math.Inf(-1))}
		const canary = float32(-12345.5)
		for kc := 1; kc <= 40; kc++ { // gemmRange never packs kc = 0
			for _, extra := range []int{0, 3, 61} {
				ld := kc + extra
				// A: 2 full panels of mr rows plus a partial one (Go path).
				rows := 2*kern.mr + 1
				a := randSlice(r, rows*ld+1)
				for i, v := range specials {
					if len(a) > 0 {
						a[(i*7919)%len(a)] = v
					}
				}
				mcp := (rows + kern.mr - 1) / kern.mr * kern.mr
				got, want := make([]float32, mcp*kc+1), make([]float32, mcp*kc+1)
				got[mcp*kc], want[mcp*kc] = canary, canary
				packA(kern, got, a, ld, false, 0, rows, 0, kc)
				packA(&goKern, want, a, ld, false, 0, rows, 0, kc)
				comparePacked(t, fmt.Sprintf("packA kc=%d ld=%d", kc, ld), got, want)
				// Transposed B: one full nr panel plus 5 columns (Go path).
				cols := kern.nr + 5
				b := randSlice(r, cols*ld+1)
				ncp := 2 * kern.nr
				got, want = make([]float32, ncp*kc+1), make([]float32, ncp*kc+1)
				got[ncp*kc], want[ncp*kc] = canary, canary
				packB(kern, got, b, ld, true, 0, kc, 0, cols)
				packB(&goKern, want, b, ld, true, 0, kc, 0, cols)
				comparePacked(t, fmt.Sprintf("packB kc=%d ld=%d", kc, ld), got, want)
			}
		}
	})
}

func comparePacked(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d = %v (%#x), want %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestSgemmOverflowingStrides gives Sgemm, SgemmStrided and Sgemv strides so
// large that (rows-1)·ld + cols, or the last product's start, wraps round
// int: each must panic naming the function and the operand, and write
// nothing (the canaries around C stay), at every level. Before the checks
// were overflow-proof, such strides passed them and the assembly wrote past
// C (ld·4 bytes wraps too) or faulted in the transposing pack.
func TestSgemmOverflowingStrides(t *testing.T) {
	const huge = 1<<62 + 8 // ld·4 bytes wraps to 32: rows 8 elements apart
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(21, uint64(l)))
		for _, tc := range []struct {
			name           string
			transA, transB bool
			m, n, k        int
			lda, ldb, ldc  int
			want           string
		}{
			{"ldc", false, false, 64, 32, 8, 8, 32, huge, "simd.Sgemm: len(c)=2048 too short for 64×32 with ldc=4611686018427387912"},
			{"ldc small m", false, false, 3, 4, 4, 4, 4, huge, "simd.Sgemm: len(c)=12 too short for 3×4"},
			{"lda", false, false, 64, 32, 8, huge, 32, 32, "simd.Sgemm: len(a)=512 too short for 64×8 with lda=4611686018427387912"},
			{"lda transA", true, false, 64, 32, 64, huge, 32, 32, "simd.Sgemm: len(a)=4096 too short for 64×64"},
			{"ldb", false, false, 16, 32, 64, 64, huge, 32, "simd.Sgemm: len(b)=2048 too short for 64×32"},
			{"ldb transB", false, true, 16, 64, 32, 32, huge, 64, "simd.Sgemm: len(b)=2048 too short for 64×32"},
			{"ld MaxInt", false, false, 2, 4, 4, 4, 4, math.MaxInt, "simd.Sgemm: len(c)=8 too short for 2×4"},
		} {
			ra, ca := tc.m, tc.k
			if tc.transA {
				ra, ca = ca, ra
			}
			rb, cb := tc.k, tc.n
			if tc.transB {
				rb, cb = cb, rb
			}
			a, b := randSlice(r, ra*ca), randSlice(r, rb*cb)
			g := newGuarded(tc.m*tc.n, 3)
			expectPanic(t, tc.want, func() {
				Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, a, tc.lda, b, tc.ldb, 0, g.s(), tc.ldc)
			})
			g.check(t, tc.name)
		}

		// SgemmStrided: the last product's start (batch-1)·stride wraps.
		a, b := randSlice(r, 4*4), randSlice(r, 4*4)
		g := newGuarded(4*4, 5)
		expectPanic(t, "simd.SgemmStrided: len(c)=16 too short for batch=5 products of 16 elements each at strideC=4611686018427387904", func() {
			SgemmStrided(false, false, 4, 4, 4, 1, a, 4, 0, b, 4, 0, 0, g.s(), 4, 1<<62, 5)
		})
		expectPanic(t, "simd.SgemmStrided: len(a)=16 too short for batch=3 products", func() {
			SgemmStrided(false, false, 4, 4, 4, 1, a, 4, math.MaxInt, b, 4, 0, 0, g.s(), 4, 0, 3)
		})
		expectPanic(t, "simd.SgemmStrided: len(c)=16 too short for 64×4 with ldc=4611686018427387912", func() {
			SgemmStrided(false, false, 64, 4, 4, 1, randSlice(r, 256), 4, 0, b, 4, 0, 0, g.s(), huge, 0, 2)
		})
		g.check(t, "SgemmStrided")
		// An empty operand (k == 0) is not read, so its stride is free.
		SgemmStrided(false, false, 4, 4, 0, 1, nil, 1, math.MaxInt, nil, 4, math.MaxInt, 0, g.s(), 4, 0, 3)
		for i, v := range g.s() {
			if v != 0 {
				t.Fatalf("SgemmStrided k=0: C[%d] = %v, want 0", i, v)
			}
		}
		g.check(t, "SgemmStrided k=0")

		// Sgemv: (m-1)·lda + n wraps.
		x, y := randSlice(r, 8), newGuarded(64, 2)
		expectPanic(t, "simd.Sgemv: len(a)=512 too short for m=64 n=8 lda=4611686018427387912", func() {
			Sgemv(false, 64, 8, 1, randSlice(r, 512), huge, x, 0, y.s())
		})
		y.check(t, "Sgemv")
	})
}

// FuzzSgemmArgs calls Sgemm with arbitrary sizes and strides (any int64,
// overflowing products included) on operands of 300 elements: a call either
// panics with a message naming simd.Sgemm and leaves C and the memory
// around it untouched, or fits and matches the float64 product.
func FuzzSgemmArgs(f *testing.F) {
	f.Add(int64(3), int64(4), int64(5), int64(5), int64(4), int64(4), uint8(0))
	f.Add(int64(64), int64(32), int64(8), int64(8), int64(32), int64(1<<62+8), uint8(0))
	f.Add(int64(64), int64(4), int64(4), int64(1<<62+8), int64(4), int64(4), uint8(1))
	f.Add(int64(2), int64(4), int64(4), int64(4), int64(math.MaxInt64), int64(4), uint8(2))
	f.Add(int64(-1), int64(4), int64(4), int64(4), int64(4), int64(4), uint8(3))
	f.Add(int64(10), int64(10), int64(0), int64(1), int64(10), int64(10), uint8(0))
	const size = 300
	r := rand.New(rand.NewPCG(22, 23))
	a, b, c0 := randSlice(r, size), randSlice(r, size), randSlice(r, size)
	f.Fuzz(func(t *testing.T, m, n, k, lda, ldb, ldc int64, flags uint8) {
		transA, transB := flags&1 != 0, flags&2 != 0
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			g := newGuarded(size, 1)
			copy(g.s(), c0)
			var msg any
			func() {
				defer func() { msg = recover() }()
				Sgemm(transA, transB, int(m), int(n), int(k), 1, a, int(lda), b, int(ldb), 0.5, g.s(), int(ldc))
			}()
			if msg != nil {
				if s, ok := msg.(string); !ok || !strings.HasPrefix(s, "simd.Sgemm: ") {
					t.Fatalf("m=%d n=%d k=%d lda=%d ldb=%d ldc=%d: panic %v, want a message naming simd.Sgemm", m, n, k, lda, ldb, ldc, msg)
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
			gc := &gemmCase{transA: transA, transB: transB, m: int(m), n: int(n), k: int(k), alpha: 1, beta: 0.5,
				lda: int(lda), ldb: int(ldb), ldc: int(ldc), a: a, b: b, c: c0}
			gc.check(t, fmt.Sprintf("m=%d n=%d k=%d lda=%d ldb=%d ldc=%d", m, n, k, lda, ldb, ldc))
		})
	})
}

// TestSgemvEmpty: an empty A (m or n zero, as empty slices) gives y = beta·y
// in both orientations at every level (with transA and n = 0, or without it
// and m > 0 = n, the rows of A were sliced out of an empty slice).
func TestSgemvEmpty(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, tc := range []struct {
			trans bool
			m, n  int
		}{{false, 3, 0}, {true, 3, 0}, {false, 0, 3}, {true, 0, 3}, {false, 0, 0}} {
			lx, ly := tc.n, tc.m
			if tc.trans {
				lx, ly = tc.m, tc.n
			}
			x, y := make([]float32, lx), newGuarded(ly, 1)
			for i := range x {
				x[i] = 1
			}
			for i := range y.s() {
				y.s()[i] = 4
			}
			Sgemv(tc.trans, tc.m, tc.n, 2, make([]float32, tc.m*tc.n), max(1, tc.n), x, 0.5, y.s())
			for i, v := range y.s() {
				if v != 2 {
					t.Fatalf("trans=%v m=%d n=%d: y[%d] = %v, want 0.5·4", tc.trans, tc.m, tc.n, i, v)
				}
			}
			y.check(t, fmt.Sprintf("trans=%v m=%d n=%d", tc.trans, tc.m, tc.n))
		}
	})
}
