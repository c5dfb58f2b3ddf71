package simd

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

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
var specials = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	0, float32(math.Copysign(0, -1)), 1, -1,
	math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	1.1754942e-38, -1e-40, 3e-42, // denormals
	1.17549435e-38, // smallest normal
}

// fill writes values in [-scale, scale); with specialsEvery > 0, every
// specialsEvery-th element (at a random phase) is a special value.
func fill(r *rand.Rand, x []float32, scale float32, specialsEvery int) {
	phase := 0
	if specialsEvery > 0 {
		phase = r.IntN(specialsEvery)
	}
	for i := range x {
		if specialsEvery > 0 && i%specialsEvery == phase {
			x[i] = specials[r.IntN(len(specials))]
			continue
		}
		x[i] = (r.Float32()*2 - 1) * scale
	}
}

// canary is the bit pattern guarding the memory around a destination: a NaN
// with a payload no kernel produces.
const canaryBits = 0x7fa5a5a5

// guarded returns a slice of length n that starts off elements into a larger
// buffer whose other elements hold the canary, so writes outside show.
type guarded struct {
	buf    []float32
	off, n int
}

func newGuarded(n, off int) guarded {
	g := guarded{buf: make([]float32, n+off+17), off: off, n: n}
	for i := range g.buf {
		g.buf[i] = math.Float32frombits(canaryBits)
	}
	return g
}

func (g guarded) s() []float32 { return g.buf[g.off : g.off+g.n : g.off+g.n] }

func (g guarded) check(t *testing.T, what string) {
	t.Helper()
	for i, v := range g.buf {
		if (i < g.off || i >= g.off+g.n) && math.Float32bits(v) != canaryBits {
			t.Fatalf("%s: wrote outside dst: buf[%d] (dst spans %d..%d) = %v", what, i, g.off, g.off+g.n, v)
		}
	}
}

func isNaN32(v float32) bool { return v != v }

// sameFloat reports whether a and b are the same float32, counting all NaNs equal.
func sameFloat(a, b float32) bool {
	if isNaN32(a) || isNaN32(b) {
		return isNaN32(a) && isNaN32(b)
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// ulp returns the spacing of float32 values at |v| (at least the smallest denormal).
func ulp(v float32) float64 {
	a := math.Abs(float64(v))
	if a < math.SmallestNonzeroFloat32 || math.IsInf(a, 0) || math.IsNaN(a) {
		return math.SmallestNonzeroFloat32
	}
	f := float32(a)
	return float64(math.Nextafter32(f, float32(math.Inf(1)))) - float64(f)
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
