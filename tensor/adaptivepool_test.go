package tensor

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestAdaptivePoolTorch checks the adaptive poolings, their indices and
// gradients against PyTorch's: output sizes below, equal to and above the
// input's, 1×1, a 3-d input, ties (the first maximum's index).
func TestAdaptivePoolTorch(t *testing.T) {
	for _, op := range []string{"AdaptiveAvgPool2D", "AdaptiveMaxPool2D"} {
		for _, c := range torchCases(t, op) {
			t.Run(fmt.Sprintf("%s/%v/%v", op, c.Shape, c.Outsize), func(t *testing.T) {
				x, dy := FromSlice(c.X, c.Shape...), FromSlice(c.Dy, c.Out...)
				out := [2]int{c.Outsize[0], c.Outsize[1]}
				if op == "AdaptiveAvgPool2D" {
					sameValues(t, op, AdaptiveAvgPool2D(x, out), c.Out, c.Y, 0x1p-22)
					sameValues(t, op+"Backward", AdaptiveAvgPool2DBackward(dy, c.Shape), c.Shape, c.Dx, 0x1p-22)
					return
				}
				y, idx := AdaptiveMaxPool2D(x, out)
				sameValues(t, op, y, c.Out, c.Y, 0)
				sameValues(t, op+" indices", idx, c.Out, c.Idx, 0)
				sameValues(t, op+"Backward", AdaptiveMaxPool2DBackward(dy, idx, c.Shape), c.Shape, c.Dx, 0)
			})
		}
	}
}

// TestAdaptiveMaxPool2DNaN: a NaN is the maximum of its window.
func TestAdaptiveMaxPool2DNaN(t *testing.T) {
	nan := float32(math.NaN())
	y, idx := AdaptiveMaxPool2D(FromSlice([]float32{1, nan, 3, 2}, 1, 4), [2]int{1, 2})
	if !math.IsNaN(float64(y.At(0, 0))) || y.At(0, 1) != 3 || idx.At(0, 0) != 1 || idx.At(0, 1) != 2 {
		t.Errorf("got %v indices %v, want [NaN 3] [1 2]", y, idx)
	}
}

func TestAdaptivePoolPanics(t *testing.T) {
	x := New(2, 3, 4)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"rank", func() { AdaptiveAvgPool2D(New(4), [2]int{1, 1}) },
			"tensor: AdaptiveAvgPool2D: input of shape [4] and output size [1 1]: want [..., H, W] and sizes >= 0"},
		{"negative", func() { AdaptiveMaxPool2D(x, [2]int{-1, 1}) },
			"tensor: AdaptiveMaxPool2D: input of shape [2 3 4] and output size [-1 1]: want [..., H, W] and sizes >= 0"},
		{"empty", func() { AdaptiveAvgPool2D(New(2, 0, 4), [2]int{1, 1}) },
			"tensor: AdaptiveAvgPool2D: input of shape [2 0 4] has an empty axis to pool to [1 1]"},
		{"dst", func() { AdaptiveAvgPool2DInto(New(3, 2, 2), x) },
			"tensor: AdaptiveAvgPool2DInto: dst shape [3 2 2], want [2 2 2]"},
		{"dy", func() { AdaptiveAvgPool2DBackward(New(3, 2, 2), []int{2, 3, 4}) },
			"tensor: AdaptiveAvgPool2DBackward: dy shape [3 2 2], want [2 2 2]"},
		{"index", func() { AdaptiveMaxPool2DBackward(New(1, 1), Full(12, 1, 1), []int{3, 4}) },
			"tensor: AdaptiveMaxPool2DBackward: index 12 is not an integer in 0..11"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectPanic(t, tc.want, tc.f) })
	}
}

// TestAdaptivePoolZeroSize pools no planes, and an empty axis to size 0.
func TestAdaptivePoolZeroSize(t *testing.T) {
	if y := AdaptiveAvgPool2D(New(0, 3, 4, 4), [2]int{2, 2}); !slices.Equal(y.Shape(), []int{0, 3, 2, 2}) {
		t.Errorf("no images: shape %v", y.Shape())
	}
	if y, idx := AdaptiveMaxPool2D(New(2, 0, 4), [2]int{0, 3}); !slices.Equal(y.Shape(), []int{2, 0, 3}) || idx.Len() != 0 {
		t.Errorf("an empty axis to 0: shape %v", y.Shape())
	}
	if dx := AdaptiveMaxPool2DBackward(New(2, 0, 3), New(2, 0, 3), []int{2, 0, 4}); dx.Len() != 0 {
		t.Errorf("backward of nothing: %v", dx)
	}
}
