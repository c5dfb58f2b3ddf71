package tensor_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestFoldAxesOnDevice checks that Prod, Norm (p = 1, 2, +Inf), Any and
// All run on a device as ops of its Reduce family (tensortest's stand-in,
// the CPU's code: the host's results exactly), with keepdims, several
// axes and a zero-size reduction; and Norm's other orders (p = 0, -Inf,
// finite, fractional, negative) by the family's NormP.
func TestFoldAxesOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(24, 11))
	h := RandN(r, 3, 4, 5)
	h.Data()[7], h.Data()[20] = 0, 0
	for i := 40; i < 45; i++ { // a row of zeros along the last axis
		h.Data()[i] = 0
	}
	x := toDev(t, h, onDev)
	for _, c := range []struct {
		name string
		f    func(x *Tensor) *Tensor
	}{
		{"Prod", func(x *Tensor) *Tensor { return Prod(x, false, 2) }},
		{"Prod all", func(x *Tensor) *Tensor { return Prod(x, false) }},
		{"Norm p=1", func(x *Tensor) *Tensor { return Norm(x, 1, true, 0, 2) }},
		{"Norm p=2", func(x *Tensor) *Tensor { return Norm(x, 2, false, -1) }},
		{"Norm p=Inf", func(x *Tensor) *Tensor { return Norm(x, math.Inf(1), false, 1) }},
		{"Norm p=0", func(x *Tensor) *Tensor { return Norm(x, 0, false, 2) }},
		{"Norm p=-Inf", func(x *Tensor) *Tensor { return Norm(x, math.Inf(-1), false, 2) }},
		{"Norm p=3", func(x *Tensor) *Tensor { return Norm(x, 3, true, 0, 2) }},
		{"Norm p=0.5 transposed", func(x *Tensor) *Tensor { return Norm(x.Permute(2, 0, 1), 0.5, false, 1) }},
		{"Norm p=-2", func(x *Tensor) *Tensor { return Norm(x, -2, false, 1) }},
		{"Norm p=7 of nothing", func(x *Tensor) *Tensor { return Norm(x.Slice(0, 0, 0, 1), 7, false, 0) }},
		{"Any", func(x *Tensor) *Tensor { return Any(x, false, 2) }},
		{"All", func(x *Tensor) *Tensor { return All(x, true, 2) }},
		{"Prod of nothing", func(x *Tensor) *Tensor { return Prod(x.Slice(0, 0, 0, 1), false, 0) }},
	} {
		want := c.f(h)
		got := fromDev(t, c.name, c.f(x), onDev)
		if !slices.Equal(got.Shape(), want.Shape()) || !slices.Equal(got.Data(), want.Data()) {
			t.Errorf("%s on the device = %v %v, want the host's %v %v", c.name, got.Shape(), got.Data(), want.Shape(), want.Data())
		}
	}
	if n := d.Counts().Calls["Reduce.Reduce"]; n != 8 {
		t.Errorf("%d calls of the device's Reduce, want 8", n)
	}
	if n := d.Counts().Calls["Reduce.NormP"]; n != 6 {
		t.Errorf("%d calls of the device's NormP, want 6", n)
	}
	panics(t, "tensor: Norm: zero-size reduction over axes [0] of shape [0 4 5] (no identity)", func() { Norm(x.Slice(0, 0, 0, 1), -1, false, 0) })
}
