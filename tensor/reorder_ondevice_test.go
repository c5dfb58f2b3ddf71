package tensor_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestReorderOnDevice runs Flip, Roll, Tile and MaskedFill on the stand-in
// device (they compose the Index, Copy and Elementwise families; Sort
// and CumSum run on its Sort family, MaskedSelect on its Index family)
// and checks that they give the host's results.
func TestReorderOnDevice(t *testing.T) {
	RegisterDevice(onDev, tensortest.NewHostDevice(onDev).Backend())
	t.Cleanup(func() { RegisterDevice(onDev, nil) })
	r := rand.New(rand.NewPCG(24, 9))
	h := RandN(r, 3, 4, 2)
	mask := Greater(RandN(r, 4, 1), Scalar(0))
	d, dm := toDev(t, h, onDev), toDev(t, mask, onDev)
	for _, c := range []struct {
		name      string
		host, dev *Tensor
	}{
		{"Flip", Flip(h, 0, 2), Flip(d, 0, 2)},
		{"Roll", Roll(h, []int{1, -3}, 0, 1), Roll(d, []int{1, -3}, 0, 1)},
		{"Roll/flat", Roll(h, []int{5}), Roll(d, []int{5})},
		{"Tile", Tile(h, 2, 1, 1, 2), Tile(d, 2, 1, 1, 2)},
		{"MaskedFill", MaskedFill(h, mask, -1), MaskedFill(d, dm, -1)},
		{"Sort", ArgSort(h, 0, false), ArgSort(d, 0, false)},
		{"CumSum", CumSum(h, 1), CumSum(d, 1)},
		{"MaskedSelect", MaskedSelect(h, mask), MaskedSelect(d, dm)},
	} {
		got := fromDev(t, c.name, c.dev, onDev)
		if !slices.Equal(got.Shape(), c.host.Shape()) || !slices.Equal(got.Data(), c.host.Data()) {
			t.Errorf("%s on the device = %v, want the host's %v", c.name, got.Data(), c.host.Data())
		}
	}
}
