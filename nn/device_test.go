package nn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// The device tests run nn on tensortest's stand-in device: its memory is
// host slices and its kernels the CPU's own code on copies, so that what
// they check is where nn runs its work (the values, gradients and steps of
// a model on a device equal the host's; tensors stay on the device; no
// device memory is asked for in a repeated step; the transfers of a step
// are the batch's upload and the loss's readback), not the kernels.

// testDev is the stand-in's device number.
const testDev tensor.Device = 7

// onDev copies h to dev, failing the test if it cannot.
func onDev(t *testing.T, h *tensor.Tensor, dev tensor.Device) *tensor.Tensor {
	t.Helper()
	d, err := h.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// hostOf returns the elements of x, wherever it is.
func hostOf(t *testing.T, x *tensor.Tensor) []float32 {
	t.Helper()
	h, err := x.Host()
	if err != nil {
		t.Fatal(err)
	}
	return h.Data()
}

// maxAbsDiff returns max|got - want|.
func maxAbsDiff(got, want []float32) float64 {
	var m float64
	for i := range want {
		m = math.Max(m, math.Abs(float64(got[i])-float64(want[i])))
	}
	return m
}

// relErr returns max|got - want| / max|want| (the absolute error when
// want is all zeros).
func relErr(got, want []float32) float64 {
	var den float64
	for _, w := range want {
		den = math.Max(den, math.Abs(float64(w)))
	}
	if den == 0 {
		den = 1
	}
	return maxAbsDiff(got, want) / den
}

// TestTo checks nn.To: every parameter and buffer of a model goes to the
// device (BatchNorm's running statistics included), keeping its Var, its
// values and its gradient, a Var given twice moving once; the model comes
// back equal with To(CPU); and a device that cannot allocate leaves the
// model as it was, with an error naming the Var.
func TestTo(t *testing.T) {
	d := tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(1, 2))
	lin := NewLinear(3, 4, r)
	m := NewSequential(NewConv2D(2, 3, 3, tensor.ConvParams{}, r), NewBatchNorm2D(3), Flatten{}, lin, lin)
	before := StateDict(m)
	want := make([][]float32, len(before))
	vars := map[string]*Var{}
	m.State("", func(name string, v *Var) { vars[name] = v })
	for i, s := range before {
		want[i] = slices.Clone(s.T.Data())
	}
	g := tensor.Full(0.5, 4, 3)
	lin.W.grad, lin.W.gradOK = g, true
	lin.B.grad, lin.B.gradOK = tensor.New(4), false // a stale buffer, dropped

	if err := To(m, testDev); err != nil {
		t.Fatal(err)
	}
	for i, s := range StateDict(m) {
		if vars[s.Name] == nil || s.T != vars[s.Name].value {
			t.Errorf("%s: not the model's Var", s.Name)
		}
		if s.T.Device() != testDev || !s.T.IsContiguous() {
			t.Errorf("%s on %v (contiguous %v), want on %v", s.Name, s.T.Device(), s.T.IsContiguous(), testDev)
		}
		if got := hostOf(t, s.T); !slices.Equal(got, want[i]) {
			t.Errorf("%s on the device = %v, want %v", s.Name, got, want[i])
		}
	}
	if gd := lin.W.Grad(); gd == nil || gd.Device() != testDev || !slices.Equal(hostOf(t, gd), g.Data()) {
		t.Errorf("the weight's gradient did not move with it: %v", gd)
	}
	if lin.B.Grad() != nil || lin.B.grad != nil {
		t.Errorf("the bias's stale gradient buffer moved")
	}
	if c := d.Counts(); c.Uploads != int64(len(before)-2+1) {
		t.Errorf("%d uploads, want one per Var (the shared Linear's once) and one gradient", c.Uploads)
	}
	if err := To(m, tensor.CPU); err != nil {
		t.Fatal(err)
	}
	for i, s := range StateDict(m) {
		if s.T.Device() != tensor.CPU || !slices.Equal(s.T.Data(), want[i]) {
			t.Errorf("%s back on the host = %v on %v, want %v", s.Name, s.T.Data(), s.T.Device(), want[i])
		}
	}

	d.SetFaults(tensortest.Faults{Alloc: errors.New("out of memory")})
	err := To(m, testDev)
	if err == nil || err.Error() != `nn: To: "0.weight" of shape [3 2 3 3] to device(7): out of memory` {
		t.Errorf("To on a full device: %v", err)
	}
	for _, s := range StateDict(m) {
		if s.T.Device() != tensor.CPU {
			t.Errorf("%s moved by a failed To", s.Name)
		}
	}
	if msg := panicMessage(func() { To(nil, testDev) }); msg != "nn: To: nil module" {
		t.Errorf("To(nil): panic %q", msg)
	}
}

// TestDeviceOperandsMixed checks that an operation given operands on two
// devices (a host batch beside a model on a device) panics naming the
// operation and where each operand is, rather than copying.
func TestDeviceOperandsMixed(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(3, 4))
	lin := NewLinear(5, 2, r)
	if err := To(lin, testDev); err != nil {
		t.Fatal(err)
	}
	tp := NewTape()
	x := tp.Const(tensor.RandN(r, 3, 5))
	want := "nn: Linear: operands on two devices ([3 5] on cpu, [2 5] on device(7), [2] on device(7)); copy the batch to the model's device with Tensor.To (nn.To moves a model)"
	if msg := panicMessage(func() { lin.Forward(tp, x) }); msg != want {
		t.Errorf("panic %q, want %q", msg, want)
	}
	conv := NewConv2D(1, 2, 3, tensor.ConvParams{}, r)
	To(conv, testDev)
	want = "nn: Conv2D: operands on two devices ([1 1 4 4] on cpu, [2 1 3 3] on device(7), [2] on device(7)); copy the batch to the model's device with Tensor.To (nn.To moves a model)"
	if msg := panicMessage(func() { conv.Forward(tp, tp.Const(tensor.New(1, 1, 4, 4))) }); msg != want {
		t.Errorf("panic %q, want %q", msg, want)
	}
	want = "nn: MatMul: operands on two devices ([3 5] on cpu, [5 2] on device(7)); copy the batch to the model's device with Tensor.To (nn.To moves a model)"
	if msg := panicMessage(func() { tp.MatMul(x, tp.Const(onDev(t, tensor.New(5, 2), testDev))) }); msg != want {
		t.Errorf("panic %q, want %q", msg, want)
	}
}

// stepCase is a model and its input (a batch of x [N, ...] drawn by in)
// for the device step tests; its loss is lossOf.
type stepCase struct {
	name  string
	model func(r *rand.Rand) Module
	x     []int
	in    func(r *rand.Rand, shape ...int) *tensor.Tensor
}

// deviceStepCases are the models trained on the stand-in device, covering
// every layer and activation: Linear with each activation fused, the
// convolutions fused with their ReLU, max pooling over them (the masked
// ReLU gradient), average pooling, BatchNorm2D and LayerNorm, Embedding,
// Flatten's reshape, and the tape's MatMul, Sub, Mul, Mean and Scale in
// the loss.
func deviceStepCases() []stepCase {
	same := tensor.ConvParams{Padding: [2]int{1, 1}}
	pool := tensor.PoolParams{Kernel: [2]int{2, 2}}
	return []stepCase{
		{"linear", func(r *rand.Rand) Module {
			return NewSequential(Flatten{}, NewLinear(36, 16, r), NewLinear(16, 8, r))
		}, []int{10, 6, 6}, tensor.RandN},
		{"mlp", func(r *rand.Rand) Module {
			return NewSequential(Flatten{}, NewLinear(36, 32, r), NewReLU(), NewLinear(32, 16, r), NewGELU(),
				NewLinear(16, 16, r), NewTanh(), NewLinear(16, 8, r), NewLeakyReLU(-0.1))
		}, []int{10, 6, 6}, tensor.RandN},
		{"cnn", func(r *rand.Rand) Module {
			return NewSequential(NewConv2D(1, 4, 3, same, r), NewReLU(), &MaxPool2D{P: pool},
				NewConv2D(4, 8, 3, same, r), NewReLU(), &MaxPool2D{P: pool}, Flatten{},
				NewLinear(8*2*2, 16, r), NewReLU(), NewLinear(16, 8, r))
		}, []int{10, 1, 8, 8}, tensor.RandN},
		{"norms", func(r *rand.Rand) Module {
			return NewSequential(NewConv2D(2, 4, 3, same, r), NewBatchNorm2D(4), NewELU(1), &AvgPool2D{P: pool},
				NewSiLU(), Flatten{}, NewLayerNorm(4*3*3), NewLinear(36, 8, r), NewSigmoid(), NewELU(-0.5))
		}, []int{10, 2, 6, 6}, tensor.RandN},
		{"rmsnorm", func(r *rand.Rand) Module {
			return NewSequential(Flatten{}, NewLinear(36, 16, r), NewRMSNorm(true, 16), NewReLU(),
				NewLinear(16, 8, r), NewRMSNorm(false, 8))
		}, []int{10, 6, 6}, tensor.RandN},
		{"adaptive", func(r *rand.Rand) Module {
			return NewSequential(NewConv2D(1, 4, 3, same, r), NewReLU(), &AdaptiveMaxPool2D{Out: [2]int{5, 3}},
				&AdaptiveAvgPool2D{Out: [2]int{3, 2}}, Flatten{}, NewLinear(24, 8, r))
		}, []int{10, 1, 7, 6}, tensor.RandN},
		{"embedding", func(r *rand.Rand) Module {
			return NewSequential(NewEmbedding(10, 4, r), Flatten{}, NewLinear(12, 8, r))
		}, []int{10, 3}, tokens(10)},
		// The GPTs' logits [10, 10, 8] (the loss's row weights [10, 1]
		// broadcast over their last two axes), through a Tanh: without
		// it the step's learning rate makes the tied model diverge (its
		// weights in the thousands by the sixth step, where host and
		// device differ in the rounding of ill-conditioned attention).
		{"gpt", func(r *rand.Rand) Module {
			return NewSequential(NewGPT(GPTConfig{Vocab: 8, Context: 10, Layers: 2, Heads: 2, Width: 8, TieWeights: true}, r), NewTanh())
		}, []int{10, 10}, tokens(8)},
		{"gpt-rope", func(r *rand.Rand) Module {
			return NewSequential(NewGPT(GPTConfig{Vocab: 8, Context: 12, Layers: 1, Heads: 2, Width: 8, RoPE: true, Dropout: 0.1}, r), NewTanh())
		}, []int{10, 10}, tokens(8)},
	}
}

// tokens returns an input maker of token ids in [0, vocab).
func tokens(vocab int) func(r *rand.Rand, shape ...int) *tensor.Tensor {
	return func(r *rand.Rand, shape ...int) *tensor.Tensor {
		x := tensor.New(shape...)
		for i := range x.Data() {
			x.Data()[i] = float32(r.IntN(vocab))
		}
		return x
	}
}

// lossOf is the loss of the step tests, of tape ops with device paths:
// 3·mean(((out·P) - 0.5)²·y), y [N, 1] the batch's row weights and P a
// constant [8, 3] matrix on out's device.
func lossOf(tp *Tape, out *Var, y, p, half *tensor.Tensor) *Var {
	d := tp.Sub(tp.MatMul(out, tp.Const(p)), tp.Const(half))
	return tp.Scale(tp.Mean(tp.Mul(tp.Mul(d, d), tp.Const(y))), 3)
}

// sgdStep sets p -= lr·grad for each parameter, through tmp (one buffer
// a parameter, on its device), allocating nothing.
func sgdStep(ps []*Var, tmp []*tensor.Tensor, lr float32) {
	for i, v := range ps {
		if g := v.Grad(); g != nil {
			tensor.ScaleInto(tmp[i], g, lr)
			tensor.SubInto(v.value, v.value, tmp[i])
		}
	}
}

// trainer of the step tests: a model on dev with its batches, tape and
// update buffers.
type devTrainer struct {
	m       Module
	ps      []*Var
	tmp     []*tensor.Tensor
	b       *Batches
	tp      *Tape
	p, half *tensor.Tensor
}

func newDevTrainer(t *testing.T, c stepCase, dev tensor.Device) *devTrainer {
	t.Helper()
	r := rand.New(rand.NewPCG(5, 6))
	m := c.model(r)
	n := 4 * c.x[0]
	x := c.in(r, append([]int{n}, c.x[1:]...)...)
	y := tensor.RandU(r, 0.5, 1.5, n, 1)
	p, half := tensor.RandN(r, 8, 3), tensor.Scalar(0.5)
	if err := To(m, dev); err != nil {
		t.Fatal(err)
	}
	b := NewBatches(x, y, c.x[0], r)
	if err := b.To(dev); err != nil {
		t.Fatal(err)
	}
	s := &devTrainer{m: m, ps: Params(m), b: b, tp: NewTape(), p: onDev(t, p, dev), half: onDev(t, half, dev)}
	for _, v := range s.ps {
		tmp, err := tensor.NewOn(dev, v.value.Shape()...)
		if err != nil {
			t.Fatal(err)
		}
		s.tmp = append(s.tmp, tmp)
	}
	return s
}

// step runs one training step and returns its loss.
func (s *devTrainer) step() float32 {
	x, y, ok := s.b.Next()
	if !ok {
		s.b.Reset()
		x, y, _ = s.b.Next()
	}
	tp := s.tp
	tp.Reset()
	loss := lossOf(tp, s.m.Forward(tp, tp.Const(x)), y, s.p, s.half)
	zeroGrads(s.ps)
	tp.Backward(loss)
	l := loss.Value().Item()
	sgdStep(s.ps, s.tmp, 0.05)
	return l
}

// TestDeviceTrainSteps trains each model for a few steps on the host and
// on the stand-in device from the same initialization and batches: the
// losses, the gradients and the parameters and buffers (BatchNorm's
// running statistics) after each step agree within 1e-5 relative (of the
// largest element); every tensor of the model stays on the device; and after
// the first step a step asks the device for no memory and makes one upload
// (the batch, Batches.To) and one readback (the loss).
func TestDeviceTrainSteps(t *testing.T) {
	d := tensortest.Register(t, testDev)
	for _, c := range deviceStepCases() {
		t.Run(c.name, func(t *testing.T) {
			host, dev := newDevTrainer(t, c, tensor.CPU), newDevTrainer(t, c, testDev)
			for step := range 6 {
				before := d.Counts()
				lh, ld := host.step(), dev.step()
				after := d.Counts()
				if step > 0 {
					if n := after.Allocs - before.Allocs; n != 0 {
						t.Errorf("step %d allocated %d device buffers", step, n)
					}
					if up, down := after.Uploads-before.Uploads, after.Downloads-before.Downloads; up != 1 || down != 1 {
						t.Errorf("step %d: %d uploads and %d downloads, want 1 and 1", step, up, down)
					}
				}
				if e := relErr([]float32{ld}, []float32{lh}); e > 1e-5 {
					t.Errorf("step %d: loss %v on the device, %v on the host", step, ld, lh)
				}
				for i, v := range dev.ps {
					if v.Grad().Device() != testDev {
						t.Fatalf("step %d: the gradient of parameter %d is on %v", step, i, v.Grad().Device())
					}
					if e := relErr(hostOf(t, v.Grad()), host.ps[i].Grad().Data()); e > 1e-5 {
						t.Errorf("step %d: gradient of parameter %d %v: relative error %.3g", step, i, v.value.Shape(), e)
					}
				}
				hs := StateDict(host.m)
				for i, s := range StateDict(dev.m) {
					if s.T.Device() != testDev {
						t.Fatalf("step %d: %s is on %v", step, s.Name, s.T.Device())
					}
					if e := relErr(hostOf(t, s.T), hs[i].T.Data()); e > 1e-5 {
						t.Errorf("step %d: %s %v after the update: relative error %.3g", step, s.Name, s.T.Shape(), e)
					}
				}
			}
		})
	}
}

// TestDeviceSaveLoad checks Save, Load, LoadState and the checkpoints of a
// model on a device: the file holds its values (copied to the host), and
// loading into a model on the device uploads them into its Vars.
func TestDeviceSaveLoad(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(7, 8))
	src := NewSequential(NewLinear(4, 3, r), NewBatchNorm2D(3))
	want := StateDict(src)
	if err := To(src, testDev); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	if err := Save(path, src, nil); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "c.safetensors")
	if err := SaveCheckpoint(ckpt, src, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{path, ckpt} {
		dst := NewSequential(NewLinear(4, 3, r), NewBatchNorm2D(3))
		if err := To(dst, testDev); err != nil {
			t.Fatal(err)
		}
		vars := StateDict(dst)
		load := Load
		if file == ckpt {
			load = func(p string, m Module) (map[string]string, error) { return LoadCheckpoint(p, m, nil, nil) }
		}
		if _, err := load(file, dst); err != nil {
			t.Fatal(err)
		}
		for i, s := range StateDict(dst) {
			if s.T != vars[i].T || s.T.Device() != testDev {
				t.Errorf("%s: %s is not the model's tensor on the device", file, s.Name)
			}
			if got := hostOf(t, s.T); !slices.Equal(got, want[i].T.Data()) {
				t.Errorf("%s: %s = %v, want %v", file, s.Name, got, want[i].T.Data())
			}
		}
	}
}

// TestBatchesTo checks Batches.To: the batches on the device are the
// host's, each Next makes one upload and no allocation, To(CPU) goes back
// to host batches, and a failing copy ends the epoch with Err.
// mustState is the generator state at the start of b's epoch.
func mustState(t *testing.T, b *Batches) []byte {
	t.Helper()
	st, err := b.saveState()
	if err != nil {
		t.Fatal(err)
	}
	return st.RNG
}

func TestBatchesTo(t *testing.T) {
	for _, async := range []bool{true, false} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) { testBatchesTo(t, async) })
	}
}

// syncMemory hides a stand-in memory's AsyncUploader: a device that
// uploads only with CopyFromHost.
type syncMemory struct{ tensor.DeviceMemory }

type syncAllocator struct{ tensor.DeviceAllocator }

func (a syncAllocator) Alloc(dev tensor.Device, n int) (tensor.DeviceMemory, error) {
	m, err := a.DeviceAllocator.Alloc(dev, n)
	if err != nil {
		return nil, err
	}
	return syncMemory{m}, nil
}

// testBatchesTo checks Batches.To on the stand-in, whose memory uploads
// asynchronously (a Staging whose copy happens at Use: a batch handed out
// before its Use would hold the previous one's rows) or, with async
// false, only with CopyFromHost: the device batches equal the host's,
// through epochs and Resets, with one upload per batch and no allocation.
func testBatchesTo(t *testing.T, async bool) {
	d := tensortest.Register(t, testDev)
	if !async {
		b := d.Backend()
		b.Memory = syncAllocator{b.Memory}
		tensor.RegisterDevice(testDev, b)
	}
	x, y := indexRows(10, 3)
	hb, db := NewBatches(x, y, 4, rand.New(rand.NewPCG(1, 1))), NewBatches(x, y, 4, rand.New(rand.NewPCG(1, 1)))
	if err := db.To(testDev); err != nil {
		t.Fatal(err)
	}
	if slots := len(db.dev.slots); slots != map[bool]int{true: 2, false: 1}[async] {
		t.Fatalf("%d device buffers, want 2 with asynchronous uploads, else 1", slots)
	}
	for epoch := range 3 {
		if epoch == 2 {
			// A checkpoint's position discards the batch read ahead.
			hb.Next()
			db.Next()
			load, err := db.planLoad(batchesState{Rows: 10, Size: 4, Shuffle: true, Epoch: 2, Pos: 0, RNG: mustState(t, db)})
			if err != nil {
				t.Fatal(err)
			}
			load()
			hload, _ := hb.planLoad(batchesState{Rows: 10, Size: 4, Shuffle: true, Epoch: 2, Pos: 0, RNG: mustState(t, hb)})
			hload()
		}
		for i := 0; ; i++ {
			// The batch read ahead and discarded by the checkpoint's load
			// was uploaded too.
			want := int64(1)
			if async && epoch == 2 && i == 0 {
				want = 2
			}
			before := d.Counts()
			dx, dy, ok := db.Next()
			after := d.Counts()
			hx, hy, hok := hb.Next()
			if ok != hok {
				t.Fatalf("epoch %d: device Next ok %v, host %v", epoch, ok, hok)
			}
			if !ok {
				break
			}
			if after.Uploads-before.Uploads != want || after.Allocs != before.Allocs {
				t.Errorf("epoch %d batch %d: Next made %d uploads and %d allocations, want %d and 0", epoch, i, after.Uploads-before.Uploads, after.Allocs-before.Allocs, want)
			}
			if dx.Device() != testDev || dy.Device() != testDev || !slices.Equal(dx.Shape(), hx.Shape()) || !slices.Equal(dy.Shape(), hy.Shape()) {
				t.Fatalf("device batch %v %v on %v, host %v %v", dx.Shape(), dy.Shape(), dx.Device(), hx.Shape(), hy.Shape())
			}
			if !slices.Equal(hostOf(t, dx), hx.Data()) || !slices.Equal(hostOf(t, dy), hy.Data()) {
				t.Errorf("epoch %d: device batch %v %v, host %v %v", epoch, hostOf(t, dx), hostOf(t, dy), hx.Data(), hy.Data())
			}
		}
		hb.Reset()
		db.Reset()
	}
	d.SetFaults(tensortest.Faults{Copy: errors.New("bus error")})
	if _, _, ok := db.Next(); ok || db.Err() == nil || db.Err().Error() != "nn: Batches.Next: copying a batch of 4 rows to device(7): bus error" {
		t.Errorf("a failing copy: ok %v, Err %v", ok, db.Err())
	}
	d.SetFaults(tensortest.Faults{})
	db.Reset()
	if err := db.To(tensor.CPU); err != nil {
		t.Fatal(err)
	}
	if bx, _, ok := db.Next(); !ok || db.Err() != nil || bx.Device() != tensor.CPU {
		t.Errorf("after Reset and To(CPU): ok %v, Err %v, batch on %v", ok, db.Err(), bx.Device())
	}
	d.SetFaults(tensortest.Faults{Alloc: errors.New("out of memory")})
	if err := db.To(testDev); err == nil || err.Error() != fmt.Sprintf("nn: Batches.To: %d bytes on device(7): out of memory", 4*4*(3+6)) { // 4 rows of 3 + 2·3 elements
		t.Errorf("To on a full device: %v", err)
	}
}

// TestDeviceDropout checks that a model with Dropout gives on a device the
// host's loss and gradients: the masks, drawn from the Philox stream of a
// seed taken from the layer's source, are the same on both.
func TestDeviceDropout(t *testing.T) {
	d := tensortest.Register(t, testDev)
	model := func() (Module, *tensor.Tensor) {
		r := rand.New(rand.NewPCG(9, 10))
		return NewSequential(NewLinear(12, 32, r), NewDropout(0.4, r), NewLinear(32, 5, r)), tensor.RandN(r, 6, 12)
	}
	run := func(dev tensor.Device) (loss float32, grads [][]float32) {
		m, x := model()
		if err := To(m, dev); err != nil {
			t.Fatal(err)
		}
		tp := NewTape()
		for range 2 { // the second step draws new masks
			tp.Reset()
			l := tp.Sum(m.Forward(tp, tp.Const(onDev(t, x, dev))))
			zeroGrads(Params(m))
			tp.Backward(l)
			loss = l.Value().Item()
		}
		for _, v := range Params(m) {
			grads = append(grads, hostOf(t, v.Grad()))
		}
		return loss, grads
	}
	lh, gh := run(tensor.CPU)
	ld, gd := run(testDev)
	if e := relErr([]float32{ld}, []float32{lh}); e > 1e-5 {
		t.Errorf("loss %v on the device, %v on the host", ld, lh)
	}
	for i := range gh {
		if e := relErr(gd[i], gh[i]); e > 1e-5 {
			t.Errorf("gradient %d: relative error %.3g", i, e)
		}
	}
	if n := d.Counts().Calls["Random.Dropout"]; n != 4 {
		t.Errorf("the device's Dropout ran %d times, want 4 (two steps, forward and backward)", n)
	}
}

// TestEmbeddingIndices checks Embedding's indices, on the host and on a
// device alike: a negative one counts from the end (tensor.IndexSelect's
// rule), one that is not an integer in [-V, V) panics naming it.
func TestEmbeddingIndices(t *testing.T) {
	tensortest.Register(t, testDev)
	w := NewParam(tensor.FromSlice([]float32{0, 1, 10, 11, 20, 21}, 3, 2))
	for _, dev := range []tensor.Device{tensor.CPU, testDev} {
		if err := To(NewSequential(&Embedding{W: w}), dev); err != nil {
			t.Fatal(err)
		}
		tp := NewTape()
		idx := onDev(t, tensor.FromSlice([]float32{2, -1, 0, -3}, 2, 2), dev)
		y := tp.Embedding(idx, w)
		if got, want := hostOf(t, y.Value()), []float32{20, 21, 20, 21, 0, 1, 0, 1}; !slices.Equal(got, want) || !slices.Equal(y.Shape(), []int{2, 2, 2}) {
			t.Errorf("on %v: Embedding = %v %v, want %v [2 2 2]", dev, got, y.Shape(), want)
		}
		tp.Backward(tp.Sum(y))
		if got, want := hostOf(t, w.Grad()), []float32{2, 2, 0, 0, 2, 2}; !slices.Equal(got, want) {
			t.Errorf("on %v: the weight's gradient = %v, want %v", dev, got, want)
		}
		w.ZeroGrad()
	}
	To(NewSequential(&Embedding{W: w}), tensor.CPU)
	want := "tensor: IndexSelectInto: index 1.5 is not an integer in -3..2"
	if msg := panicMessage(func() { NewTape().Embedding(tensor.FromSlice([]float32{1.5}, 1), w) }); msg != want {
		t.Errorf("panic %q, want %q", msg, want)
	}
}

// TestDeviceFashionSteps trains nn's two Fashion-MNIST models (FashionMLP
// and FashionCNN, batches of 16 random images) with CrossEntropy and Adam
// for a few steps on the host and on the stand-in device: the losses, the
// gradients and the parameters after each step agree within 1e-5 relative
// (of the largest element), and after the first step a step asks the
// device for no memory and makes one upload (the batch's images and labels
// together) and one readback (the loss). Adam's ε is 1e-4 rather than
// PyTorch's 1e-8: Adam moves each element by about lr·g/(|g| + ε) whatever
// g's size, so with ε = 1e-8 an element whose gradient cancels to near ε
// (3.966e-8 on one path, 3.930e-8 on the other, which adds in another
// order where the host's fused Linear seeds the product with the bias)
// moves by a few thousandths of lr more on one path than on the other;
// with ε = 1e-4 the step is smooth in g, and the parameters agree as the
// gradients do.
func TestDeviceFashionSteps(t *testing.T) {
	d := tensortest.Register(t, testDev)
	type run struct {
		m    Module
		opt  Optimizer
		b    *Batches
		tp   *Tape
		loss float32
	}
	for _, c := range models {
		t.Run(c.name, func(t *testing.T) {
			setup := func(dev tensor.Device) *run {
				r := rand.New(rand.NewPCG(13, 14))
				m := c.model(r)
				const batch, n = 16, 48
				x := tensor.RandN(r, append([]int{n}, c.x[1:]...)...)
				y := tensor.New(n)
				for i := range y.Data() {
					y.Data()[i] = float32(r.IntN(10))
				}
				if err := To(m, dev); err != nil {
					t.Fatal(err)
				}
				opt := NewAdam(Params(m), 1e-3)
				opt.Eps = 1e-4
				b := NewBatches(x, y, batch, r)
				if err := b.To(dev); err != nil {
					t.Fatal(err)
				}
				return &run{m: m, opt: opt, b: b, tp: NewTape()}
			}
			host, dev := setup(tensor.CPU), setup(testDev)
			step := func(s *run) {
				x, y, ok := s.b.Next()
				if !ok {
					s.b.Reset()
					x, y, _ = s.b.Next()
				}
				s.tp.Reset()
				loss := s.tp.CrossEntropy(s.m.Forward(s.tp, s.tp.Const(x)), y)
				s.opt.ZeroGrad()
				s.tp.Backward(loss)
				s.opt.Step()
				s.loss = loss.Value().Item()
			}
			for i := range 5 {
				step(host)
				before := d.Counts()
				step(dev)
				after := d.Counts()
				if i > 0 {
					if n := after.Allocs - before.Allocs; n != 0 {
						t.Errorf("step %d allocated %d device buffers", i, n)
					}
					if up, down := after.Uploads-before.Uploads, after.Downloads-before.Downloads; up != 1 || down != 1 {
						t.Errorf("step %d: %d uploads and %d downloads, want 1 and 1", i, up, down)
					}
				}
				if e := relErr([]float32{dev.loss}, []float32{host.loss}); e > 1e-5 {
					t.Errorf("step %d: loss %v on the device, %v on the host", i, dev.loss, host.loss)
				}
				hp := Params(host.m)
				for j, v := range Params(dev.m) {
					if v.value.Device() != testDev || v.Grad().Device() != testDev {
						t.Fatalf("step %d: parameter %d on %v, its gradient on %v", i, j, v.value.Device(), v.Grad().Device())
					}
					if e := relErr(hostOf(t, v.Grad()), hp[j].Grad().Data()); e > 1e-5 {
						t.Errorf("step %d: gradient of parameter %d %v: relative error %.3g", i, j, v.value.Shape(), e)
					}
					if e := relErr(hostOf(t, v.value), hp[j].value.Data()); e > 1e-5 {
						t.Errorf("step %d: parameter %d %v: relative error %.3g", i, j, v.value.Shape(), e)
					}
				}
			}
		})
	}
}
