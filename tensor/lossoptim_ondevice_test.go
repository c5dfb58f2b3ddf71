package tensor_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestLossOnDevice checks that the losses with device operands run on the
// device's Loss family, once a call, and leave the loss and gradient
// there, equal to the CPU's (the stand-in runs the CPU's code); that host
// operands beside device ones (a 0-d one included: the losses take no
// host scalar) and a device without the family panic naming the op and
// the devices; and that the device's error is the op's panic.
func TestLossOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(67, 68))
	lab := FromSlice([]float32{0, 4, 2}, 3)
	for _, c := range []struct {
		name, call   string
		f            func(p, y *Tensor) (*Tensor, *Tensor)
		into         func(l, g, p, y *Tensor)
		pred, target *Tensor
	}{
		{"CrossEntropy", "Loss.Class", CrossEntropy, CrossEntropyInto, RandN(r, 3, 5), lab},
		{"MSE", "Loss.Pointwise", MSE, MSEInto, RandN(r, 2, 7), RandN(r, 2, 7)},
		{"BCEWithLogits", "Loss.Pointwise", BCEWithLogits, BCEWithLogitsInto, RandN(r, 4), RandU(r, 0, 1, 4)},
	} {
		wl, wg := c.f(c.pred, c.target)
		dp, dt := toDev(t, c.pred, onDev), toDev(t, c.target, onDev)
		var grad *Tensor
		sameOnDevice(t, c.name+" loss", d, func() *Tensor { l, g := c.f(dp, dt); grad = g; return l }, wl, c.call)
		if g := fromDev(t, c.name+" gradient", grad, onDev); !slices.Equal(g.Data(), wg.Data()) {
			t.Errorf("%s on the device: gradient %v, the CPU's %v", c.name, g.Data(), wg.Data())
		}
		l, _ := NewOn(onDev)
		sameOnDevice(t, c.name+"Into (the loss alone)", d, func() *Tensor { c.into(l, nil, dp, dt); return l }, wl, c.call)
	}

	x := RandN(r, 2, 3)
	lab = FromSlice([]float32{0, 2}, 2)
	dx, dlab := toDev(t, x, onDev), toDev(t, lab, onDev)
	panics(t, "tensor: CrossEntropy: [2 3] on device(7) and [2] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { CrossEntropy(dx, lab) })
	panics(t, "tensor: CrossEntropyInto: [] on cpu and [2 3] on device(7) and [2 3] on device(7) and [2] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { CrossEntropyInto(New(), toDev(t, New(2, 3), onDev), dx, dlab) })
	panics(t, "tensor: MSE: [] on device(7) and [] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { MSE(toDev(t, Scalar(1), onDev), Scalar(2)) })
	panics(t, "tensor: CrossEntropy: [2 3] on device(7) and [2] on device(7) (result [] on device(7)): label 3 of row 1 outside [0, 3)",
		func() { CrossEntropy(dx, toDev(t, FromSlice([]float32{0, 3}, 2), onDev)) })
	d.SetFaults(tensortest.Faults{Kernels: errors.New("out of memory")})
	panics(t, "tensor: MSE: [2 3] on device(7) and [2 3] on device(7) (result [] on device(7)): out of memory",
		func() { MSE(dx, dx) })
	d.SetFaults(tensortest.Faults{})

	registerBare(t, otherDev)
	ox, olab := toDev(t, x, otherDev), toDev(t, lab, otherDev)
	panics(t, "tensor: CrossEntropy: [2 3] on device(8) and [2] on device(8): device(8) has no Loss kernels; copy the operands with To(tensor.CPU)",
		func() { CrossEntropy(ox, olab) })
	panics(t, "tensor: CrossEntropy: [2 3] on device(7) and [2] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { CrossEntropy(dx, olab) })
}

// TestOptimOnDevice checks that steps over device tensors run on the
// device's Optim family, one call a step with no transfer, leave
// everything on the device and give the CPU's results bit for bit; and
// that tensors in two places, a device without the family and the
// device's error panic naming the step and the devices.
func TestOptimOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(77, 78))
	shapes := [][]int{{3, 4}, {1500}, {}}
	var ps, dps, gs, dgs []*Tensor
	// The state: slot 0 SGD's, 1 and 2 Adam's, 3 to 5 RMSProp's, 6 to 8
	// AMSGrad's, 9 Adagrad's, 10 and 11 Adamax's, 12 and 13 NAdam's, 14
	// and 15 RAdam's.
	slots := make([][]*Tensor, 16)
	dslots := make([][]*Tensor, 16)
	for _, s := range shapes {
		p := RandN(r, s...)
		ps, dps = append(ps, p), append(dps, toDev(t, p, onDev))
		for k := range slots {
			slots[k] = append(slots[k], New(s...))
			dslots[k] = append(dslots[k], toDev(t, New(s...), onDev))
		}
	}
	started, dstarted := make([]bool, 3), make([]bool, 3)
	// The step counts of Adam, AMSGrad, Adagrad, Adamax, NAdam and RAdam,
	// and NAdam's μ products.
	steps, dsteps := make([][]int64, 6), make([][]int64, 6)
	for k := range steps {
		steps[k], dsteps[k] = make([]int64, 3), make([]int64, 3)
	}
	mu, dmu := []float64{1, 1, 1}, []float64{1, 1, 1}
	sgd := SGDParams{LR: 0.05, Momentum: 0.9, WeightDecay: 0.01}
	adam := AdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true}
	rms := RMSPropParams{LR: 1e-2, Alpha: 0.9, Eps: 1e-6, Momentum: 0.5, Centered: true}
	ada := AdagradParams{LR: 1e-2, LRDecay: 0.01, WeightDecay: 0.01, Eps: 1e-10}
	amax := AdamaxParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	nadam := NAdamParams{LR: 2e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, MomentumDecay: 4e-3}
	radam := RAdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Decoupled: true}
	// every runs each step on the lists of one side: parameters,
	// gradients, state, counters.
	every := func(ps, gs []*Tensor, s [][]*Tensor, started []bool, steps [][]int64, mu []float64) []struct {
		call string
		step func()
	} {
		return []struct {
			call string
			step func()
		}{
			{"Optim.SGD", func() { SGDStep(ps, gs, s[0], started, sgd) }},
			{"Optim.Adam", func() { AdamStep(ps, gs, s[1], s[2], steps[0], adam) }},
			{"Optim.RMSProp", func() { RMSPropStep(ps, gs, s[3], s[4], s[5], rms) }},
			{"Optim.Adam", func() { AdamAMSGradStep(ps, gs, s[6], s[7], s[8], steps[1], adam) }},
			{"Optim.Adagrad", func() { AdagradStep(ps, gs, s[9], steps[2], ada) }},
			{"Optim.Adamax", func() { AdamaxStep(ps, gs, s[10], s[11], steps[3], amax) }},
			{"Optim.NAdam", func() { NAdamStep(ps, gs, s[12], s[13], steps[4], mu, nadam) }},
			{"Optim.RAdam", func() { RAdamStep(ps, gs, s[14], s[15], steps[5], radam) }},
		}
	}
	for step := range 10 { // each parameter 6 or 7 steps: RAdam rectified from its step 6
		gs, dgs = gs[:0], dgs[:0]
		for i, s := range shapes {
			var g, dg *Tensor
			if (i+step)%3 != 0 {
				g = RandN(r, s...)
				dg = toDev(t, g, onDev)
			}
			gs, dgs = append(gs, g), append(dgs, dg)
		}
		for _, f := range every(ps, gs, slots, started, steps, mu) {
			f.step()
		}
		for _, f := range every(dps, dgs, dslots, dstarted, dsteps, dmu) {
			before := d.Counts()
			f.step()
			oneCall(t, f.call, d, before, f.call)
			if c := d.Counts(); c.Uploads+c.Downloads+c.Allocs != before.Uploads+before.Downloads+before.Allocs {
				t.Errorf("%s: transfers or allocations on the device: %+v after %+v", f.call, c, before)
			}
		}
	}
	if !slices.Equal(started, dstarted) || !slices.EqualFunc(steps, dsteps, slices.Equal) || !slices.Equal(mu, dmu) {
		t.Errorf("counters %v %v %v on the device, %v %v %v on the CPU", dstarted, dsteps, dmu, started, steps, mu)
	}
	hp := SGDParams{LR: 0.1}
	h, dh := []*Tensor{New(2, 3)}, []*Tensor{toDev(t, New(2, 3), onDev)}
	panics(t, "tensor: SGDStep: parameter 0: tensors of shape [2 3] on device(7) and cpu; copy them to one device with To",
		func() { SGDStep(dh, h, nil, make([]bool, 1), hp) })
	panics(t, "tensor: SGDStep: parameter 0: tensors of shape [2 3] on cpu and device(7); copy them to one device with To",
		func() { SGDStep(h, h, dh, make([]bool, 1), SGDParams{LR: 0.1, Momentum: 0.9}) })
	d.SetFaults(tensortest.Faults{Kernels: errors.New("out of memory")})
	panics(t, "tensor: SGDStep: 1 parameters on device(7): out of memory", func() { SGDStep(dh, dh, nil, make([]bool, 1), hp) })
	d.SetFaults(tensortest.Faults{})
	registerBare(t, otherDev)
	oh := []*Tensor{toDev(t, New(2, 3), otherDev)}
	panics(t, "tensor: SGDStep: [2 3] on device(8): device(8) has no Optim kernels; copy the operands with To(tensor.CPU)",
		func() { SGDStep(oh, []*Tensor{nil}, nil, make([]bool, 1), hp) })
}
