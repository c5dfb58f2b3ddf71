package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestLayerNormZeroRows checks LayerNorm over no rows with gamma and beta
// (the row length came out 0 and did not match gamma's): the output and
// x's gradient are empty, gamma's and beta's gradients zeros, as PyTorch's.
func TestLayerNormZeroRows(t *testing.T) {
	for _, tc := range []struct {
		x    []int
		dims int
	}{{[]int{0, 4}, 1}, {[]int{0, 3, 4}, 2}, {[]int{2, 0, 4}, 1}} {
		t.Run(fmt.Sprintf("LayerNorm/%v/dims=%d", tc.x, tc.dims), func(t *testing.T) {
			trail := tc.x[len(tc.x)-tc.dims:]
			x := NewParam(tensor.New(tc.x...))
			g, b := NewParam(tensor.Ones(trail...)), NewParam(tensor.Ones(trail...))
			tp := NewTape()
			y := tp.LayerNorm(x, g, b, NormParams{Dims: tc.dims})
			if !slices.Equal(y.Shape(), tc.x) {
				t.Fatalf("shape %v, want %v", y.Shape(), tc.x)
			}
			tp.Backward(tp.Sum(y))
			for name, v := range map[string]*Var{"gamma": g, "beta": b} {
				gr := v.Grad()
				if gr == nil || !slices.Equal(gr.Shape(), trail) || slices.ContainsFunc(gr.Data(), func(v float32) bool { return v != 0 }) {
					t.Errorf("%s gradient %v, want zeros of shape %v", name, gr, trail)
				}
			}
			if gx := x.Grad(); gx == nil || !slices.Equal(gx.Shape(), tc.x) {
				t.Errorf("x gradient %v, want shape %v", gx, tc.x)
			}
		})
	}
	t.Run("LayerNorm module", func(t *testing.T) {
		tp := NewTape()
		if y := NewLayerNorm(4).Forward(tp, tp.Const(tensor.New(0, 4))); !slices.Equal(y.Shape(), []int{0, 4}) {
			t.Errorf("shape %v, want [0 4]", y.Shape())
		}
	})
}

// TestFlattenReshapeZeroSize checks Flatten and Reshape against PyTorch's
// shapes when a dimension is 0.
func TestFlattenReshapeZeroSize(t *testing.T) {
	tests := []struct {
		x       []int
		reshape []int // nil: Flatten
		want    []int
		refuse  string // the panic, for shapes PyTorch refuses
	}{
		{x: []int{0, 28, 28}, want: []int{0, 784}},
		{x: []int{0, 1, 28, 28}, want: []int{0, 784}},
		{x: []int{3, 0, 5}, want: []int{3, 0}},
		{x: []int{0}, want: []int{0, 1}},
		{x: []int{4, 2, 3}, want: []int{4, 6}},
		{x: []int{0, 28, 28}, reshape: []int{-1, 784}, want: []int{0, 784}},
		{x: []int{0, 28, 28}, reshape: []int{0, -1, 28}, refuse: "the -1 could be any size"},
		{x: []int{0, 28, 28}, reshape: []int{-1, 0}, refuse: "the -1 could be any size"},
		{x: []int{0, 28, 28}, reshape: []int{28, 0, 28}, want: []int{28, 0, 28}},
		{x: []int{2, 4}, reshape: []int{4, 1 << 62}, refuse: "overflows int"},
		{x: []int{8}, reshape: []int{4, 1<<62 + 2}, refuse: "overflows int"}, // the product wraps to 8
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%v", tc.x, tc.reshape), func(t *testing.T) {
			tp := NewTape()
			x := NewParam(tensor.New(tc.x...))
			f := func() *Var {
				if tc.reshape == nil {
					return tp.Flatten(x)
				}
				return tp.Reshape(x, tc.reshape...)
			}
			if tc.refuse != "" {
				wantPanic(t, func() { f() }, "nn: Reshape: ", tc.refuse)
				return
			}
			y := f()
			if !slices.Equal(y.Shape(), tc.want) {
				t.Fatalf("shape %v, want %v", y.Shape(), tc.want)
			}
			tp.Backward(tp.Sum(y))
			if !slices.Equal(x.Grad().Shape(), tc.x) {
				t.Errorf("gradient of shape %v, want %v", x.Grad().Shape(), tc.x)
			}
		})
	}
}

// TestEmptyMeans checks that the means over no element are NaN (as
// PyTorch's and tensor.Mean), a sum 0, and that their backward gives the
// empty gradient.
func TestEmptyMeans(t *testing.T) {
	tests := []struct {
		name  string
		shape []int
		sum   bool
		f     func(tp *Tape, x *Var) *Var
	}{
		{"CrossEntropy", []int{0, 10}, false, func(tp *Tape, x *Var) *Var { return tp.CrossEntropy(x, tensor.New(0)) }},
		{"MSE", []int{0, 3}, false, func(tp *Tape, x *Var) *Var { return tp.MSE(x, tensor.New(0, 3)) }},
		{"MSE/1d", []int{0}, false, func(tp *Tape, x *Var) *Var { return tp.MSE(x, tensor.New(0)) }},
		{"BCEWithLogits", []int{4, 0}, false, func(tp *Tape, x *Var) *Var { return tp.BCEWithLogits(x, tensor.New(4, 0)) }},
		{"Mean", []int{0, 3}, false, func(tp *Tape, x *Var) *Var { return tp.Mean(x) }},
		{"Sum", []int{0, 3}, true, func(tp *Tape, x *Var) *Var { return tp.Sum(x) }},
	}
	if !math.IsNaN(float64(tensor.Mean(tensor.New(0, 3), false).Item())) {
		t.Fatal("tensor.Mean of no element is not NaN")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp := NewTape()
			x := NewParam(tensor.New(tc.shape...))
			loss := tc.f(tp, x)
			v := loss.Value().Item()
			if tc.sum && v != 0 || !tc.sum && !math.IsNaN(float64(v)) {
				t.Errorf("loss %v, want %v", v, map[bool]string{true: "0", false: "NaN"}[tc.sum])
			}
			tp.Backward(loss)
			if g := x.Grad(); g == nil || !slices.Equal(g.Shape(), tc.shape) {
				t.Errorf("gradient %v, want an empty one of shape %v", g, tc.shape)
			}
		})
	}
}

// TestEmptyBatch runs the forward and backward pass of a training step of
// the two Fashion models on a batch of no images: the loss is NaN and
// every parameter gradient zeros, as PyTorch's.
func TestEmptyBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range models {
		t.Run(c.name+"/empty batch", func(t *testing.T) {
			m := c.model(r)
			tp := NewTape()
			x := tensor.New(append([]int{0}, c.x[1:]...)...)
			loss := tp.CrossEntropy(m.Forward(tp, tp.Const(x)), tensor.New(0))
			if !math.IsNaN(float64(loss.Value().Item())) {
				t.Errorf("loss %v, want NaN", loss.Value().Item())
			}
			tp.Backward(loss)
			for i, p := range Params(m) {
				if g := p.Grad(); g == nil || slices.ContainsFunc(g.Data(), func(v float32) bool { return v != 0 }) {
					t.Errorf("parameter %d: gradient not all zeros", i)
				}
			}
		})
	}
}
