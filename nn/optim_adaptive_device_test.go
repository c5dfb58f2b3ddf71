package nn

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestAdaptiveOptimizersOnDevice trains parameters on a stand-in device
// with each optimizer of torchOptimizers (Adagrad, Adamax, NAdam, RAdam,
// AMSGrad, parameter groups) and NAdam's and RAdam's decoupled decay: the
// state is made there, a Step calls the device's Optim family (once a
// parameter group) with no transfer, and no allocation after the first
// (AMSGrad's v̂), and after 8 steps
// (RAdam's last ones rectified), each parameter without a gradient in
// some, the parameters and state equal the CPU's bit for bit (the
// stand-in runs the CPU's code).
func TestAdaptiveOptimizersOnDevice(t *testing.T) {
	d := tensortest.Register(t, testDev)
	dev := d.Device()
	makers := maps.Clone(torchOptimizers)
	makers["NAdam/decoupled"] = func(ps []*Var) Optimizer {
		o := NewNAdam(ps, 1e-2)
		o.WeightDecay, o.Decoupled = 0.1, true
		return o
	}
	makers["RAdam/decoupled"] = func(ps []*Var) Optimizer {
		o := NewRAdam(ps, 1e-2)
		o.WeightDecay, o.Decoupled = 0.1, true
		return o
	}
	for _, name := range slices.Sorted(maps.Keys(makers)) {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(45, 46))
			w, b := tensor.RandN(r, 40, 30), tensor.RandN(r, 1100)
			host := []*Var{NewParam(w), NewParam(b)}
			on := []*Var{NewParam(onDev(t, w, dev)), NewParam(onDev(t, b, dev))}
			hopt, dopt := makers[name](host), makers[name](on)
			for step := range 8 {
				hopt.ZeroGrad()
				dopt.ZeroGrad()
				for k := range host {
					if (k+step)%4 == 0 {
						continue
					}
					g := tensor.RandN(r, host[k].value.Shape()...)
					host[k].grad, host[k].gradOK = g, true
					on[k].grad, on[k].gradOK = onDev(t, g, dev), true
				}
				d.Reset()
				dopt.Step()
				cs := d.Counts()
				optim := int64(0)
				for c, n := range cs.Calls {
					if strings.HasPrefix(c, "Optim.") {
						optim += n
					}
				}
				// (AMSGrad makes its v̂ at the first Step)
				if cs.Uploads+cs.Downloads != 0 || cs.Allocs != 0 && step > 0 || optim == 0 {
					t.Errorf("step %d: counts %+v, want Optim calls and no transfer or allocation", step, cs)
				}
				hopt.Step()
				if devs := stateDevices(dopt); !allOn(devs, dev) {
					t.Fatalf("state on %v, want %v", devs, dev)
				}
			}
			for k := range host {
				if on[k].value.Device() != dev || !slices.Equal(on[k].value.Data(), host[k].value.Data()) {
					t.Errorf("parameter %d on %v: %v, the CPU's %v", k, on[k].value.Device(), on[k].value.Data()[:3], host[k].value.Data()[:3])
				}
			}
			_, _, hs, _, _ := optimizerOf(hopt)
			_, _, ds, _, _ := optimizerOf(dopt)
			for k := range hs {
				for i := range hs[k] {
					if !slices.Equal(ds[k][i].Data(), hs[k][i].Data()) {
						t.Errorf("state %d of parameter %d differs from the CPU's", k, i)
					}
				}
			}
		})
	}
}
