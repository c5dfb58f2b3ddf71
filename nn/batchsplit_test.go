package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// splitLoss is the Fashion command's loss: CrossEntropy of the model's
// logits.
func splitLoss(tp *Tape, m Module, x, y *tensor.Tensor) *Var {
	return tp.CrossEntropy(m.Forward(tp, tp.Const(x)), y)
}

// TestBatchSplitGradients compares the gradient a BatchSplit leaves in the
// model's parameters with one pass over the whole batch, for both Fashion
// models, 1 to 3 parts and batches that do not divide evenly (the last
// parts a row smaller, a part without rows skipped): within float32
// rounding of the reordered sums, relative to the gradient's largest
// element.
func TestBatchSplitGradients(t *testing.T) {
	for _, c := range models {
		for _, rows := range []int{1, 2, 5, 8} {
			for _, parts := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/rows=%d/parts=%d", c.name, rows, parts), func(t *testing.T) {
					xs := append([]int{rows}, c.x[1:]...)
					r := rand.New(rand.NewPCG(3, 4))
					m := c.model(r)
					whole := newTrainer(m, r, xs...)
					for _, p := range Params(m) {
						p.ZeroGrad()
					}
					tp := NewTape()
					want := splitLoss(tp, m, whole.x, whole.y)
					tp.Backward(want)
					wantGrads := cloneGrads(t, Params(m))
					for _, p := range Params(m) {
						p.ZeroGrad()
					}
					s := NewBatchSplit(m, parts, func() Module { return c.model(rand.New(rand.NewPCG(9, 9))) })
					got := s.Step(whole.x, whole.y, splitLoss)
					if d := math.Abs(float64(got - want.Value().Item())); d > 1e-5*math.Max(1, math.Abs(float64(got))) {
						t.Errorf("loss %v, want %v", got, want.Value().Item())
					}
					for i, p := range Params(m) {
						g := p.Grad()
						if g == nil {
							t.Fatalf("parameter %d: no gradient", i)
						}
						compareRel(t, fmt.Sprintf("parameter %d %v", i, g.Shape()), g.Data(), wantGrads[i], 2e-5)
					}
				})
			}
		}
	}
}

// cloneGrads copies the parameters' gradients.
func cloneGrads(t *testing.T, ps []*Var) [][]float32 {
	t.Helper()
	out := make([][]float32, len(ps))
	for i, p := range ps {
		if p.Grad() == nil {
			t.Fatalf("parameter %d: no gradient", i)
		}
		out[i] = append([]float32(nil), p.Grad().Data()...)
	}
	return out
}

// compareRel fails when got and want differ by more than tol times want's
// largest magnitude.
func compareRel(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range want {
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol*math.Max(scale, 1e-30)) {
			t.Fatalf("%s: element %d = %v, want %v (scale %v)", what, i, got[i], want[i], scale)
		}
	}
}

// TestBatchSplitTraining trains the MLP 20 Adam steps split in two parts
// and in one pass: the parameters agree within 1e-4 relative, and two
// split runs agree bit for bit. A gradient already in the parameters
// (accumulation across steps before ZeroGrad) is added to.
func TestBatchSplitTraining(t *testing.T) {
	run := func(parts int) []*Var {
		r := rand.New(rand.NewPCG(5, 6))
		m := FashionMLP(r)
		tr := newTrainer(m, r, 16, 28, 28)
		s := NewBatchSplit(m, parts, func() Module { return FashionMLP(rand.New(rand.NewPCG(7, 7))) })
		for range 20 {
			tr.opt.ZeroGrad()
			s.Step(tr.x, tr.y, splitLoss)
			tr.opt.Step()
		}
		return Params(m)
	}
	one, a, b := run(1), run(2), run(2)
	for i := range one {
		if !equalBits(a[i].Value().Data(), b[i].Value().Data()) {
			t.Errorf("parameter %d differs between two split runs", i)
		}
		compareRel(t, fmt.Sprintf("parameter %d after 20 steps", i), a[i].Value().Data(), one[i].Value().Data(), 1e-4)
	}

	// Accumulation: two Steps without ZeroGrad give twice one Step's
	// gradient.
	r := rand.New(rand.NewPCG(5, 6))
	m := FashionMLP(r)
	tr := newTrainer(m, r, 6, 28, 28)
	s := NewBatchSplit(m, 2, func() Module { return FashionMLP(rand.New(rand.NewPCG(7, 7))) })
	for _, p := range Params(m) {
		p.ZeroGrad()
	}
	s.Step(tr.x, tr.y, splitLoss)
	once := cloneGrads(t, Params(m))
	s.Step(tr.x, tr.y, splitLoss)
	for i, p := range Params(m) {
		twice := make([]float32, len(once[i]))
		for j, v := range once[i] {
			twice[j] = 2 * v
		}
		compareRel(t, fmt.Sprintf("accumulated parameter %d", i), p.Grad().Data(), twice, 1e-6)
	}
}

func equalBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

// TestBatchSplitPanics checks the programmer errors: they panic naming
// BatchSplit and what is wrong, also when the error happens in a part run
// by another goroutine.
func TestBatchSplitPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	mlp := func() Module { return FashionMLP(rand.New(rand.NewPCG(2, 2))) }
	cases := []struct {
		name, want string
		f          func()
	}{
		{"parts", "parts = 0", func() { NewBatchSplit(FashionMLP(r), 0, mlp) }},
		{"replica shape", "replica 1's", func() {
			NewBatchSplit(FashionMLP(r), 2, func() Module {
				return NewSequential(Flatten{}, NewLinear(784, 255, r), NewReLU(), NewLinear(255, 128, r), NewReLU(), NewLinear(128, 10, r))
			})
		}},
		{"replica params", "replica 1 has parameters", func() { NewBatchSplit(FashionMLP(r), 2, func() Module { return NewLinear(784, 10, r) }) }},
		{"buffers", "buffer", func() { NewBatchSplit(NewBatchNorm2D(3), 2, func() Module { return NewBatchNorm2D(3) }) }},
		{"rows", "want the same number of rows", func() {
			NewBatchSplit(FashionMLP(r), 2, mlp).Step(tensor.New(4, 28, 28), tensor.New(3), splitLoss)
		}},
		{"empty", "an empty batch", func() {
			NewBatchSplit(FashionMLP(r), 2, mlp).Step(tensor.New(0, 28, 28), tensor.New(0), splitLoss)
		}},
		{"part panics", "label 99", func() {
			// Labels out of range in the second part only.
			y := tensor.New(4)
			y.Data()[3] = 99
			NewBatchSplit(FashionMLP(r), 2, mlp).Step(tensor.New(4, 28, 28), y, splitLoss)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				p := recover()
				if p == nil {
					t.Fatalf("no panic, want one containing %q", c.want)
				}
				if msg := fmt.Sprint(p); !strings.Contains(msg, c.want) {
					t.Fatalf("panic %q, want one containing %q", msg, c.want)
				}
			}()
			c.f()
		})
	}
}

// TestBatchSplitMovedModel checks that a model moved to a device after
// NewBatchSplit makes Step panic, naming the parameter and the device,
// rather than run its parts on the device from two goroutines, and that
// NewBatchSplit refuses a model already there.
func TestBatchSplitMovedModel(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(1, 1))
	m := FashionMLP(r)
	s := NewBatchSplit(m, 2, func() Module { return FashionMLP(rand.New(rand.NewPCG(2, 2))) })
	if err := To(m, testDev); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"Step", func() { s.Step(tensor.New(4, 28, 28), tensor.New(4), splitLoss) }},
		{"NewBatchSplit", func() { NewBatchSplit(m, 2, func() Module { return FashionMLP(r) }) }},
	} {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, "the parts run on the host") || !strings.Contains(msg, fmt.Sprint(testDev)) {
					t.Errorf("%s: panic %q, want one naming the device and the host", c.name, msg)
				}
			}()
			c.f()
		}()
	}
}
