// optim.cu: the optimizer steps as multi-tensor kernels: one launch
// updates every parameter of a table of up to LANES_OPT_TENSORS
// (kernels.h: LanesOptTable, passed by value as the kernel's argument,
// so a step needs no upload and no synchronization); a grid-stride loop
// over the table's elements, each thread finding its tensor by binary
// search over the table's prefix sums. The rules are tensor's (PyTorch's
// SGD, Adam and AdamW with or without AMSGrad, RMSprop, Adagrad, Adamax,
// NAdam and RAdam), in float32, the per-step scalars computed on the host
// (tensor's AdamCorrections, AdagradStepSize, ...).

#include "common.cuh"

namespace {

// coupledDecay returns g + wd·p (L2 weight decay on the gradient), or g
// when there is no decay.
__device__ __forceinline__ float coupledDecay(const LanesOptParams &h, const float *p, float g) {
    return h.weight_decay != 0 ? fmaf(h.weight_decay, *p, g) : g;
}

// adamMoments is the start of the Adam family's updates (Adam, NAdam,
// RAdam), as tensor's: the weight decay (decoupled: p ← p·(1 - lr·wd);
// else g ← g + wd·p) and the moments m ← β₁m + (1-β₁)g,
// v ← β₂v + (1-β₂)g². It returns the gradient the update uses.
__device__ __forceinline__ float adamMoments(const LanesOptParams &h, float *p, float g, float *m, float *v) {
    if (h.weight_decay != 0 && h.decoupled) {
        *p = *p * (1 - h.lr * h.weight_decay);
    } else {
        g = coupledDecay(h, p, g);
    }
    *m = fmaf(1 - h.beta1, g, h.beta1 * *m);
    *v = fmaf(1 - h.beta2, g * g, h.beta2 * *v);
    return g;
}

// scalarsOf sets a, b, c to tensor i's scalars: in a graph they change
// each replay, so they are read from the device (t.scalars, written
// before each launch); else from the table.
__device__ __forceinline__ void scalarsOf(const LanesOptTable &t, int i, float &a, float &b, float &c) {
    if (t.scalars) {
        a = t.scalars[3 * i], b = t.scalars[3 * i + 1], c = t.scalars[3 * i + 2];
    } else {
        a = t.a[i], b = t.b[i], c = t.c[i];
    }
}

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
            g = coupledDecay(h, p, g);
            if (h.momentum != 0) {
                float *b = t.s0[i] + j;
                *b = t.a[i] != 0 ? fmaf(1 - h.dampening, g, h.momentum * *b) : g;
                g = h.nesterov ? fmaf(h.momentum, *b, g) : *b;
            }
            *p = fmaf(-h.lr, g, *p);
            break;
        }
        case LANES_OPT_ADAM: {
            float *m = t.s0[i] + j, *v = t.s1[i] + j;
            g = adamMoments(h, p, g, m, v);
            float vhat = *v;
            if (h.amsgrad) {
                float *vmax = t.s2[i] + j;
                *vmax = maxOf(*vmax, *v);
                vhat = *vmax;
            }
            float a, b, c;
            scalarsOf(t, i, a, b, c);
            const float denom = sqrtf(vhat) * b + h.eps;
            *p = fmaf(-a, *m / denom, *p);
            break;
        }
        case LANES_OPT_ADAGRAD: {
            g = coupledDecay(h, p, g);
            float *sum = t.s0[i] + j;
            *sum = fmaf(g, g, *sum);
            float a, b, c;
            scalarsOf(t, i, a, b, c);
            *p = fmaf(-a, g / (sqrtf(*sum) + h.eps), *p);
            break;
        }
        case LANES_OPT_ADAMAX: {
            g = coupledDecay(h, p, g);
            float *m = t.s0[i] + j, *u = t.s1[i] + j;
            *m = fmaf(1 - h.beta1, g, h.beta1 * *m);
            *u = maxOf(h.beta2 * *u, fabsf(g) + h.eps);
            float a, b, c;
            scalarsOf(t, i, a, b, c);
            *p = fmaf(-a, *m / *u, *p);
            break;
        }
        case LANES_OPT_NADAM: {
            float *m = t.s0[i] + j, *v = t.s1[i] + j;
            g = adamMoments(h, p, g, m, v);
            float a, b, c;
            scalarsOf(t, i, a, b, c);
            const float d = sqrtf(*v) * c + h.eps;
            *p = fmaf(a, g / d, *p);
            *p = fmaf(b, *m / d, *p);
            break;
        }
        case LANES_OPT_RADAM: {
            float *m = t.s0[i] + j, *v = t.s1[i] + j;
            adamMoments(h, p, g, m, v);
            float a, b, c;
            scalarsOf(t, i, a, b, c);
            *p = fmaf(a, b != 0 ? *m / (sqrtf(*v) + h.eps) : *m, *p);
            break;
        }
        default: { // LANES_OPT_RMSPROP
            g = coupledDecay(h, p, g);
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
    if (t->count < 0 || t->count > LANES_OPT_TENSORS || h->kind < LANES_OPT_SGD || h->kind > LANES_OPT_RADAM) {
        return ERR_INVALID_VALUE;
    }
    if (t->count == 0 || t->start[t->count] <= 0) {
        return 0;
    }
    return launch(optimKernel, gridFor(t->start[t->count], ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *t, *h);
}
