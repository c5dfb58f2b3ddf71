// copy.cu: copies between strided views (gather, scatter, broadcast).

#include "common.cuh"

namespace {

__global__ void copyKernel(LanesShape shape, float *y, LanesStrides ys, const float *x, LanesStrides xs) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < shape.n; i += (long long)gridDim.x * blockDim.x) {
        y[offsetOf(shape, ys, i)] = x[offsetOf(shape, xs, i)];
    }
}

} // namespace

extern "C" int lanes_copy(void *stream, const LanesShape *shape, float *y, const LanesStrides *ys, const float *x, const LanesStrides *xs) {
    if (shape->n <= 0) {
        return 0;
    }
    if (!validShape(shape)) {
        return ERR_INVALID_VALUE;
    }
    return launch(copyKernel, gridFor(shape->n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *shape, y, *ys, x, *xs);
}
