//go:build openblas

// Package openblas calls OpenBLAS's cblas_dgemm (Debian's libopenblas-dev)
// and a C float64 FMA peak loop, so that the bench module can compare
// simd.Dgemm with OpenBLAS and with the machine's peak in one process. Built
// only with -tags openblas (it needs cgo and the library); the core module
// stays cgo-free.
package openblas

/*
#cgo CFLAGS: -O2 -mavx512f
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
#include <immintrin.h>

// openblas_set_num_threads and the config getters are OpenBLAS extensions
// declared in its cblas.h.

// lanes_fma_peak runs n iterations of 24 independent 8-lane float64 FMAs
// (twice the FMA latency times the two FMA pipes), as simd's fmaPeakF64AVX512.
static void lanes_fma_peak(long n) {
	__m512d a = _mm512_set1_pd(1.0), b = _mm512_set1_pd(1e-9);
	__m512d c0 = _mm512_setzero_pd(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0,
	        c6 = c0, c7 = c0, c8 = c0, c9 = c0, c10 = c0, c11 = c0, c12 = c0, c13 = c0,
	        c14 = c0, c15 = c0, c16 = c0, c17 = c0, c18 = c0, c19 = c0, c20 = c0,
	        c21 = c0, c22 = c0, c23 = c0;
	for (long i = 0; i < n; i++) {
#define F(c) c = _mm512_fmadd_pd(a, b, c)
		F(c0); F(c1); F(c2); F(c3); F(c4); F(c5); F(c6); F(c7); F(c8); F(c9); F(c10); F(c11);
		F(c12); F(c13); F(c14); F(c15); F(c16); F(c17); F(c18); F(c19); F(c20); F(c21); F(c22); F(c23);
#undef F
		// Every chain through the barrier: the 24 chains compute the same
		// values, and a chain left out is common subexpression to the
		// compiler (with only c0..c7 here, the loop did 9 FMAs, not 24,
		// and the "peak" read 224 GFLOP/s on one Zen 5 core, twice
		// simd's BenchmarkFMAPeakF64).
		__asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6), "+v"(c7));
		__asm__ volatile("" : "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11), "+v"(c12), "+v"(c13), "+v"(c14), "+v"(c15));
		__asm__ volatile("" : "+v"(c16), "+v"(c17), "+v"(c18), "+v"(c19), "+v"(c20), "+v"(c21), "+v"(c22), "+v"(c23));
	}
	__m512d s = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(c0, c1), _mm512_add_pd(c2, c3)), _mm512_add_pd(_mm512_add_pd(c4, c5), _mm512_add_pd(c6, c7)));
	s = _mm512_add_pd(s, _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(c8, c9), _mm512_add_pd(c10, c11)), _mm512_add_pd(_mm512_add_pd(c12, c13), _mm512_add_pd(c14, c15))));
	s = _mm512_add_pd(s, _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(c16, c17), _mm512_add_pd(c18, c19)), _mm512_add_pd(_mm512_add_pd(c20, c21), _mm512_add_pd(c22, c23))));
	volatile double sink = _mm512_reduce_add_pd(s);
	(void)sink;
}
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"
)

// Dgemm is cblas_dgemm on row-major operands: C = alpha·op(A)·op(B) + beta·C
// with simd.Dgemm's arguments. The caller checks the sizes (it is a
// benchmark peer, not an API).
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	ta, tb := uint32(C.CblasNoTrans), uint32(C.CblasNoTrans)
	if transA {
		ta = C.CblasTrans
	}
	if transB {
		tb = C.CblasTrans
	}
	C.cblas_dgemm(C.CblasRowMajor, ta, tb, C.blasint(m), C.blasint(n), C.blasint(k),
		C.double(alpha), (*C.double)(unsafe.Pointer(&a[0])), C.blasint(lda),
		(*C.double)(unsafe.Pointer(&b[0])), C.blasint(ldb),
		C.double(beta), (*C.double)(unsafe.Pointer(&c[0])), C.blasint(ldc))
}

// SetThreads sets the number of threads OpenBLAS uses.
func SetThreads(n int) { C.openblas_set_num_threads(C.int(n)) }

// Config is OpenBLAS's build configuration and the kernel family it chose
// for this CPU (OPENBLAS_CORETYPE overrides the choice).
func Config() string {
	return C.GoString(C.openblas_get_config()) + "; core " + C.GoString(C.openblas_get_corename())
}

// FMAPeak runs n iterations of 24 independent 8-lane float64 FMAs
// (AVX-512): 384 flops an iteration.
func FMAPeak(n int) { C.lanes_fma_peak(C.long(n)) }

// PeakFlops is the number of floating-point operations of one FMAPeak
// iteration.
const PeakFlops = 2 * 24 * 8

// PeakGFLOPs runs FMAPeak on th goroutines at once for about d and returns
// their total rate in GFLOP/s. With th above one it counts on the
// goroutines running at once on as many cores: on a loaded machine it reads
// low.
func PeakGFLOPs(th int, d time.Duration) float64 {
	const iters = 1 << 14
	var wg sync.WaitGroup
	t0 := time.Now()
	calls := make([]int, th)
	for g := range th {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(t0) < d {
				FMAPeak(iters)
				calls[g]++
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, c := range calls {
		total += c
	}
	return float64(total) * iters * PeakFlops / time.Since(t0).Seconds() / 1e9
}
