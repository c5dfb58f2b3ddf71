package tensor

import (
	"github.com/lanesgo/lanes/internal/cputime"
	"math/rand/v2"
	"testing"
)

// TestDepthwiseConv2D checks the depthwise path (groups == input
// channels) and its gradients against convRef at every SIMD level: the
// channel multiplier, each stride combination (the merged Axpy, one Axpy
// per row, the scalar loops), dilation, padding wider than the kernel
// (the input gradient's complementary padding is then a crop), ReLU, and
// no images; and the flat weight gradient's masked planes and blocks.
func TestDepthwiseConv2D(t *testing.T) {
	cases := []convCase{
		{2, 3, 7, 9, 3, 3, 3, ConvParams{Groups: 3, Padding: [2]int{1, 1}}},
		{1, 4, 6, 5, 8, 3, 3, ConvParams{Groups: 4, Padding: [2]int{1, 1}, ReLU: true}}, // multiplier 2
		{2, 2, 9, 8, 6, 3, 2, ConvParams{Groups: 2, Stride: [2]int{2, 1}, Padding: [2]int{1, 0}}},
		{1, 3, 8, 9, 3, 3, 3, ConvParams{Groups: 3, Stride: [2]int{1, 2}, Padding: [2]int{1, 1}}},
		{2, 2, 10, 11, 4, 5, 3, ConvParams{Groups: 2, Stride: [2]int{3, 2}, Padding: [2]int{2, 1}, Dilation: [2]int{1, 2}}},
		{1, 2, 5, 6, 2, 3, 3, ConvParams{Groups: 2, Padding: [2]int{3, 4}}},                         // padding wider than the kernel
		{1, 2, 9, 9, 2, 3, 3, ConvParams{Groups: 2, Dilation: [2]int{3, 2}, Padding: [2]int{2, 1}}}, // dilated
		{3, 5, 1, 1, 5, 1, 1, ConvParams{Groups: 5}},
		{2, 4, 4, 4, 4, 4, 4, ConvParams{Groups: 4}}, // kernel = input
		{0, 3, 5, 5, 3, 3, 3, ConvParams{Groups: 3, Padding: [2]int{1, 1}}},
		{2, 16, 28, 28, 16, 3, 3, ConvParams{Groups: 16, Padding: [2]int{1, 1}}}, // parallel
		// The flat weight gradient: a partial block of output channels,
		// no row padding, rows padded past the kernel, dilation, and
		// column offsets as large as the width (taps of padding only).
		{2, 2, 7, 5, 18, 3, 3, ConvParams{Groups: 2, Padding: [2]int{1, 1}}},
		{2, 2, 6, 7, 2, 5, 5, ConvParams{Groups: 2, Padding: [2]int{0, 2}}},
		{1, 3, 5, 4, 3, 3, 5, ConvParams{Groups: 3, Padding: [2]int{3, 2}}},
		{2, 2, 9, 9, 4, 3, 3, ConvParams{Groups: 2, Padding: [2]int{2, 2}, Dilation: [2]int{2, 2}}},
		{1, 2, 3, 2, 4, 1, 5, ConvParams{Groups: 2, Padding: [2]int{0, 2}}},
	}
	atEveryLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(24, 2))
		for _, c := range cases {
			g := planConv("test", []int{c.n, c.cin, c.h, c.w}, []int{c.cout, 1, c.kh, c.kw}, c.p)
			if !g.isDepthwise() {
				t.Fatalf("%v: not on the depthwise path", c)
			}
			checkConv(t, r, c)
		}
	})
}

func TestDepthwiseConv2DAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	p := ConvParams{Groups: 8, Padding: [2]int{1, 1}}
	x, w, b := RandN(r, 4, 8, 12, 12), RandN(r, 8, 1, 3, 3), RandN(r, 8)
	dst, dy, dx, dw := New(4, 8, 12, 12), RandN(r, 4, 8, 12, 12), New(4, 8, 12, 12), New(8, 1, 3, 3)
	noAllocs(t, "Conv2DInto (depthwise)", func() { Conv2DInto(dst, x, w, b, p) })
	noAllocs(t, "Conv2DBackwardInputInto (depthwise)", func() { Conv2DBackwardInputInto(dx, dy, w, p) })
	noAllocs(t, "Conv2DBackwardWeightInto (depthwise)", func() { Conv2DBackwardWeightInto(dw, dy, x, p) })
}

// BenchmarkDepthwiseConv2D times the MobileNet block's 3×3 depthwise
// convolution (bench/torchref/depthwise.py prints PyTorch's figures under
// the same names), forward and forward+backward (input, weight and bias
// gradients), on the depthwise path and, as path=gemm, on the general one.
func BenchmarkDepthwiseConv2D(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := ConvParams{Groups: 256, Padding: [2]int{1, 1}}
	x, w, bias := RandN(r, 32, 256, 28, 28), RandN(r, 256, 1, 3, 3), RandN(r, 256)
	y, dy, dx, dw := New(32, 256, 28, 28), RandN(r, 32, 256, 28, 28), New(32, 256, 28, 28), New(256, 1, 3, 3)
	db := New(256)
	for _, path := range []string{"", "/path=gemm"} {
		depthwiseOn = path == ""
		b.Run("32x256x28x28/k3p1/fwd"+path, func(b *testing.B) {
			for b.Loop() {
				Conv2DInto(y, x, w, bias, p)
			}
		})
		b.Run("32x256x28x28/k3p1/fwd+bwd"+path, func(b *testing.B) {
			for b.Loop() {
				Conv2DInto(y, x, w, bias, p)
				Conv2DBackwardInputInto(dx, dy, w, p)
				Conv2DBackwardWeightInto(dw, dy, x, p)
				SumToInto(db.Reshape(256, 1, 1), dy)
			}
		})
	}
	depthwiseOn = true
}

// TestDepthwiseWeightCPU compares the depthwise weight gradient
// (8×64×28×28, 3×3 "same") on the flat path and row by row, by thread CPU
// time on one thread (LANES_CPUTIME=1 go test -run DepthwiseWeightCPU -v
// ./tensor/).
func TestDepthwiseWeightCPU(t *testing.T) {
	cputime.Need(t)
	defer func() { flatWeightOn = true }()
	r := rand.New(rand.NewPCG(1, 2))
	p := ConvParams{Padding: [2]int{1, 1}, Groups: 64}
	x, dy, dw := RandN(r, 8, 64, 28, 28), RandN(r, 8, 64, 28, 28), New(64, 1, 3, 3)
	on := func(flat bool) func() {
		return func() { flatWeightOn = flat; Conv2DBackwardWeightInto(dw, dy, x, p) }
	}
	cputime.Compare(t, 7, 5, cputime.Variant{Name: "depthwise/dw/flat", F: on(true)},
		cputime.Variant{Name: "depthwise/dw/rows", F: on(false)})
}
