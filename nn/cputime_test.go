package nn

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lanesgo/lanes/internal/cputime"
)

// TestCNNPhasesCPU logs the thread CPU time of each phase of
// BenchmarkCNNPhases and of a whole FashionCNN step, on one thread
// (LANES_CPUTIME=1 go test -run CNNPhasesCPU -v ./nn/).
func TestCNNPhasesCPU(t *testing.T) {
	cputime.Need(t)
	var vs []cputime.Variant
	for _, p := range cnnPhases() {
		vs = append(vs, cputime.Variant{Name: p.name, F: p.f})
	}
	r := rand.New(rand.NewPCG(1, 2))
	s := newTrainer(FashionCNN(r), r, 64, 1, 28, 28)
	vs = append(vs, cputime.Variant{Name: "step", F: func() { s.step() }})
	med := cputime.Compare(t, 5, 3, vs...)
	var sum time.Duration
	for _, m := range med[:len(med)-1] {
		sum += m
	}
	t.Logf("phases sum %.3f ms, step %.3f ms", cputime.Ms(sum), cputime.Ms(med[len(med)-1]))
}

// TestConvPoolCPU times a FashionCNN step with Sequential's fused
// Conv2DMaxPool and with the separate Conv2D and MaxPool2D, by thread CPU
// time on one thread.
func TestConvPoolCPU(t *testing.T) {
	cputime.Need(t)
	defer func() { convPoolOn = true }()
	r := rand.New(rand.NewPCG(1, 2))
	s := newTrainer(FashionCNN(r), r, 64, 1, 28, 28)
	on := func(v bool) func() { return func() { convPoolOn = v; s.step() } }
	cputime.Compare(t, 9, 3, cputime.Variant{Name: "step/Conv2DMaxPool", F: on(true)},
		cputime.Variant{Name: "step/Conv2D, MaxPool2D", F: on(false)})
}

// TestPoolBiasCPU times a FashionCNN step with the conv bias gradients
// summed by the pooling (see convBiasSums) and over the full-size
// gradients, by thread CPU time on one thread, with the convolutions and
// poolings unfused (fused, the bias gradient is always the pooled one).
func TestPoolBiasCPU(t *testing.T) {
	cputime.Need(t)
	defer func() { poolBiasOn, convPoolOn = true, true }()
	convPoolOn = false
	r := rand.New(rand.NewPCG(1, 2))
	s := newTrainer(FashionCNN(r), r, 64, 1, 28, 28)
	on := func(v bool) func() { return func() { poolBiasOn = v; s.step() } }
	cputime.Compare(t, 9, 3, cputime.Variant{Name: "step/pool sums bias", F: on(true)},
		cputime.Variant{Name: "step/bias over full gradient", F: on(false)})
}
