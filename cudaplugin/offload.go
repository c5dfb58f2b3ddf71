//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
*/
import "C"

import (
	"slices"
	"unsafe"

	"github.com/lanesgo/lanes/tensor"
)

// maxLanes is the number of offloaded ops in flight at once; more wait.
const maxLanes = 4

// lane is a stream for offloaded ops with its pinned staging buffer.
type lane struct {
	stream C.lanes_stream
	host   unsafe.Pointer // cudaHostAlloc'd, elements floats
	elems  int
}

// getLane returns an idle lane, making one while fewer than maxLanes exist.
func (g *GPU) getLane() (*lane, error) {
	select {
	case l := <-g.lanes:
		return l, nil
	default:
	}
	if n := g.nlanes.Add(1); n <= maxLanes {
		l := &lane{}
		if err := check("cudaStreamCreate", C.lanes_stream_create(&l.stream)); err != nil {
			g.nlanes.Add(-1)
			return nil, err
		}
		return l, nil
	}
	g.nlanes.Add(-1)
	return <-g.lanes, nil
}

// staging returns the lane's pinned buffer with at least n elements.
func (l *lane) staging(n int) ([]float32, error) {
	if l.elems < n {
		if l.host != nil {
			if err := check("cudaFreeHost", C.lanes_host_free(l.host)); err != nil {
				return nil, err
			}
			l.host, l.elems = nil, 0
		}
		size := max(n, 1<<16)
		if err := check("cudaHostAlloc", C.lanes_host_alloc(&l.host, C.size_t(4*size))); err != nil {
			return nil, err
		}
		l.elems = size
	}
	return unsafe.Slice((*float32)(l.host), n), nil
}

// align4 rounds n up to a multiple of 4 elements (16 bytes).
func align4(n int) int { return (n + 3) &^ 3 }

// offload runs an op on host tensors: the inputs are copied into the
// lane's pinned buffer, sent with one asynchronous copy, run queues the
// kernels on the lane's stream, the result comes back with one
// asynchronous copy, and the op synchronizes once. Errors leave dst to
// the CPU path.
func (g *GPU) offload(dst *tensor.Tensor, inputs [][]float32, run func(C.lanes_stream, []uintptr, uintptr, scratchFunc) error) error {
	l, err := g.getLane()
	if err != nil {
		return err
	}
	defer func() { g.lanes <- l }()
	offs := make([]int, len(inputs)+1)
	total := 0
	for i, in := range inputs {
		offs[i] = total
		total += align4(len(in))
	}
	inEnd := total
	offs[len(inputs)] = total
	nOut := dst.Len()
	total += nOut
	host, err := l.staging(total)
	if err != nil {
		return err
	}
	for i, in := range inputs {
		copy(host[offs[i]:], in)
	}
	b, err := g.staging.get(4 * max(total, 1))
	if err != nil {
		return err
	}
	defer g.staging.put(b) // after the synchronization below (deferred calls run last in, first out)
	if inEnd > 0 {
		if err := check("cudaMemcpyAsync", C.lanes_h2d(C.uintptr_t(b.ptr), l.host, C.size_t(4*inEnd), l.stream)); err != nil {
			return err
		}
	}
	ptrs := make([]uintptr, len(inputs))
	for i := range inputs {
		ptrs[i] = b.ptr + uintptr(offs[i])*4
	}
	out := b.ptr + uintptr(inEnd)*4
	// Workspace of the op (split-K parts) comes from the staging pool and
	// goes back after the synchronization, as the buffer above.
	var scratchBlocks []block
	defer func() {
		for _, sb := range scratchBlocks {
			g.staging.put(sb)
		}
	}()
	scratch := func(n int) (uintptr, error) {
		sb, err := g.staging.get(4 * max(n, 1))
		if err != nil {
			return 0, err
		}
		scratchBlocks = append(scratchBlocks, sb)
		return sb.ptr, nil
	}
	runErr := run(l.stream, ptrs, out, scratch)
	if runErr == nil && nOut > 0 {
		runErr = check("cudaMemcpyAsync", C.lanes_d2h(unsafe.Add(l.host, 4*inEnd), C.uintptr_t(out), C.size_t(4*nOut), l.stream))
	}
	// Synchronize even after a failed launch: the copies already queued
	// read the staging buffers.
	if err := check("cudaStreamSynchronize", C.lanes_stream_sync(l.stream)); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	res := host[inEnd : inEnd+nOut]
	if dst.IsContiguous() {
		copy(dst.Data(), res)
	} else {
		tensor.CopyInto(dst, tensor.FromSlice(slices.Clone(res), dst.Shape()...))
	}
	return nil
}
