package nn

import (
	"github.com/lanesgo/lanes/tensor"
)

// The optimizers of this file (Adagrad, Adamax, NAdam, RAdam), as Adam's
// AMSGrad option, step through tensor's AdagradStep, AdamaxStep,
// NAdamStep, RAdamStep and AdamAMSGradStep: on the device of their
// parameters (their state is made there), one multi-tensor launch a step
// on a GPU, and in a GraphStep's replays as Adam does (the device takes
// the factors of the step counts, and NAdam's μ products, from memory
// filled before each launch). Each parameter keeps its own step count t,
// as PyTorch's state["step"].

// Adagrad is PyTorch's optim.Adagrad (see tensor.AdagradStep):
//
//	g ← g + WeightDecay·p,  s ← s + g²
//	p ← p - lr/(1 + (t-1)·LRDecay) · g/(√s + Eps)
//
// where s starts at InitialAccumulatorValue (PyTorch's
// initial_accumulator_value; s is filled with it at the parameter's first
// step, so the field may be set after NewAdagrad).
type Adagrad struct {
	LRDecay, WeightDecay, InitialAccumulatorValue, Eps float32
	optBase
	steps []int64
}

// NewAdagrad returns Adagrad over params with learning rate lr and
// PyTorch's defaults: no lr decay, no weight decay, accumulators from 0,
// ε = 1e-10.
func NewAdagrad(params []*Var, lr float32) *Adagrad {
	return &Adagrad{Eps: 1e-10, optBase: optBase{params: params, lr: lr, state: newState("NewAdagrad", params, 1)},
		steps: make([]int64, len(params))}
}

// Step implements Optimizer.
func (o *Adagrad) Step() {
	values, grads := o.operands()
	for i, g := range grads {
		// (a step that fails leaves the count at 0: the next fills again)
		if g != nil && o.steps[i] == 0 && o.InitialAccumulatorValue != 0 {
			tensor.Fill(o.state[0][i], o.InitialAccumulatorValue)
		}
	}
	o.eachGroup(o.WeightDecay, func(lo, hi int, lr, wd float32) {
		tensor.AdagradStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.steps[lo:hi],
			tensor.AdagradParams{LR: lr, LRDecay: o.LRDecay, WeightDecay: wd, Eps: o.Eps})
	})
}

// Adamax is PyTorch's optim.Adamax, Adam with the infinity norm (see
// tensor.AdamaxStep):
//
//	g ← g + WeightDecay·p
//	m ← β₁m + (1-β₁)g,  u ← max(β₂u, |g| + Eps)
//	p ← p - lr/(1-β₁ᵗ) · m/u
type Adamax struct {
	Beta1, Beta2, Eps, WeightDecay float32
	optBase
	steps []int64
}

// NewAdamax returns Adamax over params with learning rate lr (PyTorch's
// default is 2e-3) and PyTorch's defaults: β = (0.9, 0.999), ε = 1e-8, no
// weight decay.
func NewAdamax(params []*Var, lr float32) *Adamax {
	return &Adamax{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, optBase: optBase{params: params, lr: lr, state: newState("NewAdamax", params, 2)},
		steps: make([]int64, len(params))}
}

// Step implements Optimizer.
func (o *Adamax) Step() {
	values, grads := o.operands()
	o.eachGroup(o.WeightDecay, func(lo, hi int, lr, wd float32) {
		tensor.AdamaxStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.state[1][lo:hi], o.steps[lo:hi],
			tensor.AdamaxParams{LR: lr, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: wd})
	})
}

// NAdam is PyTorch's optim.NAdam, Adam with Nesterov momentum and
// Dozat's momentum schedule μₜ = β₁(1 - ½·0.96^(t·MomentumDecay)) (see
// tensor.NAdamStep for the update); Decoupled is PyTorch's
// decoupled_weight_decay (AdamW's decay, p ← p·(1 - lr·WeightDecay)).
// The product of the μₜ of each parameter is kept in float64.
type NAdam struct {
	Beta1, Beta2, Eps, WeightDecay, MomentumDecay float32
	Decoupled                                     bool
	optBase
	steps     []int64
	muProduct []float64
}

// NewNAdam returns NAdam over params with learning rate lr (PyTorch's
// default is 2e-3) and PyTorch's defaults: β = (0.9, 0.999), ε = 1e-8,
// momentum decay 4e-3, no weight decay.
func NewNAdam(params []*Var, lr float32) *NAdam {
	o := &NAdam{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MomentumDecay: 4e-3,
		optBase: optBase{params: params, lr: lr, state: newState("NewNAdam", params, 2)},
		steps:   make([]int64, len(params)), muProduct: make([]float64, len(params))}
	for i := range o.muProduct {
		o.muProduct[i] = 1
	}
	return o
}

// Step implements Optimizer.
func (o *NAdam) Step() {
	values, grads := o.operands()
	o.eachGroup(o.WeightDecay, func(lo, hi int, lr, wd float32) {
		tensor.NAdamStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.state[1][lo:hi], o.steps[lo:hi], o.muProduct[lo:hi],
			tensor.NAdamParams{LR: lr, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: wd, MomentumDecay: o.MomentumDecay, Decoupled: o.Decoupled})
	})
}

// RAdam is PyTorch's optim.RAdam, Adam with Liu et al.'s rectification of
// the adaptive term, which it leaves out while the variance of the
// adaptive rate is intractable (ρₜ ≤ 5; see tensor.RAdamStep); Decoupled
// is PyTorch's decoupled_weight_decay.
type RAdam struct {
	Beta1, Beta2, Eps, WeightDecay float32
	Decoupled                      bool
	optBase
	steps []int64
}

// NewRAdam returns RAdam over params with learning rate lr and PyTorch's
// defaults: β = (0.9, 0.999), ε = 1e-8, no weight decay.
func NewRAdam(params []*Var, lr float32) *RAdam {
	return &RAdam{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, optBase: optBase{params: params, lr: lr, state: newState("NewRAdam", params, 2)},
		steps: make([]int64, len(params))}
}

// Step implements Optimizer.
func (o *RAdam) Step() {
	values, grads := o.operands()
	o.eachGroup(o.WeightDecay, func(lo, hi int, lr, wd float32) {
		tensor.RAdamStep(values[lo:hi], grads[lo:hi], o.state[0][lo:hi], o.state[1][lo:hi], o.steps[lo:hi],
			tensor.RAdamParams{LR: lr, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: wd, Decoupled: o.Decoupled})
	})
}
