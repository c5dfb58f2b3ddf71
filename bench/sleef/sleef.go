//go:build sleef

// Package sleef calls SLEEF's AVX-512 single-precision functions (the C
// reference for vectorized libm; Debian's libsleef-dev) over whole slices, so
// the comparison measures the functions and not cgo's per-call cost. Built
// only with -tags sleef.
package sleef

/*
#cgo CFLAGS: -O2 -mavx512f
#cgo LDFLAGS: -lsleef
#include <immintrin.h>
#include <sleef.h>

#define LOOP(name, fn) \
static void name(float *dst, const float *x, long n) { \
	long i = 0; \
	for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, fn(_mm512_loadu_ps(x + i))); \
	if (i < n) { \
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1); \
		_mm512_mask_storeu_ps(dst + i, m, fn(_mm512_maskz_loadu_ps(m, x + i))); \
	} \
}
LOOP(lanes_sleef_exp, Sleef_expf16_u10avx512f)
LOOP(lanes_sleef_log, Sleef_logf16_u10avx512f)
LOOP(lanes_sleef_tanh, Sleef_tanhf16_u10avx512f)
LOOP(lanes_sleef_erf, Sleef_erff16_u10avx512f)
*/
import "C"

import "unsafe"

func call(f func(*C.float, *C.float, C.long), dst, x []float32) {
	if len(x) == 0 {
		return
	}
	_ = dst[len(x)-1]
	f((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&x[0])), C.long(len(x)))
}

// Exp sets dst[i] = expf(x[i]) with Sleef_expf16_u10avx512f (1.0 ULP).
func Exp(dst, x []float32) {
	call(func(d, s *C.float, n C.long) { C.lanes_sleef_exp(d, s, n) }, dst, x)
}

// Log sets dst[i] = logf(x[i]) with Sleef_logf16_u10avx512f.
func Log(dst, x []float32) {
	call(func(d, s *C.float, n C.long) { C.lanes_sleef_log(d, s, n) }, dst, x)
}

// Tanh sets dst[i] = tanhf(x[i]) with Sleef_tanhf16_u10avx512f.
func Tanh(dst, x []float32) {
	call(func(d, s *C.float, n C.long) { C.lanes_sleef_tanh(d, s, n) }, dst, x)
}

// Erf sets dst[i] = erff(x[i]) with Sleef_erff16_u10avx512f.
func Erf(dst, x []float32) {
	call(func(d, s *C.float, n C.long) { C.lanes_sleef_erf(d, s, n) }, dst, x)
}
