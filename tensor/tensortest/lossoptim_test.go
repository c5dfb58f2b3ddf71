package tensortest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestLossOptimOnStandIn checks that the Loss and Optim suites ran on the
// stand-in's families, and that an optimizer step there is one family
// call with no transfer or allocation.
func TestLossOptimOnStandIn(t *testing.T) {
	d := tensortest.Register(t, dev)
	t.Run("Loss", func(t *testing.T) { tensortest.TestLoss(t, dev) })
	t.Run("Optim", func(t *testing.T) { tensortest.TestOptim(t, dev) })
	for _, m := range []string{"Loss.Class", "Loss.Pointwise", "Optim.SGD", "Optim.Adam", "Optim.RMSProp",
		"Optim.Adagrad", "Optim.Adamax", "Optim.NAdam", "Optim.RAdam"} {
		if d.Counts().Calls[m] == 0 {
			t.Errorf("%s never ran on the stand-in", m)
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	ps := []*tensor.Tensor{to(t, tensor.RandN(r, 3, 4)), to(t, tensor.RandN(r, 5))}
	gs := []*tensor.Tensor{to(t, tensor.RandN(r, 3, 4)), nil}
	m := []*tensor.Tensor{to(t, tensor.New(3, 4)), to(t, tensor.New(5))}
	v := []*tensor.Tensor{to(t, tensor.New(3, 4)), to(t, tensor.New(5))}
	d.Reset()
	tensor.AdamStep(ps, gs, m, v, make([]int64, 2), tensor.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	want(t, d.Counts(), 0, 0, 0, 0, 0, map[string]int64{"Optim.Adam": 1})
}
