package tensor_test

import (
	"fmt"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestOptimHostOnlyOnDevice checks that the host-only steps reject device
// tensors, naming themselves and the device, before touching anything.
func TestOptimHostOnlyOnDevice(t *testing.T) {
	tensortest.Register(t, onDev)
	p := toDev(t, New(3), onDev)
	g := toDev(t, New(3), onDev)
	ps, gs, slot, steps := []*Tensor{p}, []*Tensor{g}, []*Tensor{toDev(t, New(3), onDev)}, make([]int64, 1)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"AdagradStep", func() { AdagradStep(ps, gs, slot, steps, AdagradParams{}) }},
		{"AdamaxStep", func() { AdamaxStep(ps, gs, slot, slot, steps, AdamaxParams{}) }},
		{"NAdamStep", func() { NAdamStep(ps, gs, slot, slot, steps, []float64{1}, NAdamParams{}) }},
		{"RAdamStep", func() { RAdamStep(ps, gs, slot, slot, steps, RAdamParams{}) }},
		{"AdamAMSGradStep", func() { AdamAMSGradStep(ps, gs, slot, slot, slot, steps, AdamParams{}) }},
	} {
		panics(t, fmt.Sprintf("tensor: %s: not available on device %v (copy the parameters, gradients and state to the host with To)", c.name, onDev), c.f)
		if steps[0] != 0 {
			t.Fatalf("%s: step count %d after the panic, want 0", c.name, steps[0])
		}
	}
}
