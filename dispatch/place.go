package dispatch

import (
	"fmt"
	"sync/atomic"
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
	OnGPU               // the accelerator backend registered with package tensor
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

// SetPlacer installs p (nil restores the default, everything on the CPU)
// and returns the previous one. The CUDA plugin installs its own.
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

// Place returns where w should run: the installed Placer's answer, or
// OnCPU when none is installed.
func Place(w Work) Target {
	if p := placer.Load(); p != nil {
		return (*p).Place(w)
	}
	return OnCPU
}

// placementNote is Report's line on placement.
func placementNote() string {
	if p := placer.Load(); p != nil {
		return (*p).Describe()
	}
	return "CPU only (no accelerator placer installed)"
}
