// elementwise.cu: elementwise kernels (grid-stride loops).

#include "common.cuh"

namespace {

__global__ void biasActKernel(float *y, const float *x, const float *bias, long long n, int channels, long long inner, int act) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float v = x[i];
        if (bias) {
            v += bias[(i / inner) % channels];
        }
        if (act == 1) {
            v = relu(v);
        }
        y[i] = v;
    }
}

__global__ void binaryKernel(int op, float *y, const float *a, const float *b, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        y[i] = op == 0 ? a[i] + b[i] : a[i] * b[i];
    }
}

} // namespace

extern "C" int lanes_bias_act(void *stream, float *y, const float *x, const float *bias, long long n, int channels, long long inner, int act) {
    if (n <= 0) {
        return 0;
    }
    return launch(biasActKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, y, x, bias, n, channels, inner, act);
}

extern "C" int lanes_binary(void *stream, int op, float *y, const float *a, const float *b, long long n) {
    if (n <= 0) {
        return 0;
    }
    return launch(binaryKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, op, y, a, b, n);
}
