//go:build cuda || cudaemu

package cudaplugin

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestPadOnDevice runs Pad and PadBackward (composed of the Elementwise,
// Copy and Index families) and their Into forms on the device for every
// mode: pads on one to three axes, crops, a strided input and
// destination, zero-size tensors. The results must equal the CPU's bit
// for bit: PadBackward's IndexAdd rounds name each element once, so the
// kernel's atomic adds have one order.
func TestPadOnDevice(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(25, 5))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	var cases []familyCase
	for _, mode := range []tensor.PadMode{tensor.PadConstant, tensor.PadReflect, tensor.PadReplicate, tensor.PadCircular} {
		for _, c := range []struct {
			shape, pads []int
		}{
			{[]int{2, 3, 5, 6}, []int{2, 3, 1, 2}},
			{[]int{2, 3, 4, 5}, []int{-1, 2, 3, -1, 1, 0}},
			{[]int{7}, []int{0, 0}},
			{[]int{0, 4}, []int{1, 1}},
		} {
			shape, pads, mode := c.shape, c.pads, mode
			name := fmt.Sprintf("%v %v %v", mode, shape, pads)
			out := tensor.Pad(tensor.New(shape...), pads, mode, 0).Shape()
			cases = append(cases,
				familyCase{name: "Pad " + name, in: []*tensor.Tensor{rn(shape...)},
					op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Pad(x[0], pads, mode, -2) }},
				familyCase{name: "PadBackward " + name, in: []*tensor.Tensor{rn(out...)},
					op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.PadBackward(x[0], shape, pads, mode) }})
		}
		cases = append(cases,
			familyCase{name: fmt.Sprintf("PadInto %v strided", mode), in: []*tensor.Tensor{rn(2, 9, 10), rn(2, 7, 4)},
				view: func(x []*tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{x[0].Slice(2, 0, 10, 2).T(), x[1].Slice(1, 1, 7, 1).T()}
				},
				op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.PadInto(x[0], x[1], []int{1, 2, 1, 0}, mode, 3) }},
			familyCase{name: fmt.Sprintf("PadBackwardInto %v strided", mode), in: []*tensor.Tensor{rn(2, 6, 8), rn(2, 9, 5)},
				view: func(x []*tensor.Tensor) []*tensor.Tensor {
					return []*tensor.Tensor{x[0].Slice(2, 0, 8, 2), x[1]}
				},
				op: func(x []*tensor.Tensor) *tensor.Tensor {
					return tensor.PadBackwardInto(x[0], x[1], []int{0, 1, 2, 1}, mode)
				}})
	}
	runFamilyCases(t, g, cases)
}
