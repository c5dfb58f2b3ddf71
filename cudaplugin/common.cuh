// common.cuh: what the kernels of every family (gemm.cu, conv.cu,
// elementwise.cu, reduce.cu, pooling.cu, copy.cu) share: the launch of a
// kernel on a stream and the grid of a grid-stride loop. FP32 throughout:
// every product is an fmaf, no TF32 and no fast-math. No cuBLAS, no cuDNN.
//
// Built with LANES_EMULATE, the kernels compile as plain C++ against
// emulate.h, which runs each block's threads as host threads: the test in
// emulate_test.cc checks the kernels' indexing without a GPU.
#ifndef LANES_COMMON_CUH
#define LANES_COMMON_CUH

#include "kernels.h"

#ifdef LANES_EMULATE
#include "emulate.h"
#else
#include <cuda_runtime.h>
#include <math.h>
#endif

namespace {

// launch queues kernel k and returns cudaGetLastError().
template <class... P, class... A>
int launch(void (*k)(P...), dim3 grid, dim3 block, void *stream, A... args) {
#ifdef LANES_EMULATE
    emu::submit(stream, grid, block, [=] { k(args...); });
    return 0;
#else
    k<<<grid, block, 0, (cudaStream_t)stream>>>(args...);
    return (int)cudaGetLastError();
#endif
}

// gridFor is the grid of a grid-stride loop over n elements.
inline dim3 gridFor(long long n, int threads) {
    long long b = (n + threads - 1) / threads;
    if (b > 65535) {
        b = 65535;
    }
    if (b < 1) {
        b = 1;
    }
    return dim3((unsigned)b);
}

// offsetOf returns where element i of shape (row-major) lies in an operand
// of strides st (kernels.h: LanesShape).
__device__ __forceinline__ long long offsetOf(const LanesShape &shape, const LanesStrides &st, long long i) {
    long long off = 0;
    for (int d = shape.dims - 1; d >= 0; d--) {
        const long long n = shape.shape[d];
        off += (i % n) * st.s[d];
        i /= n;
    }
    return off;
}

// relu is max(v, 0) as package tensor's ReLU has it (simd.ReLU): v when
// v > 0, NaN when v is NaN, +0 otherwise.
__device__ __forceinline__ float relu(float v) { return v > 0.0f || v != v ? v : 0.0f; }

// validShape reports whether a launcher may run over shape: dims within
// LANES_MAX_DIMS (0 for a single element).
inline bool validShape(const LanesShape *shape) { return shape->dims >= 0 && shape->dims <= LANES_MAX_DIMS; }

// reportBad records v, an index value that names no element, in err
// (two floats of device memory, zeroed before the launch): the first
// thread to get there sets err[0]'s bits to 1 and err[1] to v; the
// launcher's caller reads them after the kernel.
__device__ __forceinline__ void reportBad(float *err, float v) {
    if (atomicCAS((int *)err, 0, 1) == 0) {
        err[1] = v;
    }
}

// blockReduce combines the block's values v with f through shared memory
// s (blockDim.x entries, a power of 2); every thread gets the result.
template <class T, class F>
__device__ __forceinline__ T blockReduce(T *s, T v, F f) {
    const int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h /= 2) {
        if (t < h) {
            s[t] = f(s[t], s[t + h]);
        }
        __syncthreads();
    }
    T r = s[0];
    __syncthreads(); // s is reused by the next reduction
    return r;
}

// maxOf and minOf propagate NaN, as tensor.Max and Min.
__device__ __forceinline__ float maxOf(float a, float b) { return (b > a || b != b) ? b : a; }
__device__ __forceinline__ float minOf(float a, float b) { return (b < a || b != b) ? b : a; }

struct MaxOp {
    __device__ float operator()(float a, float b) const { return maxOf(a, b); }
};
struct MinOp {
    __device__ float operator()(float a, float b) const { return minOf(a, b); }
};
template <class T>
struct SumOp {
    __device__ T operator()(T a, T b) const { return a + b; }
};

// ROW_THREADS is the most threads of the block that reduces one row (the
// Reduce, Loss and Norm families: one block per row, combined through
// shared memory of ROW_THREADS entries).
constexpr int ROW_THREADS = 256;

// rowThreads is the block size for rows of n elements: a power of 2 from
// 32 (a warp) to ROW_THREADS.
inline int rowThreads(long long n) {
    int t = 32;
    while (t < ROW_THREADS && t < n) {
        t *= 2;
    }
    return t;
}

// validRows reports whether a launcher may run over r's rows.
inline bool validRows(const LanesReduce *r) { return validShape(&r->outer) && validShape(&r->inner); }

// rowMax returns the maximum of x over a row's elements (NaN if any is).
__device__ __forceinline__ float rowMax(float *s, const LanesShape &in, const LanesStrides &st, const float *x) {
    float m = -INFINITY;
    for (long long i = threadIdx.x; i < in.n; i += blockDim.x) {
        m = maxOf(m, x[offsetOf(in, st, i)]);
    }
    return blockReduce(s, m, MaxOp{});
}

// rowMean returns the mean of x over a row's elements, summed in double.
__device__ __forceinline__ double rowMean(double *s, const LanesShape &in, const LanesStrides &st, const float *x) {
    double a = 0;
    for (long long i = threadIdx.x; i < in.n; i += blockDim.x) {
        a += (double)x[offsetOf(in, st, i)];
    }
    return blockReduce(s, a, SumOp<double>{}) / (double)in.n;
}

// rowDeviations returns Σ (x - mean)² over a row's elements about the
// row's mean (rowMean's), in double, by the corrected two-pass algorithm
// (Chan, Golub and LeVeque's: Σd² - (Σd)²/n, d = x - mean), and moves
// mean by Σd/n, the first pass's rounding.
__device__ __forceinline__ double rowDeviations(double *s, const LanesShape &in, const LanesStrides &st, const float *x, double &mean) {
    double d1 = 0, d2 = 0;
    for (long long i = threadIdx.x; i < in.n; i += blockDim.x) {
        const double d = (double)x[offsetOf(in, st, i)] - mean;
        d1 += d;
        d2 += d * d;
    }
    d1 = blockReduce(s, d1, SumOp<double>{});
    d2 = blockReduce(s, d2, SumOp<double>{});
    mean += d1 / (double)in.n;
    return d2 - d1 * d1 / (double)in.n;
}

constexpr int ELEMENTWISE_THREADS = 256;
constexpr int ERR_INVALID_VALUE = 1; // cudaErrorInvalidValue

} // namespace

#endif
