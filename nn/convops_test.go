package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// convGradCases are the gradient checks of convops.go's operations.
func convGradCases() []gradCase {
	r := rand.New(rand.NewPCG(24, 3))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	var cases []gradCase
	add := func(name, op string, f func(tp *Tape, in []*Var) *Var, inputs ...*tensor.Tensor) {
		cases = append(cases, gradCase{name: name, op: op, inputs: inputs, f: f})
	}
	for _, p := range []tensor.ConvTransposeParams{
		{}, {Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, OutputPadding: [2]int{1, 1}},
		{Groups: 2, Dilation: [2]int{2, 1}, OutputPadding: [2]int{1, 0}},
	} {
		add(fmt.Sprintf("ConvTranspose2D/%+v", p), "ConvTranspose2D", func(tp *Tape, in []*Var) *Var {
			return tp.ConvTranspose2D(in[0], in[1], in[2], p)
		}, rn(2, 4, 4, 3), rn(4, 6/max(p.Groups, 1), 3, 3), rn(6))
	}
	add("ConvTranspose2D/nobias", "ConvTranspose2D", func(tp *Tape, in []*Var) *Var {
		return tp.ConvTranspose2D(in[0], in[1], nil, tensor.ConvTransposeParams{})
	}, rn(1, 2, 3, 3), rn(2, 3, 2, 2))
	for _, p := range []tensor.Conv1DParams{{}, {Stride: 2, Padding: 1, Dilation: 2}, {Groups: 4, Padding: 1}, {Padding: 2, PaddingMode: tensor.PadReflect}} {
		add(fmt.Sprintf("Conv1D/%+v", p), "Conv1D", func(tp *Tape, in []*Var) *Var {
			return tp.Conv1D(in[0], in[1], in[2], p)
		}, rn(2, 4, 9), rn(8, 4/max(p.Groups, 1), 3), rn(8))
	}
	for _, out := range [][2]int{{3, 2}, {1, 1}, {5, 4}} {
		add(fmt.Sprintf("AdaptiveAvgPool2D/%v", out), "AdaptiveAvgPool2D", func(tp *Tape, in []*Var) *Var {
			return tp.AdaptiveAvgPool2D(in[0], out)
		}, rn(2, 3, 5, 4))
		add(fmt.Sprintf("AdaptiveMaxPool2D/%v", out), "AdaptiveMaxPool2D", func(tp *Tape, in []*Var) *Var {
			return tp.AdaptiveMaxPool2D(in[0], out)
		}, distinct(r, 2, 3, 5, 4))
	}
	for _, mode := range []tensor.PadMode{tensor.PadConstant, tensor.PadReflect, tensor.PadReplicate, tensor.PadCircular} {
		add(fmt.Sprintf("Pad/%v", mode), "Pad", func(tp *Tape, in []*Var) *Var {
			return tp.Pad(in[0], []int{2, 1, -1, 2}, mode, 0.5)
		}, rn(2, 4, 5))
	}
	add("Conv2D/reflect", "Conv2D", func(tp *Tape, in []*Var) *Var {
		return tp.Conv2D(in[0], in[1], in[2], tensor.ConvParams{Padding: [2]int{1, 2}, PaddingMode: tensor.PadCircular})
	}, rn(2, 3, 5, 4), rn(2, 3, 3, 3), rn(2))
	return cases
}

// convOperandCases are operandCases for convops.go's operations.
func convOperandCases(p func(shape ...int) *Var) []operandCase {
	img, seq := []int{1, 2, 4, 4}, []int{1, 2, 5}
	ct := tensor.ConvTransposeParams{Stride: [2]int{2, 2}}
	return []operandCase{
		{"ConvTranspose2D", "x", img, func(tp *Tape, v *Var) { tp.ConvTranspose2D(v, p(2, 3, 3, 3), p(3), ct) }},
		{"ConvTranspose2D", "weight", []int{2, 3, 3, 3}, func(tp *Tape, v *Var) { tp.ConvTranspose2D(p(img...), v, p(3), ct) }},
		{"ConvTranspose2D", "bias", []int{3}, func(tp *Tape, v *Var) { tp.ConvTranspose2D(p(img...), p(2, 3, 3, 3), v, ct) }},
		{"Conv1D", "x", seq, func(tp *Tape, v *Var) { tp.Conv1D(v, p(3, 2, 3), p(3), tensor.Conv1DParams{}) }},
		{"Conv1D", "weight", []int{3, 2, 3}, func(tp *Tape, v *Var) { tp.Conv1D(p(seq...), v, p(3), tensor.Conv1DParams{}) }},
		{"Conv1D", "bias", []int{3}, func(tp *Tape, v *Var) { tp.Conv1D(p(seq...), p(3, 2, 3), v, tensor.Conv1DParams{}) }},
		{"AdaptiveAvgPool2D", "x", img, func(tp *Tape, v *Var) { tp.AdaptiveAvgPool2D(v, [2]int{2, 3}) }},
		{"AdaptiveMaxPool2D", "x", img, func(tp *Tape, v *Var) { tp.AdaptiveMaxPool2D(v, [2]int{2, 3}) }},
		{"Pad", "x", img, func(tp *Tape, v *Var) { tp.Pad(v, []int{1, 1}, tensor.PadReflect, 0) }},
	}
}
