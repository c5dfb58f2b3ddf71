package tensor_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestConv2DMaxPoolOnDevice runs Conv2DMaxPool and its backward on the
// stand-in device, where they compose the device's Conv2D and pooling
// (with an output and a gradient of their own), and checks every result
// stays there and matches the host's fused path bit for bit.
func TestConv2DMaxPoolOnDevice(t *testing.T) {
	tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(8, 9))
	p, pool := ConvParams{Padding: [2]int{1, 1}, ReLU: true}, PoolParams{Kernel: [2]int{2, 2}}
	x, w, b := RandN(r, 3, 2, 10, 10), RandN(r, 4, 2, 3, 3), RandN(r, 4)
	want, wantIdx := Conv2DMaxPool(x, w, b, p, pool)
	dp := RandN(r, want.Shape()...)
	wantDx, wantDw := New(x.Shape()...), New(w.Shape()...)
	Conv2DMaxPoolBackwardInto(wantDx, wantDw, dp, wantIdx, x, w, p, pool)

	xd, wd, bd := toDev(t, x, onDev), toDev(t, w, onDev), toDev(t, b, onDev)
	if !Conv2DMaxPoolFuses(x, w, p, pool) || Conv2DMaxPoolFuses(xd, wd, p, pool) {
		t.Fatal("Conv2DMaxPoolFuses: want true on the host, false on the device")
	}
	out, idx := Conv2DMaxPool(xd, wd, bd, p, pool)
	dx, dw := toDev(t, New(x.Shape()...), onDev), toDev(t, New(w.Shape()...), onDev)
	Conv2DMaxPoolBackwardInto(dx, dw, toDev(t, dp, onDev), idx, xd, wd, p, pool)
	for _, c := range []struct {
		what      string
		got, want *Tensor
	}{{"output", out, want}, {"indices", idx, wantIdx}, {"dx", dx, wantDx}, {"dw", dw, wantDw}} {
		h := fromDev(t, c.what, c.got, onDev)
		g, wv := h.Data(), c.want.Data()
		if !slices.Equal(h.Shape(), c.want.Shape()) {
			t.Fatalf("%s: shape %v, want %v", c.what, h.Shape(), c.want.Shape())
		}
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(wv[i]) {
				t.Fatalf("%s on the device: element %d is %v, want the host's %v", c.what, i, g[i], wv[i])
			}
		}
	}
}
