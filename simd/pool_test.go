package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// refMaxPool2x2 is MaxPool2x2 written out: each window in row-major order,
// a later element winning only when it is greater (in float64) or a NaN
// while the best so far is not.
func refMaxPool2x2(x []float32, h, w int) (vals, idx []float32) {
	oh, ow := h/2, w/2
	vals, idx = make([]float32, oh*ow), make([]float32, oh*ow)
	for i := range oh {
		for j := range ow {
			at := 2*i*w + 2*j
			for _, k := range []int{2*i*w + 2*j + 1, (2*i+1)*w + 2*j, (2*i+1)*w + 2*j + 1} {
				if isNaN32(x[at]) {
					break
				}
				if isNaN32(x[k]) || float64(x[k]) > float64(x[at]) {
					at = k
				}
			}
			vals[i*ow+j], idx[i*ow+j] = x[at], float32(at)
		}
	}
	return vals, idx
}

// checkMaxPool2x2 runs MaxPool2x2 into guarded outputs and compares them
// bit for bit (NaN payloads included: values are copied) with the reference.
func checkMaxPool2x2(t *testing.T, x []float32, h, w int, what string) {
	t.Helper()
	want, wantIdx := refMaxPool2x2(x, h, w)
	n := len(want)
	for _, skip := range []string{"", "dst", "idx"} {
		d, ix := newGuarded(n, 1+n%3), newGuarded(n, 2)
		dst, idx := d.s(), ix.s()
		switch skip {
		case "dst":
			dst = nil
		case "idx":
			idx = nil
		}
		MaxPool2x2(dst, idx, x, h, w)
		if skip == "" {
			checkMaxUnpool2x2(t, idx, h, w, what)
		}
		d.check(t, what+" dst")
		ix.check(t, what+" idx")
		for o := range n {
			if dst != nil && math.Float32bits(dst[o]) != math.Float32bits(want[o]) {
				t.Fatalf("%s (skip %q): dst[%d] = %v (%#x), want %v (%#x)", what, skip, o, dst[o], math.Float32bits(dst[o]), want[o], math.Float32bits(want[o]))
			}
			if idx != nil && idx[o] != wantIdx[o] {
				t.Fatalf("%s (skip %q): idx[%d] = %v, want %v (window values %v)", what, skip, o, idx[o], wantIdx[o], window(x, w, o, w/2))
			}
		}
	}
}

// checkMaxUnpool2x2 unpools dy (values with specials) through idx, which
// MaxPool2x2 wrote, into a guarded dx that starts full of garbage, and
// compares bit for bit; then it moves one index out of its window and
// expects false.
func checkMaxUnpool2x2(t *testing.T, idx []float32, h, w int, what string) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(h), uint64(w)))
	dy := make([]float32, len(idx))
	fill(r, dy, 5, 3)
	g := newGuarded(h*w, 3)
	dx := g.s()
	for i := range dx {
		dx[i] = 42
	}
	if !MaxUnpool2x2(dx, dy, idx, h, w) {
		t.Fatalf("%s: MaxUnpool2x2 refused MaxPool2x2's indices", what)
	}
	g.check(t, what+" unpool dx")
	want := make([]float32, h*w)
	for o, k := range idx {
		want[int(k)] = dy[o]
	}
	for i := range dx {
		if math.Float32bits(dx[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: unpool dx[%d] = %v, want %v", what, i, dx[i], want[i])
		}
	}
	if len(idx) == 0 {
		return
	}
	o := r.IntN(len(idx))
	ow := w / 2
	base := float32(2*(o/ow)*w + 2*(o%ow))
	bad := append([]float32(nil), idx...)
	for _, v := range []float32{base - 1, base + 2, base + float32(2*w), float32(math.NaN()), base + 0.5, -1, 1e30} {
		if v == base || v == base+1 || v == base+float32(w) || v == base+float32(w+1) {
			continue
		}
		bad[o] = v
		if MaxUnpool2x2(dx, dy, bad, h, w) {
			t.Fatalf("%s: MaxUnpool2x2 accepted index %v for window %d (first element %v)", what, v, o, base)
		}
	}
}

func window(x []float32, w, o, ow int) []float32 {
	i, j := o/ow, o%ow
	return []float32{x[2*i*w+2*j], x[2*i*w+2*j+1], x[(2*i+1)*w+2*j], x[(2*i+1)*w+2*j+1]}
}

func TestMaxPool2x2(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	// ties draws from few values so that equal maxima, -0 against +0 and
	// several NaNs per window are common.
	ties := []float32{-1, 0, float32(math.Copysign(0, -1)), 1, float32(math.NaN()), math.Float32frombits(0x7fc00123), float32(math.Inf(-1)), 3e-42}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		var shapes [][2]int
		for h := 0; h <= 5; h++ {
			for w := 0; w <= 70; w++ {
				shapes = append(shapes, [2]int{h, w})
			}
		}
		shapes = append(shapes, [2]int{28, 28}, [2]int{14, 14}, [2]int{57, 113}, [2]int{224, 224})
		for _, s := range shapes {
			h, w := s[0], s[1]
			for mode := range 3 {
				buf := make([]float32, h*w+3)
				x := buf[mode : mode+h*w] // unaligned starts
				switch mode {
				case 0:
					fill(r, x, 10, 0)
				case 1:
					fill(r, x, 10, 5)
				case 2:
					for i := range x {
						x[i] = ties[r.IntN(len(ties))]
					}
				}
				checkMaxPool2x2(t, x, h, w, fmt.Sprintf("%v %dx%d mode %d", l, h, w, mode))
			}
		}
	})
}

func TestMaxPool2x2Panics(t *testing.T) {
	x := make([]float32, 12)
	expectPanic(t, "simd: MaxPool2x2: len(x) = 12, want h·w = 3·5", func() { MaxPool2x2(nil, nil, x, 3, 5) })
	expectPanic(t, "simd: MaxPool2x2: len(dst) = 3, want (h/2)·(w/2) = 2 for a 3×4 plane", func() { MaxPool2x2(make([]float32, 3), nil, x, 3, 4) })
	expectPanic(t, "simd: MaxPool2x2: len(idx) = 1, want (h/2)·(w/2) = 2 for a 3×4 plane", func() { MaxPool2x2(nil, make([]float32, 1), x, 3, 4) })
	expectPanic(t, "simd: MaxPool2x2: len(x) = 12, want h·w = -3·-4", func() { MaxPool2x2(nil, nil, x, -3, -4) })
	expectPanic(t, "indices from 2²⁴ on are not exact", func() { MaxPool2x2(nil, nil, make([]float32, 1<<24), 1<<12, 1<<12) })
	expectPanic(t, "simd: MaxUnpool2x2: len(dx) = 12, want h·w = 3·5", func() { MaxUnpool2x2(x, nil, nil, 3, 5) })
	expectPanic(t, "simd: MaxUnpool2x2: len(dy) = 2, len(idx) = 1, want (h/2)·(w/2) = 2 for a 3×4 plane", func() { MaxUnpool2x2(x, make([]float32, 2), make([]float32, 1), 3, 4) })
}

func TestMaxPool2x2NoAlloc(t *testing.T) {
	x, dst, idx := make([]float32, 28*28), make([]float32, 14*14), make([]float32, 14*14)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		if n := testing.AllocsPerRun(20, func() { MaxPool2x2(dst, idx, x, 28, 28) }); n != 0 {
			t.Errorf("MaxPool2x2: %v allocations per call", n)
		}
		if n := testing.AllocsPerRun(20, func() { MaxUnpool2x2(x, dst, idx, 28, 28) }); n != 0 {
			t.Errorf("MaxUnpool2x2: %v allocations per call", n)
		}
	})
}

func TestPoolTablesComplete(t *testing.T) {
	for l := range dispatch.NumLevels {
		if k := pool.at(dispatch.Level(l)); k != nil && (k.maxPool2x2 == nil || k.maxUnpool2x2 == nil) {
			t.Errorf("level %v: pool table has a nil kernel", dispatch.Level(l))
		}
	}
}

// FuzzMaxPool2x2 compares every level with the reference on arbitrary bits
// and plane widths.
func FuzzMaxPool2x2(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef0123456789abcdef"), uint8(4))
	f.Add(make([]byte, 400), uint8(33))
	f.Fuzz(func(t *testing.T, data []byte, wb uint8) {
		x := floatsFromBytes(data)
		w := 1 + int(wb)%70
		h := len(x) / w
		x = x[:h*w]
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			checkMaxPool2x2(t, x, h, w, fmt.Sprintf("%v %dx%d", l, h, w))
		})
	})
}

func BenchmarkMaxPool2x2(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, l := range dispatch.Levels() {
		for _, hw := range []int{28, 14, 112} {
			x := make([]float32, hw*hw)
			fill(r, x, 1, 0)
			dst, idx := make([]float32, hw*hw/4), make([]float32, hw*hw/4)
			b.Run(fmt.Sprintf("%v/%dx%d", l, hw, hw), func(b *testing.B) {
				dispatch.SetLevel(l)
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					MaxPool2x2(dst, idx, x, hw, hw)
				}
			})
			b.Run(fmt.Sprintf("%v/unpool/%dx%d", l, hw, hw), func(b *testing.B) {
				dispatch.SetLevel(l)
				b.SetBytes(int64(4 * len(x)))
				for b.Loop() {
					MaxUnpool2x2(x, dst, idx, hw, hw)
				}
			})
		}
	}
}

// TestMaxPool2x2OverflowingPlane gives MaxPool2x2 and MaxUnpool2x2 an h×w
// whose product wraps round int to len(x) = 16 while (h/2)·(w/2) wraps to
// 4: it must panic naming the sizes, at every level, and write nothing.
// (Before, AVX-512 ran with w ≈ 7.4·10¹⁸ and faulted.)
func TestMaxPool2x2OverflowingPlane(t *testing.T) {
	const h, w = 10, 7378697629483820648 // h·w = 16 and (h/2)·(w/2) = 4 mod 2⁶⁴
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		x := make([]float32, 16)
		dst, idx := newGuarded(4, 1), newGuarded(4, 2)
		expectPanic(t, "simd: MaxPool2x2: len(x) = 16, want h·w = 10·7378697629483820648, which is negative or overflows int", func() {
			MaxPool2x2(dst.s(), idx.s(), x, h, w)
		})
		dst.check(t, "MaxPool2x2 dst")
		idx.check(t, "MaxPool2x2 idx")
		dx := newGuarded(16, 3)
		expectPanic(t, "simd: MaxUnpool2x2: len(dx) = 16, want h·w = 10·7378697629483820648, which is negative or overflows int", func() {
			MaxUnpool2x2(dx.s(), make([]float32, 4), make([]float32, 4), h, w)
		})
		dx.check(t, "MaxUnpool2x2 dx")
	})
}
