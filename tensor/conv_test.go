package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// convCase is one convolution of the tests.
type convCase struct {
	n, cin, h, w, cout, kh, kw int
	p                          ConvParams
}

func (c convCase) String() string {
	return fmt.Sprintf("x=[%d %d %d %d] w=[%d %d %d %d] %+v", c.n, c.cin, c.h, c.w, c.cout, c.cin/max(c.p.Groups, 1), c.kh, c.kw, c.p)
}

// TestConvPaths checks that the fixed cases of randConvCases take the
// paths their comments name.
func TestConvPaths(t *testing.T) {
	cases := randConvCases(rand.New(rand.NewPCG(1, 1)), 0)
	for i, want := range map[int]struct {
		shifted, wT      bool
		imgs, spans, chk int
	}{
		3:  {imgs: 1, spans: 2, chk: 9}, // im2col in chunks
		4:  {shifted: true, imgs: 1, spans: 1, chk: 1},
		5:  {shifted: true, imgs: 1, spans: 1, chk: 1},
		6:  {shifted: true, imgs: 1, spans: 2, chk: 7}, // chunks: the weight gradient
		7:  {imgs: 4, spans: 2, chk: 1},
		8:  {shifted: true, imgs: 1, spans: 1, chk: 9},
		14: {wT: true, imgs: 2, spans: 1, chk: 1},
	} {
		c := cases[i]
		g := planConv("test", []int{c.n, c.cin, c.h, c.w}, []int{c.cout, c.cin / max(c.p.Groups, 1), c.kh, c.kw}, c.p)
		if g.shifted != want.shifted || g.wT != want.wT || g.imgs != want.imgs || g.spans != want.spans || g.chunks != want.chk {
			t.Errorf("case %d %v: shifted %v, wT %v, %d images in %d spans, %d chunks; want %+v", i, c, g.shifted, g.wT, g.imgs, g.spans, g.chunks, want)
		}
	}
}

// randConvCases returns fixed edge cases and random ones: strides,
// paddings and dilations 1..3, groups, kernels as large as the padded
// input, 1×1 kernels, images unrolled in several chunks (the last
// partial), and the shifted path with several row blocks.
func randConvCases(r *rand.Rand, count int) []convCase {
	cases := []convCase{
		{1, 1, 1, 1, 1, 1, 1, ConvParams{}},
		{2, 3, 5, 5, 4, 1, 1, ConvParams{}},                                                          // pointwise
		{2, 4, 5, 6, 6, 1, 1, ConvParams{Groups: 2}},                                                 // pointwise, grouped
		{2, 8, 61, 61, 3, 3, 3, ConvParams{Padding: [2]int{1, 1}}},                                   // im2col in chunks, the last partial
		{1, 32, 9, 11, 5, 3, 3, ConvParams{Padding: [2]int{1, 1}, ReLU: true}},                       // shifted
		{1, 64, 6, 7, 4, 2, 3, ConvParams{Padding: [2]int{2, 1}, Dilation: [2]int{2, 1}, Groups: 2}}, // shifted, grouped, dilated
		{2, 32, 20, 30, 3, 3, 3, ConvParams{Padding: [2]int{1, 1}, ReLU: true}},                      // shifted, two images
		{7, 16, 20, 20, 4, 3, 3, ConvParams{Padding: [2]int{1, 1}, ReLU: true}},                      // images side by side, 4 and then 3
		{1, 256, 7, 40, 2, 3, 3, ConvParams{Padding: [2]int{1, 1}}},                                  // shifted in row blocks, the last partial
		{2, 3, 7, 7, 2, 7, 7, ConvParams{Padding: [2]int{3, 3}, Stride: [2]int{2, 2}}},               // kernel = input
		{2, 1, 4, 9, 2, 2, 3, ConvParams{Stride: [2]int{3, 2}, Dilation: [2]int{2, 3}}},              // dilation, uneven strides
		{1, 6, 6, 6, 6, 3, 3, ConvParams{Groups: 6, Padding: [2]int{1, 1}, ReLU: true}},              // depthwise
		{1, 3, 9, 10, 4, 3, 3, ConvParams{Padding: [2]int{2, 2}, Dilation: [2]int{2, 2}}},            // same width, dilated: im2col and col2im in runs
		{2, 5, 6, 3, 3, 5, 3, ConvParams{Padding: [2]int{2, 1}}},                                     // same width, taps past a whole row
		{2, 1, 9, 9, 16, 3, 3, ConvParams{Padding: [2]int{1, 1}, ReLU: true}},                        // a first layer: weight gradient transposed (k < Cout)
		{2, 2, 6, 7, 24, 2, 2, ConvParams{Groups: 2, Stride: [2]int{2, 1}}},                          // transposed weight gradient, grouped
		{0, 2, 4, 4, 3, 3, 3, ConvParams{}},                                                          // no images
		{2, 2, 3, 3, 0, 3, 3, ConvParams{}},
		{2, 0, 3, 3, 2, 3, 3, ConvParams{ReLU: true}},                                               // no input channels: the bias alone                                                          // no filters
		{1, 2, 1, 1, 2, 3, 3, ConvParams{Padding: [2]int{1, 1}}},                                    // every tap but one in the padding
		{1, 2, 3, 8, 2, 1, 3, ConvParams{Padding: [2]int{0, 4}, Stride: [2]int{1, 4}}},              // padding wider than the kernel
		{2, 3, 9, 9, 4, 3, 3, ConvParams{Padding: [2]int{2, 0}, Dilation: [2]int{2, 1}, Groups: 1}}, // padding only on one axis
	}
	for len(cases) < count {
		groups := 1 + r.IntN(3)
		c := convCase{n: 1 + r.IntN(3), cin: groups * (1 + r.IntN(3)), h: 1 + r.IntN(12), w: 1 + r.IntN(12),
			cout: groups * (1 + r.IntN(3)), kh: 1 + r.IntN(4), kw: 1 + r.IntN(4)}
		c.p = ConvParams{Stride: [2]int{1 + r.IntN(3), 1 + r.IntN(3)}, Padding: [2]int{r.IntN(3), r.IntN(3)},
			Dilation: [2]int{1 + r.IntN(2), 1 + r.IntN(2)}, Groups: groups, ReLU: r.IntN(2) == 0}
		if c.h+2*c.p.Padding[0] < c.p.Dilation[0]*(c.kh-1)+1 || c.w+2*c.p.Padding[1] < c.p.Dilation[1]*(c.kw-1)+1 {
			continue
		}
		cases = append(cases, c)
	}
	return cases
}

// convRef is Conv2D and its gradients in float64, with Σ|term| per output
// for the error bound.
type convRef struct {
	g convGeom
}

// each calls f for every (output, input, weight) index triple of the sum.
func (c *convRef) each(f func(n, o, i, j, ci, ih, iw, u, v int)) {
	g := c.g
	for n := 0; n < g.n; n++ {
		for o := 0; o < g.cout; o++ {
			grp := o / g.opg
			for i := 0; i < g.oh; i++ {
				for j := 0; j < g.ow; j++ {
					for cc := 0; cc < g.cpg; cc++ {
						for u := 0; u < g.kh; u++ {
							for v := 0; v < g.kw; v++ {
								ih, iw := i*g.sh-g.ph+u*g.dh, j*g.sw-g.pw+v*g.dw
								if ih >= 0 && ih < g.h && iw >= 0 && iw < g.w {
									f(n, o, i, j, grp*g.cpg+cc, ih, iw, u, v)
								}
							}
						}
					}
				}
			}
		}
	}
}

// sums accumulates the products picked by at into want and |products| into scale.
type sums struct{ want, scale map[[4]int]float64 }

func newSums() sums { return sums{map[[4]int]float64{}, map[[4]int]float64{}} }

func (s sums) add(key [4]int, p float64) {
	s.want[key] += p
	s.scale[key] += math.Abs(p)
}

func (s sums) check(t *testing.T, what string, got *Tensor, shape []int, terms int, post func(key [4]int, v float64) float64) {
	t.Helper()
	tol := float64(terms+2) * 0x1p-24
	checkAgainst(t, what, got, shape,
		func(idx []int) float64 {
			k := [4]int{idx[0], idx[1], idx[2], idx[3]}
			return post(k, s.want[k])
		},
		func(idx []int) (float64, float64) {
			k := [4]int{idx[0], idx[1], idx[2], idx[3]}
			return tol, s.scale[k] + math.Abs(post(k, 0)) + 1e-30
		})
}

func TestConv2D(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range randConvCases(r, 60) {
		checkConv(t, r, c)
	}
}

// checkConv checks Conv2D and its gradients on case c against convRef,
// with operands in a layout drawn from r.
func checkConv(t *testing.T, r *rand.Rand, c convCase) {
	t.Helper()
	xs, ws := []int{c.n, c.cin, c.h, c.w}, []int{c.cout, c.cin / max(c.p.Groups, 1), c.kh, c.kw}
	g := planConv("test", xs, ws, c.p)
	os := g.outShape()
	out := os[:]
	kind := layouts[r.IntN(len(layouts))]
	x, w := randLayout(r, kind, xs...), randLayout(r, "contiguous", ws...)
	var bias *Tensor
	if r.IntN(2) == 0 {
		bias = RandN(r, c.cout)
	}
	dy := randLayout(r, kind, out...)
	ref := convRef{g}
	fw, dx, dw := newSums(), newSums(), newSums()
	ref.each(func(n, o, i, j, ci, ih, iw, u, v int) {
		xv, wv, dv := float64(x.At(n, ci, ih, iw)), float64(w.At(o, ci%g.cpg, u, v)), float64(dy.At(n, o, i, j))
		fw.add([4]int{n, o, i, j}, xv*wv)
		dx.add([4]int{n, ci, ih, iw}, dv*wv)
		dw.add([4]int{o, ci % g.cpg, u, v}, dv*xv)
	})
	t.Run(c.String()+"/"+kind, func(t *testing.T) {
		got := Conv2D(x, w, bias, c.p)
		fw.check(t, "Conv2D", got, out, g.k, func(k [4]int, v float64) float64 {
			if bias != nil {
				v += float64(bias.At(k[1]))
			}
			if c.p.ReLU {
				v = max(v, 0)
			}
			return v
		})
		none := func(_ [4]int, v float64) float64 { return v }
		dx.check(t, "Conv2DBackwardInput", Conv2DBackwardInput(dy, w, xs, c.p), xs, g.opg*g.kh*g.kw, none)
		dw.check(t, "Conv2DBackwardWeight", Conv2DBackwardWeight(dy, x, ws, c.p), ws, g.n*g.p, none)
		// Into a non-contiguous destination.
		dst := New(append(out[1:], g.n)...).Permute(3, 0, 1, 2)
		fw.check(t, "Conv2DInto (permuted dst)", Conv2DInto(dst, x, w, bias, c.p), out, g.k, func(k [4]int, v float64) float64 {
			if bias != nil {
				v += float64(bias.At(k[1]))
			}
			if c.p.ReLU {
				v = max(v, 0)
			}
			return v
		})
	})
}

// TestConv2DInPlace runs a 1×1 convolution whose output is its input.
func TestConv2DInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := RandN(r, 2, 3, 4, 5)
	w := RandN(r, 3, 3, 1, 1)
	want := Conv2D(x, w, nil, ConvParams{})
	Conv2DInto(x, x, w, nil, ConvParams{})
	for i, v := range want.Data() {
		if x.Data()[i] != v {
			t.Fatalf("in place: element %d is %v, want %v", i, x.Data()[i], v)
		}
	}
}

func TestConv2DPanics(t *testing.T) {
	x, w := New(1, 4, 5, 5), New(6, 2, 3, 3)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"rank", func() { Conv2D(New(4, 5, 5), w, nil, ConvParams{Groups: 2}) },
			"tensor: Conv2D: shapes [4 5 5] and [6 2 3 3]: want input [N, C, H, W] and weight [Cout, C/groups, kh, kw]"},
		{"channels", func() { Conv2D(x, w, nil, ConvParams{}) },
			"tensor: Conv2D: shapes [1 4 5 5] and [6 2 3 3]: 4 input channels, 1 groups and weight channels 2 do not agree"},
		{"extent", func() { Conv2D(x, New(6, 2, 3, 3), nil, ConvParams{Groups: 2, Dilation: [2]int{3, 1}}) },
			"tensor: Conv2D: shapes [1 4 5 5] and [6 2 3 3]: kernel extent 7x3 larger than the padded input 5x5"},
		{"stride", func() { Conv2D(x, w, nil, ConvParams{Groups: 2, Stride: [2]int{-1, 1}}) },
			"tensor: Conv2D: invalid parameters {Stride:[-1 1] Padding:[0 0] Dilation:[0 0] Groups:2 ReLU:false PaddingMode:constant}"},
		{"bias", func() { Conv2D(x, w, New(5), ConvParams{Groups: 2}) },
			"tensor: Conv2D: bias shape [5], want [6]"},
		{"dst", func() { Conv2DInto(New(1, 6, 3, 4), x, w, nil, ConvParams{Groups: 2}) },
			"tensor: Conv2DInto: shapes [1 4 5 5] and [6 2 3 3] give output [1 6 3 3], got [1 6 3 4]"},
		{"dy", func() { Conv2DBackwardInput(New(1, 6, 3, 4), w, []int{1, 4, 5, 5}, ConvParams{Groups: 2}) },
			"tensor: Conv2DBackwardInput: shapes [1 4 5 5] and [6 2 3 3] give output [1 6 3 3], got [1 6 3 4]"},
		{"broadcast dst", func() { Conv2DInto(New(1, 6, 3, 1).Expand(1, 6, 3, 3), x, w, nil, ConvParams{Groups: 2}) },
			"tensor: Conv2DInto: dst of shape [1 6 3 3] has a broadcast (stride 0) dimension 3"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectPanic(t, tc.want, tc.f) })
	}
}

func TestConv2DAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []convCase{
		{2, 16, 32, 32, 16, 3, 3, ConvParams{Padding: [2]int{1, 1}, ReLU: true}}, // one image per chunk, parallel
		{8, 8, 8, 8, 8, 3, 3, ConvParams{Padding: [2]int{1, 1}}},                 // several images per chunk
		{2, 8, 16, 16, 8, 1, 1, ConvParams{}},                                    // pointwise
	} {
		xs, ws := []int{c.n, c.cin, c.h, c.w}, []int{c.cout, c.cin, c.kh, c.kw}
		g := planConv("test", xs, ws, c.p)
		os := g.outShape()
		x, w, b := RandN(r, xs...), RandN(r, ws...), RandN(r, c.cout)
		dst, dy := New(os[:]...), RandN(r, os[:]...)
		dx, dw := New(xs...), New(ws...)
		noAllocs(t, fmt.Sprintf("%v: Conv2DInto", c), func() { Conv2DInto(dst, x, w, b, c.p) })
		noAllocs(t, fmt.Sprintf("%v: Conv2DBackwardInputInto", c), func() { Conv2DBackwardInputInto(dx, dy, w, c.p) })
		noAllocs(t, fmt.Sprintf("%v: Conv2DBackwardWeightInto", c), func() { Conv2DBackwardWeightInto(dw, dy, x, c.p) })
	}
}
