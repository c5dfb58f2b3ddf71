// Package crossover measures where an accelerator starts to beat the CPU on
// MatMul and Conv2D, and turns the measurements into the placement
// thresholds package dispatch follows. `go -C bench run ./cmd/calibrate`
// writes them to the thresholds file; `go -C bench run ./cmd/report` plots
// them.
//
// A sweep times each shape on the CPU (tensor.MatMulInto / Conv2DInto, the
// CPU path users get) and, when a dispatch.Accelerator is registered, on
// the device twice: with the operands in host memory (every call copies
// them in and the result back) and with them resident on the device.
// Fit then finds each crossover: the smallest shape from which the device
// is faster at that shape and at every larger one.
package crossover

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/tensor"
)

// Shape is one shape of a sweep.
type Shape struct {
	Op    dispatch.Op
	Dims  []int   // dispatch.WorkOf's convention
	Label string  // for tables: "512" or "8x64x56x56"
	Size  float64 // the x axis of the plots (Sweep.SizeName)
}

// MatMulShapes returns square n×n×n products.
func MatMulShapes(ns ...int) []Shape {
	out := make([]Shape, len(ns))
	for i, n := range ns {
		out[i] = Shape{Op: dispatch.OpMatMul, Dims: []int{n, n, n}, Label: fmt.Sprint(n), Size: float64(n)}
	}
	return out
}

// ConvShape returns the 3×3, padding 1, 64-to-64-channel convolution of a
// ResNet stage on a batch of n hw×hw maps, the sweep's convolution.
func ConvShape(n, hw int) Shape {
	dims := []int{n, 64, hw, hw, 64, 3, 3, 1, 1}
	return Shape{Op: dispatch.OpConv2D, Dims: dims, Label: fmt.Sprintf("%dx64x%dx%d", n, hw, hw),
		Size: dispatch.WorkOf(dispatch.OpConv2D, dims...).FLOPs / 1e9}
}

// DefaultShapes returns the sweep of op: up to n = 1024 and a batch of 8
// 56×56 maps on the CPU alone, up to n = 4096 and a batch of 32 with an
// accelerator (large enough for its crossover on current GPUs).
func DefaultShapes(op dispatch.Op, withDevice bool) []Shape {
	if op == dispatch.OpMatMul {
		ns := []int{32, 64, 96, 128, 192, 256, 384, 512, 768, 1024}
		if withDevice {
			ns = append(ns, 1536, 2048, 3072, 4096)
		}
		return MatMulShapes(ns...)
	}
	s := []Shape{ConvShape(1, 7), ConvShape(1, 14), ConvShape(1, 28), ConvShape(1, 56), ConvShape(2, 56), ConvShape(4, 56), ConvShape(8, 56)}
	if withDevice {
		s = append(s, ConvShape(16, 56), ConvShape(32, 56))
	}
	return s
}

// QuickShapes returns a sweep small enough for tests.
func QuickShapes(op dispatch.Op) []Shape {
	if op == dispatch.OpMatMul {
		return MatMulShapes(16, 32, 64)
	}
	return []Shape{ConvShape(1, 4), ConvShape(1, 8)}
}

// Point is one measured shape. Times are nanoseconds per call; a device
// time is NaN when no device was measured and +Inf when the device could
// not run the shape (Err says why).
type Point struct {
	Shape
	FLOPs, Bytes float64
	CPU          float64
	GPUHost      float64
	GPUDevice    float64
	Err          string
}

// Sweep is the measurements of one operation.
type Sweep struct {
	Op     dispatch.Op
	Device string // the accelerator's name, "" when none was measured
	Points []Point
}

// SizeName says what Shape.Size is for the sweep's op.
func (s *Sweep) SizeName() string {
	if s.Op == dispatch.OpConv2D {
		return "GFLOP per call (3×3 conv, 64→64 channels)"
	}
	return "n (n×n×n product)"
}

// HasDevice reports whether the sweep measured an accelerator.
func (s *Sweep) HasDevice() bool { return s.Device != "" }

// Timer returns the nanoseconds one call of f takes (peers.Measure, with
// the caller's round and count).
type Timer func(f func()) float64

// pinned is the placer installed while one side is timed: OnCPU while the
// CPU is timed, so that tensor's offload device cannot take the work,
// and OnGPU while the device is, so that an Accelerator whose calls go
// through package tensor's offload path reaches the device at every size.
type pinned dispatch.Target

func (p pinned) Place(dispatch.Work) dispatch.Target { return dispatch.Target(p) }
func (p pinned) Describe() string {
	return fmt.Sprintf("crossover: everything on the %v while it is timed", dispatch.Target(p))
}

// Run measures shapes (all of one op, ascending in work) on the CPU and,
// when acc is not nil, on the accelerator with host and with resident
// operands. It writes a line per shape to progress.
func Run(shapes []Shape, acc dispatch.Accelerator, timer Timer, progress io.Writer) Sweep {
	if len(shapes) == 0 {
		panic("crossover: Run: no shapes")
	}
	op := shapes[0].Op
	s := Sweep{Op: op}
	if acc != nil {
		s.Device = acc.Name()
	}
	prev := dispatch.SetPlacer(nil)
	defer dispatch.SetPlacer(prev)
	for _, sh := range shapes {
		if sh.Op != op {
			panic("crossover: Run: shapes of different ops")
		}
		w := dispatch.WorkOf(op, sh.Dims...)
		p := Point{Shape: sh, FLOPs: w.FLOPs, Bytes: w.Bytes, GPUHost: math.NaN(), GPUDevice: math.NaN()}
		dispatch.SetPlacer(pinned(dispatch.OnCPU))
		p.CPU = timeCPU(sh, timer)
		if acc != nil {
			dispatch.SetPlacer(pinned(dispatch.OnGPU))
			var errs []string
			for _, resident := range []bool{false, true} {
				t, err := timeDevice(acc, sh, resident, timer)
				if err != nil {
					errs = append(errs, err.Error())
					t = math.Inf(1)
				}
				if resident {
					p.GPUDevice = t
				} else {
					p.GPUHost = t
				}
			}
			p.Err = strings.Join(errs, "; ")
		}
		s.Points = append(s.Points, p)
		if progress != nil {
			fmt.Fprintf(progress, "  %v %-12s cpu %s  gpu host %s  gpu device %s\n", op, sh.Label,
				FormatMs(p.CPU), FormatMs(p.GPUHost), FormatMs(p.GPUDevice))
		}
	}
	return s
}

// timeCPU times one shape with lanes' tensor functions.
func timeCPU(sh Shape, timer Timer) float64 {
	r := rand.New(rand.NewPCG(uint64(len(sh.Dims)), uint64(sh.Dims[0])))
	d := sh.Dims
	switch sh.Op {
	case dispatch.OpMatMul:
		m, n, k := d[0], d[1], d[2]
		var a, b, dst *tensor.Tensor
		if len(d) == 4 {
			a, b, dst = tensor.RandN(r, d[3], m, k), tensor.RandN(r, d[3], k, n), tensor.New(d[3], m, n)
		} else {
			a, b, dst = tensor.RandN(r, m, k), tensor.RandN(r, k, n), tensor.New(m, n)
		}
		return timer(func() { tensor.MatMulInto(dst, a, b) })
	case dispatch.OpConv2D:
		xs, ws, stride, pad := shape.ConvWork(d)
		x, w := tensor.RandN(r, xs[:]...), tensor.RandN(r, ws[:]...)
		p := tensor.ConvParams{Stride: [2]int{stride, stride}, Padding: [2]int{pad, pad}}
		dst := tensor.Conv2D(x, w, nil, p)
		return timer(func() { tensor.Conv2DInto(dst, x, w, nil, p) })
	}
	panic(fmt.Sprintf("crossover: no CPU timing for %v", sh.Op))
}

// timeDevice times one shape on the accelerator; the first call's error,
// or any later one, fails the shape.
func timeDevice(acc dispatch.Accelerator, sh Shape, resident bool, timer Timer) (ns float64, err error) {
	where := "host"
	if resident {
		where = "device"
	}
	run, release, err := acc.Prepare(sh.Op, resident, sh.Dims...)
	if err != nil {
		return 0, fmt.Errorf("%s operands: %w", where, err)
	}
	defer release()
	if err := run(); err != nil {
		return 0, fmt.Errorf("%s operands: %w", where, err)
	}
	var runErr error
	ns = timer(func() {
		if err := run(); err != nil && runErr == nil {
			runErr = err
		}
	})
	if runErr != nil {
		return 0, fmt.Errorf("%s operands: %w", where, runErr)
	}
	return ns, nil
}

// Crossover is what Fit found for one residency.
type Crossover struct {
	Resident bool
	Found    bool // the device wins from some measured shape on
	// Below and Above index the points around the crossover: the device
	// loses at Below (-1: it won at every shape) and wins from Above on.
	Below, Above int
	// FLOPs is the crossover in FLOP-equivalents (FLOPs minus
	// FLOPsPerByte·Bytes), interpolated between Below and Above; Size the
	// same on the sweep's x axis.
	FLOPs, Size  float64
	FLOPsPerByte float64 // the measured cost of moving a byte, in CPU FLOPs (0 when resident)
	Rule         dispatch.Rule
	Note         string // how it was found, for the table
}

// Fit finds the host-resident and device-resident crossovers of s and the
// rules that keep the CPU up to the crossover plus margin (0.1: the
// device must win by 10% more work than at the measured crossover).
//
// Device-resident inputs move nothing, so their rule has no cost per byte.
// For host-resident inputs the cost of moving a byte is measured: the
// difference of the host and resident device times at the largest shapes,
// per byte, over the CPU's time per FLOP at the largest shape. The rule
// then weighs every shape by FLOPs - FLOPsPerByte·Bytes, so that shapes
// with little work per byte (an outer product) stay on the CPU.
func Fit(s Sweep, margin float64) (host, device Crossover) {
	device = fit(s.Points, true, 0, margin)
	host = fit(s.Points, false, bytesCost(s.Points), margin)
	return host, device
}

// bytesCost returns the CPU FLOPs equivalent to moving one byte to the
// device and back: the median over the larger half of the shapes of
// (host time - resident time) / bytes, divided by the CPU's time per FLOP
// at the largest shape. It is 0 when the times do not allow it.
func bytesCost(ps []Point) float64 {
	if len(ps) == 0 {
		return 0
	}
	var perByte []float64
	for _, p := range ps[len(ps)/2:] {
		if d := p.GPUHost - p.GPUDevice; d > 0 && !math.IsInf(d, 0) && p.Bytes > 0 {
			perByte = append(perByte, d/p.Bytes)
		}
	}
	last := ps[len(ps)-1]
	if len(perByte) == 0 || !(last.CPU > 0) || !(last.FLOPs > 0) {
		return 0
	}
	slices.Sort(perByte)
	return perByte[len(perByte)/2] / (last.CPU / last.FLOPs)
}

func fit(ps []Point, resident bool, beta, margin float64) Crossover {
	c := Crossover{Resident: resident, Below: -1, Above: -1, FLOPsPerByte: beta}
	gpu := func(p Point) float64 {
		if resident {
			return p.GPUDevice
		}
		return p.GPUHost
	}
	if len(ps) == 0 || math.IsNaN(gpu(ps[0])) {
		c.Note = "no accelerator measured"
		return c
	}
	// The first shape from which the device wins at every larger one.
	above := len(ps)
	for i := len(ps) - 1; i >= 0 && gpu(ps[i]) < ps[i].CPU; i-- {
		above = i
	}
	if above == len(ps) {
		c.Note = fmt.Sprintf("the device does not win at the largest shape (%s)", ps[len(ps)-1].Label)
		return c
	}
	c.Found, c.Above, c.Below = true, above, above-1
	eff := func(p Point) float64 { return p.FLOPs - beta*p.Bytes }
	a := ps[above]
	if above == 0 {
		c.FLOPs, c.Size = eff(a), a.Size
		c.Note = fmt.Sprintf("the device wins at every shape measured, from %s; the crossover lies below", a.Label)
	} else {
		b := ps[above-1]
		// Interpolate where log(cpu/gpu) crosses 0.
		rb, ra := math.Log(b.CPU/gpu(b)), math.Log(a.CPU/gpu(a))
		t := 1.0
		if !math.IsInf(rb, 0) && ra > rb {
			t = -rb / (ra - rb)
		}
		c.FLOPs = lerp(eff(b), eff(a), t)
		c.Size = lerp(b.Size, a.Size, t)
		c.Note = fmt.Sprintf("between %s and %s", b.Label, a.Label)
	}
	c.FLOPs = max(c.FLOPs, 0)
	c.Rule = dispatch.Rule{GPU: true, MinFLOPs: (1 + margin) * c.FLOPs, FLOPsPerByte: (1 + margin) * beta}
	return c
}

// lerp interpolates between a and b geometrically when both are positive,
// else linearly.
func lerp(a, b, t float64) float64 {
	if a > 0 && b > 0 {
		return math.Exp(math.Log(a) + t*(math.Log(b)-math.Log(a)))
	}
	return a + t*(b-a)
}

// Thresholds returns the thresholds of the two sweeps' crossovers, with
// cpu and margin recorded; without a device in either sweep, CPU-only
// thresholds.
func Thresholds(matmul, conv Sweep, margin float64, cpu string) dispatch.Thresholds {
	t := dispatch.CPUOnlyThresholds()
	t.CPU, t.Margin = cpu, margin
	for _, o := range []struct {
		s   Sweep
		out *dispatch.OpRules
	}{{matmul, &t.MatMul}, {conv, &t.Conv2D}} {
		if !o.s.HasDevice() {
			continue
		}
		t.Device = o.s.Device
		h, d := Fit(o.s, margin)
		o.out.Host, o.out.Device = h.Rule, d.Rule
	}
	return t
}

// WriteTable writes s as a Markdown table with the crossovers under it.
func WriteTable(w io.Writer, s Sweep, margin float64) {
	fmt.Fprintf(w, "| %v | MFLOP | MB moved | CPU ms | GPU ms, host operands | GPU ms, device operands |\n", s.Op)
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, p := range s.Points {
		fmt.Fprintf(w, "| %s | %.4g | %.3g | %s | %s | %s |\n", p.Label, p.FLOPs/1e6, p.Bytes/1e6,
			FormatMs(p.CPU), mark(p.GPUHost, p.CPU), mark(p.GPUDevice, p.CPU))
	}
	if !s.HasDevice() {
		fmt.Fprintf(w, "\n%v: no accelerator measured: the CPU keeps all the work.\n", s.Op)
		return
	}
	for _, p := range s.Points {
		if p.Err != "" {
			fmt.Fprintf(w, "\n%v %s: the device failed: %s", s.Op, p.Label, p.Err)
		}
	}
	host, dev := Fit(s, margin)
	fmt.Fprintln(w)
	for _, c := range []Crossover{host, dev} {
		where := "host-resident"
		if c.Resident {
			where = "device-resident"
		}
		if !c.Found {
			fmt.Fprintf(w, "\n%v %s: no crossover (%s): rule %v\n", s.Op, where, c.Note, c.Rule)
			continue
		}
		fmt.Fprintf(w, "\n%v %s: crossover %s (≈ %.3g on the x axis, %.3g FLOP-equivalents", s.Op, where, c.Note, c.Size, c.FLOPs)
		if c.FLOPsPerByte > 0 {
			fmt.Fprintf(w, ", a byte moved costs %.3g FLOPs", c.FLOPsPerByte)
		}
		fmt.Fprintf(w, "); rule with a %.0f%% margin: %v\n", margin*100, c.Rule)
	}
}

// mark formats a device time, starred when it beats the CPU's.
func mark(gpu, cpu float64) string {
	s := FormatMs(gpu)
	if gpu < cpu {
		s += " *"
	}
	return s
}

// FormatMs formats nanoseconds as milliseconds; NaN is "—" (not measured)
// and +Inf "failed".
func FormatMs(ns float64) string {
	switch {
	case math.IsNaN(ns):
		return "—"
	case math.IsInf(ns, 1):
		return "failed"
	}
	return fmt.Sprintf("%.4g", ns/1e6)
}
