package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestSamplingGrads checks the gradients of AffineGrid, GridSample (to the
// input and the grid, through an affine grid too) and Interpolate against
// finite differences.
func TestSamplingGrads(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 7))
	theta := tensor.FromSlice([]float32{0.9, 0.2, 0.05, -0.15, 1.1, -0.1}, 1, 2, 3)
	for _, c := range []gradCase{
		{name: "AffineGrid", inputs: []*tensor.Tensor{tensor.RandN(r, 2, 2, 3)},
			f: func(tp *Tape, in []*Var) *Var { return tp.AffineGrid(in[0], []int{2, 1, 3, 4}, false) }},
		{name: "GridSample/affine", inputs: []*tensor.Tensor{tensor.RandN(r, 1, 2, 4, 5), theta},
			f: func(tp *Tape, in []*Var) *Var {
				return tp.GridSample(in[0], tp.AffineGrid(in[1], []int{1, 2, 3, 3}, false), tensor.GridSampleParams{})
			}},
		{name: "GridSample/border", inputs: []*tensor.Tensor{tensor.RandN(r, 1, 2, 4, 5), tensor.RandU(r, -1.1, 1.1, 1, 2, 3, 2)},
			f: func(tp *Tape, in []*Var) *Var {
				return tp.GridSample(in[0], in[1], tensor.GridSampleParams{Padding: tensor.GridPadBorder, AlignCorners: true})
			}},
		{name: "Interpolate/bilinear", inputs: []*tensor.Tensor{tensor.RandN(r, 1, 2, 3, 4)},
			f: func(tp *Tape, in []*Var) *Var {
				return tp.Interpolate(in[0], tensor.InterpolateParams{Size: [2]int{5, 7}, Mode: tensor.InterpBilinear})
			}},
		{name: "Interpolate/nearest", inputs: []*tensor.Tensor{tensor.RandN(r, 1, 2, 3, 4)},
			f: func(tp *Tape, in []*Var) *Var {
				return tp.Interpolate(in[0], tensor.InterpolateParams{Scale: [2]float64{2, 1.5}})
			}},
		{name: "Interpolate/bicubic", inputs: []*tensor.Tensor{tensor.RandN(r, 1, 2, 3, 4)},
			f: func(tp *Tape, in []*Var) *Var {
				return tp.Interpolate(in[0], tensor.InterpolateParams{Size: [2]int{7, 5}, Mode: tensor.InterpBicubic, AlignCorners: true})
			}},
		{name: "Interpolate/nearest-exact", inputs: []*tensor.Tensor{tensor.RandN(r, 1, 2, 3, 4)},
			f: func(tp *Tape, in []*Var) *Var {
				return tp.Interpolate(in[0], tensor.InterpolateParams{Scale: [2]float64{1.1, 2.1}, Mode: tensor.InterpNearestExact})
			}},
	} {
		c.h = 1e-3
		gradCheck(t, c)
	}
}
