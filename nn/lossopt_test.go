package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestOptLossGrads checks the backward of every loss with options, at
// each reduction, against finite differences through the tape (the
// reduced losses through gradCheck's projection, LossNone's elementwise
// upstream gradient included).
func TestOptLossGrads(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	lab4 := tensor.FromSlice([]float32{0, 2, -100, 1, 2, 0, 1, -100, 2, 2, 0, 1}, 2, 3, 2)
	lab := tensor.FromSlice([]float32{0, 3, 1, 3, 2}, 5)
	w := tensor.FromSlice([]float32{0.5, 2, 1, 1.5}, 4)
	tgt := tensor.RandN(r, 3, 4)
	probs := tensor.RandU(r, 0.05, 0.95, 3, 4)
	logp := tensor.LogSoftmax(tensor.RandN(r, 3, 4), 1)
	for _, red := range []tensor.LossReduction{tensor.LossMean, tensor.LossSum, tensor.LossNone} {
		p := tensor.LossParams{Reduction: red}
		pw := p
		pw.Weight, pw.LabelSmoothing = w.Slice(0, 0, 3, 1), 0.15
		cases := []gradCase{
			{name: "NLL", inputs: []*tensor.Tensor{tensor.LogSoftmax(tensor.RandN(r, 2, 3, 3, 2), 1)},
				f: func(tp *Tape, in []*Var) *Var { return tp.NLL(in[0], lab4, pw) }},
			{name: "CrossEntropyWith/4d", inputs: []*tensor.Tensor{tensor.RandN(r, 2, 3, 3, 2)},
				f: func(tp *Tape, in []*Var) *Var { return tp.CrossEntropyWith(in[0], lab4, pw) }},
			{name: "CrossEntropyWith/2d", inputs: []*tensor.Tensor{tensor.RandN(r, 5, 4)},
				f: func(tp *Tape, in []*Var) *Var {
					return tp.CrossEntropyWith(in[0], lab, tensor.LossParams{Reduction: red, Weight: w})
				}},
			{name: "CrossEntropyWith/soft", inputs: []*tensor.Tensor{tensor.RandN(r, 3, 4)},
				f: func(tp *Tape, in []*Var) *Var {
					return tp.CrossEntropyWith(in[0], tensor.Softmax(tgt, 1), tensor.LossParams{Reduction: red, Weight: w, LabelSmoothing: 0.1})
				}},
			{name: "L1", inputs: []*tensor.Tensor{awayFromZero(r, 3, 4)},
				f: func(tp *Tape, in []*Var) *Var { return tp.L1(in[0], tensor.New(3, 4), p) }},
			{name: "SmoothL1", inputs: []*tensor.Tensor{tensor.RandN(r, 3, 4)},
				f: func(tp *Tape, in []*Var) *Var { return tp.SmoothL1(in[0], tgt, 0.5, p) }},
			{name: "Huber", inputs: []*tensor.Tensor{tensor.RandN(r, 3, 4)},
				f: func(tp *Tape, in []*Var) *Var { return tp.Huber(in[0], tgt, 0.8, p) }},
			{name: "KLDiv", inputs: []*tensor.Tensor{logp},
				f: func(tp *Tape, in []*Var) *Var { return tp.KLDiv(in[0], probs, p) }},
			{name: "BCE", inputs: []*tensor.Tensor{probs},
				f: func(tp *Tape, in []*Var) *Var {
					return tp.BCE(in[0], tgt.Slice(0, 0, 3, 1), tensor.LossParams{Reduction: red, Weight: w})
				}},
			{name: "BCEWithLogitsWith", inputs: []*tensor.Tensor{tensor.RandN(r, 3, 4)},
				f: func(tp *Tape, in []*Var) *Var {
					return tp.BCEWithLogitsWith(in[0], probs, tensor.LossParams{Reduction: red, PosWeight: w})
				}},
		}
		for _, c := range cases {
			c.name += "/" + red.String()
			c.h = 1e-3
			gradCheck(t, c)
		}
	}
}

// TestCrossEntropyWithDefault: the default options take the fused
// CrossEntropy (the same loss and gradient bits).
func TestCrossEntropyWithDefault(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lab := tensor.FromSlice([]float32{0, 3, 1}, 3)
	x := NewParam(tensor.RandN(r, 3, 4))
	y := NewParam(x.Value())
	tp := NewTape()
	a, b := tp.CrossEntropyWith(x, lab, tensor.LossParams{}), tp.CrossEntropy(y, lab)
	tp.BackwardRetain(a)
	tp.Backward(b)
	if a.Value().Item() != b.Value().Item() {
		t.Errorf("loss %v, CrossEntropy's %v", a.Value().Item(), b.Value().Item())
	}
	for i, g := range x.Grad().Data() {
		if g != y.Grad().Data()[i] {
			t.Fatalf("gradient %v, CrossEntropy's %v", x.Grad().Data(), y.Grad().Data())
		}
	}
}
