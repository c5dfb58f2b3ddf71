//go:build cuda || cudaemu

package cudaplugin

import "embed"

// kernelSources are the kernels' sources. They are embedded so that Go's
// build cache, which knows nothing of .cu and .cuh files, builds the
// package again when one changes: with -tags cudaemu, kernels_emulate.cc
// compiles them (without this, an edited kernel ran stale until that file
// changed); with -tags cuda, the package links build/liblanescuda.a anew
// (make cuda rebuilds it first).
//
//go:embed *.cu *.cuh kernels.h emulate/emulate.h
var kernelSources embed.FS
