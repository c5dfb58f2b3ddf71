package tensor

import (
	"errors"
	"fmt"
)

// Device memory figures and out of memory (docs/device-backends.md,
// "Memory"). A device's Memory (its DeviceAllocator) may also implement
// MemoryReporter; MemoryStats and ResetPeakMemoryStats reach it through
// the device. An allocation a device cannot satisfy is an
// *OutOfMemoryError: ops panic with it (they have no error return), NewOn
// and To return it, and Catch turns the panic back into an error.

// MemStats is a device's memory, as PyTorch's torch.cuda.memory_stats
// reports it: bytes are those of the device's buffers as its allocator
// hands them out (a pool rounds a request up to its size class).
type MemStats struct {
	// InUse is the bytes of buffers handed out and not given back: live
	// tensors (including those unreachable but not yet collected: device
	// memory goes back when the garbage collector finds a tensor
	// unreachable) and the temporaries of work in progress
	// (torch.cuda.memory_allocated).
	InUse int64
	// Reserved is the bytes the allocator holds from the device: InUse
	// and the freed buffers it keeps for reuse (torch.cuda.memory_reserved).
	// A device without a pool reports InUse.
	Reserved int64
	// PeakInUse and PeakReserved are the highest InUse and Reserved since
	// the device was opened or ResetPeakMemoryStats
	// (torch.cuda.max_memory_allocated, max_memory_reserved).
	PeakInUse, PeakReserved int64
	// Allocs counts the buffers handed out, Frees those given back;
	// DeviceAllocs counts the allocations made from the device itself
	// (cudaMalloc: the pool's misses; Allocs for a device without a
	// pool).
	Allocs, Frees, DeviceAllocs int64
	// Flushes counts the times the allocator gave its cached buffers back
	// to the device (out of memory, Close); OOMs the allocations that
	// failed even so (each an *OutOfMemoryError).
	Flushes, OOMs int64
}

// MemoryReporter is what a device's Memory implements to report its
// figures: MemoryStats and ResetPeakMemoryStats call it for dev.
type MemoryReporter interface {
	MemStats(dev Device) MemStats
	// ResetPeakMemStats sets PeakInUse and PeakReserved to the current
	// InUse and Reserved.
	ResetPeakMemStats(dev Device)
}

// ErrNoMemoryStats is what MemoryStats returns for the CPU (the Go heap:
// see runtime.ReadMemStats) and for a device whose Memory does not
// implement MemoryReporter; errors.Is matches it.
var ErrNoMemoryStats = errors.New("no memory statistics")

// reporter returns dev's MemoryReporter.
func reporter(op string, dev Device) (MemoryReporter, error) {
	if dev == CPU {
		return nil, fmt.Errorf("tensor: %s: %v: %w (the Go heap: runtime.ReadMemStats)", op, dev, ErrNoMemoryStats)
	}
	b := registered(dev)
	if b == nil {
		return nil, fmt.Errorf("tensor: %s: %v is not registered (tensor.RegisterDevice)", op, dev)
	}
	r, ok := b.Memory.(MemoryReporter)
	if !ok {
		return nil, fmt.Errorf("tensor: %s: %v: %w", op, dev, ErrNoMemoryStats)
	}
	return r, nil
}

// MemoryStats returns dev's memory figures. The error is ErrNoMemoryStats
// (wrapped) for the CPU and for a device that keeps none, or names an
// unregistered device.
func MemoryStats(dev Device) (MemStats, error) {
	r, err := reporter("MemoryStats", dev)
	if err != nil {
		return MemStats{}, err
	}
	return r.MemStats(dev), nil
}

// ResetPeakMemoryStats starts dev's high-water marks (PeakInUse,
// PeakReserved) again from the current figures, as
// torch.cuda.reset_peak_memory_stats; the errors are MemoryStats'.
func ResetPeakMemoryStats(dev Device) error {
	r, err := reporter("ResetPeakMemoryStats", dev)
	if err != nil {
		return err
	}
	r.ResetPeakMemStats(dev)
	return nil
}

// OutOfMemoryError is a device allocation that failed for want of memory
// after the device's allocator gave its cached buffers back and tried
// again (torch.cuda.OutOfMemoryError). A device's Memory returns it (Op
// and Where empty); an op that needed the memory panics with it, Op and
// Where filled in; NewOn and To return it. errors.As finds it in the
// errors that wrap it.
type OutOfMemoryError struct {
	// Op is the function that asked, as its panics name it ("tensor:
	// MatMul", "nn: Backward"), Where its operands ("[64 784] on
	// device(1) and ..."), if any.
	Op, Where string
	Device    Device
	// Requested is the bytes asked for; InUse and Reserved the device's
	// figures (MemStats) when the allocation failed.
	Requested, InUse, Reserved int64
	// Err is the device's own error (cudaMalloc's), if any.
	Err error
}

func (e *OutOfMemoryError) Error() string {
	s := ""
	if e.Op != "" {
		s = e.Op + ": "
	}
	if e.Where != "" {
		s += e.Where + ": "
	}
	s += fmt.Sprintf("out of memory on %v: %d bytes asked, %d in use, %d reserved", e.Device, e.Requested, e.InUse, e.Reserved)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *OutOfMemoryError) Unwrap() error { return e.Err }

// AsOutOfMemory returns, when err is (or wraps) an *OutOfMemoryError, a
// copy of it with Op and Where set (where may be ""), and ok true; for
// any other error nil and false. Code that asks a device for memory and
// panics on failure panics with it, so that Catch recovers the panic.
func AsOutOfMemory(err error, op, where string) (*OutOfMemoryError, bool) {
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		return nil, false
	}
	c := *oom
	c.Op, c.Where = op, where
	return &c, true
}

// failure is the panic value of device work that could not run: an
// *OutOfMemoryError naming op and its operands when err is one, else the
// message residentFailure makes.
func failure(op string, dst *Tensor, ts []*Tensor, err error) any {
	if oom, ok := AsOutOfMemory(err, "tensor: "+op, placesOf(withDst(dst, ts))); ok {
		return oom
	}
	return residentFailure(op, dst, ts, err)
}

// Catch runs f and returns the *OutOfMemoryError it panicked with, if
// any, as an error (nil when f returned); any other panic goes on. It is
// try/except torch.cuda.OutOfMemoryError: a training step run under
// Catch reports running out of device memory as an error, after which
// the program may free memory, use smaller batches, or move the model to
// another device (nn.To) and go on. What an op leaves behind when it
// panics is in docs/device-backends.md ("Out of memory"): no optimizer
// step is half done, but a dst an Into form was writing may be.
func Catch(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			oom, ok := p.(*OutOfMemoryError)
			if !ok {
				panic(p)
			}
			err = oom
		}
	}()
	f()
	return nil
}
