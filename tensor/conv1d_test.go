package tensor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestConv1D checks Conv1D and its gradients against a float64 loop over
// the definition: strides, padding, dilation, groups (depthwise too),
// circular padding, strided operands, no images.
func TestConv1D(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 5))
	for _, c := range []struct {
		n, cin, l, cout, k int
		p                  Conv1DParams
	}{
		{2, 3, 9, 4, 3, Conv1DParams{Padding: 1}},
		{1, 2, 10, 4, 4, Conv1DParams{Stride: 3, Dilation: 2, Padding: 2, Groups: 2}},
		{2, 4, 7, 8, 3, Conv1DParams{Groups: 4, Padding: 1}}, // depthwise, multiplier 2
		{1, 2, 6, 3, 3, Conv1DParams{Padding: 2, PaddingMode: PadCircular}},
		{0, 2, 5, 3, 2, Conv1DParams{}},
	} {
		groups := max(c.p.Groups, 1)
		xs, ws := []int{c.n, c.cin, c.l}, []int{c.cout, c.cin / groups, c.k}
		s, d := max(c.p.Stride, 1), max(c.p.Dilation, 1)
		ol := (c.l+2*c.p.Padding-d*(c.k-1)-1)/s + 1
		out := []int{c.n, c.cout, ol}
		x, w, bias, dy := randLayout(r, "strided", xs...), RandN(r, ws...), RandN(r, c.cout), randLayout(r, "transposed", out...)
		fw, dx, dw := newSums(), newSums(), newSums()
		cpg, opg := c.cin/groups, c.cout/groups
		for n := range c.n {
			for o := range c.cout {
				for j := range ol {
					for cc := range cpg {
						for v := range c.k {
							i := j*s - c.p.Padding + v*d
							if c.p.PaddingMode == PadCircular {
								i = (i + c.l) % c.l
							} else if i < 0 || i >= c.l {
								continue
							}
							ci := o/opg*cpg + cc
							xv, wv, dv := float64(x.At(n, ci, i)), float64(w.At(o, cc, v)), float64(dy.At(n, o, j))
							fw.add([4]int{n, o, j}, xv*wv)
							dx.add([4]int{n, ci, i}, dv*wv)
							dw.add([4]int{o, cc, v}, dv*xv)
						}
					}
				}
			}
		}
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			none := func(_ [4]int, v float64) float64 { return v }
			fw.check3(t, "Conv1D", Conv1D(x, w, bias, c.p), out, cpg*c.k, func(k [4]int, v float64) float64 { return v + float64(bias.At(k[1])) })
			fw.check3(t, "Conv1DInto", Conv1DInto(New(out...), x, w, nil, c.p), out, cpg*c.k, none)
			dx.check3(t, "Conv1DBackwardInput", Conv1DBackwardInput(dy, w, xs, c.p), xs, 2*opg*c.k, none)
			dw.check3(t, "Conv1DBackwardWeight", Conv1DBackwardWeight(dy, x, ws, c.p), ws, c.n*ol, none)
		})
	}
	expectPanic(t, "tensor: Conv1D: shapes [1 2 3 4] and [2 2 3]: want input [N, C, L] and weight [Cout, C/groups, k]", func() {
		Conv1D(New(1, 2, 3, 4), New(2, 2, 3), nil, Conv1DParams{})
	})
	expectPanic(t, "tensor: Conv1D: shapes [1 2 1 3] and [2 2 1 4]: kernel extent 1x4 larger than the padded input 1x3", func() {
		Conv1D(New(1, 2, 3), New(2, 2, 4), nil, Conv1DParams{})
	})
}

// check3 is check for 3-d results, keyed by their first three indices.
func (s sums) check3(t *testing.T, what string, got *Tensor, shape []int, terms int, post func(key [4]int, v float64) float64) {
	t.Helper()
	s.check(t, what, got.Unsqueeze(3), append(shape[:3:3], 1), terms, post)
}
