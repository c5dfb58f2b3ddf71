// reduce.cu: reductions: the softmax of rows.

#include "common.cuh"

namespace {

constexpr int SOFTMAX_THREADS = 256;

// blockReduce combines the block's values v with f (max or sum) through
// shared memory; every thread gets the result.
template <class F>
__device__ __forceinline__ float blockReduce(float *s, float v, F f) {
    const int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int h = SOFTMAX_THREADS / 2; h > 0; h /= 2) {
        if (t < h) {
            s[t] = f(s[t], s[t + h]);
        }
        __syncthreads();
    }
    float r = s[0];
    __syncthreads(); // s is reused by the next reduction
    return r;
}

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};

// One block per row: y = exp(x - max) / Σ exp(x - max).
__global__ void __launch_bounds__(SOFTMAX_THREADS) softmaxRowsKernel(float *y, const float *x, int cols) {
    __shared__ float s[SOFTMAX_THREADS];
    const float *xr = x + (long long)blockIdx.x * cols;
    float *yr = y + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < cols; i += SOFTMAX_THREADS) {
        m = fmaxf(m, xr[i]);
    }
    m = blockReduce(s, m, MaxOp{});
    float sum = 0.0f;
    for (int i = threadIdx.x; i < cols; i += SOFTMAX_THREADS) {
        sum += expf(xr[i] - m);
    }
    sum = blockReduce(s, sum, SumOp{});
    const float inv = 1.0f / sum;
    for (int i = threadIdx.x; i < cols; i += SOFTMAX_THREADS) {
        yr[i] = expf(xr[i] - m) * inv;
    }
}

} // namespace

extern "C" int lanes_softmax_rows(void *stream, float *y, const float *x, long long rows, int cols) {
    if (rows <= 0 || cols <= 0) {
        return 0;
    }
    if (rows > 0x7fffffffLL) {
        return ERR_INVALID_VALUE;
    }
    return launch(softmaxRowsKernel, dim3((unsigned)rows), dim3(SOFTMAX_THREADS), stream, y, x, cols);
}
