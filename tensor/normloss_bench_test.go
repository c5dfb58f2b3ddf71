package tensor

import (
	"math/rand/v2"
	"testing"
)

// Benchmarks of the normalizations, losses with options and sampling, at
// sizes of a small CNN and a classifier's batch.

func BenchmarkGroupNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, dy := RandN(r, 32, 64, 28, 28), RandN(r, 32, 64, 28, 28)
	p := GroupNormParams{Groups: 8, Gamma: Ones(64), Beta: New(64)}
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			GroupNorm(x, p)
		}
	})
	_, s := GroupNorm(x, p)
	b.Run("backward", func(b *testing.B) {
		for b.Loop() {
			GroupNormBackward(dy, x, s, p)
		}
	})
}

func BenchmarkRMSNorm(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := RandN(r, 4096, 512)
	p := RMSNormParams{Gamma: Ones(512)}
	for b.Loop() {
		RMSNorm(x, p)
	}
}

func BenchmarkCrossEntropyWith(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := RandN(r, 256, 1000)
	lab := New(256)
	for i := range lab.data {
		lab.data[i] = float32(r.IntN(1000))
	}
	for _, c := range []struct {
		name string
		p    LossParams
	}{{"fused", LossParams{}}, {"smoothing", LossParams{LabelSmoothing: 0.1}}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				CrossEntropyWith(x, lab, c.p)
				CrossEntropyWithBackward(Scalar(1), x, lab, c.p)
			}
		})
	}
}

func BenchmarkGridSample(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := RandN(r, 8, 16, 64, 64)
	g := RandU(r, -1, 1, 8, 64, 64, 2)
	for b.Loop() {
		GridSample(x, g, GridSampleParams{})
	}
}
