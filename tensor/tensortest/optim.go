package tensortest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestOptim is the conformance test of a device's Optim family: 4 steps
// of every rule (SGD with momentum, dampening, Nesterov's momentum and
// weight decay; Adam with L2 decay; AdamW; RMSProp, centered and with
// momentum) over parameters of several shapes (empty, 0-d, a matrix, more
// than one block of 1024 elements) on dev, some without a gradient in some
// steps, must leave every parameter and state tensor on dev, give the
// CPU's step counts and flags exactly and its parameters and state within
// 1e-5 relative to each tensor's largest element. dev may be tensor.CPU
// (then it checks the CPU against itself).
func TestOptim(t *testing.T, dev tensor.Device) {
	t.Helper()
	type stepFunc func(ps, gs []*tensor.Tensor, slots [][]*tensor.Tensor, started []bool, steps []int64)
	for _, c := range []struct {
		name  string
		slots int
		step  stepFunc
	}{
		{"SGD/momentum+dampening+wd", 1, func(ps, gs []*tensor.Tensor, s [][]*tensor.Tensor, started []bool, _ []int64) {
			tensor.SGDStep(ps, gs, s[0], started, tensor.SGDParams{LR: 0.05, Momentum: 0.9, Dampening: 0.1, WeightDecay: 0.01})
		}},
		{"SGD/nesterov", 1, func(ps, gs []*tensor.Tensor, s [][]*tensor.Tensor, started []bool, _ []int64) {
			tensor.SGDStep(ps, gs, s[0], started, tensor.SGDParams{LR: 0.05, Momentum: 0.9, Nesterov: true})
		}},
		{"Adam/wd", 2, func(ps, gs []*tensor.Tensor, s [][]*tensor.Tensor, _ []bool, steps []int64) {
			tensor.AdamStep(ps, gs, s[0], s[1], steps, tensor.AdamParams{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1})
		}},
		{"AdamW", 2, func(ps, gs []*tensor.Tensor, s [][]*tensor.Tensor, _ []bool, steps []int64) {
			tensor.AdamStep(ps, gs, s[0], s[1], steps, tensor.AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true})
		}},
		{"RMSProp/centered+momentum+wd", 3, func(ps, gs []*tensor.Tensor, s [][]*tensor.Tensor, _ []bool, _ []int64) {
			tensor.RMSPropStep(ps, gs, s[0], s[1], s[2], tensor.RMSPropParams{LR: 1e-2, Alpha: 0.9, Eps: 1e-6, Momentum: 0.5, WeightDecay: 0.05, Centered: true})
		}},
	} {
		r := rand.New(rand.NewPCG(83, 84))
		shapes := [][]int{{0}, {}, {3, 4}, {1500}, {7}}
		type state struct {
			params  []*tensor.Tensor
			slots   [][]*tensor.Tensor
			started []bool
			steps   []int64
		}
		host := state{slots: make([][]*tensor.Tensor, c.slots), started: make([]bool, len(shapes)), steps: make([]int64, len(shapes))}
		on := state{slots: make([][]*tensor.Tensor, c.slots), started: make([]bool, len(shapes)), steps: make([]int64, len(shapes))}
		for _, sh := range shapes {
			p := tensor.RandN(r, sh...)
			host.params = append(host.params, p)
			on.params = append(on.params, onDevice(t, dev, p))
			for k := range c.slots {
				host.slots[k] = append(host.slots[k], tensor.New(sh...))
				on.slots[k] = append(on.slots[k], newOn(t, dev, sh...))
			}
		}
		for step := range 4 {
			gs, dgs := make([]*tensor.Tensor, len(shapes)), make([]*tensor.Tensor, len(shapes))
			for i, sh := range shapes {
				if (i+step)%3 != 0 {
					gs[i] = tensor.RandN(r, sh...)
					dgs[i] = onDevice(t, dev, gs[i])
				}
			}
			c.step(host.params, gs, host.slots, host.started, host.steps)
			c.step(on.params, dgs, on.slots, on.started, on.steps)
		}
		if !slices.Equal(on.started, host.started) || !slices.Equal(on.steps, host.steps) {
			t.Errorf("%s on %v: started %v, steps %v; the CPU's %v, %v", c.name, dev, on.started, on.steps, host.started, host.steps)
		}
		for i := range shapes {
			pairs := [][2]*tensor.Tensor{{on.params[i], host.params[i]}}
			for k := range c.slots {
				pairs = append(pairs, [2]*tensor.Tensor{on.slots[k][i], host.slots[k][i]})
			}
			for k, p := range pairs {
				what := fmt.Sprintf("%s on %v: parameter %d (shape %v), tensor %d (0: the parameter, then its state)", c.name, dev, i, shapes[i], k)
				if p[0].Device() != dev {
					t.Errorf("%s: on %v", what, p[0].Device())
					continue
				}
				closeTensors(t, what, p[0], p[1], 1e-5)
			}
		}
	}
}
