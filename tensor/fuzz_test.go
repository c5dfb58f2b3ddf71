package tensor

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// extremeConv are FuzzConv2D's extreme parameters, each refused by
// planConv or giving a small output: strides past any input, paddings
// whose padded plane is beyond MaxElems or overflows int, dilations whose
// kernel extent overflows int (or that a 1-tap kernel ignores).
var extremeConv = []func(p *ConvParams){
	func(p *ConvParams) { p.Stride = [2]int{math.MaxInt, math.MaxInt} },
	func(p *ConvParams) { p.Stride[1] = math.MaxInt - 1 },
	func(p *ConvParams) { p.Padding = [2]int{math.MaxInt >> 23, math.MaxInt >> 23} }, // 2⁴⁰-1 on 64-bit
	func(p *ConvParams) { p.Padding[0] = math.MaxInt / 2 },
	func(p *ConvParams) { p.Padding[1] = math.MaxInt },
	func(p *ConvParams) { p.Dilation = [2]int{math.MaxInt/2 + 1, 1} },
	func(p *ConvParams) { p.Dilation[1] = math.MaxInt },
}

// fuzzShape reads up to 4 dimensions of 0..5 from the fuzzer's bytes.
func fuzzShape(b []byte) []int {
	n := 0
	if len(b) > 0 {
		n = int(b[0]) % 5
	}
	s := make([]int, n)
	for i := range s {
		if 1+i < len(b) {
			s[i] = int(b[1+i]) % 6
		}
	}
	return s
}

// FuzzBroadcastAdd adds two tensors of fuzzed shapes (and layouts): either
// their broadcast matches NumPy's rule element by element, or Add panics
// with tensor's message because the shapes do not broadcast. Bits 4 and 5
// of kinds make a or b nil, which must panic naming the operand.
func FuzzBroadcastAdd(f *testing.F) {
	f.Add([]byte{2, 3, 4}, []byte{1, 4}, uint8(0), uint64(1))
	f.Add([]byte{3, 1, 2, 1}, []byte{2, 5, 1}, uint8(7), uint64(2))
	f.Add([]byte{0}, []byte{4, 0, 1, 2, 3}, uint8(3), uint64(3))
	f.Add([]byte{2, 3, 4}, []byte{1, 4}, uint8(16), uint64(4))    // nil a
	f.Add([]byte{1, 0}, []byte{2, 5, 0}, uint8(32+5), uint64(5))  // nil b
	f.Add([]byte{4, 0, 5, 5, 5}, []byte{0}, uint8(48), uint64(6)) // both nil: a named
	f.Fuzz(func(t *testing.T, as, bs []byte, kinds uint8, seed uint64) {
		sa, sb := fuzzShape(as), fuzzShape(bs)
		want, ok := BroadcastShape(sa, sb)
		r := rand.New(rand.NewPCG(seed, 1))
		a := randLayout(r, layouts[kinds%4], sa...)
		b := randLayout(r, layouts[kinds/4%4], sb...)
		if kinds&48 != 0 {
			wantMsg := "tensor: Add: nil tensor a"
			if kinds&16 != 0 {
				a = nil
			} else {
				b, wantMsg = nil, "tensor: Add: nil tensor b"
			}
			if kinds&32 != 0 {
				b = nil
			}
			if msg := panicOf(func() { Add(a, b) }); msg != wantMsg {
				t.Fatalf("Add with a nil operand: panic %q, want %q", msg, wantMsg)
			}
			return
		}
		if !ok {
			defer func() {
				if msg, _ := recover().(string); len(msg) < 12 || msg[:12] != "tensor: Add:" {
					t.Fatalf("Add(%v, %v) of shapes that do not broadcast: panic %q", sa, sb, msg)
				}
			}()
		}
		got := Add(a, b)
		if !ok {
			t.Fatalf("Add(%v, %v) did not panic", sa, sb)
		}
		checkAgainst(t, "Add", got, want, func(idx []int) float64 {
			return bcastAt(a, idx) + bcastAt(b, idx)
		}, func([]int) (float64, float64) { return 0x1p-24, 8 })
	})
}

// FuzzConv2D runs fuzzed convolutions (sizes, stride, padding, dilation,
// groups) against the float64 loop; invalid parameters must panic with
// tensor's message, never crash otherwise. Byte 14, when present, replaces
// one parameter by an extreme value (extremeConv): refused with tensor's
// message, or a small valid convolution checked as any other. Each valid
// one is also fused with a 2×2 max pooling (Conv2DMaxPool and its
// gradients), which must give the two operations' bits.
func FuzzConv2D(f *testing.F) {
	f.Add([]byte{1, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1}, uint64(1))
	f.Add([]byte{2, 4, 7, 6, 4, 2, 3, 2, 1, 0, 2, 2, 1, 2}, uint64(2))
	f.Add([]byte{1, 1, 1, 1, 1, 4, 4, 1, 1, 0, 0, 1, 1, 1}, uint64(3))
	for i := range extremeConv {
		f.Add([]byte{1, 2, 5, 5, 3, 3, 3, 1, 1, 2, 2, 1, 1, 0, byte(1 + i)}, uint64(4+i))
	}
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		v := func(i, mod int) int {
			if i < len(b) {
				return int(b[i]) % mod
			}
			return 0
		}
		groups := 1 + v(13, 3)
		xs := []int{v(0, 3), groups * v(1, 3), v(2, 9), v(3, 9)}
		ws := []int{groups * v(4, 3), v(1, 3), v(5, 5), v(6, 5)}
		p := ConvParams{Stride: [2]int{v(7, 4), v(8, 4)}, Padding: [2]int{v(9, 3), v(10, 3)},
			Dilation: [2]int{v(11, 3), v(12, 3)}, Groups: groups}
		if e := v(14, len(extremeConv)+1); e > 0 {
			extremeConv[e-1](&p)
		}
		r := rand.New(rand.NewPCG(seed, 2))
		x, w := RandN(r, xs...), RandN(r, ws...)
		var g convGeom
		func() {
			defer func() {
				if e := recover(); e != nil {
					if msg, _ := e.(string); len(msg) < 16 || msg[:16] != "tensor: Conv2D: " {
						t.Fatalf("Conv2D(%v, %v, %+v): panic %v", xs, ws, p, e)
					}
					g.n = -1
				}
			}()
			g = planConv("Conv2D", xs, ws, p)
		}()
		if g.n < 0 {
			return // rejected with tensor's message
		}
		got := Conv2D(x, w, nil, p)
		ref, sum := map[[4]int]float64{}, map[[4]int]float64{}
		(&convRef{g}).each(func(n, o, i, j, ci, ih, iw, u, vv int) {
			prod := float64(x.At(n, ci, ih, iw)) * float64(w.At(o, ci%g.cpg, u, vv))
			ref[[4]int{n, o, i, j}] += prod
			sum[[4]int{n, o, i, j}] += math.Abs(prod)
		})
		os := g.outShape()
		checkAgainst(t, "Conv2D", got, os[:], func(i []int) float64 { return ref[[4]int{i[0], i[1], i[2], i[3]}] },
			func(i []int) (float64, float64) {
				return float64(g.k+2) * 0x1p-24, sum[[4]int{i[0], i[1], i[2], i[3]}] + 1e-30
			})
		if os[2] < 2 || os[3] < 2 || got.Len() == 0 {
			return
		}
		// Fused with a 2×2 max pooling (and the ReLU): the same bits as
		// the two operations, gradients included.
		p.ReLU = true
		want, idx := MaxPool2D(Conv2D(x, w, nil, p), pool2)
		fused, fidx := Conv2DMaxPool(x, w, nil, p, pool2)
		sameBits(t, "Conv2DMaxPool", fused, want)
		sameBits(t, "Conv2DMaxPool indices", fidx, idx)
		dp := RandN(r, want.Shape()...)
		dy := MaxPool2DBackward(dp, idx, os[:], pool2)
		dx, dw := New(xs...), New(ws...)
		Conv2DMaxPoolBackwardInto(dx, dw, dp, idx, x, w, p, pool2)
		sameBits(t, "Conv2DMaxPoolBackward dx", dx, Conv2DBackwardInput(dy, w, xs, p))
		sameBits(t, "Conv2DMaxPoolBackward dw", dw, Conv2DBackwardWeight(dy, x, ws, p))
	})
}

// FuzzSlice slices a dimension of fuzzed length with fuzzed start, end and
// step, anywhere in int's range: the view must select Python's
// slice.indices elements (pySlice), or, for a step below 1, Slice must
// panic with tensor's message.
func FuzzSlice(f *testing.F) {
	f.Add(uint8(7), int64(0), int64(7), int64(1))
	f.Add(uint8(7), int64(math.MinInt64), int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(uint8(7), int64(-3), int64(math.MaxInt64), int64(math.MaxInt64-1))
	f.Add(uint8(0), int64(math.MinInt64), int64(math.MinInt64), int64(2))
	f.Add(uint8(5), int64(2), int64(1), int64(0))
	f.Add(uint8(9), int64(math.MaxInt64), int64(math.MinInt64), int64(-1))
	f.Fuzz(func(t *testing.T, d uint8, start, end, step int64) {
		n := int(d % 12)
		x := Arange(0, float64(2*n), 1).Reshape(2, n)
		if step < 1 {
			if msg := panicOf(func() { x.Slice(1, int(start), int(end), int(step)) }); !strings.HasPrefix(msg, "tensor: Slice: step") {
				t.Fatalf("Slice with step %d: panic %q", step, msg)
			}
			return
		}
		want := pySlice(n, int(start), int(end), int(step))
		got := x.Slice(1, int(start), int(end), int(step))
		if got.Dim(1) != len(want) {
			t.Fatalf("Slice(1, %d, %d, %d) of %d: %d elements, want %d", start, end, step, n, got.Dim(1), len(want))
		}
		c := got.Clone()
		for r := range 2 {
			for j, k := range want {
				if v := c.At(r, j); v != float32(r*n+k) {
					t.Fatalf("Slice(1, %d, %d, %d) of %d: element (%d, %d) = %v, want %v", start, end, step, n, r, j, v, r*n+k)
				}
			}
		}
	})
}
