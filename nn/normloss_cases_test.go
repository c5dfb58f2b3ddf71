package nn

import (
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// normLossGradCases are the gradient checks (TestGradients) of the
// normalizations, losses with options and sampling ops, one or more per
// Tape method; their own tests (groupnorm_test.go, lossopt_test.go,
// sampling_test.go) cover every reduction and mode.
func normLossGradCases() []gradCase {
	r := rand.New(rand.NewPCG(24, 10))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	lab := tensor.FromSlice([]float32{0, 2, -100, 1, 2, 0}, 2, 3)
	tgt, probs := rn(3, 4), tensor.RandU(r, 0.1, 0.9, 3, 4)
	w := tensor.FromSlice([]float32{0.5, 2, 1}, 3)
	none := tensor.LossParams{Reduction: tensor.LossNone}
	var cs []gradCase
	add := func(op string, f func(tp *Tape, in []*Var) *Var, inputs ...*tensor.Tensor) {
		cs = append(cs, gradCase{name: op, op: op, inputs: inputs, f: f, h: 1e-3})
	}
	add("GroupNorm", func(tp *Tape, in []*Var) *Var { return tp.GroupNorm(in[0], in[1], in[2], 2, 0) }, rn(2, 4, 3), rn(4), rn(4))
	add("InstanceNorm", func(tp *Tape, in []*Var) *Var { return tp.InstanceNorm(in[0], in[1], in[2], 0) }, rn(2, 3, 4), rn(3), rn(3))
	add("RMSNorm", func(tp *Tape, in []*Var) *Var { return tp.RMSNorm(in[0], in[1], 1, 0) }, rn(3, 5), rn(5))
	add("NLL", func(tp *Tape, in []*Var) *Var {
		return tp.NLL(in[0], lab, tensor.LossParams{Weight: w})
	}, tensor.LogSoftmax(rn(2, 3, 3), 1))
	add("CrossEntropyWith", func(tp *Tape, in []*Var) *Var {
		return tp.CrossEntropyWith(in[0], lab, tensor.LossParams{Weight: w, LabelSmoothing: 0.1})
	}, rn(2, 3, 3))
	add("L1", func(tp *Tape, in []*Var) *Var { return tp.L1(in[0], tensor.New(3, 4), none) }, awayFromZero(r, 3, 4))
	add("SmoothL1", func(tp *Tape, in []*Var) *Var { return tp.SmoothL1(in[0], tgt, 0.5, tensor.LossParams{}) }, rn(3, 4))
	add("Huber", func(tp *Tape, in []*Var) *Var {
		return tp.Huber(in[0], tgt, 0.5, tensor.LossParams{Reduction: tensor.LossSum})
	}, rn(3, 4))
	add("KLDiv", func(tp *Tape, in []*Var) *Var {
		return tp.KLDiv(in[0], probs, tensor.LossParams{Reduction: tensor.LossBatchMean})
	}, tensor.LogSoftmax(rn(3, 4), 1))
	add("BCE", func(tp *Tape, in []*Var) *Var { return tp.BCE(in[0], probs, tensor.LossParams{}) }, tensor.RandU(r, 0.1, 0.9, 3, 4))
	add("BCEWithLogitsWith", func(tp *Tape, in []*Var) *Var {
		return tp.BCEWithLogitsWith(in[0], probs, tensor.LossParams{PosWeight: tensor.FromSlice([]float32{1, 2, 0.5, 3}, 4)})
	}, rn(3, 4))
	add("AffineGrid", func(tp *Tape, in []*Var) *Var { return tp.AffineGrid(in[0], []int{2, 1, 3, 2}, true) }, rn(2, 2, 3))
	add("GridSample", func(tp *Tape, in []*Var) *Var {
		return tp.GridSample(in[0], in[1], tensor.GridSampleParams{})
	}, rn(1, 2, 3, 4), tensor.RandU(r, -1.1, 1.1, 1, 2, 2, 2))
	add("Interpolate", func(tp *Tape, in []*Var) *Var {
		return tp.Interpolate(in[0], tensor.InterpolateParams{Size: [2]int{4, 5}, Mode: tensor.InterpBilinear})
	}, rn(1, 2, 3, 3))
	return cs
}

// normLossOperandCases are their operand cases (TestStaleVarRefused,
// TestNilArguments).
func normLossOperandCases(p func(shape ...int) *Var) []operandCase {
	t34, lab := tensor.New(3, 4), tensor.New(3)
	lp := tensor.LossParams{}
	return []operandCase{
		{"GroupNorm", "x", []int{2, 4, 3}, func(tp *Tape, v *Var) { tp.GroupNorm(v, p(4), p(4), 2, 0) }},
		{"GroupNorm", "gamma", []int{4}, func(tp *Tape, v *Var) { tp.GroupNorm(p(2, 4, 3), v, p(4), 2, 0) }},
		{"GroupNorm", "beta", []int{4}, func(tp *Tape, v *Var) { tp.GroupNorm(p(2, 4, 3), p(4), v, 2, 0) }},
		{"InstanceNorm", "x", []int{2, 4, 3}, func(tp *Tape, v *Var) { tp.InstanceNorm(v, nil, nil, 0) }},
		{"RMSNorm", "x", []int{3, 4}, func(tp *Tape, v *Var) { tp.RMSNorm(v, p(4), 1, 0) }},
		{"RMSNorm", "gamma", []int{4}, func(tp *Tape, v *Var) { tp.RMSNorm(p(3, 4), v, 1, 0) }},
		{"NLL", "input", []int{3, 4}, func(tp *Tape, v *Var) { tp.NLL(v, lab, lp) }},
		{"CrossEntropyWith", "logits", []int{3, 4}, func(tp *Tape, v *Var) { tp.CrossEntropyWith(v, lab, lp) }},
		{"L1", "pred", []int{3, 4}, func(tp *Tape, v *Var) { tp.L1(v, t34, lp) }},
		{"SmoothL1", "pred", []int{3, 4}, func(tp *Tape, v *Var) { tp.SmoothL1(v, t34, 1, lp) }},
		{"Huber", "pred", []int{3, 4}, func(tp *Tape, v *Var) { tp.Huber(v, t34, 1, lp) }},
		{"KLDiv", "input", []int{3, 4}, func(tp *Tape, v *Var) { tp.KLDiv(v, t34, lp) }},
		{"BCE", "x", []int{3, 4}, func(tp *Tape, v *Var) { tp.BCE(v, t34, lp) }},
		{"BCEWithLogitsWith", "x", []int{3, 4}, func(tp *Tape, v *Var) { tp.BCEWithLogitsWith(v, t34, lp) }},
		{"AffineGrid", "theta", []int{1, 2, 3}, func(tp *Tape, v *Var) { tp.AffineGrid(v, []int{1, 1, 2, 2}, false) }},
		{"GridSample", "input", []int{1, 1, 2, 2}, func(tp *Tape, v *Var) { tp.GridSample(v, p(1, 2, 2, 2), tensor.GridSampleParams{}) }},
		{"GridSample", "grid", []int{1, 2, 2, 2}, func(tp *Tape, v *Var) { tp.GridSample(p(1, 1, 2, 2), v, tensor.GridSampleParams{}) }},
		{"Interpolate", "x", []int{1, 1, 2, 2}, func(tp *Tape, v *Var) {
			tp.Interpolate(v, tensor.InterpolateParams{Size: [2]int{3, 3}})
		}},
	}
}
