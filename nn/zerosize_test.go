package nn

import (
	"fmt"
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
