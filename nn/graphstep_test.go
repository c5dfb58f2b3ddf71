package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestGraphStepEager: on the host and on a device without the Graph
// family (the stand-in), a GraphStep calls its function at every Run and
// its losses are those of the same steps run directly, bit for bit.
func TestGraphStepEager(t *testing.T) {
	tensortest.Register(t, testDev)
	for _, dev := range []tensor.Device{tensor.CPU, testDev} {
		t.Run(dev.String(), func(t *testing.T) {
			newRun := func() (func(x, y *tensor.Tensor) *Var, *Tape, *tensor.Tensor, *tensor.Tensor) {
				r := rand.New(rand.NewPCG(9, 9))
				m := FashionMLP(r)
				x := tensor.RandN(r, 8, 28, 28)
				y := tensor.FromSlice([]float32{0, 1, 2, 3, 4, 5, 6, 7}, 8)
				if err := To(m, dev); err != nil {
					t.Fatal(err)
				}
				dx, err := x.To(dev)
				if err != nil {
					t.Fatal(err)
				}
				dy, err := y.To(dev)
				if err != nil {
					t.Fatal(err)
				}
				opt := NewAdam(Params(m), 1e-2)
				tp := NewTape()
				return func(x, y *tensor.Tensor) *Var {
					tp.Reset()
					loss := tp.CrossEntropy(m.Forward(tp, tp.Const(x)), y)
					opt.ZeroGrad()
					tp.Backward(loss)
					opt.Step()
					return loss
				}, tp, dx, dy
			}
			f, tp, x, y := newRun()
			calls := 0
			gs := NewGraphStep(tp, func(x, y *tensor.Tensor) *Var { calls++; return f(x, y) })
			ref, _, rx, ry := newRun()
			for i := range 5 {
				loss, err := gs.Run(x, y)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				got, want := loss.Item(), ref(rx, ry).Value().Item()
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("step %d: loss %v, directly %v", i, got, want)
				}
			}
			if calls != 5 || gs.Graphs() != 0 {
				t.Errorf("%d calls of the step and %d graphs, want 5 and none (no Graph family)", calls, gs.Graphs())
			}
			if err := gs.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}
