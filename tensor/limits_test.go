package tensor

import (
	"fmt"
	"math"
	"strings"
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

// TestAbsurdSizes gives every entry point that allocates from a shape it
// is given or computes one that is too large for a tensor: each must
// panic naming itself and the shape or parameters, never with the
// runtime's "makeslice: len out of range", an integer overflow that wraps
// into a valid-looking shape, or a panic naming another function (New).
func TestAbsurdSizes(t *testing.T) {
	big := 1 << 62
	x3 := Arange(0, 9, 1).Reshape(1, 1, 3, 3)
	w3 := Ones(1, 1, 3, 3)
	for _, c := range []struct {
		name string
		f    func()
		want []string // the message starts with the first and contains the others
	}{
		{"New", func() { New(big) }, []string{"tensor: New: shape [4611686018427387904] has more elements than a tensor can hold"}},
		{"New/product", func() { New(1<<32, 1<<32) }, []string{"tensor: New: shape [4294967296 4294967296] has more elements"}},
		{"New/empty", func() { New(0, big, big) }, []string{"tensor: New: shape [0 4611686018427387904 4611686018427387904]"}},
		{"Zeros", func() { Zeros(1<<40, 1<<40) }, []string{"tensor: Zeros: shape [1099511627776 1099511627776]"}},
		{"Ones", func() { Ones(big) }, []string{"tensor: Ones: shape [4611686018427387904]"}},
		{"Full", func() { Full(2, 3, big) }, []string{"tensor: Full: shape [3 4611686018427387904]"}},
		{"OneHot", func() { OneHot(New(3), big) }, []string{"tensor: OneHot: shape [3 4611686018427387904]"}},
		{"OneHot/empty", func() { OneHot(New(0), big) }, []string{"tensor: OneHot: shape [0 4611686018427387904]"}},
		{"Arange/+Inf", func() { Arange(0, math.Inf(1), 1) }, []string{"tensor: Arange: start=0 stop=+Inf step=1 give +Inf elements"}},
		{"Arange/-Inf", func() { Arange(0, math.Inf(-1), -1) }, []string{"tensor: Arange: start=0 stop=-Inf step=-1 give +Inf elements"}},
		{"Arange/Inf-Inf", func() { Arange(math.Inf(1), math.Inf(1), 1) }, []string{"tensor: Arange: start=+Inf stop=+Inf step=1 give NaN elements"}},
		{"Arange/tiny step", func() { Arange(0, 1, 1e-20) }, []string{"tensor: Arange: start=0 stop=1 step=1e-20 give 1e+20 elements"}},
		{"Arange/NaN step", func() { Arange(0, 1, math.NaN()) }, []string{"tensor: Arange: invalid start=0 stop=1 step=NaN"}},
		{"Arange/zero step", func() { Arange(0, 1, 0) }, []string{"tensor: Arange: invalid start=0 stop=1 step=0"}},
		{"Reshape/empty", func() { New(0).Reshape(0, big, big) }, []string{"tensor: Reshape: shape [0 4611686018427387904 4611686018427387904] does not match [0]"}},
		{"Reshape/wraps", func() { New(2).Reshape(3, 6148914691236517206) }, []string{"tensor: Reshape: shape [3 6148914691236517206] does not match [2]"}},
		{"Reshape/infer", func() { New(6).Reshape(-1, 3, 6148914691236517206) }, []string{"tensor: Reshape: cannot infer -1 in [-1 3 6148914691236517206] for [6]"}},
		{"BroadcastTo", func() { Scalar(1).BroadcastTo(big) }, []string{"tensor: BroadcastTo: shape [4611686018427387904]"}},
		{"Add", func() { Add(huge(1<<24, 1), huge(1, 1<<24)) }, []string{"tensor: Add: shape [16777216 16777216] has more elements"}},
		{"Where", func() { Where(huge(1<<24, 1), huge(1, 1<<24), Scalar(0)) }, []string{"tensor: Where: shape [16777216 16777216]"}},
		{"MatMul", func() { MatMul(huge(1<<24, 1), huge(1, 1<<24)) }, []string{"tensor: MatMul: shape [16777216 16777216]"}},
		{"Concat", func() { Concat(0, huge(1<<45), huge(1<<45), huge(1<<45)) }, []string{"tensor: Concat: shapes [35184372088832] and [35184372088832] and [35184372088832] give more than MaxElems"}},
		{"Stack", func() { Stack(0, huge(1<<45), huge(1<<45), huge(1<<45)) }, []string{"tensor: Stack: shape [3 35184372088832]"}},
		{"IndexSelect", func() { IndexSelect(huge(1, 1<<45), 0, New(4)) }, []string{"tensor: IndexSelect: shape [4 35184372088832]"}},
		{"Conv2D/padding", func() { Conv2D(x3, w3, nil, ConvParams{Padding: [2]int{1 << 40, 1 << 40}}) },
			[]string{"tensor: Conv2D: shapes [1 1 3 3] and [1 1 3 3] with padding [1099511627776 1099511627776]: the padded input plane has more than MaxElems"}},
		{"Conv2D/padding overflows", func() { Conv2D(x3, w3, nil, ConvParams{Padding: [2]int{math.MaxInt / 2, 0}}) },
			[]string{"tensor: Conv2D: shapes [1 1 3 3] and [1 1 3 3] with padding [4611686018427387903 0]: the padded input plane"}},
		{"Conv2D/dilation", func() { Conv2D(x3, w3, nil, ConvParams{Dilation: [2]int{1 << 62, 1}}) },
			[]string{"tensor: Conv2D: shapes [1 1 3 3] and [1 1 3 3] with dilation [4611686018427387904 1]: the kernel extent overflows int"}},
		{"Conv2D/output", func() { Conv2D(huge(1<<20, 1, 3, 3), w3, nil, ConvParams{Padding: [2]int{1 << 12, 1 << 12}}) },
			[]string{"tensor: Conv2D: shapes [1048576 1 3 3] and [1 1 3 3] with ", "give an output of shape [1048576 1 8193 8193]: more than MaxElems"}},
		{"Conv2DInto/padding", func() { Conv2DInto(New(1, 1, 1, 1), x3, w3, nil, ConvParams{Padding: [2]int{1 << 40, 1 << 40}}) },
			[]string{"tensor: Conv2DInto: shapes [1 1 3 3] and [1 1 3 3] with padding"}},
		{"Conv2DBackwardInput", func() { Conv2DBackwardInput(New(1, 1, 1, 1), w3, []int{big, 1, 3, 3}, ConvParams{}) },
			[]string{"tensor: Conv2DBackwardInput: shape [4611686018427387904 1 3 3]"}},
		{"Conv2DBackwardWeight", func() { Conv2DBackwardWeight(New(1, 1, 1, 1), x3, []int{1, 1, big, 3}, ConvParams{}) },
			[]string{"tensor: Conv2DBackwardWeight: shape [1 1 4611686018427387904 3]"}},
		{"Conv2DShape", func() { Conv2DShape(x3, w3, ConvParams{Padding: [2]int{1 << 40, 1 << 40}}) },
			[]string{"tensor: Conv2DShape: shapes [1 1 3 3] and [1 1 3 3] with padding"}},
		{"MaxPool2D/kernel", func() { MaxPool2D(x3, PoolParams{Kernel: [2]int{1 << 41, 1 << 41}, Padding: [2]int{1 << 40, 1 << 40}}) },
			[]string{"tensor: MaxPool2D: shape [1 1 3 3] with padding [1099511627776 1099511627776]: the padded input plane"}},
		{"AvgPool2D/kernel", func() { AvgPool2D(x3, PoolParams{Kernel: [2]int{1 << 41, 1 << 41}, Padding: [2]int{1 << 40, 1 << 40}}) },
			[]string{"tensor: AvgPool2D: shape [1 1 3 3] with padding"}},
		{"AvgPool2D/padding overflows", func() { AvgPool2D(x3, PoolParams{Kernel: [2]int{math.MaxInt, 1}, Padding: [2]int{math.MaxInt / 2, 0}}) },
			[]string{"tensor: AvgPool2D: shape [1 1 3 3] with padding [4611686018427387903 0]: the padded input plane"}},
		{"MaxPool2DBackward", func() {
			MaxPool2DBackward(New(1, 1, 1, 1), New(1, 1, 1, 1), []int{1, big, 3, 3}, PoolParams{Kernel: [2]int{3, 3}})
		},
			[]string{"tensor: MaxPool2DBackward: shape [1 4611686018427387904 3 3]"}},
		{"AvgPool2DBackward", func() { AvgPool2DBackward(New(1, 1, 1, 1), []int{1, big, 3, 3}, PoolParams{Kernel: [2]int{3, 3}}) },
			[]string{"tensor: AvgPool2DBackward: shape [1 4611686018427387904 3 3]"}},
	} {
		msg := panicOf(c.f)
		ok := strings.HasPrefix(msg, c.want[0])
		for _, w := range c.want[1:] {
			ok = ok && strings.Contains(msg, w)
		}
		if !ok {
			t.Errorf("%s: panic %q, want %q", c.name, msg, strings.Join(c.want, " ... "))
		}
	}
}

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
