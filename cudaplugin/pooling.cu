// pooling.cu: 2-D max and average pooling.

#include "common.cuh"

namespace {

// One thread per output element; windows as tensor's poolGeom.window.
__global__ void pool2dKernel(int kind, LanesPool p, float *y, float *idx, const float *x) {
    const long long total = p.planes * p.oh * p.ow;
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < total; o += (long long)gridDim.x * blockDim.x) {
        long long plane = o / ((long long)p.oh * p.ow);
        int rem = (int)(o % ((long long)p.oh * p.ow));
        int i = rem / p.ow, j = rem % p.ow;
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

} // namespace

extern "C" int lanes_pool2d(void *stream, int kind, const LanesPool *p, float *y, float *idx, const float *x) {
    long long n = p->planes * p->oh * p->ow;
    if (n <= 0) {
        return 0;
    }
    return launch(pool2dKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, kind, *p, y, idx, x);
}
