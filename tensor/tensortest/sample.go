package tensortest

import (
	"fmt"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// The Sample family (tensor.SampleKernels) on host copies, by the CPU's.

func (k kernels) GridSample(dst, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	return k.do("Sample.GridSample", 1, []*tensor.Tensor{dst, input, grid}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.GridSample(h[0], h[1], h[2], p)
	})
}

func (k kernels) GridSampleBackward(dinput, dgrid, dy, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	return k.do("Sample.GridSampleBackward", 2, []*tensor.Tensor{dinput, dgrid, dy, input, grid}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.GridSampleBackward(h[0], h[1], h[2], h[3], h[4], p)
	})
}

func (k kernels) AffineGrid(dst, theta *tensor.Tensor, alignCorners bool) error {
	return k.do("Sample.AffineGrid", 1, []*tensor.Tensor{dst, theta}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.AffineGrid(h[0], h[1], alignCorners)
	})
}

func (k kernels) AffineGridBackward(dtheta, dgrid *tensor.Tensor, alignCorners bool) error {
	return k.do("Sample.AffineGridBackward", 1, []*tensor.Tensor{dtheta, dgrid}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.AffineGridBackward(h[0], h[1], alignCorners)
	})
}

func (k kernels) Interpolate(dst, x *tensor.Tensor, p tensor.InterpolateParams) error {
	return k.do("Sample.Interpolate", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.Interpolate(h[0], h[1], p)
	})
}

func (k kernels) InterpolateBackward(dx, dy *tensor.Tensor, p tensor.InterpolateParams) error {
	return k.do("Sample.InterpolateBackward", 1, []*tensor.Tensor{dx, dy}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sample.InterpolateBackward(h[0], h[1], p)
	})
}

// TestSample checks the Sample family on dev against the CPU, exactly
// (tensor.SampleKernels: every value in float64 rounded once, every sum
// in the CPU's order): GridSample and its gradients over each mode,
// padding and align corners, AffineGrid and its gradient, Interpolate and
// its gradient over each mode; strided operands, Into forms into guarded
// views, grids reaching outside the image, an empty grid.
func TestSample(t *testing.T, dev tensor.Device) {
	var cases []kase
	grid := func(shape ...int) operand { return operand{shape: shape, gen: normal} } // N(0, 1): some points outside [-1, 1]
	for _, mode := range []tensor.InterpMode{tensor.InterpNearest, tensor.InterpBilinear} {
		for _, pad := range []tensor.GridPadding{tensor.GridPadZeros, tensor.GridPadBorder, tensor.GridPadReflection} {
			for _, align := range []bool{false, true} {
				p := tensor.GridSampleParams{Mode: mode, Padding: pad, AlignCorners: align}
				name := fmt.Sprintf("%v/%d/%v", mode, pad, align)
				cases = append(cases,
					kase{name: "GridSample/" + name, in: []operand{rn(2, 5, 3, 4), grid(2, 3, 5, 2)}, tol: exactly,
						op: func(x []*tsr) *tsr { return tensor.GridSample(x[0].Permute(0, 2, 3, 1), x[1], p) }},
					kase{name: "GridSampleBackward/" + name, in: []operand{rn(2, 3, 3, 5), rn(2, 3, 4, 5), grid(2, 3, 5, 2)}, tol: exactly,
						op: func(x []*tsr) *tsr {
							di, dg := tensor.GridSampleBackward(x[0], x[1], x[2], p)
							return tensor.Concat(0, di.Reshape(-1), dg.Reshape(-1))
						}})
			}
		}
	}
	cases = append(cases,
		kase{name: "GridSampleInto/guarded", in: []operand{guarded(2, 3, 4, 10), rn(2, 3, 4, 5), grid(2, 4, 5, 2)}, tol: exactly,
			op: func(x []*tsr) *tsr {
				return tensor.GridSampleInto(x[0].Slice(3, 0, 10, 2), x[1], x[2], tensor.GridSampleParams{Padding: tensor.GridPadBorder})
			}},
		kase{name: "GridSample/empty grid", in: []operand{rn(2, 3, 4, 5), grid(2, 0, 5, 2)}, tol: exactly,
			op: func(x []*tsr) *tsr { return tensor.GridSample(x[0], x[1], tensor.GridSampleParams{}) }},
	)
	for _, align := range []bool{false, true} {
		cases = append(cases,
			kase{name: fmt.Sprintf("AffineGrid/%v", align), in: []operand{rn(3, 3, 2)}, tol: exactly,
				op: func(x []*tsr) *tsr { return tensor.AffineGrid(x[0].Transpose(1, 2), []int{3, 1, 4, 6}, align) }},
			kase{name: fmt.Sprintf("AffineGridBackward/%v", align), in: []operand{rn(3, 4, 6, 2)}, tol: exactly,
				op: func(x []*tsr) *tsr { return tensor.AffineGridBackward(x[0], []int{3, 1, 4, 6}, align) }},
			kase{name: fmt.Sprintf("AffineGridInto/guarded/%v", align), in: []operand{guarded(3, 4, 6, 4), rn(3, 2, 3)}, tol: exactly,
				op: func(x []*tsr) *tsr {
					return tensor.AffineGridInto(x[0].Slice(3, 1, 3, 1), x[1], []int{3, 1, 4, 6}, align)
				}})
	}
	for _, mode := range []tensor.InterpMode{tensor.InterpNearest, tensor.InterpNearestExact, tensor.InterpBilinear, tensor.InterpBicubic} {
		for _, p := range []tensor.InterpolateParams{{Size: [2]int{7, 3}}, {Scale: [2]float64{2.5, 1.5}}, {Size: [2]int{2, 9}, AlignCorners: true}} {
			p.Mode = mode
			if p.AlignCorners && (mode == tensor.InterpNearest || mode == tensor.InterpNearestExact) {
				continue
			}
			s := tensor.InterpolateShape(tensor.New(2, 3, 4, 5), p)
			name := fmt.Sprintf("%v/%v/%v", mode, p.Size, p.Scale)
			cases = append(cases,
				kase{name: "Interpolate/" + name, in: []operand{rn(2, 3, 5, 4)}, tol: exactly,
					op: func(x []*tsr) *tsr { return tensor.Interpolate(x[0].Transpose(2, 3), p) }},
				kase{name: "InterpolateBackward/" + name, in: []operand{rn(s[:]...)}, tol: exactly,
					op: func(x []*tsr) *tsr { return tensor.InterpolateBackward(x[0], []int{2, 3, 4, 5}, p) }})
		}
	}
	run(t, dev, 25, cases)
}
