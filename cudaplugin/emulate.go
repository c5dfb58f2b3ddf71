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
