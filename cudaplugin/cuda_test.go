//go:build cuda || cudaemu

package cudaplugin

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

var (
	gpuOnce sync.Once
	gpu     *GPU
	gpuErr  error
)

// requireGPU returns device 0, or skips the test saying why there is none.
func requireGPU(t testing.TB) *GPU {
	t.Helper()
	gpuOnce.Do(func() { gpu, gpuErr = Open(0) })
	if gpuErr != nil {
		t.Skipf("no usable CUDA device (%v): device test skipped", gpuErr)
	}
	return gpu
}

func TestErrorConversion(t *testing.T) {
	err := check("cudaMalloc", errMemoryAllocation)
	var e *Error
	if !errors.As(err, &e) || e.Msg != "out of memory" || !isOutOfMemory(err) {
		t.Errorf("check(cudaMalloc, 2) = %v", err)
	}
	if got := err.Error(); got != "cudaplugin: cudaMalloc: out of memory (CUDA error 2)" {
		t.Errorf("Error() = %q", got)
	}
	if err := check("cudaGetDeviceCount", errNoDevice); err == nil || !strings.Contains(err.Error(), "no CUDA-capable device is detected") {
		t.Errorf("check(100) = %v", err)
	}
	if check("x", 0) != nil || disabled.Load() {
		t.Errorf("cudaSuccess is an error, or a non-sticky error disabled the plugin")
	}
}

// TestStickyErrorDisables runs in a child process: a sticky error disables
// the plugin for the process with one log line.
func TestStickyErrorDisables(t *testing.T) {
	if os.Getenv("LANES_CUDA_STICKY_CHILD") == "1" {
		check("lanes_sgemm", errIllegalAddress)
		check("lanes_sgemm", errLaunchFailure)
		if _, err := Open(0); !errors.Is(err, ErrDisabled) {
			t.Fatalf("Open after a sticky error: %v", err)
		}
		if _, err := Enable(); !errors.Is(err, ErrDisabled) {
			t.Fatalf("Enable after a sticky error: %v", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStickyErrorDisables$", "-test.v")
	cmd.Env = append(os.Environ(), "LANES_CUDA_STICKY_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "cudaplugin disabled for this process"); n != 1 {
		t.Errorf("%d log lines about disabling, want 1:\n%s", n, out)
	}
	if !strings.Contains(string(out), "an illegal memory access was encountered") {
		t.Errorf("the log line does not carry cudaGetErrorString:\n%s", out)
	}
}

// inChild reports whether the test runs in the child process that it
// starts otherwise: the same test binary running only t, with env added
// to its environment (LANES_CUDAEMU_DEVICES, LANES_CUDAEMU_MEMORY: the
// emulated runtime reads them once). The parent fails t when the child
// does not pass it.
func inChild(t *testing.T, env ...string) bool {
	t.Helper()
	if os.Getenv("LANES_CUDAPLUGIN_CHILD") == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), "LANES_CUDAPLUGIN_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child with %v: %v\n%s", env, err, out)
	}
	return false
}

// TestUnavailable checks the CPU fallback on a machine without a device
// or driver: Open and Enable fail, nothing is installed, Report says why.
// The emulated device checks it in a child process with no device.
func TestUnavailable(t *testing.T) {
	if emulated && !inChild(t, "LANES_CUDAEMU_DEVICES=0") {
		return
	}
	if n, err := DeviceCount(); err == nil && n > 0 {
		t.Skipf("%d CUDA devices present: the no-device path is not taken", n)
	}
	if _, err := Open(0); err == nil {
		t.Fatalf("Open succeeded without a device")
	}
	g, err := Enable()
	if err == nil || g != nil {
		t.Fatalf("Enable = %v, %v without a device", g, err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	a := tensor.RandN(r, 300, 300)
	if got := tensor.MatMul(a, a); got.Device() != tensor.CPU {
		t.Errorf("MatMul left the CPU")
	}
	if rep := dispatch.Report(); !strings.Contains(rep, "devices:   none (CUDA plugin: cudaplugin: cudaGetDeviceCount: ") {
		t.Errorf("Report does not say why there is no device:\n%s", rep)
	}
	if _, err := tensor.New(3).To(tensor.Device(1)); err == nil {
		t.Errorf("To(device 1) worked without a device")
	}
}

// tolerance: |got - want| ≤ 1e-5 · (|a|·|b| + |want|) elementwise, the
// bound of an FP32 dot product of length ≤ 4096 with some slack.
func checkClose(t *testing.T, what string, got, want, scale *tensor.Tensor) {
	t.Helper()
	if got.Device() != tensor.CPU {
		var err error
		if got, err = got.To(tensor.CPU); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	g, w, s := got.Contiguous().Data(), want.Contiguous().Data(), scale.Contiguous().Data()
	if len(g) != len(w) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(w))
	}
	for i := range g {
		d := math.Abs(float64(g[i]) - float64(w[i]))
		if !(d <= 1e-5*(float64(s[i])+math.Abs(float64(w[i])))+1e-30) {
			t.Fatalf("%s: element %d = %v, want %v (scale %v)", what, i, g[i], w[i], s[i])
		}
	}
}

func TestMatMulDevice(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name string
		a, b *tensor.Tensor
	}{
		{"square", tensor.RandN(r, 257, 255), tensor.RandN(r, 255, 259)},
		{"tiny", tensor.RandN(r, 1, 3), tensor.RandN(r, 3, 1)},
		{"transposed", tensor.RandN(r, 300, 70).T(), tensor.RandN(r, 90, 300).T()},
		{"vector", tensor.RandN(r, 130), tensor.RandN(r, 130, 70)},
		{"batched", tensor.RandN(r, 5, 33, 65), tensor.RandN(r, 5, 65, 17)},
		{"broadcast", tensor.RandN(r, 2, 1, 33, 40), tensor.RandN(r, 3, 40, 9)},
		{"strided", tensor.RandN(r, 64, 80).Slice(1, 0, 80, 2), tensor.RandN(r, 40, 50)},
		{"k4096", tensor.RandN(r, 64, 4096), tensor.RandN(r, 4096, 64)},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := tensor.MatMul(c.a, c.b)
			scale := tensor.MatMul(tensor.Abs(c.a), tensor.Abs(c.b))
			// Offloaded: host operands and result.
			dst := tensor.New(want.Shape()...)
			if err := g.MatMul(dst, c.a, c.b); err != nil {
				t.Fatal(err)
			}
			checkClose(t, "offload", dst, want, scale)
			// Resident: operands and result on the device.
			da, err := c.a.To(g.Device())
			if err != nil {
				t.Fatal(err)
			}
			db, _ := c.b.To(g.Device())
			if c.name == "transposed" { // keep the transposed layout on the device
				at, _ := c.a.T().To(g.Device())
				bt, _ := c.b.T().To(g.Device())
				da, db = at.T(), bt.T()
			}
			dd, err := g.New(want.Shape()...)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.MatMul(dd, da, db); err != nil {
				t.Fatal(err)
			}
			checkClose(t, "resident", dd, want, scale)
			// Mixed: device operands, host result.
			hd := tensor.New(want.Shape()...)
			if err := g.MatMul(hd, da, c.b); err != nil {
				t.Fatal(err)
			}
			checkClose(t, "mixed", hd, want, scale)
		})
	}
}

func TestConv2DDevice(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		x, w []int
		p    tensor.ConvParams
	}{
		{[]int{2, 3, 17, 19}, []int{8, 3, 3, 3}, tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}},
		{[]int{1, 8, 20, 21}, []int{6, 4, 3, 2}, tensor.ConvParams{Stride: [2]int{2, 1}, Dilation: [2]int{2, 1}, Padding: [2]int{0, 1}, Groups: 2}},
		{[]int{4, 64, 14, 14}, []int{130, 64, 1, 1}, tensor.ConvParams{}},
		{[]int{2, 16, 30, 30}, []int{32, 16, 5, 5}, tensor.ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{2, 2}}},
	} {
		x, w, b := tensor.RandN(r, c.x...), tensor.RandN(r, c.w...), tensor.RandN(r, c.w[0])
		want := tensor.Conv2D(x, w, b, c.p)
		q := c.p
		q.ReLU = false
		scale := tensor.Conv2D(tensor.Abs(x), tensor.Abs(w), tensor.Abs(b), q)
		dst := tensor.New(want.Shape()...)
		if err := g.Conv2D(dst, x, w, b, c.p); err != nil {
			t.Fatal(err)
		}
		checkClose(t, "offload", dst, want, scale)
		dx, _ := x.To(g.Device())
		dw, _ := w.To(g.Device())
		db, _ := b.To(g.Device())
		dd, _ := g.New(want.Shape()...)
		if err := g.Conv2D(dd, dx, dw, db, c.p); err != nil {
			t.Fatal(err)
		}
		checkClose(t, "resident", dd, want, scale)
	}
}

func TestSmallOpsDevice(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(9, 10))
	x, y := tensor.RandN(r, 2, 5, 7, 9), tensor.RandN(r, 2, 5, 7, 9)
	bias := tensor.RandN(r, 5)
	dx, _ := x.To(g.Device())
	dy, _ := y.To(g.Device())
	db, _ := bias.To(g.Device())
	out, _ := g.New(x.Shape()...)
	zero := tensor.New(x.Shape()...)

	if err := g.BiasAct(out, dx, db, 1, ReLU); err != nil {
		t.Fatal(err)
	}
	want := tensor.ReLU(tensor.Add(x, bias.Reshape(1, 5, 1, 1)))
	checkClose(t, "BiasAct", out, want, zero)
	if err := g.Add(out, dx, dy); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "Add", out, tensor.Add(x, y), zero)
	if err := g.Mul(out, dx, dy); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "Mul", out, tensor.Mul(x, y), zero)
	if err := g.SoftmaxRows(out, dx); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "SoftmaxRows", out, tensor.Softmax(x, -1), tensor.Softmax(x, -1))

	pp := tensor.PoolParams{Kernel: [2]int{3, 2}, Stride: [2]int{2, 1}, Padding: [2]int{1, 1}}
	wantMax, wantIdx := tensor.MaxPool2D(x, pp)
	pm, _ := g.New(wantMax.Shape()...)
	pi, _ := g.New(wantMax.Shape()...)
	if err := g.MaxPool2D(pm, pi, dx, pp); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "MaxPool2D", pm, wantMax, tensor.New(wantMax.Shape()...))
	checkClose(t, "MaxPool2D indices", pi, wantIdx, tensor.New(wantMax.Shape()...))
	pa, _ := g.New(wantMax.Shape()...)
	if err := g.AvgPool2D(pa, dx, pp); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "AvgPool2D", pa, tensor.AvgPool2D(x, pp), tensor.AvgPool2D(tensor.Abs(x), pp))

	tv, err := g.Contiguous(dx.Permute(0, 2, 3, 1))
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "Contiguous", tv, x.Permute(0, 2, 3, 1), zero)
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestBackendAndPlacer(t *testing.T) {
	g := requireGPU(t)
	tensor.SetOffload(g.Device())
	dispatch.SetPlacer(g)
	defer tensor.SetOffload(tensor.CPU)
	defer dispatch.SetPlacer(nil)
	r := rand.New(rand.NewPCG(11, 12))
	a, b := tensor.RandN(r, 1024, 1024), tensor.RandN(r, 1024, 1024)
	want := tensor.MatMulInto(tensor.New(1024, 1024), a, b) // offloaded when the model says so
	da, _ := a.To(g.Device())
	db, _ := b.To(g.Device())
	dd, _ := g.New(1024, 1024)
	tensor.MatMulInto(dd, da, db) // resident: always the GPU
	checkClose(t, "tensor.MatMulInto on device tensors", dd, want, tensor.MatMul(tensor.Abs(a), tensor.Abs(b)))
	if !strings.Contains(dispatch.Report(), "devices:   CUDA plugin: 0: ") {
		t.Errorf("Report does not list the device:\n%s", dispatch.Report())
	}
}

func TestConcurrentDevice(t *testing.T) {
	g := requireGPU(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 13))
			a, b := tensor.RandN(r, 200, 150), tensor.RandN(r, 150, 120)
			want := tensor.MatMul(a, b)
			for range 10 {
				dst := tensor.New(200, 120)
				if err := g.MatMul(dst, a, b); err != nil {
					t.Error(err)
					return
				}
				da, _ := a.To(g.Device())
				dd := tensor.New(200, 120)
				if err := g.MatMul(dd, da, b); err != nil {
					t.Error(err)
					return
				}
				for j, v := range dst.Data() {
					if math.Abs(float64(v-want.Data()[j])) > 1e-3 || math.Abs(float64(dd.Data()[j]-want.Data()[j])) > 1e-3 {
						t.Errorf("goroutine %d: element %d differs", i, j)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	res, st := g.Stats()
	if res.Reuses == 0 || st.Reuses == 0 {
		t.Errorf("the pools reused nothing: %+v %+v", res, st)
	}
}

// TestTensorFunctionsOnDevice checks package tensor's rules for device
// tensors against the plugin's registered families: MatMul and Conv2D
// with device operands run on the GPU whatever the thresholds say and
// return device tensors; a host operand beside device ones panics naming
// the op and the devices; the convolution gradients of device operands
// return device tensors that agree with the CPU's.
func TestTensorFunctionsOnDevice(t *testing.T) {
	g := requireGPU(t)
	dispatch.SetPlacer(nil) // the built-in thresholds: tiny host work stays on the CPU
	r := rand.New(rand.NewPCG(13, 14))
	a, b := tensor.RandN(r, 7, 5), tensor.RandN(r, 5, 3) // far below any crossover
	da, _ := a.To(g.Device())
	db, _ := b.To(g.Device())
	got := tensor.MatMul(da, db.T().T())
	if got.Device() != g.Device() {
		t.Fatalf("MatMul of device tensors returned a tensor on %v, want %v", got.Device(), g.Device())
	}
	checkClose(t, "tensor.MatMul on device tensors", got, tensor.MatMul(a, b), tensor.MatMul(tensor.Abs(a), tensor.Abs(b)))
	h, err := got.To(tensor.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if d, want := got.Data(), h.Data(); !slices.Equal(d, want) || got.At(6, 2) != want[20] || got.Index(0, 1).Index(0, 0).Item() != want[3] {
		t.Errorf("Data, At or Item of a device tensor differ from its copy: %v, %v", d, want)
	}
	wantPanic := func(what string, f func(), parts ...string) {
		t.Helper()
		msg := tensortest.Panic(f)
		for _, p := range parts {
			if !strings.Contains(msg, p) {
				t.Errorf("%s: panic %q, want one containing %q", what, msg, p)
				return
			}
		}
	}
	wantPanic("MatMul of a device and a host tensor", func() { tensor.MatMul(da, b) },
		"tensor: MatMul: ", "operands on device(1) and cpu")

	x, w, bias := tensor.RandN(r, 2, 3, 9, 9), tensor.RandN(r, 4, 3, 3, 3), tensor.RandN(r, 4)
	p := tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}
	dx, _ := x.To(g.Device())
	dw, _ := w.To(g.Device())
	dbias, _ := bias.To(g.Device())
	y := tensor.Conv2D(dx, dw, dbias, p)
	if y.Device() != g.Device() {
		t.Fatalf("Conv2D of device operands returned a tensor on %v", y.Device())
	}
	q := p
	q.ReLU = false
	checkClose(t, "tensor.Conv2D on device operands", y, tensor.Conv2D(x, w, bias, p), tensor.Conv2D(tensor.Abs(x), tensor.Abs(w), tensor.Abs(bias), q))
	hy, err := y.To(tensor.CPU)
	if err != nil {
		t.Fatal(err)
	}
	gx := tensor.Conv2DBackwardInput(y, dw, x.Shape(), q)
	gw := tensor.Conv2DBackwardWeight(y, dx, w.Shape(), q)
	if gx.Device() != g.Device() || gw.Device() != g.Device() {
		t.Fatalf("the gradients of device operands are on %v and %v, want %v", gx.Device(), gw.Device(), g.Device())
	}
	checkClose(t, "tensor.Conv2DBackwardInput on device operands", gx, tensor.Conv2DBackwardInput(hy, w, x.Shape(), q),
		tensor.Conv2DBackwardInput(tensor.Abs(hy), tensor.Abs(w), x.Shape(), q))
	checkClose(t, "tensor.Conv2DBackwardWeight on device operands", gw, tensor.Conv2DBackwardWeight(hy, x, w.Shape(), q),
		tensor.Conv2DBackwardWeight(tensor.Abs(hy), tensor.Abs(x), w.Shape(), q))
	if e := tensor.Exp(got); e.Device() != g.Device() {
		t.Errorf("Exp of a device tensor returned a tensor on %v", e.Device())
	} else {
		same(t, "Exp of a device tensor", e, tensor.Exp(h), 1e-6)
	}
	checkClose(t, "tensor.Sum of a device tensor", tensor.Sum(got, false, 0), tensor.Sum(h, false, 0), tensor.Sum(tensor.Abs(h), false, 0))
}
