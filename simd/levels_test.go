package simd

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"github.com/lanesgo/lanes/dispatch"
)

// forEachLevel runs f once per level this CPU supports, with that level active,
// as subtests named after the level. LANES_TEST_REQUIRE=avx512 (or another
// level) makes the test fail when that level is not available, so a CI machine
// that silently lost a level does not skip its kernels.
func forEachLevel(t *testing.T, f func(t *testing.T, l dispatch.Level)) {
	t.Helper()
	requireLevel(t)
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, l := range dispatch.Levels() {
		if _, err := dispatch.SetLevel(l); err != nil {
			t.Fatal(err)
		}
		t.Run(l.String(), func(t *testing.T) { f(t, l) })
	}
}

// requireLevel fails the test if LANES_TEST_REQUIRE names a level this
// CPU/build does not support.
func requireLevel(t *testing.T) {
	t.Helper()
	if req := os.Getenv("LANES_TEST_REQUIRE"); req != "" {
		l, err := dispatch.ParseLevel(req)
		if err != nil {
			t.Fatalf("LANES_TEST_REQUIRE: %v", err)
		}
		if !dispatch.Supports(l) {
			t.Fatalf("LANES_TEST_REQUIRE=%s but this CPU/build supports only %v", req, dispatch.Levels())
		}
	}
}

// testLengths are 0..257 (every tail and unroll shape of every level) plus one
// large length that is not a multiple of any vector width.
var testLengths = func() []int {
	var ls []int
	for n := 0; n <= 257; n++ {
		ls = append(ls, n)
	}
	return append(ls, 100003)
}()

// specials are the values every kernel must handle.
var specials = specialsOf[float32]()

// specialsOf returns the special values of T: NaN, infinities, signed zeros,
// the extremes, denormals and the smallest normal.
func specialsOf[T float]() []T {
	if isF32[T]() {
		return []T{
			T(math.NaN()), T(math.Inf(1)), T(math.Inf(-1)),
			0, T(math.Copysign(0, -1)), 1, -1,
			math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
			1.1754942e-38, -1e-40, 3e-42, // denormals
			1.17549435e-38, // smallest normal
		}
	}
	big := float64(math.MaxFloat64) // a variable: T(constant) must fit float32 too
	return []T{
		T(math.NaN()), T(math.Inf(1)), T(math.Inf(-1)),
		0, T(math.Copysign(0, -1)), 1, -1,
		T(big), T(-big), T(math.SmallestNonzeroFloat64), T(-math.SmallestNonzeroFloat64),
		T(2.2250738585072009e-308), T(-1e-310), T(5e-320), // denormals
		T(2.2250738585072014e-308), // smallest normal
	}
}

// isF32 reports whether T is float32 (a constant in each instantiation).
func isF32[T float]() bool { return unsafe.Sizeof(T(0)) == 4 }

// eps is the unit roundoff of T (2^-24, 2^-53) and tiny its smallest denormal.
func eps[T float]() float64 {
	if isF32[T]() {
		return 0x1p-24
	}
	return 0x1p-53
}

func tiny[T float]() float64 {
	if isF32[T]() {
		return math.SmallestNonzeroFloat32
	}
	return math.SmallestNonzeroFloat64
}

// maxOf is the largest finite T.
func maxOf[T float]() T {
	if isF32[T]() {
		return math.MaxFloat32
	}
	big := float64(math.MaxFloat64)
	return T(big)
}

// unit returns a uniform value in [0, 1) of T's precision.
func unit[T float](r *rand.Rand) T {
	if isF32[T]() {
		return T(r.Float32())
	}
	return T(r.Float64())
}

// fill writes values in [-scale, scale); with specialsEvery > 0, every
// specialsEvery-th element (at a random phase) is a special value.
func fill[T float](r *rand.Rand, x []T, scale T, specialsEvery int) {
	sp := specialsOf[T]()
	phase := 0
	if specialsEvery > 0 {
		phase = r.IntN(specialsEvery)
	}
	for i := range x {
		if specialsEvery > 0 && i%specialsEvery == phase {
			x[i] = sp[r.IntN(len(sp))]
			continue
		}
		x[i] = (unit[T](r)*2 - 1) * scale
	}
}

// canaryBits is the bit pattern guarding the memory around a float32
// destination: a signalling NaN with a payload no kernel produces; canary64
// is its float64 counterpart.
const (
	canaryBits = 0x7fa5a5a5
	canary64   = 0x7ff5a5a5a5a5a5a5
)

func canaryOf[T float]() uint64 {
	if isF32[T]() {
		return canaryBits
	}
	return canary64
}

// guardedOf is a slice of length n that starts off elements into a larger
// buffer whose other elements hold the canary, so writes outside show.
type guardedOf[T float] struct {
	buf    []T
	off, n int
}

// guarded is the float32 guarded slice most tests use.
type guarded = guardedOf[float32]

func newGuarded(n, off int) guarded { return newGuardedOf[float32](n, off) }

func newGuardedOf[T float](n, off int) guardedOf[T] {
	g := guardedOf[T]{buf: make([]T, n+off+17), off: off, n: n}
	for i := range g.buf {
		g.buf[i] = fromBits[T](canaryOf[T]())
	}
	return g
}

func (g guardedOf[T]) s() []T { return g.buf[g.off : g.off+g.n : g.off+g.n] }

func (g guardedOf[T]) check(t *testing.T, what string) {
	t.Helper()
	for i, v := range g.buf {
		if (i < g.off || i >= g.off+g.n) && bitsOf(v) != canaryOf[T]() {
			t.Fatalf("%s: wrote outside dst: buf[%d] (dst spans %d..%d) = %v", what, i, g.off, g.off+g.n, v)
		}
	}
}

func isNaN32(v float32) bool { return v != v }

func isNaN[T float](v T) bool { return v != v }

// sameFloat reports whether a and b are the same float, counting all NaNs equal.
func sameFloat[T float](a, b T) bool {
	if isNaN(a) || isNaN(b) {
		return isNaN(a) && isNaN(b)
	}
	return bitsOf(a) == bitsOf(b)
}

// ulp returns the spacing of T values at |v| (at least the smallest denormal).
func ulp[T float](v T) float64 {
	a := math.Abs(float64(v))
	if a < tiny[T]() || math.IsInf(a, 0) || math.IsNaN(a) {
		return tiny[T]()
	}
	if isF32[T]() {
		f := float32(a)
		return float64(math.Nextafter32(f, float32(math.Inf(1)))) - float64(f)
	}
	return math.Nextafter(a, math.Inf(1)) - a
}

// either returns whichever of the float32 and float64 forms of a function
// (Add and AddF64) has type F, so one test table serves both widths.
func either[F any](f32, f64 any) F {
	if f, ok := f32.(F); ok {
		return f
	}
	return f64.(F)
}

func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		msg, _ := r.(string)
		if !strings.Contains(msg, want) {
			t.Fatalf("panic %q, want it to contain %q", msg, want)
		}
	}()
	f()
}
