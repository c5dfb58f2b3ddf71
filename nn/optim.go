package nn

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/lanesgo/lanes/simd"
	"github.com/lanesgo/lanes/tensor"
)

// Optimizer updates parameters from their gradients. Step skips the
// parameters that have no gradient (Grad() == nil), as PyTorch skips those
// whose grad is None.
//
// The constructors (NewSGD, NewAdam, NewAdamW, NewRMSProp, NewAdagrad,
// NewAdamax, NewNAdam, NewRAdam) panic, naming
// themselves and the parameter's index, when a parameter is nil or is not
// a trainable parameter (made by NewParam).
//
// An optimizer's state (momentum buffers, Adam's moments, RMSProp's
// averages) is made on the device of each parameter when the optimizer
// is made, and stays where it is until To moves it: Step runs on the
// device of the parameters (tensor's SGDStep, AdamStep, RMSPropStep, one
// multi-tensor call), and parameters on another device than their state
// make it panic, naming the devices. So a model moved to a device before
// its optimizer is made needs nothing more; one moved after needs the
// optimizer's To (PyTorch's optimizers, which keep no device of their
// own, move their state when load_state_dict gives it; lanes asks for the
// move, as it asks for every copy between devices).
type Optimizer interface {
	Step()
	ZeroGrad()
	LR() float32
	SetLR(lr float32)
	// To moves the optimizer's state to dev (its parameters are the
	// model's, moved by the model's own To). The error is the device's;
	// the state is then unchanged.
	To(dev tensor.Device) error
}

// newState returns slots lists of zeroed state tensors, one for each of
// params on the parameter's device (list k holds slot k of every
// parameter), and panics, naming fn, when a parameter is nil or not a
// trainable parameter, or its device cannot provide the memory.
func newState(fn string, params []*Var, slots int) [][]*tensor.Tensor {
	s := make([][]*tensor.Tensor, slots)
	for k := range s {
		s[k] = make([]*tensor.Tensor, len(params))
	}
	for i, v := range params {
		if v == nil || v.value == nil {
			panic(fmt.Sprintf("nn: %s: parameter %d of %d is nil", fn, i, len(params)))
		}
		if !v.requires || !v.param {
			panic(fmt.Sprintf("nn: %s: parameter %d of shape %v is not a trainable parameter", fn, i, v.value.Shape()))
		}
		for k := range s {
			t, err := tensor.NewOn(v.value.Device(), v.value.Shape()...)
			if err != nil {
				panic(allocFailure("nn: "+fn, fmt.Sprintf("state of parameter %d of shape %v on %v", i, v.value.Shape(), v.value.Device()), err))
			}
			s[k][i] = t
		}
	}
	return s
}

// optBase holds what every optimizer has: its parameters, learning rate
// and state, with the Optimizer methods that need nothing else.
type optBase struct {
	params []*Var
	lr     float32
	// state[k][i] is slot k of parameter i (see optimizerOf for the
	// slots' names).
	state [][]*tensor.Tensor
	// The operands of a step, kept so that a step allocates nothing.
	values, grads []*tensor.Tensor
	// groups are the parameter groups (SetGroups); none is one group of
	// all the parameters.
	groups []paramGroup
}

// operands returns the parameters' values and gradients (nil where a
// parameter has none) for a step.
func (o *optBase) operands() (values, grads []*tensor.Tensor) {
	o.values, o.grads = o.values[:0], o.grads[:0]
	for _, v := range o.params {
		var g *tensor.Tensor
		if v.gradOK {
			g = v.grad
		}
		o.values, o.grads = append(o.values, v.value), append(o.grads, g)
	}
	return o.values, o.grads
}

// ZeroGrad implements Optimizer.
func (o *optBase) ZeroGrad() { zeroGrads(o.params) }

// LR implements Optimizer.
func (o *optBase) LR() float32 { return o.lr }

// SetLR implements Optimizer.
func (o *optBase) SetLR(lr float32) { o.lr = lr }

// To implements Optimizer: it copies every state tensor to dev, and
// replaces the state only once all are there.
func (o *optBase) To(dev tensor.Device) error {
	moved := make([][]*tensor.Tensor, len(o.state))
	for k, slot := range o.state {
		moved[k] = make([]*tensor.Tensor, len(slot))
		for i, t := range slot {
			m, err := t.To(dev)
			if err != nil {
				return fmt.Errorf("nn: optimizer To(%v): state of parameter %d of shape %v: %w", dev, i, t.Shape(), err)
			}
			moved[k][i] = m
		}
	}
	for k := range moved {
		copy(o.state[k], moved[k])
	}
	return nil
}

func zeroGrads(params []*Var) {
	for _, v := range params {
		v.ZeroGrad()
	}
}

// SGD is stochastic gradient descent with optional momentum (Nesterov's
// or not), dampening and L2 weight decay, as PyTorch's optim.SGD (see
// tensor.SGDStep):
//
//	g ← g + WeightDecay·p
//	b ← Momentum·b + (1 - Dampening)·g   (b ← g on the first step)
//	g ← g + Momentum·b if Nesterov, else b
//	p ← p - lr·g
type SGD struct {
	Momentum, Dampening, WeightDecay float32
	Nesterov                         bool
	optBase
	started []bool
}

// NewSGD returns plain SGD over params with learning rate lr; set the
// fields for momentum and weight decay.
func NewSGD(params []*Var, lr float32) *SGD {
	return &SGD{optBase: optBase{params: params, lr: lr, state: newState("NewSGD", params, 1)}, started: make([]bool, len(params))}
}

// Step implements Optimizer.
func (o *SGD) Step() {
	values, grads := o.operands()
	o.eachGroup(o.WeightDecay, func(lo, hi int, lr, wd float32) {
		tensor.SGDStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.started[lo:hi],
			tensor.SGDParams{LR: lr, Momentum: o.Momentum, Dampening: o.Dampening, WeightDecay: wd, Nesterov: o.Nesterov})
	})
}

// Adam is the Adam optimizer (Kingma and Ba) as PyTorch's optim.Adam, with
// bias correction and, when Decoupled is set, AdamW's decoupled weight
// decay (p ← p·(1 - lr·WeightDecay) before the update) instead of L2
// decay added to the gradient (see tensor.AdamStep):
//
//	m ← β₁m + (1-β₁)g,  v ← β₂v + (1-β₂)g²
//	p ← p - lr/(1-β₁ᵗ) · m/(√v/√(1-β₂ᵗ) + ε)
//
// where t counts the steps that updated the parameter: each parameter
// keeps its own t, as PyTorch's state["step"], so one that had no gradient
// in the first steps starts its bias correction from 1 when it first has
// one. The bias corrections are computed in float64 and rounded once.
//
// AMSGrad is PyTorch's amsgrad option: the denominator takes the running
// maximum v̂ ← max(v̂, v) instead of v (tensor.AdamAMSGradStep), a third
// state tensor for each parameter (made at the first Step or checkpoint
// with AMSGrad set, on the parameter's device).
type Adam struct {
	Beta1, Beta2, Eps, WeightDecay float32
	Decoupled, AMSGrad             bool
	optBase
	steps []int64 // each parameter's t
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
	return &Adam{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, optBase: optBase{params: params, lr: lr, state: newState(fn, params, 2)},
		steps: make([]int64, len(params))}
}

// NewAdamWGroups returns AdamW with PyTorch's defaults (as NewAdamW) over
// two parameter groups: decay, whose parameters take the weight decay
// WeightDecay (0.01 unless set), and noDecay, whose parameters take none,
// as PyTorch's optim.AdamW([{"params": decay}, {"params": noDecay,
// "weight_decay": 0}], lr). Its parameters are decay's then noDecay's, in
// that order (the indices of a checkpoint's "optim.<i>." tensors); the
// groups are SetGroups', which a checkpoint keeps: LoadCheckpoint requires
// the same. DecayGroups splits a model's parameters the usual way.
func NewAdamWGroups(decay, noDecay []*Var, lr float32) *Adam {
	params := make([]*Var, 0, len(decay)+len(noDecay))
	params = append(append(params, decay...), noDecay...)
	o := newAdam("NewAdamWGroups", params, lr)
	o.WeightDecay, o.Decoupled = 0.01, true
	if len(noDecay) > 0 {
		o.SetGroups(ParamGroup{Params: decay}, ParamGroup{Params: noDecay, OwnDecay: true})
	}
	return o
}

// DecayGroups splits m's parameters (Params) into those that weight decay
// should shrink, the weights of its Linear and Conv2D layers (the
// parameters of two dimensions or more), and the others: biases, the
// norms' scales and shifts, and embedding tables (Embedding's, a GPT's
// token and position embeddings, and so a head tied to the token
// embedding), as minGPT's configure_optimizers. Each list keeps State
// order; a parameter m gives twice appears once.
func DecayGroups(m Module) (decay, noDecay []*Var) {
	seen := map[*Var]bool{}
	for _, v := range Params(m) {
		if seen[v] {
			continue
		}
		seen[v] = true
		if v.value.Dims() >= 2 && !v.noDecay {
			decay = append(decay, v)
		} else {
			noDecay = append(noDecay, v)
		}
	}
	return decay, noDecay
}

// Step implements Optimizer.
func (o *Adam) Step() {
	values, grads := o.operands()
	o.amsgradState()
	o.eachGroup(o.WeightDecay, func(lo, hi int, lr, wd float32) {
		hp := tensor.AdamParams{LR: lr, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: wd, Decoupled: o.Decoupled}
		if o.AMSGrad {
			tensor.AdamAMSGradStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.state[1][lo:hi], o.state[2][lo:hi], o.steps[lo:hi], hp)
		} else {
			tensor.AdamStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.state[1][lo:hi], o.steps[lo:hi], hp)
		}
	})
}

// amsgradState makes the state slot of AMSGrad's v̂ when AMSGrad is set
// and it has none yet.
func (o *Adam) amsgradState() {
	if o.AMSGrad && len(o.state) == 2 {
		o.state = append(o.state, newState("Adam.Step", o.params, 1)[0])
	}
}

// RMSProp is PyTorch's optim.RMSprop (see tensor.RMSPropStep):
//
//	g ← g + WeightDecay·p
//	v ← αv + (1-α)g²
//	a ← √(v - ḡ²) + ε with ḡ ← αḡ + (1-α)g if Centered, else √v + ε
//	b ← Momentum·b + g/a and p ← p - lr·b if Momentum > 0, else p ← p - lr·g/a
type RMSProp struct {
	Alpha, Eps, Momentum, WeightDecay float32
	Centered                          bool
	optBase
}

// NewRMSProp returns RMSProp over params with learning rate lr and
// PyTorch's defaults: α = 0.99, ε = 1e-8.
func NewRMSProp(params []*Var, lr float32) *RMSProp {
	return &RMSProp{Alpha: 0.99, Eps: 1e-8, optBase: optBase{params: params, lr: lr, state: newState("NewRMSProp", params, 3)}}
}

// Step implements Optimizer.
func (o *RMSProp) Step() {
	values, grads := o.operands()
	o.eachGroup(o.WeightDecay, func(lo, hi int, lr, wd float32) {
		tensor.RMSPropStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.state[1][lo:hi], o.state[2][lo:hi],
			tensor.RMSPropParams{LR: lr, Alpha: o.Alpha, Eps: o.Eps, Momentum: o.Momentum, WeightDecay: wd, Centered: o.Centered})
	})
}

// Schedule gives the learning rate for an epoch (or step) counted from 0.
// Apply it with opt.SetLR(s.At(epoch)). A schedule driven by a metric
// rather than the step (ReduceLROnPlateau) has state and is not one: it
// takes the metric in its own Step and sets its optimizer's rate.
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

// WarmupCosine is nanoGPT's learning-rate schedule (get_lr), per step it
// counted from 0: a linear warmup over Warmup steps, then half a cosine
// from Base down to Min, reached at step Decay, and Min after:
//
//	it < Warmup:            Base·(it+1)/(Warmup+1)
//	Warmup ≤ it ≤ Decay:    Min + (Base-Min)·(1 + cos(π·(it-Warmup)/(Decay-Warmup)))/2
//	it > Decay:             Min
//
// computed in float64 and rounded once (with Decay ≤ Warmup the cosine
// part is Base at it = Warmup).
type WarmupCosine struct {
	Base, Min     float32
	Warmup, Decay int
}

// At implements Schedule.
func (s WarmupCosine) At(it int) float32 {
	base, lo := float64(s.Base), float64(s.Min)
	switch {
	case it < s.Warmup:
		return float32(base * float64(it+1) / float64(s.Warmup+1))
	case it > s.Decay:
		return s.Min
	case s.Decay <= s.Warmup:
		return s.Base
	}
	ratio := float64(it-s.Warmup) / float64(s.Decay-s.Warmup)
	return float32(lo + (base-lo)*(1+math.Cos(math.Pi*ratio))/2)
}

// ClipGradNorm scales the gradients of params so that their global L2
// norm (the norm of all of them as one vector) is at most maxNorm, and
// returns that norm before clipping, as PyTorch's
// nn.utils.clip_grad_norm_: each gradient is multiplied by min(1,
// maxNorm/(total+1e-6)) (also when that is 1; a NaN or infinite total
// makes the gradients NaN, as PyTorch's default error_if_nonfinite=False).
// Parameters without a gradient are skipped. The norms are accumulated in
// float64 on the host (simd.Norm) and through tensor.Mul and tensor.Sum on
// a device; the scaling runs where each gradient is (tensor.ScaleInto).
// On the host it allocates nothing. It panics for a nil parameter or a
// negative or NaN maxNorm.
func ClipGradNorm(params []*Var, maxNorm float32) (total float32) {
	if !(maxNorm >= 0) {
		panic(fmt.Sprintf("nn: ClipGradNorm: maxNorm %v (want >= 0)", maxNorm))
	}
	var sq float64
	for i, v := range params {
		if v == nil {
			panic(fmt.Sprintf("nn: ClipGradNorm: parameter %d of %d is nil", i, len(params)))
		}
		if !v.gradOK {
			continue
		}
		if g := v.grad; onHost(g) {
			n := float64(simd.Norm(g.Data()))
			sq += n * n
		} else {
			s, err := tensor.Sum(tensor.Mul(g, g), false).Host()
			if err != nil {
				panic(fmt.Sprintf("nn: ClipGradNorm: the gradient of parameter %d of shape %v on %v: %v", i, g.Shape(), g.Device(), err))
			}
			sq += float64(s.Item())
		}
	}
	norm := math.Sqrt(sq)
	coef := float32(min(float64(maxNorm)/(norm+1e-6), 1))
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		coef = float32(math.NaN())
	}
	for _, v := range params {
		if v.gradOK {
			tensor.ScaleInto(v.grad, v.grad, coef)
		}
	}
	return float32(norm)
}

// ClipGradValue limits every element of the gradients of params to
// [-clip, clip], as PyTorch's nn.utils.clip_grad_value_ (torch.clamp: a
// NaN element stays NaN, infinities become ±clip). Parameters without a
// gradient are skipped. It runs where each gradient is
// (tensor.ClampInto) and allocates nothing on the host. It panics for a
// nil parameter or a negative or NaN clip.
func ClipGradValue(params []*Var, clip float32) {
	if !(clip >= 0) {
		panic(fmt.Sprintf("nn: ClipGradValue: clip %v (want >= 0)", clip))
	}
	for i, v := range params {
		if v == nil {
			panic(fmt.Sprintf("nn: ClipGradValue: parameter %d of %d is nil", i, len(params)))
		}
		if v.gradOK {
			tensor.ClampInto(v.grad, v.grad, -clip, clip)
		}
	}
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
// per-parameter state tensors: its type, learning rate, hyperparameters,
// counters and parameter groups (see SaveCheckpoint).
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
	AMSGrad     bool    `json:"amsgrad,omitempty"`
	LRDecay     jf32    `json:"lr_decay,omitempty"`                  // Adagrad
	InitialAcc  jf32    `json:"initial_accumulator_value,omitempty"` // Adagrad
	MomentumDec jf32    `json:"momentum_decay,omitempty"`            // NAdam
	Steps       []int64 `json:"steps,omitempty"`                     // each parameter's step count (the Adam family, Adagrad)
	// MuProduct is NAdam's product of μₜ of each parameter; JSON's
	// shortest float64 form reads back to the same bits.
	MuProduct []float64    `json:"mu_product,omitempty"`
	Groups    []groupState `json:"groups,omitempty"`   // the parameter groups (SetGroups); none: one group
	NoDecay   int          `json:"no_decay,omitempty"` // read only: older files' NewAdamWGroups split
	Started   []bool       `json:"started,omitempty"`  // SGD: whether each momentum buffer is set
}

// optimizerOf returns what a checkpoint keeps of opt: its scalar state,
// PyTorch's names of its per-parameter state slots, the slots (parameter
// i's slot k is state[k][i], on the device it is on), its parameters and
// its base. ok is false when opt is not one of this package's optimizers,
// or a nil one.
func optimizerOf(opt Optimizer) (st optimizerState, slots []string, state [][]*tensor.Tensor, params []*Var, ok bool) {
	var b *optBase
	switch o := opt.(type) {
	case *SGD:
		if o != nil {
			b, st, slots = &o.optBase, optimizerState{Type: "SGD", Momentum: jf32(o.Momentum), Dampening: jf32(o.Dampening),
				WeightDecay: jf32(o.WeightDecay), Nesterov: o.Nesterov, Started: slices.Clone(o.started)}, []string{"momentum_buffer"}
		}
	case *Adam:
		if o != nil {
			o.amsgradState()
			b, st, slots = &o.optBase, optimizerState{Type: "Adam", Beta1: jf32(o.Beta1), Beta2: jf32(o.Beta2), Eps: jf32(o.Eps),
				WeightDecay: jf32(o.WeightDecay), Decoupled: o.Decoupled, AMSGrad: o.AMSGrad, Steps: slices.Clone(o.steps)}, []string{"exp_avg", "exp_avg_sq"}
			if o.AMSGrad {
				slots = append(slots, "max_exp_avg_sq")
			}
		}
	case *RMSProp:
		if o != nil {
			b, st, slots = &o.optBase, optimizerState{Type: "RMSProp", Alpha: jf32(o.Alpha), Eps: jf32(o.Eps), Momentum: jf32(o.Momentum),
				WeightDecay: jf32(o.WeightDecay), Centered: o.Centered}, []string{"square_avg", "grad_avg", "momentum_buffer"}
		}
	case *Adagrad:
		if o != nil {
			b, st, slots = &o.optBase, optimizerState{Type: "Adagrad", LRDecay: jf32(o.LRDecay), WeightDecay: jf32(o.WeightDecay),
				InitialAcc: jf32(o.InitialAccumulatorValue), Eps: jf32(o.Eps), Steps: slices.Clone(o.steps)}, []string{"sum"}
		}
	case *Adamax:
		if o != nil {
			b, st, slots = &o.optBase, optimizerState{Type: "Adamax", Beta1: jf32(o.Beta1), Beta2: jf32(o.Beta2), Eps: jf32(o.Eps),
				WeightDecay: jf32(o.WeightDecay), Steps: slices.Clone(o.steps)}, []string{"exp_avg", "exp_inf"}
		}
	case *NAdam:
		if o != nil {
			b, st, slots = &o.optBase, optimizerState{Type: "NAdam", Beta1: jf32(o.Beta1), Beta2: jf32(o.Beta2), Eps: jf32(o.Eps),
				WeightDecay: jf32(o.WeightDecay), MomentumDec: jf32(o.MomentumDecay), Decoupled: o.Decoupled,
				Steps: slices.Clone(o.steps), MuProduct: slices.Clone(o.muProduct)}, []string{"exp_avg", "exp_avg_sq"}
		}
	case *RAdam:
		if o != nil {
			b, st, slots = &o.optBase, optimizerState{Type: "RAdam", Beta1: jf32(o.Beta1), Beta2: jf32(o.Beta2), Eps: jf32(o.Eps),
				WeightDecay: jf32(o.WeightDecay), Decoupled: o.Decoupled, Steps: slices.Clone(o.steps)}, []string{"exp_avg", "exp_avg_sq"}
		}
	}
	if b == nil {
		return st, nil, nil, nil, false
	}
	st.Params, st.LR, st.Groups = len(b.params), jf32(b.lr), b.groupStates()
	return st, slots, b.state, b.params, true
}

// checkOptimizerState checks st's counters and groups against its
// parameter count, and turns an older file's NoDecay into its groups.
func checkOptimizerState(st *optimizerState) error {
	switch {
	case st.Type != "SGD" && st.Type != "RMSProp" && len(st.Steps) != st.Params:
		return fmt.Errorf("%d step counts for %d parameters", len(st.Steps), st.Params)
	case st.Type == "NAdam" && len(st.MuProduct) != st.Params:
		return fmt.Errorf("%d μ products for %d parameters", len(st.MuProduct), st.Params)
	case st.Type == "SGD" && len(st.Started) != st.Params:
		return fmt.Errorf("%d momentum flags for %d parameters", len(st.Started), st.Params)
	case st.NoDecay < 0 || st.NoDecay > st.Params:
		return fmt.Errorf("%d parameters without weight decay of %d", st.NoDecay, st.Params)
	case st.NoDecay > 0 && len(st.Groups) > 0:
		return fmt.Errorf("both no_decay and groups")
	}
	if st.NoDecay > 0 { // NewAdamWGroups' two groups
		st.Groups = []groupState{{Params: st.Params - st.NoDecay}, {Params: st.NoDecay, OwnDecay: true}}
	}
	n := 0
	for k, g := range st.Groups {
		if g.Params < 0 || !(g.LRScale >= 0) || g.WeightDecay != g.WeightDecay {
			return fmt.Errorf("group %d: %d parameters, lr scale %v, weight decay %v", k, g.Params, g.LRScale, g.WeightDecay)
		}
		n += g.Params
	}
	if len(st.Groups) > 0 && n != st.Params {
		return fmt.Errorf("groups of %d parameters in all for %d parameters", n, st.Params)
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
	f := func(v jf32) float32 { return float32(v) }
	var b *optBase
	switch o := opt.(type) {
	case *SGD:
		b = &o.optBase
		o.Momentum, o.Dampening, o.WeightDecay, o.Nesterov = f(st.Momentum), f(st.Dampening), f(st.WeightDecay), st.Nesterov
		copy(o.started, st.Started)
	case *Adam:
		b = &o.optBase
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay, o.Decoupled = f(st.Beta1), f(st.Beta2), f(st.Eps), f(st.WeightDecay), st.Decoupled
		copy(o.steps, st.Steps)
	case *RMSProp:
		b = &o.optBase
		o.Alpha, o.Eps, o.Momentum, o.WeightDecay, o.Centered = f(st.Alpha), f(st.Eps), f(st.Momentum), f(st.WeightDecay), st.Centered
	case *Adagrad:
		b = &o.optBase
		o.LRDecay, o.WeightDecay, o.InitialAccumulatorValue, o.Eps = f(st.LRDecay), f(st.WeightDecay), f(st.InitialAcc), f(st.Eps)
		copy(o.steps, st.Steps)
	case *Adamax:
		b = &o.optBase
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay = f(st.Beta1), f(st.Beta2), f(st.Eps), f(st.WeightDecay)
		copy(o.steps, st.Steps)
	case *NAdam:
		b = &o.optBase
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay, o.MomentumDecay, o.Decoupled = f(st.Beta1), f(st.Beta2), f(st.Eps), f(st.WeightDecay), f(st.MomentumDec), st.Decoupled
		copy(o.steps, st.Steps)
		copy(o.muProduct, st.MuProduct)
	case *RAdam:
		b = &o.optBase
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay, o.Decoupled = f(st.Beta1), f(st.Beta2), f(st.Eps), f(st.WeightDecay), st.Decoupled
		copy(o.steps, st.Steps)
	}
	b.lr = f(st.LR)
	b.restoreGroups(st.Groups)
}
