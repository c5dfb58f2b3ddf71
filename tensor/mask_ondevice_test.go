package tensor_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestMaskedOnDevice runs MaskedCount, MaskedSelect, MaskedSelectInto (a
// strided dst) and Scatter (a target named twice) on the stand-in device:
// the host's results bit for bit, one call of the Index family's
// MaskedSelect each, and a dst of the wrong length or operands on two
// devices panicking.
func TestMaskedOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(25, 5))
	h := RandN(r, 3, 4, 5)
	m := Greater(RandN(r, 4, 1), Scalar(0))
	m.Data()[1] = float32(math.NaN()) // NaN selects
	x, dm := toDev(t, h, onDev), toDev(t, m, onDev)
	want := MaskedSelect(h, m)
	if n := MaskedCount(x, dm); n != want.Len() {
		t.Errorf("MaskedCount on the device = %d, want %d", n, want.Len())
	}
	got := fromDev(t, "MaskedSelect", MaskedSelect(x.Permute(0, 1, 2), dm), onDev)
	if !slices.Equal(got.Data(), want.Data()) {
		t.Errorf("MaskedSelect on the device = %v, want %v", got.Data(), want.Data())
	}
	buf := toDev(t, Full(-7, 2*want.Len()+1), onDev)
	dst := buf.Slice(0, 1, 2*want.Len()+1, 2)
	MaskedSelectInto(dst, x, dm)
	hb := fromDev(t, "MaskedSelectInto", buf, onDev).Data()
	for i, v := range hb {
		if w := float32(-7); i%2 == 1 {
			w = want.Data()[i/2]
			if v != w {
				t.Fatalf("MaskedSelectInto's element %d = %v, want %v", i/2, v, w)
			}
		} else if v != w {
			t.Fatalf("MaskedSelectInto wrote %v at %d, outside its strided dst", v, i)
		}
	}
	if n := d.Counts().Calls["Index.MaskedSelect"]; n != 2 {
		t.Errorf("%d calls of the device's MaskedSelect, want 2", n)
	}
	index := FromSlice([]float32{1, 1, 0, -1, 2, 2, 1, 0}, 2, 4)
	src := RandN(r, 2, 4)
	hd := Scatter(Zeros(3, 4), 0, index, src)
	dd := Scatter(toDev(t, Zeros(3, 4), onDev), 0, toDev(t, index, onDev), toDev(t, src, onDev))
	if g := fromDev(t, "Scatter", dd, onDev); !slices.Equal(g.Data(), hd.Data()) {
		t.Errorf("Scatter on the device = %v, want %v", g.Data(), hd.Data())
	}
	panics(t, "tensor: MaskedSelectInto: dst shape [3], want [30]", func() { MaskedSelectInto(toDev(t, New(3), onDev), x, dm) })
	panics(t, "tensor: MaskedSelect: [3 4 5] on device(7) and [4 1] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { MaskedSelect(x, m) })
}
