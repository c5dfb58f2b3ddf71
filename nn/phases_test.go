package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/simd"
	"github.com/lanesgo/lanes/tensor"
)

// BenchmarkCNNPhases times each phase of a FashionCNN training step
// (batch 64, as BenchmarkTrainStep/cnn) on its own, with the tensor and
// simd calls the tape makes and the model's shapes, and reports the
// phase's arithmetic as GFLOP/s (2 per multiply-add; 0 for the phases
// that only move data). Run it with -cpu 1,2 for the one- and two-thread
// breakdown; the sum of the phases against BenchmarkTrainStep/cnn is the
// tape's own overhead and the serial gaps between the phases.
func BenchmarkCNNPhases(b *testing.B) {
	for _, p := range cnnPhases() {
		b.Run(p.name, func(b *testing.B) {
			p.f()
			for b.Loop() {
				p.f()
			}
			if p.flops > 0 {
				b.ReportMetric(p.flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			}
		})
	}
}

// cnnPhase is one phase of a FashionCNN step: its arithmetic (2 FLOP per
// multiply-add) and a function that runs it.
type cnnPhase struct {
	name  string
	flops float64
	f     func()
}

// cnnPhases returns the phases of a FashionCNN step of batch 64 on random
// operands of the model's shapes.
func cnnPhases() []cnnPhase {
	const n = 64
	r := rand.New(rand.NewPCG(1, 2))
	same := tensor.ConvParams{Padding: [2]int{1, 1}}
	sameReLU := same
	sameReLU.ReLU = true
	pool := tensor.PoolParams{Kernel: [2]int{2, 2}}
	x := tensor.RandN(r, n, 1, 28, 28)
	w1, b1, dw1 := tensor.RandN(r, 32, 1, 3, 3), tensor.RandN(r, 32), tensor.New(32, 1, 3, 3)
	p1, i1, dp1 := tensor.New(n, 32, 14, 14), tensor.New(n, 32, 14, 14), tensor.RandN(r, n, 32, 14, 14)
	w2, b2, dw2 := tensor.RandN(r, 64, 32, 3, 3), tensor.RandN(r, 64), tensor.New(64, 32, 3, 3)
	p2, i2, dp2 := tensor.New(n, 64, 7, 7), tensor.New(n, 64, 7, 7), tensor.RandN(r, n, 64, 7, 7)
	dx2 := tensor.New(n, 32, 14, 14)
	fw1, fw2 := tensor.RandN(r, 128, 3136), tensor.RandN(r, 10, 128)
	h, dh, logits := tensor.New(n, 128), tensor.RandN(r, n, 128), tensor.RandN(r, n, 10)
	dfw1, dfw2, dflat := tensor.New(128, 3136), tensor.New(10, 128), tensor.New(n, 3136)
	db := make([]float32, 64)
	flat := p2.Reshape(n, 3136)
	tensor.Conv2DMaxPoolInto(p1, i1, x, w1, b1, sameReLU, pool)
	tensor.Conv2DMaxPoolInto(p2, i2, p1, w2, b2, sameReLU, pool)
	mask1, mask2 := tensor.New(n, 32, 14, 14), tensor.New(n, 64, 7, 7)

	var params, grads, ms, vs []*tensor.Tensor
	for _, s := range [][]int{{32, 1, 3, 3}, {32}, {64, 32, 3, 3}, {64}, {128, 3136}, {128}, {10, 128}, {10}} {
		params, grads = append(params, tensor.RandN(r, s...)), append(grads, tensor.RandN(r, s...))
		ms, vs = append(ms, tensor.New(s...)), append(vs, tensor.New(s...))
	}
	steps := make([]int64, len(params))
	adam := tensor.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}

	conv := func(cin, cout, hw int) float64 { return 2 * n * float64(cout*hw*hw*cin*9) }
	gemm := func(m, nn, k int) float64 { return 2 * float64(m*nn*k) }
	return []cnnPhase{
		// Sequential runs each Conv2D+ReLU+MaxPool2D as one fused op
		// (Tape.Conv2DMaxPool): the convolution's output and its gradient
		// are never stored.
		{"conv1+pool1/forward", conv(1, 32, 28), func() { tensor.Conv2DMaxPoolInto(p1, i1, x, w1, b1, sameReLU, pool) }},
		{"conv2+pool2/forward", conv(32, 64, 14), func() { tensor.Conv2DMaxPoolInto(p2, i2, p1, w2, b2, sameReLU, pool) }},
		{"fc1/forward", gemm(n, 128, 3136), func() {
			simd.Sgemm(false, true, n, 128, 3136, 1, flat.Data(), 3136, fw1.Data(), 3136, 0, h.Data(), 128)
		}},
		{"fc2/forward", gemm(n, 10, 128), func() {
			simd.Sgemm(false, true, n, 10, 128, 1, h.Data(), 128, fw2.Data(), 128, 0, logits.Data(), 10)
		}},
		{"fc1/dx", gemm(n, 3136, 128), func() {
			simd.Sgemm(false, false, n, 3136, 128, 1, dh.Data(), 128, fw1.Data(), 3136, 0, dflat.Data(), 3136)
		}},
		{"fc1/dw", gemm(128, 3136, n), func() {
			simd.Sgemm(true, false, 128, 3136, n, 1, dh.Data(), 128, flat.Data(), 3136, 0, dfw1.Data(), 3136)
		}},
		{"fc2/dw+dx", gemm(n, 128, 10) + gemm(10, 128, n), func() {
			simd.Sgemm(false, false, n, 128, 10, 1, logits.Data(), 10, fw2.Data(), 128, 0, dh.Data(), 128)
			simd.Sgemm(true, false, 10, 128, n, 1, logits.Data(), 10, h.Data(), 128, 0, dfw2.Data(), 128)
		}},
		// The ReLU's mask of the pooled gradient and the bias gradient
		// summed from it (backConv2DMaxPool).
		{"pool2/mask+bias", 0, func() {
			reluAct.gradInto(mask2, dp2, nil, p2)
			channelSums(db, mask2.Data(), n, 7*7, false)
		}},
		{"pool2+conv2/dw", conv(32, 64, 14), func() {
			tensor.Conv2DMaxPoolBackwardInto(nil, dw2, mask2, i2, p1, w2, same, pool)
		}},
		{"pool2+conv2/dx", conv(32, 64, 14), func() {
			tensor.Conv2DMaxPoolBackwardInto(dx2, nil, mask2, i2, p1, w2, same, pool)
		}},
		{"pool1/mask+bias", 0, func() {
			reluAct.gradInto(mask1, dp1, nil, p1)
			channelSums(db[:32], mask1.Data(), n, 14*14, false)
		}},
		{"pool1+conv1/dw", conv(1, 32, 28), func() {
			tensor.Conv2DMaxPoolBackwardInto(nil, dw1, mask1, i1, x, w1, same, pool)
		}},
		{"adam", 0, func() { tensor.AdamStep(params, grads, ms, vs, steps, adam) }},
	}
}
