//go:build cudaemu

// kernels_emulate.cc: every family's kernels compiled for the host
// (LANES_EMULATE: emulate.h runs a launch's blocks on worker threads, its
// threads as fibers) for the emulated device of -tags cudaemu. One line
// per .cu file: a family missing here leaves its lanes_* launcher
// undefined when the package links.
#include "conv.cu"
#include "copy.cu"
#include "elementwise.cu"
#include "gemm.cu"
#include "index.cu"
#include "loss.cu"
#include "norm.cu"
#include "optim.cu"
#include "pooling.cu"
#include "random.cu"
#include "reduce.cu"
#include "sort.cu"
#include "sample.cu"
