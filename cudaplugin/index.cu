// index.cu: lookups by index and their adjoints (IndexSelect, Gather,
// IndexAdd, ScatterAdd), Scatter and OneHot, one thread per element of the
// index walk (kernels.h: LanesIndex; Scatter: one per line along the
// axis, walked in order), every operand through its strides; the adds are
// float atomicAdds (repeated indices). An index value that
// names no position is skipped and reported in a device flag
// (common.cuh: reportBad), never used to address memory.

#include "common.cuh"

namespace {

// indexKernel runs mode over the walk of p: element e is position k =
// e / rest.n along the axis and r = e % rest.n over the other
// dimensions; the index value v is read at (r, k) and checked against
// p.n, then gather (0): y[r, k] = x[r, v]; scatter-add (1): y[r, v] +=
// x[r, k]; one-hot (2): y[r, v] = 1.
__global__ void indexKernel(LanesIndex p, int mode, float *y, const float *x, const float *idx, float *err) {
    const long long total = p.rest.n * p.len;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
        const long long k = e / p.rest.n, r = e % p.rest.n;
        const float f = idx[offsetOf(p.rest, p.is, r) + k * p.ia];
        const double v = (double)f;
        const double lo = p.negative ? -(double)p.n : 0.0;
        if (!(v >= lo && v < (double)p.n) || v != floor(v)) {
            reportBad(err, f);
            continue;
        }
        const long long at = (long long)v + (v < 0 ? p.n : 0);
        switch (mode) {
        case 0:
            y[offsetOf(p.rest, p.ys, r) + k * p.ya] = x[offsetOf(p.rest, p.xs, r) + at * p.xa];
            break;
        case 1:
            atomicAdd(y + offsetOf(p.rest, p.ys, r) + at * p.ya, x[offsetOf(p.rest, p.xs, r) + k * p.xa]);
            break;
        default:
            y[offsetOf(p.rest, p.ys, r) + at * p.ya] = 1.0f;
        }
    }
}

// scatterKernel sets y[r, v] = x[r, k] for k = 0 ... len-1 in order, one
// thread per r: the positions naming one target share r, so the later
// k wins, as on the CPU, with no atomics.
__global__ void scatterKernel(LanesIndex p, float *y, const float *x, const float *idx, float *err) {
    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < p.rest.n; r += (long long)gridDim.x * blockDim.x) {
        const float *ir = idx + offsetOf(p.rest, p.is, r);
        const float *xr = x + offsetOf(p.rest, p.xs, r);
        float *yr = y + offsetOf(p.rest, p.ys, r);
        for (long long k = 0; k < p.len; k++) {
            const float f = ir[k * p.ia];
            const double v = (double)f;
            if (!(v >= -(double)p.n && v < (double)p.n) || v != floor(v)) {
                reportBad(err, f);
                continue;
            }
            const long long at = (long long)v + (v < 0 ? p.n : 0);
            yr[at * p.ya] = xr[k * p.xa];
        }
    }
}

} // namespace

extern "C" int lanes_index(void *stream, int mode, const LanesIndex *p, float *y, const float *x, const float *idx, float *err) {
    if (!validShape(&p->rest) || mode < 0 || mode > 3 || p->len < 0) {
        return ERR_INVALID_VALUE;
    }
    const long long n = p->rest.n * p->len;
    if (n <= 0) {
        return 0;
    }
    if (mode == 3) {
        return launch(scatterKernel, gridFor(p->rest.n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *p, y, x, idx, err);
    }
    return launch(indexKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *p, mode, y, x, idx, err);
}
