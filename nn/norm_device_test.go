package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestNormOnDevice runs the tape's Norm, forward (the Reduce family's
// Norm1/Norm2/NormInf or NormP) and backward (composed of the device's
// families), on the stand-in device for every kind of order, with ties
// and zeros, a NaN row and keepdims: the norm is the host's bit for bit,
// the gradient within 1e-5 relative of the host's float64 one; both stay
// on the device.
func TestNormOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(25, 9))
	h := tensor.RandN(r, 3, 4, 5)
	hd := h.Data()
	hd[3], hd[7], hd[8] = 0, 2.5, -2.5 // a zero, a tie of |x|
	for i := 20; i < 25; i++ {         // a row of zeros
		hd[i] = 0
	}
	hd[50] = float32(math.NaN())
	for _, p := range []float64{0, 1, 2, 3, 0.5, -1.5, math.Inf(1), math.Inf(-1)} {
		for _, c := range []struct {
			keep bool
			axes []int
		}{{false, []int{2}}, {true, []int{0, 2}}, {false, nil}} {
			run := func(on tensor.Device) (y, g *tensor.Tensor) {
				xv, err := h.To(on)
				if err != nil {
					t.Fatal(err)
				}
				x := NewParam(xv)
				tp := NewTape()
				out := tp.Norm(x, p, c.keep, c.axes...)
				w, err := tensor.RandU(rand.New(rand.NewPCG(1, 2)), -1, 1, out.Value().Shape()...).To(on)
				if err != nil {
					t.Fatal(err)
				}
				tp.Backward(tp.Sum(tp.Mul(out, tp.Const(w))))
				if out.Value().Device() != on || x.Grad().Device() != on {
					t.Fatalf("p = %v: norm on %v, gradient on %v, want %v", p, out.Value().Device(), x.Grad().Device(), on)
				}
				return out.Value(), x.Grad()
			}
			wy, wg := run(tensor.CPU)
			gy, gg := run(testDev)
			if got, want := hostOf(t, gy), wy.Contiguous().Data(); !equalNaN(got, want) {
				t.Errorf("p = %v axes %v: norm %v on the device, the host's %v", p, c.axes, got, want)
			}
			got, want := hostOf(t, gg), wg.Contiguous().Data()
			for i := range want {
				w, v := float64(want[i]), float64(got[i])
				if !(math.Abs(v-w) <= 1e-5*max(math.Abs(w), 1)) && !(w != w && v != v) {
					t.Errorf("p = %v axes %v: gradient element %d = %v on the device, the host's %v", p, c.axes, i, v, w)
					break
				}
			}
		}
	}
}

// equalNaN reports whether a and b are equal element for element, NaN
// equal to NaN.
func equalNaN(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}
