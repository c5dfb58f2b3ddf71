package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The schedules of this file are PyTorch's lr_scheduler classes of the
// same names. Those that are functions of the step (OneCycle,
// CosineWarmRestarts, LinearLR, SequentialLR) are Schedules: apply them
// with opt.SetLR(s.At(step)), where step counts the calls of PyTorch's
// scheduler.step() (0 before the first). ReduceLROnPlateau depends on the
// metrics it was given, not on the step: it is not a Schedule but sets
// its optimizer's learning rate in its own Step(metric), and its state
// goes into a checkpoint's metadata through its MarshalJSON. All compute
// in float64 and round the learning rate once.

// OneCycle is PyTorch's OneCycleLR (Smith's 1cycle policy) over
// TotalSteps steps: from MaxLR/DivFactor up to MaxLR over the first
// PctStart of the steps, then down to MaxLR/DivFactor/FinalDivFactor at
// step TotalSteps-1, annealing along half a cosine (or linearly when
// Linear is set, PyTorch's anneal_strategy="linear"). With ThreePhase it
// goes up over PctStart of the steps, back down to MaxLR/DivFactor over
// as many, and then to the minimum. Phase k ends at step e_k =
// PctStart·TotalSteps - 1 (2·PctStart·TotalSteps - 2 for ThreePhase's
// second, TotalSteps - 1 for the last), and step s in it is at
// (s - e_{k-1})/(e_k - e_{k-1}) of its way (a phase of no length is at
// its end). MomentumAt gives PyTorch's cycled momentum (cycle_momentum,
// to apply to SGD's Momentum or Adam's Beta1 if wanted): MaxMomentum down
// to BaseMomentum while the rate goes up, and back.
type OneCycle struct {
	MaxLR                     float32
	TotalSteps                int
	PctStart                  float64
	DivFactor, FinalDivFactor float64
	Linear, ThreePhase        bool
	BaseMomentum, MaxMomentum float64
}

// NewOneCycle returns OneCycle with PyTorch's defaults: PctStart 0.3,
// DivFactor 25, FinalDivFactor 1e4, cosine annealing in two phases,
// momentum between 0.85 and 0.95.
func NewOneCycle(maxLR float32, totalSteps int) OneCycle {
	return OneCycle{MaxLR: maxLR, TotalSteps: totalSteps, PctStart: 0.3, DivFactor: 25, FinalDivFactor: 1e4, BaseMomentum: 0.85, MaxMomentum: 0.95}
}

// At implements Schedule. It panics when step is outside [0, TotalSteps]
// (PyTorch raises past total_steps), TotalSteps < 1 or PctStart is
// outside [0, 1].
func (s OneCycle) At(step int) float32 {
	initial := float64(s.MaxLR) / s.DivFactor
	lo := initial / s.FinalDivFactor
	if s.ThreePhase {
		return float32(s.phase("At", step, [3]float64{initial, float64(s.MaxLR), initial}, lo))
	}
	return float32(s.phase("At", step, [3]float64{initial, float64(s.MaxLR), lo}, lo))
}

// MomentumAt is the momentum of step (see OneCycle), with At's panics.
func (s OneCycle) MomentumAt(step int) float32 {
	return float32(s.phase("MomentumAt", step, [3]float64{s.MaxMomentum, s.BaseMomentum, s.MaxMomentum}, s.MaxMomentum))
}

// phase returns the value of step along the phases through v[0], v[1],
// v[2] (and last, ThreePhase's end).
func (s OneCycle) phase(fn string, step int, v [3]float64, last float64) float64 {
	if s.TotalSteps < 1 || !(s.PctStart >= 0 && s.PctStart <= 1) || step < 0 || step > s.TotalSteps {
		panic(fmt.Sprintf("nn: OneCycle.%s: step %d of TotalSteps %d, PctStart %v (want 0 <= step <= TotalSteps, TotalSteps >= 1, PctStart in [0, 1])",
			fn, step, s.TotalSteps, s.PctStart))
	}
	n := float64(s.TotalSteps)
	type ph struct{ end, from, to float64 }
	phases := []ph{{s.PctStart*n - 1, v[0], v[1]}, {n - 1, v[1], v[2]}}
	if s.ThreePhase {
		phases = []ph{{s.PctStart*n - 1, v[0], v[1]}, {2*s.PctStart*n - 2, v[1], v[2]}, {n - 1, v[2], last}}
	}
	x, start := float64(step), 0.0
	for k, p := range phases {
		if x <= p.end || k == len(phases)-1 {
			pct := 1.0
			if p.end != start {
				pct = (x - start) / (p.end - start)
			}
			if s.Linear {
				return (p.to-p.from)*pct + p.from
			}
			return p.to + (p.from-p.to)/2*(math.Cos(math.Pi*pct)+1)
		}
		start = p.end
	}
	panic("unreachable")
}

// CosineWarmRestarts is PyTorch's CosineAnnealingWarmRestarts (SGDR):
// half a cosine from Base down towards Min over T0 steps, then a restart
// at Base over T0·TMult steps, T0·TMult² after, ...:
//
//	lr = Min + (Base - Min)·(1 + cos(π·T_cur/T_i))/2
//
// T_cur counting the steps since the last restart and T_i the length of
// the current period. TMult 0 is taken as 1 (periods of T0); At panics for
// T0 < 1, a negative TMult or step.
type CosineWarmRestarts struct {
	Base, Min float32
	T0, TMult int
}

// At implements Schedule.
func (s CosineWarmRestarts) At(step int) float32 {
	if s.T0 < 1 || s.TMult < 0 || step < 0 {
		panic(fmt.Sprintf("nn: CosineWarmRestarts.At: step %d, T0 %d, TMult %d (want step >= 0, T0 >= 1, TMult >= 0)", step, s.T0, s.TMult))
	}
	cur, ti := step, s.T0
	if s.TMult <= 1 {
		cur %= ti
	} else {
		for cur >= ti {
			cur -= ti
			ti *= s.TMult
		}
	}
	lo := float64(s.Min)
	return float32(lo + (float64(s.Base)-lo)*(1+math.Cos(math.Pi*float64(cur)/float64(ti)))/2)
}

// LinearLR is PyTorch's LinearLR, the plain linear warmup (or decay):
// Base times a factor going linearly from StartFactor at step 0 to
// EndFactor at step Iters, and EndFactor after:
//
//	lr = Base·(StartFactor + (EndFactor - StartFactor)·min(step, Iters)/Iters)
//
// NewLinearLR gives PyTorch's defaults. At panics for Iters < 1 or a
// negative step.
type LinearLR struct {
	Base                   float32
	StartFactor, EndFactor float64
	Iters                  int
}

// NewLinearLR returns LinearLR from base with PyTorch's defaults:
// StartFactor 1/3, EndFactor 1, Iters 5.
func NewLinearLR(base float32) LinearLR {
	return LinearLR{Base: base, StartFactor: 1.0 / 3, EndFactor: 1, Iters: 5}
}

// At implements Schedule.
func (s LinearLR) At(step int) float32 {
	if s.Iters < 1 || step < 0 {
		panic(fmt.Sprintf("nn: LinearLR.At: step %d, Iters %d (want step >= 0, Iters >= 1)", step, s.Iters))
	}
	f := s.StartFactor + (s.EndFactor-s.StartFactor)*float64(min(step, s.Iters))/float64(s.Iters)
	return float32(float64(s.Base) * f)
}

// SequentialLR is PyTorch's SequentialLR for Schedules: Schedules[k]
// from step Milestones[k-1] on, counting its steps from there (so a
// LinearLR warmup of 5 steps followed by CosineLR is {[LinearLR, CosineLR],
// [5]}). At panics unless there is one milestone fewer than schedules,
// increasing.
type SequentialLR struct {
	Schedules  []Schedule
	Milestones []int
}

// At implements Schedule.
func (s SequentialLR) At(step int) float32 {
	if len(s.Schedules) != len(s.Milestones)+1 {
		panic(fmt.Sprintf("nn: SequentialLR.At: %d schedules for %d milestones (want one more)", len(s.Schedules), len(s.Milestones)))
	}
	k, from := 0, 0
	for k < len(s.Milestones) && step >= s.Milestones[k] {
		if k > 0 && s.Milestones[k] <= s.Milestones[k-1] {
			panic(fmt.Sprintf("nn: SequentialLR.At: milestones %v are not increasing", s.Milestones))
		}
		from = s.Milestones[k]
		k++
	}
	return s.Schedules[k].At(step - from)
}

// ReduceLROnPlateau is PyTorch's ReduceLROnPlateau: Step(metric), called
// once an epoch with the validation metric, multiplies the optimizer's
// learning rate by Factor (not below MinLR; a change of Eps or less is
// not made) when the metric has not improved on the best seen for more
// than Patience calls, and then waits Cooldown calls before counting
// again. The metric improves on best when
//
//	min, relative: metric < best·(1 - Threshold)   min, absolute: metric < best - Threshold
//	max, relative: metric > best·(1 + Threshold)   max, absolute: metric > best + Threshold
//
// (Max selects mode "max", AbsThreshold threshold_mode "abs"); a NaN
// metric never improves. Its counters are kept by MarshalJSON and
// restored by UnmarshalJSON, which a checkpoint's metadata can hold
// (SaveCheckpoint leaves schedules to the caller):
//
//	js, _ := json.Marshal(plateau)
//	nn.SaveCheckpoint(path, m, opt, b, map[string]string{"plateau": string(js)})
//	meta, _ := nn.LoadCheckpoint(path, m, opt, b)
//	json.Unmarshal([]byte(meta["plateau"]), plateau)
type ReduceLROnPlateau struct {
	Opt                 Optimizer
	Max, AbsThreshold   bool
	Factor, Threshold   float64
	Patience, Cooldown  int
	MinLR               float32
	Eps                 float64
	best                float64
	bad, cooldown, last int
}

// NewReduceLROnPlateau returns ReduceLROnPlateau over opt with PyTorch's
// defaults: mode min, Factor 0.1, Patience 10, Threshold 1e-4 relative,
// no cooldown, MinLR 0, Eps 1e-8.
func NewReduceLROnPlateau(opt Optimizer) *ReduceLROnPlateau {
	return &ReduceLROnPlateau{Opt: opt, Factor: 0.1, Patience: 10, Threshold: 1e-4, Eps: 1e-8}
}

// better reports whether a improves on the best metric.
func (s *ReduceLROnPlateau) better(a float64) bool {
	switch {
	case !s.Max && !s.AbsThreshold:
		return a < s.best*(1-s.Threshold)
	case !s.Max:
		return a < s.best-s.Threshold
	case !s.AbsThreshold:
		return a > s.best*(1+s.Threshold)
	}
	return a > s.best+s.Threshold
}

// Step takes an epoch's metric and reduces the learning rate of Opt when
// the metric has stopped improving (see ReduceLROnPlateau). It panics for
// a Factor outside [0, 1) (PyTorch refuses 1 and above).
func (s *ReduceLROnPlateau) Step(metric float64) {
	if !(s.Factor >= 0 && s.Factor < 1) {
		panic(fmt.Sprintf("nn: ReduceLROnPlateau.Step: Factor %v (want 0 <= Factor < 1)", s.Factor))
	}
	if s.last == 0 {
		s.reset() // the mode is known now
	}
	s.last++
	if s.better(metric) {
		s.best, s.bad = metric, 0
	} else {
		s.bad++
	}
	if s.cooldown > 0 {
		s.cooldown--
		s.bad = 0
	}
	if s.bad > s.Patience {
		old := float64(s.Opt.LR())
		if lr := max(old*s.Factor, float64(s.MinLR)); old-lr > s.Eps {
			s.Opt.SetLR(float32(lr))
		}
		s.cooldown, s.bad = s.Cooldown, 0
	}
}

// reset sets the best metric to the worst of the mode, before the first
// metric.
func (s *ReduceLROnPlateau) reset() {
	s.best = math.Inf(1)
	if s.Max {
		s.best = math.Inf(-1)
	}
}

// plateauState is what MarshalJSON keeps of a ReduceLROnPlateau: its
// settings and counters, floats as strconv's shortest form ("+Inf"
// included), which parses back to the same bits.
type plateauState struct {
	Max          bool   `json:"max"`
	AbsThreshold bool   `json:"abs_threshold"`
	Factor       string `json:"factor"`
	Threshold    string `json:"threshold"`
	Patience     int    `json:"patience"`
	Cooldown     int    `json:"cooldown"`
	MinLR        jf32   `json:"min_lr"`
	Eps          string `json:"eps"`
	Best         string `json:"best"`
	NumBad       int    `json:"num_bad_epochs"`
	CooldownLeft int    `json:"cooldown_counter"`
	LastEpoch    int    `json:"last_epoch"`
}

// MarshalJSON implements json.Marshaler: s's settings and counters (not
// its optimizer, whose learning rate the optimizer's checkpoint keeps).
func (s *ReduceLROnPlateau) MarshalJSON() ([]byte, error) {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return json.Marshal(plateauState{Max: s.Max, AbsThreshold: s.AbsThreshold, Factor: f(s.Factor), Threshold: f(s.Threshold),
		Patience: s.Patience, Cooldown: s.Cooldown, MinLR: jf32(s.MinLR), Eps: f(s.Eps), Best: f(s.best), NumBad: s.bad,
		CooldownLeft: s.cooldown, LastEpoch: s.last})
}

// UnmarshalJSON implements json.Unmarshaler: it restores what MarshalJSON
// wrote, leaving Opt as it is; on an error s is unchanged.
func (s *ReduceLROnPlateau) UnmarshalJSON(b []byte) error {
	var st plateauState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("nn: ReduceLROnPlateau: %w", err)
	}
	var fs [4]float64
	for k, v := range []string{st.Factor, st.Threshold, st.Eps, st.Best} {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("nn: ReduceLROnPlateau: %w", err)
		}
		fs[k] = x
	}
	if st.NumBad < 0 || st.CooldownLeft < 0 || st.LastEpoch < 0 {
		return fmt.Errorf("nn: ReduceLROnPlateau: negative counter in %s", b)
	}
	s.Max, s.AbsThreshold, s.Factor, s.Threshold, s.Eps, s.best = st.Max, st.AbsThreshold, fs[0], fs[1], fs[2], fs[3]
	s.Patience, s.Cooldown, s.MinLR, s.bad, s.cooldown, s.last = st.Patience, st.Cooldown, float32(st.MinLR), st.NumBad, st.CooldownLeft, st.LastEpoch
	return nil
}
