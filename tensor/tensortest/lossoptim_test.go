package tensortest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestLossConformance runs the Loss family's conformance test on the CPU
// and on the stand-in, where the losses must have run.
func TestLossConformance(t *testing.T) {
	t.Run("cpu", func(t *testing.T) { tensortest.TestLoss(t, tensor.CPU) })
	d := tensortest.Register(t, dev)
	t.Run("stand-in", func(t *testing.T) { tensortest.TestLoss(t, dev) })
	for _, m := range []string{"Loss.CrossEntropy", "Loss.MSE", "Loss.BCEWithLogits"} {
		if d.Counts().Calls[m] == 0 {
			t.Errorf("%s never ran on the stand-in", m)
		}
	}
}

// TestOptimConformance runs the Optim family's conformance test on the
// CPU and on the stand-in, and checks that a step there is one family
// call with no transfer.
func TestOptimConformance(t *testing.T) {
	t.Run("cpu", func(t *testing.T) { tensortest.TestOptim(t, tensor.CPU) })
	d := tensortest.Register(t, dev)
	t.Run("stand-in", func(t *testing.T) { tensortest.TestOptim(t, dev) })
	for _, m := range []string{"Optim.SGD", "Optim.Adam", "Optim.RMSProp"} {
		if d.Counts().Calls[m] == 0 {
			t.Errorf("%s never ran on the stand-in", m)
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	ps := []*tensor.Tensor{to(t, tensor.RandN(r, 3, 4)), to(t, tensor.RandN(r, 5))}
	gs := []*tensor.Tensor{to(t, tensor.RandN(r, 3, 4)), nil}
	m := []*tensor.Tensor{to(t, tensor.New(3, 4)), to(t, tensor.New(5))}
	v := []*tensor.Tensor{to(t, tensor.New(3, 4)), to(t, tensor.New(5))}
	steps := make([]int64, 2)
	d.Reset()
	tensor.AdamStep(ps, gs, m, v, steps, tensor.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	want(t, d.Counts(), 0, 0, 0, 0, 0, map[string]int64{"Optim.Adam": 1})
}
