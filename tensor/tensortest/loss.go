package tensortest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestLoss is the conformance test of a device's Loss family: every loss
// (CrossEntropy, MSE, BCEWithLogits) with operands on dev (contiguous,
// transposed and sliced views; edge sizes; no element), in the plain and
// Into forms (with and without the gradient), must leave its loss (0-d)
// and gradient on dev and give the CPU's within 1e-5 relative (the loss)
// and 1e-5 of the largest gradient element; and CrossEntropy with a label
// outside [0, C) must panic, in the call or, for a device that checks in
// its kernel, when the loss is read (or give a NaN loss). dev may be
// tensor.CPU (then it checks the CPU against itself).
func TestLoss(t *testing.T, dev tensor.Device) {
	t.Helper()
	r := rand.New(rand.NewPCG(81, 82))
	labels := func(n, c int) *tensor.Tensor {
		l := tensor.New(n)
		for i := range n {
			l.Set(float32(r.IntN(c)), i)
		}
		return l
	}
	type lossFunc func(pred, target *tensor.Tensor) (loss, grad *tensor.Tensor)
	type intoFunc func(loss, grad, pred, target *tensor.Tensor)
	for _, c := range []struct {
		name   string
		f      lossFunc
		into   intoFunc
		shapes [][]int
		target func(shape []int) *tensor.Tensor
	}{
		{"CrossEntropy", tensor.CrossEntropy, tensor.CrossEntropyInto, [][]int{{4, 3}, {1, 1}, {0, 5}, {65, 10}, {3, 1100}},
			func(s []int) *tensor.Tensor { return labels(s[0], s[1]) }},
		{"MSE", tensor.MSE, tensor.MSEInto, [][]int{{}, {3, 4}, {0}, {2050}, {5, 7, 61}},
			func(s []int) *tensor.Tensor { return tensor.RandN(r, s...) }},
		{"BCEWithLogits", tensor.BCEWithLogits, tensor.BCEWithLogitsInto, [][]int{{}, {3, 4}, {0, 2}, {5, 7, 61}},
			func(s []int) *tensor.Tensor { return tensor.RandU(r, 0, 1, s...) }},
	} {
		for _, shape := range c.shapes {
			for _, layout := range []string{"contiguous", "transposed", "sliced"} {
				name := fmt.Sprintf("%s%v/%s", c.name, shape, layout)
				pred, dpred := views(t, r, dev, layout, shape)
				target := c.target(shape)
				dtarget := onDevice(t, dev, target)
				wantLoss, wantGrad := c.f(pred, target)
				loss, grad := c.f(dpred, dtarget)
				compareLoss(t, name, dev, loss, grad, wantLoss, wantGrad)
				loss = newOn(t, dev)
				grad = newOn(t, dev, shape...)
				c.into(loss, grad, dpred, dtarget)
				compareLoss(t, name+"/Into", dev, loss, grad, wantLoss, wantGrad)
				loss = newOn(t, dev)
				c.into(loss, nil, dpred, dtarget)
				compareLoss(t, name+"/Into without the gradient", dev, loss, nil, wantLoss, nil)
			}
		}
	}
	logits := onDevice(t, dev, tensor.RandN(r, 2, 3))
	bad := onDevice(t, dev, tensor.FromSlice([]float32{0, 3}, 2))
	var loss *tensor.Tensor
	if !panics(func() { loss, _ = tensor.CrossEntropy(logits, bad) }) {
		var v float32
		if !panics(func() { v = loss.Item() }) && !math.IsNaN(float64(v)) {
			t.Errorf("CrossEntropy with label 3 of 3 classes on %v: loss %v, no panic", dev, v)
		}
	}
}

// views returns a host tensor of the given shape laid out as layout says
// (contiguous, a transposed view, a view sliced out of a larger tensor)
// and the same view of a copy on dev.
func views(t *testing.T, r *rand.Rand, dev tensor.Device, layout string, shape []int) (h, d *tensor.Tensor) {
	t.Helper()
	switch {
	case layout == "transposed" && len(shape) >= 2:
		n := len(shape)
		inner := append([]int(nil), shape...)
		inner[n-1], inner[n-2] = inner[n-2], inner[n-1]
		h = tensor.RandN(r, inner...)
		return h.Transpose(n-2, n-1), onDevice(t, dev, h).Transpose(n-2, n-1)
	case layout == "sliced" && len(shape) >= 1:
		big := append([]int(nil), shape...)
		big[0] = 2*shape[0] + 1
		h = tensor.RandN(r, big...)
		return h.Slice(0, 1, 1+2*shape[0], 2), onDevice(t, dev, h).Slice(0, 1, 1+2*shape[0], 2)
	}
	h = tensor.RandN(r, shape...)
	return h, onDevice(t, dev, h)
}

// compareLoss compares a loss and its gradient (nil: none) computed on
// dev with the CPU's.
func compareLoss(t *testing.T, name string, dev tensor.Device, loss, grad, wantLoss, wantGrad *tensor.Tensor) {
	t.Helper()
	if loss.Device() != dev || loss.Dims() != 0 {
		t.Errorf("%s: loss of shape %v on %v, want a 0-d tensor on %v", name, loss.Shape(), loss.Device(), dev)
		return
	}
	got, want := float64(loss.Item()), float64(wantLoss.Item())
	if !(got == want || math.IsNaN(got) && math.IsNaN(want) || math.Abs(got-want) <= 1e-5*math.Max(1, math.Abs(want))) {
		t.Errorf("%s on %v: loss %v, the CPU's %v", name, dev, got, want)
	}
	if grad == nil {
		return
	}
	if grad.Device() != dev {
		t.Errorf("%s: gradient on %v, want %v", name, grad.Device(), dev)
		return
	}
	closeTensors(t, name+": gradient", grad, wantGrad, 1e-5)
}

// closeTensors fails unless got and want have the same shape and every
// element of got is within tol of want, relative to the largest |want|
// (at least 1e-30): tol·max|want|. NaN matches NaN.
func closeTensors(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if fmt.Sprint(got.Shape()) != fmt.Sprint(want.Shape()) {
		t.Errorf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
		return
	}
	w := want.Data()
	scale := 1e-30
	for _, v := range w {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i, v := range got.Data() {
		g, x := float64(v), float64(w[i])
		if !(g == x || math.IsNaN(g) && math.IsNaN(x) || math.Abs(g-x) <= tol*scale) {
			t.Errorf("%s: element %d: %v, the CPU's %v", what, i, v, w[i])
			return
		}
	}
}

// onDevice returns a copy of h on dev (a new one on the CPU too),
// failing the test if it cannot.
func onDevice(t *testing.T, dev tensor.Device, h *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	if dev == tensor.CPU {
		return h.Clone()
	}
	d, err := h.To(dev)
	if err != nil {
		t.Fatalf("copying %v to %v: %v", h.Shape(), dev, err)
	}
	return d
}

// newOn returns a zero tensor of the given shape on dev, failing the test
// if it cannot.
func newOn(t *testing.T, dev tensor.Device, shape ...int) *tensor.Tensor {
	t.Helper()
	d, err := tensor.NewOn(dev, shape...)
	if err != nil {
		t.Fatalf("a tensor of shape %v on %v: %v", shape, dev, err)
	}
	return d
}

// panics reports whether f panics.
func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}
