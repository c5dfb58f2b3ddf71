//go:build cuda || cudaemu

package cudaplugin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestSampleOnDevice runs the Sample family through tensor's functions on
// the device: GridSample and its gradients over every mode, padding and
// align corners (a grid reaching outside the image, NaN and huge
// coordinates), AffineGrid and its gradient, Interpolate and its gradient
// over every mode (by size, by scale factor, identity, align corners),
// strided operands and destinations, empty grids. Every result must be
// the CPU's bit for bit (tol 0).
func TestSampleOnDevice(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(25, 7))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	grid := func(shape ...int) *tensor.Tensor {
		x := tensor.RandU(r, -1.4, 1.4, shape...)
		d := x.Data()
		d[3], d[8] = float32(1e13), float32(-1e30)
		if len(d) > 20 {
			d[17] = float32(math.NaN())
		}
		return tensor.FromSlice(d, shape...)
	}
	var cases []familyCase
	for _, mode := range []tensor.InterpMode{tensor.InterpNearest, tensor.InterpBilinear} {
		for _, pad := range []tensor.GridPadding{tensor.GridPadZeros, tensor.GridPadBorder, tensor.GridPadReflection} {
			for _, align := range []bool{false, true} {
				p := tensor.GridSampleParams{Mode: mode, Padding: pad, AlignCorners: align}
				name := fmt.Sprintf("%v %d %v", mode, pad, align)
				cases = append(cases,
					familyCase{name: "GridSample " + name, in: []*tensor.Tensor{rn(2, 3, 5, 7), grid(2, 4, 6, 2)},
						op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.GridSample(x[0], x[1], p) }},
					familyCase{name: "GridSampleBackward " + name, in: []*tensor.Tensor{rn(2, 3, 4, 6), rn(2, 3, 5, 7), grid(2, 4, 6, 2)},
						op: func(x []*tensor.Tensor) *tensor.Tensor {
							di, dg := tensor.GridSampleBackward(x[0], x[1], x[2], p)
							return tensor.Concat(0, di.Reshape(-1), dg.Reshape(-1))
						}})
			}
		}
	}
	cases = append(cases,
		familyCase{name: "GridSampleInto strided", in: []*tensor.Tensor{rn(2, 3, 7, 9), rn(2, 7, 3, 5), grid(2, 4, 6, 2)},
			view: func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Slice(3, 0, 8, 2).Slice(2, 0, 6, 1).Transpose(2, 3), x[1].Transpose(1, 2), x[2]}
			},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.GridSampleInto(x[0], x[1], x[2], tensor.GridSampleParams{Padding: tensor.GridPadBorder})
			}},
		familyCase{name: "GridSampleBackwardInto dgrid only", in: []*tensor.Tensor{tensor.Full(9, 2, 4, 6, 2), rn(2, 3, 4, 6), rn(2, 3, 5, 7), grid(2, 4, 6, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				_, dg := tensor.GridSampleBackwardInto(nil, x[0], x[1], x[2], x[3], tensor.GridSampleParams{AlignCorners: true})
				return dg
			}},
		familyCase{name: "GridSample empty grid", in: []*tensor.Tensor{rn(2, 3, 5, 7), rn(2, 0, 6, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.GridSample(x[0], x[1], tensor.GridSampleParams{})
			}},
		familyCase{name: "GridSampleBackward empty grid", in: []*tensor.Tensor{rn(2, 3, 0, 6), rn(2, 3, 5, 7), rn(2, 0, 6, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				di, _ := tensor.GridSampleBackward(x[0], x[1], x[2], tensor.GridSampleParams{})
				return di
			}},
	)
	for _, align := range []bool{false, true} {
		cases = append(cases,
			familyCase{name: fmt.Sprintf("AffineGrid %v", align), in: []*tensor.Tensor{rn(3, 2, 3)},
				op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.AffineGrid(x[0], []int{3, 2, 5, 1}, align) }},
			familyCase{name: fmt.Sprintf("AffineGridInto strided %v", align), in: []*tensor.Tensor{rn(3, 7, 5, 2), rn(3, 3, 2)},
				view: func(x []*tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{x[0].Transpose(1, 2), x[1].Transpose(1, 2)}
				},
				op: func(x []*tensor.Tensor) *tensor.Tensor {
					return tensor.AffineGridInto(x[0], x[1], []int{3, 1, 5, 7}, align)
				}},
			familyCase{name: fmt.Sprintf("AffineGridBackward %v", align), in: []*tensor.Tensor{rn(3, 6, 4, 2)},
				op: func(x []*tensor.Tensor) *tensor.Tensor {
					return tensor.AffineGridBackward(x[0], []int{3, 2, 6, 4}, align)
				}})
	}
	for _, mode := range []tensor.InterpMode{tensor.InterpNearest, tensor.InterpNearestExact, tensor.InterpBilinear, tensor.InterpBicubic} {
		for _, p := range []tensor.InterpolateParams{{Size: [2]int{11, 4}}, {Scale: [2]float64{1.7, 2.1}}, {Size: [2]int{6, 7}}, {Size: [2]int{1, 13}, AlignCorners: true}, {Size: [2]int{9, 3}, AlignCorners: true}} {
			p.Mode = mode
			if p.AlignCorners && (mode == tensor.InterpNearest || mode == tensor.InterpNearestExact) {
				continue
			}
			s := tensor.InterpolateShape(tensor.New(2, 3, 6, 7), p)
			cases = append(cases,
				familyCase{name: fmt.Sprintf("Interpolate %v %+v", mode, p), in: []*tensor.Tensor{rn(2, 6, 3, 7)},
					view: func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Transpose(1, 2)} },
					op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Interpolate(x[0], p) }},
				familyCase{name: fmt.Sprintf("InterpolateBackwardInto %v %+v", mode, p), in: []*tensor.Tensor{rn(2, 3, 7, 6), rn(s[:]...)},
					view: func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Transpose(2, 3), x[1]} },
					op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.InterpolateBackwardInto(x[0], x[1], p) }})
		}
	}
	runFamilyCases(t, g, cases)
}
