package tensor_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestPadOnDevice runs Pad, PadInto, PadBackward and PadBackwardInto on
// the stand-in device (they compose the Elementwise, Copy and Index
// families there) and checks every result against the host's bit for
// bit: each mode, pads on one to three axes, negative pads (crops),
// zero pads, a strided input and destination, zero-size inputs and
// outputs, a 0-d input.
func TestPadOnDevice(t *testing.T) {
	hd := tensortest.NewHostDevice(onDev)
	RegisterDevice(onDev, hd.Backend())
	t.Cleanup(func() { RegisterDevice(onDev, nil) })
	r := rand.New(rand.NewPCG(25, 4))
	cases := []struct {
		shape, pads []int
		modes       []PadMode
	}{
		{[]int{5}, []int{2, 3}, nil},
		{[]int{3, 4}, []int{1, 2, 2, 1}, nil},
		{[]int{2, 3, 4, 5}, []int{3, 4, 2, 0}, nil},
		{[]int{2, 3, 4, 5}, []int{-1, 2, 1, -2}, nil},
		{[]int{2, 3, 4, 5}, []int{0, 0, 1, 1, 2, 2}, nil},
		{[]int{1, 2, 3, 4}, []int{0, 0}, nil},
		{[]int{2, 6}, []int{-3, 2}, nil},
		{[]int{3, 2}, []int{1, 1, -3, 0}, nil}, // cropped to nothing
		{[]int{2, 4}, []int{5, 6}, []PadMode{PadConstant, PadReplicate}},
		{[]int{2, 0}, []int{1, 2}, []PadMode{PadConstant}},
		{[]int{0, 3}, []int{1, 1}, nil},
		{[]int{}, nil, nil},
	}
	all := []PadMode{PadConstant, PadReflect, PadReplicate, PadCircular}
	for _, c := range cases {
		modes := c.modes
		if modes == nil {
			modes = all
		}
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%v/%v/%v", c.shape, c.pads, mode), func(t *testing.T) {
				x := RandN(r, c.shape...)
				want := Pad(x, c.pads, mode, 1.5)
				xd := toDev(t, x, onDev)
				same := func(what string, got, want *Tensor) {
					t.Helper()
					h := fromDev(t, what, got, onDev)
					if !slices.Equal(h.Shape(), want.Shape()) || !slices.Equal(h.Data(), want.Data()) {
						t.Errorf("%s on the device = %v, want the host's %v", what, h, want)
					}
				}
				same("Pad", Pad(xd, c.pads, mode, 1.5), want)
				if len(c.shape) >= 2 {
					// x strided (transposed back), dst a transposed view.
					xs := toDev(t, x.T().Contiguous(), onDev).T()
					out := want.Shape()
					dh := New(append(slices.Clone(out[:len(out)-2]), out[len(out)-1], out[len(out)-2])...)
					dd := toDev(t, dh, onDev)
					same("PadInto", PadInto(dd.T(), xs, c.pads, mode, 1.5), want)
				}
				dy := RandN(r, want.Shape()...)
				dx := PadBackward(dy, c.shape, c.pads, mode)
				dyd := toDev(t, dy, onDev)
				same("PadBackward", PadBackward(dyd, c.shape, c.pads, mode), dx)
				dxd := toDev(t, Full(7, c.shape...), onDev)
				same("PadBackwardInto", PadBackwardInto(dxd, dyd, c.pads, mode), dx)
			})
		}
	}
	// PadConstant uploads no index: Fill and CopyInto forward, runs of
	// slices added backward (a captured step can hold it).
	x, dy := toDev(t, RandN(r, 2, 3, 4), onDev), toDev(t, RandN(r, 2, 4, 7), onDev)
	hd.Reset()
	Pad(x, []int{1, 2, -1, 2}, PadConstant, 3)
	PadBackward(dy, []int{2, 3, 4}, []int{1, 2, -1, 2}, PadConstant)
	if n := hd.Counts().Uploads; n != 0 {
		t.Errorf("Pad and PadBackward (constant) on the device: %d uploads, want 0", n)
	}
	panics(t, "tensor: PadBackward: [2 3] on cpu and [2 5] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { PadBackwardInto(New(2, 3), toDev(t, New(2, 5), onDev), []int{1, 1}, PadConstant) })
}

// TestPadBackwardOrder checks the order of PadBackward's sums on the
// host: along each padded axis (the last first), an input slice adds the
// output slices that read it in ascending order, from zero, in float32.
// Values of very different magnitudes make another order round otherwise
// (row-major order over dy gives 2 here, not 0).
func TestPadBackwardOrder(t *testing.T) {
	// Replicate pads of 2 on both axes of [2, 2]: dx[0, 0] reads dy[0..2, 0..2].
	dy := Zeros(6, 6)
	for i, v := range []float32{1e8, 1, 1, -1e8, 1, 1, 0, 0, 0} {
		dy.Set(v, i/3, i%3)
	}
	got := PadBackward(dy, []int{2, 2}, []int{2, 2, 2, 2}, PadReplicate).At(0, 0)
	var col [3]float32
	for i := range 3 {
		for j := range 3 {
			col[i] += dy.At(i, j)
		}
	}
	if want := col[0] + col[1] + col[2]; got != want {
		t.Errorf("PadBackward replicate corner = %v, want %v (rows first, then columns)", got, want)
	}
}

// TestPadBackwardIntoViews checks PadBackwardInto on the host into a
// contiguous view at an offset, a strided view and a dx overlapping dy:
// PadBackward's values, and the elements outside dx untouched.
func TestPadBackwardIntoViews(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 7))
	for _, mode := range []PadMode{PadConstant, PadReflect, PadReplicate, PadCircular} {
		for _, pads := range [][]int{{1, 2, 2, 1}, {0, 0, 0, 0}, {-1, 1, 0, 0}} {
			xs := []int{2, 3, 4, 5}
			dy := RandN(r, Pad(New(xs...), pads, mode, 0).Shape()...)
			want := PadBackward(dy, xs, pads, mode)
			for _, c := range []struct {
				name string
				big  *Tensor
				view func(*Tensor) *Tensor
			}{
				{"offset", Full(7, 3, 3, 4, 5), func(b *Tensor) *Tensor { return b.Slice(0, 1, 3, 1) }},
				{"strided", Full(7, 2, 3, 4, 10), func(b *Tensor) *Tensor { return b.Slice(3, 0, 10, 2) }},
			} {
				dx := c.view(c.big)
				PadBackwardInto(dx, dy, pads, mode)
				if !slices.Equal(dx.Contiguous().Data(), want.Data()) {
					t.Errorf("%v pads %v, %s dx: %v, want %v", mode, pads, c.name, dx.Contiguous().Data(), want.Data())
				}
				n := 0
				for _, v := range c.big.Data() {
					if v == 7 {
						n++
					}
				}
				if outside := c.big.Len() - dx.Len(); n < outside {
					t.Errorf("%v pads %v, %s dx: %d elements outside dx changed", mode, pads, c.name, outside-n)
				}
			}
		}
	}
}
