//go:build cuda

package cudaplugin

// The build with -tags cuda: the kernels are nvcc's (make cuda builds
// build/liblanescuda.a) and runtime.c calls the static CUDA runtime.

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L${SRCDIR}/build -llanescuda -L/usr/local/cuda/lib64 -lcudart_static -lstdc++ -ldl -lpthread -lrt -lm
*/
import "C"

// emulated reports whether the device is the emulated one (-tags cudaemu).
const emulated = false
