package nn

import (
	"errors"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// stateDevices returns the devices of opt's state tensors.
func stateDevices(opt Optimizer) []tensor.Device {
	_, _, state, _, _ := optimizerOf(opt)
	var devs []tensor.Device
	for _, slot := range state {
		for _, s := range slot {
			devs = append(devs, s.Device())
		}
	}
	return devs
}

// allOn reports whether every device in devs is dev.
func allOn(devs []tensor.Device, dev tensor.Device) bool {
	for _, d := range devs {
		if d != dev {
			return false
		}
	}
	return len(devs) > 0
}

// TestOptimizersOnDevice trains parameters on a stand-in device with each
// optimizer against the same on the CPU: compatOptimizers (SGD, Adam,
// AdamW, RMSProp; 4 steps, their state made on the device with the
// optimizer, each Step one call of the device's Optim family and no
// allocation) and torchOptimizers (Adagrad, Adamax, NAdam, RAdam,
// AMSGrad, parameter groups) with NAdam's and RAdam's decoupled decay (8
// steps, RAdam's last ones rectified; a Step calls the Optim family once
// a parameter group and allocates nothing after the first, which makes
// AMSGrad's v̂). A Step transfers nothing, the state stays on the device,
// and after the steps, each parameter without a gradient in some, the
// parameters and state equal the CPU's bit for bit (the stand-in runs
// the CPU's code).
func TestOptimizersOnDevice(t *testing.T) {
	d := tensortest.Register(t, testDev)
	dev := d.Device()
	type optCase struct {
		name string
		make func([]*Var) Optimizer
		// call is the one Optim call of a Step ("": one or more, and
		// an allocation allowed at the first step).
		call string
		// steps Steps; parameter k has no gradient at a step where
		// (k+step)%skip is 0.
		steps, skip int
		seed        uint64
	}
	var cases []optCase
	calls := map[string]string{"sgd": "Optim.SGD", "sgd-nesterov": "Optim.SGD", "adam": "Optim.Adam", "adamw": "Optim.Adam", "rmsprop": "Optim.RMSProp"}
	for _, c := range compatOptimizers {
		cases = append(cases, optCase{name: c.name, make: c.make, call: calls[c.name], steps: 4, skip: 3, seed: 41})
	}
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
		cases = append(cases, optCase{name: name, make: makers[name], steps: 8, skip: 4, seed: 45})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(c.seed, c.seed+1))
			w, b := tensor.RandN(r, 40, 30), tensor.RandN(r, 1100)
			host := []*Var{NewParam(w), NewParam(b)}
			on := []*Var{NewParam(onDev(t, w, dev)), NewParam(onDev(t, b, dev))}
			hopt, dopt := c.make(host), c.make(on)
			if devs := stateDevices(dopt); c.call != "" && !allOn(devs, dev) {
				t.Fatalf("state made on %v, want %v", devs, dev)
			}
			for step := range c.steps {
				hopt.ZeroGrad()
				dopt.ZeroGrad()
				for k := range host {
					if (k+step)%c.skip == 0 {
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
				for name, n := range cs.Calls {
					if strings.HasPrefix(name, "Optim.") {
						optim += n
					}
				}
				switch {
				case c.call != "" && (cs.Uploads+cs.Downloads != 0 || cs.Allocs != 0 || cs.Kernels() != 1 || cs.Calls[c.call] != 1):
					t.Errorf("step %d: counts %+v, want one %s call and no transfer or allocation", step, cs, c.call)
				case c.call == "" && (cs.Uploads+cs.Downloads != 0 || cs.Allocs != 0 && step > 0 || optim == 0):
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
					if ds[k][i].Device() != dev || !slices.Equal(ds[k][i].Data(), hs[k][i].Data()) {
						t.Errorf("state %d of parameter %d on %v differs from the CPU's", k, i, ds[k][i].Device())
					}
				}
			}
		})
	}
}

// TestOptimizerTo checks Optimizer.To: an optimizer made before its
// parameters moved panics in Step, naming the devices, until To moves its
// state; a To that fails leaves the state where it was; and state moved
// there and back, with checkpoints saved from the device (through the
// host) and loaded into state on the device, trains as on the CPU.
func TestOptimizerTo(t *testing.T) {
	d := tensortest.Register(t, testDev)
	dev := d.Device()
	r := rand.New(rand.NewPCG(43, 44))
	m, ref := compatModel(), compatModel()
	opt, refOpt := compatOptimizers[2].make([]*Var{m.W, m.B}), compatOptimizers[2].make([]*Var{ref.W, ref.B}) // Adam
	grads := func() []*tensor.Tensor {
		return []*tensor.Tensor{tensor.RandN(r, 3, 4), tensor.RandN(r, 3)}
	}
	train := func(vs []*Var, o Optimizer, gs []*tensor.Tensor) {
		o.ZeroGrad()
		for k, v := range vs {
			g := gs[k]
			if v.value.Device() != g.Device() {
				g = onDev(t, g, v.value.Device())
			}
			v.grad, v.gradOK = g, true
		}
		o.Step()
	}
	gs := grads()
	train([]*Var{m.W, m.B}, opt, gs)
	train([]*Var{ref.W, ref.B}, refOpt, gs)

	// The model moves; the optimizer's state does not follow by itself.
	m.W.value, m.B.value = onDev(t, m.W.value, dev), onDev(t, m.B.value, dev)
	gs = grads()
	msg := panicMessage(func() { train([]*Var{m.W, m.B}, opt, gs) })
	if !strings.HasPrefix(msg, "tensor: AdamStep: parameter 0: tensors of shape [3 4] on device(7) and cpu") {
		t.Errorf("Step with the state on the host and the parameters on %v panicked %q", dev, msg)
	}
	d.SetFaults(tensortest.Faults{Alloc: errors.New("out of memory")})
	if err := opt.To(dev); err == nil || !strings.Contains(err.Error(), "out of memory") {
		t.Errorf("To with the device out of memory: %v", err)
	}
	if devs := stateDevices(opt); !allOn(devs, tensor.CPU) {
		t.Fatalf("a failed To moved state: %v", devs)
	}
	d.SetFaults(tensortest.Faults{})
	if err := opt.To(dev); err != nil {
		t.Fatal(err)
	}
	if devs := stateDevices(opt); !allOn(devs, dev) {
		t.Fatalf("state on %v after To(%v)", devs, dev)
	}
	train([]*Var{m.W, m.B}, opt, gs)
	train([]*Var{ref.W, ref.B}, refOpt, gs)

	// A checkpoint of the state on the device is the CPU's; loaded into
	// state on the device, it stays there.
	dir := t.TempDir()
	devFile, refFile := filepath.Join(dir, "dev"), filepath.Join(dir, "ref")
	for _, f := range []struct {
		path string
		m    *Linear
		o    Optimizer
	}{{devFile, compatModel(), opt}, {refFile, compatModel(), refOpt}} {
		if err := SaveCheckpoint(f.path, f.m, f.o, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	sameOptimizerTensors(t, devFile, refFile)
	loaded := compatOptimizers[2].make([]*Var{compatModel().W, compatModel().B})
	if err := loaded.To(dev); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(devFile, compatModel(), loaded, nil); err != nil {
		t.Fatal(err)
	}
	_, _, ls, _, _ := optimizerOf(loaded)
	_, _, rs, _, _ := optimizerOf(refOpt)
	for k := range rs {
		for i := range rs[k] {
			if ls[k][i].Device() != dev || !slices.Equal(ls[k][i].Data(), rs[k][i].Data()) {
				t.Errorf("loaded state %d of parameter %d on %v differs", k, i, ls[k][i].Device())
			}
		}
	}

	// Back to the host with the parameters: training goes on as the CPU's.
	m.W.value, m.B.value = onDev(t, m.W.value, tensor.CPU), onDev(t, m.B.value, tensor.CPU)
	if err := opt.To(tensor.CPU); err != nil {
		t.Fatal(err)
	}
	gs = grads()
	train([]*Var{m.W, m.B}, opt, gs)
	train([]*Var{ref.W, ref.B}, refOpt, gs)
	for k, v := range []*Var{m.W, m.B} {
		w := []*Var{ref.W, ref.B}[k]
		if v.value.Device() != tensor.CPU || !slices.Equal(v.value.Data(), w.value.Data()) {
			t.Errorf("parameter %d: %v, the CPU-only run's %v", k, v.value.Data(), w.value.Data())
		}
	}
}

// sameOptimizerTensors fails unless the optimizer tensors of the
// checkpoints a and b are the same.
func sameOptimizerTensors(t *testing.T, a, b string) {
	t.Helper()
	ta, _, err := LoadSafetensors(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := LoadSafetensors(b)
	if err != nil {
		t.Fatal(err)
	}
	_, oa := splitCheckpoint(ta)
	_, ob := splitCheckpoint(tb)
	if len(oa) != len(ob) || len(oa) == 0 {
		t.Fatalf("%d and %d optimizer tensors", len(oa), len(ob))
	}
	for name, x := range oa {
		if y := ob[name]; y == nil || !slices.Equal(x.Data(), y.Data()) {
			t.Errorf("%s differs", name)
		}
	}
}

// lossTrainer trains a small model (two Linear layers) on dev with one of
// nn's losses and optimizers.
type lossTrainer struct {
	m    Module
	ps   []*Var
	opt  Optimizer
	b    *Batches
	tp   *Tape
	loss func(tp *Tape, out *Var, y *tensor.Tensor) *Var
}

func newLossTrainer(t *testing.T, dev tensor.Device, loss func(tp *Tape, out *Var, y *tensor.Tensor) *Var,
	target func(r *rand.Rand, n int) *tensor.Tensor, opt func([]*Var) Optimizer) *lossTrainer {
	t.Helper()
	r := rand.New(rand.NewPCG(51, 52))
	m := NewSequential(Flatten{}, NewLinear(36, 16, r), NewLinear(16, 5, r))
	if err := To(m, dev); err != nil {
		t.Fatal(err)
	}
	b := NewBatches(tensor.RandN(r, 40, 6, 6), target(r, 40), 10, r)
	if err := b.To(dev); err != nil {
		t.Fatal(err)
	}
	ps := Params(m)
	return &lossTrainer{m: m, ps: ps, opt: opt(ps), b: b, tp: NewTape(), loss: loss}
}

// step runs a training step and returns its loss.
func (s *lossTrainer) step() float32 {
	x, y, ok := s.b.Next()
	if !ok {
		s.b.Reset()
		x, y, _ = s.b.Next()
	}
	s.tp.Reset()
	loss := s.loss(s.tp, s.m.Forward(s.tp, s.tp.Const(x)), y)
	s.opt.ZeroGrad()
	s.tp.Backward(loss)
	s.opt.Step()
	return loss.Value().Item()
}

// TestDeviceLossesOptimizers trains a small model on the host and on the
// stand-in device with each of nn's losses and each optimizer: the losses
// agree within 1e-6 and the parameters within 1e-5 relative, the model
// and the optimizer's state stay on the device, and after the first step
// a step asks the device for no memory and makes one upload (the batch)
// and one readback (the loss): the loss is computed, and the optimizer
// steps, on the device.
func TestDeviceLossesOptimizers(t *testing.T) {
	d := tensortest.Register(t, testDev)
	labels := func(r *rand.Rand, n int) *tensor.Tensor {
		l := tensor.New(n)
		for i := range n {
			l.Data()[i] = float32(r.IntN(5))
		}
		return l
	}
	targets := func(r *rand.Rand, n int) *tensor.Tensor { return tensor.RandU(r, 0, 1, n, 5) }
	for _, c := range []struct {
		name   string
		loss   func(tp *Tape, out *Var, y *tensor.Tensor) *Var
		target func(r *rand.Rand, n int) *tensor.Tensor
	}{
		{"CrossEntropy", func(tp *Tape, out *Var, y *tensor.Tensor) *Var { return tp.CrossEntropy(out, y) }, labels},
		{"MSE", func(tp *Tape, out *Var, y *tensor.Tensor) *Var { return tp.MSE(out, y) }, targets},
		{"BCEWithLogits", func(tp *Tape, out *Var, y *tensor.Tensor) *Var { return tp.BCEWithLogits(out, y) }, targets},
	} {
		for _, o := range compatOptimizers {
			t.Run(c.name+"/"+o.name, func(t *testing.T) {
				host := newLossTrainer(t, tensor.CPU, c.loss, c.target, o.make)
				dev := newLossTrainer(t, testDev, c.loss, c.target, o.make)
				for step := range 4 {
					lh := host.step()
					before := d.Counts()
					ld := dev.step()
					after := d.Counts()
					if step > 0 {
						if n := after.Allocs - before.Allocs; n != 0 {
							t.Errorf("step %d allocated %d device buffers", step, n)
						}
						if up, down := after.Uploads-before.Uploads, after.Downloads-before.Downloads; up != 1 || down != 1 {
							t.Errorf("step %d: %d uploads and %d downloads, want 1 and 1", step, up, down)
						}
					}
					if e := relErr([]float32{ld}, []float32{lh}); e > 1e-6 {
						t.Errorf("step %d: loss %v on the device, %v on the host", step, ld, lh)
					}
				}
				for i, v := range dev.ps {
					if v.value.Device() != testDev {
						t.Fatalf("parameter %d on %v", i, v.value.Device())
					}
					if e := relErr(hostOf(t, v.value), host.ps[i].value.Data()); e > 1e-5 {
						t.Errorf("parameter %d: relative error %.3g", i, e)
					}
				}
				if devs := stateDevices(dev.opt); !allOn(devs, testDev) {
					t.Errorf("optimizer state on %v", devs)
				}
			})
		}
	}
}
