package tensor_test

import (
	"errors"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestOptimFailedStepOnDevice checks the rule of the steps that count
// (OptimKernels): when the device's implementation fails, the step panics
// naming itself, the parameters and the device, and no step count, nor
// NAdam's μ product, has moved; the next step, which succeeds, counts
// from where they were.
func TestOptimFailedStepOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	slot := func() []*Tensor { return []*Tensor{toDev(t, New(3), onDev), toDev(t, New(2), onDev)} }
	ps, gs := slot(), []*Tensor{toDev(t, Full(0.5, 3), onDev), nil}
	steps, mu := []int64{4, 7}, []float64{0.5, 0.25}
	adam := AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	nadam := NAdamParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, MomentumDecay: 4e-3}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"AdamStep", func() { AdamStep(ps, gs, slot(), slot(), steps, adam) }},
		{"AdamAMSGradStep", func() { AdamAMSGradStep(ps, gs, slot(), slot(), slot(), steps, adam) }},
		{"AdagradStep", func() { AdagradStep(ps, gs, slot(), steps, AdagradParams{LR: 1e-2, Eps: 1e-10}) }},
		{"AdamaxStep", func() {
			AdamaxStep(ps, gs, slot(), slot(), steps, AdamaxParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		}},
		{"NAdamStep", func() { NAdamStep(ps, gs, slot(), slot(), steps, mu, nadam) }},
		{"RAdamStep", func() {
			RAdamStep(ps, gs, slot(), slot(), steps, RAdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		}},
	} {
		d.SetFaults(tensortest.Faults{Kernels: errors.New("out of memory")})
		panics(t, "tensor: "+c.name+": 2 parameters on device(7): out of memory", c.f)
		d.SetFaults(tensortest.Faults{})
		if !slices.Equal(steps, []int64{4, 7}) || !slices.Equal(mu, []float64{0.5, 0.25}) {
			t.Fatalf("%s: step counts %v and μ products %v after a failed step, want [4 7] and [0.5 0.25]", c.name, steps, mu)
		}
		c.f()
		if !slices.Equal(steps, []int64{5, 7}) {
			t.Fatalf("%s: step counts %v after a step, want [5 7]", c.name, steps)
		}
		if c.name == "NAdamStep" {
			if want := 0.5 * NAdamMu(nadam, 5); mu[0] != want || mu[1] != 0.25 {
				t.Fatalf("NAdamStep: μ products %v after a step, want [%v 0.25]", mu, want)
			}
			mu[0] = 0.5
		}
		steps[0] = 4
	}
}
