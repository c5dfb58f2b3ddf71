// index.cu: lookups by index and their adjoints (IndexSelect, Gather,
// IndexAdd, ScatterAdd), Scatter and OneHot, one thread per element of the
// index walk (kernels.h: LanesIndex; Scatter: one per line along the
// axis, walked in order), every operand through its strides; the adds are
// float atomicAdds (repeated indices). An index value that
// names no position is skipped and reported in a device flag
// (common.cuh: reportBad), never used to address memory.

#include "common.cuh"

namespace {

// indexAt checks the index value f against p (an integer in [0, n), or
// [-n, n) when p.negative) and sets at to the position it names
// (negative ones counting from n); a bad value is reported in err.
__device__ bool indexAt(const LanesIndex &p, float f, float *err, long long &at) {
    const double v = (double)f;
    const double lo = p.negative ? -(double)p.n : 0.0;
    if (!(v >= lo && v < (double)p.n) || v != floor(v)) {
        reportBad(err, f);
        return false;
    }
    at = (long long)v + (v < 0 ? p.n : 0);
    return true;
}

// indexKernel runs mode over the walk of p: element e is position k =
// e / rest.n along the axis and r = e % rest.n over the other
// dimensions; the index value v is read at (r, k) and checked against
// p.n, then gather (0): y[r, k] = x[r, v]; scatter-add (1): y[r, v] +=
// x[r, k]; one-hot (2): y[r, v] = 1.
__global__ void indexKernel(LanesIndex p, int mode, float *y, const float *x, const float *idx, float *err) {
    const long long total = p.rest.n * p.len;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
        const long long k = e / p.rest.n, r = e % p.rest.n;
        long long at;
        if (!indexAt(p, idx[offsetOf(p.rest, p.is, r) + k * p.ia], err, at)) {
            continue;
        }
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
            long long at;
            if (indexAt(p, ir[k * p.ia], err, at)) {
                yr[at * p.ya] = xr[k * p.xa];
            }
        }
    }
}

// MaskedSelect's compaction runs over chunks of SELECT_CHUNK elements in
// row-major order: selectCount counts each chunk's nonzero mask elements
// (NaN counts), selectScan turns the counts into each chunk's first
// output position (one thread, in order), selectWrite writes each chunk's
// selected elements from there in order (a scan of the chunk's flags in
// shared memory): deterministic, the CPU's order.
constexpr int SELECT_CHUNK = LANES_SELECT_CHUNK;

__global__ void __launch_bounds__(SELECT_CHUNK) selectCount(LanesShape sh, LanesStrides ms, const float *mask, long long *counts) {
    __shared__ long long s[SELECT_CHUNK];
    const long long chunks = (sh.n + SELECT_CHUNK - 1) / SELECT_CHUNK;
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        const long long i = c * SELECT_CHUNK + threadIdx.x;
        const long long f = i < sh.n && mask[offsetOf(sh, ms, i)] != 0 ? 1 : 0;
        const long long n = blockReduce(s, f, SumOp<long long>{});
        if (threadIdx.x == 0) {
            counts[c] = n;
        }
    }
}

__global__ void selectScan(long long chunks, long long *counts) {
    long long at = 0;
    for (long long c = 0; c < chunks; c++) {
        const long long n = counts[c];
        counts[c] = at;
        at += n;
    }
}

__global__ void __launch_bounds__(SELECT_CHUNK) selectWrite(LanesShape sh, LanesStrides xs, LanesStrides ms, float *y, long long ystride,
                                                           const float *x, const float *mask, const long long *starts) {
    __shared__ int s[SELECT_CHUNK];
    const long long chunks = (sh.n + SELECT_CHUNK - 1) / SELECT_CHUNK;
    const int t = threadIdx.x;
    for (long long c = blockIdx.x; c < chunks; c += gridDim.x) {
        const long long i = c * SELECT_CHUNK + t;
        const int f = i < sh.n && mask[offsetOf(sh, ms, i)] != 0 ? 1 : 0;
        s[t] = f;
        __syncthreads();
        for (int h = 1; h < SELECT_CHUNK; h *= 2) { // inclusive scan
            const int v = t >= h ? s[t - h] : 0;
            __syncthreads();
            s[t] += v;
            __syncthreads();
        }
        if (f) {
            y[(starts[c] + s[t] - 1) * ystride] = x[offsetOf(sh, xs, i)];
        }
        __syncthreads();
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

extern "C" int lanes_masked_select(void *stream, const LanesShape *sh, const LanesStrides *xs, const LanesStrides *ms, float *y,
                                   long long ystride, const float *x, const float *mask, long long *scratch) {
    if (!validShape(sh)) {
        return ERR_INVALID_VALUE;
    }
    if (sh->n <= 0) {
        return 0;
    }
    const long long chunks = (sh->n + SELECT_CHUNK - 1) / SELECT_CHUNK;
    int err = launch(selectCount, gridFor(chunks, 1), dim3(SELECT_CHUNK), stream, *sh, *ms, mask, scratch);
    if (err == 0) {
        err = launch(selectScan, dim3(1), dim3(1), stream, chunks, scratch);
    }
    if (err == 0) {
        err = launch(selectWrite, gridFor(chunks, 1), dim3(SELECT_CHUNK), stream, *sh, *xs, *ms, y, ystride, x, mask,
                     (const long long *)scratch);
    }
    return err;
}
