package tensor

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"
)

// pySlice is Python's slice(start, end, step).indices(d) for step > 0 and
// the elements it selects, computed with big integers so that nothing
// overflows: the reference for Slice.
func pySlice(d, start, end, step int) []int {
	clamp := func(x int) *big.Int {
		v := big.NewInt(int64(x))
		if x < 0 {
			v.Add(v, big.NewInt(int64(d)))
		}
		if v.Sign() < 0 {
			v.SetInt64(0)
		}
		if v.Cmp(big.NewInt(int64(d))) > 0 {
			v.SetInt64(int64(d))
		}
		return v
	}
	s, e := clamp(start), clamp(end)
	var out []int
	for i := s; i.Cmp(e) < 0; i.Add(i, big.NewInt(int64(step))) {
		out = append(out, int(i.Int64()))
	}
	return out
}

// TestSliceExtremeArguments checks Slice against Python's slice.indices
// for start, end and step anywhere in int's range: the length was
// (end-start+step-1)/step, which overflowed for a step near math.MaxInt
// (shape [0] or [-1] instead of Python's [1]), and the stride was
// multiplied by the step even when one element was taken.
func TestSliceExtremeArguments(t *testing.T) {
	const maxI, minI = math.MaxInt, math.MinInt
	ends := []int{minI, minI + 1, -8, -7, -6, -1, 0, 1, 3, 6, 7, 8, maxI - 1, maxI}
	steps := []int{1, 2, 5, 6, 7, maxI / 2, maxI - 1, maxI}
	base := Arange(0, 3*7, 1).Reshape(3, 7) // dimension 1 has 7 elements
	for _, start := range ends {
		for _, end := range ends {
			for _, step := range steps {
				name := fmt.Sprintf("Slice(1, %d, %d, %d)", start, end, step)
				want := pySlice(7, start, end, step)
				got := base.Slice(1, start, end, step)
				if !slices.Equal(got.Shape(), []int{3, len(want)}) {
					t.Errorf("%s: shape %v, want [3 %d]", name, got.Shape(), len(want))
					continue
				}
				for r := range 3 {
					for j, k := range want {
						if v := got.At(r, j); v != float32(7*r+k) {
							t.Errorf("%s: element (%d, %d) = %v, want %v", name, r, j, v, 7*r+k)
						}
					}
				}
				// The view must also be usable as a whole: Clone walks
				// its strides.
				if c := got.Clone(); c.Len() != 3*len(want) {
					t.Errorf("%s: Clone has %d elements", name, c.Len())
				}
			}
		}
	}
}

// TestZeroSizeViewOffset checks that a zero-size view whose first element
// would lie past its storage (a slice of an empty tensor starting inside
// it) reads as empty instead of slicing out of range.
func TestZeroSizeViewOffset(t *testing.T) {
	for name, v := range map[string]*Tensor{
		"Slice":      New(0, 4).Slice(1, 1, 4, 1),
		"Slice step": New(0, 4, 6).Slice(2, 1, 6, 2),
		"Index":      New(0, 3).Index(1, 2),
		"Transpose":  New(2, 0, 4).Slice(2, 3, 4, 1).Transpose(0, 2),
		"Contiguous": New(0, 4).Slice(1, 1, 4, 1).Contiguous(),
	} {
		if d := v.Data(); len(d) != 0 || v.Clone().Len() != 0 || Add(v, v).Len() != 0 {
			t.Errorf("%s: %d elements", name, len(d))
		}
	}
}
