package nn

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestMaskScatterOpsOnDevice runs the tape's MaskedSelect (a broadcast
// mask with NaN) and Scatter (a target named twice), forward and
// backward, on the stand-in device: the host's values and gradients bit
// for bit, left on the device.
func TestMaskScatterOpsOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(25, 4))
	h, hs := tensor.RandN(r, 3, 4, 2), tensor.RandN(r, 2, 4, 2)
	mask := tensor.FromSlice([]float32{1, 0, float32(math.NaN()), 1, 0, 0, 1, 1}, 1, 4, 2)
	index := tensor.FromSlice([]float32{2, 0, 2, 1, 1, -1, 0, 0, 2, 0, 2, 1, 1, -1, 0, 0}, 2, 4, 2)
	for _, c := range []struct {
		name string
		f    func(tp *Tape, x, s *Var, on tensor.Device) *Var
	}{
		{"MaskedSelect", func(tp *Tape, x, _ *Var, on tensor.Device) *Var { return tp.MaskedSelect(x, onDev(t, mask, on)) }},
		{"Scatter", func(tp *Tape, x, s *Var, on tensor.Device) *Var { return tp.Scatter(x, 0, onDev(t, index, on), s) }},
	} {
		var vals, grads, sgrads [2][]float32
		for i, dev := range []tensor.Device{tensor.CPU, testDev} {
			x, s := NewParam(onDev(t, h, dev)), NewParam(onDev(t, hs, dev))
			tp := NewTape()
			y := c.f(tp, x, s, dev)
			if y.Value().Device() != dev {
				t.Fatalf("%s: value on %v, want %v", c.name, y.Value().Device(), dev)
			}
			proj := onDev(t, tensor.RandN(rand.New(rand.NewPCG(1, 1)), y.Value().Shape()...), dev)
			tp.Backward(tp.Sum(tp.Mul(y, tp.Const(proj))))
			vals[i], grads[i] = hostOf(t, y.Value()), hostOf(t, x.Grad())
			if s.Grad() != nil {
				sgrads[i] = hostOf(t, s.Grad())
			}
		}
		if !slices.Equal(vals[0], vals[1]) || !slices.Equal(grads[0], grads[1]) || !slices.Equal(sgrads[0], sgrads[1]) {
			t.Errorf("%s: the device's value or gradients %v %v %v differ from the host's %v %v %v", c.name, vals[1], grads[1], sgrads[1], vals[0], grads[0], sgrads[0])
		}
	}
}

// TestSpMMOnDevice runs the tape's SpMM, forward and backward, on the
// stand-in device (tensor's composition there): the host's within 1e-6
// relative, left on the device.
func TestSpMMOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(25, 8))
	a := tensor.CSRFromCOO(4, 5, []int{0, 0, 1, 3, 3, 3}, []int{1, 4, 0, 0, 2, 4}, []float32{0.5, -2, 1.5, 1, -0.25, 3})
	h := tensor.RandN(r, 5, 3)
	var vals, grads [2][]float32
	for i, dev := range []tensor.Device{tensor.CPU, testDev} {
		x := NewParam(onDev(t, h, dev))
		tp := NewTape()
		y := tp.SpMM(a, x)
		if y.Value().Device() != dev {
			t.Fatalf("SpMM: value on %v, want %v", y.Value().Device(), dev)
		}
		proj := onDev(t, tensor.RandN(rand.New(rand.NewPCG(1, 1)), 4, 3), dev)
		tp.Backward(tp.Sum(tp.Mul(y, tp.Const(proj))))
		vals[i], grads[i] = hostOf(t, y.Value()), hostOf(t, x.Grad())
	}
	if relErr(vals[1], vals[0]) > 1e-6 || relErr(grads[1], grads[0]) > 1e-6 {
		t.Errorf("SpMM: the device's value %v or gradient %v differ from the host's %v %v", vals[1], grads[1], vals[0], grads[0])
	}
}

// TestGraphConvOnDevice runs a GraphConv (Linear, SpMM, Add) forward and
// backward with its parameters and input on the stand-in device: the
// host's within 1e-6 relative.
func TestGraphConvOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(25, 10))
	adj := tensor.GCNNormalize(tensor.CSRFromCOO(4, 4, []int{0, 1, 1, 2, 3}, []int{1, 0, 2, 1, 3}, []float32{1, 1, 1, 1, 1}))
	hx, hw, hb := tensor.RandN(r, 4, 3), tensor.RandN(r, 2, 3), tensor.RandN(r, 2)
	var vals, grads [2][]float32
	for i, dev := range []tensor.Device{tensor.CPU, testDev} {
		g := &GraphConv{Adj: adj, W: NewParam(onDev(t, hw, dev)), B: NewParam(onDev(t, hb, dev))}
		x := NewParam(onDev(t, hx, dev))
		tp := NewTape()
		y := g.Forward(tp, x)
		if y.Value().Device() != dev {
			t.Fatalf("GraphConv: value on %v, want %v", y.Value().Device(), dev)
		}
		tp.Backward(tp.Sum(tp.Mul(y, y)))
		vals[i] = hostOf(t, y.Value())
		grads[i] = append(append(hostOf(t, x.Grad()), hostOf(t, g.W.Grad())...), hostOf(t, g.B.Grad())...)
	}
	if relErr(vals[1], vals[0]) > 1e-6 || relErr(grads[1], grads[0]) > 1e-6 {
		t.Errorf("GraphConv: the device's value %v or gradients %v differ from the host's %v %v", vals[1], grads[1], vals[0], grads[0])
	}
}
