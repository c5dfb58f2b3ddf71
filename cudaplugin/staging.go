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

// Asynchronous uploads (tensor.AsyncUploader): a staging buffer is pinned
// host memory (cudaHostAlloc) with two events. Upload records "before" on
// the device stream, makes the GPU's copy stream wait for it (the copy
// may overwrite what the work queued so far reads), queues the copy on
// the copy stream and records "done" there; Pending.Use makes the device
// stream wait for "done" (cudaStreamWaitEvent: no host synchronization),
// Pending.Wait synchronizes with it. The copy stream is one per GPU,
// made at the first staging buffer and destroyed by Close.

// copyStream returns the GPU's copy stream, making it at the first call
// (entered).
func (g *GPU) copyStream() (C.lanes_stream, error) {
	g.copyMu.Lock()
	defer g.copyMu.Unlock()
	if g.copy == nil {
		if err := check("cudaStreamCreate", C.lanes_copy_stream_create(&g.copy)); err != nil {
			g.copy = nil
			return nil, err
		}
	}
	return g.copy, nil
}

// NewStaging implements tensor.AsyncUploader: n elements of pinned host
// memory, freed by Release or, if the Staging is dropped, when it is
// collected.
func (m *deviceMemory) NewStaging(n int) (tensor.Staging, error) {
	g := m.g
	if n < 0 {
		panic(fmt.Sprintf("cudaplugin: NewStaging: %d elements", n))
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	if _, err := g.copyStream(); err != nil {
		return nil, err
	}
	r := &stagingRes{g: g}
	if err := check("cudaHostAlloc", C.lanes_host_alloc(&r.host, C.size_t(4*max(n, 1)))); err != nil {
		return nil, err
	}
	if err := check("cudaEventCreate", C.lanes_event_create(&r.before)); err != nil {
		r.free()
		return nil, err
	}
	if err := check("cudaEventCreate", C.lanes_event_create(&r.done)); err != nil {
		r.free()
		return nil, err
	}
	s := &staging{g: g, res: r, buf: unsafe.Slice((*float32)(r.host), n)}
	s.cleanup = runtime.AddCleanup(s, func(r *stagingRes) { r.release() }, r)
	return s, nil
}

// stagingRes is what a staging buffer holds of the CUDA runtime.
type stagingRes struct {
	g            *GPU
	host         unsafe.Pointer
	before, done C.lanes_event
	freed        atomic.Bool
}

// release frees r once, after its last copy, on its device.
func (r *stagingRes) release() {
	if r.freed.Load() {
		return
	}
	r.g.bound(r.free)
}

// free waits for the last copy and frees what r holds (entered).
func (r *stagingRes) free() {
	if r.freed.Swap(true) {
		return
	}
	if r.done != nil {
		check("cudaEventSynchronize", C.lanes_event_sync(r.done))
		check("cudaEventDestroy", C.lanes_event_destroy(r.done))
	}
	if r.before != nil {
		check("cudaEventDestroy", C.lanes_event_destroy(r.before))
	}
	if r.host != nil {
		check("cudaFreeHost", C.lanes_host_free(r.host))
	}
}

// staging is the GPU's tensor.Staging.
type staging struct {
	g       *GPU
	res     *stagingRes
	buf     []float32 // over res.host
	cleanup runtime.Cleanup
}

func (s *staging) Host() []float32 { return s.buf }

// Upload implements tensor.Staging: the copy of s.buf[:n] into dst's
// elements off... on the copy stream, after the device stream's work so
// far.
func (s *staging) Upload(dst tensor.DeviceMemory, off, n int) (tensor.Pending, error) {
	if s.buf == nil {
		panic("cudaplugin: Staging.Upload: staging buffer released")
	}
	m, ok := dst.(*deviceMemory)
	if !ok || m.g != s.g {
		return nil, fmt.Errorf("cudaplugin: Staging.Upload: memory of %v, the staging buffer's device is %v", dst.Device(), s.g.dev)
	}
	if n < 0 || n > len(s.buf) {
		panic(fmt.Sprintf("cudaplugin: Staging.Upload: %d elements from a staging buffer of %d", n, len(s.buf)))
	}
	m.bounds("Staging.Upload", off, n)
	g := s.g
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	cs, err := g.copyStream()
	if err != nil {
		return nil, err
	}
	r := s.res
	if err := check("cudaEventRecord", C.lanes_event_record(r.before, g.stream)); err != nil {
		return nil, err
	}
	if err := check("cudaStreamWaitEvent", C.lanes_stream_wait_event(cs, r.before)); err != nil {
		return nil, err
	}
	if n > 0 {
		if err := check("cudaMemcpyAsync", C.lanes_h2d(C.uintptr_t(m.ptr(off)), r.host, C.size_t(4*n), cs)); err != nil {
			return nil, err
		}
	}
	if err := check("cudaEventRecord", C.lanes_event_record(r.done, cs)); err != nil {
		return nil, err
	}
	return pending{s}, nil
}

// Release implements tensor.Staging.
func (s *staging) Release() {
	if s.buf == nil && s.res.freed.Load() {
		return
	}
	s.cleanup.Stop()
	s.buf = nil
	s.res.release()
}

// pending is the GPU's tensor.Pending: the staging buffer's last upload.
type pending struct{ s *staging }

// Use makes the device stream wait for the copy.
func (p pending) Use() error {
	g := p.s.g
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("cudaStreamWaitEvent", C.lanes_stream_wait_event(g.stream, p.s.res.done))
}

// Wait waits for the copy on the host.
func (p pending) Wait() error {
	g := p.s.g
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("cudaEventSynchronize", C.lanes_event_sync(p.s.res.done))
}
