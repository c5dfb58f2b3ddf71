// sample.cu: GridSample, AffineGrid and Interpolate and their gradients
// (tensor.SampleKernels), as the CPU's gridsample.go: every value in
// double from float32 operands, rounded once; every sum in the CPU's
// order. Products and sums are written with __dmul_rn and __dadd_rn (and
// the float32 ones of Interpolate's source coordinates with __fmul_rn and
// __fadd_rn) so that nvcc contracts none into a fused multiply-add, which
// the CPU does not use: the results are the CPU's bit for bit. The
// gradients of the input are gathers with one thread per image plane
// (each sums over the plane's output positions in row-major order, no
// atomics); that of the grid one thread per grid point.

#include "common.cuh"

namespace {

// gridSource is tensor's gridJob.source: the pixel coordinate of
// normalized coordinate v over size pixels and its derivative (0 where
// the border padding clips it).
__device__ double gridSource(const LanesSample &p, float v, int size, double *deriv) {
    double c = (double)v, d = (double)size / 2;
    if (p.align) {
        c = __dmul_rn((c + 1) / 2, (double)(size - 1));
        d = (double)(size - 1) / 2;
    } else {
        c = __dadd_rn(__dmul_rn(c + 1, (double)size), -1.0) / 2;
    }
    if (p.padding == 2) { // reflect, tensor's reflect
        double lo = p.align ? 0 : -1, hi = p.align ? 2 * (double)(size - 1) : 2 * (double)size - 1, r;
        if (lo == hi) {
            c = 0;
            r = 0;
        } else {
            const double m = lo / 2, span = (hi - lo) / 2;
            double sgn = 1;
            if (c < m) {
                c = m - c;
                sgn = -1;
            } else {
                c -= m;
            }
            const double extra = fmod(c, span), flips = floor(c / span);
            if (fmod(flips, 2.0) == 0) {
                c = extra + m;
                r = sgn;
            } else {
                c = span - extra + m;
                r = -sgn;
            }
        }
        d *= r;
    }
    if (p.padding != 0) {
        if (!(c > 0)) {
            *deriv = 0;
            return 0;
        }
        if (c >= (double)(size - 1)) {
            *deriv = 0;
            return (double)(size - 1);
        }
    }
    *deriv = d;
    return c;
}

__device__ __forceinline__ double gridPixel(const LanesSample &p, const float *xp, long long y, long long x) {
    if (y < 0 || y >= p.h || x < 0 || x >= p.w) {
        return 0;
    }
    return (double)xp[y * p.w + x];
}

__device__ __forceinline__ bool gridFinite(double ix, double iy) {
    return !isnan(ix) && !isnan(iy) && fabs(ix) < 1099511627776.0 && fabs(iy) < 1099511627776.0;
}

// GridPoint is the setup of a grid point, the three kernels' one home for
// it (tensor's gridJob.run and the start of its at): the source pixel
// coordinates ix, iy (gridSource) and their derivatives mx, my; whether
// the source is finite (a NaN or huge one reads 0 and has no gradients);
// and, when it is, its taps: nearest's pixel (x0, y0), or bilinear's
// top-left pixel (x0, y0), the fractions fx, fy and the weights of the
// four pixels, w (nw, ne, sw, se; 0 otherwise).
struct GridPoint {
    double ix, iy, mx, my, fx, fy, w[4];
    long long x0, y0;
    bool finite;
};

// gridSources sets g's source from grid point o of grid.
__device__ __forceinline__ void gridSources(const LanesSample &p, const float *grid, long long o, GridPoint &g) {
    g.ix = gridSource(p, grid[2 * o], p.w, &g.mx);
    g.iy = gridSource(p, grid[2 * o + 1], p.h, &g.my);
}

// gridTaps sets g's finiteness and taps from its source.
__device__ __forceinline__ void gridTaps(const LanesSample &p, GridPoint &g) {
    g.finite = gridFinite(g.ix, g.iy);
    g.x0 = g.y0 = 0;
    g.fx = g.fy = g.w[0] = g.w[1] = g.w[2] = g.w[3] = 0;
    if (!g.finite) {
        return;
    }
    if (p.mode == 1) {
        g.x0 = (long long)rint(g.ix);
        g.y0 = (long long)rint(g.iy);
        return;
    }
    g.x0 = (long long)floor(g.ix);
    g.y0 = (long long)floor(g.iy);
    const double fx = g.ix - (double)g.x0, fy = g.iy - (double)g.y0;
    g.fx = fx;
    g.fy = fy;
    g.w[0] = __dmul_rn(1 - fx, 1 - fy);
    g.w[1] = __dmul_rn(fx, 1 - fy);
    g.w[2] = __dmul_rn(1 - fx, fy);
    g.w[3] = __dmul_rn(fx, fy);
}

// gridPoint is the setup of grid point o of grid.
__device__ __forceinline__ GridPoint gridPoint(const LanesSample &p, const float *grid, long long o) {
    GridPoint g;
    gridSources(p, grid, o, g);
    gridTaps(p, g);
    return g;
}

// gridForward sets the c outputs of grid point o (b, oy, ox).
__device__ void gridForward(const LanesSample &p, long long o, float *y, const float *x, const float *grid) {
    const long long hw = (long long)p.ho * p.wo, b = o / hw, pos = o % hw;
    const GridPoint g = gridPoint(p, grid, o);
    for (int ch = 0; ch < p.c; ch++) {
        const long long plane = b * p.c + ch;
        const float *xp = x + plane * p.h * p.w;
        float *out = y + plane * hw + pos;
        if (!g.finite) {
            *out = 0;
            continue;
        }
        if (p.mode == 1) {
            *out = (float)gridPixel(p, xp, g.y0, g.x0);
            continue;
        }
        const double nw = gridPixel(p, xp, g.y0, g.x0), ne = gridPixel(p, xp, g.y0, g.x0 + 1);
        const double sw = gridPixel(p, xp, g.y0 + 1, g.x0), se = gridPixel(p, xp, g.y0 + 1, g.x0 + 1);
        *out = (float)__dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(nw, g.w[0]), __dmul_rn(ne, g.w[1])), __dmul_rn(sw, g.w[2])), __dmul_rn(se, g.w[3]));
    }
}

__device__ __forceinline__ void gridAdd(const LanesSample &p, double *ap, long long y, long long x, double v) {
    if (y >= 0 && y < p.h && x >= 0 && x < p.w) {
        double *a = ap + y * p.w + x;
        *a = __dadd_rn(*a, v);
    }
}

// gridSourcesOf puts the source of grid point o in src[2o], src[2o+1],
// once for the channels of gridInputGrad.
__device__ void gridSourcesOf(const LanesSample &p, long long o, double *src, const float *grid) {
    GridPoint g;
    gridSources(p, grid, o, g);
    src[2 * o] = g.ix;
    src[2 * o + 1] = g.iy;
}

// gridInputGrad sets the gradient of plane pl (b, ch) of the input: its
// grid points in row-major order, as the CPU's run, their sources in src
// (gridSourcesOf).
__device__ void gridInputGrad(const LanesSample &p, long long pl, float *dx, double *acc, const double *src, const float *dy) {
    const long long hw = (long long)p.h * p.w, ohw = (long long)p.ho * p.wo, b = pl / p.c;
    double *ap = acc + pl * hw;
    for (long long i = 0; i < hw; i++) {
        ap[i] = 0;
    }
    for (long long pos = 0; pos < ohw; pos++) {
        const long long o = b * ohw + pos;
        GridPoint gp;
        gp.ix = src[2 * o];
        gp.iy = src[2 * o + 1];
        gridTaps(p, gp);
        if (!gp.finite) {
            continue;
        }
        const double g = (double)dy[pl * ohw + pos];
        if (p.mode == 1) {
            gridAdd(p, ap, gp.y0, gp.x0, g);
            continue;
        }
        gridAdd(p, ap, gp.y0, gp.x0, __dmul_rn(g, gp.w[0]));
        gridAdd(p, ap, gp.y0, gp.x0 + 1, __dmul_rn(g, gp.w[1]));
        gridAdd(p, ap, gp.y0 + 1, gp.x0, __dmul_rn(g, gp.w[2]));
        gridAdd(p, ap, gp.y0 + 1, gp.x0 + 1, __dmul_rn(g, gp.w[3]));
    }
    for (long long i = 0; i < hw; i++) {
        dx[pl * hw + i] = (float)ap[i];
    }
}

// gridGridGrad sets the gradient of grid point o (b, oy, ox): the sum over
// the channels, in order, as the CPU's at (0 for nearest).
__device__ void gridGridGrad(const LanesSample &p, long long o, float *dgrid, const float *x, const float *grid, const float *dy) {
    const long long ohw = (long long)p.ho * p.wo, b = o / ohw, pos = o % ohw;
    const GridPoint gp = gridPoint(p, grid, o);
    double gx = 0, gy = 0;
    if (p.mode != 1 && gp.finite) {
        const long long x0 = gp.x0, y0 = gp.y0;
        const double fx = gp.fx, fy = gp.fy;
        for (int ch = 0; ch < p.c; ch++) {
            const long long plane = b * p.c + ch;
            const float *xp = x + plane * p.h * p.w;
            const double nw = gridPixel(p, xp, y0, x0), ne = gridPixel(p, xp, y0, x0 + 1);
            const double sw = gridPixel(p, xp, y0 + 1, x0), se = gridPixel(p, xp, y0 + 1, x0 + 1);
            const double g = (double)dy[plane * ohw + pos];
            gx = __dadd_rn(gx, __dmul_rn(g, __dadd_rn(__dmul_rn(ne - nw, 1 - fy), __dmul_rn(se - sw, fy))));
            gy = __dadd_rn(gy, __dmul_rn(g, __dadd_rn(__dmul_rn(sw - nw, 1 - fx), __dmul_rn(se - ne, fx))));
        }
        gx = __dadd_rn(0.0, __dmul_rn(gx, gp.mx));
        gy = __dadd_rn(0.0, __dmul_rn(gy, gp.my));
    }
    dgrid[2 * o] = (float)gx;
    dgrid[2 * o + 1] = (float)gy;
}

// gridSampleKernel runs pass 0 (the forward) or 2 (the grid's gradient)
// one thread per grid point, pass 1 (the input's gradient) one per plane,
// its sums in acc (n·c·h·w doubles) and its grid points' sources after
// them, which pass 3 sets, one thread per grid point.
__global__ void gridSampleKernel(int pass, LanesSample p, float *y, double *acc, const float *x, const float *grid, const float *dy) {
    const long long total = pass == 1 ? (long long)p.n * p.c : (long long)p.n * p.ho * p.wo;
    double *src = acc + (long long)p.n * p.c * p.h * p.w;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        if (pass == 0) {
            gridForward(p, i, y, x, grid);
        } else if (pass == 1) {
            gridInputGrad(p, i, y, acc, src, dy);
        } else if (pass == 2) {
            gridGridGrad(p, i, y, x, grid, dy);
        } else {
            gridSourcesOf(p, i, src, grid);
        }
    }
}

// gridBase is tensor's gridBase: the normalized coordinate of pixel i of n.
__device__ __forceinline__ double gridBase(int i, int n, int align) {
    if (n <= 1) {
        return 0;
    }
    if (align) {
        return -1 + 2 * (double)i / (double)(n - 1);
    }
    return (2 * (double)i + 1) / (double)n - 1;
}

// affineGridKernel: pass 0 one thread per grid point, pass 1 one per
// element of dtheta (b, k), summing over the grid in row-major order.
__global__ void affineGridKernel(int pass, LanesSample p, float *y, const float *x) {
    const long long total = pass == 0 ? (long long)p.n * p.ho * p.wo : (long long)p.n * 6;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        if (pass == 0) {
            const long long hw = (long long)p.ho * p.wo, b = i / hw;
            const int r = (int)(i % hw) / p.wo, c = (int)(i % hw) % p.wo;
            const double gx = gridBase(c, p.wo, p.align), gy = gridBase(r, p.ho, p.align);
            const float *t = x + b * 6;
            y[2 * i] = (float)__dadd_rn(__dadd_rn(__dmul_rn((double)t[0], gx), __dmul_rn((double)t[1], gy)), (double)t[2]);
            y[2 * i + 1] = (float)__dadd_rn(__dadd_rn(__dmul_rn((double)t[3], gx), __dmul_rn((double)t[4], gy)), (double)t[5]);
            continue;
        }
        const long long b = i / 6;
        const int k = (int)(i % 6), comp = k / 3, term = k % 3;
        const float *g = x + b * p.ho * p.wo * 2;
        double acc = 0;
        for (int r = 0; r < p.ho; r++) {
            const double gy = gridBase(r, p.ho, p.align);
            for (int c = 0; c < p.wo; c++) {
                const double d = (double)g[((long long)r * p.wo + c) * 2 + comp];
                const double f = term == 0 ? gridBase(c, p.wo, p.align) : gy;
                acc = term == 2 ? __dadd_rn(acc, d) : __dadd_rn(acc, __dmul_rn(d, f));
            }
        }
        y[i] = (float)acc;
    }
}

__device__ __forceinline__ double cubicNear(double x) {
    return __dadd_rn(__dmul_rn(__dmul_rn(__dadd_rn(__dmul_rn(1.25, x), -2.25), x), x), 1.0);
}

__device__ __forceinline__ double cubicFar(double x) {
    return __dadd_rn(__dmul_rn(__dadd_rn(__dmul_rn(__dadd_rn(__dmul_rn(-0.75, x), 3.75), x), -6.0), x), 3.0);
}

// interpTaps is tensor's newInterpAxis at output index o of an axis of in
// pixels resized to out with scale: the taps' source indices and weights.
__device__ int interpTaps(const LanesSample &p, int o, int in, int out, float scale, int *idx, double *w) {
    switch (p.mode) {
    case 1: // nearest
        idx[0] = min((int)floorf(__fmul_rn((float)o, scale)), in - 1);
        w[0] = 1;
        return 1;
    case 3: // nearest-exact
        idx[0] = min((int)floorf(__fmul_rn(__fadd_rn((float)o, 0.5f), scale)), in - 1);
        w[0] = 1;
        return 1;
    case 2: { // bilinear
        if (out == in) {
            idx[0] = idx[1] = o;
            w[0] = 1;
            w[1] = 0;
            return 2;
        }
        double src = __dmul_rn((double)scale, (double)o);
        if (!p.align) {
            src = fmax(__dadd_rn(__dmul_rn((double)scale, (double)o + 0.5), -0.5), 0.0);
        }
        const int i = (int)src;
        idx[0] = idx[1] = i;
        if (i < in - 1) {
            idx[1] = i + 1;
        }
        const float l1 = (float)(src - (double)i);
        w[0] = (double)(1 - l1);
        w[1] = (double)l1;
        return 2;
    }
    default: { // bicubic
        float src = __fmul_rn(scale, (float)o);
        if (!p.align) {
            src = __fadd_rn(__fmul_rn(scale, __fadd_rn((float)o, 0.5f)), -0.5f);
        }
        const int i = (int)floorf(src);
        const double t = (double)(src - (float)i);
        w[0] = cubicFar(t + 1);
        w[1] = cubicNear(t);
        w[2] = cubicNear(1 - t);
        w[3] = cubicFar(2 - t);
        for (int k = 0; k < 4; k++) {
            idx[k] = min(max(i - 1 + k, 0), in - 1);
        }
        return 4;
    }
    }
}

// interpolateKernel: pass 0 one thread per output element; pass 1 one per
// plane, scattering its dy in row-major order into the plane's double
// scratch, as the CPU's interpolateBackward.
__global__ void interpolateKernel(int pass, LanesSample p, float *y, double *acc, const float *x) {
    const long long ohw = (long long)p.ho * p.wo, hw = (long long)p.h * p.w;
    const long long total = pass == 0 ? (long long)p.n * p.c * ohw : (long long)p.n * p.c;
    int iy[4], ix[4];
    double wy[4], wx[4];
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        if (pass == 0) {
            const long long pl = i / ohw;
            const int oy = (int)(i % ohw) / p.wo, ox = (int)(i % ohw) % p.wo;
            const int ty = interpTaps(p, oy, p.h, p.ho, p.scale_h, iy, wy), tx = interpTaps(p, ox, p.w, p.wo, p.scale_w, ix, wx);
            const float *src = x + pl * hw;
            double v = 0;
            for (int a = 0; a < ty; a++) {
                double r = 0;
                for (int b = 0; b < tx; b++) {
                    r = __dadd_rn(r, __dmul_rn(wx[b], (double)src[(long long)iy[a] * p.w + ix[b]]));
                }
                v = __dadd_rn(v, __dmul_rn(wy[a], r));
            }
            y[i] = (float)v;
            continue;
        }
        double *ap = acc + i * hw;
        for (long long e = 0; e < hw; e++) {
            ap[e] = 0;
        }
        const float *g = x + i * ohw;
        for (int oy = 0; oy < p.ho; oy++) {
            const int ty = interpTaps(p, oy, p.h, p.ho, p.scale_h, iy, wy);
            for (int ox = 0; ox < p.wo; ox++) {
                const int tx = interpTaps(p, ox, p.w, p.wo, p.scale_w, ix, wx);
                const double v = (double)g[(long long)oy * p.wo + ox];
                for (int a = 0; a < ty; a++) {
                    const double va = __dmul_rn(v, wy[a]);
                    double *row = ap + (long long)iy[a] * p.w;
                    for (int b = 0; b < tx; b++) {
                        row[ix[b]] = __dadd_rn(row[ix[b]], __dmul_rn(va, wx[b]));
                    }
                }
            }
        }
        for (long long e = 0; e < hw; e++) {
            y[i * hw + e] = (float)ap[e];
        }
    }
}

} // namespace

extern "C" int lanes_grid_sample(void *stream, int pass, const LanesSample *p, float *y, double *acc, const float *x, const float *grid,
                                 const float *dy) {
    const long long points = (long long)p->n * p->ho * p->wo, n = pass == 1 ? (long long)p->n * p->c : points;
    if (n <= 0) {
        return 0;
    }
    if (pass == 1 && points > 0) { // the sources first, once for the channels
        if (int r = launch(gridSampleKernel, gridFor(points, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, 3, *p, y, acc, x, grid,
                           dy)) {
            return r;
        }
    }
    return launch(gridSampleKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, pass, *p, y, acc, x, grid, dy);
}

extern "C" int lanes_affine_grid(void *stream, int pass, const LanesSample *p, float *y, const float *x) {
    const long long n = pass == 0 ? (long long)p->n * p->ho * p->wo : (long long)p->n * 6;
    if (n <= 0) {
        return 0;
    }
    return launch(affineGridKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, pass, *p, y, x);
}

extern "C" int lanes_interpolate(void *stream, int pass, const LanesSample *p, float *y, double *acc, const float *x) {
    const long long n = pass == 0 ? (long long)p->n * p->c * p->ho * p->wo : (long long)p->n * p->c;
    if (n <= 0) {
        return 0;
    }
    return launch(interpolateKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, pass, *p, y, acc, x);
}
