package tensor

import (
	"sync/atomic"

	"github.com/lanesgo/lanes/dispatch"
)

// Backend runs operations on an accelerator; the CUDA plugin registers
// one with SetBackend. tensor checks shapes before calling it, and asks
// dispatch.Place first whether the call should go there at all.
type Backend interface {
	// MatMul sets dst (contiguous unless the backend copes otherwise) to
	// MatMul(a, b). An error leaves the work to the CPU path, which
	// overwrites dst.
	MatMul(dst, a, b *Tensor) error
	// Conv2D sets dst to Conv2D(x, w, bias, p), with MatMul's contract.
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

// placed returns the installed backend when dispatch.Place sends w to
// the accelerator, else nil.
func placed(w dispatch.Work) Backend {
	b := backend.Load()
	if b == nil || dispatch.Place(w) != dispatch.OnGPU {
		return nil
	}
	return *b
}

// onDevice reports whether any of ts lives off the CPU.
func onDevice(ts ...*Tensor) bool {
	for _, t := range ts {
		if t != nil && t.dev != CPU {
			return true
		}
	}
	return false
}
