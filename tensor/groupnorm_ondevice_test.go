package tensor_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestGroupNormOnDevice checks that GroupNorm and its backward, composed
// of LayerNorm and broadcast elementwise ops and reductions, run on a
// device with those families (tensortest's stand-in) and give the host's
// results there, as RMSNorm and its backward (the Norm family's) do.
func TestGroupNormOnDevice(t *testing.T) {
	d := tensortest.NewHostDevice(onDev)
	RegisterDevice(onDev, d.Backend())
	t.Cleanup(func() { RegisterDevice(onDev, nil) })
	r := rand.New(rand.NewPCG(24, 9))
	x, dy, gamma, beta := RandN(r, 2, 4, 3, 3), RandN(r, 2, 4, 3, 3), RandN(r, 4), RandN(r, 4)
	p := GroupNormParams{Groups: 2, Gamma: gamma, Beta: beta}
	y, s := GroupNorm(x, p)
	dx, dg, db := GroupNormBackward(dy, x, s, p)

	pd := GroupNormParams{Groups: 2, Gamma: toDev(t, gamma, onDev), Beta: toDev(t, beta, onDev)}
	xd := toDev(t, x, onDev)
	yd, sd := GroupNorm(xd, pd)
	dxd, dgd, dbd := GroupNormBackward(toDev(t, dy, onDev), xd, sd, pd)
	for _, c := range []struct {
		what      string
		got, want *Tensor
	}{{"y", yd, y}, {"mean", sd.Mean, s.Mean}, {"dx", dxd, dx}, {"dgamma", dgd, dg}, {"dbeta", dbd, db}} {
		if h := fromDev(t, c.what, c.got, onDev); !slices.Equal(h.Data(), c.want.Data()) || !slices.Equal(h.Shape(), c.want.Shape()) {
			t.Errorf("%s on the device = %v, want the host's %v", c.what, h, c.want)
		}
	}
	for _, dims := range []int{1, 2} {
		rp := RMSNormParams{Dims: dims, Gamma: RandN(r, x.Shape()[4-dims:]...)}
		ry, rr := RMSNorm(x, rp)
		rdx, rdg := RMSNormBackward(dy, x, rr, rp)
		rpd := RMSNormParams{Dims: dims, Gamma: toDev(t, rp.Gamma, onDev)}
		ryd, rrd := RMSNorm(xd, rpd)
		rdxd, rdgd := RMSNormBackward(toDev(t, dy, onDev), xd, rrd, rpd)
		for _, c := range []struct {
			what      string
			got, want *Tensor
		}{{"RMSNorm y", ryd, ry}, {"rrms", rrd, rr}, {"RMSNorm dx", rdxd, rdx}, {"RMSNorm dgamma", rdgd, rdg}} {
			if h := fromDev(t, c.what, c.got, onDev); !slices.Equal(h.Data(), c.want.Data()) || !slices.Equal(h.Shape(), c.want.Shape()) {
				t.Errorf("dims %d: %s on the device = %v, want the host's %v", dims, c.what, h, c.want)
			}
		}
	}
}
