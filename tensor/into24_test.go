package tensor

import (
	"math"
	"math/rand/v2"
	"runtime"
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

func TestReorderIntoForms(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	cases := []struct {
		shape  []int
		axes   []int
		shifts []int
		reps   []int
	}{
		{[]int{}, []int{0}, []int{3}, []int{2}},
		{[]int{5}, []int{0}, []int{2}, []int{3}},
		{[]int{0, 3}, []int{1}, []int{1}, []int{2, 0}},
		{[]int{3, 4}, []int{0, 1}, []int{-1, 5}, []int{2, 1, 3}},
		{[]int{2, 3, 4}, []int{-1, 0}, []int{7, -2}, []int{1, 2}},
		{[]int{2, 3, 4}, []int{2}, []int{0}, []int{}},
		{[]int{4, 1, 3}, []int{1, 2}, []int{1, 1}, []int{2, 2, 2}},
	}
	for _, c := range cases {
		for _, kind := range []string{"contiguous", "transposed", "strided"} {
			x := randLayout(r, kind, c.shape...)
			axes := c.axes
			if len(c.shape) == 0 {
				axes = nil
			}
			want := Flip(x, axes...)
			sameBits(t, "FlipInto", FlipInto(stridedDst(r, c.shape...), x, axes...), want)
			checkAgainst(t, "Flip", want, c.shape, func(idx []int) float64 {
				j := slices.Clone(idx)
				for _, a := range axes {
					a = (a + len(j)) % len(j)
					j[a] = c.shape[a] - 1 - j[a]
				}
				return float64(x.At(j...))
			}, exact)
			ra, rs := c.axes, c.shifts
			if len(c.shape) == 0 {
				ra, rs = nil, c.shifts[:1]
			}
			want = Roll(x, rs, ra...)
			sameBits(t, "RollInto", RollInto(stridedDst(r, c.shape...), x, rs, ra...), want)
			sameBits(t, "Roll flat", Roll(x, []int{2}), Roll(x.Contiguous().Reshape(-1), []int{2}, 0).Reshape(c.shape...))
			sameBits(t, "RollInto flat", RollInto(stridedDst(r, c.shape...), x, []int{-3}), Roll(x, []int{-3}))
			checkAgainst(t, "Roll", want, c.shape, func(idx []int) float64 {
				j := slices.Clone(idx)
				for k, a := range ra {
					a = (a + len(j)) % len(j)
					n := c.shape[a]
					j[a] = ((j[a]-rs[k])%n + n) % n
				}
				return float64(x.At(j...))
			}, exact)
			want = Tile(x, c.reps...)
			sameBits(t, "TileInto", TileInto(stridedDst(r, want.Shape()...), x, c.reps...), want)
		}
	}
	// In place, and through views of one storage.
	x := RandN(r, 3, 4)
	want := Flip(x, 1)
	sameBits(t, "FlipInto in place", FlipInto(x, x, 1), want)
	want = Roll(x, []int{1, 2}, 0, 1)
	sameBits(t, "RollInto in place", RollInto(x, x, []int{1, 2}, 0, 1), want)
	big := RandN(r, 6, 4)
	want = Tile(big.Slice(0, 0, 3, 1), 2, 1)
	sameBits(t, "TileInto over x", TileInto(big, big.Slice(0, 0, 3, 1), 2, 1), want)
	expectPanic(t, "tensor: FlipInto: dst shape [4 3], want [3 4]", func() { FlipInto(New(4, 3), x, 0) })
	expectPanic(t, "tensor: RollInto: dst shape [12], want [3 4]", func() { RollInto(New(12), x, []int{1}) })
	expectPanic(t, "tensor: TileInto: dst shape [3 4], want [3 8]", func() { TileInto(New(3, 4), x, 1, 2) })
	expectPanic(t, "tensor: RollInto: shifts [1 2] and axes [0] differ in length (x of shape [3 4])", func() { RollInto(New(3, 4), x, []int{1, 2}, 0) })
	// No storage allocated: a few view headers, far less than dst.
	xb := RandN(r, 64, 64)
	dst := New(64, 64)
	storageFree(t, "FlipInto", dst, func() { FlipInto(dst, xb, 0, 1) })
	storageFree(t, "RollInto", dst, func() { RollInto(dst, xb, []int{3, -5}, 0, 1) })
	half := xb.Slice(1, 0, 32, 1)
	storageFree(t, "TileInto", dst, func() { TileInto(dst, half, 1, 2) })
}

// storageFree fails when f allocates, per call, a quarter of dst's bytes
// or more: an Into form that allocates no storage of its result's size
// (only view headers or a kernel's small scratch). Skipped under -race.
func storageFree(t *testing.T, name string, dst *Tensor, f func()) {
	t.Helper()
	if raceEnabled {
		return
	}
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 10
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	if b := (after.TotalAlloc - before.TotalAlloc) / runs; b >= uint64(dst.Len()) {
		t.Errorf("%s allocates %d bytes per call (dst %d bytes)", name, b, 4*dst.Len())
	}
}

func TestPairwiseIntoForms(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 3))
	for _, c := range [][3]int{{0, 3, 2}, {4, 5, 3}, {7, 7, 16}, {3, 2, 0}} {
		n, m, d := c[0], c[1], c[2]
		for _, kind := range []string{"contiguous", "transposed"} {
			x, y := randLayout(r, kind, n, d), randLayout(r, kind, m, d)
			for _, self := range []bool{false, true} {
				yy := y
				if self {
					yy = x
				}
				want := PairwiseSqDist(x, yy)
				sameBits(t, "PairwiseSqDistInto", PairwiseSqDistInto(New(want.Shape()...), x, yy), want)
				sameBits(t, "PairwiseSqDistInto strided", PairwiseSqDistInto(stridedDst(r, want.Shape()...), x, yy), want)
				sameBits(t, "RBFKernelInto", RBFKernelInto(stridedDst(r, want.Shape()...), x, yy, 0.3), RBFKernel(x, yy, 0.3))
				g := RandN(r, want.Shape()...)
				wx, wy := PairwiseSqDistGrad(g, x, yy)
				gx, gy := PairwiseSqDistGradInto(stridedDst(r, wx.Shape()...), New(wy.Shape()...), g, x, yy)
				sameBits(t, "PairwiseSqDistGradInto dx", gx, wx)
				sameBits(t, "PairwiseSqDistGradInto dy", gy, wy)
				if _, gy := PairwiseSqDistGradInto(nil, New(wy.Shape()...), g, x, yy); true {
					sameBits(t, "PairwiseSqDistGradInto dy alone", gy, wy)
				}
			}
		}
	}
	x := RandN(r, 3, 2)
	expectPanic(t, "tensor: PairwiseSqDistInto: dst shape [3 4], want [3 3]", func() { PairwiseSqDistInto(New(3, 4), x, x) })
	expectPanic(t, "tensor: RBFKernelInto: dst shape [3], want [3 3]", func() { RBFKernelInto(New(3), x, x, 1) })
	expectPanic(t, "tensor: PairwiseSqDistGradInto: dy shape [2 2], want [3 2]", func() {
		PairwiseSqDistGradInto(nil, New(2, 2), New(3, 3), x, x)
	})
	expectPanic(t, "tensor: PairwiseSqDistGradInto: dx of shape [3 2] overlaps another operand", func() {
		PairwiseSqDistGradInto(x, nil, New(3, 3), x, x)
	})
	// dst over x: x copied first.
	sq := RandN(r, 4, 4)
	want := PairwiseSqDist(sq, sq)
	sameBits(t, "PairwiseSqDistInto over x", PairwiseSqDistInto(sq, sq, sq), want)
	// The kernel's scratch is the centred copies of x and y: [64 2] each.
	xb, yb := RandN(r, 64, 2), RandN(r, 64, 2)
	dst := New(64, 64)
	storageFree(t, "PairwiseSqDistInto", dst, func() { PairwiseSqDistInto(dst, xb, yb) })
}

func TestSamplingIntoForms(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 4))
	for _, align := range []bool{false, true} {
		theta := RandN(r, 2, 2, 3)
		size := []int{2, 3, 4, 5}
		want := AffineGrid(theta, size, align)
		sameBits(t, "AffineGridInto", AffineGridInto(stridedDst(r, 2, 4, 5, 2), theta, size, align), want)
		dg := RandN(r, 2, 4, 5, 2)
		sameBits(t, "AffineGridBackwardInto", AffineGridBackwardInto(stridedDst(r, 2, 2, 3), dg, size, align), AffineGridBackward(dg, size, align))
		for _, mode := range []InterpMode{InterpBilinear, InterpNearest} {
			for _, pad := range []GridPadding{GridPadZeros, GridPadBorder, GridPadReflection} {
				p := GridSampleParams{Mode: mode, Padding: pad, AlignCorners: align}
				x, grid := randLayout(r, "transposed", 2, 3, 4, 5), Scale(RandN(r, 2, 6, 7, 2), 1.2)
				want := GridSample(x, grid, p)
				sameBits(t, "GridSampleInto", GridSampleInto(stridedDst(r, 2, 3, 6, 7), x, grid, p), want)
				sameBits(t, "GridSampleInto contiguous", GridSampleInto(New(2, 3, 6, 7), x, grid, p), want)
				dy := RandN(r, 2, 3, 6, 7)
				wx, wg := GridSampleBackward(dy, x, grid, p)
				gx, gg := GridSampleBackwardInto(stridedDst(r, 2, 3, 4, 5), New(2, 6, 7, 2), dy, x, grid, p)
				sameBits(t, "GridSampleBackwardInto dinput", gx, wx)
				sameBits(t, "GridSampleBackwardInto dgrid", gg, wg)
				_, gg = GridSampleBackwardInto(nil, New(2, 6, 7, 2), dy, x, grid, p)
				sameBits(t, "GridSampleBackwardInto dgrid alone", gg, wg)
			}
		}
		for _, mode := range []InterpMode{InterpNearest, InterpNearestExact, InterpBilinear, InterpBicubic} {
			if align && (mode == InterpNearest || mode == InterpNearestExact) {
				continue
			}
			p := InterpolateParams{Size: [2]int{7, 3}, Mode: mode, AlignCorners: align}
			x := randLayout(r, "strided", 2, 3, 4, 5)
			want := Interpolate(x, p)
			sameBits(t, "InterpolateInto", InterpolateInto(stridedDst(r, 2, 3, 7, 3), x, p), want)
			dy := RandN(r, 2, 3, 7, 3)
			sameBits(t, "InterpolateBackwardInto", InterpolateBackwardInto(stridedDst(r, 2, 3, 4, 5), dy, p), InterpolateBackward(dy, []int{2, 3, 4, 5}, p))
		}
	}
	// dst over the input: written through a temporary.
	x := RandN(r, 1, 1, 4, 4)
	p := InterpolateParams{Size: [2]int{4, 4}, Mode: InterpBilinear}
	want := Interpolate(x, p)
	sameBits(t, "InterpolateInto over x", InterpolateInto(x, x, p), want)
	grid := Scale(RandN(r, 1, 4, 4, 2), 0.5)
	want = GridSample(x, grid, GridSampleParams{})
	sameBits(t, "GridSampleInto over input", GridSampleInto(x, x, grid, GridSampleParams{}), want)
	expectPanic(t, "tensor: InterpolateInto: dst shape [1 1 4 5], want [1 1 4 4]", func() { InterpolateInto(New(1, 1, 4, 5), x, p) })
	expectPanic(t, "tensor: GridSampleInto: dst shape [1 2 4 4], want [1 1 4 4]", func() { GridSampleInto(New(1, 2, 4, 4), x, grid, GridSampleParams{}) })
	expectPanic(t, "tensor: AffineGridInto: dst shape [1 4 4 3], want [1 4 4 2]", func() {
		AffineGridInto(New(1, 4, 4, 3), RandN(r, 1, 2, 3), []int{1, 1, 4, 4}, false)
	})
	expectPanic(t, "tensor: GridSampleBackwardInto: dgrid shape [1 4 4 3], want [1 4 4 2]", func() {
		GridSampleBackwardInto(nil, New(1, 4, 4, 3), New(1, 1, 4, 4), x, grid, GridSampleParams{})
	})
	expectPanic(t, "tensor: AffineGridBackwardInto: dtheta shape [2 2 3], want [1 2 3]", func() {
		AffineGridBackwardInto(New(2, 2, 3), New(1, 4, 4, 2), []int{1, 1, 4, 4}, false)
	})
	xb := RandN(r, 1, 4, 16, 16)
	dst := New(1, 4, 64, 64)
	big := InterpolateParams{Size: [2]int{64, 64}, Mode: InterpBilinear}
	storageFree(t, "InterpolateInto", dst, func() { InterpolateInto(dst, xb, big) })
	gb := Scale(RandN(r, 1, 64, 64, 2), 0.9)
	storageFree(t, "GridSampleInto", dst, func() { GridSampleInto(dst, xb, gb, GridSampleParams{}) })
}

func TestMaskedSelectInto(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 5))
	for _, c := range []struct{ x, mask []int }{{[]int{3, 4}, []int{3, 4}}, {[]int{3, 4}, []int{4}}, {[]int{1, 4}, []int{3, 1}}, {[]int{0, 2}, []int{2}}, {[]int{}, []int{}}} {
		x := randLayout(r, "transposed", c.x...)
		mask := Greater(RandN(r, c.mask...), Scalar(0))
		want := MaskedSelect(x, mask)
		if n := MaskedCount(x, mask); n != want.Len() {
			t.Errorf("MaskedCount %v, want %d", n, want.Len())
		}
		sameBits(t, "MaskedSelectInto", MaskedSelectInto(stridedDst(r, want.Len()), x, mask), want)
	}
	x := RandN(r, 2, 3)
	mask := FromSlice([]float32{1, 0, 1, 0, 0, 1}, 2, 3)
	expectPanic(t, "tensor: MaskedSelectInto: dst shape [2], want [3]", func() { MaskedSelectInto(New(2), x, mask) })
	dst := New(64 * 64)
	xb, ones := RandN(r, 64, 64), Ones(64, 64)
	storageFree(t, "MaskedSelectInto", dst, func() { MaskedSelectInto(dst, xb, ones) })
}
