// pooling.cu: 2-D max and average pooling and their gradients.

#include "common.cuh"

namespace {

// adaptiveLo and adaptiveHi bound window i of out over in (tensor's
// adaptiveWindow).
__device__ __forceinline__ int adaptiveLo(int i, int in, int out) { return (int)((long long)i * in / out); }
__device__ __forceinline__ int adaptiveHi(int i, int in, int out) { return (int)(((long long)(i + 1) * in + out - 1) / out); }

// adaptivePool2d sets output o (plane, i, j) of an adaptive pooling: the
// maximum (kind 0; -Inf > v fails, a NaN replaces, the first maximum
// kept) and its index, or the mean summed in double (kind 1), as the
// CPU's.
__device__ __forceinline__ void adaptivePool2d(int kind, const LanesPool &p, long long o, long long plane, int i, int j, float *y,
                                               float *idx, const float *x) {
    const int r0 = adaptiveLo(i, p.h, p.oh), r1 = adaptiveHi(i, p.h, p.oh);
    const int c0 = adaptiveLo(j, p.w, p.ow), c1 = adaptiveHi(j, p.w, p.ow);
    const float *xp = x + plane * p.h * p.w;
    if (kind == 0) {
        float best = -INFINITY;
        int at = r0 * p.w + c0;
        for (int r = r0; r < r1; r++) {
            for (int c = c0; c < c1; c++) {
                const float v = xp[r * p.w + c];
                if (v > best || v != v) {
                    best = v;
                    at = r * p.w + c;
                }
            }
        }
        y[o] = best;
        if (idx) {
            idx[o] = (float)at;
        }
        return;
    }
    double sum = 0;
    for (int r = r0; r < r1; r++) {
        for (int c = c0; c < c1; c++) {
            sum += (double)xp[r * p.w + c];
        }
    }
    y[o] = (float)(sum / (double)((r1 - r0) * (c1 - c0)));
}

// One thread per output element; windows as tensor's poolGeom.window (or
// adaptiveWindow).
__global__ void pool2dKernel(int kind, LanesPool p, float *y, float *idx, const float *x) {
    const long long total = p.planes * p.oh * p.ow;
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < total; o += (long long)gridDim.x * blockDim.x) {
        long long plane = o / ((long long)p.oh * p.ow);
        int rem = (int)(o % ((long long)p.oh * p.ow));
        int i = rem / p.ow, j = rem % p.ow;
        if (p.adaptive) {
            adaptivePool2d(kind, p, o, plane, i, j, y, idx, x);
            continue;
        }
        int r0 = i * p.sh - p.ph, c0 = j * p.sw - p.pw;
        int r1 = min(r0 + p.kh, p.h + p.ph), c1 = min(c0 + p.kw, p.w + p.pw);
        int size = (r1 - r0) * (c1 - c0);
        r0 = max(r0, 0);
        c0 = max(c0, 0);
        r1 = min(r1, p.h);
        c1 = min(c1, p.w);
        const float *xp = x + plane * p.h * p.w;
        if (kind == 0) {
            float best = xp[r0 * p.w + c0];
            int at = r0 * p.w + c0;
            for (int r = r0; r < r1; r++) {
                for (int c = c0; c < c1; c++) {
                    float v = xp[r * p.w + c];
                    if (v > best || (v != v && best == best)) { // the first maximum; a NaN wins
                        best = v;
                        at = r * p.w + c;
                    }
                }
            }
            y[o] = best;
            if (idx) {
                idx[o] = (float)at;
            }
        } else {
            float sum = 0.0f;
            for (int r = r0; r < r1; r++) {
                for (int c = c0; c < c1; c++) {
                    sum += xp[r * p.w + c];
                }
            }
            if (p.exclude_pad) {
                size = (r1 - r0) * (c1 - c0);
            }
            y[o] = sum / (float)size;
        }
    }
}

// maxPoolBackwardKernel adds each dy element to dx (zeroed) at its index
// in its plane, atomically (windows overlap); an index that is not an
// integer of the plane is skipped and reported in err.
__global__ void maxPoolBackwardKernel(LanesPool p, float *dx, const float *dy, const float *idx, float *err) {
    const long long total = p.planes * p.oh * p.ow, plane = (long long)p.h * p.w;
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < total; o += (long long)gridDim.x * blockDim.x) {
        const float v = idx[o];
        if (!(v >= 0 && v < (float)plane) || v != floorf(v)) {
            reportBad(err, v);
            continue;
        }
        atomicAdd(dx + o / ((long long)p.oh * p.ow) * plane + (long long)v, dy[o]);
    }
}

// avgPoolBackwardKernel sets each dx element to the sum of dy over the
// windows that hold it, each divided by its window's size (as the
// forward's): a gather, one thread per dx element, no atomics. Adaptive
// windows are added in row-major order from 0, as the CPU scatters them,
// so that the sums are the CPU's bit for bit.
__global__ void avgPoolBackwardKernel(LanesPool p, float *dx, const float *dy) {
    const long long total = p.planes * p.h * p.w;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
        const long long plane = e / ((long long)p.h * p.w);
        const int rem = (int)(e % ((long long)p.h * p.w));
        const int r = rem / p.w, c = rem % p.w;
        const float *g = dy + plane * p.oh * p.ow;
        if (p.adaptive) { // the windows holding (r, c), in row-major order as the CPU adds them
            float sum = 0.0f;
            const int i0 = (int)((long long)r * p.oh / p.h), j0 = (int)((long long)c * p.ow / p.w);
            for (int i = i0; i < p.oh && adaptiveLo(i, p.h, p.oh) <= r; i++) {
                const int rs = adaptiveHi(i, p.h, p.oh) - adaptiveLo(i, p.h, p.oh);
                for (int j = j0; j < p.ow && adaptiveLo(j, p.w, p.ow) <= c; j++) {
                    const int cs = adaptiveHi(j, p.w, p.ow) - adaptiveLo(j, p.w, p.ow);
                    sum += g[i * p.ow + j] / (float)(rs * cs);
                }
            }
            dx[e] = sum;
            continue;
        }
        // Windows i with i·sh - ph <= r < i·sh - ph + kh, likewise j.
        const int i0 = max(0, (r + p.ph - p.kh + p.sh) / p.sh), i1 = min(p.oh - 1, (r + p.ph) / p.sh);
        const int j0 = max(0, (c + p.pw - p.kw + p.sw) / p.sw), j1 = min(p.ow - 1, (c + p.pw) / p.sw);
        float sum = 0.0f;
        for (int i = i0; i <= i1; i++) {
            int r0 = i * p.sh - p.ph, r1 = min(r0 + p.kh, p.h + p.ph);
            for (int j = j0; j <= j1; j++) {
                int c0 = j * p.sw - p.pw, c1 = min(c0 + p.kw, p.w + p.pw);
                int size = p.exclude_pad ? (min(r1, p.h) - max(r0, 0)) * (min(c1, p.w) - max(c0, 0)) : (r1 - r0) * (c1 - c0);
                sum += g[i * p.ow + j] / (float)size;
            }
        }
        dx[e] = sum;
    }
}

} // namespace

extern "C" int lanes_pool2d_backward(void *stream, int kind, const LanesPool *p, float *dx, const float *dy, const float *idx, float *err) {
    if (kind == 0) {
        const long long n = p->planes * p->oh * p->ow;
        if (n <= 0) {
            return 0;
        }
        return launch(maxPoolBackwardKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *p, dx, dy, idx, err);
    }
    const long long n = p->planes * p->h * p->w;
    if (n <= 0) {
        return 0;
    }
    return launch(avgPoolBackwardKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *p, dx, dy);
}

extern "C" int lanes_pool2d(void *stream, int kind, const LanesPool *p, float *y, float *idx, const float *x) {
    long long n = p->planes * p->oh * p->ow;
    if (n <= 0) {
        return 0;
    }
    return launch(pool2dKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, kind, *p, y, idx, x);
}
