package tensor_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestRandomOnDevice checks that the random ops on device operands run on
// the device's Random family and return tensors there, equal to the CPU's
// (the same Philox stream), and that a host operand beside a device one,
// or a device without the family, make them panic naming the op and the
// devices.
func TestRandomOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(5, 6))
	x := RandN(r, 5, 7)
	dx := toDev(t, x, onDev)
	dd, err := NewOn(onDev, 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		call string
	}{
		{"Dropout", func() *Tensor { return Dropout(dx, 0.5, 1, 2) }, Dropout(x, 0.5, 1, 2), "Random.Dropout"},
		{"Dropout(transposed)", func() *Tensor { return Dropout(dx.T(), 0.5, 1, 2) }, Dropout(x.T(), 0.5, 1, 2), "Random.Dropout"},
		{"DropoutInto", func() *Tensor { return DropoutInto(dd, dx, 0.25, 3, 4) }, Dropout(x, 0.25, 3, 4), "Random.Dropout"},
		{"UniformInto", func() *Tensor { return UniformInto(dd, 1, 2) }, UniformInto(New(5, 7), 1, 2), "Random.Uniform"},
	} {
		before := d.Counts()
		if got := fromDev(t, k.name, k.got(), onDev); !slices.Equal(got.Data(), k.want.Data()) {
			t.Errorf("%s on the device = %v, want the CPU's %v", k.name, got, k.want)
		}
		oneCall(t, k.name, d, before, k.call)
	}
	panics(t, "tensor: DropoutInto: [5 7] on device(7) and [5 7] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { DropoutInto(dd, x, 0.5, 0, 0) })
	registerBare(t, otherDev)
	ox := toDev(t, x, otherDev)
	panics(t, "tensor: Dropout: [5 7] on device(8): device(8) has no Random kernels; copy the operands with To(tensor.CPU)",
		func() { Dropout(ox, 0.5, 0, 0) })
}
