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
	return cases
}
