package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestKernelOpsOnDevice runs the tape's PairwiseSqDist and RBFKernel, and
// their backward, on the stand-in device (tensor's composition of the
// device's families), whose values and gradients stay there and are the
// host's within 1e-4 relative (tensor.PairwiseSqDist's bound for these
// well-spread points).
func TestKernelOpsOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(25, 3))
	hx, hy := tensor.RandN(r, 5, 3), tensor.RandN(r, 4, 3)
	run := func(on tensor.Device, self bool) (out, gx, gy *tensor.Tensor) {
		to := func(h *tensor.Tensor) *tensor.Tensor {
			d, err := h.To(on)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		x, y := NewParam(to(hx)), NewParam(to(hy))
		tp := NewTape()
		yv := y
		if self {
			yv = x
		}
		k := tp.Add(tp.PairwiseSqDist(x, yv), tp.RBFKernel(x, yv, 0.4))
		if k.Value().Device() != on {
			t.Fatalf("result on %v, want %v", k.Value().Device(), on)
		}
		tp.Backward(tp.Sum(tp.Mul(k, k)))
		if self {
			return k.Value(), x.Grad(), x.Grad()
		}
		return k.Value(), x.Grad(), y.Grad()
	}
	for _, self := range []bool{false, true} {
		w := [3]*tensor.Tensor{}
		g := [3]*tensor.Tensor{}
		w[0], w[1], w[2] = run(tensor.CPU, self)
		g[0], g[1], g[2] = run(testDev, self)
		for i, what := range []string{"value", "x's gradient", "y's gradient"} {
			if e := relErr(hostOf(t, g[i]), w[i].Data()); e > 1e-4 {
				t.Errorf("y = x %v: %s on the device off the host's by %g", self, what, e)
			}
		}
	}
}
