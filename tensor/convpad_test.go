package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// padSource is the input coordinate that padded coordinate c (padding pad
// on each side of n) reads in mode, by the modes' definitions.
func padSource(c, pad, n int, mode PadMode) int {
	c -= pad
	switch {
	case c >= 0 && c < n:
		return c
	case mode == PadReflect && c < 0:
		return -c
	case mode == PadReflect:
		return 2*(n-1) - c
	case mode == PadReplicate:
		return min(max(c, 0), n-1)
	}
	return (c + n) % n // circular, |c| <= n
}

// TestConv2DPaddingModes checks Conv2D and its gradients with reflect,
// replicate and circular padding against a float64 loop that reads the
// input through padSource (the gradients add into every element read).
func TestConv2DPaddingModes(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 4))
	for _, c := range []convCase{
		{2, 3, 5, 6, 4, 3, 3, ConvParams{Padding: [2]int{1, 1}}},
		{1, 2, 6, 5, 3, 3, 2, ConvParams{Padding: [2]int{2, 1}, Stride: [2]int{2, 1}}},
		{1, 4, 5, 5, 4, 3, 3, ConvParams{Padding: [2]int{1, 2}, Groups: 4, ReLU: true}}, // depthwise
		{2, 2, 4, 4, 2, 2, 2, ConvParams{Padding: [2]int{0, 1}, Dilation: [2]int{2, 1}}},
	} {
		for _, mode := range []PadMode{PadReflect, PadReplicate, PadCircular} {
			p := c.p
			p.PaddingMode = mode
			xs, ws := []int{c.n, c.cin, c.h, c.w}, []int{c.cout, c.cin / max(p.Groups, 1), c.kh, c.kw}
			q := p
			q.Padding = [2]int{}
			g := planConv("test", []int{c.n, c.cin, c.h + 2*p.Padding[0], c.w + 2*p.Padding[1]}, ws, q)
			os := g.outShape()
			out := os[:]
			x, w, bias, dy := RandN(r, xs...), RandN(r, ws...), RandN(r, c.cout), RandN(r, out...)
			fw, dx, dw := newSums(), newSums(), newSums()
			ref := convRef{g}
			ref.each(func(n, o, i, j, ci, ih, iw, u, v int) {
				sh, sw := padSource(ih, p.Padding[0], c.h, mode), padSource(iw, p.Padding[1], c.w, mode)
				xv, wv, dv := float64(x.At(n, ci, sh, sw)), float64(w.At(o, ci%g.cpg, u, v)), float64(dy.At(n, o, i, j))
				fw.add([4]int{n, o, i, j}, xv*wv)
				dx.add([4]int{n, ci, sh, sw}, dv*wv)
				dw.add([4]int{o, ci % g.cpg, u, v}, dv*xv)
			})
			t.Run(fmt.Sprintf("%v/%v", c, mode), func(t *testing.T) {
				fw.check(t, "Conv2D", Conv2D(x, w, bias, p), out, g.k, func(k [4]int, v float64) float64 {
					v += float64(bias.At(k[1]))
					if p.ReLU {
						v = max(v, 0)
					}
					return v
				})
				none := func(_ [4]int, v float64) float64 { return v }
				// An element read by several taps sums more terms than
				// opg·kh·kw; a 2x bound covers these sizes.
				dx.check(t, "Conv2DBackwardInput", Conv2DBackwardInput(dy, w, xs, p), xs, 2*g.opg*g.kh*g.kw, none)
				dw.check(t, "Conv2DBackwardWeight", Conv2DBackwardWeight(dy, x, ws, p), ws, g.n*g.p, none)
			})
		}
	}
	expectPanic(t, "tensor: Conv2D: unknown padding mode PadMode(9)", func() {
		Conv2D(New(1, 1, 3, 3), New(1, 1, 1, 1), nil, ConvParams{PaddingMode: 9})
	})
	expectPanic(t, "tensor: Conv2D: input of shape [1 1 3 3]: reflect pads (3, 3) too large for axis 3 of size 3", func() {
		Conv2D(New(1, 1, 3, 3), New(1, 1, 1, 1), nil, ConvParams{Padding: [2]int{3, 3}, PaddingMode: PadReflect})
	})
}
