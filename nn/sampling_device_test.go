package nn

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestSamplingOnDevice runs Tape.AffineGrid, GridSample, Interpolate and
// Pad, forward and backward, on the stand-in device: the loss and every
// gradient equal the host's bit for bit and stay on the device.
func TestSamplingOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(25, 8))
	x0, theta0 := tensor.RandN(r, 2, 3, 5, 6), tensor.RandN(r, 2, 2, 3)
	run := func(x, theta *tensor.Tensor) (loss []float32, grads [][]float32) {
		px, pt := NewParam(x), NewParam(theta)
		tp := NewTape()
		grid := tp.AffineGrid(pt, []int{2, 3, 4, 7}, false)
		y := tp.GridSample(px, grid, tensor.GridSampleParams{Padding: tensor.GridPadReflection})
		y = tp.Interpolate(y, tensor.InterpolateParams{Size: [2]int{6, 5}, Mode: tensor.InterpBicubic})
		y = tp.Pad(y, []int{2, 1, 1, 2}, tensor.PadReflect, 0)
		y = tp.Pad(y, []int{-1, 1}, tensor.PadConstant, 0.5)
		l := tp.Sum(tp.Mul(y, y))
		tp.Backward(l)
		for _, v := range []*Var{px, pt} {
			if v.Grad().Device() != x.Device() {
				t.Fatalf("a gradient on %v, want %v", v.Grad().Device(), x.Device())
			}
			grads = append(grads, hostOf(t, v.Grad()))
		}
		return hostOf(t, l.Value()), grads
	}
	wl, wg := run(x0.Clone(), theta0.Clone())
	gl, gg := run(onDev(t, x0, testDev), onDev(t, theta0, testDev))
	if !slices.Equal(gl, wl) {
		t.Errorf("loss on the device %v, want the host's %v", gl, wl)
	}
	for i := range wg {
		if !slices.Equal(gg[i], wg[i]) {
			t.Errorf("gradient %d on the device differs from the host's", i)
		}
	}
}
