package tensor

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// torchCase is one case of testdata/conv24/torch.json (see gen.py there).
type torchCase struct {
	Op            string
	Shape, Out    []int
	Pads, Outsize []int
	Mode          string
	Value         float32
	X, Y, Dy, Dx  []float32
	Idx           []float32
}

func torchCases(t *testing.T, op string) []torchCase {
	t.Helper()
	b, err := os.ReadFile("testdata/conv24/torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var all, cs []torchCase
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Op == op {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		t.Fatalf("no %s cases in testdata/conv24/torch.json", op)
	}
	return cs
}

// sameValues fails unless got holds want (row-major) within tol·max(1, |want|).
func sameValues(t *testing.T, what string, got *Tensor, shape []int, want []float32, tol float64) {
	t.Helper()
	checkAgainst(t, what, got, shape, func(idx []int) float64 {
		k := 0
		for a, i := range idx {
			k = k*shape[a] + i
		}
		return float64(want[k])
	}, func(idx []int) (float64, float64) { return tol, 1 + math.Abs(float64(got.At(idx...))) })
}

var padModes = map[string]PadMode{"constant": PadConstant, "reflect": PadReflect, "replicate": PadReplicate, "circular": PadCircular}

// TestPadTorch checks Pad and PadBackward against PyTorch's F.pad and its
// gradient: every mode, pads on 1 to 3 axes, negative pads, an empty input.
func TestPadTorch(t *testing.T) {
	for _, c := range torchCases(t, "Pad") {
		t.Run(fmt.Sprintf("%v/%v/%s", c.Shape, c.Pads, c.Mode), func(t *testing.T) {
			mode := padModes[c.Mode]
			x := FromSlice(c.X, c.Shape...)
			sameValues(t, "Pad", Pad(x, c.Pads, mode, c.Value), c.Out, c.Y, 0)
			// A strided input and a permuted destination.
			xs := New(append(c.Shape, 2)...).Index(-1, 1)
			CopyInto(xs, x)
			dst := New(c.Out...).T().Contiguous().T()
			if len(c.Out) < 2 {
				dst = New(c.Out...)
			}
			sameValues(t, "PadInto (strided)", PadInto(dst, xs, c.Pads, mode, c.Value), c.Out, c.Y, 0)
			dy := FromSlice(c.Dy, c.Out...)
			sameValues(t, "PadBackward", PadBackward(dy, c.Shape, c.Pads, mode), c.Shape, c.Dx, 0)
		})
	}
}

func TestPadPanics(t *testing.T) {
	x := New(2, 3)
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"odd", func() { Pad(x, []int{1}, PadConstant, 0) },
			"tensor: Pad: input of shape [2 3]: pads [1] must be pairs (left, right), at most one per axis, from the last axis backwards"},
		{"too many", func() { Pad(x, []int{1, 1, 1, 1, 1, 1}, PadConstant, 0) },
			"tensor: Pad: input of shape [2 3]: pads [1 1 1 1 1 1] must be pairs (left, right), at most one per axis, from the last axis backwards"},
		{"reflect", func() { Pad(x, []int{3, 0}, PadReflect, 0) },
			"tensor: Pad: input of shape [2 3]: reflect pads (3, 0) too large for axis 1 of size 3"},
		{"circular", func() { Pad(x, []int{0, 0, 0, 3}, PadCircular, 0) },
			"tensor: Pad: input of shape [2 3]: circular pads (0, 3) too large for axis 0 of size 2"},
		{"replicate empty", func() { Pad(New(2, 0), []int{1, 0}, PadReplicate, 0) },
			"tensor: Pad: input of shape [2 0]: replicate pads (1, 0) too large for axis 1 of size 0"},
		{"crop", func() { Pad(x, []int{-2, -2}, PadConstant, 0) },
			"tensor: Pad: input of shape [2 3]: pads [-2 -2] give axis 1 size -1"},
		{"mode", func() { Pad(x, nil, PadMode(7), 0) }, "tensor: Pad: unknown mode PadMode(7)"},
		{"dst", func() { PadInto(New(2, 4), x, []int{1, 1}, PadConstant, 0) },
			"tensor: PadInto: input of shape [2 3] with pads [1 1] gives [2 5], dst is [2 4]"},
		{"dy", func() { PadBackward(New(2, 4), []int{2, 3}, []int{1, 1}, PadConstant) },
			"tensor: PadBackward: input of shape [2 3] with pads [1 1] gives [2 5], dy is [2 4]"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectPanic(t, tc.want, tc.f) })
	}
}

// TestPadZeroDims pads a 0-d tensor (nothing to pad) and crops an axis to nothing.
func TestPadZeroDims(t *testing.T) {
	s := Pad(Full(3, []int{}...), nil, PadReflect, 0)
	if s.Dims() != 0 || s.Data()[0] != 3 {
		t.Errorf("Pad of a 0-d tensor: %v", s)
	}
	e := Pad(New(2, 3), []int{-3, 0}, PadConstant, 0)
	if e.Dim(1) != 0 || e.Len() != 0 {
		t.Errorf("Pad cropping an axis to nothing: shape %v", e.Shape())
	}
	if d := PadBackward(e, []int{2, 3}, []int{-3, 0}, PadConstant); d.Len() != 6 || Sum(d, false).Data()[0] != 0 {
		t.Errorf("PadBackward of an empty dy: %v", d)
	}
}
