package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestPairwiseSqDistTape checks the tape's PairwiseSqDist and RBFKernel:
// forward as tensor's (and exp(-γD) within 1e-6), gradients against
// finite differences, x against itself included.
func TestPairwiseSqDistTape(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
	for _, c := range []gradCase{
		{name: "PairwiseSqDist", inputs: []*tensor.Tensor{tensor.RandN(r, 4, 3), tensor.RandN(r, 5, 3)},
			f: func(tp *Tape, in []*Var) *Var { return tp.PairwiseSqDist(in[0], in[1]) }},
		{name: "PairwiseSqDist/self", inputs: []*tensor.Tensor{tensor.RandN(r, 6, 2)},
			f: func(tp *Tape, in []*Var) *Var { return tp.PairwiseSqDist(in[0], nil) }},
		{name: "RBFKernel", inputs: []*tensor.Tensor{tensor.RandN(r, 3, 4), tensor.RandN(r, 2, 4)},
			f: func(tp *Tape, in []*Var) *Var { return tp.RBFKernel(in[0], in[1], 0.3) }},
		{name: "RBFKernel/self", inputs: []*tensor.Tensor{tensor.RandN(r, 5, 3)},
			f: func(tp *Tape, in []*Var) *Var { return tp.RBFKernel(in[0], in[0], 0.5) }},
	} {
		gradCheck(t, c)
	}
	x, y := tensor.RandN(r, 7, 5), tensor.RandN(r, 3, 5)
	tp := NewTape()
	k := tp.RBFKernel(tp.Const(x), tp.Const(y), 0.2).Value()
	d := tensor.PairwiseSqDist(x, y)
	for i := range 7 {
		for j := range 3 {
			if w := math.Exp(-0.2 * float64(d.At(i, j))); math.Abs(float64(k.At(i, j))-w) > 1e-6 {
				t.Fatalf("RBFKernel[%d, %d] = %v, want %v", i, j, k.At(i, j), w)
			}
		}
	}
	self := tp.RBFKernel(tp.Const(x), nil, 2).Value()
	for i := range 7 {
		if self.At(i, i) != 1 {
			t.Fatalf("RBFKernel of x with itself: diagonal %d is %v, want 1", i, self.At(i, i))
		}
	}
}
