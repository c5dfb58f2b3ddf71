package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"

	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/tensor"
)

// The PyTorch figures below are recorded in shared/ANCHORS.md (PyTorch
// 1.13.1, Debian, CPU capability AVX2, 2 threads, on the development
// machine); the report labels them as recorded: they are not timed here.

// convCase is one convolution with its recorded PyTorch time.
type convCase struct {
	name           string
	x, w           []int
	stride, pad    int
	torchMs        float64 // torch.nn.functional.conv2d, recorded
	torchGFLOPsRec float64
}

var convCases = []convCase{
	{"8x64x56x56 k3 p1", []int{8, 64, 56, 56}, []int{64, 64, 3, 3}, 1, 1, 33.13, 55.8},
	{"32x3x224x224 k7 s2 p3", []int{32, 3, 224, 224}, []int{64, 3, 7, 7}, 2, 3, 304.67, 24.8},
}

type convResult struct {
	c      convCase
	ms     float64
	gflops float64
}

func (s *sampler) runConv() []convResult {
	procs := runtime.GOMAXPROCS(0)
	r := rand.New(rand.NewPCG(1, 2))
	var out []convResult
	for _, c := range convCases {
		fmt.Fprintf(s.c.progress, "  Conv2D %s\n", c.name)
		x, w, b := tensor.RandN(r, c.x...), tensor.RandN(r, c.w...), tensor.RandN(r, c.w[0])
		p := tensor.ConvParams{Stride: [2]int{c.stride, c.stride}, Padding: [2]int{c.pad, c.pad}}
		dst := tensor.Conv2D(x, w, b, p)
		o := dst.Shape()
		flops := 2 * float64(o[0]*o[1]*o[2]*o[3]) * float64(c.w[1]*c.w[2]*c.w[3])
		ns := s.time("Conv2D/"+strings.ReplaceAll(c.name, " ", "_"), procs, func() { tensor.Conv2DInto(dst, x, w, b, p) },
			func(ns float64) (float64, string) { return flops / ns, "GFLOP/s" })
		out = append(out, convResult{c: c, ms: ns / 1e6, gflops: flops / ns})
	}
	return out
}

// trainCase is one of nn's Fashion-MNIST models (the models of
// nn/cmd/fashion and nn's BenchmarkTrainStep) with PyTorch's recorded
// epoch time on the same model, Adam, batch 64.
type trainCase struct {
	name             string
	model            func(*rand.Rand) nn.Module
	x                []int
	torchLo, torchHi float64 // seconds per epoch, recorded
}

// stepsPerEpoch is Fashion-MNIST's 60000 training images in batches of 64.
const stepsPerEpoch = (60000 + 63) / 64

var trainCases = []trainCase{
	{"MLP 784-256-128-10", func(r *rand.Rand) nn.Module { return nn.FashionMLP(r) }, []int{64, 28, 28}, 4.1, 5.0},
	{"CNN c32-p-c64-p-fc128-fc10", func(r *rand.Rand) nn.Module { return nn.FashionCNN(r) }, []int{64, 1, 28, 28}, 26.6, 28.8},
}

type trainResult struct {
	c      trainCase
	stepMs float64
}

// epochS is the time of one epoch's steps at the measured step time.
func (r trainResult) epochS() float64 { return r.stepMs * stepsPerEpoch / 1e3 }

// runTrain times one training step (forward, cross-entropy, backward, Adam)
// on a fixed random batch.
func (s *sampler) runTrain() []trainResult {
	procs := runtime.GOMAXPROCS(0)
	var out []trainResult
	for _, c := range trainCases {
		fmt.Fprintf(s.c.progress, "  training step %s\n", c.name)
		r := rand.New(rand.NewPCG(1, 2))
		m := c.model(r)
		opt := nn.NewAdam(nn.Params(m), 1e-3)
		tp := nn.NewTape()
		x := tensor.RandN(r, c.x...)
		y := tensor.New(c.x[0])
		for i := range y.Data() {
			y.Data()[i] = float32(r.IntN(10))
		}
		step := func() {
			tp.Reset()
			loss := tp.CrossEntropy(m.Forward(tp, tp.Const(x)), y)
			opt.ZeroGrad()
			tp.Backward(loss)
			opt.Step()
		}
		name := "TrainStep/" + strings.ToLower(strings.Fields(c.name)[0])
		ns := s.time(name, procs, step, nil)
		out = append(out, trainResult{c: c, stepMs: ns / 1e6})
	}
	return out
}
