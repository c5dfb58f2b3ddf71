//go:build cudaemu

package cudaplugin

// The build with -tags cudaemu: the emulated device. The kernels (every
// family's .cu file, through kernels_emulate.cc) are compiled for the host
// by the C++ compiler, their launches run by emulate/emulate.h on worker
// threads; runtime_emulate.cc answers runtime.h's calls with host memory
// the plugin owns (never Go memory). Everything else, the Go code of
// every family, the pools, the staging and the placement, is the same as
// with -tags cuda. No CUDA toolkit and no GPU are needed: `go test -tags
// cudaemu ./...` runs the device paths anywhere with g++.

/*
#cgo CXXFLAGS: -std=c++20 -O2 -DLANES_EMULATE -I${SRCDIR}/emulate
#cgo LDFLAGS: -lstdc++ -lpthread -lm
#include "runtime.h"

int lanes_emulate_live(long long *bytes, int *buffers, int *streams, int *pinned);
int lanes_emulate_counts(long long *launches, long long *memsets, long long *copies, long long *syncs, long long *graphs);
*/
import "C"

// emulated reports whether the device is the emulated one (-tags cudaemu).
const emulated = true

// emulatorLive returns what the emulated runtime holds now: device
// memory (bytes, buffers), streams and pinned host buffers.
func emulatorLive() (bytes int64, buffers, streams, pinned int) {
	var b C.longlong
	var nb, ns, np C.int
	C.lanes_emulate_live(&b, &nb, &ns, &np)
	return int64(b), int(nb), int(ns), int(np)
}

// EmulatorCounts is the work the host issued to the emulated runtime
// since the process started: kernel launches, memsets, copies (either
// way) and stream synchronizations queued by Go code, and graph launches;
// a graph's replayed work is not counted. Only with -tags cudaemu.
type EmulatorCounts struct {
	Launches, Memsets, Copies, Syncs, GraphLaunches int64
}

// EmulatedCounts returns the emulated runtime's counts (-tags cudaemu):
// tests of graph mode (here and in package nn) read them around a step.
func EmulatedCounts() EmulatorCounts {
	var l, m, c, s, g C.longlong
	C.lanes_emulate_counts(&l, &m, &c, &s, &g)
	return EmulatorCounts{int64(l), int64(m), int64(c), int64(s), int64(g)}
}
