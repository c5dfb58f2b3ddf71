package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The ...Into forms of issue 24's functions: each against its allocating
// form, bit for bit, into a strided dst; a dst of the wrong shape panics.

// sameBits fails unless got and want have one shape and the same bits.
func sameBits(t *testing.T, what string, got, want *Tensor) {
	t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := got.Contiguous().Data(), want.Contiguous().Data()
	for i := range g {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, g[i], w[i])
		}
	}
}

// stridedDst returns a NaN-filled strided view of the given shape (every
// other element of a larger tensor), for an Into form to write.
func stridedDst(r *rand.Rand, shape ...int) *Tensor {
	d := randLayout(r, "strided", shape...)
	for i := range d.data {
		d.data[i] = float32(math.NaN())
	}
	return d
}

func TestSortIntoForms(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	for _, c := range append(axisCases, struct {
		shape []int
		axis  int
	}{[]int{}, 0}) {
		for _, kind := range []string{"contiguous", "transposed"} {
			x := randLayout(r, kind, c.shape...)
			withTies(r, x) // through x's storage: any layout
			for _, desc := range []bool{false, true} {
				v, i := Sort(x, c.axis, desc)
				gv, gi := SortInto(stridedDst(r, v.Shape()...), stridedDst(r, i.Shape()...), x, c.axis, desc)
				sameBits(t, "SortInto values", gv, v)
				sameBits(t, "SortInto indices", gi, i)
				sameBits(t, "ArgSortInto", ArgSortInto(stridedDst(r, i.Shape()...), x, c.axis, desc), ArgSort(x, c.axis, desc))
			}
			n := 1
			if len(c.shape) > 0 {
				n = c.shape[(c.axis+len(c.shape))%len(c.shape)]
			}
			for _, k := range []int{0, n / 2, n} {
				if len(c.shape) == 0 && k != 1 {
					continue
				}
				v, i := TopK(x, k, c.axis, true, true)
				gv, gi := TopKInto(stridedDst(r, v.Shape()...), stridedDst(r, i.Shape()...), x, k, c.axis, true, true)
				sameBits(t, "TopKInto values", gv, v)
				sameBits(t, "TopKInto indices", gi, i)
			}
			if x.Len() == 0 && n == 0 {
				continue
			}
			for _, keep := range []bool{false, true} {
				v, i := Median(x, c.axis, keep)
				gv, gi := MedianInto(stridedDst(r, v.Shape()...), stridedDst(r, i.Shape()...), x, c.axis, keep)
				sameBits(t, "MedianInto values", gv, v)
				sameBits(t, "MedianInto indices", gi, i)
			}
		}
	}
	// In place: x sorted into itself.
	x := withTies(r, RandN(r, 3, 7))
	v, _ := Sort(x, 1, false)
	SortInto(x, New(3, 7), x, 1, false)
	sameBits(t, "SortInto in place", x, v)
	x = RandN(r, 2, 5)
	expectPanic(t, "tensor: SortInto: values of shape [2 4] for x of shape [2 5] (want 5 along axis 1, x's dimensions elsewhere)", func() {
		SortInto(New(2, 4), New(2, 5), x, 1, false)
	})
	expectPanic(t, "tensor: ArgSortInto: indices of shape [5 2] for x of shape [2 5] (want 5 along axis 1, x's dimensions elsewhere)", func() {
		ArgSortInto(New(5, 2), x, 1, false)
	})
	expectPanic(t, "tensor: TopKInto: indices of shape [2 3] for x of shape [2 5] (want 2 along axis 1, x's dimensions elsewhere)", func() {
		TopKInto(New(2, 2), New(2, 3), x, 2, 1, true, true)
	})
	expectPanic(t, "tensor: MedianInto: values shape [2 1], want [2]", func() {
		MedianInto(New(2, 1), New(2), x, 1, false)
	})
	expectPanic(t, "tensor: SortInto: values shape [1], want []", func() {
		SortInto(New(1), New(), Scalar(1), 0, false)
	})
	expectPanic(t, "tensor: SortInto: nil tensor values", func() { SortInto(nil, New(2, 5), x, 1, false) })
}
