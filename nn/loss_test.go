package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestLossesThroughTensor checks that each loss gives tensor's loss, the
// same without gradients as with them, and that Backward scales tensor's
// gradient by the loss's upstream gradient (here 3, through Scale).
func TestLossesThroughTensor(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	labels := tensor.FromSlice([]float32{0, 4, 2, 2, 1}, 5)
	target := tensor.RandN(r, 5, 5)
	probs := tensor.RandU(r, 0, 1, 5, 5)
	for _, c := range []struct {
		name string
		nn   func(tp *Tape, x *Var) *Var
		t    func(x *tensor.Tensor) (loss, grad *tensor.Tensor)
	}{
		{"CrossEntropy", func(tp *Tape, x *Var) *Var { return tp.CrossEntropy(x, labels) },
			func(x *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return tensor.CrossEntropy(x, labels) }},
		{"MSE", func(tp *Tape, x *Var) *Var { return tp.MSE(x, target) },
			func(x *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return tensor.MSE(x, target) }},
		{"BCEWithLogits", func(tp *Tape, x *Var) *Var { return tp.BCEWithLogits(x, probs) },
			func(x *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) { return tensor.BCEWithLogits(x, probs) }},
	} {
		x := NewParam(tensor.RandN(r, 5, 5))
		wantLoss, wantGrad := c.t(x.value)
		tp := NewTape()
		loss := c.nn(tp, x)
		tp.Backward(tp.Scale(loss, 3))
		if got := loss.Value().Item(); got != wantLoss.Item() {
			t.Errorf("%s: loss %v, tensor's %v", c.name, got, wantLoss.Item())
		}
		for i, g := range x.Grad().Data() {
			if want := 3 * wantGrad.Data()[i]; g != want {
				t.Errorf("%s: gradient element %d: %v, want 3·%v", c.name, i, g, wantGrad.Data()[i])
				break
			}
		}
		tp.Reset()
		tp.SetGrad(false)
		if got := c.nn(tp, x).Value().Item(); math.Float32bits(got) != math.Float32bits(wantLoss.Item()) {
			t.Errorf("%s: loss without gradients %v, with %v", c.name, got, wantLoss.Item())
		}
	}
}

// TestCrossEntropyLabelPanics checks that a label that is not a class
// index panics, naming the row and the value (tensor's check: it is where
// the labels are read, on the host or on a device).
func TestCrossEntropyLabelPanics(t *testing.T) {
	w := NewParam(tensor.New(3, 3))
	want := "tensor: CrossEntropyInto: label 7 of row 0 outside [0, 3)"
	if got := panicMessage(func() { NewTape().CrossEntropy(w, tensor.FromSlice([]float32{7, 0, 1}, 3)) }); got != want {
		t.Errorf("panic %q, want %q", got, want)
	}
}

// BenchmarkCrossEntropy times the loss and its backward pass through the
// tape: the Fashion models' [64 10] logits and a [256 1000] batch.
func BenchmarkCrossEntropy(b *testing.B) {
	for _, s := range [][2]int{{64, 10}, {256, 1000}} {
		b.Run(fmt.Sprintf("%dx%d", s[0], s[1]), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			x := NewParam(tensor.RandN(r, s[0], s[1]))
			labels := tensor.New(s[0])
			for i := range s[0] {
				labels.Data()[i] = float32(r.IntN(s[1]))
			}
			tp := NewTape()
			b.ReportAllocs()
			for b.Loop() {
				tp.Reset()
				x.ZeroGrad()
				tp.Backward(tp.CrossEntropy(x, labels))
			}
		})
	}
}
