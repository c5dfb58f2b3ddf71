package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// convPoolCases are convolutions whose output a max pooling takes: the
// fused ones (2×2 pooling of whole images on the im2col path: FashionCNN's
// two layers, grouped and ungrouped images, odd outputs whose last row and
// column the pooling drops, groups, stride, dilation, no bias, no ReLU)
// and ones that fall back to the two operations (the shifted path, 1×1,
// depthwise, a pooling other than 2×2, reflect padding).
var convPoolCases = []struct {
	name  string
	x, w  []int
	p     ConvParams
	pool  PoolParams
	fused bool
}{
	{"fashion1", []int{5, 1, 28, 28}, []int{8, 1, 3, 3}, ConvParams{Padding: [2]int{1, 1}, ReLU: true}, pool2, true},
	{"fashion2", []int{6, 8, 14, 14}, []int{16, 8, 3, 3}, ConvParams{Padding: [2]int{1, 1}, ReLU: true}, pool2, true},
	{"odd", []int{3, 3, 9, 7}, []int{5, 3, 3, 3}, ConvParams{ReLU: true}, pool2, true},
	{"nobias", []int{2, 2, 10, 10}, []int{4, 2, 3, 3}, ConvParams{Padding: [2]int{1, 1}}, pool2, true},
	{"groups", []int{2, 4, 12, 12}, []int{6, 2, 3, 3}, ConvParams{Padding: [2]int{1, 1}, Groups: 2, ReLU: true}, pool2, true},
	{"stride", []int{2, 3, 17, 17}, []int{4, 3, 3, 3}, ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, ReLU: true}, pool2, true},
	{"dilated", []int{2, 2, 16, 16}, []int{3, 2, 3, 3}, ConvParams{Padding: [2]int{2, 2}, Dilation: [2]int{2, 2}, ReLU: true}, pool2, true},
	{"wide", []int{3, 1, 32, 32}, []int{4, 1, 5, 5}, ConvParams{Padding: [2]int{2, 2}, ReLU: true}, pool2, true},
	{"shifted", []int{2, 32, 24, 24}, []int{4, 32, 3, 3}, ConvParams{Padding: [2]int{1, 1}, ReLU: true}, pool2, false},
	{"pointwise", []int{2, 4, 8, 8}, []int{6, 4, 1, 1}, ConvParams{ReLU: true}, pool2, false},
	{"depthwise", []int{2, 4, 8, 8}, []int{4, 1, 3, 3}, ConvParams{Padding: [2]int{1, 1}, Groups: 4, ReLU: true}, pool2, false},
	{"pool3", []int{2, 2, 12, 12}, []int{4, 2, 3, 3}, ConvParams{Padding: [2]int{1, 1}, ReLU: true}, PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}}, false},
	{"reflect", []int{2, 2, 8, 8}, []int{4, 2, 3, 3}, ConvParams{Padding: [2]int{1, 1}, ReLU: true, PaddingMode: PadReflect}, pool2, false},
}

var pool2 = PoolParams{Kernel: [2]int{2, 2}}

// TestConv2DMaxPool checks Conv2DMaxPoolInto and Conv2DMaxPoolBackwardInto
// against the operations they fuse, bit for bit (values, indices, both
// gradients), on one and two threads, into contiguous and strided
// outputs, with ties (a quarter of the input rounded to few values, so
// that windows hold equal maxima and ReLU zeros) and a NaN.
func TestConv2DMaxPool(t *testing.T) {
	for _, threads := range []int{1, 2} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(threads))
		for _, c := range convPoolCases {
			t.Run(fmt.Sprintf("%s/threads=%d", c.name, threads), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(threads), 7))
				x, w, b := RandN(r, c.x...), RandN(r, c.w...), RandN(r, c.w[0])
				xd := x.Data()
				for i := range xd {
					if i%4 == 0 {
						xd[i] = float32(math.Round(float64(xd[i])))
					}
				}
				xd[len(xd)/3] = float32(math.NaN())
				if c.name == "nobias" {
					b = nil
				}
				g := planConv("test", c.x, c.w, c.p)
				ys := g.outShape()
				pg := planPool("test", ys[:], c.pool)
				if got := g.poolFused(&pg, c.p); got != c.fused {
					t.Fatalf("poolFused = %v, want %v", got, c.fused)
				}
				if got := Conv2DMaxPoolFuses(x, w, c.p, c.pool); got != c.fused {
					t.Fatalf("Conv2DMaxPoolFuses = %v, want %v", got, c.fused)
				}
				y := Conv2D(x, w, b, c.p)
				want, wantIdx := MaxPool2D(y, c.pool)
				if s := Conv2DMaxPoolShape(x, w, c.p, c.pool); s != [4]int(want.Shape()) {
					t.Fatalf("Conv2DMaxPoolShape = %v, want %v", s, want.Shape())
				}
				for _, layout := range []string{"contiguous", "strided"} {
					dst, idx := New(want.Shape()...), New(want.Shape()...)
					if layout == "strided" {
						dst, idx = stridedDst(r, want.Shape()...), stridedDst(r, want.Shape()...)
					}
					Conv2DMaxPoolInto(dst, idx, x, w, b, c.p, c.pool)
					sameBits(t, layout+" output", dst, want)
					sameBits(t, layout+" indices", idx, wantIdx)
				}
				dst := New(want.Shape()...)
				Conv2DMaxPoolInto(dst, nil, x, w, b, c.p, c.pool)
				sameBits(t, "output without indices", dst, want)

				dp := RandN(r, want.Shape()...)
				dy := MaxPool2DBackward(dp, wantIdx, ys[:], c.pool)
				wantDx, wantDw := Conv2DBackwardInput(dy, w, c.x, c.p), Conv2DBackwardWeight(dy, x, c.w, c.p)
				for _, layout := range []string{"contiguous", "strided"} {
					dx, dw := New(c.x...), New(c.w...)
					if layout == "strided" {
						dx, dw = stridedDst(r, c.x...), stridedDst(r, c.w...)
					}
					Conv2DMaxPoolBackwardInto(dx, dw, dp, wantIdx, x, w, c.p, c.pool)
					sameBits(t, layout+" dx", dx, wantDx)
					sameBits(t, layout+" dw", dw, wantDw)
				}
				dw := New(c.w...)
				Conv2DMaxPoolBackwardInto(nil, dw, dp, wantIdx, x, w, c.p, c.pool)
				sameBits(t, "dw alone", dw, wantDw)
				if c.fused {
					dx, idx := New(c.x...), New(want.Shape()...)
					noAllocs(t, "Conv2DMaxPoolInto", func() { Conv2DMaxPoolInto(dst, idx, x, w, b, c.p, c.pool) })
					noAllocs(t, "Conv2DMaxPoolBackwardInto", func() { Conv2DMaxPoolBackwardInto(dx, dw, dp, wantIdx, x, w, c.p, c.pool) })
				}
			})
		}
	}
}

// TestConv2DMaxPoolMisuse: wrong shapes, overlapping outputs and invalid
// indices panic naming the op; an input overlapping the output is read
// before it is written.
func TestConv2DMaxPoolMisuse(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p := ConvParams{Padding: [2]int{1, 1}, ReLU: true}
	x, w := RandN(r, 2, 1, 8, 8), RandN(r, 4, 1, 3, 3)
	expectPanic(t, "tensor: Conv2DMaxPoolInto: shapes [2 1 8 8] and [4 1 3 3] give output [2 4 4 4], got [2 4 8 8]", func() {
		Conv2DMaxPoolInto(New(2, 4, 8, 8), nil, x, w, nil, p, pool2)
	})
	both := make([]float32, 129)
	expectPanic(t, "tensor: Conv2DMaxPoolInto: dst [2 4 4 4] and indices [2 4 4 4] overlap", func() {
		Conv2DMaxPoolInto(FromSlice(both[:128], 2, 4, 4, 4), FromSlice(both[1:], 2, 4, 4, 4), x, w, nil, p, pool2)
	})
	dst, idx := Conv2DMaxPool(x, w, nil, p, pool2)
	bad := idx.Clone()
	bad.Data()[5] = 99
	expectPanic(t, "tensor: Conv2DMaxPoolBackward: index 99 is not an element of an input plane of 64", func() {
		Conv2DMaxPoolBackwardInto(New(2, 1, 8, 8), New(4, 1, 3, 3), dst, bad, x, w, p, pool2)
	})
	grads := make([]float32, 136)
	expectPanic(t, "tensor: Conv2DMaxPoolBackward: dx [2 1 8 8] and dw [4 1 3 3] overlap", func() {
		Conv2DMaxPoolBackwardInto(FromSlice(grads[:128], 2, 1, 8, 8), FromSlice(grads[100:], 4, 1, 3, 3), dst, idx, x, w, p, pool2)
	})

	// dst over x's storage: the result is still the pooling of x's
	// convolution.
	store := make([]float32, 2*4*6*6)
	xin := FromSlice(store, 2, 4, 6, 6)
	copy(store, RandN(r, 2, 4, 6, 6).Data())
	w2 := RandN(r, 4, 4, 3, 3)
	want, _ := MaxPool2D(Conv2D(xin.Clone(), w2, nil, p), pool2)
	dstOver := FromSlice(store[:2*4*3*3], 2, 4, 3, 3)
	Conv2DMaxPoolInto(dstOver, nil, xin, w2, nil, p, pool2)
	sameBits(t, "dst overlapping x", dstOver, want)
}
