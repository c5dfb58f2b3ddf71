package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// gradCase is one operation checked by gradCheck: f applies it to Vars
// holding the inputs.
type gradCase struct {
	name   string
	op     string // the Tape method exercised
	inputs []*tensor.Tensor
	f      func(tp *Tape, in []*Var) *Var
	h      float64 // relative step; 0 means 1e-2
}

// gradCheck compares the gradient Backward gives every input of f with
// central differences of the loss Σ f(inputs)·R for a fixed random R. The
// operations run in float32; the loss and the difference quotients are
// formed in float64. Each input element (up to 48 per input, spread over
// it) is moved by ±h with h = c.h·max(1, |x|); the analytic and numeric
// gradients must agree within 2e-3 + 2e-2·|numeric|.
func gradCheck(t *testing.T, c gradCase) {
	t.Helper()
	params := make([]*Var, len(c.inputs))
	for i, x := range c.inputs {
		params[i] = NewParam(x)
	}
	gradCheckVars(t, c.name, params, func(tp *Tape) *Var { return c.f(tp, params) }, c.h)
}

// gradCheckVars is gradCheck of f over the parameters params (a model's,
// or NewParams of a case's inputs), with relative step h (0 means 1e-2).
func gradCheckVars(t *testing.T, name string, params []*Var, f func(tp *Tape) *Var, h float64) {
	t.Helper()
	if h == 0 {
		h = 1e-2
	}
	tp := NewTape()
	out := f(tp)
	r := rand.New(rand.NewPCG(7, 8))
	proj := tensor.RandN(r, out.Value().Shape()...)
	loss := tp.Sum(tp.Mul(out, tp.Const(proj)))
	tp.Backward(loss)

	eval := func() float64 {
		tp := NewTape()
		tp.SetGrad(false)
		y := f(tp).Value().Data()
		var s float64
		for i, v := range y {
			s += float64(v) * float64(proj.Data()[i])
		}
		return s
	}
	for i, p := range params {
		x := p.value.Data()
		g := p.Grad()
		if g == nil {
			t.Errorf("%s: input %d got no gradient", name, i)
			continue
		}
		step := max(1, len(x)/48)
		for j := 0; j < len(x); j += step {
			old := x[j]
			hj := h * max(1, math.Abs(float64(old)))
			x[j] = old + float32(hj)
			up := eval()
			x[j] = old - float32(hj)
			down := eval()
			x[j] = old
			num := (up - down) / (2 * hj)
			got := float64(g.Data()[j])
			if !(math.Abs(got-num) <= 2e-3+2e-2*math.Abs(num)) { // NaN fails too
				t.Errorf("%s: input %d element %d: backward %.6g, finite differences %.6g", name, i, j, got, num)
			}
		}
	}
}

// awayFromZero returns values in ±[0.2, 1.2), so that the kinks of ReLU,
// LeakyReLU and ELU are out of a finite difference's reach.
func awayFromZero(r *rand.Rand, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	d := t.Data()
	for i := range d {
		v := float32(0.2 + r.Float64())
		if r.IntN(2) == 0 {
			v = -v
		}
		d[i] = v
	}
	return t
}

// distinct returns a permutation of well separated values, so that every
// pooling window has a clear maximum.
func distinct(r *rand.Rand, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	d := t.Data()
	for i, k := range r.Perm(len(d)) {
		d[i] = float32(k)*0.05 - float32(len(d))*0.025
	}
	return t
}

func gradCases() []gradCase {
	r := rand.New(rand.NewPCG(1, 2))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	labels := tensor.FromSlice([]float32{2, 0, 4, 1, 3}, 5)
	var cases []gradCase
	add := func(name, op string, f func(tp *Tape, in []*Var) *Var, inputs ...*tensor.Tensor) {
		cases = append(cases, gradCase{name: name, op: op, inputs: inputs, f: f})
	}
	add("MatMul", "MatMul", func(tp *Tape, in []*Var) *Var { return tp.MatMul(in[0], in[1]) }, rn(3, 5), rn(5, 4))
	for _, k := range []ActKind{ActNone, ActReLU, ActLeakyReLU, ActELU, ActGELU, ActSiLU, ActSigmoid, ActTanh} {
		for _, alpha := range []float32{0.1, -0.5} {
			act := Act{Kind: k, Alpha: alpha}
			if alpha < 0 && k != ActLeakyReLU && k != ActELU {
				continue
			}
			add(fmt.Sprintf("Linear/%v/alpha=%v", k, alpha), "Linear", func(tp *Tape, in []*Var) *Var {
				return tp.Linear(in[0], in[1], in[2], act)
			}, awayFromZero(r, 4, 6), rn(5, 6).Contiguous(), rn(5))
			add(fmt.Sprintf("Activate/%v/alpha=%v", k, alpha), "Activate", func(tp *Tape, in []*Var) *Var {
				return tp.Activate(in[0], act)
			}, awayFromZero(r, 3, 7))
		}
	}
	add("Linear/nobias", "Linear", func(tp *Tape, in []*Var) *Var { return tp.Linear(in[0], in[1], nil, Act{}) }, rn(4, 6), rn(3, 6))
	unary := map[string]func(tp *Tape, x *Var) *Var{
		"ReLU": tp0((*Tape).ReLU), "GELU": tp0((*Tape).GELU), "SiLU": tp0((*Tape).SiLU),
		"Sigmoid": tp0((*Tape).Sigmoid), "Tanh": tp0((*Tape).Tanh),
		"Softplus": tp0((*Tape).Softplus), "Erf": tp0((*Tape).Erf), "Neg": tp0((*Tape).Neg),
		"AddScalar": func(tp *Tape, x *Var) *Var { return tp.AddScalar(x, 0.75) },
		"LeakyReLU": func(tp *Tape, x *Var) *Var { return tp.LeakyReLU(x, 0.2) },
		"ELU":       func(tp *Tape, x *Var) *Var { return tp.ELU(x, 1.5) },
		"Scale":     func(tp *Tape, x *Var) *Var { return tp.Scale(x, -2.5) },
		"Sum":       tp0((*Tape).Sum),
		"Mean":      tp0((*Tape).Mean),
		"Flatten":   tp0((*Tape).Flatten),
		"Reshape":   func(tp *Tape, x *Var) *Var { return tp.Reshape(x, 2, -1) },
	}
	for _, name := range sortedKeys(unary) {
		f := unary[name]
		add(name, name, func(tp *Tape, in []*Var) *Var { return f(tp, in[0]) }, awayFromZero(r, 2, 3, 4))
	}
	for _, sh := range [][2][]int{{{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 1, 4}, {3, 1}}} {
		for _, op := range []string{"Add", "Sub", "Mul"} {
			f := map[string]func(*Tape, *Var, *Var) *Var{"Add": (*Tape).Add, "Sub": (*Tape).Sub, "Mul": (*Tape).Mul}[op]
			add(fmt.Sprintf("%s/%v%v", op, sh[0], sh[1]), op, func(tp *Tape, in []*Var) *Var { return f(tp, in[0], in[1]) }, rn(sh[0]...), rn(sh[1]...))
		}
	}
	add("Add/same-operand", "Add", func(tp *Tape, in []*Var) *Var { return tp.Mul(tp.Add(in[0], in[0]), in[0]) }, rn(3, 3))
	for _, p := range []tensor.ConvParams{
		{}, {Padding: [2]int{1, 1}}, {Stride: [2]int{2, 1}, Padding: [2]int{1, 0}, Dilation: [2]int{1, 2}},
		{Groups: 2, Padding: [2]int{1, 1}}, {Padding: [2]int{1, 1}, ReLU: true},
	} {
		add(fmt.Sprintf("Conv2D/%+v", p), "Conv2D", func(tp *Tape, in []*Var) *Var { return tp.Conv2D(in[0], in[1], in[2], p) },
			rn(2, 4, 6, 5), rn(6, 4/max(p.Groups, 1), 3, 3), rn(6))
		if p.ReLU {
			// A weight moves many outputs; a smaller step keeps them on
			// their side of the ReLU's kink.
			cases[len(cases)-1].h = 1e-3
		}
	}
	relu := tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}
	pool := tensor.PoolParams{Kernel: [2]int{2, 2}}
	add("Conv2D+ReLU+MaxPool2D", "MaxPool2D", func(tp *Tape, in []*Var) *Var {
		return tp.MaxPool2D(tp.Conv2D(in[0], in[1], in[2], relu), pool)
	}, rn(2, 3, 6, 6), rn(4, 3, 3, 3), rn(4))
	cases[len(cases)-1].h = 1e-3
	add("Conv2D+ReLU+MaxPool2D/shared", "MaxPool2D", func(tp *Tape, in []*Var) *Var {
		y := tp.Conv2D(in[0], in[1], in[2], relu)
		return tp.Add(tp.Flatten(tp.MaxPool2D(y, pool)), tp.Scale(tp.Flatten(tp.AvgPool2D(y, pool)), 0.5))
	}, rn(2, 3, 6, 6), rn(4, 3, 3, 3), rn(4))
	cases[len(cases)-1].h = 1e-3
	for _, p := range []tensor.ConvParams{relu, {Padding: [2]int{1, 1}}, {Stride: [2]int{2, 2}, ReLU: true}} {
		add(fmt.Sprintf("Conv2DMaxPool/%+v", p), "Conv2DMaxPool", func(tp *Tape, in []*Var) *Var {
			return tp.Conv2DMaxPool(in[0], in[1], in[2], p, pool)
		}, rn(2, 3, 9, 8), rn(4, 3, 3, 3), rn(4))
		cases[len(cases)-1].h = 1e-3
	}
	add("Conv2DMaxPool/nobias", "Conv2DMaxPool", func(tp *Tape, in []*Var) *Var {
		return tp.Conv2DMaxPool(in[0], in[1], nil, relu, pool)
	}, rn(2, 1, 8, 8), rn(3, 1, 3, 3))
	cases[len(cases)-1].h = 1e-3
	// One Var as input and weight: both contributions accumulate.
	add("Conv2DMaxPool/x=w", "Conv2DMaxPool", func(tp *Tape, in []*Var) *Var {
		return tp.Conv2DMaxPool(in[0], in[0], in[1], tensor.ConvParams{Padding: [2]int{1, 1}}, pool)
	}, rn(2, 2, 3, 3), rn(2))
	cases[len(cases)-1].h = 1e-3
	add("Conv2D/nobias", "Conv2D", func(tp *Tape, in []*Var) *Var { return tp.Conv2D(in[0], in[1], nil, tensor.ConvParams{}) }, rn(1, 2, 5, 5), rn(3, 2, 2, 2))
	for _, p := range []tensor.PoolParams{{Kernel: [2]int{2, 2}}, {Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true}} {
		add(fmt.Sprintf("MaxPool2D/%+v", p), "MaxPool2D", func(tp *Tape, in []*Var) *Var { return tp.MaxPool2D(in[0], p) }, distinct(r, 2, 3, 6, 7))
		for _, ex := range []bool{false, true} {
			p.ExcludePad = ex
			add(fmt.Sprintf("AvgPool2D/%+v", p), "AvgPool2D", func(tp *Tape, in []*Var) *Var { return tp.AvgPool2D(in[0], p) }, rn(2, 3, 6, 7))
		}
	}
	for _, training := range []bool{true, false} {
		rm, rv := rn(3), tensor.AddScalar(tensor.Abs(rn(3)), 0.5)
		add(fmt.Sprintf("BatchNorm/training=%v", training), "BatchNorm", func(tp *Tape, in []*Var) *Var {
			// Running statistics are updated in training; give each
			// evaluation the same ones so that the loss is a function.
			m, v := rm.Clone(), rv.Clone()
			return tp.BatchNorm(in[0], in[1], in[2], m, v, training, NormParams{})
		}, rn(4, 3, 2, 3), rn(3), rn(3))
	}
	add("LayerNorm", "LayerNorm", func(tp *Tape, in []*Var) *Var { return tp.LayerNorm(in[0], in[1], in[2], NormParams{Dims: 2}) }, rn(3, 4, 5), rn(4, 5), rn(4, 5))
	add("Dropout", "Dropout", func(tp *Tape, in []*Var) *Var { return tp.Dropout(in[0], 0.3, rand.New(rand.NewPCG(3, 4))) }, rn(4, 8))
	add("Embedding", "Embedding", func(tp *Tape, in []*Var) *Var {
		return tp.Embedding(tensor.FromSlice([]float32{3, 0, 3, 1, 4, 3}, 2, 3), in[0])
	}, rn(5, 4))
	add("CrossEntropy", "CrossEntropy", func(tp *Tape, in []*Var) *Var { return tp.CrossEntropy(in[0], labels) }, tensor.Scale(rn(5, 6), 3))
	target := rn(3, 4)
	add("MSE", "MSE", func(tp *Tape, in []*Var) *Var { return tp.MSE(in[0], target) }, rn(3, 4))
	probs := tensor.RandU(r, 0, 1, 3, 4)
	add("BCEWithLogits", "BCEWithLogits", func(tp *Tape, in []*Var) *Var { return tp.BCEWithLogits(in[0], probs) }, tensor.Scale(rn(3, 4), 4))
	cases = append(cases, tapeOpGradCases()...)
	cases = append(cases, sortOpGradCases()...)
	cases = append(cases, convGradCases()...)
	cases = append(cases, hostOpGradCases()...)
	cases = append(cases, normLossGradCases()...)
	return cases
}

func tp0(f func(*Tape, *Var) *Var) func(*Tape, *Var) *Var { return f }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestGradients(t *testing.T) {
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) { gradCheck(t, c) })
	}
}

// TestEveryOpChecked fails when a differentiable Tape method has no case in
// gradCases, so that a new operation cannot skip its gradient check.
func TestEveryOpChecked(t *testing.T) {
	checked := map[string]bool{}
	for _, c := range gradCases() {
		checked[c.op] = true
	}
	notOps := map[string]bool{"Backward": true, "BackwardRetain": true, "Reset": true, "SetGrad": true, "Const": true, "Grad": true}
	typ := reflect.TypeOf(&Tape{})
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if !notOps[name] && !checked[name] {
			t.Errorf("Tape.%s has no gradient check in gradCases", name)
		}
	}
}

func TestTapeMisuse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	w := NewParam(tensor.RandN(r, 3, 3))
	tests := []struct {
		name, want string
		f          func()
	}{
		{"backward twice", "consumed by an earlier Backward", func() {
			tp := NewTape()
			loss := tp.Sum(tp.ReLU(w))
			tp.Backward(loss)
			tp.Backward(loss)
		}},
		{"non-scalar loss", "is not a single value", func() {
			tp := NewTape()
			tp.Backward(tp.ReLU(w))
		}},
		{"after reset", "before the tape's last Reset", func() {
			tp := NewTape()
			y := tp.ReLU(w)
			tp.Reset()
			tp.Sum(y)
		}},
		{"other tape", "belongs to another tape", func() {
			a, b := NewTape(), NewTape()
			b.Sum(a.ReLU(w))
		}},
		{"no grad", "does not depend on anything", func() {
			tp := NewTape()
			tp.SetGrad(false)
			tp.Backward(tp.Sum(w))
		}},
		{"matmul shapes", "shapes [3 3] and [2 3] do not match", func() {
			NewTape().MatMul(w, NewParam(tensor.New(2, 3)))
		}},
		{"broadcast", "shapes [3 3] and [2] do not broadcast", func() {
			NewTape().Add(w, NewParam(tensor.New(2)))
		}},
		{"dropout p", "probability 1 outside [0, 1)", func() {
			NewTape().Dropout(w, 1, r)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.HasPrefix(msg, "nn: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q, want one containing %q", msg, tc.want)
				}
			}()
			tc.f()
		})
	}
}

func TestAccumulationAndNoGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	w := NewParam(tensor.RandN(r, 4, 3))
	x := tensor.RandN(r, 5, 4)
	tp := NewTape()
	loss := tp.Sum(tp.Tanh(tp.MatMul(tp.Const(x), w)))
	tp.BackwardRetain(loss)
	once := w.Grad().Clone()
	tp.Backward(loss)
	for i, g := range w.Grad().Data() {
		if want := 2 * once.Data()[i]; math.Abs(float64(g-want)) > 1e-5*math.Abs(float64(want))+1e-6 {
			t.Fatalf("accumulated gradient %v, want twice %v", g, once.Data()[i])
		}
	}
	w.ZeroGrad()
	if w.Grad() != nil {
		t.Fatal("Grad after ZeroGrad is not nil")
	}
	tp.Reset()
	tp.SetGrad(false)
	y := tp.Tanh(tp.MatMul(tp.Const(x), w))
	if y.RequiresGrad() || len(tp.nodes) != 0 {
		t.Fatalf("no-grad mode recorded %d operations (requires grad %v)", len(tp.nodes), y.RequiresGrad())
	}
	if w.Grad() != nil {
		t.Fatal("a no-grad pass produced a gradient")
	}
}
