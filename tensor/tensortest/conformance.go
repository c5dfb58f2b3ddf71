package tensortest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// u is float32's unit roundoff.
const u = 0x1p-24

// tolerance is the difference allowed between an element of a device's
// result and the CPU's (see above).
type tolerance struct {
	exact    bool
	abs, rel float64
	n        int  // reduction length
	absOp    bool // the scale S of the n term is the op on |operands|, else |w|
}

var (
	exactly   = tolerance{exact: true}
	pointwise = tolerance{abs: 1e-6, rel: 1e-5}
)

// summed is the tolerance of sums of n terms (Sum, Mean, MatMul, ...).
func summed(n int) tolerance { return tolerance{abs: 1e-6, rel: 1e-5, n: n, absOp: true} }

// relative is the tolerance of results with a relative error growing with
// n (Var, Std, Softmax).
func relative(n int) tolerance { return tolerance{abs: 1e-6, rel: 1e-5, n: n} }

// logarithmic is the tolerance of logs of sums of n terms (LogSumExp,
// LogSoftmax), and of results of order 1 computed from sums of n terms of
// order 1 (Softmax's gradients, the normalizations and theirs).
func logarithmic(n int) tolerance { return tolerance{abs: 1e-6 + 2*float64(n)*u, rel: 1e-5} }

// gen says how an operand's elements are drawn.
type gen uint8

const (
	normal   gen = iota // N(0, 1)
	positive            // |N(0, 1)| + 0.25
	steps               // -1, -0.5, 0, 0.5, 1: ties and equal elements
	nans                // steps, with NaN in about one element in seven
	special             // ±0, ±Inf, NaN, ±1e-30, ±1e30, ±1, ±20
	guard               // the guard value, for the buffers of Into forms
	index               // integers naming positions of an axis of length n: -n..n-1
	label               // integers 0..n-1 (indices that Abs leaves as they are)
	unit                // uniform in [0.01, 0.99]: probabilities
)

// guardValue fills the buffers that the Into forms write views of.
const guardValue = 1234.5

// operand is an operand of a case: a host tensor of the given shape,
// copied to the device under test unless host is set (a 0-d scalar that
// stays on the host). n is the axis length that index and label operands
// name positions of.
type operand struct {
	shape []int
	gen   gen
	host  bool
	n     int
}

func rn(shape ...int) operand         { return operand{shape: shape, gen: normal} }
func of(g gen, shape ...int) operand  { return operand{shape: shape, gen: g} }
func guarded(shape ...int) operand    { return operand{shape: shape, gen: guard} }
func hostScalar(g gen) operand        { return operand{gen: g, host: true} }
func idx(n int, shape ...int) operand { return operand{shape: shape, gen: index, n: n} }
func lab(n int, shape ...int) operand { return operand{shape: shape, gen: label, n: n} }
func ops(g gen, shapes ...[]int) []operand {
	o := make([]operand, len(shapes))
	for i, s := range shapes {
		o[i] = of(g, s...)
	}
	return o
}

// make draws the operand's elements from r.
func (o operand) make(r *rand.Rand) *tensor.Tensor {
	n := 1
	for _, d := range o.shape {
		n *= d
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), 1e-30, -1e-30, 1e30, -1e30, 1, -1, 20, -20}
	data := make([]float32, n)
	for i := range data {
		switch o.gen {
		case normal:
			data[i] = float32(r.NormFloat64())
		case positive:
			data[i] = float32(math.Abs(r.NormFloat64()) + 0.25)
		case steps, nans:
			data[i] = float32(r.IntN(5)-2) / 2
			if o.gen == nans && r.IntN(7) == 0 {
				data[i] = float32(math.NaN())
			}
		case special:
			data[i] = specials[i%len(specials)]
		case guard:
			data[i] = guardValue
		case index:
			data[i] = float32(r.IntN(2*o.n) - o.n)
		case label:
			data[i] = float32(r.IntN(o.n))
		case unit:
			data[i] = float32(0.01 + 0.98*r.Float64())
		}
	}
	return tensor.FromSlice(data, o.shape...)
}

// A kase is one check: op on the operands in, on the device and on the
// CPU. op returns the result (for an Into form, the dst view it wrote).
type kase struct {
	name       string
	in         []operand
	op         func(x []*tensor.Tensor) *tensor.Tensor
	tol        tolerance
	contiguous bool // the result must be contiguous (Contiguous, Clone)
}

// run runs each case as a subtest of t on dev.
func run(t *testing.T, dev tensor.Device, seed uint64, cases []kase) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 21))
	for _, c := range cases {
		bases := make([]*tensor.Tensor, len(c.in))
		for i, o := range c.in {
			bases[i] = o.make(r)
		}
		t.Run(c.name, func(t *testing.T) { c.check(t, dev, bases) })
	}
}

// call runs op on x, returning its result or what it panicked with.
func call(op func(x []*tensor.Tensor) *tensor.Tensor, x []*tensor.Tensor) (res *tensor.Tensor, msg string) {
	msg = Panic(func() { res = op(x) })
	return res, msg
}

// clones returns copies of ts (on the host).
func clones(ts []*tensor.Tensor, f func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
	c := make([]*tensor.Tensor, len(ts))
	for i, t := range ts {
		c[i] = f(t)
	}
	return c
}

func (c kase) check(t *testing.T, dev tensor.Device, bases []*tensor.Tensor) {
	host := clones(bases, (*tensor.Tensor).Clone)
	want, msg := call(c.op, host)
	if msg != "" {
		t.Fatalf("on the CPU: %s", msg) // a defect of the suite
	}
	on := make([]*tensor.Tensor, len(bases))
	for i, b := range bases {
		on[i] = b.Clone()
		if !c.in[i].host {
			d, err := on[i].To(dev)
			if err != nil {
				t.Fatalf("operand %d to %v: %v", i, dev, err)
			}
			on[i] = d
		}
	}
	got, msg := call(c.op, on)
	if msg != "" {
		t.Fatalf("on %v: %s", dev, msg)
	}
	if got.Device() != dev {
		t.Fatalf("result on %v, want %v", got.Device(), dev)
	}
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("result of shape %v, want the CPU's %v", got.Shape(), want.Shape())
	}
	if c.contiguous && !got.IsContiguous() {
		t.Errorf("result with strides %v, want contiguous", got.Strides())
	}
	var scale *tensor.Tensor
	if c.tol.n > 0 && c.tol.absOp {
		scale, _ = call(c.op, clones(bases, tensor.Abs))
	}
	compare(t, "result", back(t, got), want, scale, c.tol)
	// What the op wrote outside its result, or in operands it only reads.
	for i, b := range bases {
		if c.in[i].host {
			continue
		}
		g, w := back(t, on[i]).Data(), host[i].Data()
		for j, v := range w {
			if v == guardValue && g[j] != guardValue || same(b.Data()[j], v) && !same(g[j], v) {
				t.Errorf("operand %d (shape %v): element %d is %v after the op, the CPU's %v", i, b.Shape(), j, g[j], v)
				break
			}
		}
	}
}

// back copies x to the host.
func back(t *testing.T, x *tensor.Tensor) *tensor.Tensor {
	h, err := x.To(tensor.CPU)
	if err != nil {
		t.Fatalf("copying a result of shape %v from %v: %v", x.Shape(), x.Device(), err)
	}
	return h
}

// same reports whether a and b are the same value (NaN as NaN).
func same(a, b float32) bool { return a == b || a != a && b != b }

// compare checks got against the CPU's want, element by element, within
// tol (scale: the op on the absolute values of the operands, or nil).
func compare(t *testing.T, what string, got, want, scale *tensor.Tensor, tol tolerance) {
	t.Helper()
	g, w := got.Data(), want.Data()
	var s []float32
	if scale != nil {
		s = scale.Data()
	}
	bad := 0
	for i, wv := range w {
		gv := g[i]
		ok, allowed := same(gv, wv), 0.0
		if !ok && !tol.exact && !math.IsInf(float64(wv), 0) && wv == wv {
			S := math.Abs(float64(wv))
			if s != nil {
				S = math.Abs(float64(s[i]))
			}
			allowed = tol.abs + tol.rel*math.Abs(float64(wv)) + 2*float64(tol.n)*u*S
			ok = math.Abs(float64(gv)-float64(wv)) <= allowed
		}
		if !ok {
			if bad < 5 {
				t.Errorf("%s element %d of %v = %v, want the CPU's %v (±%.3g)", what, i, want.Shape(), gv, wv, allowed)
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements differ in all", what, bad)
	}
}

// on returns a zero-filled tensor like x's device, for the results that
// a case allocates itself.
func on(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	d, err := tensor.NewOn(x.Device(), shape...)
	if err != nil {
		panic(err)
	}
	return d
}

// TestAll runs every family's test on dev.
func TestAll(t *testing.T, dev tensor.Device) {
	for _, f := range []struct {
		name string
		test func(*testing.T, tensor.Device)
	}{
		{"MatMul", TestMatMul}, {"Conv", TestConv}, {"Elementwise", TestElementwise},
		{"Reduce", TestReduce}, {"Copy", TestCopy},
		{"Pool", TestPool}, {"Index", TestIndex}, {"Norm", TestNorm},
		{"Loss", TestLoss}, {"Optim", TestOptim}, {"Random", TestRandom}, {"Sort", TestSort},
		{"Sample", TestSample},
	} {
		t.Run(f.name, func(t *testing.T) { f.test(t, dev) })
	}
}

// tsr is shorthand for the tensors of the cases.
type tsr = tensor.Tensor

// A layout is a case before its name is prefixed with the op's and its
// tolerance is set; sized is one with the reduction length of the op.
type layout struct {
	name string
	in   []operand
	op   func(x []*tsr) *tsr
}

type sized struct {
	name string
	in   []operand
	op   func(x []*tsr) *tsr
	n    int
}

// binaries are the binary elementwise ops, with the operands they take.
var binaries = []struct {
	name string
	f    func(a, b *tsr) *tsr
	into func(dst, a, b *tsr) *tsr
	gen  gen
	tol  tolerance
}{
	{"Add", tensor.Add, tensor.AddInto, normal, pointwise},
	{"Sub", tensor.Sub, tensor.SubInto, normal, pointwise},
	{"Mul", tensor.Mul, tensor.MulInto, normal, pointwise},
	{"Div", tensor.Div, tensor.DivInto, normal, pointwise},
	{"Maximum", tensor.Maximum, tensor.MaximumInto, steps, exactly},
	{"Minimum", tensor.Minimum, tensor.MinimumInto, steps, exactly},
	{"Pow", tensor.Pow, tensor.PowInto, positive, pointwise},
	{"Greater", tensor.Greater, tensor.GreaterInto, steps, exactly},
	{"GreaterEqual", tensor.GreaterEqual, tensor.GreaterEqualInto, steps, exactly},
	{"Less", tensor.Less, tensor.LessInto, steps, exactly},
	{"LessEqual", tensor.LessEqual, tensor.LessEqualInto, steps, exactly},
	{"Equal", tensor.Equal, tensor.EqualInto, steps, exactly},
	{"NotEqual", tensor.NotEqual, tensor.NotEqualInto, steps, exactly},
}

// unaries are the unary elementwise ops (Into forms with their
// arguments), with the operands they take.
var unaries = []struct {
	name string
	into func(dst, x *tsr) *tsr
	gen  gen
}{
	{"Exp", tensor.ExpInto, normal},
	{"Log", tensor.LogInto, positive},
	{"Sigmoid", tensor.SigmoidInto, normal},
	{"SiLU", tensor.SiLUInto, normal},
	{"Tanh", tensor.TanhInto, normal},
	{"Softplus", tensor.SoftplusInto, normal},
	{"Erf", tensor.ErfInto, normal},
	{"GELU", tensor.GELUInto, normal},
	{"GELUTanh", tensor.GELUTanhInto, normal},
	{"Abs", tensor.AbsInto, normal},
	{"Neg", tensor.NegInto, normal},
	{"Sqrt", tensor.SqrtInto, positive},
	{"ReLU", tensor.ReLUInto, normal},
	{"LeakyReLU", func(d, x *tsr) *tsr { return tensor.LeakyReLUInto(d, x, 0.1) }, normal},
	{"ELU", func(d, x *tsr) *tsr { return tensor.ELUInto(d, x, 1.5) }, normal},
	{"Clamp", func(d, x *tsr) *tsr { return tensor.ClampInto(d, x, -0.5, 0.7) }, normal},
	{"Scale", func(d, x *tsr) *tsr { return tensor.ScaleInto(d, x, -2.5) }, normal},
	{"AddScalar", func(d, x *tsr) *tsr { return tensor.AddScalarInto(d, x, 0.75) }, normal},
}

// gradients are the unary ops with a gradient (UnaryGrad), their
// arguments, forward (for y) and operand.
var gradients = []struct {
	name string
	op   tensor.ElemOp
	arg  [2]float32
	fwd  func(x *tsr) *tsr
	gen  gen
}{
	{"Exp", tensor.ElemExp, [2]float32{}, tensor.Exp, normal},
	{"Log", tensor.ElemLog, [2]float32{}, tensor.Log, positive},
	{"Sigmoid", tensor.ElemSigmoid, [2]float32{}, tensor.Sigmoid, normal},
	{"SiLU", tensor.ElemSiLU, [2]float32{}, tensor.SiLU, normal},
	{"Tanh", tensor.ElemTanh, [2]float32{}, tensor.Tanh, normal},
	{"Softplus", tensor.ElemSoftplus, [2]float32{}, tensor.Softplus, normal},
	{"Erf", tensor.ElemErf, [2]float32{}, tensor.Erf, normal},
	{"GELU", tensor.ElemGELU, [2]float32{}, tensor.GELU, normal},
	{"GELUTanh", tensor.ElemGELUTanh, [2]float32{}, tensor.GELUTanh, normal},
	{"Abs", tensor.ElemAbs, [2]float32{}, tensor.Abs, normal},
	{"Neg", tensor.ElemNeg, [2]float32{}, tensor.Neg, normal},
	{"Sqrt", tensor.ElemSqrt, [2]float32{}, tensor.Sqrt, positive},
	{"ReLU", tensor.ElemReLU, [2]float32{}, tensor.ReLU, steps},
	{"LeakyReLU", tensor.ElemLeakyReLU, [2]float32{0.1}, func(x *tsr) *tsr { return tensor.LeakyReLU(x, 0.1) }, steps},
	{"LeakyReLU alpha<0", tensor.ElemLeakyReLU, [2]float32{-0.5}, func(x *tsr) *tsr { return tensor.LeakyReLU(x, -0.5) }, steps},
	{"ELU", tensor.ElemELU, [2]float32{1.5}, func(x *tsr) *tsr { return tensor.ELU(x, 1.5) }, normal},
	{"ELU alpha<0", tensor.ElemELU, [2]float32{-0.3}, func(x *tsr) *tsr { return tensor.ELU(x, -0.3) }, normal},
	{"Clamp", tensor.ElemClamp, [2]float32{-0.5, 0.5}, func(x *tsr) *tsr { return tensor.Clamp(x, -0.5, 0.5) }, steps},
	{"Scale", tensor.ElemScale, [2]float32{-2.5}, func(x *tsr) *tsr { return tensor.Scale(x, -2.5) }, normal},
	{"AddScalar", tensor.ElemAddScalar, [2]float32{0.75}, func(x *tsr) *tsr { return tensor.AddScalar(x, 0.75) }, normal},
}

// TestElementwise checks every op of the Elementwise family on dev: each
// binary op and comparison over equal shapes, broadcasting (size-1 and
// missing dimensions, stride-0 views), zero-size and one-element shapes,
// transposed and sliced operands, 0-d operands on the device and on the
// host, and its Into form into a contiguous or strided dst and in place;
// each unary op over those layouts and special values (±0, ±Inf, NaN,
// tiny and huge); Where and Fill; the gradient of each unary op
// (UnaryGrad, given the op's input and output) over those layouts, at
// special values and at the ties of steps (ReLU at 0), its Into form into
// a strided dx and in place over dy.
func TestElementwise(t *testing.T, dev tensor.Device) {
	var cases []kase
	for _, b := range binaries {
		g := b.gen
		res := func(x []*tsr) *tsr { return b.f(x[0], x[1]) }
		for _, l := range []layout{
			{"[7 33]", ops(g, []int{7, 33}, []int{7, 33}), res},
			{"[257]", ops(g, []int{257}, []int{257}), res},
			{"broadcast [4 1 5] [3 1]", ops(g, []int{4, 1, 5}, []int{3, 1}), res},
			{"broadcast [2 3 33] [33]", ops(g, []int{2, 3, 33}, []int{33}), res},
			{"zero-size [0 3] [3]", ops(g, []int{0, 3}, []int{3}), res},
			{"zero-size [2 0] [2 1]", ops(g, []int{2, 0}, []int{2, 1}), res},
			{"one element [1] [1 1]", ops(g, []int{1}, []int{1, 1}), res},
			{"0-d", ops(g, []int{}, []int{}), res},
			{"0-d host scalar b", []operand{of(g, 5, 7), hostScalar(g)}, res},
			{"0-d host scalar a", []operand{hostScalar(g), of(g, 5, 7)}, res},
			{"transposed", ops(g, []int{7, 5}, []int{7, 5}), func(x []*tsr) *tsr { return b.f(x[0].T(), x[1].T()) }},
			{"sliced", ops(g, []int{9, 14}, []int{18, 7}), func(x []*tsr) *tsr { return b.f(x[0].Slice(1, 1, 14, 2), x[1].Slice(0, 0, 18, 2)) }},
			{"stride 0", ops(g, []int{9, 7}, []int{1, 7}), func(x []*tsr) *tsr { return b.f(x[0], x[1].Expand(9, 7)) }},
			{"Into", append([]operand{guarded(7, 33)}, ops(g, []int{7, 33}, []int{33})...), func(x []*tsr) *tsr { return b.into(x[0], x[1], x[2]) }},
			{"Into strided dst", append([]operand{guarded(33, 14)}, ops(g, []int{7, 33}, []int{7, 1})...),
				func(x []*tsr) *tsr { return b.into(x[0].Slice(1, 0, 14, 2).T(), x[1], x[2]) }},
			{"Into zero-size", append([]operand{guarded(0, 5)}, ops(g, []int{0, 5}, []int{5})...), func(x []*tsr) *tsr { return b.into(x[0], x[1], x[2]) }},
			{"Into in place", ops(g, []int{7, 33}, []int{33}), func(x []*tsr) *tsr { return b.into(x[0], x[0], x[1]) }},
		} {
			cases = append(cases, kase{name: b.name + " " + l.name, in: l.in, op: l.op, tol: b.tol})
		}
	}
	for _, un := range unaries {
		g := un.gen
		res := func(x []*tsr) *tsr { return un.into(on(x[0], x[0].Shape()...), x[0]) }
		for _, l := range []layout{
			{"[7 33]", ops(g, []int{7, 33}), res},
			{"[257]", ops(g, []int{257}), res},
			{"zero-size", ops(g, []int{0, 5}), res},
			{"0-d", ops(g, []int{}), res},
			{"special values", ops(special, []int{2, 13}), res},
			{"transposed", ops(g, []int{33, 7}), func(x []*tsr) *tsr { return un.into(on(x[0], 7, 33), x[0].T()) }},
			{"sliced", ops(g, []int{9, 14}), func(x []*tsr) *tsr { return un.into(on(x[0], 9, 7), x[0].Slice(1, 1, 14, 2)) }},
			{"stride 0", ops(g, []int{1, 7}), func(x []*tsr) *tsr { return un.into(on(x[0], 9, 7), x[0].Expand(9, 7)) }},
			{"Into strided dst", []operand{guarded(33, 14), of(g, 7, 33)}, func(x []*tsr) *tsr { return un.into(x[0].Slice(1, 0, 14, 2).T(), x[1]) }},
			{"Into in place", ops(g, []int{7, 33}), func(x []*tsr) *tsr { return un.into(x[0], x[0]) }},
		} {
			cases = append(cases, kase{name: un.name + " " + l.name, in: l.in, op: l.op, tol: pointwise})
		}
	}
	for _, gr := range gradients {
		g := gr.gen
		grad := func(dx, dy, x *tsr) *tsr {
			if dx == nil {
				return tensor.UnaryGrad(gr.op, dy, x, gr.fwd(x), gr.arg)
			}
			return tensor.UnaryGradInto(dx, gr.op, dy, x, gr.fwd(x), gr.arg)
		}
		res := func(x []*tsr) *tsr { return grad(nil, x[1], x[0]) }
		for _, l := range []layout{
			{"[7 33]", []operand{of(g, 7, 33), rn(7, 33)}, res},
			{"[257]", []operand{of(g, 257), rn(257)}, res},
			{"zero-size", []operand{of(g, 0, 5), rn(0, 5)}, res},
			{"0-d", []operand{of(g), rn()}, res},
			{"special values", []operand{of(special, 2, 13), rn(2, 13)}, res},
			{"transposed", []operand{of(g, 33, 7), rn(7, 33)}, func(x []*tsr) *tsr { return grad(nil, x[1], x[0].T()) }},
			{"stride-0 dy", []operand{of(g, 7, 33), rn(1, 33)}, func(x []*tsr) *tsr { return grad(nil, x[1].Expand(7, 33), x[0]) }},
			{"Into strided dx", []operand{guarded(33, 14), of(g, 7, 33), rn(7, 33)},
				func(x []*tsr) *tsr { return grad(x[0].Slice(1, 0, 14, 2).T(), x[2], x[1]) }},
			{"Into in place", []operand{of(g, 7, 33), rn(7, 33)}, func(x []*tsr) *tsr { return grad(x[1], x[1], x[0]) }},
		} {
			cases = append(cases, kase{name: "UnaryGrad " + gr.name + " " + l.name, in: l.in, op: l.op, tol: pointwise})
		}
	}
	where := func(x []*tsr) *tsr { return tensor.Where(x[0], x[1], x[2]) }
	for _, l := range []layout{
		{"[7 33]", []operand{of(steps, 7, 33), rn(7, 33), rn(7, 33)}, where},
		{"NaN cond", []operand{of(nans, 7, 33), rn(7, 33), rn(7, 33)}, where},
		{"broadcast", []operand{of(steps, 7, 1), rn(33), rn(2, 7, 33)}, where},
		{"0-d host scalar", []operand{of(steps, 5, 7), hostScalar(normal), rn(5, 7)}, where},
		{"zero-size", []operand{of(steps, 0, 3), rn(3), rn(0, 3)}, where},
		{"transposed and stride 0", []operand{of(steps, 33, 7), rn(1, 33), rn(7, 33)},
			func(x []*tsr) *tsr { return tensor.Where(x[0].T(), x[1].Expand(7, 33), x[2]) }},
		{"Into strided dst", []operand{guarded(33, 14), of(steps, 7, 33), rn(7, 33), rn(7, 33)},
			func(x []*tsr) *tsr { return tensor.WhereInto(x[0].Slice(1, 0, 14, 2).T(), x[1], x[2], x[3]) }},
	} {
		cases = append(cases, kase{name: "Where " + l.name, in: l.in, op: l.op, tol: exactly})
	}
	for _, l := range []layout{
		{"[7 33]", []operand{guarded(7, 33)}, func(x []*tsr) *tsr { return tensor.Fill(x[0], -3.25) }},
		{"strided", []operand{guarded(33, 14)}, func(x []*tsr) *tsr { return tensor.Fill(x[0].Slice(1, 0, 14, 2).T(), 0.5) }},
		{"zero-size", []operand{guarded(0, 4)}, func(x []*tsr) *tsr { return tensor.Fill(x[0], 1) }},
		{"0-d", []operand{guarded()}, func(x []*tsr) *tsr { return tensor.Fill(x[0], 2) }},
	} {
		cases = append(cases, kase{name: "Fill " + l.name, in: l.in, op: l.op, tol: exactly})
	}
	run(t, dev, 1, cases)
}

// reductions are the reductions over axes, with their tolerance for a
// reduction of length n.
var reductions = []struct {
	name  string
	f     func(x *tsr, keepdims bool, axes ...int) *tsr
	tol   func(n int) tolerance
	empty bool // defined over zero elements
}{
	{"Sum", tensor.Sum, summed, true},
	{"Mean", tensor.Mean, summed, true},
	{"Max", tensor.Max, func(int) tolerance { return exactly }, false},
	{"Min", tensor.Min, func(int) tolerance { return exactly }, false},
	{"Var", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Var(x, 0, k, axes...) }, relative, true},
	{"Var ddof 1", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Var(x, 1, k, axes...) }, relative, true},
	{"Std", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Std(x, 0, k, axes...) }, relative, true},
	{"Std ddof 1", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Std(x, 1, k, axes...) }, relative, true},
	{"LogSumExp", tensor.LogSumExp, logarithmic, true},
	// foldaxes.go's, in float64 (the device's order its own).
	{"Prod", tensor.Prod, relative, true},
	{"Norm p=1", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, 1, k, axes...) }, summed, true},
	{"Norm p=2", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, 2, k, axes...) }, relative, true},
	{"Norm p=Inf", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, math.Inf(1), k, axes...) }, func(int) tolerance { return exactly }, false},
	// Norm's other orders: the family's NormP.
	{"Norm p=0", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, 0, k, axes...) }, func(int) tolerance { return exactly }, true},
	{"Norm p=3", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, 3, k, axes...) }, relative, true},
	{"Norm p=0.5", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, 0.5, k, axes...) }, relative, true},
	{"Norm p=-1.5", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, -1.5, k, axes...) }, relative, false},
	{"Norm p=-Inf", func(x *tsr, k bool, axes ...int) *tsr { return tensor.Norm(x, math.Inf(-1), k, axes...) }, func(int) tolerance { return exactly }, false},
	{"Any", tensor.Any, func(int) tolerance { return exactly }, true},
	{"All", tensor.All, func(int) tolerance { return exactly }, true},
}

// TestReduce checks every op of the Reduce family on dev: each reduction
// over all axes, one, several (given in any order, negative), keepdims or
// not, of transposed, sliced and stride-0 operands, zero-size ones where
// the reduction is defined, one-element and 0-d ones; ArgMax and ArgMin
// along each axis, with ties and NaN; Softmax and LogSoftmax along every
// axis, with their Into forms, and their gradients (SoftmaxBackward,
// LogSoftmaxBackward, given the output) likewise; SumToInto into every
// broadcast shape.
func TestReduce(t *testing.T, dev tensor.Device) {
	var cases []kase
	for _, red := range reductions {
		for _, l := range []struct {
			name  string
			in    operand
			view  func(x *tsr) *tsr
			keep  bool
			axes  []int
			n     int
			empty bool
		}{
			{name: "[7 33] all", in: rn(7, 33), n: 231},
			{name: "[7 33] axis 0", in: rn(7, 33), axes: []int{0}, n: 7},
			{name: "[7 33] axis -1 keepdims", in: rn(7, 33), keep: true, axes: []int{-1}, n: 33},
			{name: "[2 3 257] axes 2 0", in: rn(2, 3, 257), axes: []int{2, 0}, n: 514},
			{name: "[2 3 257] axis 1 keepdims", in: rn(2, 3, 257), keep: true, axes: []int{1}, n: 3},
			{name: "[257] all", in: rn(257), n: 257},
			{name: "ties", in: of(steps, 5, 33), axes: []int{1}, n: 33},
			{name: "transposed", in: rn(33, 7), view: (*tsr).T, axes: []int{1}, n: 33},
			{name: "sliced", in: rn(9, 14), view: func(x *tsr) *tsr { return x.Slice(1, 1, 14, 2) }, axes: []int{0}, n: 9},
			{name: "stride 0", in: rn(1, 33), view: func(x *tsr) *tsr { return x.Expand(7, 33) }, axes: []int{0}, n: 7},
			{name: "one element", in: rn(1, 1), axes: []int{0}, n: 1},
			{name: "0-d", in: rn(), n: 1},
			{name: "zero-size output", in: rn(5, 0), axes: []int{0}, n: 5},
			{name: "zero-size reduction", in: rn(0, 5), axes: []int{0}, empty: true},
		} {
			if l.empty && !red.empty {
				continue
			}
			view := l.view
			if view == nil {
				view = func(x *tsr) *tsr { return x }
			}
			cases = append(cases, kase{name: red.name + " " + l.name, in: []operand{l.in}, tol: red.tol(l.n),
				op: func(x []*tsr) *tsr { return red.f(view(x[0]), l.keep, l.axes...) }})
		}
	}
	for _, arg := range []struct {
		name string
		f    func(x *tsr, axis int, keepdims bool) *tsr
	}{{"ArgMax", tensor.ArgMax}, {"ArgMin", tensor.ArgMin}} {
		for _, l := range []struct {
			name string
			in   operand
			op   func(x *tsr) *tsr
		}{
			{"[7 33] axis 1", rn(7, 33), func(x *tsr) *tsr { return arg.f(x, 1, false) }},
			{"[7 33] axis 0 keepdims", rn(7, 33), func(x *tsr) *tsr { return arg.f(x, 0, true) }},
			{"[2 3 257] axis -1", rn(2, 3, 257), func(x *tsr) *tsr { return arg.f(x, -1, false) }},
			{"[2 3 257] axis 1", rn(2, 3, 257), func(x *tsr) *tsr { return arg.f(x, 1, false) }},
			{"ties", of(steps, 7, 33), func(x *tsr) *tsr { return arg.f(x, 1, false) }},
			{"NaN", of(nans, 7, 33), func(x *tsr) *tsr { return arg.f(x, 1, false) }},
			{"transposed", rn(33, 7), func(x *tsr) *tsr { return arg.f(x.T(), 1, false) }},
			{"stride 0", rn(7, 1), func(x *tsr) *tsr { return arg.f(x.Expand(7, 5), 1, false) }},
			{"zero-size", rn(0, 5), func(x *tsr) *tsr { return arg.f(x, 1, false) }},
			{"one element", rn(1), func(x *tsr) *tsr { return arg.f(x, 0, false) }},
		} {
			cases = append(cases, kase{name: arg.name + " " + l.name, in: []operand{l.in}, tol: exactly,
				op: func(x []*tsr) *tsr { return l.op(x[0]) }})
		}
	}
	for _, sm := range []struct {
		name string
		into func(dst, x *tsr, axis int) *tsr
		tol  func(n int) tolerance
	}{{"Softmax", tensor.SoftmaxInto, relative}, {"LogSoftmax", tensor.LogSoftmaxInto, logarithmic}} {
		res := func(axis int) func(x []*tsr) *tsr {
			return func(x []*tsr) *tsr { return sm.into(on(x[0], x[0].Shape()...), x[0], axis) }
		}
		for _, l := range []sized{
			{"[4 7 33] axis 0", []operand{rn(4, 7, 33)}, res(0), 4},
			{"[4 7 33] axis 1", []operand{rn(4, 7, 33)}, res(1), 7},
			{"[4 7 33] axis -1", []operand{rn(4, 7, 33)}, res(-1), 33},
			{"[257]", []operand{rn(257)}, res(0), 257},
			{"one element", []operand{rn(3, 1)}, res(1), 1},
			{"zero-size", []operand{rn(0, 5)}, res(1), 5},
			{"transposed", []operand{rn(33, 7)}, func(x []*tsr) *tsr { return sm.into(on(x[0], 7, 33), x[0].T(), 1) }, 33},
			{"sliced", []operand{rn(9, 14)}, func(x []*tsr) *tsr { return sm.into(on(x[0], 9, 7), x[0].Slice(1, 1, 14, 2), 0) }, 9},
			{"stride 0", []operand{rn(7, 1)}, func(x []*tsr) *tsr { return sm.into(on(x[0], 7, 5), x[0].Expand(7, 5), 1) }, 5},
			{"Into strided dst", []operand{guarded(33, 14), rn(7, 33)},
				func(x []*tsr) *tsr { return sm.into(x[0].Slice(1, 0, 14, 2).T(), x[1], 1) }, 33},
		} {
			cases = append(cases, kase{name: sm.name + " " + l.name, in: l.in, op: l.op, tol: sm.tol(l.n)})
		}
	}
	for _, sb := range []struct {
		name string
		fwd  func(x *tsr, axis int) *tsr
		back func(dx, y, dy *tsr, axis int) *tsr
	}{
		{"SoftmaxBackward", tensor.Softmax, tensor.SoftmaxBackwardInto},
		{"LogSoftmaxBackward", tensor.LogSoftmax, tensor.LogSoftmaxBackwardInto},
	} {
		// x[0] is the forward's input, x[1] dy; the forward runs first.
		grad := func(dx, x, dy *tsr, axis int) *tsr {
			if dx == nil {
				dx = on(x, x.Shape()...)
			}
			return sb.back(dx, sb.fwd(x, axis), dy, axis)
		}
		res := func(axis int) func(x []*tsr) *tsr {
			return func(x []*tsr) *tsr { return grad(nil, x[0], x[1], axis) }
		}
		for _, l := range []sized{
			{"[4 7 33] axis 0", []operand{rn(4, 7, 33), rn(4, 7, 33)}, res(0), 4},
			{"[4 7 33] axis 1", []operand{rn(4, 7, 33), rn(4, 7, 33)}, res(1), 7},
			{"[4 7 33] axis -1", []operand{rn(4, 7, 33), rn(4, 7, 33)}, res(-1), 33},
			{"[257]", []operand{rn(257), rn(257)}, res(0), 257},
			{"one element", []operand{rn(3, 1), rn(3, 1)}, res(1), 1},
			{"zero-size", []operand{rn(0, 5), rn(0, 5)}, res(1), 5},
			{"transposed", []operand{rn(33, 7), rn(33, 7)}, func(x []*tsr) *tsr { return grad(nil, x[0].T(), x[1].T(), 1) }, 33},
			{"stride-0 dy", []operand{rn(7, 5), rn(7, 1)}, func(x []*tsr) *tsr { return grad(nil, x[0], x[1].Expand(7, 5), 1) }, 5},
			{"Into strided dx", []operand{rn(7, 33), rn(7, 33), guarded(33, 14)},
				func(x []*tsr) *tsr { return grad(x[2].Slice(1, 0, 14, 2).T(), x[0], x[1], 1) }, 33},
			{"Into in place", []operand{rn(7, 33), rn(7, 33)}, func(x []*tsr) *tsr { return grad(x[1], x[0], x[1], 0) }, 7},
		} {
			cases = append(cases, kase{name: sb.name + " " + l.name, in: l.in, op: l.op, tol: logarithmic(l.n)})
		}
	}
	sumTo := func(x []*tsr) *tsr { return tensor.SumToInto(x[0], x[1]) }
	for _, l := range []sized{
		{"[33] from [7 33]", []operand{rn(33), rn(7, 33)}, sumTo, 7},
		{"[7 1] from [7 33]", []operand{rn(7, 1), rn(7, 33)}, sumTo, 33},
		{"[1 1] from [7 33]", []operand{rn(1, 1), rn(7, 33)}, sumTo, 231},
		{"0-d from [7 33]", []operand{rn(), rn(7, 33)}, sumTo, 231},
		{"[3 1] from [2 3 257]", []operand{rn(3, 1), rn(2, 3, 257)}, sumTo, 514},
		{"same shape", []operand{rn(7, 33), rn(7, 33)}, sumTo, 1},
		{"zero-size x", []operand{rn(5), rn(0, 5)}, sumTo, 0},
		{"transposed x", []operand{rn(7), rn(7, 33)}, func(x []*tsr) *tsr { return tensor.SumToInto(x[0], x[1].T()) }, 33},
		{"stride-0 x", []operand{rn(33), rn(1, 33)}, func(x []*tsr) *tsr { return tensor.SumToInto(x[0], x[1].Expand(7, 33)) }, 7},
		{"strided dst", []operand{guarded(33, 2), rn(7, 33)}, func(x []*tsr) *tsr { return tensor.SumToInto(x[0].Index(1, 1), x[1]) }, 7},
	} {
		cases = append(cases, kase{name: "SumToInto " + l.name, in: l.in, op: l.op, tol: summed(l.n + 1)})
	}
	run(t, dev, 2, cases)
}

// TestCopy checks every op of the Copy family on dev: CopyInto (equal
// shapes, broadcast, transposed and strided src and dst, zero-size, a 0-d
// host or device src), Contiguous and Clone of views (the result
// contiguous), Reshape of a view that must copy, Concat and Stack along
// every axis with views and zero-size operands.
func TestCopy(t *testing.T, dev tensor.Device) {
	cp := func(x []*tsr) *tsr { return tensor.CopyInto(x[0], x[1]) }
	var cases []kase
	for _, l := range []layout{
		{"CopyInto [7 33]", []operand{guarded(7, 33), rn(7, 33)}, cp},
		{"CopyInto broadcast [1 33]", []operand{guarded(7, 33), rn(1, 33)}, cp},
		{"CopyInto broadcast [33]", []operand{guarded(2, 7, 33), rn(33)}, cp},
		{"CopyInto 0-d host scalar", []operand{guarded(7, 5), hostScalar(normal)}, cp},
		{"CopyInto 0-d", []operand{guarded(7, 5), rn()}, cp},
		{"CopyInto zero-size", []operand{guarded(0, 5), rn(5)}, cp},
		{"CopyInto transposed src", []operand{guarded(7, 33), rn(33, 7)}, func(x []*tsr) *tsr { return tensor.CopyInto(x[0], x[1].T()) }},
		{"CopyInto strided dst", []operand{guarded(33, 14), rn(7, 33)}, func(x []*tsr) *tsr { return tensor.CopyInto(x[0].Slice(1, 0, 14, 2).T(), x[1]) }},
		{"CopyInto stride-0 src", []operand{guarded(7, 33), rn(1, 33)}, func(x []*tsr) *tsr { return tensor.CopyInto(x[0], x[1].Expand(7, 33)) }},
		{"CopyInto [257]", []operand{guarded(257), rn(257)}, cp},
	} {
		cases = append(cases, kase{name: l.name, in: l.in, op: l.op, tol: exactly})
	}
	for _, l := range []struct {
		name string
		in   operand
		op   func(x *tsr) *tsr
	}{
		{"Contiguous transposed", rn(33, 7), func(x *tsr) *tsr { return x.T().Contiguous() }},
		{"Contiguous sliced", rn(9, 14), func(x *tsr) *tsr { return x.Slice(1, 1, 14, 2).Contiguous() }},
		{"Contiguous stride 0", rn(1, 33), func(x *tsr) *tsr { return x.Expand(7, 33).Contiguous() }},
		{"Contiguous permuted", rn(2, 3, 257), func(x *tsr) *tsr { return x.Permute(2, 0, 1).Contiguous() }},
		{"Contiguous zero-size", rn(0, 5), func(x *tsr) *tsr { return x.T().Contiguous() }},
		{"Clone", rn(7, 33), (*tsr).Clone},
		{"Clone transposed", rn(33, 7), func(x *tsr) *tsr { return x.T().Clone() }},
		{"Clone 0-d", rn(), (*tsr).Clone},
		{"Reshape transposed", rn(33, 7), func(x *tsr) *tsr { return x.T().Reshape(3, 77) }},
	} {
		cases = append(cases, kase{name: l.name, in: []operand{l.in}, op: func(x []*tsr) *tsr { return l.op(x[0]) }, tol: exactly, contiguous: true})
	}
	for _, l := range []layout{
		{"Concat axis 0", []operand{rn(2, 33), rn(5, 33), rn(0, 33)}, func(x []*tsr) *tsr { return tensor.Concat(0, x...) }},
		{"Concat axis 1 views", []operand{rn(7, 3), rn(5, 7), rn(1, 2)},
			func(x []*tsr) *tsr { return tensor.Concat(1, x[0], x[1].T(), x[2].Expand(7, 2)) }},
		{"Concat axis -1 [2 3 257]", []operand{rn(2, 3, 257), rn(2, 3, 1)}, func(x []*tsr) *tsr { return tensor.Concat(-1, x...) }},
		{"Concat one", []operand{rn(7, 33)}, func(x []*tsr) *tsr { return tensor.Concat(0, x[0].T()) }},
		{"Stack axis 0", []operand{rn(7, 33), rn(7, 33), rn(7, 33)}, func(x []*tsr) *tsr { return tensor.Stack(0, x...) }},
		{"Stack axis 2 views", []operand{rn(7, 33), rn(33, 7)}, func(x []*tsr) *tsr { return tensor.Stack(2, x[0], x[1].T()) }},
		{"Stack zero-size", []operand{rn(0, 4), rn(0, 4)}, func(x []*tsr) *tsr { return tensor.Stack(1, x...) }},
		{"Stack 0-d", []operand{rn(), rn()}, func(x []*tsr) *tsr { return tensor.Stack(0, x...) }},
	} {
		cases = append(cases, kase{name: l.name, in: l.in, op: l.op, tol: exactly})
	}
	run(t, dev, 3, cases)
}

// TestMatMul checks MatMul and MatMulInto on dev: matrices of edge and
// odd sizes (1, 7, 33, 257, zero-size M, K or N), vectors on either side,
// batched operands with broadcast batch dimensions (size 1, missing,
// stride 0), transposed and sliced operands, Into a contiguous or
// strided dst.
func TestMatMul(t *testing.T, dev tensor.Device) {
	mm := func(x []*tsr) *tsr { return tensor.MatMul(x[0], x[1]) }
	var cases []kase
	for _, l := range []sized{
		{"[7 33] [33 5]", []operand{rn(7, 33), rn(33, 5)}, mm, 33},
		{"[1 1] [1 1]", []operand{rn(1, 1), rn(1, 1)}, mm, 1},
		{"[33 257] [257 7]", []operand{rn(33, 257), rn(257, 7)}, mm, 257},
		{"M 0", []operand{rn(0, 5), rn(5, 3)}, mm, 5},
		{"K 0", []operand{rn(4, 0), rn(0, 3)}, mm, 0},
		{"N 0", []operand{rn(4, 5), rn(5, 0)}, mm, 5},
		{"vector a", []operand{rn(33), rn(33, 5)}, mm, 33},
		{"vector b", []operand{rn(7, 33), rn(33)}, mm, 33},
		{"vectors", []operand{rn(33), rn(33)}, mm, 33},
		{"batched", []operand{rn(3, 7, 5), rn(3, 5, 4)}, mm, 5},
		{"batch broadcast [2 1 7 5] [3 5 4]", []operand{rn(2, 1, 7, 5), rn(3, 5, 4)}, mm, 5},
		{"batched a, matrix b", []operand{rn(3, 7, 5), rn(5, 4)}, mm, 5},
		{"matrix a, batched b", []operand{rn(7, 5), rn(3, 5, 4)}, mm, 5},
		{"stride-0 batch", []operand{rn(1, 7, 5), rn(3, 5, 4)}, func(x []*tsr) *tsr { return tensor.MatMul(x[0].Expand(3, 7, 5), x[1]) }, 5},
		{"transposed a", []operand{rn(33, 7), rn(33, 5)}, func(x []*tsr) *tsr { return tensor.MatMul(x[0].T(), x[1]) }, 33},
		{"transposed b", []operand{rn(7, 33), rn(5, 33)}, func(x []*tsr) *tsr { return tensor.MatMul(x[0], x[1].T()) }, 33},
		{"transposed both", []operand{rn(33, 7), rn(5, 33)}, func(x []*tsr) *tsr { return tensor.MatMul(x[0].T(), x[1].T()) }, 33},
		{"batched transposed", []operand{rn(3, 5, 7), rn(3, 4, 5)},
			func(x []*tsr) *tsr { return tensor.MatMul(x[0].Transpose(1, 2), x[1].Transpose(1, 2)) }, 5},
		{"sliced", []operand{rn(9, 66), rn(33, 10)}, func(x []*tsr) *tsr { return tensor.MatMul(x[0].Slice(1, 0, 66, 2), x[1].Slice(1, 1, 10, 3)) }, 33},
		{"Into", []operand{guarded(7, 5), rn(7, 33), rn(33, 5)}, func(x []*tsr) *tsr { return tensor.MatMulInto(x[0], x[1], x[2]) }, 33},
		{"Into strided dst", []operand{guarded(5, 14), rn(7, 33), rn(33, 5)},
			func(x []*tsr) *tsr { return tensor.MatMulInto(x[0].Slice(1, 0, 14, 2).T(), x[1], x[2]) }, 33},
	} {
		cases = append(cases, kase{name: "MatMul " + l.name, in: l.in, op: l.op, tol: summed(l.n)})
	}
	run(t, dev, 4, cases)
}

// TestConv checks Conv2D, Conv2DBackwardInput and Conv2DBackwardWeight
// (and their Into forms, into strided results) on dev, over strides,
// padding, dilation, groups (depthwise included), 1×1 and asymmetric
// kernels, a bias, the fused ReLU, a zero-size batch and a strided input.
func TestConv(t *testing.T, dev tensor.Device) {
	var cases []kase
	for _, l := range []struct {
		name    string
		x, w    []int
		p       tensor.ConvParams
		bias    bool
		strided bool // x is every other image of a batch twice as large
	}{
		{name: "3×3", x: []int{2, 3, 9, 9}, w: []int{4, 3, 3, 3}, bias: true},
		{name: "stride 2 padding 1 ReLU", x: []int{2, 3, 9, 8}, w: []int{5, 3, 3, 3}, bias: true,
			p: tensor.ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, ReLU: true}},
		{name: "dilation 2 padding 2", x: []int{1, 2, 11, 9}, w: []int{3, 2, 3, 3},
			p: tensor.ConvParams{Dilation: [2]int{2, 2}, Padding: [2]int{2, 2}}},
		{name: "groups 2", x: []int{2, 4, 7, 7}, w: []int{6, 2, 3, 3}, bias: true,
			p: tensor.ConvParams{Groups: 2, Stride: [2]int{2, 1}, Padding: [2]int{1, 0}}},
		{name: "depthwise", x: []int{1, 4, 8, 8}, w: []int{4, 1, 3, 3}, p: tensor.ConvParams{Groups: 4, Padding: [2]int{1, 1}}},
		{name: "1×1", x: []int{2, 33, 5, 5}, w: []int{7, 33, 1, 1}, bias: true},
		{name: "1×5 stride 1,3 dilation 1,2", x: []int{1, 3, 6, 17}, w: []int{2, 3, 1, 5},
			p: tensor.ConvParams{Stride: [2]int{1, 3}, Dilation: [2]int{1, 2}}},
		{name: "zero batch", x: []int{0, 3, 5, 5}, w: []int{2, 3, 3, 3}},
		{name: "strided input", x: []int{2, 3, 6, 6}, w: []int{4, 3, 3, 3}, strided: true, p: tensor.ConvParams{Padding: [2]int{1, 1}}},
	} {
		y := tensor.Conv2DShape(tensor.New(l.x...), tensor.New(l.w...), l.p)
		g := l.p.Groups
		if g == 0 {
			g = 1
		}
		kk := l.w[2] * l.w[3]
		nFwd, nIn, nW := l.w[1]*kk+1, l.w[0]/g*kk, y[0]*y[2]*y[3]
		xs := slices.Clone(l.x)
		xv := func(x *tsr) *tsr { return x }
		if l.strided {
			xs[0] *= 2
			xv = func(x *tsr) *tsr { return x.Slice(0, 0, xs[0], 2) }
		}
		in := []operand{rn(xs...), rn(l.w...), rn(l.w[0])}
		bias := func(x []*tsr) *tsr {
			if l.bias {
				return x[2]
			}
			return nil
		}
		// dst views of a guard buffer twice as wide as the result.
		wide := func(s []int) []int { return append(slices.Clone(s[:3]), 2*s[3]) }
		half := func(x *tsr) *tsr { return x.Slice(3, 1, x.Dim(3), 2) }
		cases = append(cases,
			kase{name: "Conv2D " + l.name, in: in, tol: summed(nFwd),
				op: func(x []*tsr) *tsr { return tensor.Conv2D(xv(x[0]), x[1], bias(x), l.p) }},
			kase{name: "Conv2DInto " + l.name, in: append(slices.Clone(in), guarded(wide(y[:])...)), tol: summed(nFwd),
				op: func(x []*tsr) *tsr { return tensor.Conv2DInto(half(x[3]), xv(x[0]), x[1], bias(x), l.p) }},
			kase{name: "Conv2DBackwardInput " + l.name, in: []operand{rn(y[:]...), rn(l.w...)}, tol: summed(nIn),
				op: func(x []*tsr) *tsr { return tensor.Conv2DBackwardInput(x[0], x[1], l.x, l.p) }},
			kase{name: "Conv2DBackwardInputInto " + l.name, in: []operand{rn(y[:]...), rn(l.w...), guarded(wide(l.x)...)}, tol: summed(nIn),
				op: func(x []*tsr) *tsr { return tensor.Conv2DBackwardInputInto(half(x[2]), x[0], x[1], l.p) }},
			kase{name: "Conv2DBackwardWeight " + l.name, in: []operand{rn(y[:]...), rn(xs...)}, tol: summed(nW),
				op: func(x []*tsr) *tsr { return tensor.Conv2DBackwardWeight(x[0], xv(x[1]), l.w, l.p) }},
			kase{name: "Conv2DBackwardWeightInto " + l.name, in: []operand{rn(y[:]...), rn(xs...), guarded(wide(l.w)...)}, tol: summed(nW),
				op: func(x []*tsr) *tsr { return tensor.Conv2DBackwardWeightInto(half(x[2]), x[0], xv(x[1]), l.p) }},
		)
	}
	run(t, dev, 5, cases)
}

// TestPool checks MaxPool2D (its maxima and its indices), AvgPool2D and
// their gradients (and their Into forms, into strided views of a guard
// buffer) on dev, over kernel sizes, strides, padding, ceil mode and
// ExcludePad, 2×2 windows on even and odd planes, 1×1, ties and NaN
// (the first in row-major window order wins), a zero-size batch, and
// strided and transposed inputs. The gradients' sums may be in any
// order.
func TestPool(t *testing.T, dev tensor.Device) {
	var cases []kase
	for _, l := range []struct {
		name    string
		x       []int
		p       tensor.PoolParams
		g       gen
		strided bool // x is every other image of a batch twice as large
		swapped bool // x is a [C, N, H, W] operand with N and C swapped
	}{
		{name: "2×2", x: []int{2, 3, 8, 8}, p: tensor.PoolParams{Kernel: [2]int{2, 2}}},
		{name: "2×2 odd plane", x: []int{2, 3, 7, 9}, p: tensor.PoolParams{Kernel: [2]int{2, 2}}},
		{name: "2×2 ties and NaN", x: []int{2, 3, 8, 8}, p: tensor.PoolParams{Kernel: [2]int{2, 2}}, g: nans},
		{name: "3×3 stride 2 padding 1", x: []int{2, 3, 9, 8}, p: tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}},
		{name: "3×2 stride 1,3 padding 1 ceil", x: []int{1, 2, 7, 8},
			p: tensor.PoolParams{Kernel: [2]int{3, 2}, Stride: [2]int{1, 3}, Padding: [2]int{1, 1}, CeilMode: true}},
		{name: "2×2 ceil partial windows", x: []int{1, 2, 5, 5}, p: tensor.PoolParams{Kernel: [2]int{2, 2}, CeilMode: true}},
		{name: "3×3 stride 2 padding 1 ExcludePad", x: []int{1, 2, 7, 6},
			p: tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, ExcludePad: true}},
		{name: "3×3 ties and NaN", x: []int{1, 2, 9, 9}, p: tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}}, g: nans},
		{name: "1×1", x: []int{1, 33, 3, 3}, p: tensor.PoolParams{Kernel: [2]int{1, 1}}},
		{name: "zero batch", x: []int{0, 3, 4, 4}, p: tensor.PoolParams{Kernel: [2]int{2, 2}}},
		{name: "strided input", x: []int{2, 3, 6, 6}, p: tensor.PoolParams{Kernel: [2]int{2, 2}}, strided: true},
		{name: "transposed input", x: []int{2, 3, 6, 7}, p: tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}, swapped: true},
	} {
		p := l.p
		y := tensor.Pool2DShape(tensor.New(l.x...), p)
		xs := slices.Clone(l.x)
		xv := func(x *tsr) *tsr { return x }
		switch {
		case l.strided:
			xs[0] *= 2
			xv = func(x *tsr) *tsr { return x.Slice(0, 0, xs[0], 2) }
		case l.swapped:
			xs[0], xs[1] = xs[1], xs[0]
			xv = func(x *tsr) *tsr { return x.Transpose(0, 1) }
		}
		// Windows overlapping one input element: the terms of a
		// gradient's sum.
		s := [2]int{p.Stride[0], p.Stride[1]}
		for i, v := range s {
			if v == 0 {
				s[i] = p.Kernel[i]
			}
		}
		nb := (p.Kernel[0] + s[0] - 1) / s[0] * ((p.Kernel[1] + s[1] - 1) / s[1])
		// dst views of a guard buffer twice as wide as the result.
		wide := func(s []int) []int { return append(slices.Clone(s[:3]), 2*s[3]) }
		half := func(x *tsr) *tsr { return x.Slice(3, 1, x.Dim(3), 2) }
		maxOf := func(x *tsr) (*tsr, *tsr) { return tensor.MaxPool2D(xv(x), p) }
		// The gradient of the maximum takes the indices of positive
		// inputs, which Abs (the scale S) leaves where they are.
		pos := of(positive, xs...)
		cases = append(cases,
			kase{name: "MaxPool2D " + l.name, in: []operand{of(l.g, xs...)}, tol: exactly,
				op: func(x []*tsr) *tsr { m, _ := maxOf(x[0]); return m }},
			kase{name: "MaxPool2D indices " + l.name, in: []operand{of(l.g, xs...)}, tol: exactly,
				op: func(x []*tsr) *tsr { _, i := maxOf(x[0]); return i }},
			kase{name: "MaxPool2DInto " + l.name, in: []operand{of(l.g, xs...), guarded(wide(y[:])...)}, tol: exactly,
				op: func(x []*tsr) *tsr { m, _ := tensor.MaxPool2DInto(half(x[1]), nil, xv(x[0]), p); return m }},
			kase{name: "MaxPool2DInto indices only " + l.name, in: []operand{of(l.g, xs...), guarded(wide(y[:])...)}, tol: exactly,
				op: func(x []*tsr) *tsr { _, i := tensor.MaxPool2DInto(nil, half(x[1]), xv(x[0]), p); return i }},
			kase{name: "AvgPool2D " + l.name, in: []operand{rn(xs...)}, tol: summed(p.Kernel[0] * p.Kernel[1]),
				op: func(x []*tsr) *tsr { return tensor.AvgPool2D(xv(x[0]), p) }},
			kase{name: "AvgPool2DInto " + l.name, in: []operand{rn(xs...), guarded(wide(y[:])...)}, tol: summed(p.Kernel[0] * p.Kernel[1]),
				op: func(x []*tsr) *tsr { return tensor.AvgPool2DInto(half(x[1]), xv(x[0]), p) }},
			kase{name: "MaxPool2DBackward " + l.name, in: []operand{pos, rn(y[:]...)}, tol: summed(nb),
				op: func(x []*tsr) *tsr { _, i := maxOf(x[0]); return tensor.MaxPool2DBackward(x[1], i, l.x, p) }},
			kase{name: "MaxPool2DBackwardInto " + l.name, in: []operand{pos, rn(y[:]...), guarded(wide(l.x)...)}, tol: summed(nb),
				op: func(x []*tsr) *tsr { _, i := maxOf(x[0]); return tensor.MaxPool2DBackwardInto(half(x[2]), x[1], i, p) }},
			kase{name: "AvgPool2DBackward " + l.name, in: []operand{rn(y[:]...)}, tol: summed(nb),
				op: func(x []*tsr) *tsr { return tensor.AvgPool2DBackward(x[0], l.x, p) }},
			kase{name: "AvgPool2DBackwardInto " + l.name, in: []operand{rn(y[:]...), guarded(wide(l.x)...)}, tol: summed(nb),
				op: func(x []*tsr) *tsr { return tensor.AvgPool2DBackwardInto(half(x[1]), x[0], p) }},
		)
	}
	// Adaptive pooling: x [..., H, W] to out, windows overlapping (7 to 5),
	// of uneven sizes (7 to 3), growing (3 to 5), to nothing; ties and NaN
	// for the maximum; a 2-D, a 3-D and a transposed input. The averages
	// and the average's gradient are the CPU's bit for bit (the sums in
	// float64; the gradient's terms added in the CPU's order); the
	// maximum's gradient adds (at most four terms) in any order.
	for _, l := range []struct {
		name string
		x    []int
		out  [2]int
		g    gen
		tr   bool
	}{
		{"7×6 to 5×3", []int{2, 3, 7, 6}, [2]int{5, 3}, normal, false},
		{"9×9 to 3×4 ties and NaN", []int{1, 2, 9, 9}, [2]int{3, 4}, nans, false},
		{"3×4 to 5×7", []int{4, 3, 4}, [2]int{5, 7}, normal, false},
		{"2-D 8×5 to 1×1", []int{8, 5}, [2]int{1, 1}, steps, false},
		{"to nothing", []int{2, 3, 4}, [2]int{0, 2}, normal, false},
		{"zero batch", []int{0, 2, 4, 4}, [2]int{2, 2}, normal, false},
		{"transposed", []int{2, 3, 6, 7}, [2]int{4, 3}, normal, true},
	} {
		xs := slices.Clone(l.x)
		xv := func(x *tsr) *tsr { return x }
		if l.tr {
			xs[0], xs[1] = xs[1], xs[0]
			xv = func(x *tsr) *tsr { return x.Transpose(0, 1) }
		}
		ys := append(slices.Clone(l.x[:len(l.x)-2]), l.out[0], l.out[1])
		wide := func(s []int) []int { w := slices.Clone(s); w[len(w)-1] *= 2; return w }
		half := func(x *tsr) *tsr { return x.Slice(-1, 1, x.Dim(-1), 2) }
		out := l.out
		cases = append(cases,
			kase{name: "AdaptiveMaxPool2D " + l.name, in: []operand{of(l.g, xs...)}, tol: exactly,
				op: func(x []*tsr) *tsr {
					m, i := tensor.AdaptiveMaxPool2D(xv(x[0]), out)
					return tensor.Concat(0, m.Reshape(-1), i.Reshape(-1))
				}},
			kase{name: "AdaptiveMaxPool2DInto " + l.name, in: []operand{of(l.g, xs...), guarded(wide(ys)...), guarded(wide(ys)...)}, tol: exactly,
				op: func(x []*tsr) *tsr {
					tensor.AdaptiveMaxPool2DInto(half(x[1]), half(x[2]), xv(x[0]))
					return tensor.Concat(0, x[1].Reshape(-1), x[2].Reshape(-1))
				}},
			kase{name: "AdaptiveAvgPool2D " + l.name, in: []operand{rn(xs...)}, tol: exactly,
				op: func(x []*tsr) *tsr { return tensor.AdaptiveAvgPool2D(xv(x[0]), out) }},
			kase{name: "AdaptiveAvgPool2DInto " + l.name, in: []operand{rn(xs...), guarded(wide(ys)...)}, tol: exactly,
				op: func(x []*tsr) *tsr { tensor.AdaptiveAvgPool2DInto(half(x[1]), xv(x[0])); return x[1] }},
			kase{name: "AdaptiveMaxPool2DBackward " + l.name, in: []operand{of(positive, xs...), rn(ys...)}, tol: summed(4),
				op: func(x []*tsr) *tsr {
					_, i := tensor.AdaptiveMaxPool2D(xv(x[0]), out)
					return tensor.AdaptiveMaxPool2DBackward(x[1], i, l.x)
				}},
			kase{name: "AdaptiveMaxPool2DBackwardInto " + l.name, in: []operand{of(positive, xs...), rn(ys...), guarded(wide(l.x)...)}, tol: summed(4),
				op: func(x []*tsr) *tsr {
					_, i := tensor.AdaptiveMaxPool2D(xv(x[0]), out)
					tensor.AdaptiveMaxPool2DBackwardInto(half(x[2]), x[1], i)
					return x[2]
				}},
			kase{name: "AdaptiveAvgPool2DBackward " + l.name, in: []operand{rn(ys...)}, tol: exactly,
				op: func(x []*tsr) *tsr { return tensor.AdaptiveAvgPool2DBackward(x[0], l.x) }},
			kase{name: "AdaptiveAvgPool2DBackwardInto " + l.name, in: []operand{rn(ys...), guarded(wide(l.x)...)}, tol: exactly,
				op: func(x []*tsr) *tsr { tensor.AdaptiveAvgPool2DBackwardInto(half(x[1]), x[0]); return x[1] }},
		)
	}
	run(t, dev, 7, cases)
}

// TestIndex checks every op of the Index family on dev: IndexSelect and
// Gather along each axis (negative indices, repeats, an empty index,
// zero-size operands, transposed, sliced and stride-0 operands and
// indices, the Into forms into strided views of a guard buffer), their
// adjoints IndexAdd and ScatterAdd (repeated targets accumulating, into
// strided dst views; sums in any order), Scatter (a repeated target
// taking the later element, exactly), OneHot of labels of any shape, and
// MaskedSelect (broadcast, strided, NaN and zero masks, zero-size, 0-d).
func TestIndex(t *testing.T, dev tensor.Device) {
	var cases []kase
	sel := func(axis int) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr { return tensor.IndexSelect(x[0], axis, x[1]) }
	}
	gather := func(axis int) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr { return tensor.Gather(x[0], axis, x[1]) }
	}
	for _, l := range []layout{
		{"IndexSelect [7 33] axis 0", []operand{rn(7, 33), idx(7, 12)}, sel(0)},
		{"IndexSelect [7 33] axis -1 repeats", []operand{rn(7, 33), idx(33, 40)}, sel(-1)},
		{"IndexSelect [2 3 257] axis 1", []operand{rn(2, 3, 257), idx(3, 5)}, sel(1)},
		{"IndexSelect [257] NaN values", []operand{of(nans, 257), idx(257, 9)}, sel(0)},
		{"IndexSelect empty index", []operand{rn(7, 33), idx(7, 0)}, sel(0)},
		{"IndexSelect zero-size", []operand{rn(0, 5), idx(5, 3)}, sel(1)},
		{"IndexSelect transposed", []operand{rn(33, 7), idx(33, 4)}, func(x []*tsr) *tsr { return tensor.IndexSelect(x[0].T(), 1, x[1]) }},
		{"IndexSelect stride 0", []operand{rn(1, 33), idx(7, 3)}, func(x []*tsr) *tsr { return tensor.IndexSelect(x[0].Expand(7, 33), 0, x[1]) }},
		{"IndexSelect sliced index", []operand{rn(7, 33), idx(7, 10)}, func(x []*tsr) *tsr { return tensor.IndexSelect(x[0], 0, x[1].Slice(0, 1, 10, 2)) }},
		{"IndexSelectInto strided dst", []operand{guarded(33, 24), rn(7, 33), idx(7, 12)},
			func(x []*tsr) *tsr { return tensor.IndexSelectInto(x[0].Slice(1, 0, 24, 2).T(), x[1], 0, x[2]) }},
		{"Gather [7 33] axis 1", []operand{rn(7, 33), idx(33, 7, 5)}, gather(1)},
		{"Gather [7 33] axis 0", []operand{rn(7, 33), idx(7, 12, 33)}, gather(0)},
		{"Gather [2 3 257] axis -1", []operand{rn(2, 3, 257), idx(257, 2, 3, 9)}, gather(-1)},
		{"Gather index smaller than t", []operand{rn(7, 33), idx(33, 3, 5)}, gather(1)},
		{"Gather zero-size", []operand{rn(7, 33), idx(33, 0, 5)}, gather(1)},
		{"Gather transposed", []operand{rn(33, 7), idx(33, 5, 7)}, func(x []*tsr) *tsr { return tensor.Gather(x[0].T(), 1, x[1].T()) }},
		{"Gather stride-0 index", []operand{rn(7, 33), idx(33, 1, 5)}, func(x []*tsr) *tsr { return tensor.Gather(x[0], 1, x[1].Expand(7, 5)) }},
		{"GatherInto strided dst", []operand{guarded(5, 14), rn(7, 33), idx(33, 7, 5)},
			func(x []*tsr) *tsr { return tensor.GatherInto(x[0].Slice(1, 0, 14, 2).T(), x[1], 1, x[2]) }},
		{"OneHot [7]", []operand{lab(10, 7)}, func(x []*tsr) *tsr { return tensor.OneHot(x[0], 10) }},
		{"OneHot [3 5]", []operand{lab(4, 3, 5)}, func(x []*tsr) *tsr { return tensor.OneHot(x[0], 4) }},
		{"OneHot transposed", []operand{lab(6, 5, 3)}, func(x []*tsr) *tsr { return tensor.OneHot(x[0].T(), 6) }},
		{"OneHot one class", []operand{lab(1, 5)}, func(x []*tsr) *tsr { return tensor.OneHot(x[0], 1) }},
		{"OneHot zero-size", []operand{lab(3, 0, 4)}, func(x []*tsr) *tsr { return tensor.OneHot(x[0], 3) }},
		{"OneHot 0-d", []operand{lab(5)}, func(x []*tsr) *tsr { return tensor.OneHot(x[0], 5) }},
		// MaskedSelect: row-major order, masks with zeros and NaN (selected).
		{"MaskedSelect [7 33]", []operand{rn(7, 33), of(nans, 7, 33)}, func(x []*tsr) *tsr { return tensor.MaskedSelect(x[0], x[1]) }},
		{"MaskedSelect [2 3 257] broadcast mask", []operand{rn(2, 3, 257), of(steps, 3, 1)}, func(x []*tsr) *tsr { return tensor.MaskedSelect(x[0], x[1]) }},
		{"MaskedSelect broadcast x", []operand{rn(1, 300), of(steps, 5, 300)}, func(x []*tsr) *tsr { return tensor.MaskedSelect(x[0], x[1]) }},
		{"MaskedSelect transposed, sliced", []operand{rn(33, 14), of(steps, 14, 33)},
			func(x []*tsr) *tsr { return tensor.MaskedSelect(x[0].T().Slice(1, 1, 33, 3), x[1].Slice(1, 1, 33, 3)) }},
		{"MaskedSelect zero-size", []operand{rn(0, 5), of(steps, 0, 5)}, func(x []*tsr) *tsr { return tensor.MaskedSelect(x[0], x[1]) }},
		{"MaskedSelect 0-d", []operand{rn(), of(nans)}, func(x []*tsr) *tsr { return tensor.MaskedSelect(x[0], x[1]) }},
	} {
		cases = append(cases, kase{name: l.name, in: l.in, op: l.op, tol: exactly})
	}
	// The adds take label indices (Abs, which gives the scale S, leaves
	// them as they are) but for the negative ones, whose operands are
	// positive: their sums do not cancel, so |w| bounds them.
	add := func(axis int) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr { return tensor.IndexAdd(x[0], axis, x[1], x[2]) }
	}
	scatter := func(axis int) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr { return tensor.ScatterAdd(x[0], axis, x[1], x[2]) }
	}
	set := func(axis int) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr { return tensor.Scatter(x[0], axis, x[1], x[2]) }
	}
	exact := func(int) tolerance { return exactly }
	for _, l := range []struct {
		sized
		tol func(n int) tolerance
	}{
		{sized{"IndexAdd [7 33] axis 0 repeats", []operand{rn(7, 33), lab(7, 20), rn(20, 33)}, add(0), 21}, summed},
		{sized{"IndexAdd [4 9] axis -1", []operand{rn(4, 9), lab(9, 15), rn(4, 15)}, add(-1), 16}, summed},
		{sized{"IndexAdd [2 3 257] axis 1", []operand{rn(2, 3, 257), lab(3, 4), rn(2, 4, 257)}, add(1), 5}, summed},
		{sized{"IndexAdd empty index", []operand{rn(7, 33), lab(7, 0), rn(0, 33)}, add(0), 1}, summed},
		{sized{"IndexAdd strided dst", []operand{rn(33, 14), lab(7, 10), rn(10, 33)},
			func(x []*tsr) *tsr { return tensor.IndexAdd(x[0].Slice(1, 0, 14, 2).T(), 0, x[1], x[2]) }, 11}, summed},
		{sized{"IndexAdd transposed src", []operand{rn(7, 33), lab(7, 10), rn(33, 10)},
			func(x []*tsr) *tsr { return tensor.IndexAdd(x[0], 0, x[1], x[2].T()) }, 11}, summed},
		{sized{"IndexAdd stride-0 src", []operand{rn(7, 33), lab(7, 10), rn(1, 33)},
			func(x []*tsr) *tsr { return tensor.IndexAdd(x[0], 0, x[1], x[2].Expand(10, 33)) }, 11}, summed},
		{sized{"IndexAdd negative indices", []operand{of(positive, 7, 33), idx(7, 20), of(positive, 20, 33)}, add(0), 21}, relative},
		{sized{"ScatterAdd [7 33] axis 1 repeats", []operand{rn(7, 33), lab(33, 7, 40), rn(7, 40)}, scatter(1), 41}, summed},
		{sized{"ScatterAdd [7 33] axis 0", []operand{rn(7, 33), lab(7, 12, 33), rn(12, 33)}, scatter(0), 13}, summed},
		{sized{"ScatterAdd index smaller than dst", []operand{rn(7, 33), lab(33, 3, 5), rn(3, 5)}, scatter(-1), 6}, summed},
		{sized{"ScatterAdd zero-size", []operand{rn(7, 33), lab(33, 0, 5), rn(0, 5)}, scatter(1), 1}, summed},
		{sized{"ScatterAdd strided dst", []operand{rn(33, 14), lab(33, 7, 9), rn(7, 9)},
			func(x []*tsr) *tsr { return tensor.ScatterAdd(x[0].Slice(1, 0, 14, 2).T(), 1, x[1], x[2]) }, 10}, summed},
		{sized{"ScatterAdd transposed index and src", []operand{rn(7, 33), lab(33, 9, 7), rn(9, 7)},
			func(x []*tsr) *tsr { return tensor.ScatterAdd(x[0], 1, x[1].T(), x[2].T()) }, 10}, summed},
		{sized{"ScatterAdd negative indices", []operand{of(positive, 7, 33), idx(33, 7, 40), of(positive, 7, 40)}, scatter(1), 41}, relative},
		// Scatter: a target named twice takes the later element.
		{sized{"Scatter [7 33] axis 1 repeats", []operand{rn(7, 33), lab(33, 7, 40), rn(7, 40)}, set(1), 1}, exact},
		{sized{"Scatter [7 33] axis 0 repeats", []operand{rn(7, 33), lab(7, 12, 33), rn(12, 33)}, set(0), 1}, exact},
		{sized{"Scatter index smaller than dst, negative", []operand{rn(7, 33), idx(33, 3, 5), rn(3, 5)}, set(-1), 1}, exact},
		{sized{"Scatter zero-size", []operand{rn(7, 33), lab(33, 0, 5), rn(0, 5)}, set(1), 1}, exact},
		{sized{"Scatter strided dst, transposed index and src", []operand{rn(33, 14), lab(33, 9, 7), rn(9, 7)},
			func(x []*tsr) *tsr { return tensor.Scatter(x[0].Slice(1, 0, 14, 2).T(), 1, x[1].T(), x[2].T()) }, 1}, exact},
		{sized{"Scatter stride-0 src", []operand{rn(2, 3, 9), lab(3, 2, 5, 9), rn(1, 1, 9)},
			func(x []*tsr) *tsr { return tensor.Scatter(x[0], 1, x[1], x[2].Expand(2, 5, 9)) }, 1}, exact},
	} {
		cases = append(cases, kase{name: l.name, in: l.in, op: l.op, tol: l.tol(l.n)})
	}
	run(t, dev, 6, cases)
}

// TestNorm checks every op of the Norm family on dev: BatchNorm in
// training (updating running statistics, whose new values are compared
// too) and in inference, with and without gamma and beta, of [N, C] and
// [N, C, H, W] inputs, transposed inputs, a zero-size batch in inference;
// LayerNorm over one and two trailing axes, with and without gamma and
// beta, of transposed inputs and of no rows; the Into forms into strided
// results; and the gradients of each (dgamma or dbeta left out in the
// Into forms), after the forward on dev; RMSNorm and its gradients over
// one and two trailing axes, with and without gamma, of transposed and
// 1-D inputs and of no rows, and their Into forms into strided views and
// in place. Each case's result is the
// concatenation of everything the op wrote, flattened.
func TestNorm(t *testing.T, dev tensor.Device) {
	flat := func(ts ...*tsr) *tsr {
		f := make([]*tsr, 0, len(ts))
		for _, t := range ts {
			if t != nil {
				f = append(f, t.Reshape(t.Len()))
			}
		}
		return tensor.Concat(0, f...)
	}
	// x[0] is x, x[1] dy, x[2] and x[3] gamma and beta, x[4] and x[5]
	// the running mean and variance (nil where the case has fewer).
	at := func(x []*tsr, i int) *tsr {
		if i < len(x) {
			return x[i]
		}
		return nil
	}
	bn := func(training bool, view func(*tsr) *tsr) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr {
			p := tensor.BatchNormParams{Gamma: at(x, 2), Beta: at(x, 3), RunningMean: at(x, 4), RunningVar: at(x, 5), Training: training, Momentum: 0.2}
			y, s := tensor.BatchNorm(view(x[0]), p)
			return flat(y, s.Mean, s.InvStd, p.RunningMean, p.RunningVar)
		}
	}
	bnBack := func(training bool, view func(*tsr) *tsr) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr {
			p := tensor.BatchNormParams{Gamma: at(x, 2), Beta: at(x, 3), RunningMean: at(x, 4), RunningVar: at(x, 5), Training: training}
			_, s := tensor.BatchNorm(view(x[0]), p)
			dx, dg, db := tensor.BatchNormBackward(view(x[1]), view(x[0]), s, p)
			return flat(dx, dg, db)
		}
	}
	id := func(x *tsr) *tsr { return x }
	perm := func(x *tsr) *tsr { return x.Permute(3, 1, 2, 0) } // [W C H N] to [N C H W]
	c3, c5 := []int{3}, []int{5}
	bnIn := func(shape, c []int, running bool) []operand {
		in := []operand{rn(shape...), rn(shape...), rn(c...), rn(c...)}
		if running {
			in = append(in, rn(c...), of(positive, c...))
		}
		return in
	}
	var cases []kase
	for _, l := range []sized{
		{"BatchNorm training [4 3 5]", bnIn([]int{4, 3, 5}, c3, true), bn(true, id), 20},
		{"BatchNorm training [33 5]", bnIn([]int{33, 5}, c5, true), bn(true, id), 33},
		{"BatchNorm training [2 3 7 5] no affine", []operand{rn(2, 3, 7, 5), rn(2, 3, 7, 5)}, bn(true, id), 70},
		{"BatchNorm training transposed", bnIn([]int{5, 3, 7, 2}, c3, true), bn(true, perm), 70},
		{"BatchNorm inference [4 3 5]", bnIn([]int{4, 3, 5}, c3, true), bn(false, id), 1},
		{"BatchNorm inference zero-size", bnIn([]int{0, 3, 5}, c3, true), bn(false, id), 1},
		{"BatchNormInto strided", append(bnIn([]int{4, 3, 5}, c3, true), guarded(4, 3, 10), guarded(2, 3)), func(x []*tsr) *tsr {
			p := tensor.BatchNormParams{Gamma: x[2], Beta: x[3], RunningMean: x[4], RunningVar: x[5], Training: true}
			y, s := x[6].Slice(2, 1, 10, 2), tensor.NormStats{Mean: x[7].Index(0, 0), InvStd: x[7].Index(0, 1)}
			tensor.BatchNormInto(y, s, x[0], p)
			return flat(y, s.Mean, s.InvStd, p.RunningMean, p.RunningVar)
		}, 20},
		{"BatchNormBackward training [4 3 5]", bnIn([]int{4, 3, 5}, c3, false), bnBack(true, id), 20},
		{"BatchNormBackward training transposed no affine", []operand{rn(5, 3, 7, 2), rn(5, 3, 7, 2)}, bnBack(true, perm), 70},
		{"BatchNormBackward inference", bnIn([]int{4, 3, 5}, c3, true), bnBack(false, id), 20},
		{"BatchNormBackwardInto strided, no dbeta", append(bnIn([]int{4, 3, 5}, c3, false), guarded(4, 3, 10), guarded(3)), func(x []*tsr) *tsr {
			p := tensor.BatchNormParams{Gamma: x[2], Training: true}
			_, s := tensor.BatchNorm(x[0], p)
			dx := x[4].Slice(2, 1, 10, 2)
			tensor.BatchNormBackwardInto(dx, x[5], nil, x[1], x[0], s, p)
			return flat(dx, x[5])
		}, 20},
	} {
		cases = append(cases, kase{name: l.name, in: l.in, op: l.op, tol: logarithmic(l.n)})
	}
	ln := func(dims int, view func(*tsr) *tsr, back bool) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr {
			p := tensor.LayerNormParams{Dims: dims, Gamma: at(x, 2), Beta: at(x, 3)}
			y, s := tensor.LayerNorm(view(x[0]), p)
			if !back {
				return flat(y, s.Mean, s.InvStd)
			}
			dx, dg, db := tensor.LayerNormBackward(view(x[1]), view(x[0]), s, p)
			return flat(dx, dg, db)
		}
	}
	lnIn := func(shape, trail []int) []operand {
		return []operand{rn(shape...), rn(shape...), rn(trail...), rn(trail...)}
	}
	tr := func(x *tsr) *tsr { return x.T() }
	for _, l := range []sized{
		{"LayerNorm [7 33]", lnIn([]int{7, 33}, []int{33}), ln(1, id, false), 33},
		{"LayerNorm [2 3 257] no affine", []operand{rn(2, 3, 257), rn(2, 3, 257)}, ln(0, id, false), 257},
		{"LayerNorm [4 3 5] two axes", lnIn([]int{4, 3, 5}, []int{3, 5}), ln(2, id, false), 15},
		{"LayerNorm transposed", lnIn([]int{33, 7}, []int{33}), ln(1, tr, false), 33},
		{"LayerNorm no rows", lnIn([]int{0, 5}, []int{5}), ln(1, id, false), 5},
		{"LayerNormInto strided", append(lnIn([]int{7, 33}, []int{33}), guarded(7, 66), guarded(7, 2)), func(x []*tsr) *tsr {
			y, s := x[4].Slice(1, 0, 66, 2), tensor.NormStats{Mean: x[5].Index(1, 0), InvStd: x[5].Index(1, 1)}
			tensor.LayerNormInto(y, s, x[0], tensor.LayerNormParams{Gamma: x[2], Beta: x[3]})
			return flat(y, s.Mean, s.InvStd)
		}, 33},
		{"LayerNormBackward [7 33]", lnIn([]int{7, 33}, []int{33}), ln(1, id, true), 33},
		{"LayerNormBackward [4 3 5] two axes no affine", []operand{rn(4, 3, 5), rn(4, 3, 5)}, ln(2, id, true), 15},
		{"LayerNormBackward transposed", lnIn([]int{33, 7}, []int{33}), ln(1, tr, true), 33},
		{"LayerNormBackwardInto strided, no dgamma", append(lnIn([]int{7, 33}, []int{33}), guarded(7, 66), guarded(33)), func(x []*tsr) *tsr {
			p := tensor.LayerNormParams{Gamma: x[2], Beta: x[3]}
			_, s := tensor.LayerNorm(x[0], p)
			dx := x[4].Slice(1, 0, 66, 2)
			tensor.LayerNormBackwardInto(dx, nil, x[5], x[1], x[0], s, p)
			return flat(dx, x[5])
		}, 33},
	} {
		cases = append(cases, kase{name: l.name, in: l.in, op: l.op, tol: logarithmic(l.n)})
	}
	// x[0] is x, x[1] dy, x[2] gamma (when the case has one).
	rms := func(dims int, view func(*tsr) *tsr, back bool) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr {
			p := tensor.RMSNormParams{Dims: dims, Gamma: at(x, 2), Eps: 1e-3 * float32(dims)}
			y, rr := tensor.RMSNorm(view(x[0]), p)
			if !back {
				return flat(y, rr)
			}
			dx, dg := tensor.RMSNormBackward(view(x[1]), view(x[0]), rr, p)
			return flat(dx, dg)
		}
	}
	for _, l := range []sized{
		{"RMSNorm [7 33]", lnIn([]int{7, 33}, []int{33})[:3], rms(1, id, false), 33},
		{"RMSNorm [2 3 257] no gamma, default eps", []operand{rn(2, 3, 257), rn(2, 3, 257)}, rms(0, id, false), 257},
		{"RMSNorm [4 3 5] two axes", lnIn([]int{4, 3, 5}, []int{3, 5})[:3], rms(2, id, false), 15},
		{"RMSNorm transposed", lnIn([]int{33, 7}, []int{33})[:3], rms(1, tr, false), 33},
		{"RMSNorm no rows", lnIn([]int{0, 5}, []int{5})[:3], rms(1, id, false), 5},
		{"RMSNorm 1-D", lnIn([]int{9}, []int{9})[:3], rms(1, id, false), 9},
		{"RMSNormBackward [7 33]", lnIn([]int{7, 33}, []int{33})[:3], rms(1, id, true), 33},
		{"RMSNormBackward [4 3 5] two axes no gamma", []operand{rn(4, 3, 5), rn(4, 3, 5)}, rms(2, id, true), 15},
		{"RMSNormBackward transposed", lnIn([]int{33, 7}, []int{33})[:3], rms(1, tr, true), 33},
		{"RMSNormBackward no rows", lnIn([]int{0, 5}, []int{5})[:3], rms(1, id, true), 5},
		{"RMSNormInto strided", append(lnIn([]int{7, 33}, []int{33})[:3], guarded(7, 66), guarded(7, 2)), func(x []*tsr) *tsr {
			y, rr := x[3].Slice(1, 0, 66, 2), x[4].Index(1, 1)
			tensor.RMSNormInto(y, rr, x[0], tensor.RMSNormParams{Gamma: x[2]})
			return flat(y, rr)
		}, 33},
		{"RMSNormBackwardInto strided dgamma, in place", append(lnIn([]int{7, 33}, []int{33})[:3], guarded(33, 2)), func(x []*tsr) *tsr {
			p := tensor.RMSNormParams{Gamma: x[2]}
			_, rr := tensor.RMSNorm(x[0], p)
			tensor.RMSNormBackwardInto(x[1], x[3].Index(1, 0), x[1], x[0], rr, p)
			return flat(x[1], x[3])
		}, 33},
		{"RMSNormBackwardInto no dgamma", append(lnIn([]int{7, 33}, []int{33})[:3], guarded(7, 66)), func(x []*tsr) *tsr {
			p := tensor.RMSNormParams{Gamma: x[2]}
			_, rr := tensor.RMSNorm(x[0], p)
			dx := x[3].Slice(1, 1, 66, 2)
			tensor.RMSNormBackwardInto(dx, nil, x[1], x[0], rr, p)
			return flat(x[3])
		}, 33},
	} {
		cases = append(cases, kase{name: l.name, in: l.in, op: l.op, tol: logarithmic(l.n)})
	}
	run(t, dev, 6, cases)
}
