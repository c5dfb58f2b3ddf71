package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// layouts lists the ways tests lay out an operand of a given shape.
var layouts = []string{"contiguous", "transposed", "strided", "expanded"}

// randLayout returns a tensor of the given shape filled from r, laid out as
// kind says: contiguous; a permuted view of a contiguous tensor; a view
// taking every other element of a larger tensor along each dimension
// (offset 1); or, where a dimension can be, expanded from size 1.
func randLayout(r *rand.Rand, kind string, shape ...int) *Tensor {
	switch kind {
	case "transposed":
		n := len(shape)
		perm := r.Perm(n)
		inner := make([]int, n)
		for i, p := range perm {
			inner[p] = shape[i]
		}
		// Dimension i of the view is dimension perm[i] of base.
		return RandN(r, inner...).Permute(perm...)
	case "strided":
		big := make([]int, len(shape))
		for i, d := range shape {
			big[i] = 2*d + 1
		}
		t := RandN(r, big...)
		for i, d := range shape {
			t = t.Slice(i, 1, 1+2*d, 2)
		}
		return t
	case "expanded":
		small := make([]int, len(shape))
		for i, d := range shape {
			small[i] = d
			if r.IntN(2) == 0 {
				small[i] = 1
			}
		}
		return RandN(r, small...).BroadcastTo(shape...)
	}
	return RandN(r, shape...)
}

// randShape returns 0..maxDims dimensions of sizes 0..maxSize (0 rarely).
func randShape(r *rand.Rand, maxDims, maxSize int) []int {
	s := make([]int, r.IntN(maxDims+1))
	for i := range s {
		s[i] = 1 + r.IntN(maxSize)
		if r.IntN(20) == 0 {
			s[i] = 0
		}
	}
	return s
}

// indices calls f with every index of shape in row-major order.
func indices(shape []int, f func(idx []int)) {
	idx := make([]int, len(shape))
	forEachIndex(shape, idx, func() { f(idx) })
}

// closeTo reports whether got is within tol·scale of want (NaN matches NaN,
// infinities must match exactly).
func closeTo(got float32, want, tol, scale float64) bool {
	g := float64(got)
	switch {
	case math.IsNaN(want):
		return math.IsNaN(g)
	case math.IsInf(want, 0) || math.IsInf(g, 0):
		return g == want
	}
	return math.Abs(g-want) <= tol*scale
}

// checkAgainst compares every element of got with want(idx).
func checkAgainst(t *testing.T, what string, got *Tensor, shape []int, want func(idx []int) float64, tol func(idx []int) (tol, scale float64)) {
	t.Helper()
	if !slices.Equal(got.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	bad := 0
	indices(shape, func(idx []int) {
		w := want(idx)
		tl, sc := tol(idx)
		if g := got.At(idx...); !closeTo(g, w, tl, sc) && bad < 5 {
			bad++
			t.Errorf("%s: at %v got %v, want %v", what, idx, g, w)
		}
	})
}

func exact(_ []int) (float64, float64) { return 0, 0 }

// expectPanic runs f and fails unless it panics with exactly msg.
func expectPanic(t *testing.T, msg string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if got := recover(); got != msg {
			t.Errorf("panic %q, want %q", got, msg)
		}
	}()
	f()
}

// noAllocs fails when f allocates in steady state (skipped under -race,
// whose sync.Pool drops items at random).
func noAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(20, f); n != 0 {
		t.Errorf("%s allocates %v times per call", name, n)
	}
}

// forEachIndex calls f with pos set to every index of shape in row-major order.
func forEachIndex(shape, pos []int, f func()) {
	for _, d := range shape {
		if d == 0 {
			return
		}
	}
	for {
		f()
		i := len(shape) - 1
		for ; i >= 0; i-- {
			pos[i]++
			if pos[i] < shape[i] {
				break
			}
			pos[i] = 0
		}
		if i < 0 {
			return
		}
	}
}
