//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static float *lanes_opt_ptr(uintptr_t p) { return (float *)p; }
static int lanes_optim_on(lanes_stream s, const LanesOptTable *t, const LanesOptParams *h) { return lanes_optim(s, t, h); }
*/
import "C"

import (
	"slices"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/tensor"
)

// The Optim family (tensor.OptimKernels): SGD (momentum, dampening,
// Nesterov, weight decay), Adam and AdamW (AMSGrad or not), RMSProp
// (centered, momentum), Adagrad, Adamax, NAdam and RAdam, each a
// multi-tensor kernel (optim.cu): one launch updates the parameters of a
// table of up to LANES_OPT_TENSORS tensors, passed as the kernel's
// argument (no upload, no synchronization), so a model of that many
// parameters takes one launch a step and a larger one one per table.
// Per-parameter scalars ride in the table: SGD's started flags, the
// factors of each parameter's own step count (tensor.AdamCorrections,
// AdagradStepSize, AdamaxStepSize, NAdamAdvance, RAdamCorrections,
// as every device's).

// optTensors is the most tensors of a table.
const optTensors = C.LANES_OPT_TENSORS

// optScalars is the scalars of a table's tensor (a, b, c).
const optScalars = 3

// optim runs a step of kind over the parameters with a gradient: slots
// are its state lists (nil ones, or nil entries, not read), scalars
// gives parameter i's table scalars.
//
// During a capture, a step with replay (not nil) takes the table
// scalars from the graph's argument block: before each replay but the
// first, replay advances the host state they come from, then scalars
// gives the new ones.
func (g *GPU) optim(op string, h C.LanesOptParams, params, grads []*tensor.Tensor, slots [3][]*tensor.Tensor, scalars func(i int) [optScalars]float32, replay func()) error {
	if !g.opened() {
		return errNilGPU
	}
	c := &call{g: g}
	defer c.release()
	ptr := func(i int, t *tensor.Tensor) *C.float {
		return C.lanes_opt_ptr(C.uintptr_t(c.on(op, i, t).ptr))
	}
	var tables []C.LanesOptTable
	var t *C.LanesOptTable
	var members [][]int // the parameters of each table
	for i, gr := range grads {
		if gr == nil || params[i].Len() == 0 {
			continue
		}
		if t == nil || t.count == optTensors {
			tables = append(tables, C.LanesOptTable{})
			t = &tables[len(tables)-1]
			members = append(members, nil)
		}
		members[len(members)-1] = append(members[len(members)-1], i)
		k := t.count
		t.p[k], t.g[k] = ptr(i, params[i]), ptr(i, gr)
		for s, list := range slots {
			if list != nil && list[i] != nil {
				p := ptr(i, list[i])
				switch s {
				case 0:
					t.s0[k] = p
				case 1:
					t.s1[k] = p
				default:
					t.s2[k] = p
				}
			}
		}
		sc := scalars(i)
		t.a[k], t.b[k], t.c[k] = C.float(sc[0]), C.float(sc[1]), C.float(sc[2])
		t.start[k+1] = t.start[k] + C.longlong(params[i].Len())
		t.count++
	}
	if cp := g.capturing.Load(); cp != nil && replay != nil {
		for k := range tables {
			in := members[k]
			ptr, err := cp.arg(op, optScalars*len(in), func(dst []float32, advance bool) {
				if advance && k == 0 {
					replay() // once a step, before the first table's scalars
				}
				for j, i := range in {
					sc := scalars(i)
					copy(dst[optScalars*j:], sc[:])
				}
			})
			if err != nil {
				return err
			}
			tables[k].scalars = C.lanes_opt_ptr(C.uintptr_t(ptr))
		}
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	for k := range tables {
		if err := check("lanes_optim", C.lanes_optim_on(g.stream, &tables[k], &h)); err != nil {
			return err
		}
	}
	return nil
}

// advanceSteps returns the replay of a step that counts: it advances the
// step counts of the parameters with a gradient, as the public step does,
// then calls then (nil: nothing more) for each of them.
func advanceSteps(grads []*tensor.Tensor, steps []int64, then func(i int)) func() {
	return func() {
		for i, gr := range grads {
			if gr != nil {
				steps[i]++
				if then != nil {
					then(i)
				}
			}
		}
	}
}

// SGD implements tensor.OptimKernels.
func (g *GPU) SGD(params, grads, momentum []*tensor.Tensor, started []bool, hp tensor.SGDParams) error {
	h := C.LanesOptParams{kind: C.LANES_OPT_SGD, lr: C.float(hp.LR), momentum: C.float(hp.Momentum), dampening: C.float(hp.Dampening),
		weight_decay: C.float(hp.WeightDecay), nesterov: cbool(hp.Nesterov)}
	if hp.Momentum == 0 {
		momentum = nil
	}
	return g.optim("SGD", h, params, grads, [3][]*tensor.Tensor{momentum}, func(i int) [optScalars]float32 {
		if started[i] {
			return [optScalars]float32{1}
		}
		return [optScalars]float32{}
	}, nil)
}

// adamParams is the kernel's parameters of kind with Adam's
// hyperparameters.
func adamParams(kind C.int, lr, beta1, beta2, eps, wd float32, decoupled bool) C.LanesOptParams {
	return C.LanesOptParams{kind: kind, lr: C.float(lr), beta1: C.float(beta1), beta2: C.float(beta2), eps: C.float(eps),
		weight_decay: C.float(wd), decoupled: cbool(decoupled)}
}

// Adam implements tensor.OptimKernels (AMSGrad with vmax).
func (g *GPU) Adam(params, grads, m, v, vmax []*tensor.Tensor, steps []int64, hp tensor.AdamParams) error {
	h := adamParams(C.LANES_OPT_ADAM, hp.LR, hp.Beta1, hp.Beta2, hp.Eps, hp.WeightDecay, hp.Decoupled)
	h.amsgrad = cbool(vmax != nil)
	// In a graph the corrections come from the argument block, and each
	// replay advances the step counts as AdamStep does.
	return g.optim("Adam", h, params, grads, [3][]*tensor.Tensor{m, v, vmax}, func(i int) [optScalars]float32 {
		a, b := tensor.AdamCorrections(hp, steps[i])
		return [optScalars]float32{a, b}
	}, advanceSteps(grads, steps, nil))
}

// RMSProp implements tensor.OptimKernels.
func (g *GPU) RMSProp(params, grads, squareAvg, gradAvg, momentum []*tensor.Tensor, hp tensor.RMSPropParams) error {
	h := C.LanesOptParams{kind: C.LANES_OPT_RMSPROP, lr: C.float(hp.LR), alpha: C.float(hp.Alpha), eps: C.float(hp.Eps), momentum: C.float(hp.Momentum),
		weight_decay: C.float(hp.WeightDecay), centered: cbool(hp.Centered)}
	if !hp.Centered {
		gradAvg = nil
	}
	if hp.Momentum <= 0 {
		momentum = nil
	}
	return g.optim("RMSProp", h, params, grads, [3][]*tensor.Tensor{squareAvg, gradAvg, momentum}, func(int) [optScalars]float32 { return [optScalars]float32{} }, nil)
}

// Adagrad implements tensor.OptimKernels.
func (g *GPU) Adagrad(params, grads, sum []*tensor.Tensor, steps []int64, hp tensor.AdagradParams) error {
	h := C.LanesOptParams{kind: C.LANES_OPT_ADAGRAD, eps: C.float(hp.Eps), weight_decay: C.float(hp.WeightDecay)}
	return g.optim("Adagrad", h, params, grads, [3][]*tensor.Tensor{sum}, func(i int) [optScalars]float32 {
		return [optScalars]float32{tensor.AdagradStepSize(hp, steps[i])}
	}, advanceSteps(grads, steps, nil))
}

// Adamax implements tensor.OptimKernels.
func (g *GPU) Adamax(params, grads, m, u []*tensor.Tensor, steps []int64, hp tensor.AdamaxParams) error {
	h := adamParams(C.LANES_OPT_ADAMAX, hp.LR, hp.Beta1, hp.Beta2, hp.Eps, hp.WeightDecay, false)
	return g.optim("Adamax", h, params, grads, [3][]*tensor.Tensor{m, u}, func(i int) [optScalars]float32 {
		return [optScalars]float32{tensor.AdamaxStepSize(hp, steps[i])}
	}, advanceSteps(grads, steps, nil))
}

// NAdam implements tensor.OptimKernels: the μ products advanced with the
// factors (tensor.NAdamAdvance), before the launch; a replay advances
// them with the step counts, as NAdamStep and this method do.
//
// An eager step's factors live in a list of nadamFactors, so the steady
// state allocates none; a captured step's are a list of its own, which
// the graph's hooks keep: each replay advances its parameters' factors
// there and reads them back, and the first launch reads those of the
// captured step.
func (g *GPU) NAdam(params, grads, m, v []*tensor.Tensor, steps []int64, muProduct []float64, hp tensor.NAdamParams) error {
	if !g.opened() {
		return errNilGPU
	}
	h := adamParams(C.LANES_OPT_NADAM, hp.LR, hp.Beta1, hp.Beta2, hp.Eps, hp.WeightDecay, hp.Decoupled)
	var fp *[][optScalars]float32
	if g.capturing.Load() == nil {
		fp = nadamFactors.Get()
		defer nadamFactors.Put(fp)
	} else {
		fp = new([][optScalars]float32)
	}
	f := slices.Grow((*fp)[:0], len(params))[:len(params)]
	*fp = f
	advance := func(i int) {
		cg, cm, ib := tensor.NAdamAdvance(hp, steps[i], &muProduct[i])
		f[i] = [optScalars]float32{cg, cm, ib}
	}
	for i, gr := range grads {
		if gr != nil {
			advance(i)
		}
	}
	return g.optim("NAdam", h, params, grads, [3][]*tensor.Tensor{m, v}, func(i int) [optScalars]float32 { return f[i] },
		advanceSteps(grads, steps, advance))
}

// nadamFactors holds the factor lists of eager NAdam steps.
var nadamFactors freelist.Stack[[][optScalars]float32]

// RAdam implements tensor.OptimKernels.
func (g *GPU) RAdam(params, grads, m, v []*tensor.Tensor, steps []int64, hp tensor.RAdamParams) error {
	h := adamParams(C.LANES_OPT_RADAM, hp.LR, hp.Beta1, hp.Beta2, hp.Eps, hp.WeightDecay, hp.Decoupled)
	return g.optim("RAdam", h, params, grads, [3][]*tensor.Tensor{m, v}, func(i int) [optScalars]float32 {
		c, rect := tensor.RAdamCorrections(hp, steps[i])
		if rect {
			return [optScalars]float32{c, 1}
		}
		return [optScalars]float32{c}
	}, advanceSteps(grads, steps, nil))
}
