// conv.cu: Conv2D as an implicit GEMM (tiles.cuh's main loop): B(p, j)
// is the im2col matrix, gathered from the NCHW input while the slice is
// loaded, never stored; split-K as SGEMM's, its reduction applying the
// bias and ReLU. The gradients (conv.go) are SGEMMs (gemm.cu) around the
// two kernels at the end: im2col, which stores that matrix for a chunk
// of images, and col2im, its adjoint, a gather.

#include "tiles.cuh"

namespace {

// divmod returns n / d and sets r = n % d for 0 <= n and 0 < d, with inv
// = 1/d: the float quotient is an estimate (exact to within one for n <
// 2^22, far off only beyond 2^24) that integer steps correct, which is
// several times cheaper than an integer division by a run-time divisor.
__device__ __forceinline__ int divmod(int n, int d, float inv, int &r) {
    int e = (int)((float)n * inv);
    r = n - e * d;
    while (r < 0) {
        e--;
        r += d;
    }
    while (r >= d) {
        e++;
        r -= d;
    }
    return e;
}

// ConvSource feeds the main loop of one group of an implicit-GEMM
// convolution: A is the group's weights (opg × k, row-major), B(q, j) the
// im2col element of input channel q / (kh·kw), tap q % (kh·kw), output
// pixel j (over all images). THREADS is a multiple of BN, so each thread
// gathers the same column j of every slice: its pixel is decoded once.
template <int BM, int BN, int BK, int THREADS>
struct ConvSource {
    static_assert(THREADS % BN == 0, "a thread's im2col column must not change");
    static constexpr int GATHERS = BK * BN / THREADS;
    const LanesConv &c;
    const float *w;
    int opg, K, row0, tid; // K: the weights' row length (c/groups·kh·kw)
    int kEnd;              // the end of the block's part of K (K without split-K)
    TileLoad<BM, BK, THREADS> ta;
    float rb[GATHERS];
    const float *xb; // the thread's image, first channel of the group
    int iy0, ix0;    // top left input pixel of the thread's window
    bool valid;      // the thread's column is a pixel
    int jl, ql0;
    float invTaps, invKw; // divmod's reciprocals of kh·kw and kw

    __device__ __forceinline__ void init(int col0, int group) {
        jl = tid % BN;
        ql0 = tid / BN;
        long long j = (long long)col0 + jl;
        long long pixels = (long long)c.oh * c.ow;
        valid = j < (long long)c.n * pixels;
        int img = valid ? (int)(j / pixels) : 0;
        int pix = valid ? (int)(j % pixels) : 0;
        int oy = pix / c.ow, ox = pix % c.ow;
        iy0 = oy * c.sh - c.ph;
        ix0 = ox * c.sw - c.pw;
        int cpg = c.c / c.groups;
        xb = c.x + ((long long)img * c.c + (long long)group * cpg) * c.h * c.w_;
        invTaps = 1.0f / (float)(c.kh * c.kw);
        invKw = 1.0f / (float)c.kw;
    }
    __device__ __forceinline__ void load(int k0) {
        ta.load(w, K, false, c.vec_w != 0, opg, kEnd, row0, k0, tid);
        const int taps = c.kh * c.kw;
#pragma unroll
        for (int l = 0; l < GATHERS; l++) {
            int q = k0 + ql0 + l * (THREADS / BN);
            float v = 0.0f;
            if (valid && q < kEnd) {
                int t, vv;
                int ci = divmod(q, taps, invTaps, t);
                int u = divmod(t, c.kw, invKw, vv);
                int iy = iy0 + u * c.dh, ix = ix0 + vv * c.dw;
                if (iy >= 0 && iy < c.h && ix >= 0 && ix < c.w_) {
                    v = xb[((long long)ci * c.h + iy) * c.w_ + ix];
                }
            }
            rb[l] = v;
        }
    }
    __device__ __forceinline__ void store(float (*as)[BM + PAD], float (*bs)[BN + PAD]) const {
        ta.store(as, false, tid);
#pragma unroll
        for (int l = 0; l < GATHERS; l++) {
            bs[ql0 + l * (THREADS / BN)][jl] = rb[l];
        }
    }
};

// conv2dKernel computes a BM×BN tile of a group's implicit GEMM; SPLIT as
// sgemmKernel's (grid z = groups·splits).
template <int BM, int BN, int TM, int TN, int BK, bool SPLIT>
__global__ void __launch_bounds__((BM / TM) * (BN / TN)) conv2dKernel(LanesConv c) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    const int splits = SPLIT ? c.splits : 1;
    const int group = SPLIT ? blockIdx.z / splits : blockIdx.z, split = SPLIT ? blockIdx.z % splits : 0;
    const int opg = c.cout / c.groups;
    const int K = c.c / c.groups * c.kh * c.kw;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int kBeg = 0, kEnd = K;
    if constexpr (SPLIT) {
        kPart<BK>(K, splits, split, kBeg, kEnd);
    }
    ConvSource<BM, BN, BK, THREADS> src{c, c.w + (long long)group * opg * K, opg, K, row0, (int)threadIdx.x, kEnd};
    src.init(col0, group);
    float acc[TM][TN];
    mainLoop<BM, BN, TM, TN, BK>(src, kBeg, kEnd, acc);
    const long long pixels = (long long)c.oh * c.ow;
    const long long cols = (long long)c.n * pixels;
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    if constexpr (SPLIT) { // the part's raw sums [cout, cols], for convReduceKernel
        float *part = c.partial + (long long)split * c.cout * cols;
#pragma unroll
        for (int i = 0; i < TM; i++) {
            int o = row0 + tileRow<BM, TM>(ty, i);
#pragma unroll
            for (int j = 0; j < TN; j++) {
                long long col = col0 + tileRow<BN, TN>(tx, j);
                if (o < opg && col < cols) {
                    part[(long long)(group * opg + o) * cols + col] = acc[i][j];
                }
            }
        }
    } else {
#pragma unroll
        for (int j = 0; j < TN; j++) {
            long long col = col0 + tileRow<BN, TN>(tx, j);
            if (col >= cols) {
                continue;
            }
            long long img = col / pixels, pix = col % pixels;
#pragma unroll
            for (int i = 0; i < TM; i++) {
                int o = row0 + tileRow<BM, TM>(ty, i);
                if (o >= opg) {
                    continue;
                }
                int oc = group * opg + o;
                float v = acc[i][j];
                if (c.bias) {
                    v += c.bias[oc];
                }
                if (c.relu) {
                    v = relu(v);
                }
                c.y[(img * c.cout + oc) * pixels + pix] = v;
            }
        }
    }
}

// convReduceKernel finishes a split-K convolution: y = act(the sum of the
// parts, in order, + bias), written NCHW.
__global__ void convReduceKernel(LanesConv c) {
    const long long pixels = (long long)c.oh * c.ow, cols = (long long)c.n * pixels, total = cols * c.cout;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long oc = i / cols, col = i % cols;
        const float *part = c.partial + i;
        float v = 0.0f;
        for (int sp = 0; sp < c.splits; sp++) {
            v += part[sp * total];
        }
        if (c.bias) {
            v += c.bias[oc];
        }
        if (c.relu) {
            v = relu(v);
        }
        c.y[((col / pixels) * c.cout + oc) * pixels + col % pixels] = v;
    }
}

// im2colKernel stores the im2col matrix of a chunk (kernels.h:
// LanesCols), one element a thread: consecutive threads write consecutive
// columns (pixels), coalesced; their reads of x are strided by the
// convolution's stride.
__global__ void im2colKernel(LanesCols c, const float *x, float *col) {
    const long long pixels = (long long)c.ohc * c.ow, cols = c.imgs * pixels;
    const long long total = (long long)c.c * c.kh * c.kw * cols;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long row = i / cols, j = i % cols;
        const long long img = j / pixels;
        const int pix = (int)(j % pixels);
        const int ci = (int)(row / (c.kh * c.kw)), tap = (int)(row % (c.kh * c.kw));
        const int iy = (c.oy0 + pix / c.ow) * c.sh - c.ph + tap / c.kw * c.dh;
        const int ix = pix % c.ow * c.sw - c.pw + tap % c.kw * c.dw;
        float v = 0.0f;
        if (iy >= 0 && iy < c.h && ix >= 0 && ix < c.w_) {
            v = x[img * c.xs[0] + ci * c.xs[1] + iy * c.xs[2] + ix * c.xs[3]];
        }
        col[i] = v;
    }
}

// col2imKernel sets (or with c.acc adds to) each element of rows
// c.iy0.. of dx (c.imgs images, dense NCHW) the sum of the elements of
// the chunk's im2col-shaped matrix col that read it: over the taps (u, v)
// in order, those whose output pixel (oy, ox) is in the chunk, oy·sh = iy
// + ph - u·dh. Each thread owns its element: no atomics, the same sum
// every run.
__global__ void col2imKernel(LanesCols c, const float *col, float *dx) {
    const long long pixels = (long long)c.ohc * c.ow, cols = c.imgs * pixels;
    const long long plane = (long long)c.ihc * c.w_, total = c.imgs * c.c * plane;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long img = i / (c.c * plane);
        const int ci = (int)(i / plane % c.c), p = (int)(i % plane);
        const int iy = c.iy0 + p / c.w_, ix = p % c.w_;
        const float *base = col + (long long)ci * c.kh * c.kw * cols + img * pixels;
        float s = 0.0f;
        for (int u = 0; u < c.kh; u++) {
            const int ty = iy + c.ph - u * c.dh;
            if (ty < 0) {
                break; // and for every later tap
            }
            const int oy = ty / c.sh - c.oy0; // in the chunk
            if (ty % c.sh != 0 || oy < 0 || oy >= c.ohc) {
                continue;
            }
            for (int v = 0; v < c.kw; v++) {
                const int tx = ix + c.pw - v * c.dw;
                if (tx < 0) {
                    break;
                }
                const int ox = tx / c.sw;
                if (tx % c.sw != 0 || ox >= c.ow) {
                    continue;
                }
                s += base[(long long)(u * c.kw + v) * cols + oy * c.ow + ox];
            }
        }
        float *d = dx + ((img * c.c + ci) * c.h + iy) * (long long)c.w_ + ix;
        *d = c.acc ? *d + s : s;
    }
}

} // namespace

extern "C" int lanes_im2col(void *stream, const LanesCols *c, const float *x, float *col) {
    const long long n = (long long)c->c * c->kh * c->kw * c->imgs * c->ohc * c->ow;
    return n == 0 ? 0 : launch(im2colKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *c, x, col);
}

extern "C" int lanes_col2im(void *stream, const LanesCols *c, const float *col, float *dx) {
    const long long n = (long long)c->imgs * c->c * c->ihc * c->w_;
    return n == 0 ? 0 : launch(col2imKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *c, col, dx);
}

// The tile configurations were chosen with cudaplugin/tune on an H100
// (bench/results/gpu-h100/tune.txt): the convolution's large tile keeps
// 8-deep slices, whose gathers fit its registers better. Only the small
// tile has a split-K form, as SGEMM's.
extern "C" int lanes_conv2d(void *stream, int cfg, const LanesConv *c, int gx, int gy, int gz) {
    const dim3 grid(gx, gy, gz);
    const long long outputs = (long long)c->n * c->oh * c->ow * c->cout;
    using K = void (*)(LanesConv);
    switch (cfg) {
    case LANES_TILE_128:
        return launchTiles(stream, *c, grid, conv2dKernel<128, 128, 8, 8, 8, false>, K(nullptr), outputs, convReduceKernel);
    case LANES_TILE_64:
        return launchTiles(stream, *c, grid, conv2dKernel<64, 64, 4, 4, 16, false>, conv2dKernel<64, 64, 4, 4, 16, true>, outputs,
                           convReduceKernel);
    }
    return ERR_INVALID_VALUE;
}
