// copy.cu: copies of strided views.

#include "common.cuh"

namespace {

__global__ void gatherKernel(float *y, const float *x, LanesGather g) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < g.n; i += (long long)gridDim.x * blockDim.x) {
        long long rest = i, off = 0;
        for (int d = g.dims - 1; d >= 0; d--) {
            long long s = g.shape[d];
            off += (rest % s) * g.strides[d];
            rest /= s;
        }
        y[i] = x[off];
    }
}

} // namespace

extern "C" int lanes_gather(void *stream, float *y, const float *x, const LanesGather *g) {
    if (g->n <= 0) {
        return 0;
    }
    if (g->dims < 1 || g->dims > LANES_GATHER_DIMS) {
        return ERR_INVALID_VALUE;
    }
    return launch(gatherKernel, gridFor(g->n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, y, x, *g);
}
