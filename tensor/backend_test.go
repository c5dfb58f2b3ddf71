package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// fakeBackend marks the results it computes with 42, or fails.
type fakeBackend struct {
	fail         bool
	matmul, conv int
}

func (f *fakeBackend) MatMul(dst, _, _ *Tensor) error {
	f.matmul++
	if f.fail {
		return errors.New("fake: out of memory")
	}
	Fill(dst, 42)
	return nil
}

func (f *fakeBackend) Conv2D(dst, _, _, _ *Tensor, _ ConvParams) error {
	f.conv++
	if f.fail {
		return errors.New("fake: out of memory")
	}
	Fill(dst, 42)
	return nil
}

func (f *fakeBackend) Conv2DBackwardInput(_, _, _ *Tensor, _ ConvParams) error {
	return errors.New("fake: no kernel")
}

func (f *fakeBackend) Conv2DBackwardWeight(_, _, _ *Tensor, _ ConvParams) error {
	return errors.New("fake: no kernel")
}

// flopsPlacer sends work of at least min FLOPs to the accelerator and
// records what it was asked.
type flopsPlacer struct {
	min  float64
	last dispatch.Work
}

func (p *flopsPlacer) Place(w dispatch.Work) dispatch.Target {
	p.last = w
	if w.FLOPs >= p.min {
		return dispatch.OnGPU
	}
	return dispatch.OnCPU
}

func (p *flopsPlacer) Describe() string { return "test" }

func TestBackendPlacement(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	pl := &flopsPlacer{min: 1e4}
	dispatch.SetPlacer(pl)
	defer dispatch.SetPlacer(nil)
	fb := &fakeBackend{}
	// Without an offload device everything stays on the CPU, whatever Place says.
	small, big := RandN(r, 4, 4), RandN(r, 32, 32)
	want := MatMul(big, big)
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}, MatMul: fb, Conv: fb})
	defer RegisterDevice(testDevice, nil)
	if got := MatMul(big, big); got.At(3, 3) == 42 || fb.matmul != 0 {
		t.Errorf("host work went to a device that SetOffload did not name")
	}
	SetOffload(testDevice)
	defer SetOffload(CPU)

	if got := MatMul(small, small); got.At(0, 0) == 42 || fb.matmul != 0 {
		t.Errorf("a 4×4 product (%v FLOPs) went to the backend", pl.last.FLOPs)
	}
	if got := MatMul(big, big); got.At(3, 3) != 42 || fb.matmul != 1 {
		t.Errorf("a 32×32 product did not go to the backend")
	}
	if pl.last.Op != dispatch.OpMatMul || pl.last.FLOPs != 2*32*32*32 || pl.last.Bytes != 4*3*32*32 || pl.last.Resident {
		t.Errorf("Place asked %+v", pl.last)
	}
	x, w := RandN(r, 1, 2, 16, 16), RandN(r, 3, 2, 3, 3)
	if got := Conv2D(x, w, nil, ConvParams{}); got.At(0, 0, 0, 0) != 42 || fb.conv != 1 {
		t.Errorf("Conv2D did not go to the backend")
	}
	if pl.last.Op != dispatch.OpConv2D || pl.last.FLOPs != 2*3*196*18 {
		t.Errorf("Place asked %+v", pl.last)
	}
	// A failing backend leaves the work to the CPU.
	fb.fail = true
	dst := New(32, 32)
	MatMulInto(dst, big, big)
	for i, v := range want.Data() {
		if dst.Data()[i] != v {
			t.Fatalf("after a backend error, element %d is %v, want the CPU's %v", i, dst.Data()[i], v)
		}
	}
	fb.fail = false
	SetOffload(CPU)
	if got := MatMul(big, big); got.At(3, 3) == 42 {
		t.Error("the offload device still runs host work after SetOffload(CPU)")
	}
	SetOffload(testDevice)
	RegisterDevice(testDevice, nil)
	if got := MatMul(big, big); got.At(3, 3) == 42 {
		t.Error("an unregistered offload device still runs host work")
	}
}

// recordingBackend computes MatMul and Conv2D with the CPU kernels, taking
// device operands (hostMemory) as a plugin would, and records its calls.
type recordingBackend struct {
	fail  error
	calls []string // "MatMul dst@device(7) a@cpu b@device(7)", ...
}

func (f *recordingBackend) record(op string, names string, ts ...*Tensor) error {
	s := op
	for i, t := range ts {
		if t != nil {
			s += fmt.Sprintf(" %c@%v", names[i], t.Device())
		}
	}
	f.calls = append(f.calls, s)
	return f.fail
}

// hostCopy returns t on the host (t itself when it is there).
func hostCopy(t *Tensor) *Tensor {
	if t == nil {
		return nil
	}
	h, err := t.To(CPU)
	if err != nil {
		panic(err)
	}
	return h
}

// store writes the host result r into dst, wherever dst is.
func store(dst, r *Tensor) {
	if mem, off, ok := DeviceView(dst); ok {
		if err := mem.CopyFromHost(off, r.Data()); err != nil {
			panic(err)
		}
		return
	}
	CopyInto(dst, r)
}

func (f *recordingBackend) MatMul(dst, a, b *Tensor) error {
	if err := f.record("MatMul", "dab", dst, a, b); err != nil {
		return err
	}
	r := New(dst.shape...)
	cpuKernels{}.MatMul(r, hostCopy(a), hostCopy(b)) // the CPU path itself: no second dispatch
	store(dst, r)
	return nil
}

func (f *recordingBackend) Conv2D(dst, x, w, bias *Tensor, p ConvParams) error {
	if err := f.record("Conv2D", "dxwb", dst, x, w, bias); err != nil {
		return err
	}
	r := New(dst.shape...)
	cpuKernels{}.Conv2D(r, hostCopy(x), hostCopy(w), hostCopy(bias), p)
	store(dst, r)
	return nil
}

func (f *recordingBackend) Conv2DBackwardInput(dx, dy, w *Tensor, p ConvParams) error {
	if err := f.record("Conv2DBackwardInput", "xyw", dx, dy, w); err != nil {
		return err
	}
	r := New(dx.shape...)
	cpuKernels{}.Conv2DBackwardInput(r, hostCopy(dy), hostCopy(w), p)
	store(dx, r)
	return nil
}

func (f *recordingBackend) Conv2DBackwardWeight(dw, dy, x *Tensor, p ConvParams) error {
	if err := f.record("Conv2DBackwardWeight", "wyx", dw, dy, x); err != nil {
		return err
	}
	r := New(dw.shape...)
	cpuKernels{}.Conv2DBackwardWeight(r, hostCopy(dy), hostCopy(x), p)
	store(dw, r)
	return nil
}

// cpuPlacer sends everything to the CPU and counts its calls.
type cpuPlacer struct{ calls int }

func (p *cpuPlacer) Place(dispatch.Work) dispatch.Target { p.calls++; return dispatch.OnCPU }
func (p *cpuPlacer) Describe() string                    { return "test: all on the CPU" }

// onHost returns t's elements on the host, failing unless t is on dev.
func onHost(t *testing.T, what string, x *Tensor, dev Device) []float32 {
	t.Helper()
	if x.Device() != dev {
		t.Fatalf("%s: result on %v, want %v", what, x.Device(), dev)
	}
	return hostCopy(x).Data()
}

// TestBackendResident checks that MatMul and Conv2D with an operand on a
// device run on the backend even when placement says CPU, and return
// their result on that device.
func TestBackendResident(t *testing.T) {
	rb := &recordingBackend{}
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}, MatMul: rb, Conv: rb})
	defer RegisterDevice(testDevice, nil)
	SetOffload(testDevice)
	defer SetOffload(CPU)
	pl := &cpuPlacer{}
	dispatch.SetPlacer(pl)
	defer dispatch.SetPlacer(nil)
	r := rand.New(rand.NewPCG(43, 44))
	a, b := RandN(r, 3, 4), RandN(r, 4, 5)
	x, w, bias := RandN(r, 2, 2, 6, 6), RandN(r, 3, 2, 3, 3), RandN(r, 3)
	p := ConvParams{Padding: [2]int{1, 1}, ReLU: true}
	q := ConvParams{Padding: [2]int{1, 1}}
	wantMM, wantConv, wantConvQ := MatMul(a, b), Conv2D(x, w, bias, p), Conv2D(x, w, nil, q) // host work: the placer says CPU
	if len(rb.calls) != 0 || pl.calls != 3 {
		t.Fatalf("host work: backend calls %v, placer asked %d times", rb.calls, pl.calls)
	}
	dev := func(h *Tensor) *Tensor { return onTestDevice(t, h) }
	da, db, dx, dw, dbias := dev(a), dev(b), dev(x), dev(w), dev(bias)
	check := func(what string, got, want []float32, call string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
		if n := len(rb.calls); n == 0 || rb.calls[n-1] != call {
			t.Errorf("%s: backend calls %v, want the last %q", what, rb.calls, call)
		}
	}
	check("MatMul(device, device)", onHost(t, "MatMul", MatMul(da, db), testDevice), wantMM.Data(), "MatMul d@device(7) a@device(7) b@device(7)")
	check("MatMul(host, device)", onHost(t, "MatMul", MatMul(a, db), testDevice), wantMM.Data(), "MatMul d@device(7) a@cpu b@device(7)")
	check("MatMul(transposed views)", onHost(t, "MatMul", MatMul(dev(a.T()).T(), dev(b.T()).T()), testDevice),
		wantMM.Data(), "MatMul d@device(7) a@device(7) b@device(7)")
	hd := New(3, 5)
	MatMulInto(hd, da, b)
	check("MatMulInto(host dst, device a)", hd.Data(), wantMM.Data(), "MatMul d@cpu a@device(7) b@cpu")
	dd, _ := NewOn(testDevice, 3, 5)
	MatMulInto(dd, a, b)
	check("MatMulInto(device dst, host operands)", onHost(t, "MatMulInto", dd, testDevice), wantMM.Data(), "MatMul d@device(7) a@cpu b@cpu")

	check("Conv2D(device x, w, bias)", onHost(t, "Conv2D", Conv2D(dx, dw, dbias, p), testDevice), wantConv.Data(), "Conv2D d@device(7) x@device(7) w@device(7) b@device(7)")
	check("Conv2D(device bias only)", onHost(t, "Conv2D", Conv2D(x, w, dbias, p), testDevice), wantConv.Data(), "Conv2D d@device(7) x@cpu w@cpu b@device(7)")
	hc := New(wantConv.shape...)
	Conv2DInto(hc, dx, w, nil, q)
	check("Conv2DInto(host dst, device x, no bias)", hc.Data(), wantConvQ.Data(), "Conv2D d@cpu x@device(7) w@cpu")
	// The gradients run on the device too (the placer is not asked: host
	// gradients are never offloaded).
	dy := RandN(r, wantConvQ.shape...)
	wantDX, wantDW := Conv2DBackwardInput(dy, w, x.shape, q), Conv2DBackwardWeight(dy, x, w.shape, q)
	ddy := dev(dy)
	check("Conv2DBackwardInput(device dy, w)", onHost(t, "Conv2DBackwardInput", Conv2DBackwardInput(ddy, dw, x.shape, q), testDevice),
		wantDX.Data(), "Conv2DBackwardInput x@device(7) y@device(7) w@device(7)")
	check("Conv2DBackwardWeight(device dy, host x)", onHost(t, "Conv2DBackwardWeight", Conv2DBackwardWeight(ddy, x, w.shape, q), testDevice),
		wantDW.Data(), "Conv2DBackwardWeight w@device(7) y@device(7) x@cpu")
	hdw := New(w.shape...)
	Conv2DBackwardWeightInto(hdw, ddy, dx, q)
	check("Conv2DBackwardWeightInto(host dw)", hdw.Data(), wantDW.Data(), "Conv2DBackwardWeight w@cpu y@device(7) x@device(7)")
	if pl.calls != 3 {
		t.Errorf("resident work asked the placer %d times", pl.calls-3)
	}
	// The default thresholds send work this small to the CPU; device
	// operands go to the backend all the same.
	dispatch.SetPlacer(nil)
	n := len(rb.calls)
	if got := MatMul(da, db); got.Device() != testDevice || len(rb.calls) != n+1 {
		t.Errorf("with the default thresholds a device MatMul ran on %v with %d backend calls", got.Device(), len(rb.calls)-n)
	}

	// Operands on two devices.
	const other Device = 8
	RegisterDevice(other, &Backend{Memory: &hostAllocator{}})
	defer RegisterDevice(other, nil)
	ob, _ := b.To(other)
	expectPanic(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { MatMul(da, ob) })
	expectPanic(t, "tensor: MatMulInto: [3 5] on device(8) and [3 4] on device(7) and [4 5] on cpu: operands on device(8) and device(7); copy them to one device with To",
		func() { o, _ := NewOn(other, 3, 5); MatMulInto(o, da, b) })
	expectPanic(t, "tensor: Conv2D: [2 2 6 6] on device(7) and [3 2 3 3] on cpu and [3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { obias, _ := bias.To(other); Conv2D(dx, w, obias, p) })
}

// TestBackendResidentFailures checks that resident work panics, naming the
// op, the shapes, the devices and the cause, when there is no backend or
// the backend fails, while failing host work falls back to the CPU.
func TestBackendResidentFailures(t *testing.T) {
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}})
	defer RegisterDevice(testDevice, nil)
	r := rand.New(rand.NewPCG(45, 46))
	a, b := RandN(r, 3, 4), RandN(r, 4, 5)
	x, w := RandN(r, 1, 2, 6, 6), RandN(r, 3, 2, 3, 3)
	da, _ := a.To(testDevice)
	dx, _ := x.To(testDevice)
	want, wantConv := MatMul(a, b), Conv2D(x, w, nil, ConvParams{})

	const noMatMul, noConv = "device(7) has no MatMul kernels; copy the operands with To(tensor.CPU)", "device(7) has no Conv kernels; copy the operands with To(tensor.CPU)"
	expectPanic(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on cpu: "+noMatMul, func() { MatMul(da, b) })
	expectPanic(t, "tensor: MatMulInto: [3 4] on device(7) and [4 5] on cpu (result [3 5] on cpu): "+noMatMul, func() { MatMulInto(New(3, 5), da, b) })
	expectPanic(t, "tensor: Conv2D: [1 2 6 6] on device(7) and [3 2 3 3] on cpu: "+noConv, func() { Conv2D(dx, w, nil, ConvParams{}) })
	expectPanic(t, "tensor: Conv2DInto: [1 2 6 6] on cpu and [3 2 3 3] on cpu (result [1 3 4 4] on device(7)): "+noConv, func() {
		d, _ := NewOn(testDevice, 1, 3, 4, 4)
		Conv2DInto(d, x, w, nil, ConvParams{})
	})
	expectPanic(t, "tensor: Conv2DBackwardInput: [1 3 4 4] on cpu and [3 2 3 3] on cpu (result [1 2 6 6] on device(7)): "+noConv, func() {
		d, _ := NewOn(testDevice, 1, 2, 6, 6)
		Conv2DBackwardInputInto(d, New(1, 3, 4, 4), w, ConvParams{})
	})

	rb := &recordingBackend{fail: errors.New("fake: out of memory")}
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}, MatMul: rb, Conv: rb})
	SetOffload(testDevice)
	defer SetOffload(CPU)
	pl := &flopsPlacer{min: 0} // host work to the backend too
	dispatch.SetPlacer(pl)
	defer dispatch.SetPlacer(nil)
	expectPanic(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on cpu (result [3 5] on device(7)): fake: out of memory", func() { MatMul(da, b) })
	expectPanic(t, "tensor: Conv2DInto: [1 2 6 6] on device(7) and [3 2 3 3] on cpu (result [1 3 4 4] on cpu): fake: out of memory", func() {
		Conv2DInto(New(1, 3, 4, 4), dx, w, nil, ConvParams{})
	})
	if len(rb.calls) != 2 {
		t.Errorf("backend calls %v, want the two failing ones", rb.calls)
	}
	// Host work: the backend is tried, fails, and the CPU does the work.
	if got := MatMul(a, b); !slices.Equal(got.Data(), want.Data()) || got.Device() != CPU {
		t.Errorf("MatMul after a backend error = %v on %v, want %v", got, got.Device(), want)
	}
	if got := Conv2D(x, w, nil, ConvParams{}); !slices.Equal(got.Data(), wantConv.Data()) {
		t.Errorf("Conv2D after a backend error = %v, want %v", got, wantConv)
	}
	if len(rb.calls) != 4 || rb.calls[2] != "MatMul d@cpu a@cpu b@cpu" || rb.calls[3] != "Conv2D d@cpu x@cpu w@cpu" {
		t.Errorf("backend calls %v: the host work was not offered to it", rb.calls)
	}
	// The result of device work cannot be allocated.
	rb.fail = nil
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{fail: errors.New("device full")}, MatMul: rb, Conv: rb})
	expectPanic(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on cpu: allocating the result of shape [3 5]: device full", func() { MatMul(da, b) })
	// The device is gone (cudaplugin's Close) while its tensors live.
	RegisterDevice(testDevice, nil)
	expectPanic(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on cpu: device(7) is not registered (tensor.RegisterDevice)", func() { MatMul(da, b) })
	expectPanic(t, "tensor: RegisterDevice: device(7) without Memory", func() { RegisterDevice(testDevice, &Backend{MatMul: rb}) })
}

// hostElementwise is a device's Elementwise family that runs the CPU's on
// host copies of the operands, recording the ops it was asked.
type hostElementwise struct{ calls []ElemOp }

func (e *hostElementwise) Binary(op ElemOp, dst, a, b *Tensor) error {
	e.calls = append(e.calls, op)
	r := New(dst.shape...)
	cpuKernels{}.Binary(op, r, hostCopy(a), hostCopy(b))
	store(dst, r)
	return nil
}

func (e *hostElementwise) Unary(op ElemOp, dst, x *Tensor, arg [2]float32) error {
	e.calls = append(e.calls, op)
	r := New(dst.shape...)
	cpuKernels{}.Unary(op, r, hostCopy(x), arg)
	store(dst, r)
	return nil
}

func (e *hostElementwise) Where(dst, cond, a, b *Tensor) error {
	e.calls = append(e.calls, 0)
	r := New(dst.shape...)
	cpuKernels{}.Where(r, hostCopy(cond), hostCopy(a), hostCopy(b))
	store(dst, r)
	return nil
}

// TestElementwiseOnDevice checks that the elementwise ops with device
// operands run on the device's Elementwise family and return tensors
// there (broadcast and transposed operands, a 0-d host scalar beside
// device ones, the Into forms, Fill), and that host operands beside device
// ones, or a device without the family, make them panic naming the op and
// the devices.
func TestElementwiseOnDevice(t *testing.T) {
	fam := &hostElementwise{}
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}, Elementwise: fam})
	defer RegisterDevice(testDevice, nil)
	r := rand.New(rand.NewPCG(47, 48))
	a, b, c := RandN(r, 2, 3), RandN(r, 3), RandN(r, 3, 2)
	cond := Greater(a, RandN(r, 2, 3))
	s := Scalar(2.5) // 0-d
	dev := func(h *Tensor) *Tensor { return onTestDevice(t, h) }
	da, db, dc, dcond := dev(a), dev(b), dev(c), dev(cond)
	dd, _ := NewOn(testDevice, 2, 3)
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		op   ElemOp
	}{
		{"Add(broadcast)", func() *Tensor { return Add(da, db) }, Add(a, b), ElemAdd},
		{"Sub(transposed)", func() *Tensor { return Sub(da, dc.T()) }, Sub(a, c.T()), ElemSub},
		{"Mul(0-d host scalar)", func() *Tensor { return Mul(da, s) }, Mul(a, s), ElemMul},
		{"Less", func() *Tensor { return Less(db, da) }, Less(b, a), ElemLess},
		{"Exp", func() *Tensor { return Exp(da) }, Exp(a), ElemExp},
		{"Clamp", func() *Tensor { return Clamp(da, -0.5, 0.5) }, Clamp(a, -0.5, 0.5), ElemClamp},
		{"Where", func() *Tensor { return Where(dcond, da, db) }, Where(cond, a, b), 0},
		{"MaximumInto", func() *Tensor { return MaximumInto(dd, da, db) }, Maximum(a, b), ElemMaximum},
		{"ScaleInto", func() *Tensor { return ScaleInto(dd, da, 3) }, Scale(a, 3), ElemScale},
		{"Fill", func() *Tensor { return Fill(dd, 4) }, Full(4, 2, 3), ElemFill},
	} {
		n := len(fam.calls)
		if got := onHost(t, k.name, k.got(), testDevice); !slices.Equal(got, k.want.Data()) {
			t.Errorf("%s on the device = %v, want %v", k.name, got, k.want.Data())
		}
		if len(fam.calls) != n+1 || fam.calls[n] != k.op {
			t.Errorf("%s: family calls %v, want one more, op %d", k.name, fam.calls[n:], k.op)
		}
	}
	if n := len(fam.calls); n != 10 {
		t.Errorf("the family was called %d times, want 10 (the host references ran on the CPU)", n)
	}

	expectPanic(t, "tensor: Add: [2 3] on cpu and [3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { Add(a, db) })
	expectPanic(t, "tensor: AddInto: [2 3] on cpu and [2 3] on device(7) and [3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { AddInto(New(2, 3), da, db) })
	expectPanic(t, "tensor: WhereInto: [2 3] on device(7) and [2 3] on device(7) and [2 3] on device(7) and [3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { WhereInto(dd, dcond, da, b) })
	const other Device = 8
	RegisterDevice(other, &Backend{Memory: &hostAllocator{}})
	defer RegisterDevice(other, nil)
	oa, _ := a.To(other)
	expectPanic(t, "tensor: Add: [2 3] on device(7) and [2 3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { Add(da, oa) })
	expectPanic(t, "tensor: Exp: [2 3] on device(8): device(8) has no Elementwise kernels; copy the operands with To(tensor.CPU)",
		func() { Exp(oa) })
	expectPanic(t, "tensor: Fill: [2 3] on device(8): device(8) has no Elementwise kernels; copy the operands with To(tensor.CPU)",
		func() { Fill(oa, 1) })
}

// hostReduce is a device's Reduce family that runs the CPU's on host
// copies of the operands, recording the ops it was asked, or fails.
type hostReduce struct {
	calls []string
	fail  bool
}

func (r *hostReduce) record(call string) error {
	r.calls = append(r.calls, call)
	if r.fail {
		return errors.New("fake: out of memory")
	}
	return nil
}

func (r *hostReduce) Reduce(op ReduceOp, dst, x *Tensor, axes []int, ddof int) error {
	if err := r.record(fmt.Sprintf("%s%v", reduceNames[op], axes)); err != nil {
		return err
	}
	h := New(dst.shape...)
	cpuKernels{}.Reduce(op, h, hostCopy(x), axes, ddof)
	store(dst, h)
	return nil
}

func (r *hostReduce) ArgReduce(op ArgOp, dst, x *Tensor, axis int) error {
	if err := r.record(fmt.Sprintf("Arg%d[%d]", op, axis)); err != nil {
		return err
	}
	h := New(dst.shape...)
	cpuKernels{}.ArgReduce(op, h, hostCopy(x), axis)
	store(dst, h)
	return nil
}

func (r *hostReduce) Softmax(dst, x *Tensor, axis int, log bool) error {
	if err := r.record(fmt.Sprintf("Softmax[%d]%v", axis, log)); err != nil {
		return err
	}
	h := New(dst.shape...)
	cpuKernels{}.Softmax(h, hostCopy(x), axis, log)
	store(dst, h)
	return nil
}

func (r *hostReduce) SumTo(dst, x *Tensor) error {
	if err := r.record("SumTo"); err != nil {
		return err
	}
	h := hostCopy(dst).Contiguous()
	cpuKernels{}.SumTo(h, hostCopy(x))
	store(dst, h)
	return nil
}

// TestReduceOnDevice checks that the reductions, ArgMax/ArgMin,
// Softmax/LogSoftmax and SumToInto with device operands run on the
// device's Reduce family (axes resolved and sorted, keepdims or not,
// transposed operands, the Into forms) and return tensors there, and that
// host operands beside device ones, a device without the family, or an
// error of its implementation make them panic naming the op and the
// devices.
func TestReduceOnDevice(t *testing.T) {
	fam := &hostReduce{}
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}, Reduce: fam})
	defer RegisterDevice(testDevice, nil)
	r := rand.New(rand.NewPCG(49, 50))
	a, b, c := RandN(r, 2, 3), RandN(r, 2, 3, 2), RandN(r, 3, 2)
	dev := func(h *Tensor) *Tensor { return onTestDevice(t, h) }
	da, db, dc := dev(a), dev(b), dev(c)
	dd, _ := NewOn(testDevice, 2, 3)
	acc := dev(FromSlice([]float32{1, 2, 3}, 3))
	for _, k := range []struct {
		name  string
		got   func() *Tensor
		want  *Tensor
		shape []int
		call  string
	}{
		{"Sum(all)", func() *Tensor { return Sum(da, false) }, Sum(a, false), []int{}, "Sum[0 1]"},
		{"Sum(-1)", func() *Tensor { return Sum(da, false, -1) }, Sum(a, false, -1), []int{2}, "Sum[1]"},
		{"Sum(axes 2, 0)", func() *Tensor { return Sum(db, true, 2, 0) }, Sum(b, true, 2, 0), []int{1, 3, 1}, "Sum[0 2]"},
		{"Max(keepdims)", func() *Tensor { return Max(da, true, 0) }, Max(a, true, 0), []int{1, 3}, "Max[0]"},
		{"Min(transposed)", func() *Tensor { return Min(dc.T(), false, 1, 0) }, Min(c.T(), false, 1, 0), []int{}, "Min[0 1]"},
		{"Mean(transposed)", func() *Tensor { return Mean(dc.T(), false, 1) }, Mean(c.T(), false, 1), []int{2}, "Mean[1]"},
		{"Var(ddof 1)", func() *Tensor { return Var(da, 1, true, 1) }, Var(a, 1, true, 1), []int{2, 1}, "Var[1]"},
		{"Std", func() *Tensor { return Std(da, 0, false, 0) }, Std(a, 0, false, 0), []int{3}, "Std[0]"},
		{"LogSumExp", func() *Tensor { return LogSumExp(da, false, 1) }, LogSumExp(a, false, 1), []int{2}, "LogSumExp[1]"},
		{"ArgMax", func() *Tensor { return ArgMax(da, 1, false) }, ArgMax(a, 1, false), []int{2}, "Arg1[1]"},
		{"ArgMin(keepdims)", func() *Tensor { return ArgMin(da, -2, true) }, ArgMin(a, -2, true), []int{1, 3}, "Arg2[0]"},
		{"Softmax", func() *Tensor { return Softmax(da, -1) }, Softmax(a, -1), []int{2, 3}, "Softmax[1]false"},
		{"LogSoftmax(transposed)", func() *Tensor { return LogSoftmax(dc.T(), 0) }, LogSoftmax(c.T(), 0), []int{2, 3}, "Softmax[0]true"},
		{"SoftmaxInto", func() *Tensor { return SoftmaxInto(dd, da, 0) }, Softmax(a, 0), []int{2, 3}, "Softmax[0]false"},
		{"SumToInto", func() *Tensor { return SumToInto(acc, da) }, Add(FromSlice([]float32{1, 2, 3}, 3), Sum(a, false, 0)), []int{3}, "SumTo"},
	} {
		n := len(fam.calls)
		res := k.got()
		got := onHost(t, k.name, res, testDevice)
		if !slices.Equal(res.Shape(), k.shape) || !slices.Equal(k.want.Shape(), k.shape) {
			t.Errorf("%s: shape %v on the device, %v on the host, want %v", k.name, res.Shape(), k.want.Shape(), k.shape)
		}
		for i, w := range k.want.Data() {
			if d := math.Abs(float64(got[i] - w)); d > 1e-6*(1+math.Abs(float64(w))) {
				t.Errorf("%s on the device = %v, want %v", k.name, got, k.want.Data())
				break
			}
		}
		if len(fam.calls) != n+1 || fam.calls[n] != k.call {
			t.Errorf("%s: family calls %v, want one more, %s", k.name, fam.calls[n:], k.call)
		}
	}
	if n := len(fam.calls); n != 15 {
		t.Errorf("the family was called %d times, want 15 (the host references ran on the CPU)", n)
	}

	expectPanic(t, "tensor: SumToInto: [3] on cpu and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { SumToInto(New(3), da) })
	expectPanic(t, "tensor: SoftmaxInto: [2 3] on device(7) and [2 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { SoftmaxInto(dd, a, 1) })
	const other Device = 8
	RegisterDevice(other, &Backend{Memory: &hostAllocator{}})
	defer RegisterDevice(other, nil)
	oa, _ := a.To(other)
	expectPanic(t, "tensor: SumToInto: [3] on device(7) and [2 3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { SumToInto(acc, oa) })
	for name, f := range map[string]func(){
		"Sum":        func() { Sum(oa, false) },
		"Max":        func() { Max(oa, true, 1) },
		"Mean":       func() { Mean(oa, false) },
		"Var":        func() { Var(oa, 0, false) },
		"LogSumExp":  func() { LogSumExp(oa, false) },
		"ArgMax":     func() { ArgMax(oa, 1, false) },
		"Softmax":    func() { Softmax(oa, -1) },
		"LogSoftmax": func() { LogSoftmax(oa, -1) },
	} {
		expectPanic(t, "tensor: "+name+": [2 3] on device(8): device(8) has no Reduce kernels; copy the operands with To(tensor.CPU)", f)
	}
	fam.fail = true
	expectPanic(t, "tensor: Sum: [2 3] on device(7) (result [2 1] on device(7)): fake: out of memory",
		func() { Sum(da, false, 1) })
}

// hostCopies is a device's Copy family that runs the CPU's on host copies
// of the operands, recording the calls.
type hostCopies struct{ calls []string }

func (c *hostCopies) CopyInto(dst, src *Tensor) error {
	c.calls = append(c.calls, "CopyInto")
	h := New(dst.shape...)
	cpuKernels{}.CopyInto(h, hostCopy(src))
	store(dst, h)
	return nil
}

func (c *hostCopies) Concat(dst *Tensor, axis int, ts []*Tensor) error {
	c.calls = append(c.calls, fmt.Sprintf("Concat[%d]", axis))
	hs := make([]*Tensor, len(ts))
	for i, t := range ts {
		hs[i] = hostCopy(t)
	}
	h := New(dst.shape...)
	cpuKernels{}.Concat(h, axis, hs)
	store(dst, h)
	return nil
}

// TestCopyOnDevice checks that Contiguous, Clone, Reshape of a strided
// view, CopyInto, Concat and Stack with device operands run on the
// device's Copy family and return tensors there, and that host operands
// beside device ones, or a device without the family, make them panic
// naming the op and the devices.
func TestCopyOnDevice(t *testing.T) {
	fam := &hostCopies{}
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}, Copy: fam})
	defer RegisterDevice(testDevice, nil)
	r := rand.New(rand.NewPCG(51, 52))
	a, b, c := RandN(r, 2, 3), RandN(r, 1, 3), RandN(r, 3, 2)
	dev := func(h *Tensor) *Tensor { return onTestDevice(t, h) }
	da, db, dc := dev(a), dev(b), dev(c)
	dd, _ := NewOn(testDevice, 2, 3)
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		call string
	}{
		{"Contiguous(transposed)", func() *Tensor { return dc.T().Contiguous() }, c.T().Contiguous(), "CopyInto"},
		{"Clone", func() *Tensor { return da.Clone() }, a.Clone(), "CopyInto"},
		{"Reshape(transposed)", func() *Tensor { return dc.T().Reshape(6) }, c.T().Reshape(6), "CopyInto"},
		{"CopyInto(broadcast)", func() *Tensor { return CopyInto(dd, db) }, CopyInto(New(2, 3), b), "CopyInto"},
		{"Concat", func() *Tensor { return Concat(0, da, db, dc.T()) }, Concat(0, a, b, c.T()), "Concat[0]"},
		{"Stack", func() *Tensor { return Stack(1, da, dc.T()) }, Stack(1, a, c.T()), "Concat[1]"},
	} {
		n := len(fam.calls)
		res := k.got()
		if got := onHost(t, k.name, res, testDevice); !slices.Equal(got, k.want.Data()) || !slices.Equal(res.Shape(), k.want.Shape()) {
			t.Errorf("%s on the device = %v of shape %v, want %v", k.name, got, res.Shape(), k.want)
		}
		if len(fam.calls) != n+1 || fam.calls[n] != k.call {
			t.Errorf("%s: family calls %v, want one more, %s", k.name, fam.calls[n:], k.call)
		}
	}
	if n := len(fam.calls); n != 6 {
		t.Errorf("the family was called %d times, want 6 (the host references ran on the CPU)", n)
	}
	// A contiguous device tensor is its own Contiguous: no call.
	if da.Contiguous() != da || len(fam.calls) != 6 {
		t.Errorf("Contiguous of a contiguous device tensor copied it")
	}

	expectPanic(t, "tensor: CopyInto: [2 3] on cpu and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { CopyInto(New(2, 3), da) })
	expectPanic(t, "tensor: Concat: [2 3] on cpu and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { Concat(0, a, da) })
	expectPanic(t, "tensor: Stack: [2 3] on device(7) and [2 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { Stack(0, da, a) })
	const other Device = 8
	RegisterDevice(other, &Backend{Memory: &hostAllocator{}})
	defer RegisterDevice(other, nil)
	oa, _ := a.To(other)
	expectPanic(t, "tensor: Concat: [2 3] on device(7) and [2 3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { Concat(0, da, oa) })
	for name, f := range map[string]func(){
		"Contiguous": func() { oa.T().Contiguous() },
		"Clone":      func() { oa.Clone() },
		"Reshape":    func() { oa.T().Reshape(6) },
		"Stack":      func() { Stack(0, oa, oa) },
	} {
		want := "tensor: " + name + ": [2 3] on device(8): device(8) has no Copy kernels; copy the operands with To(tensor.CPU)"
		switch name {
		case "Contiguous", "Reshape":
			want = "tensor: " + name + ": [3 2] on device(8): device(8) has no Copy kernels; copy the operands with To(tensor.CPU)"
		case "Stack":
			want = "tensor: Stack: [2 3] on device(8) and [2 3] on device(8): device(8) has no Copy kernels; copy the operands with To(tensor.CPU)"
		}
		expectPanic(t, want, f)
	}
}

// onTestDevice copies h to testDevice, failing the test if it cannot.
func onTestDevice(t *testing.T, h *Tensor) *Tensor {
	t.Helper()
	d, err := h.To(testDevice)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
