package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// hvpCase is a scalar function of params whose Hessian-vector product
// hvpCheck verifies.
type hvpCase struct {
	name   string
	inputs []*tensor.Tensor
	f      func(tp *Tape, in []*Var) *Var // a single value
	eps    float64                        // the step along v; 0 means 1e-2
}

// hvp returns H·v for the loss f over params, by Grad with CreateGraph and
// a Backward of Σ ⟨gradient, v⟩ (the parameters' gradients are zeroed
// first and after).
func hvp(params []*Var, v []*tensor.Tensor, f func(tp *Tape) *Var) [][]float32 {
	tp := NewTape()
	loss := f(tp)
	gs := tp.Grad([]*Var{loss}, params, GradOptions{CreateGraph: true})
	var s *Var
	for i, g := range gs {
		if g == nil {
			continue
		}
		d := tp.Sum(tp.Mul(g, tp.Const(v[i])))
		if s == nil {
			s = d
		} else {
			s = tp.Add(s, d)
		}
	}
	for _, p := range params {
		p.ZeroGrad()
	}
	res := make([][]float32, len(params))
	if s != nil && s.RequiresGrad() {
		tp.Backward(s)
		for i, p := range params {
			if g := p.Grad(); g != nil {
				res[i] = g.Clone().Data()
			}
			p.ZeroGrad()
		}
	}
	for i := range res {
		if res[i] == nil {
			res[i] = make([]float32, params[i].value.Len())
		}
	}
	return res
}

// firstGrad returns Backward's gradient of f with respect to each of
// params, in float64.
func firstGrad(params []*Var, f func(tp *Tape) *Var) [][]float64 {
	for _, p := range params {
		p.ZeroGrad()
	}
	tp := NewTape()
	tp.Backward(f(tp))
	res := make([][]float64, len(params))
	for i, p := range params {
		res[i] = make([]float64, p.value.Len())
		if g := p.Grad(); g != nil {
			for j, x := range g.Data() {
				res[i][j] = float64(x)
			}
		}
		p.ZeroGrad()
	}
	return res
}

// hvpCheck compares H·v for a random v with central differences of the
// first-order gradient (Backward's, in float32) along v:
// (∇f(θ + εv) - ∇f(θ - εv))/2ε, formed in float64. They must agree within
// 2e-3·max(1, max|H·v|) + 2e-2·|numeric| per element.
func hvpCheck(t *testing.T, c hvpCase) {
	t.Helper()
	eps := c.eps
	if eps == 0 {
		eps = 1e-2
	}
	r := rand.New(rand.NewPCG(11, 12))
	params := make([]*Var, len(c.inputs))
	v := make([]*tensor.Tensor, len(c.inputs))
	for i, x := range c.inputs {
		params[i] = NewParam(x)
		v[i] = tensor.RandN(r, x.Shape()...)
	}
	f := func(tp *Tape) *Var { return c.f(tp, params) }
	got := hvp(params, v, f)
	move := func(s float64) {
		for i, p := range params {
			d, vd := p.value.Data(), v[i].Data()
			for j := range d {
				d[j] += float32(s * float64(vd[j]))
			}
		}
	}
	orig := make([][]float32, len(params))
	for i, p := range params {
		orig[i] = p.value.Clone().Data()
	}
	restore := func() {
		for i, p := range params {
			copy(p.value.Data(), orig[i])
		}
	}
	move(eps)
	up := firstGrad(params, f)
	restore()
	move(-eps)
	down := firstGrad(params, f)
	restore()
	scale := 1.0
	for i := range got {
		for j := range got[i] {
			scale = max(scale, math.Abs((up[i][j]-down[i][j])/(2*eps)))
		}
	}
	nonzero := false
	for i := range got {
		for j, g := range got[i] {
			num := (up[i][j] - down[i][j]) / (2 * eps)
			if math.Abs(float64(g)-num) > 2e-3*scale+2e-2*math.Abs(num) {
				t.Errorf("%s: input %d element %d: H·v %.6g, finite differences of the gradient %.6g", c.name, i, j, g, num)
			}
			nonzero = nonzero || math.Abs(num) > 1e-3
		}
	}
	if !nonzero {
		t.Errorf("%s: H·v is zero everywhere: the case checks nothing", c.name)
	}
}

// positive returns values in [lo, lo+1).
func positiveIn(r *rand.Rand, lo float32, shape ...int) *tensor.Tensor {
	t := tensor.New(shape...)
	for i := range t.Data() {
		t.Data()[i] = lo + float32(r.Float64())
	}
	return t
}

// hvpCases are the operations Grad's CreateGraph supports, each inside
// L = Σ tanh(op(inputs) + ½)·R for a fixed random R (so that linear
// operations have a Hessian too), and two small MLPs.
func hvpCases() []hvpCase {
	r := rand.New(rand.NewPCG(3, 5))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	var cases []hvpCase
	add := func(name string, f func(tp *Tape, in []*Var) *Var, inputs ...*tensor.Tensor) {
		cases = append(cases, hvpCase{name: name, inputs: inputs, f: func(tp *Tape, in []*Var) *Var {
			y := f(tp, in)
			proj := tensor.RandN(rand.New(rand.NewPCG(1, uint64(y.Value().Len()))), y.Shape()...)
			return tp.Sum(tp.Mul(tp.Tanh(tp.AddScalar(y, 0.5)), tp.Const(proj)))
		}})
	}
	binary := map[string]func(*Tape, *Var, *Var) *Var{
		"Add": (*Tape).Add, "Sub": (*Tape).Sub, "Mul": (*Tape).Mul, "Div": (*Tape).Div,
		"Maximum": (*Tape).Maximum, "Minimum": (*Tape).Minimum,
	}
	for _, name := range sortedKeys(binary) {
		for _, sh := range [][2][]int{{{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 1, 4}, {3, 1}}} {
			a, b := rn(sh[0]...), rn(sh[1]...)
			switch name {
			case "Div":
				b = positiveIn(r, 0.5, sh[1]...)
			case "Maximum", "Minimum":
				// On grids 0.0125 apart; a step of 1e-3 keeps their order.
				a, b = distinct(r, sh[0]...), tensor.AddScalar(distinct(r, sh[1]...), 0.0125)
			}
			add(fmt.Sprintf("%s/%v%v", name, sh[0], sh[1]), func(tp *Tape, in []*Var) *Var {
				return binary[name](tp, in[0], in[1])
			}, a, b)
			if name == "Maximum" || name == "Minimum" {
				cases[len(cases)-1].eps = 1e-3
			}
		}
	}
	add("Pow", func(tp *Tape, in []*Var) *Var { return tp.Pow(in[0], in[1]) }, positiveIn(r, 0.5, 3, 4), positiveIn(r, 0.5, 4))
	add("Mul/same-operand", func(tp *Tape, in []*Var) *Var { return tp.Mul(tp.Add(in[0], in[0]), in[0]) }, rn(3, 3))
	unary := map[string]func(tp *Tape, x *Var) *Var{
		"ReLU": tp0((*Tape).ReLU), "GELU": tp0((*Tape).GELU), "SiLU": tp0((*Tape).SiLU),
		"Sigmoid": tp0((*Tape).Sigmoid), "Tanh": tp0((*Tape).Tanh), "Softplus": tp0((*Tape).Softplus),
		"Erf": tp0((*Tape).Erf), "Exp": tp0((*Tape).Exp), "Neg": tp0((*Tape).Neg),
		"Sin": tp0((*Tape).Sin), "Cos": tp0((*Tape).Cos), "Tan": tp0((*Tape).Tan), "Expm1": tp0((*Tape).Expm1),
		"LeakyReLU":   func(tp *Tape, x *Var) *Var { return tp.LeakyReLU(x, 0.2) },
		"ELU":         func(tp *Tape, x *Var) *Var { return tp.ELU(x, 1.5) },
		"ELU/alpha<0": func(tp *Tape, x *Var) *Var { return tp.ELU(x, -0.5) },
		"Scale":       func(tp *Tape, x *Var) *Var { return tp.Scale(x, -2.5) },
		"AddScalar":   func(tp *Tape, x *Var) *Var { return tp.AddScalar(x, 0.25) },
		"Sum":         tp0((*Tape).Sum),
		"Mean":        func(tp *Tape, x *Var) *Var { return tp.Scale(tp.Mean(x), 24) }, // H·v not 1/24² small
		"SumAxes":     func(tp *Tape, x *Var) *Var { return tp.SumAxes(x, false, 0, 2) },
		"MeanAxes":    func(tp *Tape, x *Var) *Var { return tp.MeanAxes(x, true, -1) },
		"MaxAxes":     func(tp *Tape, x *Var) *Var { return tp.MaxAxes(x, false, 1) },
		"Softmax":     func(tp *Tape, x *Var) *Var { return tp.Softmax(x, 1) },
		"LogSoftmax":  func(tp *Tape, x *Var) *Var { return tp.LogSoftmax(x, -1) },
		"Flatten":     tp0((*Tape).Flatten),
		"Reshape":     func(tp *Tape, x *Var) *Var { return tp.Reshape(x, 2, -1) },
		"Transpose":   func(tp *Tape, x *Var) *Var { return tp.Transpose(x, 0, 2) },
		"Permute":     func(tp *Tape, x *Var) *Var { return tp.Permute(x, 1, 2, 0) },
		"Slice":       func(tp *Tape, x *Var) *Var { return tp.Slice(x, 1, -2, 3, 1) },
		"Split":       func(tp *Tape, x *Var) *Var { return tp.Mul(tp.Split(x, 2, 1, 3)[1], tp.Split(x, 2, 3, 1)[0]) },
		"Stack":       func(tp *Tape, x *Var) *Var { return tp.Stack(1, x, tp.Mul(x, x)) },
		"MaskedFill": func(tp *Tape, x *Var) *Var {
			return tp.MaskedFill(x, tensor.FromSlice([]float32{1, 0, 0, 1}, 4), 3)
		},
	}
	for _, name := range sortedKeys(unary) {
		x := awayFromZero(r, 2, 3, 4)
		if name == "Sum" {
			x = tensor.Scale(x, 0.1) // tanh'' of the sum not vanishing
		}
		add(name, func(tp *Tape, in []*Var) *Var { return unary[name](tp, in[0]) }, x)
	}
	// distinct's grid is 0.05 apart; the bounds halfway, a step of 1e-3.
	add("Clamp", func(tp *Tape, in []*Var) *Var { return tp.Clamp(in[0], -0.475, 0.425) }, distinct(r, 2, 3, 4))
	cases[len(cases)-1].eps = 1e-3
	add("Log", func(tp *Tape, in []*Var) *Var { return tp.Log(in[0]) }, positiveIn(r, 0.5, 3, 4))
	add("Log1p", func(tp *Tape, in []*Var) *Var { return tp.Log1p(in[0]) }, positiveIn(r, 0.5, 3, 4))
	// The piecewise-constant ops have a zero gradient: only the other
	// factor's second derivative shows (a step of 1e-3 stays off their
	// jumps on distinct's grid, shifted off the integers and halves).
	steps := map[string]func(tp *Tape, x *Var) *Var{
		"Floor": tp0((*Tape).Floor), "Ceil": tp0((*Tape).Ceil), "Round": tp0((*Tape).Round), "Sign": tp0((*Tape).Sign),
	}
	for _, name := range sortedKeys(steps) {
		f := steps[name]
		add(name, func(tp *Tape, in []*Var) *Var { return tp.Add(f(tp, in[0]), tp.Mul(in[0], in[0])) }, tensor.AddScalar(distinct(r, 3, 4), 0.0125))
		cases[len(cases)-1].eps = 1e-3
	}
	for _, name := range []string{"Mod", "Fmod"} {
		f := map[string]func(*Tape, *Var, *Var) *Var{"Mod": (*Tape).Mod, "Fmod": (*Tape).Fmod}[name]
		// a/b at k + 0.3 ... k + 0.7: a step of 1e-3 stays off the jumps.
		b := tensor.FromSlice([]float32{0.7, 1.3, -2.1, 3.1}, 4)
		a := tensor.New(3, 4)
		for i := range a.Data() {
			a.Data()[i] = b.Data()[i%4] * (float32(r.IntN(7)-3) + 0.3 + 0.4*r.Float32())
		}
		add(name, func(tp *Tape, in []*Var) *Var { return tp.Mul(f(tp, in[0], in[1]), in[1]) }, a, b)
		cases[len(cases)-1].eps = 1e-3
	}
	add("Sqrt", func(tp *Tape, in []*Var) *Var { return tp.Sqrt(in[0]) }, positiveIn(r, 0.5, 3, 4))
	add("Where", func(tp *Tape, in []*Var) *Var {
		return tp.Where(tensor.FromSlice([]float32{1, 0, 1}, 3, 1), in[0], tp.Mul(in[1], in[1]))
	}, rn(3, 4), rn(4))
	for _, sh := range [][2][]int{{{3, 5}, {5, 4}}, {{2, 3, 5}, {5, 4}}, {{2, 1, 3, 4}, {3, 4, 2}}} {
		add(fmt.Sprintf("MatMul/%v%v", sh[0], sh[1]), func(tp *Tape, in []*Var) *Var { return tp.MatMul(in[0], in[1]) }, rn(sh[0]...), rn(sh[1]...))
	}
	for _, k := range []ActKind{ActNone, ActReLU, ActLeakyReLU, ActELU, ActGELU, ActSiLU, ActSigmoid, ActTanh} {
		for _, alpha := range []float32{0.1, -0.5} {
			act := Act{Kind: k, Alpha: alpha}
			if alpha < 0 && k != ActLeakyReLU && k != ActELU {
				continue
			}
			add(fmt.Sprintf("Linear/%v/alpha=%v", k, alpha), func(tp *Tape, in []*Var) *Var {
				return tp.Linear(in[0], in[1], in[2], act)
			}, awayFromZero(r, 4, 6), tensor.Scale(rn(5, 6), 0.02), tensor.FromSlice([]float32{0.5, -0.6, 0.7, -0.8, 0.9}, 5))
		}
	}
	add("Linear/nobias", func(tp *Tape, in []*Var) *Var { return tp.Linear(in[0], in[1], nil, Act{}) }, rn(4, 6), rn(3, 6))
	// The losses as they are (no tanh around them).
	loss := func(name string, f func(tp *Tape, in []*Var) *Var, inputs ...*tensor.Tensor) {
		cases = append(cases, hvpCase{name: name, inputs: inputs, f: f})
	}
	target := rn(3, 4)
	loss("MSE", func(tp *Tape, in []*Var) *Var { return tp.MSE(tp.Mul(in[0], in[0]), target) }, rn(3, 4))
	labels := tensor.FromSlice([]float32{2, 0, 4, 1, 3}, 5)
	loss("CrossEntropy", func(tp *Tape, in []*Var) *Var { return tp.CrossEntropy(in[0], labels) }, rn(5, 6))
	probs := tensor.RandU(r, 0, 1, 3, 4)
	loss("BCEWithLogits", func(tp *Tape, in []*Var) *Var { return tp.BCEWithLogits(in[0], probs) }, rn(3, 4))

	// The MLPs.
	x, y := rn(8, 5), rn(8, 3)
	classes := tensor.FromSlice([]float32{0, 2, 1, 1, 0, 2, 2, 0}, 8)
	mlp := func(tp *Tape, in []*Var) *Var {
		h := tp.Linear(tp.Const(x), in[0], in[1], Act{Kind: ActTanh})
		h = tp.Softplus(tp.Add(tp.MatMul(h, in[2]), in[3]))
		return tp.Linear(h, in[4], in[5], Act{})
	}
	params := func() []*tensor.Tensor {
		return []*tensor.Tensor{tensor.Scale(rn(6, 5), 0.5), rn(6), tensor.Scale(rn(6, 4), 0.5), rn(4), tensor.Scale(rn(3, 4), 0.5), rn(3)}
	}
	loss("MLP/tanh+softplus/MSE", func(tp *Tape, in []*Var) *Var { return tp.MSE(mlp(tp, in), y) }, params()...)
	loss("MLP/tanh+softplus/CrossEntropy", func(tp *Tape, in []*Var) *Var { return tp.CrossEntropy(mlp(tp, in), classes) }, params()...)
	return cases
}

func TestHessianVectorProducts(t *testing.T) {
	for _, c := range hvpCases() {
		t.Run(c.name, func(t *testing.T) { hvpCheck(t, c) })
	}
}

// TestGradMatchesBackward: Grad without CreateGraph gives Backward's
// gradients bit for bit, leaves the parameters' gradients alone and does
// not consume the tape.
func TestGradMatchesBackward(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	w1, b1 := NewParam(tensor.RandN(r, 7, 5)), NewParam(tensor.RandN(r, 7))
	w2 := NewParam(tensor.RandN(r, 3, 7))
	x, labels := tensor.RandN(r, 6, 5), tensor.FromSlice([]float32{0, 2, 1, 1, 0, 2}, 6)
	params := []*Var{w1, b1, w2}
	f := func(tp *Tape) *Var {
		h := tp.Linear(tp.Const(x), w1, b1, Act{Kind: ActGELU})
		h = tp.Mul(h, tp.Sigmoid(h))
		return tp.Add(tp.CrossEntropy(tp.Linear(h, w2, nil, Act{}), labels), tp.Scale(tp.Mean(tp.Mul(w2, w2)), 0.1))
	}
	tp := NewTape()
	loss := f(tp)
	tp.BackwardRetain(loss)
	want := make([][]float32, len(params))
	for i, p := range params {
		want[i] = p.Grad().Clone().Data()
	}
	gs := tp.Grad([]*Var{loss}, params, GradOptions{})
	for i, p := range params {
		if g := p.Grad().Data(); !bitsEqual(g, want[i]) {
			t.Errorf("param %d: Grad changed the parameter's gradient", i)
		}
		if gs[i].RequiresGrad() {
			t.Errorf("param %d: the gradient without CreateGraph requires a gradient", i)
		}
		if !bitsEqual(gs[i].Value().Data(), want[i]) {
			t.Errorf("param %d: Grad's gradient differs from Backward's", i)
		}
	}
	// The tape was kept: a Backward after Grad gives the same gradients.
	for _, p := range params {
		p.ZeroGrad()
	}
	tp.Backward(loss)
	for i, p := range params {
		if !bitsEqual(p.Grad().Data(), want[i]) {
			t.Errorf("param %d: Backward after Grad differs from the first", i)
		}
	}
	// GradOutputs: a weight of 2 on the loss doubles the gradient.
	tp2 := NewTape()
	loss = f(tp2)
	gs = tp2.Grad([]*Var{loss}, params[:1], GradOptions{GradOutputs: []*Var{tp2.Const(tensor.Full(2))}})
	for j, g := range gs[0].Value().Data() {
		if g != 2*want[0][j] {
			t.Fatalf("GradOutputs 2: element %d is %v, want %v", j, g, 2*want[0][j])
		}
	}
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestGradientPenalty: a WGAN-GP style loss D(x)'s mean plus λ·‖∂ΣD/∂x‖²
// through Grad with CreateGraph, whose parameter gradient (a Backward
// through the gradient) must match central differences of the loss.
func TestGradientPenalty(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	w1, b1 := NewParam(tensor.Scale(tensor.RandN(r, 6, 4), 0.7)), NewParam(tensor.RandN(r, 6))
	w2, b2 := NewParam(tensor.Scale(tensor.RandN(r, 1, 6), 0.7)), NewParam(tensor.RandN(r, 1))
	xs := tensor.RandN(r, 5, 4)
	params := []*Var{w1, b1, w2, b2}
	const lambda = 0.5
	f := func(tp *Tape) *Var {
		x := NewParam(xs) // an input that requires a gradient
		d := tp.Linear(tp.Softplus(tp.Linear(x, w1, b1, Act{Kind: ActTanh})), w2, b2, Act{})
		gx := tp.Grad([]*Var{tp.Sum(d)}, []*Var{x}, GradOptions{CreateGraph: true})[0]
		return tp.Add(tp.Mean(d), tp.Scale(tp.Sum(tp.Mul(gx, gx)), lambda))
	}
	tp := NewTape()
	tp.Backward(f(tp))
	eval := func() float64 {
		tp := NewTape()
		return float64(f(tp).Value().Item())
	}
	for i, p := range params {
		g := p.Grad().Data()
		x := p.value.Data()
		for j := range x {
			old := x[j]
			const h = 1e-2
			x[j] = old + h
			up := eval()
			x[j] = old - h
			down := eval()
			x[j] = old
			num := (up - down) / (2 * h)
			if math.Abs(float64(g[j])-num) > 2e-3+2e-2*math.Abs(num) {
				t.Errorf("param %d element %d: gradient %.6g, finite differences %.6g", i, j, g[j], num)
			}
		}
	}
}

// TestGradOfGrad: third derivatives by Grad of Grad: d³/dx³ Σ x³ = 6.
func TestGradOfGrad(t *testing.T) {
	x := NewParam(tensor.FromSlice([]float32{-1.5, 0, 0.5, 2}, 4))
	tp := NewTape()
	g := []*Var{tp.Sum(tp.Mul(tp.Mul(x, x), x))}
	want := [][]float32{{6.75, 0, 0.75, 12}, {-9, 0, 3, 12}, {6, 6, 6, 6}}
	for k, w := range want {
		g = tp.Grad([]*Var{tp.Sum(g[0])}, []*Var{x}, GradOptions{CreateGraph: true})
		for j, v := range g[0].Value().Data() {
			if math.Abs(float64(v-w[j])) > 1e-5 {
				t.Errorf("derivative %d element %d: %v, want %v", k+1, j, v, w[j])
			}
		}
	}
}

// TestGradMisuse: an unsupported operation, and arguments Grad refuses.
func TestGradMisuse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 3))
	w := NewParam(tensor.RandN(r, 2, 1, 3, 3))
	other := NewParam(tensor.RandN(r, 3))
	x := tensor.RandN(r, 1, 1, 5, 5)
	for _, c := range []struct {
		name, want string
		f          func(tp *Tape)
	}{
		{"Conv2D", "nn: Tape.Grad: create_graph through op Conv2D is not supported", func(tp *Tape) {
			y := tp.Sum(tp.Conv2D(tp.Const(x), w, nil, tensor.ConvParams{}))
			tp.Grad([]*Var{y}, []*Var{w}, GradOptions{CreateGraph: true})
		}},
		{"no outputs", "no outputs", func(tp *Tape) { tp.Grad(nil, []*Var{w}, GradOptions{}) }},
		{"not a single value", "is not a single value", func(tp *Tape) {
			tp.Grad([]*Var{tp.Mul(w, w)}, []*Var{w}, GradOptions{})
		}},
		{"grad output shape", "GradOutputs[0] of shape [3]", func(tp *Tape) {
			tp.Grad([]*Var{tp.Mul(w, w)}, []*Var{w}, GradOptions{GradOutputs: []*Var{tp.Const(tensor.New(3))}})
		}},
		{"input without gradient", "does not require a gradient", func(tp *Tape) {
			tp.Grad([]*Var{tp.Sum(w)}, []*Var{tp.Const(x)}, GradOptions{})
		}},
		{"consumed", "consumed", func(tp *Tape) {
			y := tp.Sum(w)
			tp.Backward(y)
			tp.Grad([]*Var{y}, []*Var{w}, GradOptions{})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, c.want) {
					t.Errorf("panic %q, want it to contain %q", msg, c.want)
				}
			}()
			c.f(NewTape())
		})
	}
	// An input the outputs do not depend on gets nil.
	tp := NewTape()
	for _, create := range []bool{false, true} {
		gs := tp.Grad([]*Var{tp.Sum(tp.Mul(w, w))}, []*Var{w, other}, GradOptions{CreateGraph: create})
		if gs[0] == nil || gs[1] != nil {
			t.Errorf("CreateGraph %v: gradients %v, want one for w and nil for the unused input", create, gs)
		}
	}
}

// TestDeviceHessianVectorProduct: the HVP of an MLP (both losses) on the
// stand-in device equals the host's: Grad's second backward composes
// device families only.
func TestDeviceHessianVectorProduct(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(21, 22))
	x, y := tensor.RandN(r, 6, 5), tensor.RandN(r, 6, 3)
	labels := tensor.FromSlice([]float32{0, 2, 1, 1, 0, 2}, 6)
	host := []*tensor.Tensor{tensor.Scale(tensor.RandN(r, 4, 5), 0.5), tensor.RandN(r, 4), tensor.Scale(tensor.RandN(r, 3, 4), 0.5), tensor.RandN(r, 3)}
	v := make([]*tensor.Tensor, len(host))
	for i, h := range host {
		v[i] = tensor.RandN(r, h.Shape()...)
	}
	run := func(dev tensor.Device, ce bool) [][]float32 {
		on := func(h *tensor.Tensor) *tensor.Tensor {
			if dev == tensor.CPU {
				return h
			}
			return onDev(t, h, dev)
		}
		params := make([]*Var, len(host))
		vs := make([]*tensor.Tensor, len(host))
		for i, h := range host {
			params[i], vs[i] = NewParam(on(h)), on(v[i])
		}
		xd, yd, ld := on(x), on(y), on(labels)
		return hvp(params, vs, func(tp *Tape) *Var {
			h := tp.Linear(tp.Const(xd), params[0], params[1], Act{Kind: ActTanh})
			out := tp.Linear(tp.Softplus(h), params[2], params[3], Act{})
			if ce {
				return tp.CrossEntropy(out, ld)
			}
			return tp.MSE(out, yd)
		})
	}
	for _, ce := range []bool{false, true} {
		want, got := run(tensor.CPU, ce), run(testDev, ce)
		for i := range want {
			if e := relErr(got[i], want[i]); e > 1e-5 {
				t.Errorf("CrossEntropy %v: param %d: H·v on the device differs from the host's by %g (relative)", ce, i, e)
			}
		}
	}
}

// gradGraphOperandCases are operandCases of the Tape methods of this
// file's feature: the elementwise functions it added, and Grad.
func gradGraphOperandCases(p func(shape ...int) *Var) []operandCase {
	return []operandCase{
		{"Softplus", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Softplus(v) }},
		{"Erf", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Erf(v) }},
		{"Neg", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Neg(v) }},
		{"AddScalar", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.AddScalar(v, 1) }},
		{"Tape.Grad", "outputs[0]", []int{}, func(tp *Tape, v *Var) { tp.Grad([]*Var{v}, []*Var{p(2)}, GradOptions{}) }},
		{"Tape.Grad", "inputs[0]", []int{2, 3}, func(tp *Tape, v *Var) {
			tp.Grad([]*Var{tp.Sum(p(2))}, []*Var{v}, GradOptions{})
		}},
		{"Tape.Grad", "GradOutputs[0]", []int{2, 3}, func(tp *Tape, v *Var) {
			w := p(2, 3)
			tp.Grad([]*Var{tp.Mul(w, w)}, []*Var{w}, GradOptions{GradOutputs: []*Var{v}})
		}},
	}
}

// A Hessian-vector product: the gradient of f(x) = (Σ x²)(Σ x) with
// CreateGraph, then the gradient of its product with v.
func ExampleTape_Grad() {
	x := NewParam(tensor.FromSlice([]float32{1, 2}, 2))
	tp := NewTape()
	f := tp.Mul(tp.Sum(tp.Mul(x, x)), tp.Sum(x))
	g := tp.Grad([]*Var{f}, []*Var{x}, GradOptions{CreateGraph: true})[0]
	v := tp.Const(tensor.FromSlice([]float32{1, 0}, 2))
	hv := tp.Grad([]*Var{tp.Sum(tp.Mul(g, v))}, []*Var{x}, GradOptions{})[0]
	fmt.Println("gradient", g.Value().Data())
	fmt.Println("H·v", hv.Value().Data())
	// Output:
	// gradient [11 17]
	// H·v [10 6]
}

// TestGradGraphPrunes: with CreateGraph, Grad records the second backward
// of the nodes between the inputs and the outputs only.
func TestGradGraphPrunes(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 9))
	w, x := NewParam(tensor.RandN(r, 3, 4)), NewParam(tensor.RandN(r, 2, 4))
	recorded := func(inputs func(h *Var) []*Var) int {
		tp := NewTape()
		h := tp.Tanh(tp.Linear(x, w, nil, Act{}))
		y := tp.Sum(tp.Mul(h, h))
		before := len(tp.nodes)
		tp.Grad([]*Var{y}, inputs(h), GradOptions{CreateGraph: true})
		return len(tp.nodes) - before
	}
	hOnly := recorded(func(h *Var) []*Var { return []*Var{h} })
	xOnly := recorded(func(*Var) []*Var { return []*Var{x} })
	both := recorded(func(*Var) []*Var { return []*Var{x, w} })
	// h: Sum's and Mul's; x adds Tanh's and the product by w; w the
	// product by x.
	if !(hOnly < xOnly && xOnly < both) {
		t.Errorf("nodes recorded: %d for h, %d for x, %d for x and w; want increasing", hOnly, xOnly, both)
	}
}
