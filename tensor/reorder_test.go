package tensor

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFlipRoll(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 4))
	for _, c := range []struct {
		shape  []int
		axes   []int
		shifts []int
	}{
		{[]int{}, nil, []int{3}},
		{[]int{0}, []int{0}, []int{1}},
		{[]int{5}, []int{0}, []int{2}},
		{[]int{5}, []int{-1}, []int{-7}},
		{[]int{2, 3}, nil, []int{1}},
		{[]int{2, 3}, []int{0, 1}, []int{1, -1}},
		{[]int{3, 0, 2}, []int{2}, []int{5}},
		{[]int{3, 4, 5}, []int{2, 0}, []int{6, 2}},
		{[]int{3, 4, 5}, []int{1, 1}, []int{1, 2}},
	} {
		for _, kind := range layouts {
			x := randLayout(r, kind, c.shape...)
			what := fmt.Sprintf("(%v %s, axes %v, shifts %v)", c.shape, kind, c.axes, c.shifts)
			seen := map[int]bool{}
			for _, a := range c.axes {
				seen[x.axis("test", a)] = true
			}
			if len(seen) == len(c.axes) { // Flip refuses a repeated axis
				checkAgainst(t, "Flip"+what, Flip(x, c.axes...), c.shape, func(idx []int) float64 {
					src := slices.Clone(idx)
					for _, a := range c.axes {
						a = x.axis("test", a)
						src[a] = c.shape[a] - 1 - idx[a]
					}
					return float64(x.At(src...))
				}, exact)
			}
			checkAgainst(t, "Roll"+what, Roll(x, c.shifts, c.axes...), c.shape, func(idx []int) float64 {
				if len(c.axes) == 0 { // flattened
					n := x.Len()
					flat := 0
					for i, v := range idx {
						flat = flat*c.shape[i] + v
					}
					flat = ((flat-c.shifts[0])%n + n) % n
					src := make([]int, len(idx))
					for i := len(idx) - 1; i >= 0; i-- {
						src[i], flat = flat%c.shape[i], flat/c.shape[i]
					}
					return float64(x.At(src...))
				}
				src := slices.Clone(idx)
				for j, a := range c.axes {
					a = x.axis("test", a)
					n := c.shape[a]
					src[a] = ((src[a]-c.shifts[j])%n + n) % n
				}
				return float64(x.At(src...))
			}, exact)
		}
	}
	expectPanic(t, "tensor: Flip: repeated axis in [0 -2] for shape [2 3]", func() { Flip(New(2, 3), 0, -2) })
	expectPanic(t, "tensor: Roll: shifts [1 2] and axes [0] differ in length (x of shape [2 3])", func() { Roll(New(2, 3), []int{1, 2}, 0) })
	expectPanic(t, "tensor: Roll: shifts [1 2] without axes (x of shape [2 3]): want one shift", func() { Roll(New(2, 3), []int{1, 2}) })
}

func TestTile(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 5))
	for _, c := range []struct {
		shape, reps []int
	}{
		{[]int{}, nil},
		{[]int{}, []int{3}},
		{[]int{4}, []int{2}},
		{[]int{2, 3}, []int{2}},       // fewer reps than dimensions: [1, 2]
		{[]int{2, 3}, []int{2, 1, 3}}, // more: x as [1, 2, 3]
		{[]int{2, 3}, []int{0, 2}},
		{[]int{0, 3}, []int{2, 2}},
		{[]int{2, 1, 3}, []int{3, 4, 1}},
	} {
		for _, kind := range layouts {
			x := randLayout(r, kind, c.shape...)
			dims := max(len(c.shape), len(c.reps))
			xs := append(slices.Repeat([]int{1}, dims-len(c.shape)), c.shape...)
			rs := append(slices.Repeat([]int{1}, dims-len(c.reps)), c.reps...)
			out := make([]int, dims)
			for i := range out {
				out[i] = xs[i] * rs[i]
			}
			if got, n := TileShape(x, c.reps...); !slices.Equal(got[:n], out) {
				t.Errorf("TileShape(%v, %v) = %v, want %v", c.shape, c.reps, got[:n], out)
			}
			xv := x.Reshape(xs...)
			checkAgainst(t, fmt.Sprintf("Tile(%v %s, %v)", c.shape, kind, c.reps), Tile(x, c.reps...), out, func(idx []int) float64 {
				src := make([]int, dims)
				for i, v := range idx {
					src[i] = v % xs[i]
				}
				return float64(xv.At(src...))
			}, exact)
		}
	}
	expectPanic(t, "tensor: Tile: negative reps [1 -1] (x of shape [2])", func() { Tile(New(2), 1, -1) })
	expectPanic(t, "tensor: Tile: negative reps [1 -1] (x of shape [2])", func() { TileShape(New(2), 1, -1) })
	twos := slices.Repeat([]int{2}, 17)
	expectPanic(t, fmt.Sprintf("tensor: Tile: reps %v of shape [] need 34 dimensions internally, more than 32", twos), func() { TileShape(Scalar(1), twos...) })
	ones := slices.Repeat([]int{1}, 33)
	expectPanic(t, "tensor: Tile: 33 reps give 33 dimensions (x of shape [2]), more than 32", func() { TileShape(New(2), ones...) })
	expectPanic(t, "tensor: Tile: 33 reps give 33 dimensions (x of shape [2]), more than 32", func() { Tile(New(2), ones...) })
	x, reps := New(2, 3), []int{2, 1, 3}
	if n := testing.AllocsPerRun(10, func() { TileShape(x, reps...) }); n != 0 {
		t.Errorf("TileShape: %v allocations, want 0", n)
	}
}

func TestMasks(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 6))
	for _, c := range []struct{ x, mask []int }{
		{[]int{}, []int{}},
		{[]int{0, 3}, []int{3}},
		{[]int{4, 5}, []int{4, 5}},
		{[]int{4, 5}, []int{5}},
		{[]int{4, 1}, []int{1, 5}}, // both broadcast (MaskedSelect only)
		{[]int{2, 3, 4}, []int{3, 1}},
	} {
		for _, kind := range layouts {
			x := randLayout(r, kind, c.x...)
			m := Greater(randLayout(r, kind, c.mask...), Scalar(0))
			shape, _ := BroadcastShape(c.x, c.mask)
			var want []float32
			xb, mb := x.BroadcastTo(shape...), m.BroadcastTo(shape...)
			indices(shape, func(idx []int) {
				if mb.At(idx...) != 0 {
					want = append(want, xb.At(idx...))
				}
			})
			got := MaskedSelect(x, m)
			if got.Dims() != 1 || !slices.Equal(got.Data(), want) && len(want)+got.Len() > 0 {
				t.Errorf("MaskedSelect(%v %s, mask %v) = %v, want %v", c.x, kind, c.mask, got.Data(), want)
			}
			if !slices.Equal(shape, c.x) {
				continue
			}
			want2 := func(idx []int) float64 {
				if mb.At(idx...) != 0 {
					return -7
				}
				return float64(x.At(idx...))
			}
			what := fmt.Sprintf("MaskedFill(%v %s, mask %v)", c.x, kind, c.mask)
			checkAgainst(t, what, MaskedFill(x, m, -7), c.x, want2, exact)
			dst := x.Clone()
			MaskedFillInto(dst, dst, m, -7)
			checkAgainst(t, what+" in place", dst, c.x, want2, exact)
		}
	}
	expectPanic(t, "tensor: MaskedFill: mask of shape [1 5] does not broadcast to x's shape [4 1]", func() { MaskedFill(New(4, 1), New(1, 5), 0) })
}

func TestScatter(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 7))
	for _, c := range []struct {
		dst, index []int
		axis       int
	}{
		{[]int{5}, []int{8}, 0}, // repeated targets
		{[]int{4, 3}, []int{2, 3}, 0},
		{[]int{4, 3}, []int{4, 5}, 1},
		{[]int{3, 4, 2}, []int{2, 3, 2}, -2},
		{[]int{3, 0}, []int{2, 0}, 0},
	} {
		for _, kind := range writable {
			for _, ik := range layouts {
				a := c.axis
				if a < 0 {
					a += len(c.dst)
				}
				dst := randLayout(r, kind, c.dst...)
				index := randIndex(r, ik, c.dst[a], true, c.index...)
				src := randLayout(r, ik, c.index...)
				want := dst.Clone()
				indices(c.index, func(idx []int) {
					want.Set(src.At(idx...), with(idx, a, resolved(index.At(idx...), c.dst[a]))...)
				})
				if got := Scatter(dst, c.axis, index, src); got != dst {
					t.Fatal("Scatter did not return dst")
				}
				checkAgainst(t, fmt.Sprintf("Scatter(%v %s, axis %d, index %v %s)", c.dst, kind, c.axis, c.index, ik), dst, c.dst,
					func(idx []int) float64 { return float64(want.At(idx...)) }, exact)
			}
		}
	}
	expectPanic(t, "tensor: Scatter: index 3 is not an integer in -3..2", func() {
		Scatter(New(3), 0, FromSlice([]float32{3}, 1), New(1))
	})
	expectPanic(t, "tensor: Scatter: src shape [2], want the index's [1]", func() {
		Scatter(New(3), 0, FromSlice([]float32{0}, 1), New(2))
	})
}
