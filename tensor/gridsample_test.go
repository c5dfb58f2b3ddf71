package tensor

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// samplingCase is one case of testdata/sampling.json (sampling_gen.py):
// PyTorch's affine_grid, grid_sample or interpolate and their gradients,
// in float64, for float32 inputs.
type samplingCase struct {
	Fn, Mode, Padding string
	Align             bool
	Theta, Input      jsonFloats
	Grid, Out, Dout   jsonFloats
	Dtheta, Dinput    jsonFloats
	Dgrid             jsonFloats
	Size              []int
	Scale             []float64
	InputShape        []int `json:"input_shape"`
	GridShape         []int `json:"grid_shape"`
	OutShape          []int `json:"out_shape"`
	// TorchGradQuirk: PyTorch's gradient is not its forward's adjoint
	// (see sampling_gen.py); the gradient is not compared.
	TorchGradQuirk bool `json:"torch_grad_quirk"`
}

func loadSamplingCases(t *testing.T) []samplingCase {
	b, err := os.ReadFile("testdata/sampling.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []samplingCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs) < 20 {
		t.Fatalf("%d cases in testdata/sampling.json", len(cs))
	}
	return cs
}

func modeOf(s string) InterpMode {
	return map[string]InterpMode{"nearest": InterpNearest, "bilinear": InterpBilinear, "nearest-exact": InterpNearestExact, "bicubic": InterpBicubic}[s]
}

// TestSamplingTorch holds AffineGrid, GridSample, Interpolate and their
// backwards to PyTorch's float64 values within 2e-6·(1 + |value|).
func TestSamplingTorch(t *testing.T) {
	for i, c := range loadSamplingCases(t) {
		t.Run(fmt.Sprintf("%d/%s/%s/%s/align=%v", i, c.Fn, c.Mode, c.Padding, c.Align), func(t *testing.T) {
			switch c.Fn {
			case "AffineGrid":
				theta := f32Tensor(c.Theta, c.Size[0], 2, 3)
				grid := AffineGrid(theta, c.Size, c.Align)
				checkNear(t, "grid", grid, []int{c.Size[0], c.Size[2], c.Size[3], 2}, c.Out)
				dg := f32Tensor(c.Dout, grid.Shape()...)
				checkNear(t, "dtheta", AffineGridBackward(dg, c.Size, c.Align), []int{c.Size[0], 2, 3}, c.Dtheta)
			case "GridSample":
				p := GridSampleParams{Mode: modeOf(c.Mode), AlignCorners: c.Align}
				p.Padding = map[string]GridPadding{"zeros": GridPadZeros, "border": GridPadBorder, "reflection": GridPadReflection}[c.Padding]
				x, g := f32Tensor(c.Input, c.InputShape...), f32Tensor(c.Grid, c.GridShape...)
				checkNear(t, "out", GridSample(x, g, p), c.OutShape, c.Out)
				dx, dg := GridSampleBackward(f32Tensor(c.Dout, c.OutShape...), x, g, p)
				checkNear(t, "dinput", dx, c.InputShape, c.Dinput)
				checkNear(t, "dgrid", dg, c.GridShape, c.Dgrid)
			case "Interpolate":
				p := InterpolateParams{Mode: modeOf(c.Mode), AlignCorners: c.Align,
					Size: [2]int{c.Size[0], c.Size[1]}, Scale: [2]float64{c.Scale[0], c.Scale[1]}}
				x := f32Tensor(c.Input, c.InputShape...)
				checkNear(t, "out", Interpolate(x, p), c.OutShape, c.Out)
				if c.TorchGradQuirk {
					return // TestSamplingGrads in nn checks the gradient against finite differences
				}
				checkNear(t, "dinput", InterpolateBackward(f32Tensor(c.Dout, c.OutShape...), c.InputShape, p), c.InputShape, c.Dinput)
			default:
				t.Fatalf("unknown function %q", c.Fn)
			}
		})
	}
}

// TestGridSampleFiniteDifferences checks GridSampleBackward (bilinear,
// both paddings) against central differences of Σ GridSample·dy, for the
// input and for grid points away from pixel boundaries.
func TestGridSampleFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 6))
	for _, pad := range []GridPadding{GridPadZeros, GridPadBorder, GridPadReflection} {
		for _, align := range []bool{false, true} {
			p := GridSampleParams{Padding: pad, AlignCorners: align}
			x := RandN(r, 1, 2, 4, 5)
			g := RandU(r, -1.2, 1.2, 1, 3, 3, 2)
			dy := RandN(r, 1, 2, 3, 3)
			f := func() float64 {
				var s float64
				for i, v := range GridSample(x, g, p).Data() {
					s += float64(v) * float64(dy.data[i])
				}
				return s
			}
			dx, dg := GridSampleBackward(dy, x, g, p)
			for _, tc := range []struct {
				name string
				v    []float32
				grad []float32
				h    float32
			}{{"input", x.data, dx.Data(), 1e-2}, {"grid", g.data, dg.Data(), 1e-3}} {
				for i := range tc.v {
					old := tc.v[i]
					tc.v[i] = old + tc.h
					up := f()
					tc.v[i] = old - tc.h
					down := f()
					tc.v[i] = old
					fd := (up - down) / (2 * float64(tc.h))
					if math.Abs(fd-float64(tc.grad[i])) > 2e-2*(1+math.Abs(fd)) {
						t.Errorf("pad %d align %v: d/d%s[%d]: backward %v, finite differences %v", pad, align, tc.name, i, tc.grad[i], fd)
					}
				}
			}
		}
	}
}

// TestSamplingEdges: a NaN grid point reads 0; bad arguments panic naming
// the function.
func TestSamplingEdges(t *testing.T) {
	x := Ones(1, 1, 2, 2)
	g := FromSlice([]float32{float32(math.NaN()), 0}, 1, 1, 1, 2)
	if v := GridSample(x, g, GridSampleParams{}).Item(); v != 0 {
		t.Errorf("GridSample at NaN: %v, want 0", v)
	}
	expectPanic(t, "tensor: GridSample: input of shape [1 1 2 2] and grid of shape [1 1 2], want [N C H W] and [N Ho Wo 2]", func() {
		GridSample(x, New(1, 1, 2), GridSampleParams{})
	})
	expectPanic(t, "tensor: Interpolate: give either Size or Scale (size [0 0], scale [0 0])", func() {
		Interpolate(x, InterpolateParams{})
	})
	expectPanic(t, "tensor: Interpolate: align corners is for bilinear and bicubic only (PyTorch refuses it for nearest)", func() {
		Interpolate(x, InterpolateParams{Size: [2]int{3, 3}, AlignCorners: true})
	})
	expectPanic(t, "tensor: AffineGrid: theta of shape [1 3 3] and size [1 1 2 2], want [N 2 3] and [N C H W]", func() {
		AffineGrid(New(1, 3, 3), []int{1, 1, 2, 2}, false)
	})
	// Nearest keeps an Inf beside the pixel it reads out of its result.
	xi := FromSlice([]float32{1, float32(math.Inf(1))}, 1, 1, 1, 2)
	if v := Interpolate(xi, InterpolateParams{Size: [2]int{1, 1}}).Item(); v != 1 {
		t.Errorf("nearest beside an Inf: %v, want 1", v)
	}
}
