package nn

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/internal/par"
	"github.com/lanesgo/lanes/simd"
)

// Optimizer updates parameters from their gradients. Step skips the
// parameters that have no gradient (Grad() == nil), as PyTorch skips those
// whose grad is None.
//
// The constructors (NewSGD, NewAdam, NewAdamW, NewRMSProp) panic, naming
// themselves and the parameter's index, when a parameter is nil or is not
// a trainable parameter (made by NewParam).
type Optimizer interface {
	Step()
	ZeroGrad()
	LR() float32
	SetLR(lr float32)
}

// The updates run as a sequence of simd kernels over blocks of optBlock
// elements, so that each block of the parameter, its gradient and its
// state is read from memory and written back once per step while the
// intermediate passes stay in L1.
const optBlock = 1024

// blockUpdater is an optimizer's update of one block of parameter i:
// its values p, gradient g and state slots s, with two scratch blocks of
// len(p) elements in tmp.
type blockUpdater interface {
	update(i int, p, g []float32, s [][]float32, tmp *[2][]float32)
}

// blockJob runs an optimizer's update over the blocks of its parameters;
// block b of all of them is block b - starts[i] of parameter i, where
// starts[i] <= b < starts[i+1].
type blockJob struct {
	p, g   [][]float32 // each parameter's values and gradient (nil without one)
	state  [][]float32
	slots  int
	u      blockUpdater
	starts []int
}

// scratch holds the workers' tmp blocks (see blockUpdater).
var scratch freelist.Stack[[2][]float32]

// blocks runs u over consecutive blocks of at most optBlock elements of
// each parameter that has a gradient, on several threads for large models.
// A step from par.SplitFrom parameter elements is spread over the worker
// pool, as tensor's elementwise operations are. Adam on nn's CNN (421K
// parameters, Zen 5): 0.40-0.44 ms a step on one thread, 0.27-0.39 on two
// (0.40-0.50 before, all blocks on the caller).
func (j *blockJob) blocks(params []*Var, state [][]float32, slots int, u blockUpdater) {
	j.state, j.slots, j.u = state, slots, u
	j.p, j.g, j.starts = j.p[:0], j.g[:0], append(j.starts[:0], 0)
	elems := 0
	for _, v := range params {
		var p, g []float32
		if v.gradOK {
			p, g = v.value.Data(), v.grad.Data()
		}
		j.p, j.g = append(j.p, p), append(j.g, g)
		elems += len(p)
		j.starts = append(j.starts, j.starts[len(j.starts)-1]+(len(p)+optBlock-1)/optBlock)
	}
	par.Split(j, j.starts[len(params)], elems)
	clear(j.p)
	clear(j.g)
	j.state, j.u = nil, nil
}

// RunRange updates blocks lo..hi.
func (j *blockJob) RunRange(lo, hi int) {
	tmp := scratch.Get()
	for k := range tmp {
		if len(tmp[k]) < optBlock {
			tmp[k] = make([]float32, optBlock)
		}
	}
	var sb [4][]float32
	i := sort.SearchInts(j.starts, lo+1) - 1 // the parameter holding block lo
	for b := lo; b < hi; b++ {
		for b >= j.starts[i+1] {
			i++
		}
		p, g := j.p[i], j.g[i]
		off := (b - j.starts[i]) * optBlock
		end := min(off+optBlock, len(p))
		for k := range j.slots {
			sb[k] = j.state[i*j.slots+k][off:end]
		}
		j.u.update(i, p[off:end], g[off:end], sb[:j.slots], tmp)
	}
	scratch.Put(tmp)
}

// newState returns slots zeroed state slices for each of params, and
// panics, naming fn, when one is nil or not a trainable parameter.
func newState(fn string, params []*Var, slots int) [][]float32 {
	s := make([][]float32, len(params)*slots)
	for i, v := range params {
		if v == nil || v.value == nil {
			panic(fmt.Sprintf("nn: %s: parameter %d of %d is nil", fn, i, len(params)))
		}
		if !v.requires || !v.param {
			panic(fmt.Sprintf("nn: %s: parameter %d of shape %v is not a trainable parameter", fn, i, v.value.Shape()))
		}
		for k := range slots {
			s[i*slots+k] = make([]float32, v.value.Len())
		}
	}
	return s
}

// optBase holds what every optimizer has: its parameters and learning
// rate, with the Optimizer methods that need nothing else.
type optBase struct {
	params []*Var
	lr     float32
	job    blockJob
}

// ZeroGrad implements Optimizer.
func (o *optBase) ZeroGrad() { zeroGrads(o.params) }

// LR implements Optimizer.
func (o *optBase) LR() float32 { return o.lr }

// SetLR implements Optimizer.
func (o *optBase) SetLR(lr float32) { o.lr = lr }

func zeroGrads(params []*Var) {
	for _, v := range params {
		v.ZeroGrad()
	}
}

// SGD is stochastic gradient descent with optional momentum (Nesterov's
// or not), dampening and L2 weight decay, as PyTorch's optim.SGD:
//
//	g ← g + WeightDecay·p
//	b ← Momentum·b + (1 - Dampening)·g   (b ← g on the first step)
//	g ← g + Momentum·b if Nesterov, else b
//	p ← p - lr·g
type SGD struct {
	Momentum, Dampening, WeightDecay float32
	Nesterov                         bool
	optBase
	state   [][]float32
	started []bool
}

// NewSGD returns plain SGD over params with learning rate lr; set the
// fields for momentum and weight decay.
func NewSGD(params []*Var, lr float32) *SGD {
	return &SGD{optBase: optBase{params: params, lr: lr}, state: newState("NewSGD", params, 1), started: make([]bool, len(params))}
}

// Step implements Optimizer.
func (o *SGD) Step() {
	o.job.blocks(o.params, o.state, 1, o)
	for i, v := range o.params {
		o.started[i] = o.started[i] || v.gradOK
	}
}

func (o *SGD) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	buf, t := s[0], tmp[0][:len(p)]
	copy(t, g)
	if o.WeightDecay != 0 {
		simd.Axpy(t, o.WeightDecay, p)
	}
	if o.Momentum != 0 {
		if !o.started[i] {
			copy(buf, t)
		} else {
			simd.Scale(buf, buf, o.Momentum)
			simd.Axpy(buf, 1-o.Dampening, t)
		}
		if o.Nesterov {
			simd.Axpy(t, o.Momentum, buf)
		} else {
			copy(t, buf)
		}
	}
	simd.Axpy(p, -o.lr, t)
}

// Adam is the Adam optimizer (Kingma and Ba) as PyTorch's optim.Adam, with
// bias correction and, when Decoupled is set, AdamW's decoupled weight
// decay (p ← p·(1 - lr·WeightDecay) before the update) instead of L2
// decay added to the gradient:
//
//	m ← β₁m + (1-β₁)g,  v ← β₂v + (1-β₂)g²
//	p ← p - lr/(1-β₁ᵗ) · m/(√v/√(1-β₂ᵗ) + ε)
//
// where t counts the steps that updated the parameter: each parameter
// keeps its own t, as PyTorch's state["step"], so one that had no gradient
// in the first steps starts its bias correction from 1 when it first has
// one. The bias corrections are computed in float64 and rounded once.
type Adam struct {
	Beta1, Beta2, Eps, WeightDecay float32
	Decoupled                      bool
	optBase
	state [][]float32
	steps []int64 // each parameter's t
	// This step's lr/(1-β₁ᵗ) and 1/√(1-β₂ᵗ), for each parameter.
	stepSize, invSqrtBC2 []float32
}

// NewAdam returns Adam over params with learning rate lr and PyTorch's
// defaults: β = (0.9, 0.999), ε = 1e-8, no weight decay.
func NewAdam(params []*Var, lr float32) *Adam { return newAdam("NewAdam", params, lr) }

// NewAdamW returns AdamW over params with learning rate lr and PyTorch's
// defaults: β = (0.9, 0.999), ε = 1e-8, weight decay 0.01.
func NewAdamW(params []*Var, lr float32) *Adam {
	o := newAdam("NewAdamW", params, lr)
	o.WeightDecay, o.Decoupled = 0.01, true
	return o
}

func newAdam(fn string, params []*Var, lr float32) *Adam {
	return &Adam{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, optBase: optBase{params: params, lr: lr}, state: newState(fn, params, 2),
		steps: make([]int64, len(params)), stepSize: make([]float32, len(params)), invSqrtBC2: make([]float32, len(params))}
}

// Step implements Optimizer.
func (o *Adam) Step() {
	for i, v := range o.params {
		if !v.gradOK {
			continue
		}
		o.steps[i]++
		t := float64(o.steps[i])
		o.stepSize[i] = float32(float64(o.lr) / (1 - math.Pow(float64(o.Beta1), t)))
		o.invSqrtBC2[i] = float32(1 / math.Sqrt(1-math.Pow(float64(o.Beta2), t)))
	}
	o.job.blocks(o.params, o.state, 2, o)
}

func (o *Adam) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	m, v := s[0], s[1]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	b1, b2, wd := o.Beta1, o.Beta2, o.WeightDecay
	switch {
	case wd != 0 && o.Decoupled:
		simd.Scale(p, p, 1-o.lr*wd)
	case wd != 0:
		copy(t1, g)
		simd.Axpy(t1, wd, p)
		g = t1
	}
	simd.Scale(m, m, b1)
	simd.Axpy(m, 1-b1, g)
	simd.Mul(t2, g, g)
	simd.Scale(v, v, b2)
	simd.Axpy(v, 1-b2, t2)
	simd.Sqrt(t2, v)
	simd.Scale(t2, t2, o.invSqrtBC2[i])
	simd.AddScalar(t2, t2, o.Eps)
	simd.Div(t2, m, t2)
	simd.Axpy(p, -o.stepSize[i], t2)
}

// RMSProp is PyTorch's optim.RMSprop:
//
//	g ← g + WeightDecay·p
//	v ← αv + (1-α)g²
//	a ← √(v - ḡ²) + ε with ḡ ← αḡ + (1-α)g if Centered, else √v + ε
//	b ← Momentum·b + g/a and p ← p - lr·b if Momentum > 0, else p ← p - lr·g/a
type RMSProp struct {
	Alpha, Eps, Momentum, WeightDecay float32
	Centered                          bool
	optBase
	state [][]float32
}

// NewRMSProp returns RMSProp over params with learning rate lr and
// PyTorch's defaults: α = 0.99, ε = 1e-8.
func NewRMSProp(params []*Var, lr float32) *RMSProp {
	return &RMSProp{Alpha: 0.99, Eps: 1e-8, optBase: optBase{params: params, lr: lr}, state: newState("NewRMSProp", params, 3)}
}

// Step implements Optimizer.
func (o *RMSProp) Step() { o.job.blocks(o.params, o.state, 3, o) }

func (o *RMSProp) update(_ int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	a := o.Alpha
	v, gavg, buf := s[0], s[1], s[2]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	if o.WeightDecay != 0 {
		copy(t1, g)
		simd.Axpy(t1, o.WeightDecay, p)
		g = t1
	}
	simd.Mul(t2, g, g)
	simd.Scale(v, v, a)
	simd.Axpy(v, 1-a, t2)
	if o.Centered {
		simd.Scale(gavg, gavg, a)
		simd.Axpy(gavg, 1-a, g)
		simd.Mul(t2, gavg, gavg)
		simd.Sub(t2, v, t2)
		simd.Sqrt(t2, t2)
	} else {
		simd.Sqrt(t2, v)
	}
	simd.AddScalar(t2, t2, o.Eps)
	simd.Div(t2, g, t2)
	if o.Momentum > 0 {
		simd.Scale(buf, buf, o.Momentum)
		simd.Add(buf, buf, t2)
		t2 = buf
	}
	simd.Axpy(p, -o.lr, t2)
}

// Schedule gives the learning rate for an epoch (or step) counted from 0.
// Apply it with opt.SetLR(s.At(epoch)).
type Schedule interface {
	At(epoch int) float32
}

// StepLR multiplies Base by Gamma every Every epochs (PyTorch's StepLR).
type StepLR struct {
	Base, Gamma float32
	Every       int
}

// At implements Schedule.
func (s StepLR) At(epoch int) float32 {
	return s.Base * float32(math.Pow(float64(s.Gamma), float64(epoch/max(s.Every, 1))))
}

// CosineLR anneals from Base to Min over Epochs epochs along half a cosine
// and stays at Min after (PyTorch's CosineAnnealingLR without restarts).
type CosineLR struct {
	Base, Min float32
	Epochs    int
}

// At implements Schedule.
func (s CosineLR) At(epoch int) float32 {
	t := min(float64(epoch)/float64(max(s.Epochs, 1)), 1)
	return s.Min + (s.Base-s.Min)*float32((1+math.Cos(math.Pi*t))/2)
}

// jf32 is a float32 that JSON holds exactly: as the shortest number that
// parses back to it when finite, as "NaN", "+Inf" or "-Inf" otherwise.
type jf32 float32

// MarshalJSON implements json.Marshaler.
func (f jf32) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.AppendQuote(nil, strconv.FormatFloat(v, 'g', -1, 32)), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 32), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *jf32) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		var err error
		if s, err = strconv.Unquote(s); err != nil {
			return err
		}
	}
	v, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return err
	}
	*f = jf32(v)
	return nil
}

// optimizerState is what a checkpoint keeps of an optimizer besides its
// per-parameter state tensors: its type, learning rate, hyperparameters
// and counters (see SaveCheckpoint).
type optimizerState struct {
	Type        string  `json:"type"`
	Params      int     `json:"params"`
	LR          jf32    `json:"lr"`
	Momentum    jf32    `json:"momentum"`
	Dampening   jf32    `json:"dampening"`
	WeightDecay jf32    `json:"weight_decay"`
	Nesterov    bool    `json:"nesterov"`
	Beta1       jf32    `json:"beta1"`
	Beta2       jf32    `json:"beta2"`
	Eps         jf32    `json:"eps"`
	Alpha       jf32    `json:"alpha"`
	Decoupled   bool    `json:"decoupled"`
	Centered    bool    `json:"centered"`
	Steps       []int64 `json:"steps,omitempty"`   // Adam: each parameter's step count
	Started     []bool  `json:"started,omitempty"` // SGD: whether each momentum buffer is set
}

// optimizerOf returns what a checkpoint keeps of opt: its scalar state,
// PyTorch's names of its per-parameter state slots, the slots (parameter
// i's slot k is state[i*len(slots)+k]) and its parameters. ok is false
// when opt is not one of this package's optimizers, or a nil one.
func optimizerOf(opt Optimizer) (st optimizerState, slots []string, state [][]float32, params []*Var, ok bool) {
	switch o := opt.(type) {
	case *SGD:
		if o != nil {
			return optimizerState{Type: "SGD", Params: len(o.params), LR: jf32(o.lr), Momentum: jf32(o.Momentum), Dampening: jf32(o.Dampening),
				WeightDecay: jf32(o.WeightDecay), Nesterov: o.Nesterov, Started: slices.Clone(o.started)}, []string{"momentum_buffer"}, o.state, o.params, true
		}
	case *Adam:
		if o != nil {
			return optimizerState{Type: "Adam", Params: len(o.params), LR: jf32(o.lr), Beta1: jf32(o.Beta1), Beta2: jf32(o.Beta2), Eps: jf32(o.Eps),
				WeightDecay: jf32(o.WeightDecay), Decoupled: o.Decoupled, Steps: slices.Clone(o.steps)}, []string{"exp_avg", "exp_avg_sq"}, o.state, o.params, true
		}
	case *RMSProp:
		if o != nil {
			return optimizerState{Type: "RMSProp", Params: len(o.params), LR: jf32(o.lr), Alpha: jf32(o.Alpha), Eps: jf32(o.Eps), Momentum: jf32(o.Momentum),
				WeightDecay: jf32(o.WeightDecay), Centered: o.Centered}, []string{"square_avg", "grad_avg", "momentum_buffer"}, o.state, o.params, true
		}
	}
	return st, nil, nil, nil, false
}

// checkOptimizerState checks st's counters against its parameter count.
func checkOptimizerState(st optimizerState) error {
	switch {
	case st.Type == "Adam" && len(st.Steps) != st.Params:
		return fmt.Errorf("%d step counts for %d parameters", len(st.Steps), st.Params)
	case st.Type == "SGD" && len(st.Started) != st.Params:
		return fmt.Errorf("%d momentum flags for %d parameters", len(st.Started), st.Params)
	}
	for i, s := range st.Steps {
		if s < 0 {
			return fmt.Errorf("step count %d of parameter %d", s, i)
		}
	}
	return nil
}

// restoreOptimizer sets opt's scalar state from st, which is of opt's type
// and parameter count and has passed checkOptimizerState.
func restoreOptimizer(opt Optimizer, st optimizerState) {
	switch o := opt.(type) {
	case *SGD:
		o.lr, o.Momentum, o.Dampening, o.WeightDecay, o.Nesterov = float32(st.LR), float32(st.Momentum), float32(st.Dampening), float32(st.WeightDecay), st.Nesterov
		copy(o.started, st.Started)
	case *Adam:
		o.lr, o.Beta1, o.Beta2, o.Eps, o.WeightDecay, o.Decoupled = float32(st.LR), float32(st.Beta1), float32(st.Beta2), float32(st.Eps), float32(st.WeightDecay), st.Decoupled
		copy(o.steps, st.Steps)
	case *RMSProp:
		o.lr, o.Alpha, o.Eps, o.Momentum, o.WeightDecay, o.Centered = float32(st.LR), float32(st.Alpha), float32(st.Eps), float32(st.Momentum), float32(st.WeightDecay), st.Centered
	}
}
