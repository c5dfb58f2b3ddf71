package tensor

import (
	"fmt"
	"math"
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
	if !slicesEqual(got.Shape(), []int{1, 1, 1, 1}) || got.Item() != 0+1+2+5+6+7+10+11+12 {
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

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestNilTensors passes nil for each tensor parameter of every exported
// function and method in turn: each must panic naming the function and
// the parameter, not dereference nil in the runtime.
func TestNilTensors(t *testing.T) {
	var n *Tensor
	x, m := New(2, 3), New(2, 3)
	x4, w4, y4 := New(1, 1, 4, 4), New(1, 1, 3, 3), New(1, 1, 2, 2)
	pool := PoolParams{Kernel: [2]int{2, 2}}
	stats := NormStats{Mean: New(1), InvStd: New(1)}
	bn := BatchNormParams{Training: true}
	ln := LayerNormParams{}
	lstats := NormStats{Mean: New(2), InvStd: New(2)}
	cases := []struct {
		want string
		f    func()
	}{
		{"Add: nil tensor a", func() { Add(n, x) }},
		{"Add: nil tensor b", func() { Add(x, n) }},
		{"SubInto: nil tensor dst", func() { SubInto(n, x, x) }},
		{"MulInto: nil tensor a", func() { MulInto(m, n, x) }},
		{"DivInto: nil tensor b", func() { DivInto(m, x, n) }},
		{"Pow: nil tensor b", func() { Pow(x, n) }},
		{"Greater: nil tensor a", func() { Greater(n, x) }},
		{"Where: nil tensor cond", func() { Where(n, x, x) }},
		{"Where: nil tensor b", func() { Where(x, x, n) }},
		{"WhereInto: nil tensor dst", func() { WhereInto(n, x, x, x) }},
		{"WhereInto: nil tensor a", func() { WhereInto(m, x, n, x) }},
		{"Exp: nil tensor x", func() { Exp(n) }},
		{"ExpInto: nil tensor dst", func() { ExpInto(n, x) }},
		{"ClampInto: nil tensor x", func() { ClampInto(m, n, 0, 1) }},
		{"Scale: nil tensor x", func() { Scale(n, 2) }},
		{"Fill: nil tensor dst", func() { Fill(n, 1) }},
		{"CopyInto: nil tensor dst", func() { CopyInto(n, x) }},
		{"CopyInto: nil tensor src", func() { CopyInto(m, n) }},
		{"Sum: nil tensor x", func() { Sum(n, false) }},
		{"Max: nil tensor x", func() { Max(n, false) }},
		{"Min: nil tensor x", func() { Min(n, false) }},
		{"Mean: nil tensor x", func() { Mean(n, false) }},
		{"Var: nil tensor x", func() { Var(n, 0, false) }},
		{"Std: nil tensor x", func() { Std(n, 0, false) }},
		{"LogSumExp: nil tensor x", func() { LogSumExp(n, false) }},
		{"ArgMax: nil tensor x", func() { ArgMax(n, 0, false) }},
		{"ArgMin: nil tensor x", func() { ArgMin(n, 0, false) }},
		{"Softmax: nil tensor x", func() { Softmax(n, 0) }},
		{"SoftmaxInto: nil tensor dst", func() { SoftmaxInto(n, x, 0) }},
		{"LogSoftmax: nil tensor x", func() { LogSoftmax(n, 0) }},
		{"LogSoftmaxInto: nil tensor x", func() { LogSoftmaxInto(m, n, 0) }},
		{"SumToInto: nil tensor dst", func() { SumToInto(n, x) }},
		{"SumToInto: nil tensor x", func() { SumToInto(m, n) }},
		{"Concat: nil tensor ts[1]", func() { Concat(0, x, n) }},
		{"Stack: nil tensor ts[0]", func() { Stack(0, n, x) }},
		{"IndexSelect: nil tensor t", func() { IndexSelect(n, 0, New(1)) }},
		{"IndexSelect: nil tensor index", func() { IndexSelect(x, 0, n) }},
		{"Gather: nil tensor t", func() { Gather(n, 0, x) }},
		{"Gather: nil tensor index", func() { Gather(x, 0, n) }},
		{"OneHot: nil tensor labels", func() { OneHot(n, 3) }},
		{"MatMul: nil tensor a", func() { MatMul(n, x) }},
		{"MatMul: nil tensor b", func() { MatMul(x, n) }},
		{"MatMulInto: nil tensor dst", func() { MatMulInto(n, x, x.T()) }},
		{"MatMulInto: nil tensor b", func() { MatMulInto(New(2, 2), x, n) }},
		{"Conv2D: nil tensor x", func() { Conv2D(n, w4, nil, ConvParams{}) }},
		{"Conv2D: nil tensor w", func() { Conv2D(x4, n, nil, ConvParams{}) }},
		{"Conv2DInto: nil tensor dst", func() { Conv2DInto(n, x4, w4, nil, ConvParams{}) }},
		{"Conv2DInto: nil tensor w", func() { Conv2DInto(y4, x4, n, nil, ConvParams{}) }},
		{"Conv2DBackwardInput: nil tensor dy", func() { Conv2DBackwardInput(n, w4, []int{1, 1, 4, 4}, ConvParams{}) }},
		{"Conv2DBackwardInput: nil tensor w", func() { Conv2DBackwardInput(y4, n, []int{1, 1, 4, 4}, ConvParams{}) }},
		{"Conv2DBackwardInput: nil tensor dx", func() { Conv2DBackwardInputInto(n, y4, w4, ConvParams{}) }},
		{"Conv2DBackwardWeight: nil tensor dy", func() { Conv2DBackwardWeight(n, x4, []int{1, 1, 3, 3}, ConvParams{}) }},
		{"Conv2DBackwardWeight: nil tensor x", func() { Conv2DBackwardWeight(y4, n, []int{1, 1, 3, 3}, ConvParams{}) }},
		{"Conv2DBackwardWeight: nil tensor dw", func() { Conv2DBackwardWeightInto(n, y4, x4, ConvParams{}) }},
		{"Conv2DShape: nil tensor w", func() { Conv2DShape(x4, n, ConvParams{}) }},
		{"MaxPool2D: nil tensor x", func() { MaxPool2D(n, pool) }},
		{"MaxPool2DInto: nil tensor x", func() { MaxPool2DInto(New(1, 1, 2, 2), nil, n, pool) }},
		{"AvgPool2D: nil tensor x", func() { AvgPool2D(n, pool) }},
		{"AvgPool2DInto: nil tensor out", func() { AvgPool2DInto(n, x4, pool) }},
		{"MaxPool2DBackward: nil tensor dy", func() { MaxPool2DBackward(n, New(1, 1, 2, 2), []int{1, 1, 4, 4}, pool) }},
		{"MaxPool2DBackward: nil tensor indices", func() { MaxPool2DBackward(New(1, 1, 2, 2), n, []int{1, 1, 4, 4}, pool) }},
		{"MaxPool2DBackward: nil tensor dx", func() { MaxPool2DBackwardInto(n, New(1, 1, 2, 2), New(1, 1, 2, 2), pool) }},
		{"AvgPool2DBackward: nil tensor dy", func() { AvgPool2DBackward(n, []int{1, 1, 4, 4}, pool) }},
		{"AvgPool2DBackward: nil tensor dx", func() { AvgPool2DBackwardInto(n, New(1, 1, 2, 2), pool) }},
		{"Pool2DShape: nil tensor x", func() { Pool2DShape(n, pool) }},
		{"BatchNorm: nil tensor x", func() { BatchNorm(n, bn) }},
		{"BatchNormInto: nil tensor y", func() { BatchNormInto(n, stats, x4, bn) }},
		{"BatchNormInto: nil tensor x", func() { BatchNormInto(x4, stats, n, bn) }},
		{"BatchNormBackward: nil tensor dy", func() { BatchNormBackward(n, x4, stats, bn) }},
		{"BatchNormBackward: nil tensor x", func() { BatchNormBackwardInto(New(1, 1, 4, 4), nil, nil, x4, n, stats, bn) }},
		{"BatchNormBackward: nil tensor dx", func() { BatchNormBackwardInto(n, nil, nil, x4, x4, stats, bn) }},
		{"LayerNorm: nil tensor x", func() { LayerNorm(n, ln) }},
		{"LayerNormInto: nil tensor y", func() { LayerNormInto(n, lstats, x, ln) }},
		{"LayerNormBackward: nil tensor x", func() { LayerNormBackward(x, n, lstats, ln) }},
		{"LayerNormBackward: nil tensor dx", func() { LayerNormBackwardInto(n, nil, nil, x, x, lstats, ln) }},
		{"DeviceView: nil tensor t", func() { DeviceView(n) }},
		{"RandN: nil *rand.Rand", func() { RandN(nil, 2) }},
		{"RandU: nil *rand.Rand", func() { RandU(nil, 0, 1, 2) }},
		{"FromDeviceMemory: nil DeviceMemory", func() { FromDeviceMemory(nil, 2) }},
		// Methods name themselves and their receiver.
		{"Shape: nil tensor t", func() { n.Shape() }},
		{"Strides: nil tensor t", func() { n.Strides() }},
		{"Dims: nil tensor t", func() { n.Dims() }},
		{"Dim: nil tensor t", func() { n.Dim(0) }},
		{"Len: nil tensor t", func() { n.Len() }},
		{"Device: nil tensor t", func() { n.Device() }},
		{"IsContiguous: nil tensor t", func() { n.IsContiguous() }},
		{"Data: nil tensor t", func() { n.Data() }},
		{"At: nil tensor t", func() { n.At() }},
		{"Set: nil tensor t", func() { n.Set(1) }},
		{"Item: nil tensor t", func() { n.Item() }},
		{"Reshape: nil tensor t", func() { n.Reshape(1) }},
		{"Flatten: nil tensor t", func() { n.Flatten() }},
		{"Permute: nil tensor t", func() { n.Permute() }},
		{"Transpose: nil tensor t", func() { n.Transpose(0, 1) }},
		{"T: nil tensor t", func() { n.T() }},
		{"Slice: nil tensor t", func() { n.Slice(0, 0, 1, 1) }},
		{"Index: nil tensor t", func() { n.Index(0, 0) }},
		{"BroadcastTo: nil tensor t", func() { n.BroadcastTo(2) }},
		{"Expand: nil tensor t", func() { n.Expand(2) }},
		{"Squeeze: nil tensor t", func() { n.Squeeze() }},
		{"Unsqueeze: nil tensor t", func() { n.Unsqueeze(0) }},
		{"Contiguous: nil tensor t", func() { n.Contiguous() }},
		{"Clone: nil tensor t", func() { n.Clone() }},
		{"Split: nil tensor t", func() { n.Split(0, 1) }},
		{"Chunk: nil tensor t", func() { n.Chunk(0, 1) }},
		{"To: nil tensor t", func() { n.To(CPU) }},
		{"Host: nil tensor t", func() { n.Host() }},
	}
	for _, c := range cases {
		if msg := panicOf(c.f); msg != "tensor: "+c.want {
			t.Errorf("panic %q, want %q", msg, "tensor: "+c.want)
		}
	}
	if s := n.String(); s != "<nil>" {
		t.Errorf("String of a nil tensor: %q, want <nil>", s)
	}
}
