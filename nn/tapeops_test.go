package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// tapeOpCase is one case of the sequence-model operations (softmaxes,
// batched MatMul, the shape ops, the elementwise math, Where, the axis
// reductions): f applies the op to Vars holding inputs, given the
// constant tensors consts (masks, exponents) on the inputs' device; ref
// computes the same result with package tensor's CPU ops. Each case is
// checked three ways: its gradients by finite differences (gradCases),
// its forward against ref (TestTapeOpsForward), and its forward and
// gradients on the stand-in device against the host's
// (TestDeviceTapeOps).
type tapeOpCase struct {
	name, op string
	inputs   []*tensor.Tensor
	consts   []*tensor.Tensor
	f        func(tp *Tape, in []*Var, c []*tensor.Tensor) *Var
	ref      func(in, c []*tensor.Tensor) *tensor.Tensor
	tol      float64 // relative error allowed against ref; 0: equal
	h        float64 // gradCase.h
}

// avoid returns x with every element within 0.05 of one of points moved
// 0.1 away from it, so that a finite difference does not cross a kink.
func avoid(x *tensor.Tensor, points ...float32) *tensor.Tensor {
	d := x.Data()
	for i, v := range d {
		for _, p := range points {
			if v > p-0.05 && v < p+0.05 {
				d[i] = p + 0.1
			}
		}
	}
	return x
}

func tapeOpCases() []tapeOpCase {
	r := rand.New(rand.NewPCG(11, 12))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	pos := func(shape ...int) *tensor.Tensor { return tensor.RandU(r, 0.5, 2, shape...) }
	mask := func(shape ...int) *tensor.Tensor {
		m := tensor.New(shape...)
		for i := range m.Data() {
			m.Data()[i] = float32(i % 2)
		}
		return m
	}
	var cs []tapeOpCase
	add := func(c tapeOpCase) { cs = append(cs, c) }
	one := func(f func(tp *Tape, x *Var) *Var) func(*Tape, []*Var, []*tensor.Tensor) *Var {
		return func(tp *Tape, in []*Var, _ []*tensor.Tensor) *Var { return f(tp, in[0]) }
	}
	two := func(f func(tp *Tape, a, b *Var) *Var) func(*Tape, []*Var, []*tensor.Tensor) *Var {
		return func(tp *Tape, in []*Var, _ []*tensor.Tensor) *Var { return f(tp, in[0], in[1]) }
	}
	ref1 := func(f func(x *tensor.Tensor) *tensor.Tensor) func(in, c []*tensor.Tensor) *tensor.Tensor {
		return func(in, _ []*tensor.Tensor) *tensor.Tensor { return f(in[0]) }
	}
	ref2 := func(f func(a, b *tensor.Tensor) *tensor.Tensor) func(in, c []*tensor.Tensor) *tensor.Tensor {
		return func(in, _ []*tensor.Tensor) *tensor.Tensor { return f(in[0], in[1]) }
	}

	for _, axis := range []int{0, 1, -1} {
		add(tapeOpCase{name: fmt.Sprintf("Softmax/axis=%d", axis), op: "Softmax", inputs: []*tensor.Tensor{tensor.Scale(rn(3, 4, 5), 2)},
			f:   one(func(tp *Tape, x *Var) *Var { return tp.Softmax(x, axis) }),
			ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.Softmax(x, axis) })})
		add(tapeOpCase{name: fmt.Sprintf("LogSoftmax/axis=%d", axis), op: "LogSoftmax", inputs: []*tensor.Tensor{tensor.Scale(rn(3, 4, 5), 2)},
			f:   one(func(tp *Tape, x *Var) *Var { return tp.LogSoftmax(x, axis) }),
			ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.LogSoftmax(x, axis) })})
	}
	for _, sh := range [][2][]int{
		{{2, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}}, {{3, 4}, {2, 4, 5}}, {{2, 3, 4}, {4, 5}},
		{{2, 3, 0}, {1, 0, 4}}, {{0, 3, 4}, {4, 2}},
	} {
		add(tapeOpCase{name: fmt.Sprintf("MatMul/%v%v", sh[0], sh[1]), op: "MatMul", inputs: []*tensor.Tensor{rn(sh[0]...), rn(sh[1]...)},
			f: two((*Tape).MatMul), ref: ref2(tensor.MatMul)})
	}
	add(tapeOpCase{name: "Transpose", op: "Transpose", inputs: []*tensor.Tensor{rn(2, 3, 4)},
		f:   one(func(tp *Tape, x *Var) *Var { return tp.Transpose(x, 0, -1) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return x.Transpose(0, -1).Contiguous() })})
	add(tapeOpCase{name: "Transpose/shared", op: "Transpose", inputs: []*tensor.Tensor{rn(3, 3)},
		f: one(func(tp *Tape, x *Var) *Var { return tp.Mul(tp.Transpose(x, 1, 0), x) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Mul(x.T(), x)
		})})
	add(tapeOpCase{name: "Permute", op: "Permute", inputs: []*tensor.Tensor{rn(2, 3, 4)},
		f:   one(func(tp *Tape, x *Var) *Var { return tp.Permute(x, 2, 0, -2) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return x.Permute(2, 0, 1).Contiguous() })})
	for _, s := range [][4]int{{1, 1, 5, 2}, {-1, -2, 100, 1}, {0, 1, 1, 1}} {
		add(tapeOpCase{name: fmt.Sprintf("Slice/%v", s), op: "Slice", inputs: []*tensor.Tensor{rn(2, 5, 3)},
			f:   one(func(tp *Tape, x *Var) *Var { return tp.Slice(x, s[0], s[1], s[2], s[3]) }),
			ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return x.Slice(s[0], s[1], s[2], s[3]).Contiguous() })})
	}
	add(tapeOpCase{name: "Split", op: "Split", inputs: []*tensor.Tensor{rn(3, 5)},
		f: one(func(tp *Tape, x *Var) *Var {
			p := tp.Split(x, -1, 2, 0, 3)
			return tp.Concat(1, p[2], p[1], tp.Scale(p[0], -1))
		}),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Concat(1, x.Slice(1, 2, 5, 1), x.Slice(1, 2, 2, 1), tensor.Scale(x.Slice(1, 0, 2, 1), -1))
		})})
	add(tapeOpCase{name: "Concat/axis=0", op: "Concat", inputs: []*tensor.Tensor{rn(1, 3), rn(2, 3), rn(0, 3), rn(3, 3)},
		f: func(tp *Tape, in []*Var, _ []*tensor.Tensor) *Var { return tp.Concat(0, in...) },
		ref: func(in, _ []*tensor.Tensor) *tensor.Tensor {
			return tensor.Concat(0, in...)
		}})
	add(tapeOpCase{name: "Concat/repeated", op: "Concat", inputs: []*tensor.Tensor{rn(2, 3), rn(2, 1)},
		f: func(tp *Tape, in []*Var, _ []*tensor.Tensor) *Var { return tp.Concat(-1, in[0], in[1], in[0]) },
		ref: func(in, _ []*tensor.Tensor) *tensor.Tensor {
			return tensor.Concat(-1, in[0], in[1], in[0])
		}})
	for _, axis := range []int{1, -1, 0} {
		add(tapeOpCase{name: fmt.Sprintf("Stack/axis=%d", axis), op: "Stack", inputs: []*tensor.Tensor{rn(2, 3), rn(2, 3), rn(2, 3), rn(2, 3)},
			f:   func(tp *Tape, in []*Var, _ []*tensor.Tensor) *Var { return tp.Stack(axis, in...) },
			ref: func(in, _ []*tensor.Tensor) *tensor.Tensor { return tensor.Stack(axis, in...) }})
	}
	for _, sh := range [][2][]int{{{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{2, 1, 4}, {3, 1}}} {
		add(tapeOpCase{name: fmt.Sprintf("Div/%v%v", sh[0], sh[1]), op: "Div", inputs: []*tensor.Tensor{rn(sh[0]...), awayFromZero(r, sh[1]...)},
			f: two((*Tape).Div), ref: ref2(tensor.Div)})
		add(tapeOpCase{name: fmt.Sprintf("Pow/%v%v", sh[0], sh[1]), op: "Pow", inputs: []*tensor.Tensor{pos(sh[0]...), tensor.Scale(rn(sh[1]...), 1.5)},
			f: two((*Tape).Pow), ref: ref2(tensor.Pow)})
		for _, op := range []string{"Maximum", "Minimum"} {
			f := map[string]func(*Tape, *Var, *Var) *Var{"Maximum": (*Tape).Maximum, "Minimum": (*Tape).Minimum}[op]
			g := map[string]func(a, b *tensor.Tensor) *tensor.Tensor{"Maximum": tensor.Maximum, "Minimum": tensor.Minimum}[op]
			add(tapeOpCase{name: fmt.Sprintf("%s/%v%v", op, sh[0], sh[1]), op: op, inputs: []*tensor.Tensor{distinct(r, sh[0]...), tensor.AddScalar(distinct(r, sh[1]...), 0.0125)},
				f: two(f), ref: ref2(g)})
		}
	}
	// Ties: half the gradient to each side is what central differences
	// give at a kink of max(a, b) and min(a, b).
	ta := tensor.FromSlice([]float32{1, -2, 0.5, 3, -1, 2}, 2, 3)
	tb := tensor.FromSlice([]float32{1, -1, 0.5, 2, -1, 2.5}, 2, 3)
	add(tapeOpCase{name: "Maximum/ties", op: "Maximum", inputs: []*tensor.Tensor{ta, tb}, f: two((*Tape).Maximum), ref: ref2(tensor.Maximum)})
	add(tapeOpCase{name: "Minimum/ties", op: "Minimum", inputs: []*tensor.Tensor{ta.Clone(), tb.Clone()}, f: two((*Tape).Minimum), ref: ref2(tensor.Minimum)})
	add(tapeOpCase{name: "Maximum/same-operand", op: "Maximum", inputs: []*tensor.Tensor{rn(2, 3)}, f: one(func(tp *Tape, x *Var) *Var { return tp.Maximum(x, x) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return x.Clone() })})
	add(tapeOpCase{name: "Pow/const-exponent", op: "Pow", inputs: []*tensor.Tensor{rn(3, 4)}, consts: []*tensor.Tensor{tensor.Scalar(3)},
		f:   func(tp *Tape, in []*Var, c []*tensor.Tensor) *Var { return tp.Pow(in[0], tp.Const(c[0])) },
		ref: func(in, c []*tensor.Tensor) *tensor.Tensor { return tensor.Pow(in[0], c[0]) }})
	add(tapeOpCase{name: "Exp", op: "Exp", inputs: []*tensor.Tensor{rn(2, 3, 4)}, f: one((*Tape).Exp), ref: ref1(tensor.Exp)})
	add(tapeOpCase{name: "Log", op: "Log", inputs: []*tensor.Tensor{pos(2, 3, 4)}, f: one((*Tape).Log), ref: ref1(tensor.Log)})
	add(tapeOpCase{name: "Sqrt", op: "Sqrt", inputs: []*tensor.Tensor{pos(2, 3, 4)}, f: one((*Tape).Sqrt), ref: ref1(tensor.Sqrt)})
	add(tapeOpCase{name: "Clamp", op: "Clamp", inputs: []*tensor.Tensor{avoid(rn(3, 7), -0.5, 0.6)},
		f:   one(func(tp *Tape, x *Var) *Var { return tp.Clamp(x, -0.5, 0.6) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.Clamp(x, -0.5, 0.6) })})
	add(tapeOpCase{name: "Where", op: "Where", inputs: []*tensor.Tensor{rn(3, 4), rn(4)}, consts: []*tensor.Tensor{mask(3, 1)},
		f:   func(tp *Tape, in []*Var, c []*tensor.Tensor) *Var { return tp.Where(c[0], in[0], in[1]) },
		ref: func(in, c []*tensor.Tensor) *tensor.Tensor { return tensor.Where(c[0], in[0], in[1]) }})
	add(tapeOpCase{name: "Where/cond-broadcast", op: "Where", inputs: []*tensor.Tensor{rn(3, 1), rn(1, 4)}, consts: []*tensor.Tensor{mask(3, 4)},
		f:   func(tp *Tape, in []*Var, c []*tensor.Tensor) *Var { return tp.Where(c[0], in[0], in[1]) },
		ref: func(in, c []*tensor.Tensor) *tensor.Tensor { return tensor.Where(c[0], in[0], in[1]) }})
	add(tapeOpCase{name: "MaskedFill", op: "MaskedFill", inputs: []*tensor.Tensor{rn(2, 3, 4)}, consts: []*tensor.Tensor{mask(3, 1)},
		f: func(tp *Tape, in []*Var, c []*tensor.Tensor) *Var {
			// The attention use: -Inf masked out before a softmax.
			return tp.Softmax(tp.MaskedFill(in[0], c[0], float32(math.Inf(-1))), 1)
		},
		ref: func(in, c []*tensor.Tensor) *tensor.Tensor {
			return tensor.Softmax(tensor.Where(c[0], tensor.Scalar(float32(math.Inf(-1))), in[0]), 1)
		}})
	add(tapeOpCase{name: "MaskedFill/value", op: "MaskedFill", inputs: []*tensor.Tensor{rn(2, 3, 4)}, consts: []*tensor.Tensor{mask(4)},
		f:   func(tp *Tape, in []*Var, c []*tensor.Tensor) *Var { return tp.MaskedFill(in[0], c[0], -2) },
		ref: func(in, c []*tensor.Tensor) *tensor.Tensor { return tensor.Where(c[0], tensor.Scalar(-2), in[0]) }})
	type red struct {
		keep bool
		axes []int
	}
	for _, rd := range []red{{false, []int{1}}, {true, []int{0, 2}}, {false, []int{-1}}, {true, nil}, {false, nil}, {true, []int{-3, -2, -1}}} {
		name := fmt.Sprintf("keepdims=%v/axes=%v", rd.keep, rd.axes)
		add(tapeOpCase{name: "SumAxes/" + name, op: "SumAxes", inputs: []*tensor.Tensor{rn(2, 3, 4)},
			f:   one(func(tp *Tape, x *Var) *Var { return tp.SumAxes(x, rd.keep, rd.axes...) }),
			ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.Sum(x, rd.keep, rd.axes...) }), tol: 1e-6})
		add(tapeOpCase{name: "MeanAxes/" + name, op: "MeanAxes", inputs: []*tensor.Tensor{rn(2, 3, 4)},
			f:   one(func(tp *Tape, x *Var) *Var { return tp.MeanAxes(x, rd.keep, rd.axes...) }),
			ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.Mean(x, rd.keep, rd.axes...) }), tol: 1e-6})
		add(tapeOpCase{name: "MaxAxes/" + name, op: "MaxAxes", inputs: []*tensor.Tensor{distinct(r, 2, 3, 4)},
			f:   one(func(tp *Tape, x *Var) *Var { return tp.MaxAxes(x, rd.keep, rd.axes...) }),
			ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.Max(x, rd.keep, rd.axes...) })})
	}
	add(tapeOpCase{name: "SumAxes/zero-size", op: "SumAxes", inputs: []*tensor.Tensor{rn(2, 0, 3)},
		f:   one(func(tp *Tape, x *Var) *Var { return tp.SumAxes(x, false, 1) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.Sum(x, false, 1) })})
	// Two equal maxima in a row share its gradient, as central
	// differences say (each moved up raises the maximum, down leaves it).
	add(tapeOpCase{name: "MaxAxes/ties", op: "MaxAxes", inputs: []*tensor.Tensor{tensor.FromSlice([]float32{1, 3, 3, -1, 2, -2, 0.5, 2}, 2, 4)},
		f:   one(func(tp *Tape, x *Var) *Var { return tp.MaxAxes(x, false, -1) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return tensor.Max(x, false, -1) })})
	add(tapeOpCase{name: "Dropout/3d", op: "Dropout", inputs: []*tensor.Tensor{rn(2, 3, 4)},
		f: one(func(tp *Tape, x *Var) *Var { return tp.Dropout(x, 0.3, rand.New(rand.NewPCG(3, 4))) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Dropout(x, 0.3, rand.New(rand.NewPCG(3, 4)).Uint64(), 0)
		})})
	add(tapeOpCase{name: "Dropout/zero-size", op: "Dropout", inputs: []*tensor.Tensor{rn(2, 0, 4)},
		f:   one(func(tp *Tape, x *Var) *Var { return tp.Dropout(x, 0.3, rand.New(rand.NewPCG(3, 4))) }),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor { return x.Clone() })})
	for _, a := range []struct {
		name    string
		p       tensor.AttentionParams
		pad     *tensor.Tensor
		q, k, v []int
	}{
		{"plain", tensor.AttentionParams{}, nil, []int{2, 2, 5, 3}, []int{2, 2, 5, 3}, []int{2, 2, 5, 4}},
		// Sq > Sk: the first query sees no key (output and gradient 0).
		{"causal", tensor.AttentionParams{Causal: true, Scale: 0.8}, nil, []int{1, 2, 7, 3}, []int{1, 2, 6, 3}, []int{1, 2, 6, 2}},
		{"padded", tensor.AttentionParams{}, tensor.FromSlice([]float32{0, 1, 0, 0, 1, 1, 1, 1}, 2, 4),
			[]int{2, 1, 3, 4}, []int{2, 1, 4, 4}, []int{2, 1, 4, 3}},
	} {
		c := tapeOpCase{name: "ScaledDotProductAttention/" + a.name, op: "ScaledDotProductAttention",
			inputs: []*tensor.Tensor{rn(a.q...), rn(a.k...), rn(a.v...)}, tol: 1e-5,
			f: func(tp *Tape, in []*Var, c []*tensor.Tensor) *Var {
				p := a.p
				if len(c) > 0 {
					p.KeyPadding = c[0]
				}
				return tp.ScaledDotProductAttention(in[0], in[1], in[2], p)
			},
			ref: func(in, c []*tensor.Tensor) *tensor.Tensor { return refAttention(in[0], in[1], in[2], a.p, c) }}
		if a.pad != nil {
			c.consts = []*tensor.Tensor{a.pad}
		}
		add(c)
	}
	add(tapeOpCase{name: "ScaledDotProductAttention/self", op: "ScaledDotProductAttention", inputs: []*tensor.Tensor{rn(1, 2, 6, 4)}, tol: 1e-5,
		f: one(func(tp *Tape, x *Var) *Var {
			return tp.ScaledDotProductAttention(x, x, x, tensor.AttentionParams{Causal: true})
		}),
		ref: ref1(func(x *tensor.Tensor) *tensor.Tensor {
			return refAttention(x, x, x, tensor.AttentionParams{Causal: true}, nil)
		})})
	return append(cs, elemfnTapeCases(r)...)
}

// refAttention is softmax(q·kᵀ·scale + mask)·v of package tensor's
// unfused CPU ops, rows that see no key 0; c holds the key padding, if
// any.
func refAttention(q, k, v *tensor.Tensor, p tensor.AttentionParams, c []*tensor.Tensor) *tensor.Tensor {
	scale := p.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(q.Dim(3))))
	}
	sq, sk := q.Dim(2), k.Dim(2)
	keep := tensor.Ones(q.Dim(0), 1, sq, sk)
	for b := range q.Dim(0) {
		for i := range sq {
			for j := range sk {
				if p.Causal && j > i+sk-sq || len(c) > 0 && c[0].At(b, j) != 0 {
					keep.Set(0, b, 0, i, j)
				}
			}
		}
	}
	s := tensor.Scale(tensor.MatMul(q, k.Transpose(2, 3)), scale)
	s = tensor.Where(keep, s, tensor.Scalar(float32(math.Inf(-1))))
	prob := tensor.Softmax(s, 3)
	prob = tensor.Where(keep, prob, tensor.Scalar(0)) // NaN in rows that see nothing
	return tensor.MatMul(prob, v)
}

// tapeOpGradCases are tapeOpCases as gradCases.
func tapeOpGradCases() []gradCase {
	var gs []gradCase
	for _, c := range tapeOpCases() {
		gs = append(gs, gradCase{name: c.name, op: c.op, inputs: c.inputs, h: c.h,
			f: func(tp *Tape, in []*Var) *Var { return c.f(tp, in, c.consts) }})
	}
	return gs
}

// TestTapeOpsForward checks each op's value against package tensor's CPU
// op (equal, or within the case's tolerance where the tape computes it
// another way: a mean as a scaled sum).
func TestTapeOpsForward(t *testing.T) {
	for _, c := range tapeOpCases() {
		t.Run(c.name, func(t *testing.T) {
			in := make([]*Var, len(c.inputs))
			for i, x := range c.inputs {
				in[i] = NewParam(x)
			}
			got := c.f(NewTape(), in, c.consts).Value()
			want := c.ref(c.inputs, c.consts)
			if !slices.Equal(got.Shape(), want.Shape()) {
				t.Fatalf("shape %v, want %v", got.Shape(), want.Shape())
			}
			g, w := got.Contiguous().Data(), want.Contiguous().Data()
			if c.tol == 0 {
				for i := range w {
					if g[i] != w[i] && !(g[i] != g[i] && w[i] != w[i]) {
						t.Fatalf("element %d: %v, want %v", i, g[i], w[i])
					}
				}
				return
			}
			if e := relErr(g, w); e > c.tol {
				t.Errorf("relative error %.3g, want at most %.3g", e, c.tol)
			}
		})
	}
}

// TestDeviceTapeOps runs each tapeOpCase on the stand-in device (inputs
// and constants uploaded) and on the host: the values and every input's
// gradient stay on the device and agree with the host's within 1e-5
// relative (of the largest element). The step runs twice on one tape, and
// the second asks the device for no memory (but MaxAxes, whose result is
// tensor.Max's, and ScaledDotProductAttention, composed of tensor's ops
// with their own results on a device).
func TestDeviceTapeOps(t *testing.T) {
	d := tensortest.Register(t, testDev)
	run := func(t *testing.T, c tapeOpCase, dev tensor.Device) (*tensor.Tensor, []*tensor.Tensor) {
		in := make([]*Var, len(c.inputs))
		for i, x := range c.inputs {
			in[i] = NewParam(onDev(t, x, dev))
		}
		consts := make([]*tensor.Tensor, len(c.consts))
		for i, x := range c.consts {
			consts[i] = onDev(t, x, dev)
		}
		tp := NewTape()
		var proj *tensor.Tensor
		var out *Var
		for step := range 2 {
			tp.Reset()
			zeroGrads(in)
			before := d.Counts().Allocs
			out = c.f(tp, in, consts)
			if proj == nil {
				proj = onDev(t, tensor.RandN(rand.New(rand.NewPCG(7, 8)), out.Value().Shape()...), dev)
			}
			tp.Backward(tp.Sum(tp.Mul(out, tp.Const(proj))))
			if n := d.Counts().Allocs - before; dev == testDev && step == 1 && n != 0 && c.op != "MaxAxes" && c.op != "ScaledDotProductAttention" {
				t.Errorf("the second step allocated %d device buffers", n)
			}
		}
		grads := make([]*tensor.Tensor, len(in))
		for i, v := range in {
			grads[i] = v.Grad()
		}
		return out.Value(), grads
	}
	for _, c := range tapeOpCases() {
		t.Run(c.name, func(t *testing.T) {
			hv, hg := run(t, c, tensor.CPU)
			dv, dg := run(t, c, testDev)
			if dv.Device() != testDev {
				t.Fatalf("the value is on %v", dv.Device())
			}
			if !slices.Equal(dv.Shape(), hv.Shape()) {
				t.Fatalf("shape %v on the device, %v on the host", dv.Shape(), hv.Shape())
			}
			if e := relErr(hostOf(t, dv), hv.Data()); e > 1e-5 || math.IsNaN(e) {
				t.Errorf("value: relative error %.3g", e)
			}
			for i := range hg {
				if dg[i] == nil || dg[i].Device() != testDev {
					t.Fatalf("the gradient of input %d is %v", i, dg[i])
				}
				if e := relErr(hostOf(t, dg[i]), hg[i].Data()); e > 1e-5 || math.IsNaN(e) {
					t.Errorf("gradient of input %d %v: relative error %.3g", i, hg[i].Shape(), e)
				}
			}
		})
	}
}

// tapeOpOperandCases are operandCases for the operations of tapeOpCases
// (p makes a parameter of a shape).
func tapeOpOperandCases(p func(shape ...int) *Var) []operandCase {
	cs := []operandCase{
		{"MatMul", "a", []int{2, 2, 3}, func(tp *Tape, v *Var) { tp.MatMul(v, p(3, 2)) }},
		{"MatMul", "b", []int{2, 3, 2}, func(tp *Tape, v *Var) { tp.MatMul(p(2, 3), v) }},
		{"Softmax", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Softmax(v, -1) }},
		{"LogSoftmax", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.LogSoftmax(v, 0) }},
		{"Exp", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Exp(v) }},
		{"Log", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Log(v) }},
		{"Sqrt", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Sqrt(v) }},
		{"Clamp", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Clamp(v, -1, 1) }},
		{"Transpose", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Transpose(v, 0, 1) }},
		{"Permute", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Permute(v, 1, 0) }},
		{"Slice", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Slice(v, 1, 0, 2, 1) }},
		{"Split", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Split(v, 1, 1, 2) }},
		{"Concat", "xs[0]", []int{2, 3}, func(tp *Tape, v *Var) { tp.Concat(0, v, p(2, 3)) }},
		{"Concat", "xs[1]", []int{2, 3}, func(tp *Tape, v *Var) { tp.Concat(0, p(2, 3), v) }},
		{"Stack", "xs[0]", []int{2, 3}, func(tp *Tape, v *Var) { tp.Stack(0, v, p(2, 3)) }},
		{"Stack", "xs[1]", []int{2, 3}, func(tp *Tape, v *Var) { tp.Stack(0, p(2, 3), v) }},
		{"Where", "a", []int{2, 3}, func(tp *Tape, v *Var) { tp.Where(tensor.New(3), v, p(3)) }},
		{"Where", "b", []int{2, 3}, func(tp *Tape, v *Var) { tp.Where(tensor.New(3), p(3), v) }},
		{"MaskedFill", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.MaskedFill(v, tensor.New(3), 0) }},
		{"SumAxes", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.SumAxes(v, true, 1) }},
		{"MeanAxes", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.MeanAxes(v, false, 0) }},
		{"MaxAxes", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.MaxAxes(v, false, -1) }},
		{"ScaledDotProductAttention", "q", []int{1, 1, 2, 3}, func(tp *Tape, v *Var) {
			tp.ScaledDotProductAttention(v, p(1, 1, 2, 3), p(1, 1, 2, 3), tensor.AttentionParams{})
		}},
		{"ScaledDotProductAttention", "k", []int{1, 1, 2, 3}, func(tp *Tape, v *Var) {
			tp.ScaledDotProductAttention(p(1, 1, 2, 3), v, p(1, 1, 2, 3), tensor.AttentionParams{})
		}},
		{"ScaledDotProductAttention", "v", []int{1, 1, 2, 3}, func(tp *Tape, v *Var) {
			tp.ScaledDotProductAttention(p(1, 1, 2, 3), p(1, 1, 2, 3), v, tensor.AttentionParams{})
		}},
	}
	for _, op := range []string{"Div", "Pow", "Maximum", "Minimum"} {
		f := map[string]func(*Tape, *Var, *Var) *Var{"Div": (*Tape).Div, "Pow": (*Tape).Pow, "Maximum": (*Tape).Maximum, "Minimum": (*Tape).Minimum}[op]
		cs = append(cs,
			operandCase{op, "a", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, v, p(3)) }},
			operandCase{op, "b", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, p(3), v) }})
	}
	return cs
}

// TestTapeOpsPanics checks that misuse of the operations panics with a
// message naming the operation and the shapes.
func TestTapeOpsPanics(t *testing.T) {
	p := func(shape ...int) *Var { return NewParam(tensor.New(shape...)) }
	tp := NewTape()
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"MatMul/inner", func() { tp.MatMul(p(2, 3, 4), p(2, 5, 2)) }, "nn: MatMul: shapes [2 3 4] and [2 5 2] do not match"},
		{"MatMul/batch", func() { tp.MatMul(p(2, 3, 4), p(3, 4, 5)) }, "nn: MatMul: shapes [2 3 4] and [3 4 5]: the batch dimensions do not broadcast"},
		{"MatMul/vector", func() { tp.MatMul(p(3), p(3, 2)) }, "nn: MatMul: shapes [3] and [3 2]: both operands need two dimensions"},
		{"Softmax/axis", func() { tp.Softmax(p(2, 3), 2) }, "nn: Softmax: axis 2 out of range for x of shape [2 3]"},
		{"LogSoftmax/scalar", func() { tp.LogSoftmax(p(), -1) }, "nn: LogSoftmax: axis -1 out of range for x of shape []"},
		{"Permute/count", func() { tp.Permute(p(2, 3), 0) }, "nn: Permute: axes [0] for x of shape [2 3]"},
		{"Permute/repeated", func() { tp.Permute(p(2, 3), 1, -1) }, "nn: Permute: repeated axis in [1 -1] for x of shape [2 3]"},
		{"Transpose/axis", func() { tp.Transpose(p(2, 3), 0, -3) }, "nn: Transpose: axis -3 out of range for x of shape [2 3]"},
		{"Slice/step", func() { tp.Slice(p(2, 3), 1, 0, 2, 0) }, "nn: Slice: step 0 must be positive (x of shape [2 3])"},
		{"Split/sizes", func() { tp.Split(p(2, 3), 1, 1, 1) }, "nn: Split: sizes [1 1] add up to 2, not dimension 1 of x of shape [2 3]"},
		{"Split/negative", func() { tp.Split(p(2, 3), 1, 4, -1) }, "nn: Split: negative size in [4 -1]"},
		{"Concat/shapes", func() { tp.Concat(1, p(2, 3), p(3, 3)) }, "nn: Concat: shapes [2 3], [3 3] differ outside axis 1"},
		{"Concat/rank", func() { tp.Concat(0, p(2, 3), p(2, 3, 1)) }, "nn: Concat: shapes [2 3], [2 3 1] differ outside axis 0"},
		{"Concat/none", func() { tp.Concat(0) }, "nn: Concat: no operands"},
		{"Stack/shapes", func() { tp.Stack(0, p(2, 3), p(3, 2)) }, "nn: Stack: shapes [2 3], [3 2] differ"},
		{"Stack/axis", func() { tp.Stack(3, p(2, 3)) }, "nn: Stack: axis 3 out of range for operands of shape [2 3]"},
		{"Div/broadcast", func() { tp.Div(p(2, 3), p(4)) }, "nn: Div: shapes [2 3] and [4] do not broadcast"},
		{"Pow/broadcast", func() { tp.Pow(p(2, 3), p(2)) }, "nn: Pow: shapes [2 3] and [2] do not broadcast"},
		{"Maximum/broadcast", func() { tp.Maximum(p(2, 3), p(3, 3)) }, "nn: Maximum: shapes [2 3] and [3 3] do not broadcast"},
		{"Minimum/broadcast", func() { tp.Minimum(p(2), p(3)) }, "nn: Minimum: shapes [2] and [3] do not broadcast"},
		{"Where/broadcast", func() { tp.Where(tensor.New(5), p(2, 3), p(3)) }, "nn: Where: shapes [5] (cond), [2 3] and [3] do not broadcast"},
		{"Where/nil", func() { tp.Where(nil, p(3), p(3)) }, "nn: Where: nil cond"},
		{"MaskedFill/shape", func() { tp.MaskedFill(p(2, 3), tensor.New(2, 1, 3), 0) }, "nn: MaskedFill: mask of shape [2 1 3] does not broadcast to x's shape [2 3]"},
		{"SumAxes/repeated", func() { tp.SumAxes(p(2, 3), false, 1, -1) }, "nn: SumAxes: repeated axis in [1 -1] for x of shape [2 3]"},
		{"MeanAxes/axis", func() { tp.MeanAxes(p(2, 3), true, 2) }, "nn: MeanAxes: axis 2 out of range for x of shape [2 3]"},
		{"MaxAxes/empty", func() { tp.MaxAxes(p(2, 0, 3), false, 1) }, "nn: MaxAxes: maximum over no element (axes [1] of x of shape [2 0 3])"},
		{"Clamp/bounds", func() { tp.Clamp(p(2), 1, -1) }, "nn: Clamp: lo 1 above hi -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantPanic(t, tc.f, tc.want) })
	}
}

// TestTapeOpsZeroSize runs the operations on operands with a dimension of
// size 0: the results have PyTorch's shapes (a sum over no element 0, a
// mean NaN) and Backward gives every input a gradient of its shape.
func TestTapeOpsZeroSize(t *testing.T) {
	tests := []struct {
		name   string
		inputs [][]int
		f      func(tp *Tape, in []*Var) *Var
		want   []int
		fill   float32 // the value of every output element, if any
	}{
		{"Softmax/rows", [][]int{{0, 4}}, func(tp *Tape, in []*Var) *Var { return tp.Softmax(in[0], -1) }, []int{0, 4}, 0},
		{"LogSoftmax/axis", [][]int{{3, 0}}, func(tp *Tape, in []*Var) *Var { return tp.LogSoftmax(in[0], 1) }, []int{3, 0}, 0},
		{"Transpose", [][]int{{0, 3}}, func(tp *Tape, in []*Var) *Var { return tp.Transpose(in[0], 0, 1) }, []int{3, 0}, 0},
		{"Slice/empty", [][]int{{2, 3}}, func(tp *Tape, in []*Var) *Var { return tp.Slice(in[0], 1, 2, 1, 1) }, []int{2, 0}, 0},
		{"Stack", [][]int{{0, 2}, {0, 2}, {0, 2}}, func(tp *Tape, in []*Var) *Var { return tp.Stack(0, in...) }, []int{3, 0, 2}, 0},
		{"MatMul/k=0", [][]int{{2, 3, 0}, {0, 4}}, func(tp *Tape, in []*Var) *Var { return tp.MatMul(in[0], in[1]) }, []int{2, 3, 4}, 0},
		{"SumAxes", [][]int{{2, 0, 3}}, func(tp *Tape, in []*Var) *Var { return tp.SumAxes(in[0], false, 1) }, []int{2, 3}, 0},
		{"SumAxes/keepdims", [][]int{{2, 0, 3}}, func(tp *Tape, in []*Var) *Var { return tp.SumAxes(in[0], true, -2) }, []int{2, 1, 3}, 0},
		{"MeanAxes", [][]int{{2, 0, 3}}, func(tp *Tape, in []*Var) *Var { return tp.MeanAxes(in[0], false, 1) }, []int{2, 3}, float32(math.NaN())},
		{"MaxAxes/other", [][]int{{0, 3}}, func(tp *Tape, in []*Var) *Var { return tp.MaxAxes(in[0], true, 1) }, []int{0, 1}, 0},
		{"Where", [][]int{{0, 3}, {3}}, func(tp *Tape, in []*Var) *Var { return tp.Where(tensor.New(1, 3), in[0], in[1]) }, []int{0, 3}, 0},
		{"Div", [][]int{{0, 3}, {3}}, func(tp *Tape, in []*Var) *Var { return tp.Div(in[0], in[1]) }, []int{0, 3}, 0},
		{"Maximum", [][]int{{0, 3}, {1}}, func(tp *Tape, in []*Var) *Var { return tp.Maximum(in[0], in[1]) }, []int{0, 3}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]*Var, len(tc.inputs))
			for i, s := range tc.inputs {
				in[i] = NewParam(tensor.Ones(s...))
			}
			tp := NewTape()
			y := tc.f(tp, in)
			if !slices.Equal(y.Shape(), tc.want) {
				t.Fatalf("shape %v, want %v", y.Shape(), tc.want)
			}
			for i, v := range y.Value().Data() {
				if v != tc.fill && !(v != v && tc.fill != tc.fill) {
					t.Fatalf("element %d = %v, want %v", i, v, tc.fill)
				}
			}
			tp.Backward(tp.Sum(y))
			for i, v := range in {
				if g := v.Grad(); g == nil || !slices.Equal(g.Shape(), tc.inputs[i]) {
					t.Errorf("input %d: gradient %v, want shape %v", i, g, tc.inputs[i])
				}
			}
		})
	}
}

// TestMaxAxesNaN checks MaxAxes over a row holding NaN: the maximum is
// NaN (tensor.Max's) and so is the gradient of every element of the row,
// while the other rows' gradients are exact.
func TestMaxAxesNaN(t *testing.T) {
	nan := float32(math.NaN())
	x := NewParam(tensor.FromSlice([]float32{1, nan, 2, 4, 3, 4}, 2, 3))
	tp := NewTape()
	y := tp.MaxAxes(x, false, 1)
	if got := y.Value().Data(); got[0] == got[0] || got[1] != 4 {
		t.Fatalf("MaxAxes = %v, want [NaN 4]", got)
	}
	tp.Backward(tp.Sum(y))
	g := x.Grad().Data()
	for i, v := range g[:3] {
		if v == v {
			t.Errorf("gradient of element %d of the NaN row = %v, want NaN", i, v)
		}
	}
	if want := []float32{0.5, 0, 0.5}; !slices.Equal(g[3:], want) {
		t.Errorf("gradient of the other row %v, want %v (its two maxima share it)", g[3:], want)
	}
}
