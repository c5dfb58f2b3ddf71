//go:build cuda && cudaemu

// -tags cuda builds the plugin for an NVIDIA GPU (nvcc's kernels, the CUDA
// runtime), -tags cudaemu for the emulated device (the same kernels and
// Go code on the host): one package cannot be both.
#error "cudaplugin: -tags cuda and -tags cudaemu exclude each other: build with one of them"
