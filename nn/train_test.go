package nn

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/lanesgo/lanes/dist"
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
// Steps in which a garbage collection ran are not counted (see
// checkStepAllocs).
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
			checkStepAllocs(t, 100, 1024, func() { s.step() })
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

// gptTrainer runs training steps of a GPT as nn/cmd/chargpt does: next
// token cross-entropy on fixed random sequences, gradients clipped to
// norm 1, AdamW over DecayGroups, the learning rate from WarmupCosine.
type gptTrainer struct {
	m     *GPT
	opt   *Adam
	tp    *Tape
	sched WarmupCosine
	it    int
	x, y  *tensor.Tensor // [B, T] tokens and [B·T] next tokens
}

func newGPTTrainer(m *GPT, r *rand.Rand, batch int) *gptTrainer {
	t := m.Config.Context
	seq := randTokens(r, m.Config.Vocab, batch, t+1)
	x, y := seq.Slice(1, 0, t, 1).Contiguous(), seq.Slice(1, 1, t+1, 1).Contiguous().Reshape(batch*t)
	decay, noDecay := DecayGroups(m)
	opt := NewAdamWGroups(decay, noDecay, 1e-3)
	opt.WeightDecay = 0.1
	return &gptTrainer{m: m, opt: opt, tp: NewTape(), sched: WarmupCosine{Base: 1e-3, Min: 1e-4, Warmup: 10, Decay: 1000}, x: x, y: y}
}

func (s *gptTrainer) step() float32 {
	tp := s.tp
	tp.Reset()
	logits := s.m.Logits(tp, s.x)
	loss := tp.CrossEntropy(tp.Reshape(logits, s.y.Len(), s.m.Config.Vocab), s.y)
	s.opt.ZeroGrad()
	tp.Backward(loss)
	ClipGradNorm(s.opt.params, 1)
	s.opt.SetLR(s.sched.At(s.it))
	s.opt.Step()
	s.it++
	return loss.Value().Item()
}

// TestGPTSteadyStateAllocs checks that after warm-up a GPT training step
// (forward, cross-entropy, backward, ClipGradNorm, the AdamW groups' step)
// makes no new tensor storage: over 50 steps of the default model (context
// 32, batch 4) every buffer of the tape stays the same, and the heap grows
// by less than 64 KiB a step in nearly every step (the headers of the
// step's Vars and views; a single activation [B·T, Width] is 64 KiB, the
// step's storage several MiB).
func TestGPTSteadyStateAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 55 steps of a GPT")
	}
	if raceEnabled {
		t.Skip("-race: the race runtime allocates")
	}
	r := rand.New(rand.NewPCG(1, 2))
	cfg := DefaultGPTConfig(64)
	cfg.Context = 32
	s := newGPTTrainer(NewGPT(cfg, r), r, 4)
	for range 5 {
		s.step()
	}
	storage := func() []*float32 {
		var ps []*float32
		for _, b := range s.tp.bufs {
			if cap(b.buf) > 0 {
				ps = append(ps, &b.buf[:1][0])
			}
		}
		return ps
	}
	first := storage()
	checkStepAllocs(t, 50, 64<<10, func() { s.step() })
	if !slices.Equal(storage(), first) {
		t.Errorf("the tape's storage changed after warm-up")
	}
}

// checkStepAllocs runs step steps times and fails when more than 3 of
// them allocate limit bytes or more on the heap (runtime.MemStats), the
// few that may grow the shared scratch once more. A step in which a
// garbage collection ran is not counted: the collection empties the
// sync.Pools that the step then refills, which depends on when the
// collector runs, not on the step.
func checkStepAllocs(t *testing.T, steps int, limit uint64, step func()) {
	t.Helper()
	var before, after runtime.MemStats
	var total, mallocs uint64
	var over, gc []uint64
	for range steps {
		runtime.ReadMemStats(&before)
		step()
		runtime.ReadMemStats(&after)
		d := after.TotalAlloc - before.TotalAlloc
		total += d
		mallocs += after.Mallocs - before.Mallocs
		switch {
		case d < limit:
		case after.NumGC != before.NumGC:
			// A collection empties the sync.Pools (tensor's loop
			// states, the scratch free lists' nodes), which the step
			// then refills.
			gc = append(gc, d)
		default:
			over = append(over, d)
		}
	}
	t.Logf("%d steps: %d bytes in %d allocations; steps over %d bytes: %v, and %v in steps a collection ran in", steps, total, mallocs, limit, over, gc)
	if len(over) > 3 {
		t.Errorf("%d of %d steps allocated %d bytes or more with no collection in the step: %v", len(over), steps, limit, over)
	}
}

// BenchmarkTrainStepSplit times the training step of BenchmarkTrainStep
// with its forward and backward passes split by BatchSplit into one part
// per thread (GOMAXPROCS; -cpu 2 gives two halves of 32 rows), one Adam
// step on the shared parameters: the other way to use two threads.
func BenchmarkTrainStepSplit(b *testing.B) {
	for _, c := range models {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			s := newTrainer(c.model(r), r, c.x...)
			split := NewBatchSplit(s.m, runtime.GOMAXPROCS(0), func() Module { return c.model(rand.New(rand.NewPCG(3, 4))) })
			step := func() {
				s.opt.ZeroGrad()
				split.Step(s.x, s.y, func(tp *Tape, m Module, x, y *tensor.Tensor) *Var {
					return tp.CrossEntropy(m.Forward(tp, tp.Const(x)), y)
				})
				s.opt.Step()
			}
			step()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				step()
			}
		})
	}
}

// BenchmarkTrainStepHalves times the training step of BenchmarkTrainStep
// split by batch halves: two ranks of an in-process group (dist.NewLocal),
// each a replica with its own tape and Adam stepping 32 of the 64 rows
// forward and backward, their gradients averaged by DataParallel (in a
// fixed order: bit-reproducible for two ranks). On two threads it is the
// alternative to splitting each operation between the threads.
func BenchmarkTrainStepHalves(b *testing.B) {
	for _, c := range models {
		b.Run(c.name, func(b *testing.B) {
			const ranks = 2
			comms := dist.NewLocal(ranks)
			ss := make([]*trainer, ranks)
			dps := make([]*DataParallel, ranks)
			half := slices.Clone(c.x)
			half[0] /= ranks
			var wg sync.WaitGroup
			for k := range ranks {
				r := rand.New(rand.NewPCG(1, uint64(2+k)))
				ss[k] = newTrainer(c.model(r), r, half...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					var err error
					if dps[k], err = NewDataParallel(ss[k].m, comms[k], 0); err != nil {
						panic(err)
					}
				}()
			}
			wg.Wait()
			step := func() {
				for k := 1; k < ranks; k++ {
					wg.Add(1)
					go func() { defer wg.Done(); ss[k].dpStep(dps[k]) }()
				}
				ss[0].dpStep(dps[0])
				wg.Wait()
			}
			step()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				step()
			}
		})
	}
}

// dpStep is step with the gradients averaged by d.
func (s *trainer) dpStep(d *DataParallel) float32 {
	tp := s.tp
	tp.Reset()
	loss := tp.CrossEntropy(s.m.Forward(tp, tp.Const(s.x)), s.y)
	s.opt.ZeroGrad()
	if err := d.Backward(tp, loss); err != nil {
		panic(err)
	}
	s.opt.Step()
	return loss.Value().Item()
}
