package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randIndex returns a tensor of the given shape holding integers naming
// positions of an axis of length n (some negative, counting from the
// end, when neg is set), laid out as kind says (see randLayout).
func randIndex(r *rand.Rand, kind string, n int, neg bool, shape ...int) *Tensor {
	base := slices.Clone(shape)
	if kind == "expanded" {
		for i := range base {
			if r.IntN(2) == 0 {
				base[i] = 1
			}
		}
	}
	h := New(base...)
	for i := range h.data {
		v := r.IntN(n)
		if neg && r.IntN(2) == 0 {
			v -= n
		}
		h.data[i] = float32(v)
	}
	switch kind {
	case "contiguous":
		return h
	case "expanded":
		return h.BroadcastTo(shape...)
	}
	x := randLayout(r, kind, shape...)
	CopyInto(x, h)
	return x
}

// writable lists the layouts of randLayout that an op may write.
var writable = layouts[:3]

// resolved is the position that index value v names on an axis of n.
func resolved(v float32, n int) int {
	k := int(v)
	if k < 0 {
		k += n
	}
	return k
}

// with returns idx with element axis set to k (a copy).
func with(idx []int, axis, k int) []int {
	c := slices.Clone(idx)
	c[axis] = k
	return c
}

// flatIndex is the row-major number of idx in shape.
func flatIndex(shape, idx []int) int {
	f := 0
	for i, d := range shape {
		f = f*d + idx[i]
	}
	return f
}

// TestIndexOps checks IndexSelect(Into), IndexAdd, Gather(Into) and
// ScatterAdd against float64 references on random shapes and layouts
// (transposed, strided and broadcast operands, strided outputs),
// negative and repeated indices and zero-size operands; the sums of
// IndexAdd and ScatterAdd also against float32 sums in the documented
// order, bit for bit.
func TestIndexOps(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for c := range 120 {
		shape := randShape(r, 4, 5)
		if len(shape) == 0 {
			shape = []int{1 + r.IntN(4)}
		}
		axis := r.IntN(len(shape))
		n := shape[axis]
		m := r.IntN(7) // the index's length along axis
		if c%10 == 0 {
			m = 0
		}
		if n == 0 {
			m = 0 // no index can name a position
		}
		kinds := func() string { return layouts[r.IntN(len(layouts))] }
		wkind := func() string { return writable[r.IntN(len(writable))] }
		name := fmt.Sprintf("%v/axis%d/m%d", shape, axis, m)
		x := randLayout(r, kinds(), shape...)
		sel := slices.Clone(shape)
		sel[axis] = m
		idx1 := randIndex(r, kinds(), max(n, 1), true, m)
		// IndexSelect and IndexSelectInto.
		wantSel := func(p []int) float64 { return float64(x.At(with(p, axis, resolved(idx1.At(p[axis]), n))...)) }
		checkAgainst(t, name+"/IndexSelect", IndexSelect(x, axis-len(shape), idx1), sel, wantSel, exact)
		dst := randLayout(r, wkind(), sel...)
		checkAgainst(t, name+"/IndexSelectInto", IndexSelectInto(dst, x, axis, idx1), sel, wantSel, exact)

		// IndexAdd: float64 reference and float32 in index order.
		acc := randLayout(r, wkind(), shape...)
		src := randLayout(r, kinds(), sel...)
		ref64, ref32, scale := map[int]float64{}, map[int]float32{}, map[int]float64{}
		indices(shape, func(p []int) {
			f := flatIndex(shape, p)
			ref64[f], ref32[f], scale[f] = float64(acc.At(p...)), acc.At(p...), math.Abs(float64(acc.At(p...)))
		})
		counts := map[int]int{}
		for i := range m {
			k := resolved(idx1.At(i), n)
			counts[k]++
			indices(sel, func(p []int) {
				if p[axis] != i {
					return
				}
				f := flatIndex(shape, with(p, axis, k))
				v := src.At(p...)
				ref64[f] += float64(v)
				ref32[f] += v
				scale[f] += math.Abs(float64(v))
			})
		}
		got := IndexAdd(acc, axis, idx1, src)
		if got != acc {
			t.Errorf("%s: IndexAdd did not return dst", name)
		}
		checkAgainst(t, name+"/IndexAdd", got, shape, func(p []int) float64 { return ref64[flatIndex(shape, p)] },
			func(p []int) (float64, float64) {
				return float64(counts[p[axis]]+1) * 0x1p-24, scale[flatIndex(shape, p)]
			})
		checkAgainst(t, name+"/IndexAdd (float32 in index order)", got, shape, func(p []int) float64 { return float64(ref32[flatIndex(shape, p)]) }, exact)

		// Gather and ScatterAdd: an index of x's rank, no larger than x
		// outside axis, any length along it.
		gs := slices.Clone(shape)
		for i := range gs {
			if i == axis {
				gs[i] = m
			} else if gs[i] > 0 {
				gs[i] = 1 + r.IntN(gs[i])
			}
		}
		gi := randIndex(r, kinds(), max(n, 1), true, gs...)
		wantG := func(p []int) float64 { return float64(x.At(with(p, axis, resolved(gi.At(p...), n))...)) }
		checkAgainst(t, name+"/Gather", Gather(x, axis, gi), gs, wantG, exact)
		gdst := randLayout(r, wkind(), gs...)
		checkAgainst(t, name+"/GatherInto", GatherInto(gdst, x, axis-len(shape), gi), gs, wantG, exact)

		sacc := randLayout(r, wkind(), shape...)
		ssrc := randLayout(r, kinds(), gs...)
		clear(ref64)
		clear(ref32)
		clear(scale)
		indices(shape, func(p []int) {
			f := flatIndex(shape, p)
			ref64[f], ref32[f], scale[f] = float64(sacc.At(p...)), sacc.At(p...), math.Abs(float64(sacc.At(p...)))
		})
		hits := map[int]int{}
		indices(gs, func(p []int) { // row-major order of src
			f := flatIndex(shape, with(p, axis, resolved(gi.At(p...), n)))
			v := ssrc.At(p...)
			ref64[f] += float64(v)
			ref32[f] += v
			scale[f] += math.Abs(float64(v))
			hits[f]++
		})
		got = ScatterAdd(sacc, axis, gi, ssrc)
		checkAgainst(t, name+"/ScatterAdd", got, shape, func(p []int) float64 { return ref64[flatIndex(shape, p)] },
			func(p []int) (float64, float64) {
				return float64(hits[flatIndex(shape, p)]+1) * 0x1p-24, scale[flatIndex(shape, p)]
			})
		checkAgainst(t, name+"/ScatterAdd (float32 in row-major order)", got, shape, func(p []int) float64 { return float64(ref32[flatIndex(shape, p)]) }, exact)
	}
}

// dot64 is ⟨a, b⟩ in float64 and Σ|a·b|, for tensors of one shape.
func dot64(a, b *Tensor) (dot, abs float64) {
	ad, bd := a.Data(), b.Data()
	for i := range ad {
		p := float64(ad[i]) * float64(bd[i])
		dot += p
		abs += math.Abs(p)
	}
	return dot, abs
}

// TestIndexAdjoints checks that IndexAdd is IndexSelect's adjoint and
// ScatterAdd Gather's: ⟨IndexSelect(x), y⟩ = ⟨x, IndexAdd(0, y)⟩ and
// ⟨Gather(x), y⟩ = ⟨x, ScatterAdd(0, y)⟩, with repeated indices (the
// sums of the adjoints round in float32: within 2⁻²⁰ of Σ|x·y|).
func TestIndexAdjoints(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 38))
	for c := range 40 {
		shape := []int{1 + r.IntN(5), 1 + r.IntN(5), 1 + r.IntN(5)}
		axis := c % 3
		n := shape[axis]
		x := randLayout(r, layouts[r.IntN(len(layouts))], shape...)
		m := 1 + r.IntN(3*n) // more indices than positions: repeats
		idx := randIndex(r, "contiguous", n, true, m)
		sel := IndexSelect(x, axis, idx)
		y := randLayout(r, layouts[r.IntN(len(layouts))], sel.Shape()...)
		lhs, abs := dot64(sel, y)
		rhs, _ := dot64(x, IndexAdd(New(shape...), axis, idx, y))
		if math.Abs(lhs-rhs) > 0x1p-20*abs {
			t.Errorf("%v axis %d, %d indices: ⟨IndexSelect(x), y⟩ = %v, ⟨x, IndexAdd(0, y)⟩ = %v", shape, axis, m, lhs, rhs)
		}
		gs := slices.Clone(shape)
		gs[axis] = 1 + r.IntN(3*n)
		gi := randIndex(r, layouts[r.IntN(len(layouts))], n, true, gs...)
		g := Gather(x, axis, gi)
		y = RandN(r, gs...)
		lhs, abs = dot64(g, y)
		rhs, _ = dot64(x, ScatterAdd(New(shape...), axis, gi, y))
		if math.Abs(lhs-rhs) > 0x1p-20*abs {
			t.Errorf("%v axis %d, index %v: ⟨Gather(x), y⟩ = %v, ⟨x, ScatterAdd(0, y)⟩ = %v", shape, axis, gs, lhs, rhs)
		}
	}
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
	oh := OneHot(FromSlice([]float32{2, 0, 1}, 3), 4)
	want := []float32{0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0}
	if !slices.Equal(oh.Data(), want) || !slices.Equal(oh.Shape(), []int{3, 4}) {
		t.Errorf("OneHot = %v", oh)
	}
	// Labels of any shape and layout, one class, none.
	lab := FromSlice([]float32{1, 0, 2, 2, 0, 1}, 2, 3).T()
	oh = OneHot(lab, 3)
	checkAgainst(t, "OneHot(transposed)", oh, []int{3, 2, 3}, func(i []int) float64 {
		if float64(lab.At(i[0], i[1])) == float64(i[2]) {
			return 1
		}
		return 0
	}, exact)
	if oh := OneHot(New(2), 1); !slices.Equal(oh.Data(), []float32{1, 1}) {
		t.Errorf("OneHot of one class = %v", oh)
	}
	if oh := OneHot(New(0, 3), 2); !slices.Equal(oh.Shape(), []int{0, 3, 2}) {
		t.Errorf("OneHot of no labels has shape %v", oh.Shape())
	}
	// Overlapping operands are copied first.
	a := Arange(0, 6, 1).Reshape(3, 2)
	IndexAdd(a, 0, FromSlice([]float32{2, 2, 0}, 3), a)
	if got, want := a.Data(), []float32{0 + 4, 1 + 5, 2, 3, 4 + 0 + 2, 5 + 1 + 3}; !slices.Equal(got, want) {
		t.Errorf("IndexAdd(a, 0, [2 2 0], a) = %v, want %v", got, want)
	}
	b := FromSlice([]float32{1, 0, 2, 0}, 4)
	IndexSelectInto(b, b, 0, b) // b[i] = b[b[i]] read before any write
	if got := b.Data(); !slices.Equal(got, []float32{0, 1, 2, 1}) {
		t.Errorf("IndexSelectInto(b, b, 0, b) = %v, want [0 1 2 1]", got)
	}
}

func TestIndexPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 40))
	x := randLayout(r, "transposed", 4, 5, 3)
	for _, c := range []struct {
		msg string
		f   func()
	}{
		{"tensor: IndexSelect: index 5 is not an integer in -5..4", func() { IndexSelect(x, 1, FromSlice([]float32{5}, 1)) }},
		{"tensor: IndexSelect: index -6 is not an integer in -5..4", func() { IndexSelect(x, 1, FromSlice([]float32{0, -6}, 2)) }},
		{"tensor: IndexSelect: index NaN is not an integer in -5..4", func() { IndexSelect(x, 1, Full(float32(math.NaN()), 1)) }},
		{"tensor: IndexSelect: index +Inf is not an integer in -5..4", func() { IndexSelect(x, 1, Full(float32(math.Inf(1)), 1)) }},
		{"tensor: IndexSelect: index 1e+30 is not an integer in -5..4", func() { IndexSelect(x, 1, Full(1e30, 1)) }},
		{"tensor: IndexSelect: index 0 is not an integer in 0..-1", func() { IndexSelect(New(2, 0), 1, New(1)) }},
		{"tensor: IndexSelect: index shape [1 1], want 1-D", func() { IndexSelect(x, 1, New(1, 1)) }},
		{"tensor: IndexSelect: axis out of range for shape [4 5 3]", func() { IndexSelect(x, 3, New(1)) }},
		{"tensor: IndexSelectInto: index 2.5 is not an integer in -4..3", func() { IndexSelectInto(New(1, 5, 3), x, 0, Full(2.5, 1)) }},
		{"tensor: IndexSelectInto: dst shape [2 5 3], want [1 5 3] (shape [4 5 3] with the index's length 1 along axis 0)",
			func() { IndexSelectInto(New(2, 5, 3), x, 0, New(1)) }},
		{"tensor: IndexSelectInto: dst of shape [1 5 3] has a broadcast (stride 0) dimension 1",
			func() { IndexSelectInto(New(1, 1, 3).BroadcastTo(1, 5, 3), x, 0, New(1)) }},
		{"tensor: IndexAdd: index 4 is not an integer in -4..3", func() { IndexAdd(New(4, 5, 3), 0, FromSlice([]float32{0, 4}, 2), New(2, 5, 3)) }},
		{"tensor: IndexAdd: src shape [2 5 2], want [2 5 3] (shape [4 5 3] with the index's length 2 along axis 0)",
			func() { IndexAdd(New(4, 5, 3), 0, New(2), New(2, 5, 2)) }},
		{"tensor: IndexAdd: src shape [5 3], want [2 5 3] (shape [4 5 3] with the index's length 2 along axis 0)",
			func() { IndexAdd(New(4, 5, 3), 0, New(2), New(5, 3)) }},
		{"tensor: IndexAdd: dst of shape [4 5 3] has a broadcast (stride 0) dimension 0",
			func() { IndexAdd(New(1, 5, 3).BroadcastTo(4, 5, 3), 0, New(2), New(2, 5, 3)) }},
		{"tensor: IndexAdd: nil tensor src", func() { IndexAdd(New(1), 0, New(1), nil) }},
		{"tensor: Gather: index 1.5 is not an integer in -5..4", func() { Gather(x, 1, Full(1.5, 1, 1, 1)) }},
		{"tensor: Gather: index shape [5 1 1] exceeds shape [4 5 3] outside axis 1", func() { Gather(x, 1, New(5, 1, 1)) }},
		{"tensor: Gather: shapes [4 5 3] and index [1 1] differ in rank", func() { Gather(x, 1, New(1, 1)) }},
		{"tensor: GatherInto: dst shape [1 2 1], want the index's [1 1 1]", func() { GatherInto(New(1, 2, 1), x, 1, New(1, 1, 1)) }},
		{"tensor: ScatterAdd: index -7 is not an integer in -5..4", func() { ScatterAdd(New(4, 5, 3), 1, Full(-7, 1, 2, 1), New(1, 2, 1)) }},
		{"tensor: ScatterAdd: src shape [1 2 2], want the index's [1 2 1]", func() { ScatterAdd(New(4, 5, 3), 1, New(1, 2, 1), New(1, 2, 2)) }},
		{"tensor: ScatterAdd: index shape [1 2 4] exceeds shape [4 5 3] outside axis 1", func() { ScatterAdd(New(4, 5, 3), 1, New(1, 2, 4), New(1, 2, 4)) }},
		{"tensor: OneHot: label NaN not in 0..3", func() { OneHot(Full(float32(math.NaN()), 2), 4) }},
		{"tensor: OneHot: label -1 not in 0..3", func() { OneHot(Full(-1, 2), 4) }},
		{"tensor: OneHot: label 4 not in 0..3", func() { OneHot(Full(4, 2), 4) }},
		{"tensor: OneHot: 0 classes", func() { OneHot(New(2), 0) }},
	} {
		expectPanic(t, c.msg, c.f)
	}
	// An invalid index is found before anything is written.
	d := Ones(4, 2)
	func() {
		defer func() { _ = recover() }()
		IndexAdd(d, 0, FromSlice([]float32{1, 9}, 2), Ones(2, 2))
	}()
	func() {
		defer func() { _ = recover() }()
		ScatterAdd(d, 0, FromSlice([]float32{1, 9}, 2, 1), Ones(2, 1))
	}()
	if got := d.Data(); !slices.Equal(got, Ones(4, 2).Data()) {
		t.Errorf("dst after refused indices = %v, want it unchanged", got)
	}
}

// TestIndexAllocs checks that the Into forms and the adds allocate
// nothing on contiguous host operands.
func TestIndexAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	w, idx := RandN(r, 100, 16), randIndex(r, "contiguous", 100, false, 64)
	sel, g := New(64, 16), New(100, 4)
	gi := randIndex(r, "contiguous", 16, false, 100, 4)
	for name, f := range map[string]func(){
		"IndexSelectInto": func() { IndexSelectInto(sel, w, 0, idx) },
		"IndexAdd":        func() { IndexAdd(w, 0, idx, sel) },
		"GatherInto":      func() { GatherInto(g, w, 1, gi) },
		"ScatterAdd":      func() { ScatterAdd(w, 1, gi, g) },
	} {
		noAllocs(t, name, f)
	}
}

// BenchmarkIndexOps times an embedding lookup and its gradient (64×32
// rows of 64 out of 1000) and a gather and its scatter of one class per
// row (CrossEntropy's pick from 2048×10 logits).
func BenchmarkIndexOps(b *testing.B) {
	r := rand.New(rand.NewPCG(45, 46))
	w, idx := RandN(r, 1000, 64), randIndex(r, "contiguous", 1000, false, 2048)
	emb := IndexSelect(w, 0, idx)
	logits, labels := RandN(r, 2048, 10), randIndex(r, "contiguous", 10, false, 2048, 1)
	pick := Gather(logits, 1, labels)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"IndexSelect", func() { IndexSelect(w, 0, idx) }},
		{"IndexAdd", func() { IndexAdd(w, 0, idx, emb) }},
		{"Gather", func() { Gather(logits, 1, labels) }},
		{"ScatterAdd", func() { ScatterAdd(logits, 1, labels, pick) }},
		{"OneHot", func() { OneHot(labels, 10) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
		})
	}
}
