package tensortest

import (
	"fmt"
	"math"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// testLossOptions checks the losses with PyTorch's options (tensor's
// lossopt.go, the Loss family's Class and Pointwise) on dev against the
// CPU: each pointwise loss (L1, SmoothL1 with beta 0.5 and 0, Huber,
// KLDiv and its log target, BCE with a weight per class, BCEWithLogits
// with pos_weight) and each class loss (NLL, CrossEntropyWith: class
// weights, ignore_index with some and with every target ignored, label
// smoothing, [N, C, d1, d2] inputs, a [C] input, probability targets)
// under every reduction (batchmean for KLDiv), the loss and the
// ...Backward gradient for a random upstream gradient (of the loss's
// shape for LossNone), over plain, 4-d, transposed and empty operands.
// The losses are allowed relative(n) for n terms, the gradients
// relative(C) (class) or pointwise's. Then that a bad class index and a
// BCE input outside [0, 1] panic in the call or when the loss is read.
func testLossOptions(t *testing.T, dev tensor.Device) {
	type pointFn struct {
		name string
		f    func(p, y *tsr, o tensor.LossParams) *tsr
		b    func(d, p, y *tsr, o tensor.LossParams) *tsr
		tg   gen // the target's
		pred gen
		opts tensor.LossParams
		w    bool // the options' Weight (BCE) or PosWeight (BCEWithLogits): one per class
	}
	smooth := func(beta float32) (func(p, y *tsr, o tensor.LossParams) *tsr, func(d, p, y *tsr, o tensor.LossParams) *tsr) {
		return func(p, y *tsr, o tensor.LossParams) *tsr { return tensor.SmoothL1(p, y, beta, o) },
			func(d, p, y *tsr, o tensor.LossParams) *tsr { return tensor.SmoothL1Backward(d, p, y, beta, o) }
	}
	s05f, s05b := smooth(0.5)
	s0f, s0b := smooth(0)
	points := []pointFn{
		{"L1", tensor.L1, tensor.L1Backward, normal, normal, tensor.LossParams{}, false},
		{"SmoothL1(0.5)", s05f, s05b, normal, normal, tensor.LossParams{}, false},
		{"SmoothL1(0)", s0f, s0b, normal, normal, tensor.LossParams{}, false},
		{"Huber(1.5)", func(p, y *tsr, o tensor.LossParams) *tsr { return tensor.Huber(p, y, 1.5, o) },
			func(d, p, y *tsr, o tensor.LossParams) *tsr { return tensor.HuberBackward(d, p, y, 1.5, o) }, normal, normal, tensor.LossParams{}, false},
		{"KLDiv", tensor.KLDiv, tensor.KLDivBackward, unit, normal, tensor.LossParams{}, false},
		{"KLDiv log target", tensor.KLDiv, tensor.KLDivBackward, normal, normal, tensor.LossParams{LogTarget: true}, false},
		{"BCE", tensor.BCE, tensor.BCEBackward, unit, unit, tensor.LossParams{}, false},
		{"BCE weight", tensor.BCE, tensor.BCEBackward, unit, unit, tensor.LossParams{}, true},
		{"BCEWithLogitsWith", tensor.BCEWithLogitsWith, tensor.BCEWithLogitsWithBackward, unit, normal, tensor.LossParams{}, false},
		{"BCEWithLogitsWith pos_weight", tensor.BCEWithLogitsWith, tensor.BCEWithLogitsWithBackward, unit, normal, tensor.LossParams{}, true},
	}
	type layout struct {
		name  string
		shape []int // the prediction's
		view  func(x *tsr) *tsr
		base  []int // the prediction operand's, when a view
	}
	same := func(x *tsr) *tsr { return x }
	layouts := []layout{
		{"[4 5]", []int{4, 5}, same, nil},
		{"[2 3 4 5]", []int{2, 3, 4, 5}, same, nil},
		{"transposed [7 6]", []int{7, 6}, (*tsr).T, []int{6, 7}},
		{"[0 3]", []int{0, 3}, same, nil},
	}
	reductions := []tensor.LossReduction{tensor.LossMean, tensor.LossSum, tensor.LossNone}
	var cases []kase
	for _, f := range points {
		reds := reductions
		if f.name == "KLDiv" || f.name == "KLDiv log target" {
			reds = append(reds, tensor.LossBatchMean)
		}
		for _, l := range layouts {
			base := l.shape
			if l.base != nil {
				base = l.base
			}
			n, c := 1, l.shape[len(l.shape)-1]
			for _, d := range l.shape {
				n *= d
			}
			for _, r := range reds {
				opts := f.opts
				opts.Reduction = r
				dl := []int{} // the upstream gradient's shape
				if r == tensor.LossNone {
					dl = l.shape
				}
				in := []operand{of(f.pred, base...), of(f.tg, l.shape...), of(positive, c), rn(dl...)}
				withW := func(x []*tsr) tensor.LossParams {
					o := opts
					if f.w && f.name[:3] == "BCE" && f.name != "BCEWithLogitsWith pos_weight" {
						o.Weight = x[2]
					} else if f.w {
						o.PosWeight = x[2]
					}
					return o
				}
				name := fmt.Sprintf("%s %s %v", f.name, l.name, r)
				cases = append(cases,
					kase{name: name + " loss", in: in, tol: relative(n),
						op: func(x []*tsr) *tsr { return f.f(l.view(x[0]), x[1], withW(x)) }},
					kase{name: name + " gradient", in: in, tol: pointwise,
						op: func(x []*tsr) *tsr { return f.b(x[3], l.view(x[0]), x[1], withW(x)) }})
			}
		}
	}

	type classFn struct {
		name string
		f    func(x, y *tsr, o tensor.LossParams) *tsr
		b    func(d, x, y *tsr, o tensor.LossParams) *tsr
		in   gen // the input's: NLL's log-probabilities are negative
	}
	nll := classFn{"NLL", tensor.NLL, tensor.NLLBackward, normal}
	ce := classFn{"CrossEntropyWith", tensor.CrossEntropyWith, tensor.CrossEntropyWithBackward, normal}
	type classCase struct {
		name   string
		input  []int
		target operand // its labels, or probabilities of the input's shape
		opts   tensor.LossParams
		weight bool
		fns    []classFn
	}
	both, ceOnly := []classFn{nll, ce}, []classFn{ce}
	classes := []classCase{
		{"[5 4]", []int{5, 4}, lab(4, 5), tensor.LossParams{}, false, both},
		{"[65 10] weight", []int{65, 10}, lab(10, 65), tensor.LossParams{}, true, both},
		{"[9 3] ignore 1", []int{9, 3}, lab(3, 9), tensor.LossParams{Ignore: true, IgnoreIndex: 1}, false, both},
		{"[9 3] weight ignore 2", []int{9, 3}, lab(3, 9), tensor.LossParams{Ignore: true, IgnoreIndex: 2}, true, both},
		{"[4 3] all ignored", []int{4, 3}, lab(1, 4), tensor.LossParams{Ignore: true, IgnoreIndex: 0}, false, both},
		{"[6 5] smoothing 0.1", []int{6, 5}, lab(5, 6), tensor.LossParams{LabelSmoothing: 0.1}, false, ceOnly},
		{"[6 5] weight smoothing 0.2 ignore 3", []int{6, 5}, lab(5, 6), tensor.LossParams{LabelSmoothing: 0.2, Ignore: true, IgnoreIndex: 3}, true, ceOnly},
		{"[2 3 4 5]", []int{2, 3, 4, 5}, lab(3, 2, 4, 5), tensor.LossParams{}, false, both},
		{"[2 3 4 5] weight ignore 0", []int{2, 3, 4, 5}, lab(3, 2, 4, 5), tensor.LossParams{Ignore: true, IgnoreIndex: 0}, true, both},
		{"[7]", []int{7}, lab(7), tensor.LossParams{}, false, both},
		{"[0 4]", []int{0, 4}, lab(4, 0), tensor.LossParams{}, false, both},
		{"[5 4] probabilities", []int{5, 4}, of(unit, 5, 4), tensor.LossParams{}, true, ceOnly},
		{"[2 3 2 2] probabilities smoothing 0.1", []int{2, 3, 2, 2}, of(unit, 2, 3, 2, 2), tensor.LossParams{LabelSmoothing: 0.1}, false, ceOnly},
	}
	for _, cc := range classes {
		c := cc.input[min(1, len(cc.input)-1)]
		terms := []int{}
		if len(cc.input) > 1 {
			terms = append([]int{cc.input[0]}, cc.input[2:]...)
		}
		for _, f := range cc.fns {
			for _, r := range reductions {
				opts := cc.opts
				opts.Reduction = r
				dl := []int{}
				if r == tensor.LossNone {
					dl = terms
				}
				in := []operand{of(f.in, cc.input...), cc.target, of(positive, c), rn(dl...)}
				withW := func(x []*tsr) tensor.LossParams {
					o := opts
					if cc.weight {
						o.Weight = x[2]
					}
					return o
				}
				name := fmt.Sprintf("%s %s %v", f.name, cc.name, r)
				cases = append(cases,
					kase{name: name + " loss", in: in, tol: relative(max(shapeSize(terms), 1) * c),
						op: func(x []*tsr) *tsr { return f.f(x[0], x[1], withW(x)) }},
					kase{name: name + " gradient", in: in, tol: relative(c),
						op: func(x []*tsr) *tsr { return f.b(x[3], x[0], x[1], withW(x)) }})
			}
		}
	}
	run(t, dev, 8, cases)

	// Values that only the device can check.
	toDev := func(x *tsr) *tsr {
		d, err := x.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	x := toDev(tensor.New(2, 3))
	for _, b := range []struct {
		name string
		f    func() *tsr
	}{
		{"NLL with target 3 of 3 classes", func() *tsr {
			return tensor.NLL(x, toDev(tensor.FromSlice([]float32{0, 3}, 2)), tensor.LossParams{})
		}},
		{"CrossEntropyWith with target 0.5", func() *tsr {
			return tensor.CrossEntropyWith(x, toDev(tensor.FromSlice([]float32{0.5, 1}, 2)), tensor.LossParams{Reduction: tensor.LossSum})
		}},
		{"BCE of 1.5", func() *tsr {
			return tensor.BCE(toDev(tensor.FromSlice([]float32{0.5, 1.5}, 2)), toDev(tensor.New(2)), tensor.LossParams{})
		}},
	} {
		var loss *tsr
		if Panic(func() { loss = b.f() }) == "" {
			var v float32
			if Panic(func() { v = loss.Item() }) == "" && !math.IsNaN(float64(v)) {
				t.Errorf("%s on %v: loss %v, and no panic", b.name, dev, v)
			}
		}
	}
}

// shapeSize is the number of elements of shape.
func shapeSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
