package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestPairwiseSqDistTape checks the tape's RBFKernel against exp(-γD)
// within 1e-6 and its exact 1 on the diagonal of x against itself (the
// gradients are hostOpGradCases').
func TestPairwiseSqDistTape(t *testing.T) {
	r := rand.New(rand.NewPCG(91, 92))
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
	cx := tp.Const(x)
	self := tp.RBFKernel(cx, cx, 2).Value()
	for i := range 7 {
		if self.At(i, i) != 1 {
			t.Fatalf("RBFKernel of x with itself: diagonal %d is %v, want 1", i, self.At(i, i))
		}
	}
}

// hostOpGradCases are the gradient checks (gradCases) of the Tape
// methods that run on the host only, which tapeOpCases would also run on
// the stand-in device: PairwiseSqDist, RBFKernel (x against itself
// included) and SpMM.
func hostOpGradCases() []gradCase {
	r := rand.New(rand.NewPCG(93, 94))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	adj := ringGraph(7)
	return []gradCase{
		{name: "PairwiseSqDist", op: "PairwiseSqDist", inputs: []*tensor.Tensor{rn(4, 3), rn(5, 3)},
			f: func(tp *Tape, in []*Var) *Var { return tp.PairwiseSqDist(in[0], in[1]) }},
		{name: "PairwiseSqDist/self", op: "PairwiseSqDist", inputs: []*tensor.Tensor{rn(6, 2)},
			f: func(tp *Tape, in []*Var) *Var { return tp.PairwiseSqDist(in[0], in[0]) }},
		{name: "RBFKernel", op: "RBFKernel", inputs: []*tensor.Tensor{rn(3, 4), rn(2, 4)},
			f: func(tp *Tape, in []*Var) *Var { return tp.RBFKernel(in[0], in[1], 0.3) }},
		{name: "RBFKernel/self", op: "RBFKernel", inputs: []*tensor.Tensor{rn(5, 3)},
			f: func(tp *Tape, in []*Var) *Var { return tp.RBFKernel(in[0], in[0], 0.5) }},
		{name: "SpMM", op: "SpMM", inputs: []*tensor.Tensor{rn(7, 5)},
			f: func(tp *Tape, in []*Var) *Var { return tp.SpMM(adj, in[0]) }},
	}
}

// hostOpOperandCases are hostOpGradCases' operands as operandCases.
func hostOpOperandCases(p func(shape ...int) *Var) []operandCase {
	adj := ringGraph(4)
	return []operandCase{
		{"PairwiseSqDist", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.PairwiseSqDist(v, p(4, 3)) }},
		{"PairwiseSqDist", "y", []int{4, 3}, func(tp *Tape, v *Var) { tp.PairwiseSqDist(p(2, 3), v) }},
		{"RBFKernel", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.RBFKernel(v, p(4, 3), 1) }},
		{"RBFKernel", "y", []int{4, 3}, func(tp *Tape, v *Var) { tp.RBFKernel(p(2, 3), v, 1) }},
		{"SpMM", "x", []int{4, 2}, func(tp *Tape, v *Var) { tp.SpMM(adj, v) }},
		{"GraphConv", "x", []int{4, 2}, func(tp *Tape, v *Var) { NewGraphConv(adj, 2, 3, rand.New(rand.NewPCG(1, 1))).Forward(tp, v) }},
	}
}
