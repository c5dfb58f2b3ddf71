package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestOptLossOnDevice runs every loss with options on the stand-in
// device (tensortest: the CPU's code on device tensors), whose loss and
// gradient must be the host's bit for bit.
func TestOptLossOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	checkOptLossesOn(t, testDev, 0)
}

// checkOptLossesOn checks that each tape loss with options (every
// reduction, class weights, ignored targets, label smoothing, [N, C, d1,
// d2] inputs, probability targets, pos_weight) runs on dev with its
// operands there, leaves the loss and the prediction's gradient there,
// and gives the host's within the relative error tol (0: exactly); and
// that a batch whose every target is ignored gives a NaN mean and a zero
// gradient, as PyTorch's.
func checkOptLossesOn(t *testing.T, dev tensor.Device, tol float64) {
	r := rand.New(rand.NewPCG(24, 7))
	lab4 := tensor.FromSlice([]float32{0, 2, -100, 1, 2, 0, 1, -100, 2, 2, 0, 1}, 2, 3, 2)
	lab := tensor.FromSlice([]float32{0, 3, 1, 3, 2}, 5)
	ignored := tensor.FromSlice([]float32{-100, -100, -100}, 3)
	w := tensor.FromSlice([]float32{0.5, 2, 1, 1.5}, 4)
	tgt := tensor.RandN(r, 3, 4)
	probs := tensor.RandU(r, 0.05, 0.95, 3, 4)
	type lossFn func(tp *Tape, x *Var, target, w *tensor.Tensor, p tensor.LossParams) *Var
	cases := []struct {
		name      string
		pred      *tensor.Tensor
		target, w *tensor.Tensor
		p         tensor.LossParams
		f         lossFn
	}{
		{"NLL 4-d weight smoothing", tensor.LogSoftmax(tensor.RandN(r, 2, 3, 3, 2), 1), lab4, w.Slice(0, 0, 3, 1), tensor.LossParams{},
			func(tp *Tape, x *Var, y, w *tensor.Tensor, p tensor.LossParams) *Var {
				p.Weight = w
				return tp.NLL(x, y, p)
			}},
		{"CrossEntropyWith 4-d weight smoothing", tensor.RandN(r, 2, 3, 3, 2), lab4, w.Slice(0, 0, 3, 1), tensor.LossParams{LabelSmoothing: 0.15},
			func(tp *Tape, x *Var, y, w *tensor.Tensor, p tensor.LossParams) *Var {
				p.Weight = w
				return tp.CrossEntropyWith(x, y, p)
			}},
		{"CrossEntropyWith default, ignore -100", tensor.RandN(r, 4, 3), tensor.FromSlice([]float32{0, -100, 2, 1}, 4), nil, tensor.LossParams{},
			func(tp *Tape, x *Var, y, _ *tensor.Tensor, p tensor.LossParams) *Var {
				return tp.CrossEntropyWith(x, y, p)
			}},
		{"CrossEntropyWith ignore 3", tensor.RandN(r, 5, 4), lab, w, tensor.LossParams{Ignore: true, IgnoreIndex: 3},
			func(tp *Tape, x *Var, y, w *tensor.Tensor, p tensor.LossParams) *Var {
				p.Weight = w
				return tp.CrossEntropyWith(x, y, p)
			}},
		{"CrossEntropyWith probabilities", tensor.RandN(r, 3, 4), tensor.Softmax(tgt, 1), w, tensor.LossParams{LabelSmoothing: 0.1},
			func(tp *Tape, x *Var, y, w *tensor.Tensor, p tensor.LossParams) *Var {
				p.Weight = w
				return tp.CrossEntropyWith(x, y, p)
			}},
		{"L1", tensor.RandN(r, 3, 4), tgt, nil, tensor.LossParams{},
			func(tp *Tape, x *Var, y, _ *tensor.Tensor, p tensor.LossParams) *Var { return tp.L1(x, y, p) }},
		{"SmoothL1", tensor.RandN(r, 3, 4), tgt, nil, tensor.LossParams{},
			func(tp *Tape, x *Var, y, _ *tensor.Tensor, p tensor.LossParams) *Var {
				return tp.SmoothL1(x, y, 0.5, p)
			}},
		{"Huber", tensor.RandN(r, 3, 4), tgt, nil, tensor.LossParams{},
			func(tp *Tape, x *Var, y, _ *tensor.Tensor, p tensor.LossParams) *Var { return tp.Huber(x, y, 0.8, p) }},
		{"KLDiv", tensor.LogSoftmax(tensor.RandN(r, 3, 4), 1), probs, nil, tensor.LossParams{},
			func(tp *Tape, x *Var, y, _ *tensor.Tensor, p tensor.LossParams) *Var { return tp.KLDiv(x, y, p) }},
		{"BCE weight", probs, tensor.RandU(r, 0, 1, 3, 4), w, tensor.LossParams{},
			func(tp *Tape, x *Var, y, w *tensor.Tensor, p tensor.LossParams) *Var {
				p.Weight = w
				return tp.BCE(x, y, p)
			}},
		{"BCEWithLogitsWith pos_weight", tensor.RandN(r, 3, 4), probs, w, tensor.LossParams{},
			func(tp *Tape, x *Var, y, w *tensor.Tensor, p tensor.LossParams) *Var {
				p.PosWeight = w
				return tp.BCEWithLogitsWith(x, y, p)
			}},
	}
	to := func(x *tensor.Tensor) *tensor.Tensor {
		if x == nil {
			return nil
		}
		d, err := x.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	run := func(on tensor.Device, pred, target, w *tensor.Tensor, p tensor.LossParams, f lossFn) (loss, grad *tensor.Tensor) {
		if on != tensor.CPU {
			pred, target, w = to(pred), to(target), to(w)
		}
		x := NewParam(pred.Clone())
		tp := NewTape()
		l := f(tp, x, target, w, p)
		if l.Value().Device() != on {
			t.Fatalf("loss on %v, want %v", l.Value().Device(), on)
		}
		tp.Backward(tp.Sum(l))
		if x.Grad().Device() != on {
			t.Fatalf("gradient on %v, want %v", x.Grad().Device(), on)
		}
		return l.Value(), x.Grad()
	}
	for _, c := range cases {
		for _, red := range []tensor.LossReduction{tensor.LossMean, tensor.LossSum, tensor.LossNone} {
			p := c.p
			p.Reduction = red
			wl, wg := run(tensor.CPU, c.pred, c.target, c.w, p, c.f)
			gl, gg := run(dev, c.pred, c.target, c.w, p, c.f)
			for _, o := range []struct {
				what      string
				got, want *tensor.Tensor
			}{{"loss", gl, wl}, {"gradient", gg, wg}} {
				got := hostOf(t, o.got)
				if !slices.Equal(o.got.Shape(), o.want.Shape()) {
					t.Errorf("%s %v: %s of shape %v on %v, the host's %v", c.name, red, o.what, o.got.Shape(), dev, o.want.Shape())
				} else if e := relErr(got, o.want.Data()); tol == 0 && !slices.Equal(got, o.want.Data()) || e > tol {
					t.Errorf("%s %v: %s %v on %v, the host's %v", c.name, red, o.what, got, dev, o.want.Data())
				}
			}
		}
	}
	// Every target ignored: the mean is NaN, the gradient zero.
	l, g := run(dev, tensor.RandN(r, 3, 4), ignored, nil, tensor.LossParams{}, func(tp *Tape, x *Var, y, _ *tensor.Tensor, p tensor.LossParams) *Var {
		return tp.CrossEntropyWith(x, y, p)
	})
	if v := hostOf(t, l)[0]; !math.IsNaN(float64(v)) {
		t.Errorf("CrossEntropyWith of every target ignored on %v: %v, want NaN", dev, v)
	}
	for _, v := range hostOf(t, g) {
		if v != 0 {
			t.Fatalf("CrossEntropyWith of every target ignored on %v: gradient %v, want 0", dev, hostOf(t, g))
		}
	}
}
