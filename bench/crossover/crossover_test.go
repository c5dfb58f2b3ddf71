package crossover

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// model is a machine under a linear cost model, in nanoseconds: the CPU
// does cpuRate FLOPs per ns, the device has a fixed cost per call, moves
// bw bytes per ns between host and device and does gpuRate FLOPs per ns.
type model struct{ cpuRate, overhead, bw, gpuRate float64 }

func (m model) cpu(w dispatch.Work) float64 { return w.FLOPs / m.cpuRate }
func (m model) gpu(w dispatch.Work, resident bool) float64 {
	t := m.overhead + w.FLOPs/m.gpuRate
	if !resident {
		t += w.Bytes / m.bw
	}
	return t
}

// sweep returns the points the model gives for shapes.
func (m model) sweep(shapes []Shape) Sweep {
	s := Sweep{Op: shapes[0].Op, Device: "model"}
	for _, sh := range shapes {
		w := dispatch.WorkOf(sh.Op, sh.Dims...)
		s.Points = append(s.Points, Point{Shape: sh, FLOPs: w.FLOPs, Bytes: w.Bytes,
			CPU: m.cpu(w), GPUHost: m.gpu(w, false), GPUDevice: m.gpu(w, true)})
	}
	return s
}

// A 100 GFLOP/s CPU against a device with 20 µs per call, 10 GB/s each
// way and 10 TFLOP/s.
var gpuModel = model{cpuRate: 100, overhead: 20e3, bw: 10, gpuRate: 10e3}

func TestFitModel(t *testing.T) {
	shapes := MatMulShapes(32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
	s := gpuModel.sweep(shapes)
	const margin = 0.1
	host, dev := Fit(s, margin)
	if !host.Found || !dev.Found {
		t.Fatalf("no crossover: host %+v, device %+v", host, dev)
	}
	// Device operands: F/100 = 20000 + F/10000 at F = 2.02e6 (n ≈ 100).
	fdev := gpuModel.overhead / (1/gpuModel.cpuRate - 1/gpuModel.gpuRate)
	if r := dev.FLOPs / fdev; r < 0.8 || r > 1.25 {
		t.Errorf("device crossover at %.3g FLOPs, the model's is %.3g", dev.FLOPs, fdev)
	}
	if dev.Rule.FLOPsPerByte != 0 || math.Abs(dev.Rule.MinFLOPs-(1+margin)*dev.FLOPs) > 1e-6*dev.FLOPs {
		t.Errorf("device rule %+v from crossover %.3g", dev.Rule, dev.FLOPs)
	}
	// Host operands: a byte costs 0.1 ns to move, 10 FLOPs of this CPU.
	if math.Abs(host.FLOPsPerByte-10) > 1e-9 || math.Abs(host.Rule.FLOPsPerByte-11) > 1e-9 {
		t.Errorf("host cost per byte %v (rule %v), want 10 (11 with the margin)", host.FLOPsPerByte, host.Rule.FLOPsPerByte)
	}
	if host.Size <= dev.Size {
		t.Errorf("host crossover at n ≈ %.0f, not above the device's %.0f", host.Size, dev.Size)
	}
	// The rules against the model on shapes off the sweep, square or not
	// (outer products, skinny products): clear wins go to the device,
	// losses stay on the CPU; near the boundary either is right.
	r := rand.New(rand.NewPCG(1, 2))
	th := Thresholds(s, s, margin, "cpu")
	checked := 0
	for range 5000 {
		dims := []int{logUniform(r, 8192), logUniform(r, 8192), logUniform(r, 8192)}
		for _, resident := range []bool{false, true} {
			w := dispatch.WorkOf(dispatch.OpMatMul, dims...)
			w.Resident = resident
			ratio := gpuModel.gpu(w, resident) / gpuModel.cpu(w)
			got := th.Place(w)
			switch {
			case ratio < 0.7 && got != dispatch.OnGPU:
				t.Errorf("%v resident=%v: the device takes %.2f of the CPU's time, placed on %v", dims, resident, ratio, got)
			case ratio > 1 && got != dispatch.OnCPU:
				t.Errorf("%v resident=%v: the device takes %.2f of the CPU's time, placed on %v", dims, resident, ratio, got)
			default:
				checked++
			}
		}
	}
	if checked < 9000 {
		t.Errorf("only %d decisions checked", checked)
	}
}

func logUniform(r *rand.Rand, hi int) int {
	return int(math.Exp(r.Float64() * math.Log(float64(hi))))
}

func TestFitEdges(t *testing.T) {
	shapes := MatMulShapes(64, 128, 256, 512)
	base := gpuModel.sweep(shapes)
	with := func(f func(i int, p *Point)) Sweep {
		s := base
		s.Points = append([]Point(nil), base.Points...)
		for i := range s.Points {
			f(i, &s.Points[i])
		}
		return s
	}
	// The device never wins.
	h, d := Fit(with(func(_ int, p *Point) { p.GPUHost, p.GPUDevice = 2*p.CPU, 2*p.CPU }), 0.1)
	if h.Found || d.Found || h.Rule.GPU || d.Rule.GPU || !strings.Contains(d.Note, "does not win at the largest shape (512)") {
		t.Errorf("never wins: %+v %+v", h, d)
	}
	// The device wins everywhere: the first point is the crossover.
	_, d = Fit(with(func(_ int, p *Point) { p.GPUDevice = p.CPU / 2 }), 0.1)
	if !d.Found || d.Above != 0 || d.Below != -1 || d.FLOPs != base.Points[0].FLOPs || !strings.Contains(d.Note, "every shape") {
		t.Errorf("wins everywhere: %+v", d)
	}
	// A win in the middle that the largest shape does not confirm.
	_, d = Fit(with(func(i int, p *Point) {
		p.GPUDevice = 2 * p.CPU
		if i == 2 {
			p.GPUDevice = p.CPU / 2
		}
	}), 0.1)
	if d.Found {
		t.Errorf("a win at one middle shape made a crossover: %+v", d)
	}
	// A loss after wins: the crossover is after the last loss.
	_, d = Fit(with(func(i int, p *Point) {
		p.GPUDevice = p.CPU / 2
		if i == 1 {
			p.GPUDevice = 2 * p.CPU
		}
	}), 0)
	if !d.Found || d.Below != 1 || d.Above != 2 || d.Note != "between 128 and 256" {
		t.Errorf("loss after wins: %+v", d)
	}
	// Failed shapes (+Inf) count as losses.
	_, d = Fit(with(func(i int, p *Point) {
		p.GPUDevice = p.CPU / 2
		if i == 2 {
			p.GPUDevice = math.Inf(1)
		}
	}), 0)
	if !d.Found || d.Above != 3 || math.Abs(d.FLOPs/base.Points[3].FLOPs-1) > 1e-12 {
		t.Errorf("a failed shape: %+v", d)
	}
	// No device measured.
	h, d = Fit(with(func(_ int, p *Point) { p.GPUHost, p.GPUDevice = math.NaN(), math.NaN() }), 0.1)
	if h.Found || d.Found || d.Note != "no accelerator measured" {
		t.Errorf("no device: %+v %+v", h, d)
	}
}

func TestThresholdsWithoutDevice(t *testing.T) {
	s := Sweep{Op: dispatch.OpMatMul, Points: []Point{{FLOPs: 1, CPU: 1, GPUHost: math.NaN(), GPUDevice: math.NaN()}}}
	got := Thresholds(s, s, 0.1, "test cpu")
	want := dispatch.CPUOnlyThresholds()
	want.CPU, want.Margin = "test cpu", 0.1
	if got != want {
		t.Errorf("Thresholds without a device = %+v, want %+v", got, want)
	}
}

// fakeAccelerator counts calls; Prepare fails for shapes whose first
// dimension is failDim.
type fakeAccelerator struct {
	failDim int
	calls   map[bool]int
}

func (a *fakeAccelerator) Name() string { return "fake" }
func (a *fakeAccelerator) Prepare(op dispatch.Op, resident bool, dims ...int) (func() error, func(), error) {
	if dims[0] == a.failDim {
		return nil, nil, errors.New("out of memory")
	}
	return func() error {
		a.calls[resident]++
		if dispatch.Place(dispatch.Work{Op: op, FLOPs: 1}) != dispatch.OnGPU {
			return errors.New("the device was timed with a placer that keeps work on the CPU")
		}
		return nil
	}, func() {}, nil
}

func TestRun(t *testing.T) {
	acc := &fakeAccelerator{failDim: 64, calls: map[bool]int{}}
	// A timer that runs f twice and reports a time that grows with the
	// calls made so far, so the points differ.
	n := 0.0
	timer := func(f func()) float64 { f(); f(); n++; return n * 1000 }
	var progress strings.Builder
	s := Run(QuickShapes(dispatch.OpMatMul), acc, timer, &progress)
	if s.Device != "fake" || len(s.Points) != 3 || acc.calls[true] == 0 || acc.calls[false] == 0 {
		t.Fatalf("Run = %+v, calls %v", s, acc.calls)
	}
	for _, p := range s.Points[:2] {
		if !(p.CPU > 0) || !(p.GPUHost > 0) || math.IsInf(p.GPUHost, 0) || !(p.GPUDevice > 0) || p.Err != "" {
			t.Errorf("point %s: %+v", p.Label, p)
		}
	}
	if last := s.Points[2]; !math.IsInf(last.GPUHost, 1) || !math.IsInf(last.GPUDevice, 1) ||
		last.Err != "host operands: out of memory; device operands: out of memory" {
		t.Errorf("failing shape: %+v", last)
	}
	if strings.Count(progress.String(), "\n") != 3 || !strings.Contains(progress.String(), "failed") {
		t.Errorf("progress:\n%s", progress.String())
	}
	if r := dispatch.Report(); strings.Contains(r, "while it is timed") {
		t.Errorf("Run left its placer installed:\n%s", r)
	}
	var table strings.Builder
	WriteTable(&table, s, 0.1)
	for _, want := range []string{"| MatMul | MFLOP |", "| 64 |", "failed", "the device failed: host operands: out of memory"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// Without a device: CPU times only.
	s = Run(QuickShapes(dispatch.OpConv2D), nil, timer, nil)
	if s.HasDevice() || !math.IsNaN(s.Points[0].GPUHost) {
		t.Errorf("without a device: %+v", s)
	}
	table.Reset()
	WriteTable(&table, s, 0.1)
	if !strings.Contains(table.String(), "no accelerator measured") || !strings.Contains(table.String(), "| — | — |") {
		t.Errorf("table without a device:\n%s", table.String())
	}
}
