package tensor

import (
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
