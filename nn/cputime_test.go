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
