package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refParam is one parameter in float64 with its state, for the
// references of the update rules (PyTorch's single-tensor paths of
// torch/optim sgd.py, adam.py, adamw.py, rmsprop.py).
type refParam struct {
	p       []float64
	s       [3][]float64 // the state slots, in the step functions' order
	t       int64        // Adam's step count
	started bool         // SGD's momentum buffer is set
}

// optCase is an optimizer configuration: step runs the public function
// over params, grads and slots (slot k of every parameter in slots[k]),
// ref the reference over one parameter with gradient g.
type optCase struct {
	name  string
	slots int
	step  func(params, grads []*Tensor, slots [][]*Tensor, started []bool, steps []int64)
	ref   func(r *refParam, g []float64)
}

func sgdCase(name string, hp SGDParams) optCase {
	return optCase{name, 1,
		func(ps, gs []*Tensor, s [][]*Tensor, started []bool, _ []int64) { SGDStep(ps, gs, s[0], started, hp) },
		func(r *refParam, g []float64) {
			mom, damp, wd := float64(hp.Momentum), float64(hp.Dampening), float64(hp.WeightDecay)
			buf := r.s[0]
			for i := range r.p {
				gi := g[i] + wd*r.p[i]
				if mom != 0 {
					if !r.started {
						buf[i] = gi
					} else {
						buf[i] = mom*buf[i] + (1-damp)*gi
					}
					if hp.Nesterov {
						gi += mom * buf[i]
					} else {
						gi = buf[i]
					}
				}
				r.p[i] -= float64(hp.LR) * gi
			}
			r.started = true
		}}
}

func adamCase(name string, hp AdamParams) optCase {
	return optCase{name, 2,
		func(ps, gs []*Tensor, s [][]*Tensor, _ []bool, steps []int64) {
			AdamStep(ps, gs, s[0], s[1], steps, hp)
		},
		func(r *refParam, g []float64) {
			lr, b1, b2, eps, wd := float64(hp.LR), float64(hp.Beta1), float64(hp.Beta2), float64(hp.Eps), float64(hp.WeightDecay)
			r.t++
			m, v := r.s[0], r.s[1]
			bc1, bc2 := 1-math.Pow(b1, float64(r.t)), 1-math.Pow(b2, float64(r.t))
			for i := range r.p {
				gi := g[i]
				if hp.Decoupled {
					r.p[i] *= 1 - lr*wd
				} else {
					gi += wd * r.p[i]
				}
				m[i] = b1*m[i] + (1-b1)*gi
				v[i] = b2*v[i] + (1-b2)*gi*gi
				r.p[i] -= lr / bc1 * m[i] / (math.Sqrt(v[i])/math.Sqrt(bc2) + eps)
			}
		}}
}

func rmspropCase(name string, hp RMSPropParams) optCase {
	return optCase{name, 3,
		func(ps, gs []*Tensor, s [][]*Tensor, _ []bool, _ []int64) { RMSPropStep(ps, gs, s[0], s[1], s[2], hp) },
		func(r *refParam, g []float64) {
			lr, a, eps, mom, wd := float64(hp.LR), float64(hp.Alpha), float64(hp.Eps), float64(hp.Momentum), float64(hp.WeightDecay)
			v, gavg, buf := r.s[0], r.s[1], r.s[2]
			for i := range r.p {
				gi := g[i] + wd*r.p[i]
				v[i] = a*v[i] + (1-a)*gi*gi
				avg := math.Sqrt(v[i])
				if hp.Centered {
					gavg[i] = a*gavg[i] + (1-a)*gi
					avg = math.Sqrt(v[i] - gavg[i]*gavg[i])
				}
				avg += eps
				if mom > 0 {
					buf[i] = mom*buf[i] + gi/avg
					r.p[i] -= lr * buf[i]
				} else {
					r.p[i] -= lr * gi / avg
				}
			}
		}}
}

var optCases = []optCase{
	sgdCase("SGD", SGDParams{LR: 0.1}),
	sgdCase("SGD/momentum+dampening+wd", SGDParams{LR: 0.05, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01}),
	sgdCase("SGD/nesterov+wd", SGDParams{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 0.02}),
	adamCase("Adam", AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}),
	adamCase("Adam/wd", AdamParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1}),
	adamCase("AdamW", AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true}),
	rmspropCase("RMSProp", RMSPropParams{LR: 1e-2, Alpha: 0.99, Eps: 1e-8}),
	rmspropCase("RMSProp/momentum", RMSPropParams{LR: 1e-2, Alpha: 0.95, Eps: 1e-8, Momentum: 0.7}),
	rmspropCase("RMSProp/centered+momentum+wd", RMSPropParams{LR: 1e-2, Alpha: 0.9, Eps: 1e-6, Momentum: 0.5, WeightDecay: 0.05, Centered: true}),
}

// optSizes are the parameters' shapes: empty, one element, around a block
// (optBlock = 1024), several blocks, and enough elements in all for the
// step to be split over the workers (par.SplitFrom).
var optSizes = [][]int{{0}, {}, {1023}, {1024}, {5, 205}, {50, 50}, {70000}}

// optState is a step's operands and counters for parameters of the given
// shapes, with their float64 references.
type optState struct {
	params  []*Tensor
	slots   [][]*Tensor
	started []bool
	steps   []int64
	refs    []refParam
}

func newOptState(r *rand.Rand, slots int, shapes [][]int) *optState {
	s := &optState{slots: make([][]*Tensor, slots), started: make([]bool, len(shapes)), steps: make([]int64, len(shapes))}
	for _, sh := range shapes {
		p := RandN(r, sh...)
		s.params = append(s.params, p)
		ref := refParam{p: float64s(p)}
		for k := range slots {
			s.slots[k] = append(s.slots[k], New(sh...))
			ref.s[k] = make([]float64, p.Len())
		}
		s.refs = append(s.refs, ref)
	}
	return s
}

// grads draws step's gradients: parameter i has none when (i+step)%3 is
// 0, so that parameters start at different steps.
func (s *optState) grads(r *rand.Rand, step int) []*Tensor {
	gs := make([]*Tensor, len(s.params))
	for i, p := range s.params {
		if (i+step)%3 != 0 {
			gs[i] = RandN(r, p.shape...)
		}
	}
	return gs
}

// TestOptimReference runs 9 steps of every rule over parameters of every
// size in optSizes, each without a gradient in 3 of them (so 6 updates,
// enough for RAdam's rectified branch from its step 6), at
// every SIMD level, and checks the parameters and the state against the
// float64 references within 1e-5 relative, the step counts and flags
// exactly, and that the parameters without a gradient did not move.
func TestOptimReference(t *testing.T) {
	atEveryLevel(t, func(t *testing.T) {
		for _, c := range optCases {
			r := rand.New(rand.NewPCG(71, 72))
			s := newOptState(r, c.slots, optSizes)
			for step := range 9 {
				gs := s.grads(r, step)
				before := make([][]float32, len(s.params))
				for i, p := range s.params {
					before[i] = slices.Clone(p.Data())
				}
				c.step(s.params, gs, s.slots, s.started, s.steps)
				for i, g := range gs {
					if g == nil {
						if !slices.Equal(s.params[i].Data(), before[i]) {
							t.Fatalf("%s step %d: parameter %d moved without a gradient", c.name, step, i)
						}
						continue
					}
					c.ref(&s.refs[i], float64s(g))
				}
			}
			for i, p := range s.params {
				ref := &s.refs[i]
				what := fmt.Sprintf("%s: parameter %d (shape %v)", c.name, i, p.shape)
				if strings.HasPrefix(c.name, "Adam") && s.steps[i] != ref.t {
					t.Errorf("%s: step count %d, want %d", what, s.steps[i], ref.t)
				}
				if strings.HasPrefix(c.name, "SGD") && s.started[i] != ref.started {
					t.Errorf("%s: started %v, want %v", what, s.started[i], ref.started)
				}
				closeAll(t, what, p, ref.p)
				for k := range c.slots {
					closeAll(t, fmt.Sprintf("%s slot %d", what, k), s.slots[k][i], ref.s[k])
				}
			}
		}
	})
}

// closeAll fails unless every element of got is within 1e-5·max(1, |want|)
// of want.
func closeAll(t *testing.T, what string, got *Tensor, want []float64) {
	t.Helper()
	for j, v := range got.Data() {
		if !closeTo(v, want[j], 1e-5, math.Max(1, math.Abs(want[j]))) {
			t.Errorf("%s element %d: %v, reference %v", what, j, v, want[j])
			return
		}
	}
}

// TestOptimUnusedSlots checks that the slot lists a step does not read
// may be nil, and that the step then gives what it gives with them.
func TestOptimUnusedSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(73, 74))
	shapes := [][]int{{3, 4}, {5}}
	p1, p2 := []*Tensor{RandN(r, 3, 4), RandN(r, 5)}, []*Tensor(nil)
	for _, p := range p1 {
		p2 = append(p2, p.Clone())
	}
	gs := []*Tensor{RandN(r, 3, 4), RandN(r, 5)}
	slot := func() []*Tensor { return []*Tensor{New(shapes[0]...), New(shapes[1]...)} }
	SGDStep(p1, gs, nil, make([]bool, 2), SGDParams{LR: 0.1, WeightDecay: 0.1})
	SGDStep(p2, gs, slot(), make([]bool, 2), SGDParams{LR: 0.1, WeightDecay: 0.1})
	RMSPropStep(p1, gs, slot(), nil, nil, RMSPropParams{LR: 0.1, Alpha: 0.9, Eps: 1e-6})
	RMSPropStep(p2, gs, slot(), slot(), slot(), RMSPropParams{LR: 0.1, Alpha: 0.9, Eps: 1e-6})
	for i := range p1 {
		if !slices.Equal(p1[i].Data(), p2[i].Data()) {
			t.Errorf("parameter %d: %v without the unused slots, %v with them", i, p1[i].Data(), p2[i].Data())
		}
	}
}

// TestOptimAllocs checks that a step on the host allocates nothing in
// steady state.
func TestOptimAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(75, 76))
	for _, c := range optCases {
		s := newOptState(r, c.slots, [][]int{{30, 30}, {30}, {70000}})
		gs := s.grads(r, 1)
		noAllocs(t, c.name, func() { c.step(s.params, gs, s.slots, s.started, s.steps) })
	}
}

// TestOptimPanics checks the programmer errors: lists of other lengths,
// shapes that differ, views that are not contiguous, nil tensors.
func TestOptimPanics(t *testing.T) {
	ps, gs := []*Tensor{New(2, 3), New(4)}, []*Tensor{New(2, 3), nil}
	m, v := []*Tensor{New(2, 3), New(4)}, []*Tensor{New(2, 3), New(4)}
	steps := make([]int64, 2)
	hp := AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"tensor: AdamStep: 1 gradients for 2 parameters", func() { AdamStep(ps, gs[:1], m, v, steps, hp) }},
		{"tensor: AdamStep: 3 step counts for 2 parameters", func() { AdamStep(ps, gs, m, v, make([]int64, 3), hp) }},
		{"tensor: AdamStep: 1 v tensors for 2 parameters", func() { AdamStep(ps, gs, m, v[:1], steps, hp) }},
		{"tensor: AdamStep: parameter 1 of 2 is nil", func() { AdamStep([]*Tensor{ps[0], nil}, gs, m, v, steps, hp) }},
		{"tensor: AdamStep: parameter 0 of shape [3 2] is not contiguous", func() { AdamStep([]*Tensor{New(2, 3).T(), ps[1]}, gs, m, v, steps, hp) }},
		{"tensor: AdamStep: gradient of shape [3] for parameter 1 of shape [4]", func() { AdamStep(ps, []*Tensor{nil, New(3)}, m, v, steps, hp) }},
		{"tensor: AdamStep: m of parameter 0 (shape [2 3]) is not contiguous", func() { AdamStep(ps, gs, []*Tensor{New(3, 2).T(), m[1]}, v, steps, hp) }},
		{"tensor: AdamStep: m of parameter 1 is nil", func() { AdamStep(ps, gs, []*Tensor{m[0], nil}, v, steps, hp) }},
		{"tensor: SGDStep: 0 momentum tensors for 2 parameters", func() { SGDStep(ps, gs, nil, make([]bool, 2), SGDParams{LR: 1, Momentum: 0.9}) }},
		{"tensor: SGDStep: 1 started flags for 2 parameters", func() { SGDStep(ps, gs, nil, make([]bool, 1), SGDParams{LR: 1}) }},
		{"tensor: RMSPropStep: 0 gradAvg tensors for 2 parameters", func() { RMSPropStep(ps, gs, v, nil, nil, RMSPropParams{Centered: true}) }},
	} {
		expectPanic(t, c.want, c.f)
	}
}
