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

// sortOpGradCases are the gradient checks of sortops.go and
// reorderops.go (run by TestGradients through gradCases).
func sortOpGradCases() []gradCase {
	r := rand.New(rand.NewPCG(24, 24))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	var cs []gradCase
	add := func(name, op string, f func(tp *Tape, in []*Var) *Var, inputs ...*tensor.Tensor) {
		cs = append(cs, gradCase{name: name, op: op, inputs: inputs, f: f})
	}
	zeros := func(t *tensor.Tensor, at ...int) *tensor.Tensor {
		for _, i := range at {
			t.Data()[i] = 0
		}
		return t
	}
	for _, c := range []struct {
		name string
		x    *tensor.Tensor
		axes []int
		keep bool
	}{
		{"all", rn(2, 3), nil, false},
		{"axis1", rn(3, 4), []int{1}, true},
		{"axes02", rn(2, 3, 4), []int{0, 2}, false},
		{"oneZero", zeros(rn(3, 4), 5), []int{1}, false},
		{"twoZeros", zeros(rn(3, 4), 4, 6, 9), []int{-1}, false},
		{"transposedZeros", zeros(rn(4, 3), 0, 1, 5), []int{0}, true},
	} {
		add("Prod/"+c.name, "Prod", func(tp *Tape, in []*Var) *Var { return tp.Prod(in[0], c.keep, c.axes...) }, c.x)
	}
	for _, p := range []float64{2, 1, 3, 0.5, math.Inf(1), math.Inf(-1), 0} {
		x := awayFromZero(r, 3, 5)
		if math.IsInf(p, 0) {
			x = distinct(r, 3, 5)
			for i := range x.Data() {
				if x.Data()[i] == 0 {
					x.Data()[i] = 0.3
				}
			}
		}
		add(fmt.Sprintf("Norm/p=%v", p), "Norm", func(tp *Tape, in []*Var) *Var { return tp.Norm(in[0], p, false, 1) }, x)
	}
	add("Norm/zeroRow", "Norm", func(tp *Tape, in []*Var) *Var { return tp.Norm(in[0], 2, true, 0) }, zeros(rn(2, 3), 0, 3))
	add("CumSum", "CumSum", func(tp *Tape, in []*Var) *Var { return tp.CumSum(in[0], 1) }, rn(3, 5))
	add("CumSum/axis0", "CumSum", func(tp *Tape, in []*Var) *Var { return tp.CumSum(in[0], -3) }, rn(4, 2, 3))
	add("CumProd", "CumProd", func(tp *Tape, in []*Var) *Var { return tp.CumProd(in[0], 1) }, rn(3, 5))
	add("CumProd/zeros", "CumProd", func(tp *Tape, in []*Var) *Var { return tp.CumProd(in[0], 1) },
		zeros(rn(4, 5), 0, 7, 12, 13, 19)) // first, middle, two in a row, last
	add("CumProd/axis0", "CumProd", func(tp *Tape, in []*Var) *Var { return tp.CumProd(in[0], 0) }, zeros(rn(5, 3), 4))
	for _, desc := range []bool{false, true} {
		add(fmt.Sprintf("Sort/descending=%v", desc), "Sort", func(tp *Tape, in []*Var) *Var {
			v, _ := tp.Sort(in[0], 0, desc)
			return v
		}, distinct(r, 5, 3))
		add(fmt.Sprintf("TopK/largest=%v", desc), "TopK", func(tp *Tape, in []*Var) *Var {
			v, _ := tp.TopK(in[0], 2, -1, desc, true)
			return v
		}, distinct(r, 3, 6))
		add(fmt.Sprintf("Median/keepdims=%v", desc), "Median", func(tp *Tape, in []*Var) *Var {
			v, _ := tp.Median(in[0], 1, desc)
			return v
		}, distinct(r, 3, 4))
	}
	add("Flip", "Flip", func(tp *Tape, in []*Var) *Var { return tp.Flip(in[0], 0, -1) }, rn(3, 4, 2))
	add("Roll", "Roll", func(tp *Tape, in []*Var) *Var { return tp.Roll(in[0], []int{1, -5}, 0, 2) }, rn(3, 4, 2))
	add("Roll/flat", "Roll", func(tp *Tape, in []*Var) *Var { return tp.Roll(in[0], []int{7}) }, rn(3, 4))
	add("Tile", "Tile", func(tp *Tape, in []*Var) *Var { return tp.Tile(in[0], 2, 1, 3) }, rn(2, 3))
	add("Tile/fewerReps", "Tile", func(tp *Tape, in []*Var) *Var { return tp.Tile(in[0], 2) }, rn(2, 3))
	mask := tensor.FromSlice([]float32{1, 0, 1, 1, 0}, 1, 5)
	add("MaskedSelect/broadcast", "MaskedSelect", func(tp *Tape, in []*Var) *Var { return tp.MaskedSelect(in[0], mask) }, rn(4, 1))
	add("MaskedSelect", "MaskedSelect", func(tp *Tape, in []*Var) *Var { return tp.MaskedSelect(in[0], mask) }, rn(3, 5))
	index := tensor.FromSlice([]float32{2, 0, 1, 3, 1, 0}, 2, 3) // no target twice
	add("Scatter", "Scatter", func(tp *Tape, in []*Var) *Var { return tp.Scatter(in[0], 0, index, in[1]) }, rn(4, 3), rn(2, 3))
	return cs
}

// TestSortOpsForward checks the tape's values against package tensor's.
func TestSortOpsForward(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 25))
	x := tensor.RandN(r, 3, 4)
	tp := NewTape()
	v := tp.Const(x)
	same := func(name string, got, want *tensor.Tensor) {
		t.Helper()
		if !slices.Equal(got.Shape(), want.Shape()) || !slices.Equal(got.Data(), want.Data()) {
			t.Errorf("%s = %v %v, want %v %v", name, got.Shape(), got.Data(), want.Shape(), want.Data())
		}
	}
	same("Prod", tp.Prod(v, false, 1).Value(), tensor.Prod(x, false, 1))
	same("Norm", tp.Norm(v, 3, true).Value(), tensor.Norm(x, 3, true))
	same("CumProd", tp.CumProd(v, 0).Value(), tensor.CumProd(x, 0))
	mv, mi := tp.Median(v, 0, false)
	wv, wi := tensor.Median(x, 0, false)
	same("Median", mv.Value(), wv)
	same("Median indices", mi, wi)
	same("Tile", tp.Tile(v, 2, 2).Value(), tensor.Tile(x, 2, 2))
}

// TestProdGradZeros checks the gradient of Prod and CumProd at zeros
// exactly: with one zero only the zero's gradient is nonzero (the product
// of the others), with two all are zero.
func TestProdGradZeros(t *testing.T) {
	for _, c := range []struct {
		x, prod, cumprod []float32
	}{
		{[]float32{2, 0, 3}, []float32{0, 6, 0}, []float32{1, 2 + 2*3, 0}},
		{[]float32{0, 2, 0}, []float32{0, 0, 0}, []float32{1 + 2, 0, 0}},
		{[]float32{2, 3, 4}, []float32{12, 8, 6}, []float32{1 + 3 + 12, 2 + 8, 6}},
	} {
		for _, cum := range []bool{false, true} {
			p := NewParam(tensor.FromSlice(c.x, 3))
			tp := NewTape()
			var y *Var
			want := c.prod
			if cum {
				y, want = tp.Sum(tp.CumProd(p, 0)), c.cumprod
			} else {
				y = tp.Prod(p, false)
			}
			tp.Backward(y)
			if !slices.Equal(p.Grad().Data(), want) {
				t.Errorf("cumulative %v: gradient of %v = %v, want %v", cum, c.x, p.Grad().Data(), want)
			}
		}
	}
}

// TestNormGradZero checks the subgradient 0 at x = 0 for each p.
func TestNormGradZero(t *testing.T) {
	for _, p := range []float64{1, 2, 3, 0.5, math.Inf(1)} {
		w := NewParam(tensor.Zeros(4))
		tp := NewTape()
		tp.Backward(tp.Norm(w, p, false))
		for i, g := range w.Grad().Data() {
			if g != 0 {
				t.Errorf("p=%v: gradient %d at 0 is %v, want 0", p, i, g)
			}
		}
	}
}

// TestScatterDuplicateGrad checks that with a target named twice the
// later src element wins the value and both get the target's gradient.
func TestScatterDuplicateGrad(t *testing.T) {
	d, s := NewParam(tensor.Zeros(3)), NewParam(tensor.FromSlice([]float32{5, 7}, 2))
	tp := NewTape()
	y := tp.Scatter(d, 0, tensor.FromSlice([]float32{1, 1}, 2), s)
	if got := y.Value().Data(); !slices.Equal(got, []float32{0, 7, 0}) {
		t.Errorf("Scatter = %v, want [0 7 0]", got)
	}
	tp.Backward(tp.Sum(tp.Mul(y, tp.Const(tensor.FromSlice([]float32{1, 2, 3}, 3)))))
	if !slices.Equal(d.Grad().Data(), []float32{1, 0, 3}) || !slices.Equal(s.Grad().Data(), []float32{2, 2}) {
		t.Errorf("gradients %v %v, want [1 0 3] [2 2]", d.Grad().Data(), s.Grad().Data())
	}
}

// TestReorderOpsOnDevice runs Flip, Roll, Tile and Prod (forward and
// backward; Prod's through zeros too) on the stand-in device against the
// host (TestSortOpsOnDevice covers the sorts and scans).
func TestReorderOpsOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(24, 26))
	h := tensor.RandN(r, 3, 4, 2)
	for _, c := range []struct {
		name string
		f    func(tp *Tape, x *Var) *Var
	}{
		{"Flip", func(tp *Tape, x *Var) *Var { return tp.Flip(x, 0, -1) }},
		{"Roll", func(tp *Tape, x *Var) *Var { return tp.Roll(x, []int{2, -1}, 1, 0) }},
		{"Roll/flat", func(tp *Tape, x *Var) *Var { return tp.Roll(x, []int{5}) }},
		{"Tile", func(tp *Tape, x *Var) *Var { return tp.Tile(x, 2, 1, 2, 1) }},
		{"Prod/axis1", func(tp *Tape, x *Var) *Var { return tp.Prod(x, false, 1) }},
		{"Prod/axes02", func(tp *Tape, x *Var) *Var { return tp.Prod(x, true, 0, 2) }},
		{"Prod/all", func(tp *Tape, x *Var) *Var { return tp.Prod(x, false) }},
		{"Prod/zeros", func(tp *Tape, x *Var) *Var {
			// One zero in row 0, two in row 1 along axis 1.
			m := tensor.Ones(3, 4, 2)
			for _, i := range []int{2, 9, 11} {
				m.Data()[i] = 0
			}
			return tp.Prod(tp.Mul(x, tp.Const(onDev(t, m, x.Value().Device()))), false, 1)
		}},
	} {
		var vals, grads [2][]float32
		for i, dev := range []tensor.Device{tensor.CPU, testDev} {
			x := NewParam(onDev(t, h, dev))
			tp := NewTape()
			y := c.f(tp, x)
			if y.Value().Device() != dev {
				t.Fatalf("%s: value on %v, want %v", c.name, y.Value().Device(), dev)
			}
			proj := onDev(t, tensor.RandN(rand.New(rand.NewPCG(1, 1)), y.Value().Shape()...), dev)
			tp.Backward(tp.Sum(tp.Mul(y, tp.Const(proj))))
			vals[i], grads[i] = hostOf(t, y.Value()), hostOf(t, x.Grad())
		}
		if !slices.Equal(vals[0], vals[1]) || relErr(grads[1], grads[0]) > 1e-6 {
			t.Errorf("%s: the device's value or gradient differs from the host's", c.name)
		}
	}
}

// TestSortOpsZeroSize runs each op and its backward on operands with no
// element (or results with none): the gradients have the operands' shapes.
func TestSortOpsZeroSize(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape []int
		f     func(tp *Tape, x *Var) *Var
	}{
		{"Prod", []int{0, 3}, func(tp *Tape, x *Var) *Var { return tp.Prod(x, false, 0) }},
		{"Prod/empty", []int{3, 0}, func(tp *Tape, x *Var) *Var { return tp.Prod(x, true, 0) }},
		{"Norm", []int{0, 3}, func(tp *Tape, x *Var) *Var { return tp.Norm(x, 2, false, 0) }},
		{"CumSum", []int{2, 0}, func(tp *Tape, x *Var) *Var { return tp.CumSum(x, 1) }},
		{"CumProd", []int{0, 2}, func(tp *Tape, x *Var) *Var { return tp.CumProd(x, 0) }},
		{"Sort", []int{3, 0}, func(tp *Tape, x *Var) *Var { v, _ := tp.Sort(x, 1, false); return v }},
		{"TopK", []int{3, 4}, func(tp *Tape, x *Var) *Var { v, _ := tp.TopK(x, 0, 1, true, true); return v }},
		{"Median", []int{0, 4}, func(tp *Tape, x *Var) *Var { v, _ := tp.Median(x, 1, false); return v }},
		{"Flip", []int{0, 4}, func(tp *Tape, x *Var) *Var { return tp.Flip(x, 0, 1) }},
		{"Roll", []int{0, 4}, func(tp *Tape, x *Var) *Var { return tp.Roll(x, []int{1}, 0) }},
		{"Tile", []int{2, 3}, func(tp *Tape, x *Var) *Var { return tp.Tile(x, 0, 1) }},
		{"MaskedSelect", []int{2, 3}, func(tp *Tape, x *Var) *Var { return tp.MaskedSelect(x, tensor.Zeros(2, 3)) }},
	} {
		x := NewParam(tensor.Ones(c.shape...))
		tp := NewTape()
		tp.Backward(tp.Sum(c.f(tp, x)))
		g := x.Grad()
		if g == nil || !slices.Equal(g.Shape(), c.shape) {
			t.Errorf("%s: gradient %v, want shape %v", c.name, g, c.shape)
			continue
		}
		for _, v := range g.Data() {
			if v != 0 && c.name != "Prod/empty" {
				t.Errorf("%s: gradient %v, want zeros", c.name, g.Data())
				break
			}
		}
	}
}

// sortOpOperandCases are operandCases for the operations of sortops.go
// and reorderops.go (p makes a parameter of a shape).
func sortOpOperandCases(p func(shape ...int) *Var) []operandCase {
	return []operandCase{
		{"Prod", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Prod(v, false, 1) }},
		{"Norm", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Norm(v, 2, false) }},
		{"CumSum", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.CumSum(v, 1) }},
		{"CumProd", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.CumProd(v, 0) }},
		{"Sort", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Sort(v, 1, false) }},
		{"TopK", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.TopK(v, 1, 1, true, true) }},
		{"Median", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Median(v, 1, false) }},
		{"Flip", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Flip(v, 0) }},
		{"Roll", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Roll(v, []int{1}) }},
		{"Tile", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Tile(v, 2) }},
		{"MaskedSelect", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.MaskedSelect(v, tensor.New(3)) }},
		{"Scatter", "dst", []int{2, 3}, func(tp *Tape, v *Var) { tp.Scatter(v, 0, tensor.New(1, 3), p(1, 3)) }},
		{"Scatter", "src", []int{1, 3}, func(tp *Tape, v *Var) { tp.Scatter(p(2, 3), 0, tensor.New(1, 3), v) }},
	}
}
