package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

type convTransposeCase struct {
	n, cin, h, w, cout, kh, kw int
	p                          ConvTransposeParams
}

func (c convTransposeCase) String() string {
	return fmt.Sprintf("x=[%d %d %d %d] w=[%d %d %d %d] %+v", c.n, c.cin, c.h, c.w, c.cin, c.cout/max(c.p.Groups, 1), c.kh, c.kw, c.p)
}

// TestConvTranspose2D checks the forward and both gradients against a
// float64 loop over the definition (each input element scattered through
// the kernel), on fixed edge cases and random ones.
func TestConvTranspose2D(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	cases := []convTransposeCase{
		{1, 1, 1, 1, 1, 1, 1, ConvTransposeParams{}},
		{2, 3, 4, 5, 2, 3, 3, ConvTransposeParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 1}}},
		{1, 4, 3, 3, 6, 2, 3, ConvTransposeParams{Stride: [2]int{3, 2}, Groups: 2}},
		{2, 2, 4, 3, 2, 3, 2, ConvTransposeParams{Dilation: [2]int{2, 3}, OutputPadding: [2]int{1, 2}}}, // output padding >= stride: x extended
		{1, 3, 5, 5, 3, 3, 3, ConvTransposeParams{Padding: [2]int{1, 1}, Groups: 3}},                    // depthwise
		{0, 2, 3, 3, 4, 3, 3, ConvTransposeParams{Stride: [2]int{2, 2}}},                                // no images
		{2, 0, 3, 3, 0, 3, 3, ConvTransposeParams{}},                                                    // no channels
		{1, 2, 2, 2, 3, 5, 5, ConvTransposeParams{Padding: [2]int{2, 2}, Stride: [2]int{1, 1}}},         // padding crops
		{1, 16, 6, 7, 8, 3, 3, ConvTransposeParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 0}}},
	}
	for len(cases) < 40 {
		groups := 1 + r.IntN(3)
		c := convTransposeCase{n: 1 + r.IntN(2), cin: groups * (1 + r.IntN(3)), h: 1 + r.IntN(6), w: 1 + r.IntN(6),
			cout: groups * (1 + r.IntN(3)), kh: 1 + r.IntN(4), kw: 1 + r.IntN(4)}
		c.p = ConvTransposeParams{Stride: [2]int{1 + r.IntN(3), 1 + r.IntN(3)}, Padding: [2]int{r.IntN(3), r.IntN(3)},
			Dilation: [2]int{1 + r.IntN(2), 1 + r.IntN(2)}, Groups: groups}
		for a := range 2 {
			c.p.OutputPadding[a] = r.IntN(max(c.p.Stride[a], c.p.Dilation[a]))
		}
		ok := func() (ok bool) {
			defer func() { ok = recover() == nil }()
			planConvTranspose("test", []int{c.n, c.cin, c.h, c.w}, []int{c.cin, c.cout / groups, c.kh, c.kw}, c.p)
			return
		}()
		if ok {
			cases = append(cases, c)
		}
	}
	for _, c := range cases {
		groups := max(c.p.Groups, 1)
		xs, ws := []int{c.n, c.cin, c.h, c.w}, []int{c.cin, c.cout / groups, c.kh, c.kw}
		g := planConvTranspose("test", xs, ws, c.p)
		out := g.out[:]
		kind := layouts[r.IntN(len(layouts))]
		x, w, dy := randLayout(r, kind, xs...), randLayout(r, "contiguous", ws...), randLayout(r, kind, out...)
		var bias *Tensor
		if r.IntN(2) == 0 {
			bias = RandN(r, c.cout)
		}
		s, d := [2]int{max(c.p.Stride[0], 1), max(c.p.Stride[1], 1)}, [2]int{max(c.p.Dilation[0], 1), max(c.p.Dilation[1], 1)}
		cpg, opg := c.cin/groups, c.cout/groups
		fw, dx, dw := newSums(), newSums(), newSums()
		for n := range c.n {
			for ci := range c.cin {
				for i := range c.h {
					for j := range c.w {
						for oo := range opg {
							o := ci/cpg*opg + oo
							for u := range c.kh {
								for v := range c.kw {
									oi, oj := i*s[0]-c.p.Padding[0]+u*d[0], j*s[1]-c.p.Padding[1]+v*d[1]
									if oi < 0 || oi >= out[2] || oj < 0 || oj >= out[3] {
										continue
									}
									xv, wv, dv := float64(x.At(n, ci, i, j)), float64(w.At(ci, oo, u, v)), float64(dy.At(n, o, oi, oj))
									fw.add([4]int{n, o, oi, oj}, xv*wv)
									dx.add([4]int{n, ci, i, j}, dv*wv)
									dw.add([4]int{ci, oo, u, v}, dv*xv)
								}
							}
						}
					}
				}
			}
		}
		t.Run(c.String()+"/"+kind, func(t *testing.T) {
			withBias := func(k [4]int, v float64) float64 {
				if bias != nil {
					v += float64(bias.At(k[1]))
				}
				return v
			}
			none := func(_ [4]int, v float64) float64 { return v }
			fw.check(t, "ConvTranspose2D", ConvTranspose2D(x, w, bias, c.p), out, cpg*c.kh*c.kw, withBias)
			dst := New(append(out[1:], out[0])...).Permute(3, 0, 1, 2)
			fw.check(t, "ConvTranspose2DInto (permuted dst)", ConvTranspose2DInto(dst, x, w, bias, c.p), out, cpg*c.kh*c.kw, withBias)
			dx.check(t, "ConvTranspose2DBackwardInput", ConvTranspose2DBackwardInput(dy, w, xs, c.p), xs, opg*c.kh*c.kw, none)
			dw.check(t, "ConvTranspose2DBackwardWeight", ConvTranspose2DBackwardWeight(dy, x, ws, c.p), ws, c.n*c.h*c.w, none)
		})
	}
}

func TestConvTranspose2DPanics(t *testing.T) {
	x, w := New(1, 4, 5, 5), New(4, 3, 3, 3)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"rank", func() { ConvTranspose2D(New(4, 5, 5), w, nil, ConvTransposeParams{}) },
			"tensor: ConvTranspose2D: shapes [4 5 5] and [4 3 3 3]: want input [N, Cin, H, W] and weight [Cin, Cout/groups, kh, kw]"},
		{"channels", func() { ConvTranspose2D(New(1, 3, 5, 5), w, nil, ConvTransposeParams{}) },
			"tensor: ConvTranspose2D: shapes [1 3 5 5] and [4 3 3 3]: 3 input channels, 1 groups and weight [Cin, Cout/groups, kh, kw] do not agree"},
		{"groups", func() { ConvTranspose2D(x, w, nil, ConvTransposeParams{Groups: 3}) },
			"tensor: ConvTranspose2D: shapes [1 4 5 5] and [4 3 3 3]: 4 input channels, 3 groups and weight [Cin, Cout/groups, kh, kw] do not agree"},
		{"output padding", func() {
			ConvTranspose2D(x, w, nil, ConvTransposeParams{Stride: [2]int{2, 2}, OutputPadding: [2]int{2, 0}})
		},
			"tensor: ConvTranspose2D: invalid parameters {Stride:[2 2] Padding:[0 0] OutputPadding:[2 0] Dilation:[0 0] Groups:0} (output padding must be smaller than the stride or the dilation)"},
		{"too much padding", func() { ConvTranspose2D(x, w, nil, ConvTransposeParams{Padding: [2]int{4, 0}}) },
			"tensor: ConvTranspose2D: shapes [1 4 5 5] and [4 3 3 3] with {Stride:[0 0] Padding:[4 0] OutputPadding:[0 0] Dilation:[0 0] Groups:0} give an output size -1 < 1"},
		{"bias", func() { ConvTranspose2D(x, w, New(4), ConvTransposeParams{}) },
			"tensor: ConvTranspose2D: bias shape [4], want [3]"},
		{"dst", func() { ConvTranspose2DInto(New(1, 3, 7, 6), x, w, nil, ConvTransposeParams{}) },
			"tensor: ConvTranspose2DInto: shapes [1 4 5 5] and [4 3 3 3] give output [1 3 7 7], got [1 3 7 6]"},
		{"dy", func() { ConvTranspose2DBackwardInput(New(1, 3, 7, 6), w, []int{1, 4, 5, 5}, ConvTransposeParams{}) },
			"tensor: ConvTranspose2DBackwardInput: shapes [1 4 5 5] and [4 3 3 3] give output [1 3 7 7], got [1 3 7 6]"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectPanic(t, tc.want, tc.f) })
	}
}

// BenchmarkConvTranspose2D times a decoder's upsampling layer
// (bench/torchref/depthwise.py prints PyTorch's figures under the same
// names): forward, and forward+backward (input, weight and bias gradients).
func BenchmarkConvTranspose2D(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	p := ConvTransposeParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 1}}
	x, w, bias := RandN(r, 16, 64, 28, 28), RandN(r, 64, 32, 3, 3), RandN(r, 32)
	s := ConvTranspose2DShape(x, w, p)
	y, dy, dx, dw, db := New(s[:]...), RandN(r, s[:]...), New(16, 64, 28, 28), New(64, 32, 3, 3), New(32)
	b.Run("16x64x28x28/k3s2p1op1/fwd", func(b *testing.B) {
		for b.Loop() {
			ConvTranspose2DInto(y, x, w, bias, p)
		}
	})
	b.Run("16x64x28x28/k3s2p1op1/fwd+bwd", func(b *testing.B) {
		for b.Loop() {
			ConvTranspose2DInto(y, x, w, bias, p)
			ConvTranspose2DBackwardInputInto(dx, dy, w, p)
			ConvTranspose2DBackwardWeightInto(dw, dy, x, p)
			SumToInto(db.Reshape(32, 1, 1), dy)
		}
	})
}
