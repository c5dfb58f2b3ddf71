package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestConcatStackSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for range 30 {
		shape := randShape(r, 3, 4)
		if len(shape) == 0 {
			continue
		}
		axis := r.IntN(len(shape))
		var parts []*Tensor
		var sizes []int
		for range 1 + r.IntN(3) {
			s := slices.Clone(shape)
			s[axis] = r.IntN(4)
			sizes = append(sizes, s[axis])
			parts = append(parts, randLayout(r, layouts[r.IntN(len(layouts))], s...))
		}
		cat := Concat(axis-len(shape), parts...) // negative axis
		at := 0
		for i, p := range parts {
			checkAgainst(t, "Concat", cat.Slice(axis, at, at+sizes[i], 1), p.shape, func(idx []int) float64 { return float64(p.At(idx...)) }, exact)
			at += sizes[i]
		}
		for i, v := range cat.Split(axis, sizes...) {
			p := parts[i]
			checkAgainst(t, "Split", v, p.shape, func(idx []int) float64 { return float64(p.At(idx...)) }, exact)
		}
		same := make([]*Tensor, len(parts))
		for i := range same {
			same[i] = randLayout(r, layouts[r.IntN(len(layouts))], shape...)
		}
		st := Stack(axis, same...)
		for i, p := range same {
			checkAgainst(t, "Stack", st.Index(axis, i), shape, func(idx []int) float64 { return float64(p.At(idx...)) }, exact)
		}
	}
	ch := Arange(0, 7, 1).Chunk(0, 3)
	if len(ch) != 3 || ch[2].Len() != 1 || ch[1].At(0) != 3 {
		t.Errorf("Chunk(7 into 3) = %v", ch)
	}
	expectPanic(t, "tensor: Concat: shapes [2 3] and [2 4] differ outside axis 0", func() { Concat(0, New(2, 3), New(2, 4)) })
	expectPanic(t, "tensor: Stack: shapes [2] and [3] differ", func() { Stack(0, New(2), New(3)) })
	expectPanic(t, "tensor: Split: sizes [1 1] add up to 2, not dimension 0 of shape [3]", func() { New(3).Split(0, 1, 1) })
}

func TestIndexSelectGatherOneHot(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	x := randLayout(r, "transposed", 4, 5, 3)
	idx := FromSlice([]float32{3, 0, -1, 3}, 4)
	got := IndexSelect(x, 1, idx)
	checkAgainst(t, "IndexSelect", got, []int{4, 4, 3}, func(i []int) float64 {
		k := []int{3, 0, 4, 3}[i[1]]
		return float64(x.At(i[0], k, i[2]))
	}, exact)
	gi := New(4, 2, 3)
	for i := range gi.data {
		gi.data[i] = float32(r.IntN(5))
	}
	g := Gather(x, 1, gi)
	checkAgainst(t, "Gather", g, []int{4, 2, 3}, func(i []int) float64 {
		return float64(x.At(i[0], int(gi.At(i...)), i[2]))
	}, exact)
	oh := OneHot(FromSlice([]float32{2, 0, 1}, 3), 4)
	want := []float32{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}
	if !slices.Equal(oh.Data(), want) || !slices.Equal(oh.Shape(), []int{3, 4}) {
		t.Errorf("OneHot = %v", oh)
	}
	expectPanic(t, "tensor: IndexSelect: index 5 is not an integer in -5..4", func() { IndexSelect(x, 1, FromSlice([]float32{5}, 1)) })
	expectPanic(t, "tensor: Gather: index 1.5 is not an integer in -5..4", func() { Gather(x, 1, Full(1.5, 1, 1, 1)) })
	expectPanic(t, "tensor: OneHot: label NaN not in 0..3", func() { OneHot(Full(float32(math.NaN()), 2), 4) })
	expectPanic(t, "tensor: Gather: index shape [5 1 1] exceeds shape [4 5 3] outside axis 1", func() { Gather(x, 1, New(5, 1, 1)) })
}
