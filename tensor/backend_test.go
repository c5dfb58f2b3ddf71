package tensor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

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

// onTestDevice copies h to testDevice, failing the test if it cannot.
func onTestDevice(t *testing.T, h *Tensor) *Tensor {
	t.Helper()
	d, err := h.To(testDevice)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
