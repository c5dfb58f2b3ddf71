package tensor

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// panicOf runs f and returns its panic message ("" when it returns).
func panicOf(f func()) (msg string) {
	defer func() {
		if e := recover(); e != nil {
			msg = fmt.Sprint(e)
		}
	}()
	f()
	return ""
}

// huge returns a zero-memory tensor of the given shape (a broadcast
// scalar), for arguments whose results are too large to allocate.
func huge(shape ...int) *Tensor { return Scalar(1).BroadcastTo(shape...) }

// TestExtremeButValid runs arguments at the edge of int that describe
// small, valid computations: they must give the right answer (indices
// computed from them used to overflow).
func TestExtremeButValid(t *testing.T) {
	x := Arange(0, 25, 1).Reshape(1, 1, 5, 5)
	// A stride beyond the input: one output, the window at the origin of
	// the padded input. validCols computed ceil(pad/stride) as
	// (pad + stride - 1)/stride, which overflowed.
	got := Conv2D(x, Ones(1, 1, 5, 5), nil, ConvParams{Stride: [2]int{math.MaxInt, math.MaxInt}, Padding: [2]int{2, 2}})
	if !slices.Equal(got.Shape(), []int{1, 1, 1, 1}) || got.Item() != 0+1+2+5+6+7+10+11+12 {
		t.Errorf("Conv2D with stride MaxInt: %v, want [[[[54]]]]", got)
	}
	// Stride beyond the input with a kernel tap reading the input.
	got = Conv2D(x, Ones(1, 1, 1, 1), nil, ConvParams{Stride: [2]int{math.MaxInt, math.MaxInt}})
	if got.Item() != 0 {
		t.Errorf("1x1 Conv2D with stride MaxInt: %v, want [[[[0]]]]", got)
	}
	// Pooling: a stride of MaxInt takes the first window only.
	m, idx := MaxPool2D(x, PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{math.MaxInt, math.MaxInt}, Padding: [2]int{1, 1}})
	if m.Item() != 6 || idx.Item() != 6 {
		t.Errorf("MaxPool2D with stride MaxInt: %v at %v, want 6 at 6", m, idx)
	}
	// Arange with an infinite step, or one whose quotient underflows,
	// still has its first element (NumPy: [0.]).
	for _, step := range []float64{math.Inf(1), 1e308} {
		if a := Arange(0, 1e-300, step); a.Len() != 1 || a.Item() != 0 {
			t.Errorf("Arange(0, 1e-300, %v) = %v, want [0]", step, a)
		}
	}
	if a := Arange(0, -1, math.Inf(-1)); a.Len() != 1 || a.Item() != 0 {
		t.Errorf("Arange(0, -1, -Inf) = %v, want [0]", a)
	}
}
