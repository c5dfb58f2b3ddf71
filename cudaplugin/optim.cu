// optim.cu: the optimizer steps as multi-tensor kernels: one launch
// updates every parameter of a table of up to LANES_OPT_TENSORS
// (kernels.h: LanesOptTable, passed by value as the kernel's argument,
// so a step needs no upload and no synchronization); a grid-stride loop
// over the table's elements, each thread finding its tensor by binary
// search over the table's prefix sums. The rules are tensor's (PyTorch's
// SGD, Adam, AdamW and RMSprop), in float32.

#include "common.cuh"

namespace {

__global__ void optimKernel(LanesOptTable t, LanesOptParams h) {
    const long long total = t.start[t.count];
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
        int lo = 0, hi = t.count - 1; // the tensor i with start[i] <= e < start[i+1]
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (t.start[mid] <= e) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        const int i = lo;
        const long long j = e - t.start[i];
        float *p = t.p[i] + j;
        float g = t.g[i][j];
        switch (h.kind) {
        case LANES_OPT_SGD: {
            if (h.weight_decay != 0) {
                g = fmaf(h.weight_decay, *p, g);
            }
            if (h.momentum != 0) {
                float *b = t.s0[i] + j;
                *b = t.a[i] != 0 ? fmaf(1 - h.dampening, g, h.momentum * *b) : g;
                g = h.nesterov ? fmaf(h.momentum, *b, g) : *b;
            }
            *p = fmaf(-h.lr, g, *p);
            break;
        }
        case LANES_OPT_ADAM: {
            if (h.weight_decay != 0 && h.decoupled) {
                *p = *p * (1 - h.lr * h.weight_decay);
            } else if (h.weight_decay != 0) {
                g = fmaf(h.weight_decay, *p, g);
            }
            float *m = t.s0[i] + j, *v = t.s1[i] + j;
            *m = fmaf(1 - h.beta1, g, h.beta1 * *m);
            *v = fmaf(1 - h.beta2, g * g, h.beta2 * *v);
            // In a graph the corrections change each replay: read them
            // from the device (scalars, written before each launch).
            const float a = t.scalars ? t.scalars[2 * i] : t.a[i], b = t.scalars ? t.scalars[2 * i + 1] : t.b[i];
            const float denom = sqrtf(*v) * b + h.eps;
            *p = fmaf(-a, *m / denom, *p);
            break;
        }
        default: { // LANES_OPT_RMSPROP
            if (h.weight_decay != 0) {
                g = fmaf(h.weight_decay, *p, g);
            }
            const float a = h.alpha;
            float *v = t.s0[i] + j;
            *v = fmaf(1 - a, g * g, a * *v);
            float d;
            if (h.centered) {
                float *ga = t.s1[i] + j;
                *ga = fmaf(1 - a, g, a * *ga);
                d = sqrtf(*v - *ga * *ga);
            } else {
                d = sqrtf(*v);
            }
            float u = g / (d + h.eps);
            if (h.momentum > 0) {
                float *b = t.s2[i] + j;
                *b = fmaf(h.momentum, *b, u);
                u = *b;
            }
            *p = fmaf(-h.lr, u, *p);
        }
        }
    }
}

} // namespace

extern "C" int lanes_optim(void *stream, const LanesOptTable *t, const LanesOptParams *h) {
    if (t->count < 0 || t->count > LANES_OPT_TENSORS || h->kind < LANES_OPT_SGD || h->kind > LANES_OPT_RMSPROP) {
        return ERR_INVALID_VALUE;
    }
    if (t->count == 0 || t->start[t->count] <= 0) {
        return 0;
    }
    return launch(optimKernel, gridFor(t->start[t->count], ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *t, *h);
}
