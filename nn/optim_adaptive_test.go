package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// optimRef is testdata/optimref.json, written by testdata/optimref.py
// with PyTorch: optimizer trajectories in float64 and learning-rate
// schedules.
type optimRef struct {
	Optim []struct {
		Name, Source string
		P0           []float64
		Grads, Want  [][]float64
		Sizes        []int
	}
	Schedules []struct {
		Name    string
		Metrics []float64
		LR      []float64
	}
}

func loadOptimRef(t *testing.T) optimRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "optimref.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref optimRef
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// torchOptimizers make the optimizers of optimref.py's cases over the
// parameters of its sizes (ps holds one Var for each).
var torchOptimizers = map[string]func(ps []*Var) Optimizer{
	"Adagrad": func(ps []*Var) Optimizer { return NewAdagrad(ps, 0.05) },
	"Adagrad/lr_decay+wd+init": func(ps []*Var) Optimizer {
		o := NewAdagrad(ps, 0.05)
		o.LRDecay, o.WeightDecay, o.InitialAccumulatorValue, o.Eps = 0.1, 0.05, 0.3, 1e-6
		return o
	},
	"Adamax": func(ps []*Var) Optimizer { return NewAdamax(ps, 2e-3) },
	"Adamax/wd": func(ps []*Var) Optimizer {
		o := NewAdamax(ps, 1e-2)
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay = 0.8, 0.99, 1e-6, 0.1
		return o
	},
	"RAdam": func(ps []*Var) Optimizer { return NewRAdam(ps, 1e-2) },
	"RAdam/wd": func(ps []*Var) Optimizer {
		o := NewRAdam(ps, 1e-2)
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay = 0.8, 0.9, 1e-6, 0.1
		return o
	},
	"Adam/amsgrad": func(ps []*Var) Optimizer {
		o := NewAdam(ps, 1e-2)
		o.AMSGrad = true
		return o
	},
	"AdamW/amsgrad": func(ps []*Var) Optimizer {
		o := NewAdamW(ps, 1e-2)
		o.Beta1, o.Beta2, o.WeightDecay, o.AMSGrad = 0.8, 0.9, 0.1, true
		return o
	},
	"SGD/groups": func(ps []*Var) Optimizer {
		o := NewSGD(ps, 0.1)
		o.Momentum, o.WeightDecay = 0.9, 0.01
		o.SetGroups(ParamGroup{Params: ps[:1]}, ParamGroup{Params: ps[1:], LRScale: 0.25, OwnDecay: true})
		return o
	},
	"Adam/groups": func(ps []*Var) Optimizer {
		o := NewAdam(ps, 1e-2)
		o.WeightDecay = 0.1
		o.SetGroups(ParamGroup{Params: ps[:1], LRScale: 2}, ParamGroup{Params: ps[1:], WeightDecay: 0.5, OwnDecay: true})
		return o
	},
	"NAdam": func(ps []*Var) Optimizer { return NewNAdam(ps, 2e-3) },
	"NAdam/wd": func(ps []*Var) Optimizer {
		o := NewNAdam(ps, 1e-2)
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay, o.MomentumDecay = 0.8, 0.99, 1e-6, 0.1, 0.05
		return o
	},
}

// TestOptimizersMatchTorch runs the optimizers over PyTorch's trajectories
// (8 steps, parameter groups included; a zero and a large gradient
// element) and checks every step's parameters within 1e-5 relative.
func TestOptimizersMatchTorch(t *testing.T) {
	ref := loadOptimRef(t)
	if len(ref.Optim) != len(torchOptimizers) {
		t.Fatalf("%d cases in optimref.json, %d here", len(ref.Optim), len(torchOptimizers))
	}
	for _, c := range ref.Optim {
		t.Run(c.Name, func(t *testing.T) {
			mk, ok := torchOptimizers[c.Name]
			if !ok {
				t.Fatalf("no optimizer for %q", c.Name)
			}
			var ps []*Var
			off := 0
			for _, n := range c.Sizes {
				ps = append(ps, NewParam(tensor.FromSlice(f32s(c.P0[off:off+n]), n)))
				off += n
			}
			opt := mk(ps)
			for step, g := range c.Grads {
				opt.ZeroGrad()
				off := 0
				for _, p := range ps {
					n := p.value.Len()
					p.grad, p.gradOK = tensor.FromSlice(f32s(g[off:off+n]), n), true
					off += n
				}
				opt.Step()
				got := []float32{}
				for _, p := range ps {
					got = append(got, p.value.Data()...)
				}
				for i, w := range c.Want[step] {
					if d := math.Abs(float64(got[i]) - w); !(d <= 1e-5*math.Max(1, math.Abs(w))) {
						t.Fatalf("step %d element %d: %v, %s %v", step+1, i, got[i], c.Source, w)
					}
				}
			}
		})
	}
}

func f32s(x []float64) []float32 {
	s := make([]float32, len(x))
	for i, v := range x {
		s[i] = float32(v)
	}
	return s
}

// torchSchedules give optimref.py's schedules, with a base rate of 1.
var torchSchedules = map[string]Schedule{
	"OneCycle": NewOneCycle(0.1, 20),
	"OneCycle/linear+pct+div": func() Schedule {
		s := NewOneCycle(0.5, 17)
		s.PctStart, s.Linear, s.DivFactor, s.FinalDivFactor = 0.4, true, 10, 100
		return s
	}(),
	"OneCycle/three_phase": func() Schedule {
		s := NewOneCycle(0.2, 23)
		s.ThreePhase = true
		return s
	}(),
	"CosineWarmRestarts":        CosineWarmRestarts{Base: 1, Min: 0.01, T0: 5},
	"CosineWarmRestarts/T_mult": CosineWarmRestarts{Base: 1, T0: 3, TMult: 2},
	"LinearLR":                  LinearLR{Base: 1, StartFactor: 0.25, EndFactor: 1, Iters: 6},
}

// torchPlateaus make optimref.py's ReduceLROnPlateau settings.
var torchPlateaus = map[string]func(*ReduceLROnPlateau){
	"Plateau/min": func(s *ReduceLROnPlateau) { s.Patience = 2 },
	"Plateau/min+abs+cooldown": func(s *ReduceLROnPlateau) {
		s.Factor, s.Patience, s.Threshold, s.AbsThreshold, s.Cooldown, s.MinLR = 0.5, 1, 0.05, true, 2, 0.3
	},
	"Plateau/max+rel": func(s *ReduceLROnPlateau) { s.Max, s.Factor, s.Patience, s.Threshold = true, 0.3, 0, 0.01 },
}

// TestSchedulesMatchTorch checks the schedules' learning rates, step by
// step, against PyTorch's within 1e-6 relative (float32 rounding).
func TestSchedulesMatchTorch(t *testing.T) {
	ref := loadOptimRef(t)
	if len(ref.Schedules) != len(torchSchedules)+len(torchPlateaus) {
		t.Fatalf("%d schedules in optimref.json, %d here", len(ref.Schedules), len(torchSchedules)+len(torchPlateaus))
	}
	for _, c := range ref.Schedules {
		t.Run(c.Name, func(t *testing.T) {
			var got []float32
			if set, ok := torchPlateaus[c.Name]; ok {
				opt := NewSGD([]*Var{NewParam(tensor.New(1))}, 1)
				s := NewReduceLROnPlateau(opt)
				set(s)
				for _, m := range c.Metrics {
					got = append(got, opt.LR())
					s.Step(m)
				}
			} else {
				s, ok := torchSchedules[c.Name]
				if !ok {
					t.Fatalf("no schedule for %q", c.Name)
				}
				for step := range c.LR {
					got = append(got, s.At(step))
				}
			}
			for i, w := range c.LR {
				if d := math.Abs(float64(got[i]) - w); !(d <= 1e-6*math.Abs(w)+1e-12) {
					t.Fatalf("step %d: %v, PyTorch %v (all: %v)", i, got[i], w, got)
				}
			}
		})
	}
}

// TestScheduleEdges checks OneCycle's momentum, SequentialLR, the
// schedules' panics and CosineWarmRestarts' TMult 0 and 1 alike.
func TestScheduleEdges(t *testing.T) {
	oc := NewOneCycle(1, 10) // phase 1 ends at step 2
	for _, c := range []struct {
		step int
		want float64
	}{{0, 0.95}, {2, 0.85}, {10, 0.95 - 0.1*(1+math.Cos(math.Pi*8/7))/2}} {
		if got := oc.MomentumAt(c.step); math.Abs(float64(got)-c.want) > 1e-7 {
			t.Errorf("OneCycle.MomentumAt(%d) = %v, want %v", c.step, got, c.want)
		}
	}
	seq := SequentialLR{Schedules: []Schedule{LinearLR{Base: 1, StartFactor: 0.5, EndFactor: 1, Iters: 2}, StepLR{Base: 1, Gamma: 0.5, Every: 1}}, Milestones: []int{2}}
	for step, want := range []float32{0.5, 0.75, 1, 0.5, 0.25} {
		if got := seq.At(step); got != want {
			t.Errorf("SequentialLR.At(%d) = %v, want %v", step, got, want)
		}
	}
	for step := range 12 {
		if a, b := (CosineWarmRestarts{Base: 1, T0: 4}).At(step), (CosineWarmRestarts{Base: 1, T0: 4, TMult: 1}).At(step); a != b {
			t.Errorf("CosineWarmRestarts step %d: TMult 0 %v, 1 %v", step, a, b)
		}
	}
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"nn: OneCycle.At: step 11 of TotalSteps 10", func() { oc.At(11) }},
		{"nn: OneCycle.MomentumAt: step -1 of TotalSteps 10", func() { oc.MomentumAt(-1) }},
		{"nn: CosineWarmRestarts.At: step 0, T0 0, TMult 0", func() { CosineWarmRestarts{}.At(0) }},
		{"nn: LinearLR.At: step 0, Iters 0", func() { LinearLR{}.At(0) }},
		{"nn: SequentialLR.At: 1 schedules for 1 milestones", func() { SequentialLR{Schedules: []Schedule{oc}, Milestones: []int{1}}.At(0) }},
		{"nn: ReduceLROnPlateau.Step: Factor 1", func() {
			s := NewReduceLROnPlateau(NewSGD(nil, 1))
			s.Factor = 1
			s.Step(0)
		}},
	} {
		if msg := panicMessage(c.f); !strings.HasPrefix(msg, c.want) {
			t.Errorf("panic %q, want it to start with %q", msg, c.want)
		}
	}
}

// TestPlateauCheckpoint runs ReduceLROnPlateau over 20 metrics straight,
// and again stopping after k of them, saving its state with an
// optimizer's checkpoint, loading both into fresh objects and going on:
// the learning rates must be the same bits.
func TestPlateauCheckpoint(t *testing.T) {
	metrics := []float64{1, 0.9, 0.95, 0.9, 0.91, 0.9, 0.9, 0.5, 0.6, 0.7, 0.8, 0.5, 0.5, 0.5, math.NaN(), 0.5, 0.5, 0.5, 0.4, 0.4}
	m := NewLinear(2, 2, rand.New(rand.NewPCG(1, 1)))
	set := func(s *ReduceLROnPlateau) { s.Factor, s.Patience, s.Cooldown, s.MinLR = 0.3, 1, 1, 1e-3 }
	run := func(opt Optimizer, s *ReduceLROnPlateau, ms []float64) (lrs []float32) {
		for _, x := range ms {
			s.Step(x)
			lrs = append(lrs, opt.LR())
		}
		return lrs
	}
	opt := NewSGD(Params(m), 1)
	s := NewReduceLROnPlateau(opt)
	set(s)
	want := run(opt, s, metrics)
	for _, k := range []int{0, 3, 8, 15} {
		opt1 := NewSGD(Params(m), 1)
		s1 := NewReduceLROnPlateau(opt1)
		set(s1)
		got := run(opt1, s1, metrics[:k])
		js, err := json.Marshal(s1)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "ckpt.safetensors")
		if err := SaveCheckpoint(path, m, opt1, nil, map[string]string{"plateau": string(js)}); err != nil {
			t.Fatal(err)
		}
		opt2 := NewSGD(Params(m), 1)
		s2 := NewReduceLROnPlateau(opt2)
		meta, err := LoadCheckpoint(path, m, opt2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(meta["plateau"]), s2); err != nil {
			t.Fatal(err)
		}
		got = append(got, run(opt2, s2, metrics[k:])...)
		if !slices.Equal(got, want) {
			t.Errorf("resumed after %d: %v, want %v", k, got, want)
		}
	}
	if err := json.Unmarshal([]byte(`{"best":"x"}`), s); err == nil {
		t.Error("a malformed state: no error")
	}
}

// TestClipGradValue checks ClipGradValue against clamping in float64,
// NaN kept and infinities clipped, parameters without gradient skipped,
// and its panics.
func TestClipGradValue(t *testing.T) {
	a, b := NewParam(tensor.New(6)), NewParam(tensor.New(2))
	g := []float32{-3, -0.5, 0, 0.25, float32(math.Inf(1)), float32(math.NaN())}
	a.grad, a.gradOK = tensor.FromSlice(slices.Clone(g), 6), true
	ClipGradValue([]*Var{a, b}, 0.5)
	for i, v := range a.grad.Data() {
		w := math.Max(-0.5, math.Min(0.5, float64(g[i])))
		if math.IsNaN(float64(g[i])) {
			if !math.IsNaN(float64(v)) {
				t.Errorf("element %d: NaN became %v", i, v)
			}
			continue
		}
		if float64(v) != w {
			t.Errorf("element %d: %v clipped to %v, want %v", i, g[i], v, w)
		}
	}
	if b.gradOK {
		t.Error("a parameter without gradient got one")
	}
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"nn: ClipGradValue: clip -1 (want >= 0)", func() { ClipGradValue([]*Var{a}, -1) }},
		{"nn: ClipGradValue: clip NaN (want >= 0)", func() { ClipGradValue([]*Var{a}, float32(math.NaN())) }},
		{"nn: ClipGradValue: parameter 1 of 2 is nil", func() { ClipGradValue([]*Var{a, nil}, 1) }},
	} {
		if msg := panicMessage(c.f); msg != c.want {
			t.Errorf("panic %q, want %q", msg, c.want)
		}
	}
}

// TestSetGroupsErrors checks SetGroups' panics.
func TestSetGroupsErrors(t *testing.T) {
	ps := []*Var{NewParam(tensor.New(2)), NewParam(tensor.New(3)), NewParam(tensor.New(1))}
	o := NewSGD(ps, 1)
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"nn: SetGroups: group 1: parameter 0 is not the optimizer's parameter 1 (the groups must list the optimizer's parameters in order)",
			func() { o.SetGroups(ParamGroup{Params: ps[:1]}, ParamGroup{Params: ps[2:]}) }},
		{"nn: SetGroups: the groups hold 2 parameters, the optimizer 3", func() { o.SetGroups(ParamGroup{Params: ps[:2]}) }},
		{"nn: SetGroups: group 1: parameter 0 is beyond the optimizer's 3 parameters",
			func() { o.SetGroups(ParamGroup{Params: ps}, ParamGroup{Params: ps[:2]}) }},
		{"nn: SetGroups: group 0: LRScale -1 (want finite and >= 0)", func() { o.SetGroups(ParamGroup{Params: ps, LRScale: -1}) }},
		{"nn: SetGroups: group 0: WeightDecay NaN", func() { o.SetGroups(ParamGroup{Params: ps, WeightDecay: float32(math.NaN())}) }},
	} {
		if msg := panicMessage(c.f); msg != c.want {
			t.Errorf("panic %q, want %q", msg, c.want)
		}
	}
}

// The new optimizers, AMSGrad and parameter groups join TestCheckpointResume.
func init() {
	checkpointOptimizers = append(checkpointOptimizers, []struct {
		name           string
		make, defaults func([]*Var) Optimizer
	}{
		{"Adagrad", func(ps []*Var) Optimizer {
			o := NewAdagrad(ps, 0.05)
			o.LRDecay, o.WeightDecay, o.InitialAccumulatorValue = 0.01, 1e-3, 0.1
			return o
		}, func(ps []*Var) Optimizer { return NewAdagrad(ps, 1) }},
		{"Adamax", func(ps []*Var) Optimizer {
			o := NewAdamax(ps, 0.01)
			o.Beta1, o.WeightDecay = 0.8, 1e-4
			return o
		}, func(ps []*Var) Optimizer { return NewAdamax(ps, 1) }},
		{"NAdam", func(ps []*Var) Optimizer {
			o := NewNAdam(ps, 0.01)
			o.MomentumDecay, o.WeightDecay, o.Decoupled = 0.01, 1e-2, true
			return o
		}, func(ps []*Var) Optimizer { return NewNAdam(ps, 1) }},
		{"RAdam", func(ps []*Var) Optimizer {
			o := NewRAdam(ps, 0.01)
			o.Beta2, o.WeightDecay = 0.99, 1e-3
			return o
		}, func(ps []*Var) Optimizer { return NewRAdam(ps, 1) }},
		{"AdamAMSGrad", func(ps []*Var) Optimizer {
			o := NewAdamW(ps, 0.01)
			o.AMSGrad = true
			return o
		}, func(ps []*Var) Optimizer {
			o := NewAdam(ps, 1)
			o.AMSGrad = true
			return o
		}},
		{"SGDGroups", func(ps []*Var) Optimizer {
			o := NewSGD(ps, 0.05)
			o.Momentum, o.WeightDecay = 0.9, 1e-3
			o.SetGroups(ParamGroup{Params: ps[:2], LRScale: 0.5}, ParamGroup{Params: ps[2:], WeightDecay: 0.01, OwnDecay: true})
			return o
		}, func(ps []*Var) Optimizer {
			o := NewSGD(ps, 1)
			o.SetGroups(ParamGroup{Params: ps[:2]}, ParamGroup{Params: ps[2:]})
			return o
		}},
	}...)
}

// TestCheckpointGroupsAMSGradMismatch checks that LoadCheckpoint refuses
// another AMSGrad setting and other group sizes.
func TestCheckpointGroupsAMSGradMismatch(t *testing.T) {
	m := NewLinear(3, 2, rand.New(rand.NewPCG(3, 3)))
	ps := Params(m)
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	o := NewAdam(ps, 1)
	o.AMSGrad = true
	if err := SaveCheckpoint(path, m, o, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(path, m, NewAdam(ps, 1), nil); err == nil || !strings.Contains(err.Error(), "the file's has AMSGrad true, this one false") {
		t.Errorf("AMSGrad mismatch: %v", err)
	}
	s := NewSGD(ps, 1)
	s.SetGroups(ParamGroup{Params: ps[:1]}, ParamGroup{Params: ps[1:]})
	if err := SaveCheckpoint(path, m, s, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("the file's parameter groups have [1 %d] parameters, this one's [%d]", len(ps)-1, len(ps))
	if _, err := LoadCheckpoint(path, m, NewSGD(ps, 1), nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("group mismatch: %v", err)
	}
}

// TestOptimizerStepAllocs checks that a Step of every optimizer of
// torchOptimizers (parameter groups and AMSGrad included) allocates
// nothing in steady state.
func TestOptimizerStepAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops items")
	}
	r := rand.New(rand.NewPCG(9, 9))
	for name, mk := range torchOptimizers {
		ps := []*Var{NewParam(tensor.RandN(r, 3)), NewParam(tensor.RandN(r, 40, 40)), NewParam(tensor.RandN(r, 4))}
		for _, p := range ps {
			p.grad, p.gradOK = tensor.RandN(r, p.value.Shape()...), true
		}
		opt := mk(ps)
		opt.Step()
		if n := testing.AllocsPerRun(10, opt.Step); n != 0 {
			t.Errorf("%s: %v allocations a step", name, n)
		}
	}
}
