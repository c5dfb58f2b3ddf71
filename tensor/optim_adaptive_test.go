package tensor

import (
	"math"
	"testing"
)

// The host-only steps join optCases, so that TestOptimReference checks
// them at every SIMD level against these float64 references (PyTorch's
// single-tensor paths of torch/optim adagrad.py, adamax.py, nadam.py,
// radam.py, adam.py with amsgrad) and TestOptimAllocs that they allocate
// nothing.
func init() {
	optCases = append(optCases,
		adagradCase("Adagrad", AdagradParams{LR: 0.05, Eps: 1e-10}),
		adagradCase("Adagrad/lr_decay+wd", AdagradParams{LR: 0.05, LRDecay: 0.1, WeightDecay: 0.05, Eps: 1e-6}),
		adamaxCase("Adamax", AdamaxParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}),
		adamaxCase("Adamax/wd", AdamaxParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1}),
		nadamCase("NAdam", NAdamParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MomentumDecay: 4e-3}),
		nadamCase("NAdam/wd", NAdamParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, MomentumDecay: 0.05}),
		nadamCase("NAdam/decoupled", NAdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, MomentumDecay: 4e-3, Decoupled: true}),
		// β₂ = 0.999 and 0.9 take the unrectified branch (ρₜ ≤ 5) in
		// steps 1 to 5 and the rectified one from step 6; β₂ = 0.8 keeps
		// ρₜ ≤ 5 (TestOptimRAdamBranches).
		radamCase("RAdam", RAdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}),
		radamCase("RAdam/rectified+wd", RAdamParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.9, Eps: 1e-6, WeightDecay: 0.1}),
		radamCase("RAdam/decoupled", RAdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.8, Eps: 1e-8, WeightDecay: 0.1, Decoupled: true}),
		amsgradCase("AdamAMSGrad", AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}),
		amsgradCase("AdamAMSGrad/W", AdamParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.9, Eps: 1e-6, WeightDecay: 0.1, Decoupled: true}),
	)
}

// l2 returns the gradient with L2 weight decay, and applies decoupled
// decay to p, as PyTorch's Adam family does.
func l2(r *refParam, i int, g, lr, wd float64, decoupled bool) float64 {
	if decoupled {
		r.p[i] *= 1 - lr*wd
		return g
	}
	return g + wd*r.p[i]
}

func adagradCase(name string, hp AdagradParams) optCase {
	return optCase{name, 1,
		func(ps, gs []*Tensor, s [][]*Tensor, _ []bool, steps []int64) { AdagradStep(ps, gs, s[0], steps, hp) },
		func(r *refParam, g []float64) {
			r.t++
			clr := float64(hp.LR) / (1 + float64(r.t-1)*float64(hp.LRDecay))
			for i := range r.p {
				gi := g[i] + float64(hp.WeightDecay)*r.p[i]
				r.s[0][i] += gi * gi
				r.p[i] -= clr * gi / (math.Sqrt(r.s[0][i]) + float64(hp.Eps))
			}
		}}
}

func adamaxCase(name string, hp AdamaxParams) optCase {
	return optCase{name, 2,
		func(ps, gs []*Tensor, s [][]*Tensor, _ []bool, steps []int64) {
			AdamaxStep(ps, gs, s[0], s[1], steps, hp)
		},
		func(r *refParam, g []float64) {
			b1, b2 := float64(hp.Beta1), float64(hp.Beta2)
			r.t++
			clr := float64(hp.LR) / (1 - math.Pow(b1, float64(r.t)))
			m, u := r.s[0], r.s[1]
			for i := range r.p {
				gi := g[i] + float64(hp.WeightDecay)*r.p[i]
				m[i] = b1*m[i] + (1-b1)*gi
				u[i] = math.Max(b2*u[i], math.Abs(gi)+float64(hp.Eps))
				r.p[i] -= clr * m[i] / u[i]
			}
		}}
}

// nadamMu holds NAdamStep's μ products of the parameter lists the cases
// step (keyed by the first parameter), and nadamRefMu the references'
// (keyed by the reference parameter).
var (
	nadamMu    = map[*Tensor][]float64{}
	nadamRefMu = map[*refParam]float64{}
)

func nadamCase(name string, hp NAdamParams) optCase {
	return optCase{name, 2,
		func(ps, gs []*Tensor, s [][]*Tensor, _ []bool, steps []int64) {
			mu, ok := nadamMu[ps[0]]
			if !ok {
				mu = make([]float64, len(ps))
				for i := range mu {
					mu[i] = 1
				}
				nadamMu[ps[0]] = mu
			}
			NAdamStep(ps, gs, s[0], s[1], steps, mu, hp)
		},
		func(r *refParam, g []float64) {
			lr, b1, b2, eps, wd := float64(hp.LR), float64(hp.Beta1), float64(hp.Beta2), float64(hp.Eps), float64(hp.WeightDecay)
			r.t++
			t := float64(r.t)
			prod, ok := nadamRefMu[r]
			if !ok {
				prod = 1
			}
			mu := b1 * (1 - 0.5*math.Pow(0.96, t*float64(hp.MomentumDecay)))
			muNext := b1 * (1 - 0.5*math.Pow(0.96, (t+1)*float64(hp.MomentumDecay)))
			prod *= mu
			nadamRefMu[r] = prod
			bc2 := 1 - math.Pow(b2, t)
			m, v := r.s[0], r.s[1]
			for i := range r.p {
				gi := l2(r, i, g[i], lr, wd, hp.Decoupled)
				m[i] = b1*m[i] + (1-b1)*gi
				v[i] = b2*v[i] + (1-b2)*gi*gi
				d := math.Sqrt(v[i]/bc2) + eps
				r.p[i] += -lr*(1-mu)/(1-prod)*gi/d - lr*muNext/(1-prod*muNext)*m[i]/d
			}
		}}
}

func radamCase(name string, hp RAdamParams) optCase {
	return optCase{name, 2,
		func(ps, gs []*Tensor, s [][]*Tensor, _ []bool, steps []int64) {
			RAdamStep(ps, gs, s[0], s[1], steps, hp)
		},
		func(r *refParam, g []float64) {
			lr, b1, b2, eps, wd := float64(hp.LR), float64(hp.Beta1), float64(hp.Beta2), float64(hp.Eps), float64(hp.WeightDecay)
			r.t++
			t := float64(r.t)
			bc1, bc2 := 1-math.Pow(b1, t), 1-math.Pow(b2, t)
			rhoInf := 2/(1-b2) - 1
			rho := rhoInf - 2*t*math.Pow(b2, t)/bc2
			m, v := r.s[0], r.s[1]
			for i := range r.p {
				gi := l2(r, i, g[i], lr, wd, hp.Decoupled)
				m[i] = b1*m[i] + (1-b1)*gi
				v[i] = b2*v[i] + (1-b2)*gi*gi
				mhat := m[i] / bc1
				if rho > 5 {
					rect := math.Sqrt((rho - 4) * (rho - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rho))
					r.p[i] -= mhat * lr * math.Sqrt(bc2) / (math.Sqrt(v[i]) + eps) * rect
				} else {
					r.p[i] -= mhat * lr
				}
			}
		}}
}

func amsgradCase(name string, hp AdamParams) optCase {
	return optCase{name, 3,
		func(ps, gs []*Tensor, s [][]*Tensor, _ []bool, steps []int64) {
			AdamAMSGradStep(ps, gs, s[0], s[1], s[2], steps, hp)
		},
		func(r *refParam, g []float64) {
			lr, b1, b2, eps, wd := float64(hp.LR), float64(hp.Beta1), float64(hp.Beta2), float64(hp.Eps), float64(hp.WeightDecay)
			r.t++
			m, v, vmax := r.s[0], r.s[1], r.s[2]
			bc1, bc2 := 1-math.Pow(b1, float64(r.t)), 1-math.Pow(b2, float64(r.t))
			for i := range r.p {
				gi := l2(r, i, g[i], lr, wd, hp.Decoupled)
				m[i] = b1*m[i] + (1-b1)*gi
				v[i] = b2*v[i] + (1-b2)*gi*gi
				vmax[i] = math.Max(vmax[i], v[i])
				r.p[i] -= lr / bc1 * m[i] / (math.Sqrt(vmax[i])/math.Sqrt(bc2) + eps)
			}
		}}
}

// TestOptimRAdamBranches checks that the RAdam cases run both of its
// branches: ρₜ ≤ 5 in steps 1 to 5 and ρₜ > 5 from step 6 for β₂ = 0.999
// and 0.9, ρₜ ≤ 5 throughout for β₂ = 0.8.
func TestOptimRAdamBranches(t *testing.T) {
	rho := func(b2 float64, t float64) float64 {
		inf := 2/(1-b2) - 1
		return inf - 2*t*math.Pow(b2, t)/(1-math.Pow(b2, t))
	}
	for _, b2 := range []float64{0.999, 0.9} {
		if r5, r6 := rho(b2, 5), rho(b2, 6); r5 > 5 || r6 <= 5 {
			t.Errorf("β₂ %v: ρ₅ = %v, ρ₆ = %v, want <= 5 then > 5", b2, r5, r6)
		}
	}
	if r := rho(0.8, 6); r > 5 {
		t.Errorf("β₂ 0.8: ρ₆ = %v, want <= 5", r)
	}
}

// TestNAdamCorrections: the deprecated NAdamCorrections, given the product
// NAdamAdvance leaves, returns NAdamAdvance's factors bit for bit.
func TestNAdamCorrections(t *testing.T) {
	hp := NAdamParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MomentumDecay: 4e-3}
	prod := 1.0
	for step := int64(1); step <= 5; step++ {
		cg, cm, ib := NAdamAdvance(hp, step, &prod)
		if g, m, b := NAdamCorrections(hp, step, prod); g != cg || m != cm || b != ib {
			t.Fatalf("step %d: NAdamCorrections = %v, %v, %v; NAdamAdvance %v, %v, %v", step, g, m, b, cg, cm, ib)
		}
	}
}
