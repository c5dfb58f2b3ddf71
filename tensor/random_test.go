package tensor

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPhiloxKnownAnswers checks Philox4x32-10 against Random123's
// known-answer vectors (tests/kat_vectors of
// github.com/DEShawResearch/random123 at 9545ff6, the three "philox4x32
// 10" lines: counter, key, expected output).
func TestPhiloxKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		w0, w1, w2, w3 := philox4x32(c.ctr[0], c.ctr[1], c.ctr[2], c.ctr[3], c.key[0], c.key[1])
		if got := [4]uint32{w0, w1, w2, w3}; got != c.want {
			t.Errorf("philox4x32(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
		}
	}
}

// streamUniform is the reference of element i of an op at offset: word
// i mod 4 of counter block offset + ⌊i/4⌋, its top 24 bits over 2²⁴.
func streamUniform(seed, offset uint64, i int) float64 {
	b := offset + uint64(i/4)
	w0, w1, w2, w3 := philox4x32(uint32(b), uint32(b>>32), 0, 0, uint32(seed), uint32(seed>>32))
	return float64([4]uint32{w0, w1, w2, w3}[i%4]>>8) / (1 << 24)
}

// TestUniformStream checks UniformInto element by element against the
// stream's definition: sizes around the block and part boundaries (the
// largest split over the worker pool), offsets near the counter's wrap,
// and strided, transposed and sliced destinations, whose elements are
// numbered in row-major order of their shape.
func TestUniformStream(t *testing.T) {
	const seed = 0x0123456789abcdef
	for _, n := range []int{0, 1, 3, 4, 5, 13, philoxChunk - 1, philoxChunk + 5, 20001} {
		for _, offset := range []uint64{0, 7, math.MaxUint64 - 1} {
			got := UniformInto(Full(-1, n), seed, offset)
			bad := 0
			for i, v := range got.Data() {
				if want := streamUniform(seed, offset, i); float64(v) != want && bad < 3 {
					bad++
					t.Errorf("n=%d offset=%d: element %d = %v, want %v", n, offset, i, v, want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, kind := range []string{"transposed", "strided"} {
		dst := randLayout(r, kind, 3, 5, 7)
		UniformInto(dst, seed, 3)
		want := UniformInto(New(3, 5, 7), seed, 3)
		if !slices.Equal(dst.Contiguous().Data(), want.Data()) {
			t.Errorf("%s dst: %v, want the contiguous result %v", kind, dst.Contiguous().Data(), want.Data())
		}
	}
	// One element past a part boundary is the next op's first element.
	a := UniformInto(New(8), seed, 0).Data()
	b := UniformInto(New(4), seed, PhiloxBlocks(4)).Data()
	if !slices.Equal(a[4:], b) {
		t.Errorf("elements 4..8 at offset 0 = %v, elements 0..4 at offset 1 = %v", a[4:], b)
	}
	if PhiloxBlocks(0) != 0 || PhiloxBlocks(1) != 1 || PhiloxBlocks(4) != 1 || PhiloxBlocks(5) != 2 {
		t.Errorf("PhiloxBlocks(0, 1, 4, 5) = %d %d %d %d", PhiloxBlocks(0), PhiloxBlocks(1), PhiloxBlocks(4), PhiloxBlocks(5))
	}
}

// TestUniformDistribution checks 2²⁰ uniforms: all in [0, 1), their mean
// within 5 standard errors of 1/2, and a chi-square test over 64 bins
// (63 degrees of freedom: below 120 has probability 1 - 2·10⁻⁸).
func TestUniformDistribution(t *testing.T) {
	const n, bins = 1 << 20, 64
	u := UniformInto(New(n), 42, 0).Data()
	var sum float64
	var count [bins]int
	for _, v := range u {
		if !(v >= 0 && v < 1) {
			t.Fatalf("uniform %v outside [0, 1)", v)
		}
		sum += float64(v)
		count[int(v*bins)]++
	}
	if mean, se := sum/n, math.Sqrt(1.0/12/n); math.Abs(mean-0.5) > 5*se {
		t.Errorf("mean %v, want 0.5 ± %v", mean, 5*se)
	}
	var chi2 float64
	for _, c := range count {
		d := float64(c) - n/bins
		chi2 += d * d / (n / bins)
	}
	if chi2 > 120 {
		t.Errorf("chi-square %v over %d bins, want below 120", chi2, bins)
	}
}

// TestDropout checks Dropout: the share of dropped elements for several p
// (within 5 standard errors of p over 2²⁰ elements), the kept ones scaled
// by exactly 1/(1-p), the mask being the stream's (dropped exactly where
// the uniform is below p), reproducibility from the seed and offset, a NaN
// dropped to NaN (x times 0), p = 0 the identity, in place, strided
// operands, an empty tensor, and the panics.
func TestDropout(t *testing.T) {
	const n, seed = 1 << 20, 99
	x := Ones(n)
	for _, p := range []float32{0.1, 0.5, 0.9} {
		y := Dropout(x, p, seed, 11).Data()
		keep := 1 / (1 - p)
		dropped := 0
		for i, v := range y {
			u := streamUniform(seed, 11, i)
			switch {
			case u < float64(p) && v != 0, u >= float64(p) && v != keep:
				t.Fatalf("p=%v: element %d (uniform %v) = %v, want 0 or %v", p, i, u, v, keep)
			case v == 0:
				dropped++
			}
		}
		share, se := float64(dropped)/n, math.Sqrt(float64(p)*(1-float64(p))/n)
		if math.Abs(share-float64(p)) > 5*se {
			t.Errorf("p=%v: dropped %v of the elements, want %v ± %v", p, share, p, 5*se)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	a := RandN(r, 33, 17)
	want := Dropout(a, 0.3, seed, 5)
	if got := Dropout(a, 0.3, seed, 5); !slices.Equal(got.Data(), want.Data()) {
		t.Error("Dropout is not reproducible from its seed and offset")
	}
	if got := Dropout(a, 0.3, seed+1, 5); slices.Equal(got.Data(), want.Data()) {
		t.Error("Dropout with another seed gives the same result")
	}
	for i, v := range want.Data() {
		if w := a.Data()[i] * (1 / (1 - float32(0.3))); v != 0 && v != w {
			t.Fatalf("element %d = %v, want 0 or x·1/(1-p) = %v", i, v, w)
		}
	}
	if got := Dropout(a, 0, seed, 5); !slices.Equal(got.Data(), a.Data()) {
		t.Error("Dropout with p = 0 changed x")
	}
	nan := Full(float32(math.NaN()), 64)
	for i, v := range Dropout(nan, 0.5, seed, 0).Data() {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("a dropped NaN gave %v at %d, want NaN (x·0)", v, i)
		}
	}
	in := a.Clone()
	if DropoutInto(in, in, 0.3, seed, 5); !slices.Equal(in.Data(), want.Data()) {
		t.Error("DropoutInto in place differs from Dropout")
	}
	for _, kind := range []string{"transposed", "strided", "expanded"} {
		xs := randLayout(r, kind, 4, 6, 5)
		dst := randLayout(r, "strided", 4, 6, 5)
		DropoutInto(dst, xs, 0.4, seed, 9)
		if w := Dropout(xs.Contiguous(), 0.4, seed, 9); !slices.Equal(dst.Contiguous().Data(), w.Data()) {
			t.Errorf("%s x into a strided dst: %v, want %v", kind, dst.Contiguous().Data(), w.Data())
		}
	}
	if got := Dropout(New(0, 3), 0.5, seed, 0); !slices.Equal(got.Shape(), []int{0, 3}) {
		t.Errorf("empty Dropout has shape %v", got.Shape())
	}
	noAllocs(t, "DropoutInto", func() { DropoutInto(in, a, 0.3, seed, 5) })
	expectPanic(t, "tensor: Dropout: probability 1 outside [0, 1)", func() { Dropout(a, 1, 0, 0) })
	expectPanic(t, "tensor: Dropout: probability -0.5 outside [0, 1)", func() { Dropout(a, -0.5, 0, 0) })
	expectPanic(t, "tensor: DropoutInto: probability NaN outside [0, 1)", func() { DropoutInto(a, a, float32(math.NaN()), 0, 0) })
	expectPanic(t, "tensor: DropoutInto: dst of shape [17 33], x of shape [33 17]", func() { DropoutInto(New(17, 33), a, 0.5, 0, 0) })
	expectPanic(t, "tensor: DropoutInto: dst of shape [33 17] has a broadcast (stride 0) dimension 0", func() {
		DropoutInto(New(1, 17).BroadcastTo(33, 17), a, 0.5, 0, 0)
	})
	expectPanic(t, "tensor: UniformInto: nil tensor dst", func() { UniformInto(nil, 0, 0) })
}

// BenchmarkDropout is Dropout of a [64 256] activation (nn's Dropout
// layer on a Linear's output), in place.
func BenchmarkDropout(b *testing.B) {
	x := Ones(64, 256)
	b.SetBytes(4 * int64(x.Len()))
	for b.Loop() {
		DropoutInto(x, x, 0.5, 1, 0)
	}
}
