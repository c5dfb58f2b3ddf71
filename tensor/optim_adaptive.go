package tensor

import (
	"math"
	"slices"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/simd"
)

// The adaptive optimizer steps: PyTorch's optim.Adagrad, Adamax, NAdam,
// RAdam and Adam's amsgrad option. They take lists as SGDStep, AdamStep
// and RMSPropStep do (one entry per parameter, contiguous tensors of the
// parameter's shape, all on one device, a nil gradient skipping its
// parameter and state, no overlap) and run on the device of their
// tensors, through its Optim family (OptimKernels: one multi-tensor
// launch a step on a GPU), on the host through the same blocked simd
// updates as the others. Their per-step scalar factors (bias
// corrections, Adagrad's learning-rate decay, NAdam's μ products, RAdam's
// rectification: AdagradStepSize, AdamaxStepSize, NAdamAdvance,
// RAdamCorrections) are computed in float64 on the host and rounded
// once, the same for every device; the elementwise arithmetic is
// float32, one rounding an operation but where simd's Axpy fuses a
// multiply-add, as the other steps (a device's kernel fuses where it
// may, so its results are the CPU's within a few ulps, not bit for bit).
// On a device, an error of the implementation panics as the other steps'
// do, the step counts (and NAdam's μ products) as they were before.

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
	dev := optimDevice(op, params, grads, sum)
	k := optimOn(op, dev, params)
	countedStep(op, dev, params, grads, steps, func() error { return k.Adagrad(params, grads, sum, steps, hp) })
}

// AdagradStepSize returns Adagrad's step size at step t,
// LR/(1 + (t-1)·LRDecay), computed in float64 and rounded once.
func AdagradStepSize(hp AdagradParams, t int64) float32 {
	return float32(float64(hp.LR) / (1 + float64(t-1)*float64(hp.LRDecay)))
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
	dev := optimDevice(op, params, grads, m, u)
	k := optimOn(op, dev, params)
	countedStep(op, dev, params, grads, steps, func() error { return k.Adamax(params, grads, m, u, steps, hp) })
}

// AdamaxStepSize returns Adamax's bias-corrected step size at step t,
// LR/(1-β₁ᵗ), computed in float64 and rounded once.
func AdamaxStepSize(hp AdamaxParams, t int64) float32 {
	return float32(float64(hp.LR) / (1 - math.Pow(float64(hp.Beta1), float64(t))))
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
	dev := optimDevice(op, params, grads, m, v)
	k := optimOn(op, dev, params)
	// The implementation advances the products (NAdamAdvance, which
	// computes each μₜ once for the product and the factors). A device's
	// step may fail (the CPU's does not): the products are then put back.
	var saved *[]float64
	if dev != CPU {
		saved = muSaved.Get()
		*saved = append((*saved)[:0], muProduct...)
		defer muSaved.Put(saved)
	}
	countedStep(op, dev, params, grads, steps, func() error {
		err := k.NAdam(params, grads, m, v, steps, muProduct, hp)
		if err != nil && saved != nil {
			copy(muProduct, *saved)
		}
		return err
	})
}

// muSaved holds the copies of NAdamStep's μ products that a failed step
// puts back.
var muSaved freelist.Stack[[]float64]

// NAdamMu returns NAdam's momentum coefficient of step t,
// μₜ = β₁(1 - ½·0.96^(t·MomentumDecay)), in float64.
func NAdamMu(hp NAdamParams, t int64) float64 {
	return float64(hp.Beta1) * (1 - 0.5*math.Pow(0.96, float64(t)*float64(hp.MomentumDecay)))
}

// NAdamCorrections returns NAdamAdvance's factors at step t of a
// parameter whose μ product, through μₜ, is muProduct (already advanced),
// computing μₜ again.
//
// Deprecated: Use NAdamAdvance, which advances the product and returns
// the factors, computing μₜ once; nothing in the module calls
// NAdamCorrections, which stays for existing callers.
func NAdamCorrections(hp NAdamParams, t int64, muProduct float64) (cg, cm, invSqrtBC2 float32) {
	return nadamFactors(hp, t, NAdamMu(hp, t), muProduct)
}

// NAdamAdvance multiplies *muProduct, the μ product of a parameter
// through μₜ₋₁, by μₜ (NAdamMu) and returns NAdam's factors at step t
// with the advanced product Πμ: those of g/d and m/d, -LR(1-μₜ)/(1-Πμ)
// and -LR·μₜ₊₁/(1-Πμ·μₜ₊₁), and 1/√(1-β₂ᵗ), computed in float64 and
// rounded once, μₜ computed once for the product and the factors. It is
// what an implementation of OptimKernels.NAdam does for each parameter
// with a gradient.
func NAdamAdvance(hp NAdamParams, t int64, muProduct *float64) (cg, cm, invSqrtBC2 float32) {
	mu := NAdamMu(hp, t)
	*muProduct *= mu
	return nadamFactors(hp, t, mu, *muProduct)
}

// nadamFactors is NAdamAdvance's factors given μₜ = mu and the advanced
// product.
func nadamFactors(hp NAdamParams, t int64, mu, muProduct float64) (cg, cm, invSqrtBC2 float32) {
	lr := float64(hp.LR)
	muNext := NAdamMu(hp, t+1)
	return float32(-lr * (1 - mu) / (1 - muProduct)), float32(-lr * muNext / (1 - muProduct*muNext)),
		float32(1 / math.Sqrt(1-math.Pow(float64(hp.Beta2), float64(t))))
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
	dev := optimDevice(op, params, grads, m, v)
	k := optimOn(op, dev, params)
	countedStep(op, dev, params, grads, steps, func() error { return k.RAdam(params, grads, m, v, steps, hp) })
}

// RAdamCorrections returns RAdam's factor at step t and whether the step
// is rectified (ρₜ > 5): the factor of m/(√v + Eps),
// -LR·r·√(1-β₂ᵗ)/(1-β₁ᵗ), when it is, else that of m, -LR/(1-β₁ᵗ);
// computed in float64 and rounded once.
func RAdamCorrections(hp RAdamParams, t int64) (c float32, rectified bool) {
	b1, b2, ft := float64(hp.Beta1), float64(hp.Beta2), float64(t)
	bc1, bc2 := 1-math.Pow(b1, ft), 1-math.Pow(b2, ft)
	rhoInf := 2/(1-b2) - 1
	rho := rhoInf - 2*ft*math.Pow(b2, ft)/bc2
	if rho > 5 {
		r := math.Sqrt((rho - 4) * (rho - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rho))
		return float32(-float64(hp.LR) * r * math.Sqrt(bc2) / bc1), true
	}
	return float32(-float64(hp.LR) / bc1), false
}

// AdamAMSGradStep is AdamStep with PyTorch's amsgrad=True: the
// denominator takes the running maximum of v instead of v,
//
//	m ← β₁m + (1-β₁)g,  v ← β₂v + (1-β₂)g²,  v̂ ← max(v̂, v)
//	p ← p - LR/(1-β₁ᵗ) · m/(√v̂/√(1-β₂ᵗ) + ε)
//
// (weight decay, step counts and bias corrections as AdamStep's), v̂
// being vmax[i] (PyTorch's max_exp_avg_sq).
func AdamAMSGradStep(params, grads, m, v, vmax []*Tensor, steps []int64, hp AdamParams) {
	const op = "AdamAMSGradStep"
	checkStep(op, params, grads, len(steps), "step counts")
	checkSlots(op, params, "m", m)
	checkSlots(op, params, "v", v)
	checkSlots(op, params, "vmax", vmax)
	dev := optimDevice(op, params, grads, m, v, vmax)
	k := optimOn(op, dev, params)
	countedStep(op, dev, params, grads, steps, func() error { return k.Adam(params, grads, m, v, vmax, steps, hp) })
}

// perParam returns s resized to n elements, reusing its memory.
func perParam(s []float32, n int) []float32 { return slices.Grow(s[:0], n)[:n] }

// Adagrad is the CPU's AdagradStep (the operands on the host; steps
// advanced).
func (cpuKernels) Adagrad(params, grads, sum []*Tensor, steps []int64, hp AdagradParams) error {
	j := optimJobs.Get()
	u := &j.ada
	u.hp, u.clr = hp, perParam(u.clr, len(params))
	for i, g := range grads {
		if g != nil {
			u.clr[i] = AdagradStepSize(hp, steps[i])
		}
	}
	j.blocks(params, grads, u, sum)
	optimJobs.Put(j)
	return nil
}

// Adamax is the CPU's AdamaxStep (the operands on the host; steps
// advanced).
func (cpuKernels) Adamax(params, grads, m, inf []*Tensor, steps []int64, hp AdamaxParams) error {
	j := optimJobs.Get()
	u := &j.adamax
	u.hp, u.clr = hp, perParam(u.clr, len(params))
	for i, g := range grads {
		if g != nil {
			u.clr[i] = AdamaxStepSize(hp, steps[i])
		}
	}
	j.blocks(params, grads, u, m, inf)
	optimJobs.Put(j)
	return nil
}

// NAdam is the CPU's NAdamStep (the operands on the host; steps
// advanced, the μ products advanced here, NAdamAdvance).
func (cpuKernels) NAdam(params, grads, m, v []*Tensor, steps []int64, muProduct []float64, hp NAdamParams) error {
	j := optimJobs.Get()
	u := &j.nadam
	u.hp = hp
	u.cg, u.cm, u.invSqrtBC2 = perParam(u.cg, len(params)), perParam(u.cm, len(params)), perParam(u.invSqrtBC2, len(params))
	for i, g := range grads {
		if g != nil {
			u.cg[i], u.cm[i], u.invSqrtBC2[i] = NAdamAdvance(hp, steps[i], &muProduct[i])
		}
	}
	j.blocks(params, grads, u, m, v)
	optimJobs.Put(j)
	return nil
}

// RAdam is the CPU's RAdamStep (the operands on the host; steps
// advanced).
func (cpuKernels) RAdam(params, grads, m, v []*Tensor, steps []int64, hp RAdamParams) error {
	j := optimJobs.Get()
	u := &j.radam
	u.hp = hp
	u.c, u.rect = perParam(u.c, len(params)), slices.Grow(u.rect[:0], len(params))[:len(params)]
	for i, g := range grads {
		if g != nil {
			u.c[i], u.rect[i] = RAdamCorrections(hp, steps[i])
		}
	}
	j.blocks(params, grads, u, m, v)
	optimJobs.Put(j)
	return nil
}

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

// adamDecay applies Adam's weight decay wd: decoupled (AdamW), p shrinks
// by the factor 1-lr·wd; otherwise (L2) the returned gradient is g+wd·p,
// in t1. Without decay it returns g.
func adamDecay(p, g []float32, lr, wd float32, decoupled bool, t1 []float32) []float32 {
	switch {
	case wd != 0 && decoupled:
		simd.Scale(p, p, 1-lr*wd)
	case wd != 0:
		g = withL2(g, p, wd, t1)
	}
	return g
}

// adamMoments is the start of the Adam family's updates: the weight decay
// (decoupled: p ← p·(1 - lr·wd); else g ← g + wd·p in t1) and the moments
// m ← β₁m + (1-β₁)g, v ← β₂v + (1-β₂)g² (t2 scratch). It returns the
// gradient the update uses (g or t1).
func adamMoments(p, g, m, v []float32, lr, b1, b2, wd float32, decoupled bool, t1, t2 []float32) []float32 {
	g = adamDecay(p, g, lr, wd, decoupled, t1)
	simd.AdamMoments(g, m, v, t2, b1, b2)
	return g
}
