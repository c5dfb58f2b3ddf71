//go:build cuda || cudaemu

package cudaplugin

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestConformance runs package tensor's conformance suite on the device:
// every family's test (tensortest.TestAll). Every op of every family the
// plugin registers has a kernel, so every case must pass.
func TestConformance(t *testing.T) {
	tensortest.TestAll(t, requireGPU(t).Device())
}

// A familyCase is one op through package tensor's public function, on
// the device and on the CPU: in are host operands, moved to the device
// but for 0-d ones (host scalars beside device operands); view makes the
// views the op takes of them, on both sides. The result and every
// operand afterwards (an Into form writes into one) must equal the CPU's
// exactly, or to tol relative to the result's magnitude; or the op must
// panic with a message containing panics.
type familyCase struct {
	name   string
	in     []*tensor.Tensor
	view   func(x []*tensor.Tensor) []*tensor.Tensor
	op     func(x []*tensor.Tensor) *tensor.Tensor
	tol    float64
	panics string
}

// TestFamiliesOnDevice checks the ops of the Elementwise, Reduce and Copy
// families, the convolution gradients (exact on inputs of halves, also
// in chunks of images and of rows), and the Pool and Index families'
// reports of bad index values, through tensor's functions:
// broadcast (by shape and by Expand's stride 0), transposed, sliced with
// steps, zero-size and 0-d host operands; Into forms into strided views,
// in place and overlapping their operands.
func TestFamiliesOnDevice(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(21, 22))
	rn := func(shape ...int) *tensor.Tensor { return tensor.RandN(r, shape...) }
	views := func(f func(x []*tensor.Tensor) []*tensor.Tensor) func(x []*tensor.Tensor) []*tensor.Tensor { return f }
	// steps has ties (-1, -0.5, 0, 0.5, 1) and a NaN in about one element in seven.
	steps := func(shape ...int) *tensor.Tensor {
		x := rn(shape...)
		d := x.Data()
		for i := range d {
			d[i] = float32(r.IntN(5)-2) / 2
			if r.IntN(7) == 0 {
				d[i] = float32(math.NaN())
			}
		}
		return tensor.FromSlice(d, shape...)
	}
	// halves has elements -1, -0.5, 0, 0.5, 1: their products and sums are
	// exact, whatever the order, so that a convolution gradient on the
	// device must equal the CPU's.
	halves := func(shape ...int) *tensor.Tensor {
		x := tensor.New(shape...)
		d := x.Data()
		for i := range d {
			d[i] = float32(r.IntN(5)-2) / 2
		}
		return x
	}
	// chunked runs f with a gradient workspace of ws floats (convWorkspace).
	chunked := func(ws int, f func() *tensor.Tensor) *tensor.Tensor {
		defer func(old int) { convWorkspace = old }(convWorkspace)
		convWorkspace = ws
		return f()
	}
	convChunk := tensor.ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, Dilation: [2]int{2, 2}, Groups: 2}
	// 5 images of [4, 9, 10] with weights [6, 2, 3, 3] (convChunk): 4×4
	// output pixels; 36 im2col rows and 6 channels a pixel, 168 floats an
	// output row, 672 an image: a workspace of 1350 floats takes 2 images a
	// chunk, 3 chunks; one of 504 (rowsWS) 3 output rows of an image, 2
	// chunks an image whose input rows overlap (dilated 3-row windows at
	// stride 2), even input rows read by none.
	const chunkWS, rowsWS = 2*(36+6)*16 + 6, 3 * (36 + 6) * 4
	pool2 := tensor.PoolParams{Kernel: [2]int{2, 2}}
	pool3 := tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}
	poolCeil := tensor.PoolParams{Kernel: [2]int{3, 2}, Stride: [2]int{2, 3}, Padding: [2]int{1, 1}, CeilMode: true}
	cases := []familyCase{
		{name: "Add", in: []*tensor.Tensor{rn(5, 7), rn(5, 7)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Add(x[0], x[1]) }},
		{name: "Add broadcast", in: []*tensor.Tensor{rn(3, 1, 5), rn(4, 5)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Add(x[0], x[1]) }},
		{name: "Add transposed and sliced", in: []*tensor.Tensor{rn(7, 5), rn(5, 14)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].T(), x[1].Slice(1, 0, 14, 2)} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Add(x[0], x[1]) }},
		{name: "Add host scalar", in: []*tensor.Tensor{rn(4, 3), tensor.Scalar(2.5)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Add(x[0], x[1]) }},
		{name: "Add zero-size", in: []*tensor.Tensor{rn(0, 3), rn(1, 3)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Add(x[0], x[1]) }},
		{name: "Mul expanded", in: []*tensor.Tensor{rn(6, 1), rn(6, 9)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Expand(6, 9), x[1]} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Mul(x[0], x[1]) }},
		{name: "AddInto in place", in: []*tensor.Tensor{rn(8, 3), rn(3)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.AddInto(x[0], x[0], x[1]) }},
		{name: "AddInto overlapping", in: []*tensor.Tensor{rn(40)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Slice(0, 1, 40, 1), x[0].Slice(0, 0, 39, 1), x[0]}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.AddInto(x[0], x[1], x[1]) }},
		{name: "MulInto strided dst", in: []*tensor.Tensor{tensor.Full(-3, 6, 10), rn(6, 5), rn(5)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Slice(1, 1, 10, 2), x[1], x[2]}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.MulInto(x[0], x[1], x[2]) }},
		{name: "ReLU strided", in: []*tensor.Tensor{rn(9, 12)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].T().Slice(0, 1, 12, 3)} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.ReLU(x[0]) }},
		{name: "ReLUInto in place", in: []*tensor.Tensor{rn(33)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.ReLUInto(x[0], x[0]) }},
		{name: "Fill 0 strided", in: []*tensor.Tensor{rn(7, 8)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].T().Slice(0, 0, 8, 3), x[0]} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Fill(x[0], 0) }},
		{name: "Softmax last axis", in: []*tensor.Tensor{rn(6, 300)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Softmax(x[0], -1) }, tol: 1e-5},
		{name: "Softmax axis 0 of a transpose", in: []*tensor.Tensor{rn(5, 4, 3)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Permute(2, 0, 1)} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Softmax(x[0], 0) }, tol: 1e-5},
		{name: "SoftmaxInto in place, axis 1", in: []*tensor.Tensor{rn(3, 7, 2)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.SoftmaxInto(x[0], x[0], 1) }, tol: 1e-5},
		{name: "Softmax zero-size", in: []*tensor.Tensor{rn(0, 4)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Softmax(x[0], 1) }},
		{name: "CopyInto broadcast into a strided view", in: []*tensor.Tensor{tensor.Full(7, 4, 6), rn(3)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Slice(1, 1, 6, 2), x[1], x[0]} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.CopyInto(x[0], x[1]) }},
		{name: "CopyInto overlapping", in: []*tensor.Tensor{rn(30)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Slice(0, 2, 30, 1), x[0].Slice(0, 0, 28, 1), x[0]}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.CopyInto(x[0], x[1]) }},
		{name: "Contiguous of a permutation", in: []*tensor.Tensor{rn(2, 3, 4, 5)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Permute(3, 1, 0, 2).Contiguous() }},
		{name: "Clone of ten dimensions, none merging", in: []*tensor.Tensor{rn(2, 3, 2, 2, 1, 3, 2, 2, 2, 2)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor { return x[0].Clone() }},
		{name: "Dropout of ten dimensions, none merging", in: []*tensor.Tensor{rn(2, 3, 2, 2, 1, 3, 2, 2, 2, 2)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Dropout(x[0], 0.3, 42, 5) }},
		{name: "UniformInto a permuted view of ten dimensions", in: []*tensor.Tensor{rn(2, 3, 2, 2, 1, 3, 2, 2, 2, 2)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.UniformInto(x[0], 42, 1<<40) }},
		{name: "Concat", in: []*tensor.Tensor{rn(3, 4), rn(5, 3), rn(3, 0)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0], x[1].T(), x[2]} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Concat(1, x...) }},
		{name: "Stack", in: []*tensor.Tensor{rn(4, 2), rn(4, 2)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Stack(1, x...) }},
		{name: "MatMulInto in place", in: []*tensor.Tensor{rn(300, 300), rn(300, 300)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.MatMulInto(x[0], x[0], x[1]) }, tol: 1e-3},
		{name: "Conv2D ReLU of NaN", in: []*tensor.Tensor{steps(2, 3, 6, 5), rn(4, 3, 2, 2), rn(4)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2D(x[0], x[1], x[2], tensor.ConvParams{Padding: [2]int{1, 0}, ReLU: true})
			}, tol: 1e-5},
		{name: "Conv2DBackwardInput transposed dy, every other weight", in: []*tensor.Tensor{halves(4, 2, 5, 5), halves(8, 3, 3, 3)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Transpose(0, 1), x[1].Slice(0, 0, 8, 2)}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2DBackwardInput(x[0], x[1], []int{2, 3, 7, 7}, tensor.ConvParams{})
			}},
		{name: "Conv2DBackwardInputInto a strided dx, padding, stride, dilation", in: []*tensor.Tensor{tensor.Full(-3, 2, 3, 9, 20), halves(2, 4, 4, 5), halves(4, 3, 2, 3)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Slice(3, 1, 20, 2), x[1], x[2], x[0]}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2DBackwardInputInto(x[0], x[1], x[2], tensor.ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 2}, Dilation: [2]int{3, 2}})
			}},
		{name: "Conv2DBackwardWeight strided x, transposed dy, padding, stride, dilation", in: []*tensor.Tensor{halves(2, 4, 5, 4), halves(2, 3, 9, 20)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Transpose(2, 3), x[1].Slice(3, 0, 20, 2)}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2DBackwardWeight(x[0], x[1], []int{4, 3, 2, 3}, tensor.ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 2}, Dilation: [2]int{3, 2}})
			}},
		{name: "Conv2DBackwardWeightInto a transposed dw over garbage", in: []*tensor.Tensor{tensor.Full(7, 4, 3, 3, 3), halves(2, 4, 7, 7), halves(2, 3, 9, 9)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Transpose(2, 3), x[1], x[2]} }),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2DBackwardWeightInto(x[0], x[1], x[2], tensor.ConvParams{})
			}},
		{name: "Conv2DBackwardInput zero batch", in: []*tensor.Tensor{rn(0, 2, 3, 3), rn(2, 3, 3, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2DBackwardInput(x[0], x[1], []int{0, 3, 5, 5}, tensor.ConvParams{})
			}},
		{name: "Conv2DBackwardWeightInto zero batch over garbage", in: []*tensor.Tensor{tensor.Full(7, 2, 3, 3, 3), rn(0, 2, 3, 3), rn(0, 3, 5, 5)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.Conv2DBackwardWeightInto(x[0], x[1], x[2], tensor.ConvParams{})
			}},
		{name: "Conv2DBackwardInput in chunks, groups", in: []*tensor.Tensor{halves(5, 6, 4, 4), halves(6, 2, 3, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return chunked(chunkWS, func() *tensor.Tensor { return tensor.Conv2DBackwardInput(x[0], x[1], []int{5, 4, 9, 10}, convChunk) })
			}},
		{name: "Conv2DBackwardWeight in chunks, groups, strided dy", in: []*tensor.Tensor{halves(5, 6, 4, 8), halves(5, 4, 9, 10)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Slice(3, 1, 8, 2), x[1]} }),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return chunked(chunkWS, func() *tensor.Tensor { return tensor.Conv2DBackwardWeight(x[0], x[1], []int{6, 2, 3, 3}, convChunk) })
			}},
		{name: "Conv2DBackwardInputInto over garbage, in chunks of rows", in: []*tensor.Tensor{tensor.Full(-3, 5, 4, 9, 10), halves(5, 6, 4, 4), halves(6, 2, 3, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return chunked(rowsWS, func() *tensor.Tensor { return tensor.Conv2DBackwardInputInto(x[0], x[1], x[2], convChunk) })
			}},
		{name: "Conv2DBackwardWeight in chunks of rows, transposed x", in: []*tensor.Tensor{halves(5, 6, 4, 4), halves(5, 4, 10, 9)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0], x[1].Transpose(2, 3)} }),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return chunked(rowsWS, func() *tensor.Tensor { return tensor.Conv2DBackwardWeight(x[0], x[1], []int{6, 2, 3, 3}, convChunk) })
			}},
		{name: "MaxPool2D", in: []*tensor.Tensor{rn(2, 3, 9, 8)}, op: func(x []*tensor.Tensor) *tensor.Tensor { m, _ := tensor.MaxPool2D(x[0], pool3); return m }},
		{name: "MaxPool2D indices", in: []*tensor.Tensor{rn(2, 3, 9, 8)}, op: func(x []*tensor.Tensor) *tensor.Tensor { _, i := tensor.MaxPool2D(x[0], pool3); return i }},
		{name: "MaxPool2D ties, NaN, ceil, transposed", in: []*tensor.Tensor{steps(3, 2, 7, 8)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].Transpose(0, 1)} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { _, i := tensor.MaxPool2D(x[0], poolCeil); return i }},
		{name: "MaxPool2DInto strided, no indices", in: []*tensor.Tensor{tensor.Full(5, 2, 3, 4, 8), rn(4, 3, 8, 8)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0].Slice(3, 1, 8, 2), x[1].Slice(0, 0, 4, 2), x[0]}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				m, _ := tensor.MaxPool2DInto(x[0], nil, x[1], pool2)
				return m
			}},
		{name: "MaxPool2DInto indices only", in: []*tensor.Tensor{tensor.Full(5, 2, 3, 4, 4), rn(2, 3, 8, 8)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				_, i := tensor.MaxPool2DInto(nil, x[0], x[1], pool2)
				return i
			}},
		{name: "AvgPool2D ExcludePad", in: []*tensor.Tensor{rn(1, 2, 7, 6)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.AvgPool2D(x[0], tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, ExcludePad: true})
			}},
		{name: "AvgPool2DInto ceil, zero batch", in: []*tensor.Tensor{rn(0, 3, 5, 5)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.AvgPool2D(x[0], poolCeil) }},
		{name: "MaxPool2DBackward shared maxima", in: []*tensor.Tensor{rn(2, 3, 2, 2), tensor.FromSlice([]float32{0, 0, 5, 5, 15, 0, 15, 15, 3, 3, 3, 3, 1, 2, 4, 8, 0, 0, 0, 0, 6, 6, 9, 9}, 2, 3, 2, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.MaxPool2DBackward(x[0], x[1], []int{2, 3, 4, 4}, pool3)
			}, tol: 1e-6},
		{name: "AvgPool2DBackward ceil, ExcludePad", in: []*tensor.Tensor{rn(2, 3, 3, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				p := poolCeil
				p.ExcludePad = true
				return tensor.AvgPool2DBackward(x[0], []int{2, 3, 5, 5}, p)
			}, tol: 1e-6},
		{name: "MaxPool2DBackward index past the plane", in: []*tensor.Tensor{rn(1, 2, 2, 2), tensor.FromSlice([]float32{0, 1, 4, 5, 10, 16, 15, 14}, 1, 2, 2, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.MaxPool2DBackward(x[0], x[1], []int{1, 2, 4, 4}, pool2)
			}, panics: "is not an element of an input plane of 16"},
		{name: "MaxPool2DBackward index negative", in: []*tensor.Tensor{rn(1, 2, 2, 2), tensor.FromSlice([]float32{0, 1, 4, 5, 10, -1, 15, 14}, 1, 2, 2, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.MaxPool2DBackward(x[0], x[1], []int{1, 2, 4, 4}, pool2)
			}, panics: "is not an element of an input plane of 16"},
		{name: "MaxPool2DBackward index not an integer", in: []*tensor.Tensor{rn(1, 2, 2, 2), tensor.FromSlice([]float32{0, 1, 4, 5, 10, 2.5, 15, 14}, 1, 2, 2, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.MaxPool2DBackward(x[0], x[1], []int{1, 2, 4, 4}, pool2)
			}, panics: "is not an element of an input plane of 16"},
		{name: "MaxPool2DBackward index NaN", in: []*tensor.Tensor{rn(1, 2, 2, 2), tensor.FromSlice([]float32{0, 1, 4, 5, 10, float32(math.NaN()), 15, 14}, 1, 2, 2, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.MaxPool2DBackward(x[0], x[1], []int{1, 2, 4, 4}, pool2)
			}, panics: "is not an element of an input plane of 16"},
		{name: "AdaptiveMaxPool2DBackward index past the plane", in: []*tensor.Tensor{rn(2, 2, 2), tensor.FromSlice([]float32{0, 1, 4, 5, 10, 16, 15, 14}, 2, 2, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.AdaptiveMaxPool2DBackward(x[0], x[1], []int{2, 4, 4})
			}, panics: "(result [2 4 4] on device(1)): cudaplugin: AdaptiveMaxPool2DBackward: index 16 is not an element of an input plane of 16"},
		{name: "AdaptiveMaxPool2DBackward index NaN", in: []*tensor.Tensor{rn(2, 2, 2), tensor.FromSlice([]float32{0, 1, 4, 5, 10, float32(math.NaN()), 15, 14}, 2, 2, 2)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				dx, err := tensor.NewOn(x[0].Device(), 2, 4, 4)
				if err != nil {
					panic(err)
				}
				return tensor.AdaptiveMaxPool2DBackwardInto(dx, x[0], x[1])
			}, panics: "is not an element of an input plane of 16"},
		{name: "IndexAdd src a view of dst", in: []*tensor.Tensor{rn(7, 3), tensor.FromSlice([]float32{1, 2, 3, 0}, 4)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.IndexAdd(x[0], 0, x[1], x[0].Slice(0, 0, 4, 1)) }, tol: 1e-6},
		{name: "Gather into its own index", in: []*tensor.Tensor{rn(7, 3), tensor.FromSlice([]float32{0, 1, 2, 2, 1, 0}, 2, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.GatherInto(x[1], x[0], 1, x[1]) }},
		{name: "IndexSelect index past the axis", in: []*tensor.Tensor{rn(7, 3), tensor.FromSlice([]float32{0, 7, 2}, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.IndexSelect(x[0], 0, x[1]) }, panics: "index 7 is not an integer in -7..6"},
		{name: "Gather NaN index", in: []*tensor.Tensor{rn(7, 3), tensor.FromSlice([]float32{0, 1, 2, float32(math.NaN()), 1, 0}, 2, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Gather(x[0], 1, x[1]) }, panics: "index NaN is not an integer in -3..2"},
		{name: "IndexAdd fractional index", in: []*tensor.Tensor{rn(7, 3), tensor.FromSlice([]float32{1, 2.5}, 2), rn(2, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.IndexAdd(x[0], 0, x[1], x[2]) }, panics: "index 2.5 is not an integer in -7..6"},
		{name: "ScatterAdd index before the axis", in: []*tensor.Tensor{rn(7, 3), tensor.FromSlice([]float32{0, -8, 2}, 1, 3), rn(1, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.ScatterAdd(x[0], 0, x[1], x[2]) }, panics: "index -8 is not an integer in -7..6"},
		{name: "OneHot negative label", in: []*tensor.Tensor{tensor.FromSlice([]float32{0, -1, 2}, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.OneHot(x[0], 4) }, panics: "label -1 not in 0..3"},
		{name: "OneHot label past the classes", in: []*tensor.Tensor{tensor.FromSlice([]float32{0, 4, 2}, 3)},
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.OneHot(x[0], 4) }, panics: "label 4 not in 0..3"},
		{name: "Sub", in: []*tensor.Tensor{rn(3), rn(3)}, op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Sub(x[0], x[1]) }},
		{name: "Fill -0 strided", in: []*tensor.Tensor{rn(7, 8)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].T().Slice(0, 1, 8, 3), x[0]} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Fill(x[0], float32(math.Copysign(0, -1))) }},
		{name: "Where of ten dimensions, overlapping dst", in: []*tensor.Tensor{rn(2, 3, 2, 2, 1, 3, 2, 2, 2, 2), rn(2, 2, 2, 2, 3, 1, 2, 2, 3, 2)},
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{x[0], x[1].Permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)}
			}),
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.WhereInto(x[0], x[1], x[0].Slice(0, 1, 2, 1), x[1])
			}},
		// Attention is composed of the other families on a device (not
		// fused yet): the CPU's tiled path, within rounding.
		{name: "ScaledDotProductAttention causal, padded, heads view", in: []*tensor.Tensor{rn(2, 9, 3, 5), rn(2, 7, 3, 5), rn(2, 7, 3, 4), attnPad()},
			view: attnHeads, tol: 2e-3,
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.ScaledDotProductAttention(x[0], x[1], x[2], tensor.AttentionParams{Causal: true, KeyPadding: x[3]})
			}},
		{name: "ScaledDotProductAttentionBackward causal, padded", in: []*tensor.Tensor{rn(2, 9, 3, 5), rn(2, 7, 3, 5), rn(2, 7, 3, 4), attnPad(), rn(2, 3, 9, 4)},
			view: attnHeads, tol: 2e-3,
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				p := tensor.AttentionParams{Causal: true, KeyPadding: x[3], Scale: 0.7}
				out, lse := tensor.New(2, 3, 9, 4), tensor.New(2, 3, 9)
				if d := x[0].Device(); d != tensor.CPU {
					out, _ = tensor.NewOn(d, 2, 3, 9, 4)
					lse, _ = tensor.NewOn(d, 2, 3, 9)
				}
				tensor.ScaledDotProductAttentionInto(out, lse, x[0], x[1], x[2], p)
				dq, dk, dv := tensor.ScaledDotProductAttentionBackward(x[4], x[0], x[1], x[2], out, lse, p)
				return tensor.Concat(0, out.Reshape(-1), lse.Reshape(-1), dq.Reshape(-1), dk.Reshape(-1), dv.Reshape(-1))
			}},
		// PairwiseSqDist, its gradient and RBFKernel compose the other
		// families on a device: within the GEMM's rounding of the host's.
		{name: "PairwiseSqDist transposed x", in: []*tensor.Tensor{rn(5, 7), rn(4, 5)}, tol: 1e-4,
			view: views(func(x []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{x[0].T(), x[1]} }),
			op:   func(x []*tensor.Tensor) *tensor.Tensor { return tensor.PairwiseSqDist(x[0], x[1]) }},
		{name: "PairwiseSqDist y = x", in: []*tensor.Tensor{rn(6, 3)}, tol: 1e-4,
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.PairwiseSqDist(x[0], x[0]) }},
		{name: "RBFKernelInto a transposed dst", in: []*tensor.Tensor{rn(4, 3), rn(3, 3), rn(3, 4)}, tol: 1e-4,
			op: func(x []*tensor.Tensor) *tensor.Tensor { return tensor.RBFKernelInto(x[2].T(), x[0], x[1], 0.5) }},
		// MaskedSelect's dst overlapping x: x is read before dst is written.
		{name: "MaskedSelectInto dst overlapping x", in: []*tensor.Tensor{rn(12), tensor.FromSlice([]float32{1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}, 3, 4)},
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.MaskedSelectInto(x[0].Slice(0, 1, 6, 1), x[0].Reshape(3, 4), x[1])
			}},
		// SpMM composes IndexSelect, Mul and IndexAdd (float atomics: in
		// any order) on a device.
		{name: "SpMMInto transposed b and dst", in: []*tensor.Tensor{rn(3, 6), rn(5, 4)}, tol: 1e-5,
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				a := tensor.CSRFromCOO(4, 6, []int{0, 0, 2, 2, 2, 3, 0}, []int{1, 5, 0, 3, 5, 2, 1}, []float32{0.5, -1, 2, 0.25, 3, -1.5, 1})
				return tensor.SpMMInto(x[1].T().Slice(1, 0, 3, 1), a, x[0].T())
			}},
		{name: "PairwiseSqDistGrad", in: []*tensor.Tensor{rn(4, 3), rn(5, 3), rn(4, 5)}, tol: 1e-4,
			op: func(x []*tensor.Tensor) *tensor.Tensor {
				dx, dy := tensor.PairwiseSqDistGrad(x[2], x[0], x[1])
				return tensor.Concat(0, dx.Reshape(-1), dy.Reshape(-1))
			}},
	}
	runFamilyCases(t, g, cases)
}

// runFamilyCases runs each case on g's device and on the CPU (see
// familyCase).
func runFamilyCases(t *testing.T, g *GPU, cases []familyCase) {
	t.Helper()
	all := func(x []*tensor.Tensor) []*tensor.Tensor { return x }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			view := c.view
			if view == nil {
				view = all
			}
			host := make([]*tensor.Tensor, len(c.in))
			dev := make([]*tensor.Tensor, len(c.in))
			for i, x := range c.in {
				host[i] = x.Clone()
				dev[i] = x
				if x.Dims() > 0 {
					var err error
					if dev[i], err = x.To(g.Device()); err != nil {
						t.Fatal(err)
					}
				}
			}
			if c.panics != "" {
				if msg := tensortest.Panic(func() { c.op(view(dev)) }); !strings.Contains(msg, c.panics) {
					t.Fatalf("panic %q, want one containing %q", msg, c.panics)
				}
				return
			}
			want := c.op(view(host))
			var got *tensor.Tensor
			if msg := tensortest.Panic(func() { got = c.op(view(dev)) }); msg != "" {
				t.Fatalf("on the device: %s", msg)
			}
			if got.Device() != g.Device() {
				t.Fatalf("result on %v, want %v", got.Device(), g.Device())
			}
			same(t, "result", got, want, c.tol)
			for i := range c.in {
				same(t, "operand", dev[i], host[i], c.tol)
			}
		})
	}
}

// attnPad is a key padding mask for 2 batches of 7 keys: keys 2 and 6 of
// the first, every key of the second.
func attnPad() *tensor.Tensor {
	return tensor.FromSlice([]float32{0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, 2, 7)
}

// attnHeads views q, k and v of [B, S, H, D] as [B, H, S, D], as a
// projection's output is split into heads.
func attnHeads(x []*tensor.Tensor) []*tensor.Tensor {
	y := slices.Clone(x)
	for i := range 3 {
		y[i] = x[i].Permute(0, 2, 1, 3)
	}
	return y
}

// same checks got (on the device) against the CPU's want: equal (NaN as
// NaN), or within tol·max(|want|, 1e-3) when tol is set.
func same(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s of shape %v, want %v", what, got.Shape(), want.Shape())
	}
	h, err := got.To(tensor.CPU)
	if err != nil {
		t.Fatal(err)
	}
	gd, wd := h.Contiguous().Data(), want.Contiguous().Data()
	for i, w := range wd {
		v := gd[i]
		if v == w || v != v && w != w || tol > 0 && math.Abs(float64(v-w)) <= tol*max(math.Abs(float64(w)), 1e-3) {
			continue
		}
		t.Fatalf("%s element %d of %v = %v, want the CPU's %v", what, i, want.Shape(), v, w)
	}
}

// TestMerge checks the iteration spaces of strided kernels: size-1
// dimensions go, neighbours that every operand steps across as across
// one merge, others do not; each's offsets cover the dimensions beyond
// LANES_MAX_DIMS.
func TestMerge(t *testing.T) {
	for _, c := range []struct {
		shape   []int
		strides [][]int
		want    []int   // merged shape
		wantSt  [][]int // merged strides
	}{
		{[]int{2, 3, 4}, [][]int{{12, 4, 1}, {12, 4, 1}}, []int{24}, [][]int{{1}, {1}}},
		{[]int{2, 3, 4}, [][]int{{12, 4, 1}, {1, 8, 2}}, []int{2, 12}, [][]int{{12, 1}, {1, 2}}},
		{[]int{2, 3, 4}, [][]int{{12, 4, 1}, {1, 2, 8}}, []int{2, 3, 4}, [][]int{{12, 4, 1}, {1, 2, 8}}},
		{[]int{4, 1, 3}, [][]int{{3, 99, 1}, {0, 5, 1}}, []int{4, 3}, [][]int{{3, 1}, {0, 1}}},
		{[]int{5, 6, 7}, [][]int{{42, 7, 1}, {0, 0, 1}}, []int{30, 7}, [][]int{{7, 1}, {0, 1}}},
		{[]int{5, 6, 7}, [][]int{{84, 7, 1}, {0, 0, 1}}, []int{5, 6, 7}, [][]int{{84, 7, 1}, {0, 0, 1}}},
		{[]int{1, 1}, [][]int{{1, 1}}, nil, [][]int{nil}},
		{[]int{3, 0}, [][]int{{0, 1}}, nil, [][]int{nil}},
	} {
		s := merge(c.shape, c.strides...)
		if !slices.Equal(s.shape, c.want) || !slices.EqualFunc(s.strides, c.wantSt, slices.Equal) {
			t.Errorf("merge(%v, %v) = %v %v, want %v %v", c.shape, c.strides, s.shape, s.strides, c.want, c.wantSt)
		}
	}
	// Ten dimensions that do not merge: the outermost two are looped
	// over, four launches of eight dimensions.
	shape := []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}
	st := make([]int, 10)
	for i := range st {
		st[i] = 1 << (2 * i) // increasing: no neighbours merge
	}
	outer, offs := merge(shape, st).split()
	if want := [][]int{{0}, {4}, {1}, {5}}; outer != 2 || !slices.EqualFunc(offs, want, slices.Equal) {
		t.Errorf("split of 10 dimensions: %d outer, offsets %v; want 2, %v", outer, offs, want)
	}
	if outer, offs := merge([]int{3, 4}, []int{4, 1}).split(); outer != 0 || len(offs) != 1 || offs[0][0] != 0 {
		t.Errorf("split of one dimension: %d outer, offsets %v; want 0, [[0]]", outer, offs)
	}
}

// TestOptimTables checks an optimizer step over more parameters than one
// launch's table holds (LANES_OPT_TENSORS): AdamW over 2·optTensors+3
// parameters of several sizes, every fifth without a gradient, two steps
// on the device against the CPU.
func TestOptimTables(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(31, 32))
	n := 2*optTensors + 3
	var host, dev [4][]*tensor.Tensor // params, grads, m, v
	for i := range n {
		shape := []int{1 + i%7, 1 + i%3}
		if i%11 == 0 {
			shape = []int{0}
		}
		for k := range 4 {
			x := tensor.RandN(r, shape...)
			if k >= 2 {
				x = tensor.New(shape...)
			}
			if k == 1 && i%5 == 0 {
				host[k], dev[k] = append(host[k], nil), append(dev[k], nil)
				continue
			}
			d, err := x.To(g.Device())
			if err != nil {
				t.Fatal(err)
			}
			host[k], dev[k] = append(host[k], x), append(dev[k], d)
		}
	}
	hp := tensor.AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, Decoupled: true}
	hs, ds := make([]int64, n), make([]int64, n)
	for range 2 {
		tensor.AdamStep(host[0], host[1], host[2], host[3], hs, hp)
		tensor.AdamStep(dev[0], dev[1], dev[2], dev[3], ds, hp)
	}
	for k, what := range []string{"parameter", "gradient", "m", "v"} {
		for i := range n {
			if host[k][i] != nil {
				same(t, what, dev[k][i], host[k][i], 1e-5)
			}
		}
	}
}

// TestOptimSteadyAllocs: an eager NAdam step, whose factors of the step
// counts are a list of NAdam's own, allocates at most once more than an
// Adam step over the same parameters (the tables and the operands'
// bookkeeping of optim, which both share), for the closure that advances
// a replay's factors: the list is reused from step to step.
func TestOptimSteadyAllocs(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(33, 34))
	n := optTensors + 5        // two tables
	var ts [4][]*tensor.Tensor // params, grads, m, v
	for i := range n {
		for k := range ts {
			d, err := tensor.RandN(r, 1+i%5, 3).To(g.Device())
			if err != nil {
				t.Fatal(err)
			}
			ts[k] = append(ts[k], d)
		}
	}
	steps, mu := make([]int64, n), make([]float64, n)
	for i := range mu {
		mu[i] = 1
	}
	adam := tensor.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	nadam := tensor.NAdamParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MomentumDecay: 4e-3}
	step := func(f func() error) func() {
		return func() {
			for i := range steps {
				steps[i]++
			}
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := testing.AllocsPerRun(20, step(func() error { return g.Adam(ts[0], ts[1], ts[2], ts[3], nil, steps, adam) }))
	na := testing.AllocsPerRun(20, step(func() error { return g.NAdam(ts[0], ts[1], ts[2], ts[3], steps, mu, nadam) }))
	t.Logf("allocations a step: Adam %v, NAdam %v", a, na)
	if na > a+1 {
		t.Errorf("an eager NAdam step allocates %v times, an Adam step %v: want at most one more", na, a)
	}
}
