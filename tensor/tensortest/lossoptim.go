package tensortest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// lossLayout is a layout of a loss's operands: in made by run, the
// prediction (a view of them) and the target, and the prediction's shape.
type lossLayout struct {
	name         string
	in           []operand
	pred, target func(x []*tsr) *tsr
	shape        []int
}

// first returns x[0] and second x[1], for the layouts.
func first(x []*tsr) *tsr  { return x[0] }
func second(x []*tsr) *tsr { return x[1] }

// TestLoss checks every op of the Loss family on dev: CrossEntropy, MSE
// and BCEWithLogits over edge sizes (one class, one element, 0-d, no
// element), transposed and sliced predictions, the loss and the gradient
// of the plain forms and of the Into forms (the gradient into a strided
// view of a guard buffer, or nil for the loss alone); and that
// CrossEntropy with a label outside [0, C) panics, in the call or, for a
// device that checks its labels in the kernel, when the loss is read (or
// gives a NaN loss). Then the losses with options (testLossOptions). The labels are ArgMax of a random operand, class
// indices made on dev (so the test uses dev's Reduce family too). The
// loss (a sum of n terms) is allowed the relative tolerance of n terms,
// CrossEntropy's gradient (a softmax over C) that of C, the other
// gradients pointwise's.
func TestLoss(t *testing.T, dev tensor.Device) {
	labels := func(x []*tsr) *tsr { return tensor.ArgMax(x[1], 1, false) }
	ce := func(name string, logits, classes []int, view func(x *tsr) *tsr, shape []int) lossLayout {
		return lossLayout{name, []operand{rn(logits...), rn(classes...)}, func(x []*tsr) *tsr { return view(x[0]) }, labels, shape}
	}
	same := func(x *tsr) *tsr { return x }
	pair := func(name string, g gen, shape ...int) lossLayout {
		return lossLayout{name, []operand{rn(shape...), of(g, shape...)}, first, second, shape}
	}
	views := func(g gen) []lossLayout {
		return []lossLayout{
			pair("[3 4]", g, 3, 4), pair("[5 7 61]", g, 5, 7, 61), pair("[2050]", g, 2050), pair("[1]", g, 1),
			pair("0-d", g), pair("zero-size", g, 2, 0, 3),
			{"transposed", []operand{rn(61, 7), of(g, 7, 61)}, func(x []*tsr) *tsr { return x[0].T() }, second, []int{7, 61}},
			{"sliced", []operand{rn(9, 14), of(g, 9, 7)}, func(x []*tsr) *tsr { return x[0].Slice(1, 1, 14, 2) }, second, []int{9, 7}},
		}
	}
	for _, l := range []struct {
		name     string
		f        func(p, y *tsr) (*tsr, *tsr)
		into     func(l, g, p, y *tsr)
		layouts  []lossLayout
		gradient func(c int) tolerance
	}{
		{"CrossEntropy", tensor.CrossEntropy, tensor.CrossEntropyInto, []lossLayout{
			ce("[4 3]", []int{4, 3}, []int{4, 3}, same, []int{4, 3}),
			ce("[65 10]", []int{65, 10}, []int{65, 10}, same, []int{65, 10}),
			ce("[3 1100]", []int{3, 1100}, []int{3, 1100}, same, []int{3, 1100}),
			ce("one class", []int{5, 1}, []int{5, 1}, same, []int{5, 1}),
			ce("no rows", []int{0, 5}, []int{0, 5}, same, []int{0, 5}),
			ce("transposed", []int{10, 65}, []int{65, 10}, (*tsr).T, []int{65, 10}),
			ce("sliced", []int{9, 20}, []int{9, 10}, func(x *tsr) *tsr { return x.Slice(1, 1, 20, 2) }, []int{9, 10}),
		}, relative},
		{"MSE", tensor.MSE, tensor.MSEInto, views(normal), func(int) tolerance { return pointwise }},
		{"BCEWithLogits", tensor.BCEWithLogits, tensor.BCEWithLogitsInto, views(positive), func(int) tolerance { return pointwise }},
	} {
		var cases []kase
		for _, v := range l.layouts {
			n, c := 1, 1
			for _, d := range v.shape {
				n *= d
			}
			if len(v.shape) > 0 {
				c = v.shape[len(v.shape)-1]
			}
			lossTol, gradTol := relative(n), l.gradient(c)
			// The gradient's Into dst: a view of every other element of a
			// guard buffer twice as long in the last dimension.
			wide, half := slices.Clone(v.shape), func(x *tsr) *tsr { return x }
			if len(wide) > 0 {
				wide[len(wide)-1] *= 2
				half = func(x *tsr) *tsr { return x.Slice(-1, 1, x.Dim(-1), 2) }
			}
			in := append(slices.Clone(v.in), guarded(wide...))
			g := len(v.in)
			name := l.name + " " + v.name
			cases = append(cases,
				kase{name: name + " loss", in: v.in, tol: lossTol,
					op: func(x []*tsr) *tsr { loss, _ := l.f(v.pred(x), v.target(x)); return loss }},
				kase{name: name + " gradient", in: v.in, tol: gradTol,
					op: func(x []*tsr) *tsr { _, grad := l.f(v.pred(x), v.target(x)); return grad }},
				kase{name: name + " Into loss", in: in, tol: lossTol,
					op: func(x []*tsr) *tsr { loss := on(x[0]); l.into(loss, half(x[g]), v.pred(x), v.target(x)); return loss }},
				kase{name: name + " Into gradient", in: in, tol: gradTol,
					op: func(x []*tsr) *tsr { l.into(on(x[0]), half(x[g]), v.pred(x), v.target(x)); return half(x[g]) }},
				kase{name: name + " Into the loss alone", in: v.in, tol: lossTol,
					op: func(x []*tsr) *tsr { loss := on(x[0]); l.into(loss, nil, v.pred(x), v.target(x)); return loss }},
			)
		}
		run(t, dev, 6, cases)
	}

	logits, err := tensor.New(2, 3).To(dev)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := tensor.FromSlice([]float32{0, 3}, 2).To(dev)
	if err != nil {
		t.Fatal(err)
	}
	var loss *tensor.Tensor
	if Panic(func() { loss, _ = tensor.CrossEntropy(logits, bad) }) == "" {
		var v float32
		if Panic(func() { v = loss.Item() }) == "" && !math.IsNaN(float64(v)) {
			t.Errorf("CrossEntropy with label 3 of 3 classes on %v: loss %v, and no panic", dev, v)
		}
	}
	t.Run("options", func(t *testing.T) { testLossOptions(t, dev) })
}

// TestOptim checks every op of the Optim family on dev: 3 steps of SGD
// (momentum with dampening and weight decay; Nesterov's), Adam (L2
// decay), AdamW, RMSProp (plain; centered, with momentum and weight
// decay), Adam and AdamW with AMSGrad (one with β₂ = 0.5, so that v
// falls below its maximum), Adagrad (lr decay, weight decay), Adamax,
// NAdam (L2 and decoupled decay), the ε of Adagrad and Adamax large
// enough to show, and 8 of RAdam (L2 and decoupled decay; the later steps
// rectified) over parameters of several shapes (empty, 0-d, a matrix, more
// than one block of 1024 elements), each without a gradient in one of the
// steps, their state starting at zero. The result compared is every
// parameter and state tensor after the steps, flattened and joined
// (Concat: dev's Copy family), within pointwise's tolerance; the
// gradients, which the steps only read, must be unchanged.
func TestOptim(t *testing.T, dev tensor.Device) {
	shapes := [][]int{{0}, {}, {3, 4}, {1500}, {7}}
	np := len(shapes)
	type step func(ps, gs []*tsr, s [][]*tsr, started []bool, steps []int64, mu []float64)
	var cases []kase
	for _, r := range []struct {
		name         string
		slots, steps int // steps: 3 unless set
		step         step
	}{
		{"SGD momentum+dampening+wd", 1, 0, func(ps, gs []*tsr, s [][]*tsr, started []bool, _ []int64, _ []float64) {
			tensor.SGDStep(ps, gs, s[0], started, tensor.SGDParams{LR: 0.05, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01})
		}},
		{"SGD nesterov", 1, 0, func(ps, gs []*tsr, s [][]*tsr, started []bool, _ []int64, _ []float64) {
			tensor.SGDStep(ps, gs, s[0], started, tensor.SGDParams{LR: 0.05, Momentum: 0.9, Nesterov: true})
		}},
		{"Adam wd", 2, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.AdamStep(ps, gs, s[0], s[1], steps, tensor.AdamParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1})
		}},
		{"AdamW", 2, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.AdamStep(ps, gs, s[0], s[1], steps, tensor.AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true})
		}},
		{"RMSProp", 3, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, _ []int64, _ []float64) {
			tensor.RMSPropStep(ps, gs, s[0], nil, nil, tensor.RMSPropParams{LR: 1e-2, Alpha: 0.99, Eps: 1e-8})
		}},
		{"RMSProp centered+momentum+wd", 3, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, _ []int64, _ []float64) {
			tensor.RMSPropStep(ps, gs, s[0], s[1], s[2], tensor.RMSPropParams{LR: 1e-2, Alpha: 0.9, Eps: 1e-6, Momentum: 0.5, WeightDecay: 0.05, Centered: true})
		}},
		{"Adam amsgrad+wd", 3, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.AdamAMSGradStep(ps, gs, s[0], s[1], s[2], steps, tensor.AdamParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.5, Eps: 1e-6, WeightDecay: 0.1})
		}},
		{"AdamW amsgrad", 3, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.AdamAMSGradStep(ps, gs, s[0], s[1], s[2], steps, tensor.AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true})
		}},
		{"Adagrad lr decay+wd", 1, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.AdagradStep(ps, gs, s[0], steps, tensor.AdagradParams{LR: 1e-2, LRDecay: 0.1, WeightDecay: 0.05, Eps: 0.1})
		}},
		{"Adamax wd", 2, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.AdamaxStep(ps, gs, s[0], s[1], steps, tensor.AdamaxParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 0.1, WeightDecay: 0.05})
		}},
		{"NAdam wd", 2, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, mu []float64) {
			tensor.NAdamStep(ps, gs, s[0], s[1], steps, mu, tensor.NAdamParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.05, MomentumDecay: 4e-3})
		}},
		{"NAdam decoupled", 2, 0, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, mu []float64) {
			tensor.NAdamStep(ps, gs, s[0], s[1], steps, mu, tensor.NAdamParams{LR: 2e-3, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, MomentumDecay: 4e-3, Decoupled: true})
		}},
		{"RAdam wd (rectified from step 6)", 2, 8, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.RAdamStep(ps, gs, s[0], s[1], steps, tensor.RAdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.05})
		}},
		{"RAdam decoupled", 2, 8, func(ps, gs []*tsr, s [][]*tsr, _ []bool, steps []int64, _ []float64) {
			tensor.RAdamStep(ps, gs, s[0], s[1], steps, tensor.RAdamParams{LR: 1e-3, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, Decoupled: true})
		}},
	} {
		var in []operand
		for range 2 + r.slots { // parameters, gradients, slots
			for _, s := range shapes {
				in = append(in, rn(s...))
			}
		}
		cases = append(cases, kase{name: fmt.Sprintf("%s, %d parameters", r.name, np), in: in, tol: pointwise,
			op: func(x []*tsr) *tsr {
				ps, grads := x[:np], x[np:2*np]
				slots := make([][]*tsr, r.slots)
				for k := range slots {
					slots[k] = x[(2+k)*np : (3+k)*np]
					for _, s := range slots[k] {
						tensor.Fill(s, 0)
					}
				}
				started, steps, mu := make([]bool, np), make([]int64, np), make([]float64, np)
				for i := range mu {
					mu[i] = 1
				}
				n := r.steps
				if n == 0 {
					n = 3
				}
				for step := range n {
					gs := slices.Clone(grads)
					gs[step%np] = nil
					r.step(ps, gs, slots, started, steps, mu)
				}
				var flat []*tsr
				for _, l := range append([][]*tsr{ps}, slots...) {
					for _, v := range l {
						flat = append(flat, v.Reshape(-1))
					}
				}
				return tensor.Concat(0, flat...)
			}})
	}
	run(t, dev, 7, cases)
}
