package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// The routing of ops to a device's families, checked on tensortest's
// stand-in (a device whose families run the CPU's code on host copies).

const (
	onDev    Device = 7 // a tensortest.HostDevice
	otherDev Device = 8 // another, with Memory only (no families)
)

// registerBare registers dev with memory and no family.
func registerBare(t *testing.T, dev Device) {
	RegisterDevice(dev, &Backend{Memory: tensortest.NewHostDevice(dev).Backend().Memory})
	t.Cleanup(func() { RegisterDevice(dev, nil) })
}

// registerWrapped registers a stand-in for onDev, for the test, whose
// Backend wrap has changed first (a family wrapped to record what it is
// given).
func registerWrapped(t *testing.T, wrap func(b *Backend)) *tensortest.HostDevice {
	d := tensortest.NewHostDevice(onDev)
	b := d.Backend()
	wrap(b)
	RegisterDevice(onDev, b)
	t.Cleanup(func() { RegisterDevice(onDev, nil) })
	return d
}

// toDev copies h to dev, failing the test if it cannot.
func toDev(t *testing.T, h *Tensor, dev Device) *Tensor {
	t.Helper()
	d, err := h.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fromDev returns x's elements on the host, failing unless x is on dev.
func fromDev(t *testing.T, what string, x *Tensor, dev Device) *Tensor {
	t.Helper()
	if x.Device() != dev {
		t.Fatalf("%s: result on %v, want %v", what, x.Device(), dev)
	}
	h, err := x.To(CPU)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// panics checks that f panics with want.
func panics(t *testing.T, want string, f func()) {
	t.Helper()
	if got := tensortest.Panic(f); got != want {
		t.Errorf("panic %q, want %q", got, want)
	}
}

// oneCall checks that the family method name, and nothing else, was
// called once since before.
func oneCall(t *testing.T, what string, d *tensortest.HostDevice, before tensortest.Counts, name string) {
	t.Helper()
	c := d.Counts()
	if c.Calls[name] != before.Calls[name]+1 || c.Kernels() != before.Kernels()+1 {
		t.Errorf("%s: family calls %v after %v, want one more %s", what, c.Calls, before.Calls, name)
	}
}

// sameOnDevice runs got, an op on d's device, and checks that it returns
// want's elements and shape there with one call, of the family method
// call, and nothing else.
func sameOnDevice(t *testing.T, what string, d *tensortest.HostDevice, got func() *Tensor, want *Tensor, call string) {
	t.Helper()
	before := d.Counts()
	res := got()
	if h := fromDev(t, what, res, onDev); !slices.Equal(h.Data(), want.Data()) || !slices.Equal(res.Shape(), want.Shape()) {
		t.Errorf("%s on the device = %v of shape %v, want %v", what, h, res.Shape(), want)
	}
	oneCall(t, what, d, before, call)
}

// TestElementwiseOnDevice checks that the elementwise ops with device
// operands run on the device's Elementwise family and return tensors
// there (broadcast and transposed operands, a 0-d host scalar beside
// device ones, the Into forms, Fill), and that host operands beside device
// ones, or a device without the family, make them panic naming the op and
// the devices.
func TestElementwiseOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(47, 48))
	a, b, c := RandN(r, 2, 3), RandN(r, 3), RandN(r, 3, 2)
	cond := Greater(a, RandN(r, 2, 3))
	s := Scalar(2.5) // 0-d
	da, db, dc, dcond := toDev(t, a, onDev), toDev(t, b, onDev), toDev(t, c, onDev), toDev(t, cond, onDev)
	dd, _ := NewOn(onDev, 2, 3)
	const bin, un = "Elementwise.Binary", "Elementwise.Unary"
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		call string
	}{
		{"Add(broadcast)", func() *Tensor { return Add(da, db) }, Add(a, b), bin},
		{"Sub(transposed)", func() *Tensor { return Sub(da, dc.T()) }, Sub(a, c.T()), bin},
		{"Mul(0-d host scalar)", func() *Tensor { return Mul(da, s) }, Mul(a, s), bin},
		{"Less", func() *Tensor { return Less(db, da) }, Less(b, a), bin},
		{"Exp", func() *Tensor { return Exp(da) }, Exp(a), un},
		{"Clamp", func() *Tensor { return Clamp(da, -0.5, 0.5) }, Clamp(a, -0.5, 0.5), un},
		{"Where", func() *Tensor { return Where(dcond, da, db) }, Where(cond, a, b), "Elementwise.Where"},
		{"MaximumInto", func() *Tensor { return MaximumInto(dd, da, db) }, Maximum(a, b), bin},
		{"ScaleInto", func() *Tensor { return ScaleInto(dd, da, 3) }, Scale(a, 3), un},
		{"Fill", func() *Tensor { return Fill(dd, 4) }, Full(4, 2, 3), un},
	} {
		before := d.Counts()
		if got := fromDev(t, k.name, k.got(), onDev); !slices.Equal(got.Data(), k.want.Data()) {
			t.Errorf("%s on the device = %v, want %v", k.name, got, k.want)
		}
		oneCall(t, k.name, d, before, k.call)
	}

	panics(t, "tensor: Add: [2 3] on cpu and [3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { Add(a, db) })
	panics(t, "tensor: AddInto: [2 3] on cpu and [2 3] on device(7) and [3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { AddInto(New(2, 3), da, db) })
	panics(t, "tensor: WhereInto: [2 3] on device(7) and [2 3] on device(7) and [2 3] on device(7) and [3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { WhereInto(dd, dcond, da, b) })
	registerBare(t, otherDev)
	oa := toDev(t, a, otherDev)
	panics(t, "tensor: Add: [2 3] on device(7) and [2 3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { Add(da, oa) })
	panics(t, "tensor: Exp: [2 3] on device(8): device(8) has no Elementwise kernels; copy the operands with To(tensor.CPU)",
		func() { Exp(oa) })
	panics(t, "tensor: Fill: [2 3] on device(8): device(8) has no Elementwise kernels; copy the operands with To(tensor.CPU)",
		func() { Fill(oa, 1) })
}

// reduceLog is a Reduce family that records the axes it is given, then
// runs the stand-in's.
type reduceLog struct {
	ReduceKernels
	calls []string
}

func (l *reduceLog) Reduce(op ReduceOp, dst, x *Tensor, axes []int, ddof int) error {
	l.calls = append(l.calls, fmt.Sprintf("Reduce%v", axes))
	return l.ReduceKernels.Reduce(op, dst, x, axes, ddof)
}

func (l *reduceLog) ArgReduce(op ArgOp, dst, x *Tensor, axis int) error {
	l.calls = append(l.calls, fmt.Sprintf("ArgReduce[%d]", axis))
	return l.ReduceKernels.ArgReduce(op, dst, x, axis)
}

func (l *reduceLog) Softmax(dst, x *Tensor, axis int, log bool) error {
	l.calls = append(l.calls, fmt.Sprintf("Softmax[%d]%v", axis, log))
	return l.ReduceKernels.Softmax(dst, x, axis, log)
}

func (l *reduceLog) SumTo(dst, x *Tensor) error {
	l.calls = append(l.calls, "SumTo")
	return l.ReduceKernels.SumTo(dst, x)
}

// TestReduceOnDevice checks that the reductions, ArgMax/ArgMin,
// Softmax/LogSoftmax and SumToInto with device operands run on the
// device's Reduce family (axes resolved and sorted, keepdims or not,
// transposed operands, the Into forms) and return tensors there, and that
// host operands beside device ones, a device without the family, or an
// error of its implementation make them panic naming the op and the
// devices.
func TestReduceOnDevice(t *testing.T) {
	var fam *reduceLog
	d := registerWrapped(t, func(b *Backend) {
		fam = &reduceLog{ReduceKernels: b.Reduce}
		b.Reduce = fam
	})
	r := rand.New(rand.NewPCG(49, 50))
	x, y, z := RandN(r, 2, 3), RandN(r, 2, 3, 2), RandN(r, 3, 2)
	dx, dy, dz := toDev(t, x, onDev), toDev(t, y, onDev), toDev(t, z, onDev)
	dd, _ := NewOn(onDev, 2, 3)
	acc := toDev(t, FromSlice([]float32{1, 2, 3}, 3), onDev)
	for _, k := range []struct {
		name  string
		got   func() *Tensor
		want  *Tensor
		shape []int
		call  string
	}{
		{"Sum(all)", func() *Tensor { return Sum(dx, false) }, Sum(x, false), []int{}, "Reduce[0 1]"},
		{"Sum(-1)", func() *Tensor { return Sum(dx, false, -1) }, Sum(x, false, -1), []int{2}, "Reduce[1]"},
		{"Sum(axes 2, 0)", func() *Tensor { return Sum(dy, true, 2, 0) }, Sum(y, true, 2, 0), []int{1, 3, 1}, "Reduce[0 2]"},
		{"Max(keepdims)", func() *Tensor { return Max(dx, true, 0) }, Max(x, true, 0), []int{1, 3}, "Reduce[0]"},
		{"Min(transposed)", func() *Tensor { return Min(dz.T(), false, 1, 0) }, Min(z.T(), false, 1, 0), []int{}, "Reduce[0 1]"},
		{"Mean(transposed)", func() *Tensor { return Mean(dz.T(), false, 1) }, Mean(z.T(), false, 1), []int{2}, "Reduce[1]"},
		{"Var(ddof 1)", func() *Tensor { return Var(dx, 1, true, 1) }, Var(x, 1, true, 1), []int{2, 1}, "Reduce[1]"},
		{"Std", func() *Tensor { return Std(dx, 0, false, 0) }, Std(x, 0, false, 0), []int{3}, "Reduce[0]"},
		{"LogSumExp", func() *Tensor { return LogSumExp(dx, false, 1) }, LogSumExp(x, false, 1), []int{2}, "Reduce[1]"},
		{"ArgMax", func() *Tensor { return ArgMax(dx, 1, false) }, ArgMax(x, 1, false), []int{2}, "ArgReduce[1]"},
		{"ArgMin(keepdims)", func() *Tensor { return ArgMin(dx, -2, true) }, ArgMin(x, -2, true), []int{1, 3}, "ArgReduce[0]"},
		{"Softmax", func() *Tensor { return Softmax(dx, -1) }, Softmax(x, -1), []int{2, 3}, "Softmax[1]false"},
		{"LogSoftmax(transposed)", func() *Tensor { return LogSoftmax(dz.T(), 0) }, LogSoftmax(z.T(), 0), []int{2, 3}, "Softmax[0]true"},
		{"SoftmaxInto", func() *Tensor { return SoftmaxInto(dd, dx, 0) }, Softmax(x, 0), []int{2, 3}, "Softmax[0]false"},
		{"SumToInto", func() *Tensor { return SumToInto(acc, dx) }, Add(FromSlice([]float32{1, 2, 3}, 3), Sum(x, false, 0)), []int{3}, "SumTo"},
	} {
		n := len(fam.calls)
		res := k.got()
		got := fromDev(t, k.name, res, onDev)
		if !slices.Equal(res.Shape(), k.shape) || !slices.Equal(k.want.Shape(), k.shape) {
			t.Errorf("%s: shape %v on the device, %v on the host, want %v", k.name, res.Shape(), k.want.Shape(), k.shape)
		}
		for i, w := range k.want.Data() {
			if e := math.Abs(float64(got.Data()[i] - w)); e > 1e-6*(1+math.Abs(float64(w))) {
				t.Errorf("%s on the device = %v, want %v", k.name, got, k.want)
				break
			}
		}
		if len(fam.calls) != n+1 || fam.calls[n] != k.call {
			t.Errorf("%s: family calls %v, want one more, %s", k.name, fam.calls[n:], k.call)
		}
	}
	if c := d.Counts(); c.Kernels() != 15 {
		t.Errorf("the device ran %d family calls, want 15 (the host references ran on the CPU): %v", c.Kernels(), c.Calls)
	}

	panics(t, "tensor: SumToInto: [3] on cpu and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { SumToInto(New(3), dx) })
	// A 0-d host dst is refused too: a scalar operand is read, but a
	// device does not write host memory.
	panics(t, "tensor: SumToInto: [] on cpu and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { SumToInto(Scalar(0), dx) })
	panics(t, "tensor: SoftmaxInto: [2 3] on device(7) and [2 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { SoftmaxInto(dd, x, 1) })
	registerBare(t, otherDev)
	ox := toDev(t, x, otherDev)
	panics(t, "tensor: SumToInto: [3] on device(7) and [2 3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { SumToInto(acc, ox) })
	for name, f := range map[string]func(){
		"Sum":        func() { Sum(ox, false) },
		"Max":        func() { Max(ox, true, 1) },
		"Mean":       func() { Mean(ox, false) },
		"Var":        func() { Var(ox, 0, false) },
		"LogSumExp":  func() { LogSumExp(ox, false) },
		"ArgMax":     func() { ArgMax(ox, 1, false) },
		"Softmax":    func() { Softmax(ox, -1) },
		"LogSoftmax": func() { LogSoftmax(ox, -1) },
	} {
		panics(t, "tensor: "+name+": [2 3] on device(8): device(8) has no Reduce kernels; copy the operands with To(tensor.CPU)", f)
	}
	d.SetFaults(tensortest.Faults{Kernels: errors.New("fake: out of memory")})
	panics(t, "tensor: Sum: [2 3] on device(7) (result [2 1] on device(7)): fake: out of memory",
		func() { Sum(dx, false, 1) })
}

// TestCopyOnDevice checks that Contiguous, Clone, Reshape of a strided
// view, CopyInto, Concat and Stack with device operands run on the
// device's Copy family and return tensors there, and that host operands
// beside device ones, or a device without the family, make them panic
// naming the op and the devices.
func TestCopyOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(51, 52))
	a, b, c := RandN(r, 2, 3), RandN(r, 1, 3), RandN(r, 3, 2)
	da, db, dc := toDev(t, a, onDev), toDev(t, b, onDev), toDev(t, c, onDev)
	dd, _ := NewOn(onDev, 2, 3)
	const cp, cat = "Copy.CopyInto", "Copy.Concat"
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		call string
	}{
		{"Contiguous(transposed)", func() *Tensor { return dc.T().Contiguous() }, c.T().Contiguous(), cp},
		{"Clone", func() *Tensor { return da.Clone() }, a.Clone(), cp},
		{"Reshape(transposed)", func() *Tensor { return dc.T().Reshape(6) }, c.T().Reshape(6), cp},
		{"CopyInto(broadcast)", func() *Tensor { return CopyInto(dd, db) }, CopyInto(New(2, 3), b), cp},
		{"Concat", func() *Tensor { return Concat(0, da, db, dc.T()) }, Concat(0, a, b, c.T()), cat},
		{"Stack", func() *Tensor { return Stack(1, da, dc.T()) }, Stack(1, a, c.T()), cat},
	} {
		sameOnDevice(t, k.name, d, k.got, k.want, k.call)
	}
	// A contiguous device tensor is its own Contiguous: no call.
	before := d.Counts()
	if da.Contiguous() != da || d.Counts().Kernels() != before.Kernels() {
		t.Errorf("Contiguous of a contiguous device tensor copied it")
	}

	panics(t, "tensor: CopyInto: [2 3] on cpu and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { CopyInto(New(2, 3), da) })
	panics(t, "tensor: Concat: [2 3] on cpu and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { Concat(0, a, da) })
	panics(t, "tensor: Stack: [2 3] on device(7) and [2 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { Stack(0, da, a) })
	registerBare(t, otherDev)
	oa := toDev(t, a, otherDev)
	panics(t, "tensor: Concat: [2 3] on device(7) and [2 3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { Concat(0, da, oa) })
	for _, k := range []struct {
		name, where string
		f           func()
	}{
		{"Contiguous", "[3 2] on device(8)", func() { oa.T().Contiguous() }},
		{"Clone", "[2 3] on device(8)", func() { oa.Clone() }},
		{"Reshape", "[3 2] on device(8)", func() { oa.T().Reshape(6) }},
		{"Stack", "[2 3] on device(8) and [2 3] on device(8)", func() { Stack(0, oa, oa) }},
	} {
		panics(t, "tensor: "+k.name+": "+k.where+": device(8) has no Copy kernels; copy the operands with To(tensor.CPU)", k.f)
	}
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

// TestBackendPlacement checks that host MatMul and Conv2D work goes to
// the offload device (SetOffload) when dispatch.Place says so, with the
// Work it describes, that an error there leaves the work to the CPU, and
// that no other device, nor an unregistered one, takes it.
func TestBackendPlacement(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	pl := &flopsPlacer{min: 1e4}
	dispatch.SetPlacer(pl)
	defer dispatch.SetPlacer(nil)
	small, big := RandN(r, 4, 4), RandN(r, 32, 32)
	want := MatMul(big, big)
	d := tensortest.Register(t, onDev)
	offloads := func(what string, n int64) {
		t.Helper()
		if c := d.Counts(); c.Offloads != n || c.Kernels() != n {
			t.Errorf("%s: the device took %d host calls (%v), want %d", what, c.Offloads, c.Calls, n)
		}
	}
	// Without an offload device everything stays on the CPU, whatever Place says.
	MatMul(big, big)
	offloads("no offload device", 0)
	SetOffload(onDev)
	defer SetOffload(CPU)

	MatMul(small, small)
	offloads(fmt.Sprintf("a 4×4 product (%v FLOPs)", pl.last.FLOPs), 0)
	if got := MatMul(big, big); got.Device() != CPU || !slices.Equal(got.Data(), want.Data()) {
		t.Errorf("offloaded 32×32 product = %v on %v", got, got.Device())
	}
	offloads("a 32×32 product", 1)
	if pl.last.Op != dispatch.OpMatMul || pl.last.FLOPs != 2*32*32*32 || pl.last.Bytes != 4*3*32*32 || pl.last.Resident {
		t.Errorf("Place asked %+v", pl.last)
	}
	x, w := RandN(r, 1, 2, 16, 16), RandN(r, 3, 2, 3, 3)
	Conv2D(x, w, nil, ConvParams{})
	if c := d.Counts(); c.Calls["Conv.Conv2D"] != 1 || c.Offloads != 2 {
		t.Errorf("Conv2D did not go to the offload device: %+v", c)
	}
	if pl.last.Op != dispatch.OpConv2D || pl.last.FLOPs != 2*3*196*18 {
		t.Errorf("Place asked %+v", pl.last)
	}
	// A failing device leaves the work to the CPU.
	d.SetFaults(tensortest.Faults{Kernels: errors.New("fake: out of memory")})
	dst := Full(42, 32, 32)
	MatMulInto(dst, big, big)
	if !slices.Equal(dst.Data(), want.Data()) {
		t.Errorf("after a device error, MatMulInto = %v, want the CPU's %v", dst, want)
	}
	offloads("a failing device", 3)
	d.SetFaults(tensortest.Faults{})
	SetOffload(CPU)
	MatMul(big, big)
	offloads("after SetOffload(CPU)", 3)
	SetOffload(onDev)
	RegisterDevice(onDev, nil)
	MatMul(big, big)
	offloads("an unregistered offload device", 3)
}

// countingPlacer sends everything to the CPU and counts its calls.
type countingPlacer struct{ calls int }

func (p *countingPlacer) Place(dispatch.Work) dispatch.Target { p.calls++; return dispatch.OnCPU }
func (p *countingPlacer) Describe() string                    { return "test: all on the CPU" }

// TestMatMulConvOnDevice checks that MatMul, Conv2D and the convolution
// gradients with their operands on a device run on its families even when
// placement says CPU, and return their result on that device; and that
// host operands beside device ones, or operands on two devices, make them
// panic naming the op and the devices, before anything is allocated or
// run on the device.
func TestMatMulConvOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	SetOffload(onDev)
	defer SetOffload(CPU)
	pl := &countingPlacer{}
	dispatch.SetPlacer(pl)
	defer dispatch.SetPlacer(nil)
	r := rand.New(rand.NewPCG(43, 44))
	a, b := RandN(r, 3, 4), RandN(r, 4, 5)
	x, w, bias := RandN(r, 2, 2, 6, 6), RandN(r, 3, 2, 3, 3), RandN(r, 3)
	p := ConvParams{Padding: [2]int{1, 1}, ReLU: true}
	q := ConvParams{Padding: [2]int{1, 1}}
	wantMM, wantConv, wantConvQ := MatMul(a, b), Conv2D(x, w, bias, p), Conv2D(x, w, nil, q) // host work: the placer says CPU
	dy := RandN(r, wantConvQ.Shape()...)
	wantDX, wantDW := Conv2DBackwardInput(dy, w, x.Shape(), q), Conv2DBackwardWeight(dy, x, w.Shape(), q)
	if c := d.Counts(); c.Kernels() != 0 || pl.calls != 3 {
		t.Fatalf("host work: device calls %v, placer asked %d times", c.Calls, pl.calls)
	}
	da, db, dx, dw, dbias, ddy := toDev(t, a, onDev), toDev(t, b, onDev), toDev(t, x, onDev), toDev(t, w, onDev), toDev(t, bias, onDev), toDev(t, dy, onDev)
	dd, _ := NewOn(onDev, 3, 5)
	dc, _ := NewOn(onDev, wantConvQ.Shape()...)
	ddw, _ := NewOn(onDev, w.Shape()...)
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		call string
	}{
		{"MatMul", func() *Tensor { return MatMul(da, db) }, wantMM, "MatMul.MatMul"},
		{"MatMul(transposed views)", func() *Tensor { return MatMul(toDev(t, a.T(), onDev).T(), toDev(t, b.T(), onDev).T()) }, wantMM, "MatMul.MatMul"},
		{"MatMulInto", func() *Tensor { return MatMulInto(dd, da, db) }, wantMM, "MatMul.MatMul"},
		{"Conv2D(bias, ReLU)", func() *Tensor { return Conv2D(dx, dw, dbias, p) }, wantConv, "Conv.Conv2D"},
		{"Conv2DInto(no bias)", func() *Tensor { return Conv2DInto(dc, dx, dw, nil, q) }, wantConvQ, "Conv.Conv2D"},
		{"Conv2DBackwardInput", func() *Tensor { return Conv2DBackwardInput(ddy, dw, x.Shape(), q) }, wantDX, "Conv.Conv2DBackwardInput"},
		{"Conv2DBackwardWeight", func() *Tensor { return Conv2DBackwardWeight(ddy, dx, w.Shape(), q) }, wantDW, "Conv.Conv2DBackwardWeight"},
		{"Conv2DBackwardWeightInto", func() *Tensor { return Conv2DBackwardWeightInto(ddw, ddy, dx, q) }, wantDW, "Conv.Conv2DBackwardWeight"},
	} {
		before := d.Counts()
		if got := fromDev(t, k.name, k.got(), onDev); !slices.Equal(got.Data(), k.want.Data()) {
			t.Errorf("%s on the device = %v, want %v", k.name, got, k.want)
		}
		oneCall(t, k.name, d, before, k.call)
	}
	if pl.calls != 3 {
		t.Errorf("device work asked the placer %d times", pl.calls-3)
	}
	// The default thresholds send work this small to the CPU; device
	// operands go to the device all the same.
	dispatch.SetPlacer(nil)
	before := d.Counts()
	if got := MatMul(da, db); got.Device() != onDev {
		t.Errorf("with the default thresholds a device MatMul ran on %v", got.Device())
	}
	oneCall(t, "MatMul with the default thresholds", d, before, "MatMul.MatMul")

	// Host and device operands mixed, or two devices: panics before any
	// allocation or call on the device.
	before = d.Counts()
	const mixed = ": operands on device(7) and cpu; copy them to one device with To"
	panics(t, "tensor: MatMul: [3 4] on cpu and [4 5] on device(7)"+mixed, func() { MatMul(a, db) })
	panics(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on cpu"+mixed, func() { MatMul(da, b) })
	panics(t, "tensor: MatMulInto: [3 5] on cpu and [3 4] on device(7) and [4 5] on device(7)"+mixed, func() { MatMulInto(New(3, 5), da, db) })
	panics(t, "tensor: MatMulInto: [3 5] on device(7) and [3 4] on cpu and [4 5] on cpu"+mixed, func() { MatMulInto(dd, a, b) })
	panics(t, "tensor: Conv2D: [2 2 6 6] on device(7) and [3 2 3 3] on cpu and [3] on device(7)"+mixed, func() { Conv2D(dx, w, dbias, p) })
	panics(t, "tensor: Conv2D: [2 2 6 6] on cpu and [3 2 3 3] on cpu and [3] on device(7)"+mixed, func() { Conv2D(x, w, dbias, p) })
	panics(t, "tensor: Conv2DInto: [2 3 6 6] on cpu and [2 2 6 6] on device(7) and [3 2 3 3] on device(7)"+mixed,
		func() { Conv2DInto(New(wantConvQ.Shape()...), dx, dw, nil, q) })
	panics(t, "tensor: Conv2DBackwardInput: [2 3 6 6] on device(7) and [3 2 3 3] on cpu"+mixed, func() { Conv2DBackwardInput(ddy, w, x.Shape(), q) })
	panics(t, "tensor: Conv2DBackwardWeight: [2 3 6 6] on device(7) and [2 2 6 6] on cpu"+mixed, func() { Conv2DBackwardWeight(ddy, x, w.Shape(), q) })
	panics(t, "tensor: Conv2DBackwardWeight: [3 2 3 3] on cpu and [2 3 6 6] on device(7) and [2 2 6 6] on device(7)"+mixed,
		func() { Conv2DBackwardWeightInto(New(w.Shape()...), ddy, dx, q) })
	registerBare(t, otherDev)
	ob, obias := toDev(t, b, otherDev), toDev(t, bias, otherDev)
	const two = ": operands on device(7) and device(8); copy them to one device with To"
	panics(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on device(8)"+two, func() { MatMul(da, ob) })
	panics(t, "tensor: Conv2D: [2 2 6 6] on device(7) and [3 2 3 3] on device(7) and [3] on device(8)"+two, func() { Conv2D(dx, dw, obias, p) })
	if c := d.Counts(); c.Allocs != before.Allocs || c.Kernels() != before.Kernels() {
		t.Errorf("the refused ops allocated %d buffers and ran %d calls on the device", c.Allocs-before.Allocs, c.Kernels()-before.Kernels())
	}
}

// TestMatMulConvOnDeviceFailures checks that device work panics, naming
// the op, the shapes, the devices and the cause, when the device lacks the
// family, fails, cannot allocate the result or is gone, while failing
// offloaded host work falls back to the CPU.
func TestMatMulConvOnDeviceFailures(t *testing.T) {
	registerBare(t, onDev)
	r := rand.New(rand.NewPCG(45, 46))
	a, b := RandN(r, 3, 4), RandN(r, 4, 5)
	x, w := RandN(r, 1, 2, 6, 6), RandN(r, 3, 2, 3, 3)
	da, db, dx, dw := toDev(t, a, onDev), toDev(t, b, onDev), toDev(t, x, onDev), toDev(t, w, onDev)
	want, wantConv := MatMul(a, b), Conv2D(x, w, nil, ConvParams{})

	const noMatMul, noConv = "device(7) has no MatMul kernels; copy the operands with To(tensor.CPU)", "device(7) has no Conv kernels; copy the operands with To(tensor.CPU)"
	panics(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on device(7): "+noMatMul, func() { MatMul(da, db) })
	panics(t, "tensor: Conv2D: [1 2 6 6] on device(7) and [3 2 3 3] on device(7): "+noConv, func() { Conv2D(dx, dw, nil, ConvParams{}) })
	dy, _ := NewOn(onDev, 1, 3, 4, 4)
	panics(t, "tensor: Conv2DBackwardInput: [1 3 4 4] on device(7) and [3 2 3 3] on device(7): "+noConv, func() { Conv2DBackwardInput(dy, dw, x.Shape(), ConvParams{}) })
	panics(t, "tensor: Conv2DBackwardWeight: [1 3 4 4] on device(7) and [1 2 6 6] on device(7): "+noConv, func() { Conv2DBackwardWeight(dy, dx, w.Shape(), ConvParams{}) })

	d := tensortest.NewHostDevice(onDev)
	RegisterDevice(onDev, d.Backend())
	d.SetFaults(tensortest.Faults{Kernels: errors.New("fake: out of memory")})
	SetOffload(onDev)
	defer SetOffload(CPU)
	dispatch.SetPlacer(&flopsPlacer{min: 0}) // host work to the device too
	defer dispatch.SetPlacer(nil)
	panics(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on device(7) (result [3 5] on device(7)): fake: out of memory", func() { MatMul(da, db) })
	panics(t, "tensor: Conv2DInto: [1 2 6 6] on device(7) and [3 2 3 3] on device(7) (result [1 3 4 4] on device(7)): fake: out of memory", func() {
		dc, _ := NewOn(onDev, 1, 3, 4, 4)
		Conv2DInto(dc, dx, dw, nil, ConvParams{})
	})
	if c := d.Counts(); c.Kernels() != 2 || c.Offloads != 0 {
		t.Errorf("device calls %v, want the two failing ones", c.Calls)
	}
	// Host work: the device is tried, fails, and the CPU does the work.
	if got := MatMul(a, b); !slices.Equal(got.Data(), want.Data()) || got.Device() != CPU {
		t.Errorf("MatMul after a device error = %v on %v, want %v", got, got.Device(), want)
	}
	if got := Conv2D(x, w, nil, ConvParams{}); !slices.Equal(got.Data(), wantConv.Data()) {
		t.Errorf("Conv2D after a device error = %v, want %v", got, wantConv)
	}
	if c := d.Counts(); c.Offloads != 2 || c.Calls["MatMul.MatMul"] != 2 || c.Calls["Conv.Conv2D"] != 2 {
		t.Errorf("device calls %v: the host work was not offered to it", c.Calls)
	}
	// The result of device work cannot be allocated.
	d.SetFaults(tensortest.Faults{Alloc: errors.New("device full")})
	panics(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on device(7): allocating the result of shape [3 5]: device full", func() { MatMul(da, db) })
	// The device is gone (cudaplugin's Close) while its tensors live.
	RegisterDevice(onDev, nil)
	panics(t, "tensor: MatMul: [3 4] on device(7) and [4 5] on device(7): device(7) is not registered (tensor.RegisterDevice)", func() { MatMul(da, db) })
	panics(t, "tensor: RegisterDevice: device(7) without Memory", func() { RegisterDevice(onDev, &Backend{MatMul: d.Backend().MatMul}) })
}

// TestIndexOnDevice checks that the index ops with device operands run on
// the device's Index family (axes resolved, transposed operands, the Into
// forms, the adds accumulating into device tensors) and return tensors
// there; that an invalid index there panics with the family's error,
// naming the op and the value; and that host operands beside device ones,
// a device without the family, or an error of its implementation make
// them panic naming the op and the devices.
func TestIndexOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(41, 42))
	x, y := RandN(r, 4, 3), RandN(r, 3, 4)
	idx := FromSlice([]float32{2, 0, -1, 2, 3}, 5)
	gi := FromSlice([]float32{1, 3, 0, 0, 2, 3}, 2, 3)
	src, gsrc := RandN(r, 5, 3), RandN(r, 2, 3)
	labels := FromSlice([]float32{2, 0, 1, 1}, 2, 2)
	dev := func(h *Tensor) *Tensor { return toDev(t, h, onDev) }
	dx, dy, didx, dgi, dsrc, dgsrc, dlabels := dev(x), dev(y), dev(idx), dev(gi), dev(src), dev(gsrc), dev(labels)
	dsel, _ := NewOn(onDev, 5, 3)
	dg, _ := NewOn(onDev, 2, 3)
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		call string
	}{
		{"IndexSelect", func() *Tensor { return IndexSelect(dx, -2, didx) }, IndexSelect(x, 0, idx), "Index.IndexSelect"},
		{"IndexSelect(transposed)", func() *Tensor { return IndexSelect(dy.T(), 0, didx) }, IndexSelect(y.T(), 0, idx), "Index.IndexSelect"},
		{"IndexSelectInto", func() *Tensor { return IndexSelectInto(dsel, dx, 0, didx) }, IndexSelect(x, 0, idx), "Index.IndexSelect"},
		{"Gather", func() *Tensor { return Gather(dx, 0, dgi) }, Gather(x, 0, gi), "Index.Gather"},
		{"GatherInto(transposed)", func() *Tensor { return GatherInto(dg, dy.T(), 0, dgi) }, Gather(y.T(), 0, gi), "Index.Gather"},
		{"IndexAdd", func() *Tensor { return IndexAdd(dev(x), 0, didx, dsrc) }, IndexAdd(x.Clone(), 0, idx, src), "Index.IndexAdd"},
		{"ScatterAdd", func() *Tensor { return ScatterAdd(dev(x), -2, dgi, dgsrc) }, ScatterAdd(x.Clone(), 0, gi, gsrc), "Index.ScatterAdd"},
		{"OneHot", func() *Tensor { return OneHot(dlabels, 3) }, OneHot(labels, 3), "Index.OneHot"},
	} {
		sameOnDevice(t, k.name, d, k.got, k.want, k.call)
	}
	if c := d.Counts(); c.Kernels() != 8 {
		t.Errorf("the device ran %d family calls, want 8 (the host references ran on the CPU): %v", c.Kernels(), c.Calls)
	}
	// An invalid index reaches the family, which reports it.
	panics(t, "tensor: IndexSelect: index 4 is not an integer in -4..3", func() { IndexSelect(dx, 0, dev(Full(4, 1))) })
	panics(t, "tensor: OneHot: label 2 not in 0..1", func() { OneHot(dlabels, 2) })

	panics(t, "tensor: IndexSelect: [4 3] on device(7) and [5] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { IndexSelect(dx, 0, idx) })
	panics(t, "tensor: IndexAdd: [4 3] on cpu and [5] on device(7) and [5 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { IndexAdd(x.Clone(), 0, didx, dsrc) })
	panics(t, "tensor: GatherInto: [2 3] on device(7) and [4 3] on device(7) and [2 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { GatherInto(dg, dx, 0, gi) })
	registerBare(t, otherDev)
	ox, oi := toDev(t, x, otherDev), toDev(t, FromSlice([]float32{1}, 1), otherDev)
	panics(t, "tensor: ScatterAdd: [4 3] on device(8) and [2 3] on device(7) and [2 3] on device(7): operands on device(8) and device(7); copy them to one device with To",
		func() { ScatterAdd(ox, 0, dgi, dgsrc) })
	for _, k := range []struct {
		name, where string
		f           func()
	}{
		{"IndexSelect", "[4 3] on device(8) and [1] on device(8)", func() { IndexSelect(ox, 0, oi) }},
		{"IndexAdd", "[1] on device(8) and [1 3] on device(8) (result [4 3] on device(8))", func() { IndexAdd(ox, 0, oi, ox.Slice(0, 0, 1, 1)) }},
		{"Gather", "[12] on device(8) and [1] on device(8)", func() { Gather(ox.Reshape(12), 0, oi) }},
		{"OneHot", "[4 3] on device(8)", func() { OneHot(ox, 3) }},
	} {
		panics(t, "tensor: "+k.name+": "+k.where+": device(8) has no Index kernels; copy the operands with To(tensor.CPU)", k.f)
	}
	d.SetFaults(tensortest.Faults{Kernels: errors.New("fake: out of memory")})
	panics(t, "tensor: Gather: [4 3] on device(7) and [2 3] on device(7) (result [2 3] on device(7)): fake: out of memory",
		func() { Gather(dx, 0, dgi) })
}

// TestPoolOnDevice checks that the poolings and their gradients with
// device operands run on the device's Pool family (transposed operands,
// the Into forms, indices only) and return tensors there, that an invalid
// index there panics with the family's error, and that host operands
// beside device ones, a device without the family, or an error of its
// implementation make them panic naming the op and the devices.
func TestPoolOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(15, 16))
	x, xt := RandN(r, 2, 3, 5, 4), RandN(r, 3, 2, 5, 4)
	xs := x.Shape()
	p := PoolParams{Kernel: [2]int{2, 2}, Stride: [2]int{1, 2}, Padding: [2]int{1, 0}}
	out, idx := MaxPool2D(x, p)
	dy := RandN(r, out.Shape()...)
	dev := func(h *Tensor) *Tensor { return toDev(t, h, onDev) }
	dx, dxt, ddy, didx := dev(x), dev(xt), dev(dy), dev(idx)
	dout, _ := NewOn(onDev, out.Shape()...)
	dgrad, _ := NewOn(onDev, xs...)
	maxOf := func(x *Tensor) *Tensor { m, _ := MaxPool2D(x, p); return m }
	indicesOf := func(x *Tensor) *Tensor { _, i := MaxPool2D(x, p); return i }
	const mp, ap, mb, ab = "Pool.MaxPool2D", "Pool.AvgPool2D", "Pool.MaxPool2DBackward", "Pool.AvgPool2DBackward"
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
		call string
	}{
		{"MaxPool2D", func() *Tensor { return maxOf(dx) }, out, mp},
		{"MaxPool2D indices", func() *Tensor { return indicesOf(dx) }, idx, mp},
		{"MaxPool2D(transposed)", func() *Tensor { return maxOf(dxt.Transpose(0, 1)) }, maxOf(xt.Transpose(0, 1)), mp},
		{"MaxPool2DInto", func() *Tensor { o, _ := MaxPool2DInto(dout, nil, dx, p); return o }, out, mp},
		{"MaxPool2DInto(indices only)", func() *Tensor { _, i := MaxPool2DInto(nil, dout, dx, p); return i }, idx, mp},
		{"AvgPool2D", func() *Tensor { return AvgPool2D(dx, p) }, AvgPool2D(x, p), ap},
		{"AvgPool2DInto", func() *Tensor { return AvgPool2DInto(dout, dx, p) }, AvgPool2D(x, p), ap},
		{"MaxPool2DBackward", func() *Tensor { return MaxPool2DBackward(ddy, didx, xs, p) }, MaxPool2DBackward(dy, idx, xs, p), mb},
		{"MaxPool2DBackwardInto", func() *Tensor { return MaxPool2DBackwardInto(dgrad, ddy, didx, p) }, MaxPool2DBackward(dy, idx, xs, p), mb},
		{"AvgPool2DBackward", func() *Tensor { return AvgPool2DBackward(ddy, xs, p) }, AvgPool2DBackward(dy, xs, p), ab},
		{"AvgPool2DBackwardInto", func() *Tensor { return AvgPool2DBackwardInto(dgrad, ddy, p) }, AvgPool2DBackward(dy, xs, p), ab},
	} {
		sameOnDevice(t, k.name, d, k.got, k.want, k.call)
	}
	// Nothing to write: no call.
	before := d.Counts()
	if o, i := MaxPool2DInto(nil, nil, dx, p); o != nil || i != nil || d.Counts().Kernels() != before.Kernels() {
		t.Errorf("MaxPool2DInto(nil, nil, x) = %v, %v after %d family calls", o, i, d.Counts().Kernels()-before.Kernels())
	}
	// An invalid index reaches the family, which reports it.
	panics(t, "tensor: MaxPool2DBackward: index 20 is not an element of an input plane of 20",
		func() { MaxPool2DBackward(ddy, dev(Full(20, out.Shape()...)), xs, p) })

	panics(t, "tensor: MaxPool2DInto: [2 3 6 2] on cpu and [2 3 5 4] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { MaxPool2DInto(New(out.Shape()...), nil, dx, p) })
	panics(t, "tensor: MaxPool2DInto: [2 3 6 2] on device(7) and [2 3 5 4] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { MaxPool2DInto(nil, dout, x, p) })
	panics(t, "tensor: MaxPool2DBackward: [2 3 6 2] on device(7) and [2 3 6 2] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { MaxPool2DBackward(ddy, idx, xs, p) })
	panics(t, "tensor: AvgPool2DBackward: [2 3 5 4] on cpu and [2 3 6 2] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { AvgPool2DBackwardInto(New(xs...), ddy, p) })
	registerBare(t, otherDev)
	ox, oy := toDev(t, x, otherDev), toDev(t, dy, otherDev)
	panics(t, "tensor: AvgPool2DInto: [2 3 6 2] on device(7) and [2 3 5 4] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { AvgPool2DInto(dout, ox, p) })
	for _, k := range []struct {
		name, where string
		f           func()
	}{
		{"MaxPool2D", "[2 3 5 4] on device(8)", func() { MaxPool2D(ox, p) }},
		{"AvgPool2D", "[2 3 5 4] on device(8)", func() { AvgPool2D(ox, p) }},
		{"AvgPool2DBackward", "[2 3 6 2] on device(8)", func() { AvgPool2DBackward(oy, xs, p) }},
	} {
		panics(t, "tensor: "+k.name+": "+k.where+": device(8) has no Pool kernels; copy the operands with To(tensor.CPU)", k.f)
	}
	d.SetFaults(tensortest.Faults{Kernels: errors.New("fake: out of memory")})
	panics(t, "tensor: AvgPool2D: [2 3 5 4] on device(7) (result [2 3 6 2] on device(7)): fake: out of memory",
		func() { AvgPool2D(dx, p) })
}

// normLog is a Norm family that records which tensors of p each backward
// call is given, then runs the stand-in's.
type normLog struct {
	NormKernels
	given []string
}

func (l *normLog) BatchNormBackward(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p BatchNormParams) error {
	l.given = append(l.given, fmt.Sprintf("gamma:%v beta:%v running:%v", p.Gamma != nil, p.Beta != nil, p.RunningMean != nil || p.RunningVar != nil))
	return l.NormKernels.BatchNormBackward(dx, dgamma, dbeta, dy, x, s, p)
}

func (l *normLog) LayerNormBackward(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p LayerNormParams) error {
	l.given = append(l.given, fmt.Sprintf("gamma:%v beta:%v", p.Gamma != nil, p.Beta != nil))
	return l.NormKernels.LayerNormBackward(dx, dgamma, dbeta, dy, x, s, p)
}

// TestNormOnDevice checks that the normalizations with device operands
// (x a transposed view) run on the device's Norm family, with every
// operand there and the backward given only the tensors it reads, and
// give the CPU's results there (statistics and running statistics
// included: the running statistics are updated on the device), in
// training and inference, forward and backward, new results and the Into
// forms; and that host operands beside device ones, a device without the
// family, or an error of its implementation make them panic naming the op
// and the devices.
func TestNormOnDevice(t *testing.T) {
	var fam *normLog
	d := registerWrapped(t, func(b *Backend) {
		fam = &normLog{NormKernels: b.Norm}
		b.Norm = fam
	})
	r := rand.New(rand.NewPCG(29, 30))
	dev := func(h *Tensor) *Tensor { return toDev(t, h, onDev) }
	x, dy := RandN(r, 4, 3, 5), RandN(r, 4, 3, 5)
	gamma, beta, rm, rv := RandN(r, 3), RandN(r, 3), RandN(r, 3), RandU(r, 0.5, 2, 3)
	dX := dev(x.Permute(2, 0, 1).Contiguous()).Permute(1, 2, 0) // a view of [5 4 3]
	dDY, dG, dB := dev(dy), dev(gamma), dev(beta)
	same := func(what string, got, want *Tensor) {
		t.Helper()
		if h := fromDev(t, what, got, onDev); !slices.Equal(h.Data(), want.Data()) || !slices.Equal(got.Shape(), want.Shape()) {
			t.Errorf("%s on the device = %v of shape %v, want %v", what, h, got.Shape(), want)
		}
	}
	call := func(what, name string, f func()) {
		t.Helper()
		before := d.Counts()
		f()
		oneCall(t, what, d, before, name)
	}

	// BatchNorm in training, updating running statistics, then inference.
	hp := BatchNormParams{Gamma: gamma, Beta: beta, RunningMean: rm.Clone(), RunningVar: rv.Clone(), Training: true, Momentum: 0.2}
	dp := BatchNormParams{Gamma: dG, Beta: dB, RunningMean: dev(rm), RunningVar: dev(rv), Training: true, Momentum: 0.2}
	wy, ws := BatchNorm(x, hp)
	var y *Tensor
	var s NormStats
	call("BatchNorm", "Norm.BatchNorm", func() { y, s = BatchNorm(dX, dp) })
	same("BatchNorm", y, wy)
	same("BatchNorm's mean", s.Mean, ws.Mean)
	same("BatchNorm's inverse std", s.InvStd, ws.InvStd)
	same("the running mean", dp.RunningMean, hp.RunningMean)
	same("the running variance", dp.RunningVar, hp.RunningVar)
	wdx, wdg, wdb := BatchNormBackward(dy, x, ws, hp)
	var gx, gg, gb *Tensor
	call("BatchNormBackward", "Norm.BatchNormBackward", func() { gx, gg, gb = BatchNormBackward(dDY, dX, s, dp) })
	same("BatchNormBackward dx", gx, wdx)
	same("BatchNormBackward dgamma", gg, wdg)
	same("BatchNormBackward dbeta", gb, wdb)
	dgInto, _ := NewOn(onDev, 3)
	call("BatchNormBackwardInto", "Norm.BatchNormBackward", func() { BatchNormBackwardInto(gx, dgInto, nil, dDY, dX, s, dp) })
	same("BatchNormBackwardInto dx", gx, wdx)
	same("BatchNormBackwardInto dgamma", dgInto, wdg)
	hp.Training, dp.Training = false, false
	wy, ws = BatchNorm(x, hp)
	yInto, _ := NewOn(onDev, 4, 3, 5)
	sInto := NormStats{Mean: dev(New(3)), InvStd: dev(New(3))}
	call("BatchNormInto", "Norm.BatchNorm", func() { BatchNormInto(yInto, sInto, dX, dp) })
	same("BatchNormInto (inference)", yInto, wy)
	same("BatchNormInto's inverse std (inference)", sInto.InvStd, ws.InvStd)

	// LayerNorm over the last two axes.
	lp := LayerNormParams{Dims: 2, Gamma: RandN(r, 3, 5), Beta: RandN(r, 3, 5)}
	dlp := LayerNormParams{Dims: 2, Gamma: dev(lp.Gamma), Beta: dev(lp.Beta)}
	wy, ws = LayerNorm(x, lp)
	call("LayerNorm", "Norm.LayerNorm", func() { y, s = LayerNorm(dX, dlp) })
	same("LayerNorm", y, wy)
	same("LayerNorm's mean", s.Mean, ws.Mean)
	wdx, wdg, wdb = LayerNormBackward(dy, x, ws, lp)
	call("LayerNormBackward", "Norm.LayerNormBackward", func() { gx, gg, gb = LayerNormBackward(dDY, dX, s, dlp) })
	same("LayerNormBackward dx", gx, wdx)
	same("LayerNormBackward dgamma", gg, wdg)
	same("LayerNormBackward dbeta", gb, wdb)
	call("LayerNormInto", "Norm.LayerNorm", func() { LayerNormInto(yInto, s, dX, dlp) })
	same("LayerNormInto", yInto, wy)
	dbInto, _ := NewOn(onDev, 3, 5)
	call("LayerNormBackwardInto", "Norm.LayerNormBackward", func() { LayerNormBackwardInto(gx, nil, dbInto, dDY, dX, s, dlp) })
	same("LayerNormBackwardInto dx", gx, wdx)
	same("LayerNormBackwardInto dbeta", dbInto, wdb)
	if want := []string{"gamma:true beta:false running:false", "gamma:true beta:false running:false", "gamma:true beta:false", "gamma:true beta:false"}; !slices.Equal(fam.given, want) {
		t.Errorf("the backward calls were given %v, want %v", fam.given, want)
	}

	panics(t, "tensor: BatchNorm: [4 3 5] on device(7) and [3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { BatchNorm(dX, BatchNormParams{Gamma: gamma, Training: true}) })
	panics(t, "tensor: BatchNorm: [4 3 5] on device(7) and [3] on cpu and [3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { BatchNorm(dX, BatchNormParams{RunningMean: rm, RunningVar: rv, Training: true}) })
	panics(t, "tensor: LayerNormBackwardInto: [4 3 5] on device(7) and [4 3 5] on device(7) and [4 3 5] on device(7) and [4] on cpu and [4] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { LayerNormBackwardInto(gx, nil, nil, dDY, dX, ws, LayerNormParams{Dims: 2}) })
	registerBare(t, otherDev)
	ox := toDev(t, x, otherDev)
	panics(t, "tensor: LayerNorm: [4 3 5] on device(8) and [3 5] on device(7) and [3 5] on device(7): operands on device(8) and device(7); copy them to one device with To",
		func() { LayerNorm(ox, dlp) })
	panics(t, "tensor: LayerNorm: [4 3 5] on device(8): device(8) has no Norm kernels; copy the operands with To(tensor.CPU)",
		func() { LayerNorm(ox, LayerNormParams{}) })
	oStats := NormStats{Mean: toDev(t, New(3), otherDev), InvStd: toDev(t, New(3), otherDev)}
	panics(t, "tensor: BatchNormBackward: [4 3 5] on device(8) and [4 3 5] on device(8) and [3] on device(8) and [3] on device(8): device(8) has no Norm kernels; copy the operands with To(tensor.CPU)",
		func() { BatchNormBackward(ox, ox, oStats, BatchNormParams{}) })
	d.SetFaults(tensortest.Faults{Kernels: errors.New("fake: out of memory")})
	panics(t, "tensor: BatchNorm: [4 3 5] on device(7) (result [4 3 5] on device(7)): fake: out of memory",
		func() { BatchNorm(dX, BatchNormParams{Training: true}) })
}

// gradLog is an Elementwise family that records which of x and y each
// UnaryBackward call is given, then runs the stand-in's.
type gradLog struct {
	ElementwiseKernels
	given []string
}

func (l *gradLog) UnaryBackward(op ElemOp, dx, dy, x, y *Tensor, arg [2]float32) error {
	l.given = append(l.given, fmt.Sprintf("x:%v y:%v", x != nil, y != nil))
	return l.ElementwiseKernels.UnaryBackward(op, dx, dy, x, y, arg)
}

// TestUnaryGradOnDevice checks that UnaryGrad and UnaryGradInto with
// device operands run on the device's Elementwise family, given only the
// operand the op reads, and return their result there; and that host
// operands beside device ones, or a device without the family, make them
// panic naming the op and the devices.
func TestUnaryGradOnDevice(t *testing.T) {
	var fam *gradLog
	d := registerWrapped(t, func(b *Backend) {
		fam = &gradLog{ElementwiseKernels: b.Elementwise}
		b.Elementwise = fam
	})
	r := rand.New(rand.NewPCG(65, 66))
	x, dy := RandN(r, 3, 4), RandN(r, 4, 3)
	y := Sigmoid(x)
	dx, ddy, dy0 := toDev(t, x, onDev), toDev(t, dy, onDev), toDev(t, dy, onDev).T()
	dsig := toDev(t, y, onDev)
	dd, _ := NewOn(onDev, 3, 4)
	for _, k := range []struct {
		name  string
		got   func() *Tensor
		want  *Tensor
		given string
	}{
		{"Sigmoid(transposed dy)", func() *Tensor { return UnaryGrad(ElemSigmoid, dy0, nil, dsig, [2]float32{}) }, UnaryGrad(ElemSigmoid, dy.T(), nil, y, [2]float32{}), "x:false y:true"},
		{"GELU(x and y given)", func() *Tensor { return UnaryGrad(ElemGELU, dy0, dx, dsig, [2]float32{}) }, UnaryGrad(ElemGELU, dy.T(), x, nil, [2]float32{}), "x:true y:false"},
		{"ReLU(x and y given: y read)", func() *Tensor { return UnaryGrad(ElemReLU, dy0, dx, dsig, [2]float32{}) }, UnaryGrad(ElemReLU, dy.T(), nil, y, [2]float32{}), "x:false y:true"},
		{"Scale(neither)", func() *Tensor { return UnaryGrad(ElemScale, dy0, nil, nil, [2]float32{3}) }, Scale(dy.T(), 3), "x:false y:false"},
		{"ELUInto(alpha < 0: x read)", func() *Tensor { return UnaryGradInto(dd, ElemELU, dy0, dx, dsig, [2]float32{-1}) }, UnaryGrad(ElemELU, dy.T(), x, nil, [2]float32{-1}), "x:true y:false"},
	} {
		before := d.Counts()
		n := len(fam.given)
		if got := fromDev(t, k.name, k.got(), onDev); !slices.Equal(got.Data(), k.want.Data()) {
			t.Errorf("%s on the device = %v, want %v", k.name, got, k.want)
		}
		oneCall(t, k.name, d, before, "Elementwise.UnaryBackward")
		if len(fam.given) != n+1 || fam.given[n] != k.given {
			t.Errorf("%s: the family was given %v, want %s", k.name, fam.given[n:], k.given)
		}
	}
	panics(t, "tensor: UnaryGrad: [4 3] on device(7) and [4 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { UnaryGrad(ElemTanh, ddy, nil, y.T(), [2]float32{}) })
	panics(t, "tensor: UnaryGradInto: [3 4] on cpu and [3 4] on device(7) and [3 4] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { UnaryGradInto(New(3, 4), ElemSiLU, dy0, dx, nil, [2]float32{}) })
	registerBare(t, otherDev)
	ox := toDev(t, x, otherDev)
	panics(t, "tensor: UnaryGrad: [3 4] on device(7) and [3 4] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { UnaryGrad(ElemSiLU, dy0, ox, nil, [2]float32{}) })
	panics(t, "tensor: UnaryGrad: [3 4] on device(8) and [3 4] on device(8): device(8) has no Elementwise kernels; copy the operands with To(tensor.CPU)",
		func() { UnaryGrad(ElemReLU, ox, ox, nil, [2]float32{}) })
}

// TestSoftmaxBackwardOnDevice checks that SoftmaxBackward and
// LogSoftmaxBackward with device operands run on the device's Reduce
// family and return their result there, and that host operands beside
// device ones, a device without the family, or an error of its
// implementation make them panic naming the op and the devices.
func TestSoftmaxBackwardOnDevice(t *testing.T) {
	d := tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(69, 70))
	x, dy := RandN(r, 2, 3), RandN(r, 3, 2)
	y, ly := Softmax(x, 1), LogSoftmax(x, 0)
	dY, dLY, dDYT := toDev(t, y, onDev), toDev(t, ly, onDev), toDev(t, dy, onDev).T()
	dd, _ := NewOn(onDev, 2, 3)
	for _, k := range []struct {
		name string
		got  func() *Tensor
		want *Tensor
	}{
		{"SoftmaxBackward(transposed dy)", func() *Tensor { return SoftmaxBackward(dY, dDYT, -1) }, SoftmaxBackward(y, dy.T(), 1)},
		{"LogSoftmaxBackward", func() *Tensor { return LogSoftmaxBackward(dLY, dDYT, 0) }, LogSoftmaxBackward(ly, dy.T(), 0)},
		{"SoftmaxBackwardInto", func() *Tensor { return SoftmaxBackwardInto(dd, dY, dDYT, 1) }, SoftmaxBackward(y, dy.T(), 1)},
	} {
		before := d.Counts()
		if got := fromDev(t, k.name, k.got(), onDev); !slices.Equal(got.Data(), k.want.Data()) {
			t.Errorf("%s on the device = %v, want %v", k.name, got, k.want)
		}
		oneCall(t, k.name, d, before, "Reduce.SoftmaxBackward")
	}
	panics(t, "tensor: SoftmaxBackward: [2 3] on device(7) and [2 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { SoftmaxBackward(dY, dy.T(), 1) })
	panics(t, "tensor: LogSoftmaxBackwardInto: [2 3] on cpu and [2 3] on device(7) and [2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { LogSoftmaxBackwardInto(New(2, 3), dLY, dDYT, 1) })
	registerBare(t, otherDev)
	oy := toDev(t, y, otherDev)
	panics(t, "tensor: SoftmaxBackward: [2 3] on device(7) and [2 3] on device(8): operands on device(7) and device(8); copy them to one device with To",
		func() { SoftmaxBackward(dY, oy, 1) })
	panics(t, "tensor: LogSoftmaxBackward: [2 3] on device(8) and [2 3] on device(8): device(8) has no Reduce kernels; copy the operands with To(tensor.CPU)",
		func() { LogSoftmaxBackward(oy, oy, 1) })
	d.SetFaults(tensortest.Faults{Kernels: errors.New("fake: out of memory")})
	panics(t, "tensor: SoftmaxBackward: [2 3] on device(7) and [2 3] on device(7) (result [2 3] on device(7)): fake: out of memory",
		func() { SoftmaxBackward(dY, dDYT, 1) })
}
