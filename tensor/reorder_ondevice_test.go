package tensor_test

import (
	"fmt"
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

// TestReorderIntoOnDevice runs FlipInto, RollInto and PadInto on the
// stand-in device into a strided dst, in place, and into a dst that
// overlaps x in part, against the host's results bit for bit, and checks
// that their last pass writes dst directly: each allocates on the device
// dst's bytes less than its allocating form (Flip, Roll, Pad).
func TestReorderIntoOnDevice(t *testing.T) {
	hd := tensortest.NewHostDevice(onDev)
	RegisterDevice(onDev, hd.Backend())
	t.Cleanup(func() { RegisterDevice(onDev, nil) })
	r := rand.New(rand.NewPCG(26, 1))
	same := func(what string, got, want *Tensor) {
		t.Helper()
		h := fromDev(t, what, got, onDev)
		if !slices.Equal(h.Shape(), want.Shape()) || !slices.Equal(h.Data(), want.Data()) {
			t.Errorf("%s on the device = %v, want the host's %v", what, h.Data(), want.Data())
		}
	}
	allocs := func(f func()) int64 {
		hd.Reset()
		f()
		return hd.Counts().AllocBytes
	}
	x := RandN(r, 4, 6)
	pads := []int{2, -1, 1, 1}
	// Each case's op is its Into form, or with a nil dst its allocating form.
	cases := []struct {
		name string
		op   func(dst, x *Tensor) *Tensor
	}{
		{"Flip", func(d, x *Tensor) *Tensor {
			if d == nil {
				return Flip(x, 0, 1)
			}
			return FlipInto(d, x, 0, 1)
		}},
		{"Flip/one", func(d, x *Tensor) *Tensor {
			if d == nil {
				return Flip(x, 1)
			}
			return FlipInto(d, x, 1)
		}},
		{"Flip/none", func(d, x *Tensor) *Tensor {
			if d == nil {
				return Flip(x)
			}
			return FlipInto(d, x)
		}},
		{"Roll", func(d, x *Tensor) *Tensor {
			if d == nil {
				return Roll(x, []int{1, -2}, 0, 1)
			}
			return RollInto(d, x, []int{1, -2}, 0, 1)
		}},
		{"Roll/flat", func(d, x *Tensor) *Tensor {
			if d == nil {
				return Roll(x, []int{5})
			}
			return RollInto(d, x, []int{5})
		}},
		{"Roll/zero", func(d, x *Tensor) *Tensor {
			if d == nil {
				return Roll(x, []int{4}, 0)
			}
			return RollInto(d, x, []int{4}, 0)
		}},
	}
	for _, mode := range []PadMode{PadConstant, PadReflect, PadCircular} {
		cases = append(cases, struct {
			name string
			op   func(dst, x *Tensor) *Tensor
		}{"Pad/" + mode.String(), func(d, x *Tensor) *Tensor {
			if d == nil {
				return Pad(x, pads, mode, 0.5)
			}
			return PadInto(d, x, pads, mode, 0.5)
		}})
	}
	for _, c := range cases {
		want := c.op(nil, x)
		m, n := want.Dim(0), want.Dim(1)
		xd := toDev(t, x, onDev)
		same(c.name+" strided", c.op(toDev(t, New(n, m), onDev).T(), xd), want)
		if m == 4 && n == 6 {
			same(c.name+" in place", c.op(xd, xd), want)
		}
		// dst over a region of x's storage: x in big's top left corner,
		// dst its bottom right.
		big := toDev(t, New(m+4, n+6), onDev)
		xv := big.Slice(0, 0, 4, 1).Slice(1, 0, 6, 1)
		CopyInto(xv, toDev(t, x, onDev))
		same(c.name+" overlapping", c.op(big.Slice(0, 4, m+4, 1).Slice(1, 6, n+6, 1), xv), want)
		xd, dst := toDev(t, x, onDev), toDev(t, New(m, n), onDev)
		plain, into := allocs(func() { c.op(nil, xd) }), allocs(func() { c.op(dst, xd) })
		if into != plain-4*int64(dst.Len()) {
			t.Errorf("%s on the device: the Into form allocated %d bytes, the allocating form %d: want dst's %d less", c.name, into, plain, 4*dst.Len())
		}
	}
}

// TestOverlapsOnDevice: operands of one device allocation overlap as on
// the host. ConvTranspose2DInto copies a bias that overlaps dst first (its
// last pass, dst + bias, would read a bias its first pass had written
// over), and PairwiseSqDistGradInto panics for a dx over x.
func TestOverlapsOnDevice(t *testing.T) {
	RegisterDevice(onDev, tensortest.NewHostDevice(onDev).Backend())
	t.Cleanup(func() { RegisterDevice(onDev, nil) })
	r := rand.New(rand.NewPCG(26, 2))
	x, w, bias := RandN(r, 1, 2, 3, 3), RandN(r, 2, 3, 2, 2), RandN(r, 3)
	want := ConvTranspose2D(x, w, bias, ConvTransposeParams{})
	dst := toDev(t, New(want.Shape()...), onDev)
	bv := dst.Reshape(-1).Slice(0, 0, 3, 1) // dst's first three elements
	CopyInto(bv, toDev(t, bias, onDev))
	got := fromDev(t, "ConvTranspose2DInto", ConvTranspose2DInto(dst, toDev(t, x, onDev), toDev(t, w, onDev), bv, ConvTransposeParams{}), onDev)
	if !slices.Equal(got.Data(), want.Data()) {
		t.Errorf("ConvTranspose2DInto with a bias over dst on the device = %v, want the host's %v", got.Data(), want.Data())
	}
	xd := toDev(t, RandN(r, 3, 2), onDev)
	func() {
		defer func() {
			if msg := fmt.Sprint(recover()); msg != "tensor: PairwiseSqDistGradInto: dx of shape [3 2] overlaps another operand" {
				t.Errorf("PairwiseSqDistGradInto with dx over x on the device: panic %q", msg)
			}
		}()
		PairwiseSqDistGradInto(xd, nil, toDev(t, New(3, 3), onDev), xd, xd)
	}()
}
