// Package dispatch selects the instruction-set level that lanes' kernels run at.
//
// At start-up the CPU is inspected once (cpuid on amd64, the auxiliary vector on
// arm64) and the best level it supports becomes the active one:
//
//	AVX512  amd64 with AVX-512 F, BW, DQ and VL (plus AVX2, FMA and BMI2)
//	AVX2    amd64 with AVX2 and FMA
//	NEON    arm64 (Advanced SIMD is part of the base architecture)
//	Generic portable Go, on every machine and under -tags purego
//
// The environment variable LANES_SIMD=generic|avx2|avx512|neon asks for a lower
// level; a request the CPU cannot honour is clamped to the best level it has
// below the request, and Report explains the clamp. SetLevel changes the level at
// run time: the next call of every kernel uses it. The active level is one atomic
// word, so reading it takes no lock and allocates nothing.
package dispatch
