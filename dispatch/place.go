package dispatch

import (
	"fmt"
	"sync/atomic"

	"github.com/lanesgo/lanes/internal/shape"
)

// Op names an operation that may run somewhere other than the CPU.
type Op uint8

const (
	OpMatMul Op = iota + 1 // tensor.MatMul: batched matrix products
	OpConv2D               // tensor.Conv2D: the forward convolution
)

func (o Op) String() string {
	switch o {
	case OpMatMul:
		return "MatMul"
	case OpConv2D:
		return "Conv2D"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Target is where Place sends an operation.
type Target uint8

const (
	OnCPU Target = iota // lanes' own kernels on this process's cores
	OnGPU               // the offload device named with tensor.SetOffload
)

func (t Target) String() string {
	if t == OnGPU {
		return "gpu"
	}
	return "cpu"
}

// Work describes one call of an operation for Place: its floating-point
// operations, the bytes of its operands and result, and whether they
// already live on the accelerator (so no transfer is needed).
type Work struct {
	Op       Op
	FLOPs    float64
	Bytes    float64
	Resident bool
}

// A Placer decides where work runs. It must be cheap, safe for concurrent
// use and must not allocate: it is asked on every MatMul and Conv2D.
type Placer interface {
	Place(w Work) Target
	// Describe says what the placer decides from, for Report.
	Describe() string
}

var placer atomic.Pointer[Placer]

// SetPlacer installs p (nil restores the default: the thresholds in force,
// see ActiveThresholds) and returns the previous one. An accelerator
// plugin has no need to install one: the thresholds are what calibration
// measures for it.
func SetPlacer(p Placer) (prev Placer) {
	var old *Placer
	if p == nil {
		old = placer.Swap(nil)
	} else {
		old = placer.Swap(&p)
	}
	if old == nil {
		return nil
	}
	return *old
}

// Place returns where w should run: the installed Placer's answer or, when
// none is installed, the answer of the thresholds in force (see
// ActiveThresholds: a calibration file, else DefaultThresholds). OnGPU
// only says the work is large enough to be worth an accelerator; tensor
// asks only when an offload device is set. The first call
// reads the thresholds file; later calls are a few loads and compares and
// allocate nothing.
func Place(w Work) Target {
	if p := placer.Load(); p != nil {
		return (*p).Place(w)
	}
	return currentThresholds().t.Place(w)
}

// PlaceOp is Place for one call of op on shape (WorkOf's convention), with
// inputs on the device when resident is set. Like Place it allocates
// nothing.
func PlaceOp(op Op, resident bool, shape ...int) Target {
	w := WorkOf(op, shape...)
	w.Resident = resident
	return Place(w)
}

// WorkOf returns the Work of one call of op, counted as package tensor
// counts it (FLOPs: a multiply-add is 2; Bytes: 4 per element of the
// operands and the result), for these shapes:
//
//	OpMatMul: m, n, k [, batch]   batch products of m×k by k×n
//	OpConv2D: n, c, h, w, cout, kh, kw [, stride [, pad]]   NCHW input,
//	          cout×c×kh×kw weights, the same stride and padding on both axes
//	          (defaults 1 and 0)
//
// It panics on another number of dimensions, a dimension below 1, a
// negative padding or a kernel larger than the padded input.
func WorkOf(op Op, dims ...int) Work {
	for i, d := range dims {
		if d < 1 && !(op == OpConv2D && i == 8 && d == 0) {
			panic(fmt.Sprintf("dispatch: WorkOf(%v): dimension %d is %d", op, i, d))
		}
	}
	switch op {
	case OpMatMul:
		if len(dims) != 3 && len(dims) != 4 {
			break
		}
		m, n, k, batch := float64(dims[0]), float64(dims[1]), float64(dims[2]), 1.0
		if len(dims) == 4 {
			batch = float64(dims[3])
		}
		return Work{Op: op, FLOPs: 2 * batch * m * n * k, Bytes: 4 * batch * (m*k + k*n + m*n)}
	case OpConv2D:
		if len(dims) < 7 || len(dims) > 9 {
			break
		}
		x, wt, stride, pad := shape.ConvWork(dims)
		n, c, h, w, cout, kh, kw := x[0], x[1], x[2], x[3], wt[0], wt[2], wt[3]
		if h+2*pad < kh || w+2*pad < kw {
			panic(fmt.Sprintf("dispatch: WorkOf(%v): kernel %dx%d larger than the padded input %dx%d", op, kh, kw, h+2*pad, w+2*pad))
		}
		oh, ow := (h+2*pad-kh)/stride+1, (w+2*pad-kw)/stride+1
		out := float64(n) * float64(cout) * float64(oh) * float64(ow)
		return Work{Op: op, FLOPs: 2 * out * float64(c*kh*kw),
			Bytes: 4 * (float64(n)*float64(c*h*w) + float64(cout*c*kh*kw) + out)}
	default:
		panic(fmt.Sprintf("dispatch: WorkOf(%v): not an operation with a placement", op))
	}
	panic(fmt.Sprintf("dispatch: WorkOf(%v): %d dimensions (MatMul: m, n, k[, batch]; Conv2D: n, c, h, w, cout, kh, kw[, stride[, pad]])", op, len(dims)))
}

// placementNote is Report's line on placement.
func placementNote() string {
	if p := placer.Load(); p != nil {
		return (*p).Describe()
	}
	return thresholdsNote()
}
