//go:build !(386 || arm || mips || mipsle)

package tensor

import (
	"math"
	"strings"
	"testing"
)

// The cases here need a 64-bit int.

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
