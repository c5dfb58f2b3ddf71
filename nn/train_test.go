package nn

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// The two Fashion-MNIST models of nn/cmd/fashion, on random data here.
func mlp(r *rand.Rand) Module { return FashionMLP(r) }
func cnn(r *rand.Rand) Module { return FashionCNN(r) }

// models are the two models with their input shapes (batch 64).
var models = []struct {
	name  string
	model func(*rand.Rand) Module
	x     []int
}{{"mlp", mlp, []int{64, 28, 28}}, {"cnn", cnn, []int{64, 1, 28, 28}}}

// trainer runs training steps of a model on fixed random batches.
type trainer struct {
	m    Module
	opt  Optimizer
	tp   *Tape
	x, y *tensor.Tensor
}

func newTrainer(m Module, r *rand.Rand, xShape ...int) *trainer {
	y := tensor.New(xShape[0])
	for i := range y.Data() {
		y.Data()[i] = float32(r.IntN(10))
	}
	return &trainer{m: m, opt: NewAdam(Params(m), 1e-3), tp: NewTape(), x: tensor.RandN(r, xShape...), y: y}
}

func (s *trainer) step() float32 {
	tp := s.tp
	tp.Reset()
	loss := tp.CrossEntropy(s.m.Forward(tp, tp.Const(s.x)), s.y)
	s.opt.ZeroGrad()
	tp.Backward(loss)
	s.opt.Step()
	return loss.Value().Item()
}

// TestSteadyStateAllocs checks that after warm-up a training step makes no
// new tensor buffers: over 100 steps of each model, runtime.MemStats must
// show under 1 KiB allocated in nearly every step, less than the smallest
// tensor a step uses (the logits, 64·10 floats = 2560 bytes). Up to 3 steps
// may allocate more: the Sgemm and convolution scratch (shared by every
// goroutine, kept in free lists) grows once more whenever more goroutines
// than ever before need it at the same time, which depends on scheduling.
func TestSteadyStateAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 110 steps of each model")
	}
	if raceEnabled {
		t.Skip("-race: the race runtime allocates")
	}
	for _, c := range models {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			s := newTrainer(c.model(r), r, c.x...)
			for range 10 {
				s.step()
			}
			const steps, limit = 100, 1024
			var before, after runtime.MemStats
			var total, mallocs uint64
			var over []uint64
			for range steps {
				runtime.ReadMemStats(&before)
				s.step()
				runtime.ReadMemStats(&after)
				d := after.TotalAlloc - before.TotalAlloc
				total += d
				mallocs += after.Mallocs - before.Mallocs
				if d >= limit {
					over = append(over, d)
				}
			}
			t.Logf("%d steps: %d bytes in %d allocations; steps over %d bytes: %v", steps, total, mallocs, limit, over)
			if len(over) > 3 {
				t.Errorf("%d of %d steps allocated %d bytes or more: %v", len(over), steps, limit, over)
			}
		})
	}
}

func BenchmarkTrainStep(b *testing.B) {
	for _, c := range models {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			s := newTrainer(c.model(r), r, c.x...)
			s.step()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s.step()
			}
		})
	}
}
