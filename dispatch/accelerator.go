package dispatch

import "sync/atomic"

// An Accelerator runs single operations on a device for calibration: `go
// -C bench run ./cmd/calibrate` times it against the CPU to find the
// crossovers that Thresholds records. A device plugin (the CUDA plugin,
// under -tags cuda) registers one with SetAccelerator when it finds a
// usable device; without one, calibration writes CPU-only thresholds.
type Accelerator interface {
	// Name names the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 80 GiB)".
	Name() string
	// Prepare readies calls of op on shape (WorkOf's convention) with
	// operands of random values. With resident set the operands and the
	// result live on the device and a call moves nothing; without it they
	// live in host memory and a call copies the operands in and the result
	// back, as an offloaded call on host tensors does. run makes one call
	// and returns when its result is complete (synchronised); release
	// frees what Prepare allocated. An error means the device cannot do
	// this shape; calibration reports it and treats the shape as a CPU win.
	// While calibration times the device it installs a Placer that answers
	// OnGPU, so run may go through package tensor's offload path (MatMulInto
	// on host tensors with the plugin's device as tensor's offload device).
	Prepare(op Op, resident bool, shape ...int) (run func() error, release func(), err error)
}

var accelerator atomic.Pointer[Accelerator]

// SetAccelerator registers a (nil removes it) and returns the previous one.
func SetAccelerator(a Accelerator) (prev Accelerator) {
	var old *Accelerator
	if a == nil {
		old = accelerator.Swap(nil)
	} else {
		old = accelerator.Swap(&a)
	}
	if old == nil {
		return nil
	}
	return *old
}

// RegisteredAccelerator returns the registered Accelerator, or nil.
func RegisteredAccelerator() Accelerator {
	if a := accelerator.Load(); a != nil {
		return *a
	}
	return nil
}
