//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/lanesgo/lanes/tensor"
)

// cudaMemory is the pools' allocator: cudaMalloc and cudaFree (called
// from entered methods, on the right device).
type cudaMemory struct{}

func (cudaMemory) alloc(n int) (uintptr, error) {
	var p C.uintptr_t
	if err := check("cudaMalloc", C.lanes_malloc(&p, C.size_t(n))); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

func (cudaMemory) free(p uintptr) error { return check("cudaFree", C.lanes_free(C.uintptr_t(p))) }

// deviceMemory is a pooled device buffer holding n elements: the storage
// of device tensors and the temporaries of operations.
type deviceMemory struct {
	g        *GPU
	p        *pool // where b came from and goes back: the resident pool, or a graph's
	b        block
	n        int
	released atomic.Bool
}

func (m *deviceMemory) Device() tensor.Device { return m.g.dev }
func (m *deviceMemory) Len() int              { return m.n }
func (m *deviceMemory) ptr(off int) uintptr   { return m.b.ptr + uintptr(off)*4 }

func (m *deviceMemory) bounds(op string, off, n int) {
	if off < 0 || n < 0 || off+n > m.n {
		panic(fmt.Sprintf("cudaplugin: %s: elements %d..%d of a buffer of %d", op, off, off+n, m.n))
	}
}

// CopyFromHost copies src to the device and waits for the copy (src is Go
// memory, which the CUDA runtime must not read after the call returns).
func (m *deviceMemory) CopyFromHost(off int, src []float32) error {
	m.bounds("CopyFromHost", off, len(src))
	if len(src) == 0 {
		return nil
	}
	if err := m.g.enter(); err != nil {
		return err
	}
	defer m.g.exit()
	return m.g.upload(m.ptr(off), src)
}

// CopyToHost waits for the work queued on the device stream, then copies.
func (m *deviceMemory) CopyToHost(dst []float32, off int) error {
	m.bounds("CopyToHost", off, len(dst))
	if len(dst) == 0 {
		return nil
	}
	if err := m.g.enter(); err != nil {
		return err
	}
	defer m.g.exit()
	return m.g.download(dst, m.ptr(off))
}

// Release returns the buffer to the resident pool: work queued on the
// device stream that still reads it runs before any later use, which is
// queued on the same stream. After Close it is freed.
func (m *deviceMemory) Release() {
	if m.released.Swap(true) {
		return
	}
	if m.g.warm.Load() != nil {
		m.g.warmupPut(m.b)
	}
	if !m.g.closed.Load() && m.p.put(m.b) {
		return
	}
	m.g.bound(func() { cudaMemory{}.free(m.b.ptr) })
}

// bound runs f, which frees something of g's outside a call (a
// buffer released after Close, a dropped staging buffer), on a thread
// bound to g's device; not at all when the CUDA runtime is gone, as then
// nothing can be freed.
func (g *GPU) bound(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !disabled.Load() && check("cudaSetDevice", C.lanes_set_device(C.int(g.ordinal))) == nil {
		f()
	}
}

// upload copies src to device address dst on the device stream and waits.
func (g *GPU) upload(dst uintptr, src []float32) error {
	if err := check("cudaMemcpyAsync", C.lanes_h2d(C.uintptr_t(dst), unsafe.Pointer(&src[0]), C.size_t(4*len(src)), g.stream)); err != nil {
		return err
	}
	return check("cudaStreamSynchronize", C.lanes_stream_sync(g.stream))
}

// download copies len(dst) elements from device address src after the
// work queued on the device stream, and waits.
func (g *GPU) download(dst []float32, src uintptr) error {
	if err := check("cudaMemcpyAsync", C.lanes_d2h(unsafe.Pointer(&dst[0]), C.uintptr_t(src), C.size_t(4*len(dst)), g.stream)); err != nil {
		return err
	}
	return check("cudaStreamSynchronize", C.lanes_stream_sync(g.stream))
}

// alloc returns an uninitialized resident buffer of n elements (entered):
// from the resident pool, or during a capture from the graph's (which
// cannot allocate: its buffers are reserved before the capture).
// Out of memory (after the pool's flush and retry) is a
// *tensor.OutOfMemoryError wrapping cudaMalloc's error.
func (g *GPU) alloc(n int) (*deviceMemory, error) {
	bytes := 4 * max(n, 1)
	p := g.resident
	if c := g.capturing.Load(); c != nil {
		p = c.pool
	}
	b, err := p.get(bytes)
	if err != nil {
		if isOutOfMemory(err) {
			s := p.Stats()
			return nil, &tensor.OutOfMemoryError{Device: g.dev, Requested: int64(bytes), InUse: s.InUseBytes,
				Reserved: s.InUseBytes + s.CachedBytes, Err: err}
		}
		return nil, err
	}
	if g.warm.Load() != nil {
		g.warmupGet(b)
	}
	return &deviceMemory{g: g, p: p, b: b, n: n}, nil
}

// MemStats implements tensor.MemoryReporter (tensor.MemoryStats): the
// resident pool's figures, which hold the device tensors and the
// temporaries of device work (the pinned host buffers of offloaded work
// are not device memory; Stats has them).
func (g *GPU) MemStats(tensor.Device) tensor.MemStats {
	if !g.opened() {
		return tensor.MemStats{}
	}
	s := g.resident.Stats()
	g.graphStats(&s) // the graphs' pools: in use and reserved, not in the peaks
	return tensor.MemStats{InUse: s.InUseBytes, Reserved: s.InUseBytes + s.CachedBytes,
		PeakInUse: s.PeakInUseBytes, PeakReserved: s.PeakReservedBytes,
		Allocs: int64(s.Allocs + s.Reuses), Frees: int64(s.Frees), DeviceAllocs: int64(s.Allocs),
		Flushes: int64(s.Flushes), OOMs: int64(s.OOMs)}
}

// ResetPeakMemStats implements tensor.MemoryReporter.
func (g *GPU) ResetPeakMemStats(tensor.Device) {
	if g.opened() {
		g.resident.resetPeak()
	}
}

// Alloc implements tensor.DeviceAllocator: n zero-filled elements.
func (g *GPU) Alloc(dev tensor.Device, n int) (tensor.DeviceMemory, error) {
	if !g.opened() {
		return nil, errNilGPU
	}
	if dev != g.dev {
		return nil, fmt.Errorf("cudaplugin: Alloc: %v is not this GPU (%v)", dev, g.dev)
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	m, err := g.alloc(n)
	if err != nil {
		return nil, err
	}
	if err := check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(m.b.ptr), C.size_t(4*max(n, 1)), g.stream)); err != nil {
		m.Release()
		return nil, err
	}
	return m, nil
}

// New returns a zero-filled tensor of the given shape on the GPU.
func (g *GPU) New(shape ...int) (*tensor.Tensor, error) {
	if !g.opened() {
		return nil, errNilGPU
	}
	return tensor.NewOn(g.dev, shape...)
}
