package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/lanesgo/lanes/simd"
)

// The host-only optimizer steps: PyTorch's optim.Adagrad, Adamax, NAdam,
// RAdam and Adam's amsgrad option. They take lists as SGDStep, AdamStep
// and RMSPropStep do (one entry per parameter, contiguous tensors of the
// parameter's shape, a nil gradient skipping its parameter and state,
// no overlap) and run on the CPU only, through the same blocked simd
// updates: they are not in the device families (OptimKernels), so
// tensors on a device make them panic with "tensor: <Step>: not
// available on device <d>" (copy the parameters, gradients and state to
// the host with To, or use SGD, Adam or RMSProp there). Their per-step
// scalar factors (bias corrections, NAdam's μ products, RAdam's
// rectification) are computed in float64 on the host and rounded once;
// the elementwise arithmetic is float32, one rounding an operation but
// where simd's Axpy fuses a multiply-add, as the other steps.

// AdagradParams are Adagrad's hyperparameters (PyTorch's optim.Adagrad:
// lr, lr_decay, weight_decay, eps; initial_accumulator_value is the
// value the caller fills the sums with).
type AdagradParams struct {
	LR, LRDecay, WeightDecay, Eps float32
}

// AdamaxParams are Adamax's hyperparameters (PyTorch's optim.Adamax).
type AdamaxParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
}

// NAdamParams are NAdam's hyperparameters (PyTorch's optim.NAdam:
// momentum_decay is MomentumDecay; Decoupled is decoupled_weight_decay).
type NAdamParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay, MomentumDecay float32
	Decoupled                                         bool
}

// RAdamParams are RAdam's hyperparameters (PyTorch's optim.RAdam;
// Decoupled is decoupled_weight_decay).
type RAdamParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Decoupled                          bool
}

// AdagradStep is one step of Adagrad as PyTorch's optim.Adagrad, for
// every parameter i with a gradient:
//
//	steps[i] ← steps[i] + 1, t = steps[i]
//	g ← g + WeightDecay·p
//	s ← s + g²
//	p ← p - LR/(1 + (t-1)·LRDecay) · g/(√s + Eps)
//
// s is sum[i] (PyTorch's "sum", which starts at initial_accumulator_value).
func AdagradStep(params, grads, sum []*Tensor, steps []int64, hp AdagradParams) {
	const op = "AdagradStep"
	checkStep(op, params, grads, len(steps), "step counts")
	checkSlots(op, params, "sum", sum)
	hostOptim(op, params, grads, sum)
	j := optimJobs.Get()
	u := &j.ada
	u.hp = hp
	u.clr = perParam(u.clr, len(params))
	for i, g := range grads {
		if g != nil {
			steps[i]++
			u.clr[i] = float32(float64(hp.LR) / (1 + float64(steps[i]-1)*float64(hp.LRDecay)))
		}
	}
	j.blocks(params, grads, u, sum)
	optimJobs.Put(j)
}

// AdamaxStep is one step of Adamax (Kingma and Ba's infinity-norm Adam)
// as PyTorch's optim.Adamax, for every parameter i with a gradient:
//
//	steps[i] ← steps[i] + 1, t = steps[i]
//	g ← g + WeightDecay·p
//	m ← β₁m + (1-β₁)g,  u ← max(β₂u, |g| + Eps)
//	p ← p - LR/(1-β₁ᵗ) · m/u
//
// m and u are m[i] and u[i] (PyTorch's exp_avg and exp_inf).
func AdamaxStep(params, grads, m, u []*Tensor, steps []int64, hp AdamaxParams) {
	const op = "AdamaxStep"
	checkStep(op, params, grads, len(steps), "step counts")
	checkSlots(op, params, "m", m)
	checkSlots(op, params, "u", u)
	hostOptim(op, params, grads, m, u)
	j := optimJobs.Get()
	up := &j.adamax
	up.hp = hp
	up.clr = perParam(up.clr, len(params))
	for i, g := range grads {
		if g != nil {
			steps[i]++
			up.clr[i] = float32(float64(hp.LR) / (1 - math.Pow(float64(hp.Beta1), float64(steps[i]))))
		}
	}
	j.blocks(params, grads, up, m, u)
	optimJobs.Put(j)
}

// NAdamStep is one step of NAdam (Dozat's Nesterov Adam) as PyTorch's
// optim.NAdam (2.x; PyTorch 1.13 multiplied μₜ twice into the next
// product), for every parameter i with a gradient:
//
//	steps[i] ← steps[i] + 1, t = steps[i]
//	p ← p·(1 - LR·WeightDecay) if Decoupled, else g ← g + WeightDecay·p
//	μₜ = β₁(1 - ½·0.96^(t·MomentumDecay)),  μₜ₊₁ likewise with t+1
//	muProduct[i] ← muProduct[i]·μₜ   (Πμ, 1 for a new parameter)
//	m ← β₁m + (1-β₁)g,  v ← β₂v + (1-β₂)g²,  d = √(v/(1-β₂ᵗ)) + Eps
//	p ← p - LR(1-μₜ)/(1-Πμ) · g/d - LR·μₜ₊₁/(1-Πμ·μₜ₊₁) · m/d
//
// m and v are m[i] and v[i]. muProduct stays on the host in float64
// (PyTorch keeps it as a float32 scalar tensor, so its factors differ
// from these in the 7th digit).
func NAdamStep(params, grads, m, v []*Tensor, steps []int64, muProduct []float64, hp NAdamParams) {
	const op = "NAdamStep"
	checkStep(op, params, grads, len(steps), "step counts")
	checkStep(op, params, grads, len(muProduct), "μ products")
	checkSlots(op, params, "m", m)
	checkSlots(op, params, "v", v)
	hostOptim(op, params, grads, m, v)
	j := optimJobs.Get()
	u := &j.nadam
	u.hp = hp
	u.cg, u.cm, u.invSqrtBC2 = perParam(u.cg, len(params)), perParam(u.cm, len(params)), perParam(u.invSqrtBC2, len(params))
	b1, b2, lr := float64(hp.Beta1), float64(hp.Beta2), float64(hp.LR)
	for i, g := range grads {
		if g == nil {
			continue
		}
		steps[i]++
		t := float64(steps[i])
		mu := b1 * (1 - 0.5*math.Pow(0.96, t*float64(hp.MomentumDecay)))
		muNext := b1 * (1 - 0.5*math.Pow(0.96, (t+1)*float64(hp.MomentumDecay)))
		muProduct[i] *= mu
		u.cg[i] = float32(-lr * (1 - mu) / (1 - muProduct[i]))
		u.cm[i] = float32(-lr * muNext / (1 - muProduct[i]*muNext))
		u.invSqrtBC2[i] = float32(1 / math.Sqrt(1-math.Pow(b2, t)))
	}
	j.blocks(params, grads, u, m, v)
	optimJobs.Put(j)
}

// RAdamStep is one step of RAdam (Liu et al.'s rectified Adam) as
// PyTorch's optim.RAdam, for every parameter i with a gradient:
//
//	steps[i] ← steps[i] + 1, t = steps[i]
//	p ← p·(1 - LR·WeightDecay) if Decoupled, else g ← g + WeightDecay·p
//	m ← β₁m + (1-β₁)g,  v ← β₂v + (1-β₂)g²
//	ρ∞ = 2/(1-β₂) - 1,  ρₜ = ρ∞ - 2tβ₂ᵗ/(1-β₂ᵗ)
//	ρₜ > 5:  r = √((ρₜ-4)(ρₜ-2)ρ∞ / ((ρ∞-4)(ρ∞-2)ρₜ))
//	         p ← p - LR·r·√(1-β₂ᵗ)/(1-β₁ᵗ) · m/(√v + Eps)
//	ρₜ ≤ 5:  p ← p - LR/(1-β₁ᵗ) · m   (no adaptive term)
//
// m and v are m[i] and v[i].
func RAdamStep(params, grads, m, v []*Tensor, steps []int64, hp RAdamParams) {
	const op = "RAdamStep"
	checkStep(op, params, grads, len(steps), "step counts")
	checkSlots(op, params, "m", m)
	checkSlots(op, params, "v", v)
	hostOptim(op, params, grads, m, v)
	j := optimJobs.Get()
	u := &j.radam
	u.hp = hp
	u.c, u.rect = perParam(u.c, len(params)), slices.Grow(u.rect[:0], len(params))[:len(params)]
	b1, b2 := float64(hp.Beta1), float64(hp.Beta2)
	for i, g := range grads {
		if g == nil {
			continue
		}
		steps[i]++
		t := float64(steps[i])
		bc1, bc2 := 1-math.Pow(b1, t), 1-math.Pow(b2, t)
		rhoInf := 2/(1-b2) - 1
		rho := rhoInf - 2*t*math.Pow(b2, t)/bc2
		u.rect[i] = rho > 5
		if u.rect[i] {
			r := math.Sqrt((rho - 4) * (rho - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rho))
			u.c[i] = float32(-float64(hp.LR) * r * math.Sqrt(bc2) / bc1)
		} else {
			u.c[i] = float32(-float64(hp.LR) / bc1)
		}
	}
	j.blocks(params, grads, u, m, v)
	optimJobs.Put(j)
}

// AdamAMSGradStep is AdamStep with PyTorch's amsgrad=True: the
// denominator takes the running maximum of v instead of v,
//
//	m ← β₁m + (1-β₁)g,  v ← β₂v + (1-β₂)g²,  v̂ ← max(v̂, v)
//	p ← p - LR/(1-β₁ᵗ) · m/(√v̂/√(1-β₂ᵗ) + ε)
//
// (weight decay, step counts and bias corrections as AdamStep's), v̂
// being vmax[i] (PyTorch's max_exp_avg_sq). It runs on the host only.
func AdamAMSGradStep(params, grads, m, v, vmax []*Tensor, steps []int64, hp AdamParams) {
	const op = "AdamAMSGradStep"
	checkStep(op, params, grads, len(steps), "step counts")
	checkSlots(op, params, "m", m)
	checkSlots(op, params, "v", v)
	checkSlots(op, params, "vmax", vmax)
	hostOptim(op, params, grads, m, v, vmax)
	for i, g := range grads {
		if g != nil {
			steps[i]++
		}
	}
	j := optimJobs.Get()
	j.adam.amsgrad = true
	j.adamCorrections(params, grads, steps, hp)
	j.blocks(params, grads, &j.adam, m, v, vmax)
	j.adam.amsgrad = false
	optimJobs.Put(j)
}

// hostOptim panics, naming op, unless every tensor of the lists is on
// the host (the steps of this file have no device implementation).
func hostOptim(op string, lists ...[]*Tensor) {
	if dev := optimDevice(op, lists...); dev != CPU {
		panic(fmt.Sprintf("tensor: %s: not available on device %v (copy the parameters, gradients and state to the host with To)", op, dev))
	}
}

// perParam returns s resized to n elements, reusing its memory.
func perParam(s []float32, n int) []float32 { return slices.Grow(s[:0], n)[:n] }

type adagradUpdate struct {
	hp  AdagradParams
	clr []float32 // each parameter's LR/(1 + (t-1)·LRDecay)
}

func (u *adagradUpdate) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	sum := s[0]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	g = withL2(g, p, u.hp.WeightDecay, t1)
	simd.Mul(t2, g, g)
	simd.Add(sum, sum, t2)
	simd.Sqrt(t2, sum)
	simd.AddScalar(t2, t2, u.hp.Eps)
	simd.Div(t2, g, t2)
	simd.Axpy(p, -u.clr[i], t2)
}

type adamaxUpdate struct {
	hp  AdamaxParams
	clr []float32 // each parameter's LR/(1-β₁ᵗ)
}

func (u *adamaxUpdate) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	o := &u.hp
	m, inf := s[0], s[1]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	g = withL2(g, p, o.WeightDecay, t1)
	simd.Scale(m, m, o.Beta1)
	simd.Axpy(m, 1-o.Beta1, g)
	simd.Abs(t2, g)
	simd.AddScalar(t2, t2, o.Eps)
	simd.Scale(inf, inf, o.Beta2)
	simd.Maximum(inf, inf, t2)
	simd.Div(t2, m, inf)
	simd.Axpy(p, -u.clr[i], t2)
}

type nadamUpdate struct {
	hp NAdamParams
	// Each parameter's factors of g/d and m/d, and 1/√(1-β₂ᵗ).
	cg, cm, invSqrtBC2 []float32
}

func (u *nadamUpdate) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	o := &u.hp
	m, v := s[0], s[1]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	g = adamMoments(p, g, m, v, o.LR, o.Beta1, o.Beta2, o.WeightDecay, o.Decoupled, t1, t2)
	simd.Sqrt(t2, v)
	simd.Scale(t2, t2, u.invSqrtBC2[i])
	simd.AddScalar(t2, t2, o.Eps)
	simd.Div(t1, g, t2) // g may be t1
	simd.Axpy(p, u.cg[i], t1)
	simd.Div(t2, m, t2)
	simd.Axpy(p, u.cm[i], t2)
}

type radamUpdate struct {
	hp RAdamParams
	// Each parameter's factor of m/(√v + ε) (rect) or of m (!rect).
	c    []float32
	rect []bool
}

func (u *radamUpdate) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	o := &u.hp
	m, v := s[0], s[1]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	adamMoments(p, g, m, v, o.LR, o.Beta1, o.Beta2, o.WeightDecay, o.Decoupled, t1, t2)
	if !u.rect[i] {
		simd.Axpy(p, u.c[i], m)
		return
	}
	simd.Sqrt(t2, v)
	simd.AddScalar(t2, t2, o.Eps)
	simd.Div(t2, m, t2)
	simd.Axpy(p, u.c[i], t2)
}

// withL2 returns g + wd·p in t (g itself when wd is 0).
func withL2(g, p []float32, wd float32, t []float32) []float32 {
	if wd == 0 {
		return g
	}
	copy(t, g)
	simd.Axpy(t, wd, p)
	return t
}

// adamMoments is the start of the Adam family's updates: the weight decay
// (decoupled: p ← p·(1 - lr·wd); else g ← g + wd·p in t1) and the moments
// m ← β₁m + (1-β₁)g, v ← β₂v + (1-β₂)g² (t2 scratch). It returns the
// gradient the update uses (g or t1).
func adamMoments(p, g, m, v []float32, lr, b1, b2, wd float32, decoupled bool, t1, t2 []float32) []float32 {
	switch {
	case wd != 0 && decoupled:
		simd.Scale(p, p, 1-lr*wd)
	case wd != 0:
		g = withL2(g, p, wd, t1)
	}
	simd.Scale(m, m, b1)
	simd.Axpy(m, 1-b1, g)
	simd.Mul(t2, g, g)
	simd.Scale(v, v, b2)
	simd.Axpy(v, 1-b2, t2)
	return g
}
