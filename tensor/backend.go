package tensor

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lanesgo/lanes/dispatch"
)

// Backend runs operations on an accelerator; the CUDA plugin registers
// one with SetBackend. tensor checks shapes before calling it, and where
// the call goes follows two rules:
//
//   - Resident work, with an operand (dst included) on a device, always
//     goes to the installed Backend, whatever dispatch.Place says: the CPU
//     cannot read device memory. Its device operands are all on one
//     device; the others, dst included in the Into forms, are on the
//     host. With no Backend installed, or when the Backend returns an
//     error, the tensor function panics naming the op, the shapes, the
//     devices and the error (MatMul and Conv2D have no error return).
//   - Host work, with every operand on the host, goes to the Backend only
//     when one is installed and dispatch.Place says OnGPU; an error then
//     leaves the work to the CPU path, which overwrites dst.
type Backend interface {
	// MatMul sets dst to MatMul(a, b). Any of dst, a and b may be on the
	// backend's device (dst contiguous unless the backend copes
	// otherwise) and the others on the host.
	MatMul(dst, a, b *Tensor) error
	// Conv2D sets dst to Conv2D(x, w, bias, p), with MatMul's contract;
	// bias may be nil.
	Conv2D(dst, x, w, bias *Tensor, p ConvParams) error
}

var backend atomic.Pointer[Backend]

// SetBackend installs b (nil removes it) and returns the previous one.
func SetBackend(b Backend) (prev Backend) {
	var old *Backend
	if b == nil {
		old = backend.Swap(nil)
	} else {
		old = backend.Swap(&b)
	}
	if old == nil {
		return nil
	}
	return *old
}

// errNoBackend is why resident work found nowhere to run.
var errNoBackend = errors.New("no accelerator backend is installed (tensor.SetBackend)")

// placed returns the backend that runs w, or nil for the CPU path (see
// Backend). Resident work goes to the installed backend whatever
// dispatch.Place says, and panics when none is installed; dst and ts (the
// operands) are for the message. Host work goes to the backend when one
// is installed and Place sends it there.
func placed(op string, w dispatch.Work, dst *Tensor, ts ...*Tensor) Backend {
	b := backend.Load()
	if w.Resident {
		if b == nil {
			panic(residentFailure(op, dst, ts, errNoBackend))
		}
		return *b
	}
	if b == nil || dispatch.Place(w) != dispatch.OnGPU {
		return nil
	}
	return *b
}

// ran reports whether the backend did w, given the error its call
// returned: host work that failed goes back to the CPU path, resident work
// that failed panics (the CPU cannot do it).
func ran(op string, w dispatch.Work, err error, dst *Tensor, ts ...*Tensor) bool {
	if err != nil && w.Resident {
		panic(residentFailure(op, dst, ts, err))
	}
	return err == nil
}

// residentFailure is the panic message of resident work that could not
// run: "tensor: MatMul: [2 3] on device(1) and [3 4] on cpu (result [2 4]
// on device(1)): " and the cause.
func residentFailure(op string, dst *Tensor, ts []*Tensor, err error) string {
	res := ""
	if dst != nil {
		res = fmt.Sprintf(" (result %v on %v)", dst.shape, dst.Device())
	}
	return fmt.Sprintf("tensor: %s: %s%s: %v", op, placesOf(ts), res, err)
}

// placesOf describes where the operands ts (nil ones skipped) are:
// "[2 3] on device(1) and [3 4] on cpu".
func placesOf(ts []*Tensor) string { return describe(ts, true) }

// onDevice reports whether any of ts lives off the CPU.
func onDevice(ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.store != nil {
			return true
		}
	}
	return false
}

// deviceOf returns the device of the operands ts that are off the CPU
// (nil ones skipped), or CPU when none is; operands on two different
// devices make op panic.
func deviceOf(op string, ts ...*Tensor) Device {
	dev := CPU
	for _, t := range ts {
		if t == nil || t.store == nil {
			continue
		}
		if dev == CPU {
			dev = t.store.dev
		} else if t.store.dev != dev {
			panic(fmt.Sprintf("tensor: %s: %s: operands on %v and %v; copy them to one device with To", op, placesOf(ts), dev, t.store.dev))
		}
	}
	return dev
}

// result returns the tensor of the given shape that MatMul or Conv2D
// (op) writes for operands ts: on the host for host operands, else on
// their device, which then needs a backend (see Backend); failing to
// allocate it panics.
func result(op string, shape []int, ts ...*Tensor) *Tensor {
	dev := deviceOf(op, ts...)
	if dev == CPU {
		return alloc(op, shape)
	}
	if backend.Load() == nil {
		panic(residentFailure(op, nil, ts, errNoBackend))
	}
	dst, err := NewOn(dev, shape...)
	if err != nil {
		panic(residentFailure(op, nil, ts, fmt.Errorf("allocating the result of shape %v: %w", shape, err)))
	}
	return dst
}
