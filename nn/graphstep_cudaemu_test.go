//go:build cudaemu

package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/cudaplugin"
	"github.com/lanesgo/lanes/tensor"
)

// graphRun is a model trained on the emulated device on random batches
// through Batches.To (two device buffers, so two graphs), eagerly or
// with a GraphStep.
type graphRun struct {
	m    Module
	opt  Optimizer
	b    *Batches
	tp   *Tape
	gs   *GraphStep
	step func(x, y *tensor.Tensor) *Var
}

// newGraphRun makes the run of model on dev: n random rows (labels
// 0..9), batches of batch rows, the optimizer opt: "sgd" (with
// momentum), "adam", "nadam", "radam" or "adagrad".
func newGraphRun(t *testing.T, dev tensor.Device, model func(*rand.Rand) Module, xs []int, n, batch int, opt string) *graphRun {
	t.Helper()
	r := rand.New(rand.NewPCG(4, 21))
	m := model(r)
	x := tensor.RandN(r, append([]int{n}, xs[1:]...)...)
	y := tensor.New(n)
	for i := range y.Data() {
		y.Data()[i] = float32(r.IntN(10))
	}
	if err := To(m, dev); err != nil {
		t.Fatal(err)
	}
	b := NewBatches(x, y, batch, r)
	b.DropLast = true
	if err := b.To(dev); err != nil {
		t.Fatal(err)
	}
	s := &graphRun{m: m, b: b, tp: NewTape()}
	switch ps := Params(m); opt {
	case "sgd":
		sgd := NewSGD(ps, 0.05)
		sgd.Momentum = 0.9
		s.opt = sgd
	case "adam":
		s.opt = NewAdam(ps, 1e-3)
	case "nadam":
		s.opt = NewNAdam(ps, 2e-3)
	case "radam": // rectified from its 6th step
		s.opt = NewRAdam(ps, 1e-3)
	case "adagrad":
		s.opt = NewAdagrad(ps, 1e-2)
	default:
		t.Fatalf("no optimizer %q", opt)
	}
	s.step = func(x, y *tensor.Tensor) *Var {
		s.tp.Reset()
		loss := s.tp.CrossEntropy(s.m.Forward(s.tp, s.tp.Const(x)), y)
		s.opt.ZeroGrad()
		s.tp.Backward(loss)
		s.opt.Step()
		return loss
	}
	s.gs = NewGraphStep(s.tp, s.step)
	return s
}

// next returns the next batch, starting a new epoch at the end of one.
func (s *graphRun) next(t *testing.T) (x, y *tensor.Tensor) {
	t.Helper()
	x, y, ok := s.b.Next()
	if !ok {
		if err := s.b.Err(); err != nil {
			t.Fatal(err)
		}
		s.b.Reset()
		x, y, _ = s.b.Next()
	}
	return x, y
}

// params returns the model's parameters on the host.
func (s *graphRun) params(t *testing.T) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, p := range Params(s.m) {
		h, err := p.Value().To(tensor.CPU)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Data())
	}
	return out
}

func openEmulated(t *testing.T) *cudaplugin.GPU {
	t.Helper()
	g, err := cudaplugin.Open(0)
	if err != nil {
		t.Skipf("no emulated device: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestGraphStepEmulated trains the Fashion MLP and CNN for several steps
// eagerly and with a GraphStep (the first two steps eager, the third
// captured on one batch buffer, the fourth on the other, the rest
// replayed) on the emulated
// device: the losses and the parameters must be the same bit for bit.
// After the captures a step issues one graph launch from Go and no
// kernel launch, memset or synchronization but the error word's read;
// the device's memory does not grow across the replays.
func TestGraphStepEmulated(t *testing.T) {
	g := openEmulated(t)
	dev := g.Device()
	for _, c := range models {
		opts := []string{"sgd", "adam"}
		if c.name != "cnn" { // the optimizers that count their steps, on the MLP
			opts = append(opts, "nadam", "radam", "adagrad")
		}
		for _, opt := range opts {
			t.Run(c.name+"/"+opt, func(t *testing.T) { graphStepEmulated(t, dev, c.name, c.model, c.x, opt) })
		}
	}
}

func graphStepEmulated(t *testing.T, dev tensor.Device, model string, newModel func(*rand.Rand) Module, xs []int, opt string) {
	{
		{
			batch, n, steps := 16, 48, 12
			if model == "cnn" {
				batch, n, steps = 4, 12, 8
			}
			eager := newGraphRun(t, dev, newModel, xs, n, batch, opt)
			graphs := newGraphRun(t, dev, newModel, xs, n, batch, opt)
			// The factors of the step counts (Adam's corrections...): one
			// more copy a step, before the launch.
			copies := int64(1)
			if opt != "sgd" {
				copies = 2
			}
			var mem []tensor.MemStats
			var allocSteps []string
			for i := range steps {
				ex, ey := eager.next(t)
				eb := cudaplugin.EmulatedCounts()
				wantLoss := eager.step(ex, ey).Value()
				if i == 4 {
					t.Logf("eager step: the host issued %+v", EmulatorDelta(eb, cudaplugin.EmulatedCounts()))
				}
				want := wantLoss.Item()
				gx, gy := graphs.next(t)
				before := cudaplugin.EmulatedCounts()
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				loss, err := graphs.gs.Run(gx, gy)
				runtime.ReadMemStats(&ms1)
				after := cudaplugin.EmulatedCounts()
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := loss.Item(); math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("step %d: loss %v with graphs, %v eagerly", i, got, want)
				}
				if i >= 4 {
					d := EmulatorDelta(before, after)
					if i == 4 {
						t.Logf("replayed step: the host issued %+v", d)
					}
					// Steps 2 and 4 capture (one graph per buffer).
					// A collection in the step empties the sync.Pools
					// (tensor's loop states), which the step then refills:
					// such a step is not held to zero. Mallocs counts the
					// whole process (the runtime's own, under load, too):
					// one replayed step of the run may allocate.
					if i > 4 && ms1.Mallocs != ms0.Mallocs && ms1.NumGC == ms0.NumGC {
						allocSteps = append(allocSteps, fmt.Sprintf("step %d: %d", i, ms1.Mallocs-ms0.Mallocs))
					}
					if d.GraphLaunches != 1 || d.Launches != 0 || d.Memsets != 0 || d.Syncs != 1 || d.Copies != copies {
						t.Errorf("step %d: the host issued %+v, want 1 graph launch, %d copies and 1 synchronization (the error word) and no kernel launch or memset", i, d, copies)
					}
					ms, err := tensor.MemoryStats(dev)
					if err != nil {
						t.Fatal(err)
					}
					mem = append(mem, ms)
				}
			}
			if len(allocSteps) > 1 {
				t.Errorf("replayed steps made host allocations (want 0): %v", allocSteps)
			} else if len(allocSteps) == 1 {
				t.Logf("one replayed step allocated (tolerated): %v", allocSteps)
			}
			if got := graphs.gs.Graphs(); got != 2 {
				t.Errorf("%d graphs captured, want 2 (one per batch buffer)", got)
			}
			for i, ms := range mem[1:] {
				// InUse moves with the collection of the eager run's
				// garbage; the device's memory is Reserved.
				if ms.Reserved != mem[0].Reserved || ms.DeviceAllocs != mem[0].DeviceAllocs {
					t.Errorf("replay %d: memory %+v, after the first replay %+v", i+1, ms, mem[0])
				}
			}
			want, got := eager.params(t), graphs.params(t)
			for i := range want {
				for j := range want[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("parameter %d element %d: %v with graphs, %v eagerly", i, j, got[i][j], want[i][j])
					}
				}
			}
			if es, gs := stepCounts(eager.opt), stepCounts(graphs.opt); opt != "sgd" {
				for i := range es {
					if es[i] != gs[i] || es[i] != int64(steps) {
						t.Fatalf("%s's step counts: %v with graphs, %v eagerly, want %d", opt, gs, es, steps)
					}
				}
			}
			if opt == "nadam" {
				if es, gs := eager.opt.(*NAdam).muProduct, graphs.opt.(*NAdam).muProduct; !slices.Equal(es, gs) {
					t.Fatalf("NAdam's μ products: %v with graphs, %v eagerly", gs, es)
				}
			}
			if err := graphs.gs.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// stepCounts returns the step counts of opt, an optimizer that counts
// them (nil for another).
func stepCounts(opt Optimizer) []int64 {
	switch o := opt.(type) {
	case *Adam:
		return o.steps
	case *NAdam:
		return o.steps
	case *RAdam:
		return o.steps
	case *Adagrad:
		return o.steps
	}
	return nil
}

// EmulatorDelta is after - before.
func EmulatorDelta(before, after cudaplugin.EmulatorCounts) cudaplugin.EmulatorCounts {
	return cudaplugin.EmulatorCounts{Launches: after.Launches - before.Launches, Memsets: after.Memsets - before.Memsets,
		Copies: after.Copies - before.Copies, Syncs: after.Syncs - before.Syncs, GraphLaunches: after.GraphLaunches - before.GraphLaunches}
}

// TestGraphStepErrorsEmulated: a bad label in a replayed step is reported
// by Run after the step, and graph mode goes on; a batch of another shape
// ends graph mode with an error and the step runs eagerly; a step that
// reads the loss back (a synchronization) or Dropout (whose seed the host
// draws each step) cannot be captured: graph mode ends with the error, the
// step having run eagerly.
func TestGraphStepErrorsEmulated(t *testing.T) {
	g := openEmulated(t)
	dev := g.Device()
	c := models[0] // mlp

	t.Run("bad label", func(t *testing.T) {
		s := newGraphRun(t, dev, c.model, c.x, 48, 16, "sgd")
		for i := range 4 {
			x, y := s.next(t)
			if _, err := s.gs.Run(x, y); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		x, y := s.next(t)
		tensor.CopyInto(y.Slice(0, 2, 3, 1), mustOn(t, tensor.FromSlice([]float32{11}, 1), dev))
		loss, err := s.gs.Run(x, y)
		if err == nil || !strings.Contains(err.Error(), "11") || !strings.Contains(err.Error(), "names no element") {
			t.Fatalf("a replayed step with label 11: error %v, want one naming the label", err)
		}
		if l := loss.Item(); !math.IsNaN(float64(l)) {
			t.Errorf("loss of the step with a bad label %v, want NaN", l)
		}
		if s.gs.Graphs() != 2 {
			t.Errorf("graphs after a bad label: %d, want 2 (graph mode goes on)", s.gs.Graphs())
		}
		x, y = s.next(t)
		if _, err := s.gs.Run(x, y); err != nil {
			t.Errorf("the step after the bad label: %v", err)
		}
	})

	t.Run("shape change", func(t *testing.T) {
		s := newGraphRun(t, dev, c.model, c.x, 48, 16, "sgd")
		for i := range 3 {
			x, y := s.next(t)
			if _, err := s.gs.Run(x, y); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		x, y := s.next(t)
		loss, err := s.gs.Run(x.Slice(0, 0, 8, 1), y.Slice(0, 0, 8, 1))
		if err == nil || !strings.Contains(err.Error(), "graph mode ended") || !strings.Contains(err.Error(), "shapes") {
			t.Fatalf("a batch of 8 rows after batches of 16: error %v, want graph mode ended by the shapes", err)
		}
		if s.gs.Graphs() != 0 || math.IsNaN(float64(loss.Item())) {
			t.Errorf("after the shape change: %d graphs, loss %v; want 0 and the eager step's loss", s.gs.Graphs(), loss.Item())
		}
		x, y = s.next(t)
		if _, err := s.gs.Run(x, y); err != nil {
			t.Errorf("a step after graph mode ended: %v, want it run eagerly", err)
		}
	})

	for _, bad := range []struct {
		name, want    string
		dropout, item bool
	}{
		{"Dropout", "Dropout cannot be captured", true, false},
		{"Item", "needed the host", false, true},
	} {
		t.Run(bad.name, func(t *testing.T) {
			s := newGraphRun(t, dev, c.model, c.x, 48, 16, "sgd")
			ref := newGraphRun(t, dev, c.model, c.x, 48, 16, "sgd")
			for _, run := range []*graphRun{s, ref} {
				run := run
				r := rand.New(rand.NewPCG(7, 7))
				run.step = func(x, y *tensor.Tensor) *Var {
					run.tp.Reset()
					in := run.tp.Const(x)
					if bad.dropout {
						in = run.tp.Dropout(in, 0.1, r)
					}
					loss := run.tp.CrossEntropy(run.m.Forward(run.tp, in), y)
					run.opt.ZeroGrad()
					run.tp.Backward(loss)
					run.opt.Step()
					if bad.item {
						loss.Value().Item()
					}
					return loss
				}
			}
			s.gs = NewGraphStep(s.tp, s.step)
			var ended bool
			for i := range 4 {
				x, y := s.next(t)
				loss, err := s.gs.Run(x, y)
				if i == 2 {
					ended = err != nil && strings.Contains(err.Error(), bad.want)
					if !ended {
						t.Errorf("capture of a step with %s: error %v, want %q", bad.name, err, bad.want)
					}
				} else if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				rx, ry := ref.next(t)
				want := ref.step(rx, ry).Value().Item()
				// A failed capture has drawn Dropout's seed: the random
				// streams part (host state is not rolled back).
				if got := loss.Item(); !bad.dropout && math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("step %d: loss %v, eagerly %v", i, got, want)
				}
			}
			if s.gs.Graphs() != 0 {
				t.Errorf("%d graphs, want none", s.gs.Graphs())
			}
		})
	}
}

func mustOn(t *testing.T, x *tensor.Tensor, dev tensor.Device) *tensor.Tensor {
	t.Helper()
	d, err := x.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
