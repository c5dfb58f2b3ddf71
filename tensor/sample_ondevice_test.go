package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestSampleOnDevice runs GridSample, AffineGrid, Interpolate, their
// backwards and Into forms on the stand-in device (the Sample family)
// and checks every result against the host's bit for bit: each mode,
// padding and align corners, strided operands and destinations, grids
// reaching outside the image, an empty output.
func TestSampleOnDevice(t *testing.T) {
	RegisterDevice(onDev, tensortest.NewHostDevice(onDev).Backend())
	t.Cleanup(func() { RegisterDevice(onDev, nil) })
	r := rand.New(rand.NewPCG(25, 6))
	same := func(t *testing.T, what string, got, want *Tensor) {
		t.Helper()
		h := fromDev(t, what, got, onDev)
		if !slices.Equal(h.Shape(), want.Shape()) || !slices.Equal(h.Data(), want.Data()) {
			t.Errorf("%s on the device = %v, want the host's %v", what, h, want)
		}
	}
	x := RandN(r, 2, 3, 5, 6)
	grid := RandU(r, -1.3, 1.3, 2, 4, 7, 2)
	dy := RandN(r, 2, 3, 4, 7)
	xd, gd, dyd := toDev(t, x, onDev), toDev(t, grid, onDev), toDev(t, dy, onDev)
	for _, mode := range []InterpMode{InterpDefault, InterpNearest, InterpBilinear} {
		for _, pad := range []GridPadding{GridPadZeros, GridPadBorder, GridPadReflection} {
			for _, align := range []bool{false, true} {
				p := GridSampleParams{Mode: mode, Padding: pad, AlignCorners: align}
				t.Run(fmt.Sprintf("GridSample/%v/%d/%v", mode, pad, align), func(t *testing.T) {
					same(t, "GridSample", GridSample(xd, gd, p), GridSample(x, grid, p))
					dst := toDev(t, New(2, 3, 7, 4), onDev).Transpose(2, 3)
					same(t, "GridSampleInto", GridSampleInto(dst, xd.Transpose(2, 3).Contiguous().Transpose(2, 3), gd, p), GridSample(x, grid, p))
					di, dg := GridSampleBackward(dy, x, grid, p)
					ddi, ddg := GridSampleBackward(dyd, xd, gd, p)
					same(t, "dinput", ddi, di)
					same(t, "dgrid", ddg, dg)
					odg := toDev(t, New(2, 4, 7, 2), onDev)
					if a, b := GridSampleBackwardInto(nil, odg, dyd, xd, gd, p); a != nil || b != odg {
						t.Errorf("GridSampleBackwardInto(nil, dgrid) returned %v, %v", a, b)
					}
					same(t, "dgrid alone", odg, dg)
				})
			}
		}
	}
	theta := RandN(r, 2, 2, 3)
	dgrid := RandN(r, 2, 5, 6, 2)
	for _, align := range []bool{false, true} {
		size := []int{2, 3, 5, 6}
		same(t, "AffineGrid", AffineGrid(toDev(t, theta, onDev), size, align), AffineGrid(theta, size, align))
		same(t, "AffineGridBackward", AffineGridBackward(toDev(t, dgrid, onDev), size, align), AffineGridBackward(dgrid, size, align))
		dst := toDev(t, New(2, 6, 5, 2), onDev).Transpose(1, 2)
		same(t, "AffineGridInto", AffineGridInto(dst, toDev(t, theta, onDev), size, align), AffineGrid(theta, size, align))
	}
	for _, mode := range []InterpMode{InterpDefault, InterpNearest, InterpNearestExact, InterpBilinear, InterpBicubic} {
		for _, p := range []InterpolateParams{{Size: [2]int{9, 4}}, {Scale: [2]float64{1.7, 0.6}}, {Size: [2]int{5, 6}}, {Size: [2]int{1, 11}, AlignCorners: true}} {
			p.Mode = mode
			if p.AlignCorners && (mode == InterpNearest || mode == InterpNearestExact || mode == InterpDefault) {
				continue
			}
			t.Run(fmt.Sprintf("Interpolate/%v/%+v", mode, p), func(t *testing.T) {
				want := Interpolate(x, p)
				same(t, "Interpolate", Interpolate(xd, p), want)
				s := want.Shape()
				dst := toDev(t, New(s[0], s[1], s[3], s[2]), onDev).Transpose(2, 3)
				same(t, "InterpolateInto", InterpolateInto(dst, xd.Transpose(0, 1).Contiguous().Transpose(0, 1), p), want)
				g := RandN(r, s...)
				dx := InterpolateBackward(g, x.Shape(), p)
				same(t, "InterpolateBackward", InterpolateBackward(toDev(t, g, onDev), x.Shape(), p), dx)
				dxd := toDev(t, New(2, 3, 6, 5), onDev).Transpose(2, 3)
				same(t, "InterpolateBackwardInto", InterpolateBackwardInto(dxd, toDev(t, g, onDev), p), dx)
			})
		}
	}
	// Empty: no output positions.
	eg := toDev(t, New(2, 0, 3, 2), onDev)
	same(t, "GridSample empty", GridSample(xd, eg, GridSampleParams{}), New(2, 3, 0, 3))
	di, _ := GridSampleBackward(toDev(t, New(2, 3, 0, 3), onDev), xd, eg, GridSampleParams{})
	same(t, "GridSampleBackward empty", di, New(2, 3, 5, 6))
	panics(t, "tensor: GridSample: [2 3 5 6] on device(7) and [2 4 7 2] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { GridSample(xd, grid, GridSampleParams{}) })
}

// TestGridSampleIntoClears checks that GridSampleInto writes 0 where a
// grid point is NaN or huge (it used to leave dst's old values there).
func TestGridSampleIntoClears(t *testing.T) {
	x := Full(2, 1, 1, 3, 3)
	grid := FromSlice([]float32{float32(math.NaN()), 0, 1e30, 0, 0, 0}, 1, 1, 3, 2)
	for _, mode := range []InterpMode{InterpNearest, InterpBilinear} {
		got := GridSampleInto(Full(7, 1, 1, 1, 3), x, grid, GridSampleParams{Mode: mode})
		if want := []float32{0, 0, 2}; !slices.Equal(got.Data(), want) {
			t.Errorf("%v: GridSampleInto over 7s = %v, want %v", mode, got.Data(), want)
		}
	}
}
