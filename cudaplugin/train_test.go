//go:build cuda || cudaemu

package cudaplugin

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/tensor"
)

// trainRun is one side of TestTrainSteps: a Fashion model, its optimizer
// and its batches, all on one device.
type trainRun struct {
	m    nn.Module
	opt  nn.Optimizer
	b    *nn.Batches
	tp   *nn.Tape
	loss float32
}

func newTrainRun(t *testing.T, model func(*rand.Rand) *nn.Sequential, xshape []int, dev tensor.Device) *trainRun {
	t.Helper()
	r := rand.New(rand.NewPCG(13, 14))
	m := model(r)
	x := tensor.RandN(r, xshape...)
	y := tensor.New(xshape[0])
	for i := range y.Data() {
		y.Data()[i] = float32(r.IntN(10))
	}
	if err := nn.To(m, dev); err != nil {
		t.Fatal(err)
	}
	opt := nn.NewAdam(nn.Params(m), 1e-3)
	opt.Eps = 1e-4 // as nn's TestDeviceFashionSteps: Adam's step smooth in the gradient
	b := nn.NewBatches(x, y, 16, r)
	if err := b.To(dev); err != nil {
		t.Fatal(err)
	}
	return &trainRun{m: m, opt: opt, b: b, tp: nn.NewTape()}
}

func (s *trainRun) step() {
	x, y, ok := s.b.Next()
	if !ok {
		s.b.Reset()
		x, y, _ = s.b.Next()
	}
	s.tp.Reset()
	loss := s.tp.CrossEntropy(s.m.Forward(s.tp, s.tp.Const(x)), y)
	s.opt.ZeroGrad()
	s.tp.Backward(loss)
	s.opt.Step()
	s.loss = loss.Value().Item()
}

// relErrOf is the largest |got-want| over the largest |want|.
func relErrOf(got, want []float32) float64 {
	var d, m float64
	for i, w := range want {
		d = math.Max(d, math.Abs(float64(got[i])-float64(w)))
		m = math.Max(m, math.Abs(float64(w)))
	}
	if m == 0 {
		return d
	}
	return d / m
}

// TestTrainSteps trains the two Fashion-MNIST benchmark models (nn.FashionMLP,
// nn.FashionCNN) for five Adam steps on the device and on the CPU from the
// same initialization and batches: every step's loss, every parameter's
// gradient and every parameter after the step agree within 1e-5 relative
// (issue 21's bar), and the parameters and gradients stay on the device.
// The whole step (forward, backward, loss, optimizer) runs on the plugin's
// kernels: an op without one panics, so the test covers every kernel a
// training step uses.
func TestTrainSteps(t *testing.T) {
	g := requireGPU(t)
	for _, c := range []struct {
		name  string
		model func(*rand.Rand) *nn.Sequential
		x     []int
	}{
		{"mlp", nn.FashionMLP, []int{48, 28, 28}},
		{"cnn", nn.FashionCNN, []int{48, 1, 28, 28}},
	} {
		t.Run(c.name, func(t *testing.T) {
			host, dev := newTrainRun(t, c.model, c.x, tensor.CPU), newTrainRun(t, c.model, c.x, g.Device())
			for i := range 5 {
				host.step()
				dev.step()
				if e := relErrOf([]float32{dev.loss}, []float32{host.loss}); e > 1e-5 {
					t.Errorf("step %d: loss %v on the device, %v on the CPU", i, dev.loss, host.loss)
				}
				hp := nn.Params(host.m)
				for j, v := range nn.Params(dev.m) {
					if v.Value().Device() != g.Device() || v.Grad().Device() != g.Device() {
						t.Fatalf("step %d: parameter %d on %v, its gradient on %v", i, j, v.Value().Device(), v.Grad().Device())
					}
					if e := relErrOf(v.Grad().Data(), hp[j].Grad().Data()); e > 1e-5 {
						t.Errorf("step %d: gradient of parameter %d %v: relative error %.3g", i, j, v.Shape(), e)
					}
					if e := relErrOf(v.Value().Data(), hp[j].Value().Data()); e > 1e-5 {
						t.Errorf("step %d: parameter %d %v: relative error %.3g", i, j, v.Shape(), e)
					}
				}
			}
		})
	}
}
