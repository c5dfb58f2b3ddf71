// kernels.cu: lanes' CUDA kernels (no cuBLAS, no cuDNN). FP32 throughout:
// every product is an fmaf, no TF32 and no fast-math.
//
// SGEMM and Conv2D share one main loop: a block computes a BM×BN tile of
// C with BK deep slices of A and B in shared memory, double-buffered
// (the next slice is loaded from global memory into registers while the
// current one is multiplied, then stored into the other buffer: one
// __syncthreads per slice). Each thread holds a TM×TN register block made
// of two TM/2×TN/2 quarters half a tile apart (rows ty·TM/2 and
// BM/2 + ty·TM/2, likewise columns), so that a warp's shared-memory reads
// are contiguous. Global loads of A and B are 16-byte float4 loads when
// the host says the layout allows them (vec_a, vec_b), else masked scalar
// loads; edge tiles are masked on every side, so any m, n, k works.
// Conv2D is an implicit GEMM: B(p, j) is the im2col matrix, gathered from
// the NCHW input while the slice is loaded, never stored. A grid too small
// to fill the device can split k (split-K): each block sums one part into
// a workspace, and a second kernel adds the parts in order (so results do
// not depend on timing) and applies alpha/beta, or the bias and ReLU.
//
// Built with LANES_EMULATE, this file compiles as plain C++ against
// emulate.h, which runs each block's threads as host threads: the test in
// emulate_test.cc checks the kernels' indexing without a GPU.

#include "kernels.h"

#ifdef LANES_EMULATE
#include "emulate.h"
#else
#include <cuda_runtime.h>
#include <math.h>
#endif

namespace {

constexpr int PAD = 4; // shared rows padded by 4 floats: fewer bank conflicts, still 16-byte aligned

// TileLoad moves the BR×BK slice (r0, k0) of a matrix X(i, q) from global
// memory into registers and then into shared memory S[q][i]. X(i, q) is
// x[i·ld + q], or x[q·ld + i] when kMajor. A is such a matrix (kMajor =
// trans_a); so is B with i = j (kMajor = !trans_b).
template <int BR, int BK, int THREADS>
struct TileLoad {
    static constexpr int VECS = BR * BK / 4; // float4s in a slice
    static constexpr int LOADS = (VECS + THREADS - 1) / THREADS;
    float r[LOADS][4];

    __device__ __forceinline__ void load(const float *x, long long ld, bool kMajor, bool vec,
                                         int rows, int K, int r0, int k0, int tid) {
#pragma unroll
        for (int l = 0; l < LOADS; l++) {
            int v = tid + l * THREADS;
            if (v >= VECS) {
                break;
            }
            int i, q;
            const float *src;
            bool full;
            if (!kMajor) { // 4 consecutive q of row i
                i = r0 + v / (BK / 4);
                q = k0 + (v % (BK / 4)) * 4;
                src = x + (long long)i * ld + q;
                full = i < rows && q + 3 < K;
            } else { // 4 consecutive i of slice row q
                q = k0 + v / (BR / 4);
                i = r0 + (v % (BR / 4)) * 4;
                src = x + (long long)q * ld + i;
                full = q < K && i + 3 < rows;
            }
            if (vec && full) {
                float4 f = *reinterpret_cast<const float4 *>(src);
                r[l][0] = f.x;
                r[l][1] = f.y;
                r[l][2] = f.z;
                r[l][3] = f.w;
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    bool in = !kMajor ? (i < rows && q + e < K) : (q < K && i + e < rows);
                    r[l][e] = in ? src[e] : 0.0f;
                }
            }
        }
    }

    __device__ __forceinline__ void store(float (*s)[BR + PAD], bool kMajor, int tid) const {
#pragma unroll
        for (int l = 0; l < LOADS; l++) {
            int v = tid + l * THREADS;
            if (v >= VECS) {
                break;
            }
            if (!kMajor) {
                int il = v / (BK / 4), ql = (v % (BK / 4)) * 4;
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s[ql + e][il] = r[l][e];
                }
            } else {
                int ql = v / (BR / 4), il = (v % (BR / 4)) * 4;
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s[ql][il + e] = r[l][e];
                }
            }
        }
    }
};

// GemmSource feeds the main loop with the slices of A and B of one matrix
// product.
template <int BM, int BN, int BK, int THREADS>
struct GemmSource {
    const LanesGemm &g;
    const float *a, *b;
    int row0, col0, tid;
    int kEnd; // the end of the block's part of k (g.k without split-K)
    TileLoad<BM, BK, THREADS> ta;
    TileLoad<BN, BK, THREADS> tb;

    __device__ __forceinline__ void load(int k0) {
        ta.load(a, g.lda, g.trans_a != 0, g.vec_a != 0, g.m, kEnd, row0, k0, tid);
        tb.load(b, g.ldb, g.trans_b == 0, g.vec_b != 0, g.n, kEnd, col0, k0, tid);
    }
    __device__ __forceinline__ void store(float (*as)[BM + PAD], float (*bs)[BN + PAD]) const {
        ta.store(as, g.trans_a != 0, tid);
        tb.store(bs, g.trans_b == 0, tid);
    }
};

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

// kPart returns the part kBeg..kEnd of k that split `split` of `splits`
// sums: equal runs of whole BK-deep slices (the last ones may be short or
// empty), so that every part starts 16-byte aligned.
template <int BK>
__device__ __forceinline__ void kPart(int k, int splits, int split, int &kBeg, int &kEnd) {
    const int per = ((k + splits - 1) / splits + BK - 1) / BK * BK;
    kBeg = min(k, split * per);
    kEnd = min(k, kBeg + per);
}

// Row (column) of the tile that element i of a thread's TM (TN) register
// rows (columns) stands for.
template <int BM, int TM>
__device__ __forceinline__ int tileRow(int ty, int i) {
    return i < TM / 2 ? ty * (TM / 2) + i : BM / 2 + ty * (TM / 2) + (i - TM / 2);
}

// mainLoop accumulates the thread's TM×TN block of the tile over k in
// kBeg..kEnd (kBeg a multiple of BK; the sources mask at kEnd).
template <int BM, int BN, int TM, int TN, int BK, class Source>
__device__ __forceinline__ void mainLoop(Source &src, int kBeg, int kEnd, float (&acc)[TM][TN]) {
    __shared__ __align__(16) float as[2][BK][BM + PAD];
    __shared__ __align__(16) float bs[2][BK][BN + PAD];
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
#pragma unroll
    for (int i = 0; i < TM; i++) {
#pragma unroll
        for (int j = 0; j < TN; j++) {
            acc[i][j] = 0.0f;
        }
    }
    const int slices = kEnd > kBeg ? (kEnd - kBeg + BK - 1) / BK : 0;
    if (slices == 0) {
        return; // uniform over the block: no __syncthreads is skipped by some threads only
    }
    src.load(kBeg);
    src.store(as[0], bs[0]);
    __syncthreads();
    for (int s = 0; s < slices; s++) {
        const int cur = s & 1;
        const bool more = s + 1 < slices;
        if (more) {
            src.load(kBeg + (s + 1) * BK); // in flight while this slice is multiplied
        }
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float ra[TM], rb[TN];
#pragma unroll
            for (int i = 0; i < TM; i++) {
                ra[i] = as[cur][kk][tileRow<BM, TM>(ty, i)];
            }
#pragma unroll
            for (int j = 0; j < TN; j++) {
                rb[j] = bs[cur][kk][tileRow<BN, TN>(tx, j)];
            }
#pragma unroll
            for (int i = 0; i < TM; i++) {
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
                }
            }
        }
        if (more) {
            // The other buffer was last read in slice s-1, before the
            // barrier that ended it.
            src.store(as[cur ^ 1], bs[cur ^ 1]);
        }
        __syncthreads();
    }
}

// sgemmKernel computes a BM×BN tile of C. SPLIT: the block sums one part
// of k (split-K, g.splits parts, grid z = batch·splits) into g.partial;
// without it the same code has k whole and none of the split bookkeeping.
template <int BM, int BN, int TM, int TN, int BK, bool SPLIT>
__global__ void __launch_bounds__((BM / TM) * (BN / TN)) sgemmKernel(LanesGemm g) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    const int splits = SPLIT ? g.splits : 1;
    const int z = SPLIT ? blockIdx.z / splits : blockIdx.z, split = SPLIT ? blockIdx.z % splits : 0;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int kBeg = 0, kEnd = g.k;
    if constexpr (SPLIT) {
        kPart<BK>(g.k, splits, split, kBeg, kEnd);
    }
    GemmSource<BM, BN, BK, THREADS> src{g, g.a + z * g.stride_a, g.b + z * g.stride_b, row0, col0, (int)threadIdx.x, kEnd};
    float acc[TM][TN];
    mainLoop<BM, BN, TM, TN, BK>(src, kBeg, kEnd, acc);
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    if constexpr (SPLIT) { // the part's raw sums, for gemmReduceKernel
        float *part = g.partial + ((long long)z * splits + split) * g.m * g.n;
#pragma unroll
        for (int i = 0; i < TM; i++) {
            int r = row0 + tileRow<BM, TM>(ty, i);
#pragma unroll
            for (int j = 0; j < TN; j++) {
                int col = col0 + tileRow<BN, TN>(tx, j);
                if (r < g.m && col < g.n) {
                    part[(long long)r * g.n + col] = acc[i][j];
                }
            }
        }
    } else {
        float *c = g.c + z * g.stride_c;
#pragma unroll
        for (int i = 0; i < TM; i++) {
            int r = row0 + tileRow<BM, TM>(ty, i);
            if (r >= g.m) {
                continue;
            }
#pragma unroll
            for (int j = 0; j < TN; j++) {
                int col = col0 + tileRow<BN, TN>(tx, j);
                if (col >= g.n) {
                    continue;
                }
                float *p = c + (long long)r * g.ldc + col;
                float v = g.alpha * acc[i][j];
                if (g.beta != 0.0f) {
                    v = fmaf(g.beta, *p, v);
                }
                *p = v;
            }
        }
    }
}

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
                    v = fmaxf(v, 0.0f);
                }
                c.y[(img * c.cout + oc) * pixels + pix] = v;
            }
        }
    }
}

// gemmReduceKernel finishes a split-K SGEMM of gz products: C = alpha ·
// (the sum of the parts, in order) + beta · C.
__global__ void gemmReduceKernel(LanesGemm g, int gz) {
    const long long mn = (long long)g.m * g.n, total = mn * gz;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
        const long long z = i / mn, e = i % mn;
        const float *part = g.partial + z * g.splits * mn + e;
        float s = 0.0f;
        for (int sp = 0; sp < g.splits; sp++) {
            s += part[sp * mn];
        }
        float *p = g.c + z * g.stride_c + (e / g.n) * g.ldc + e % g.n;
        float v = g.alpha * s;
        if (g.beta != 0.0f) {
            v = fmaf(g.beta, *p, v);
        }
        *p = v;
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
            v = fmaxf(v, 0.0f);
        }
        c.y[((col / pixels) * c.cout + oc) * pixels + col % pixels] = v;
    }
}

__global__ void biasActKernel(float *y, const float *x, const float *bias, long long n, int channels, long long inner, int act) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float v = x[i];
        if (bias) {
            v += bias[(i / inner) % channels];
        }
        if (act == 1) {
            v = fmaxf(v, 0.0f);
        }
        y[i] = v;
    }
}

__global__ void binaryKernel(int op, float *y, const float *a, const float *b, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        y[i] = op == 0 ? a[i] + b[i] : a[i] * b[i];
    }
}

constexpr int SOFTMAX_THREADS = 256;

// blockReduce combines the block's values v with f (max or sum) through
// shared memory; every thread gets the result.
template <class F>
__device__ __forceinline__ float blockReduce(float *s, float v, F f) {
    const int t = threadIdx.x;
    s[t] = v;
    __syncthreads();
    for (int h = SOFTMAX_THREADS / 2; h > 0; h /= 2) {
        if (t < h) {
            s[t] = f(s[t], s[t + h]);
        }
        __syncthreads();
    }
    float r = s[0];
    __syncthreads(); // s is reused by the next reduction
    return r;
}

struct MaxOp {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
    __device__ float operator()(float a, float b) const { return a + b; }
};

// One block per row: y = exp(x - max) / Σ exp(x - max).
__global__ void __launch_bounds__(SOFTMAX_THREADS) softmaxRowsKernel(float *y, const float *x, int cols) {
    __shared__ float s[SOFTMAX_THREADS];
    const float *xr = x + (long long)blockIdx.x * cols;
    float *yr = y + (long long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < cols; i += SOFTMAX_THREADS) {
        m = fmaxf(m, xr[i]);
    }
    m = blockReduce(s, m, MaxOp{});
    float sum = 0.0f;
    for (int i = threadIdx.x; i < cols; i += SOFTMAX_THREADS) {
        sum += expf(xr[i] - m);
    }
    sum = blockReduce(s, sum, SumOp{});
    const float inv = 1.0f / sum;
    for (int i = threadIdx.x; i < cols; i += SOFTMAX_THREADS) {
        yr[i] = expf(xr[i] - m) * inv;
    }
}

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

// launch queues kernel k and returns cudaGetLastError().
template <class... P, class... A>
int launch(void (*k)(P...), dim3 grid, dim3 block, void *stream, A... args) {
#ifdef LANES_EMULATE
    emu::run(grid, block, [&] { k(args...); });
    return 0;
#else
    k<<<grid, block, 0, (cudaStream_t)stream>>>(args...);
    return (int)cudaGetLastError();
#endif
}

// gridFor is the grid of a grid-stride loop over n elements.
dim3 gridFor(long long n, int threads) {
    long long b = (n + threads - 1) / threads;
    if (b > 65535) {
        b = 65535;
    }
    if (b < 1) {
        b = 1;
    }
    return dim3((unsigned)b);
}

constexpr int ELEMENTWISE_THREADS = 256;
constexpr int ERR_INVALID_VALUE = 1; // cudaErrorInvalidValue

// launchTiles queues one tile configuration's kernel over grid (z: the
// batch or the groups): whole, or with splits > 1 the split-K form over
// splits times the grid's z, then reduce (with extra) over the outputs.
// split is null for a configuration that planTiles never splits.
template <class P, class... R>
int launchTiles(void *stream, const P &p, dim3 grid, void (*whole)(P), void (*split)(P), long long outputs,
                void (*reduce)(P, R...), R... extra) {
    if (p.splits <= 1) {
        return launch(whole, grid, dim3(256), stream, p);
    }
    if (split == nullptr || p.partial == nullptr) {
        return ERR_INVALID_VALUE;
    }
    grid.z *= p.splits;
    if (int err = launch(split, grid, dim3(256), stream, p); err != 0) {
        return err;
    }
    return launch(reduce, gridFor(outputs, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, p, extra...);
}

} // namespace

// The tile configurations were chosen with cudaplugin/tune on an H100
// (bench/results/gpu-h100/tune.txt): 16-deep slices pay for SGEMM at both tile
// sizes; the convolution's large tile keeps 8-deep slices, whose gathers
// fit its registers better. Only the small tile has a split-K form: the
// large one is planned only for grids that fill the device.
extern "C" int lanes_sgemm(void *stream, int cfg, const LanesGemm *g, int gx, int gy, int gz) {
    const dim3 grid(gx, gy, gz);
    const long long outputs = (long long)g->m * g->n * gz;
    using K = void (*)(LanesGemm);
    switch (cfg) {
    case LANES_TILE_128:
        return launchTiles(stream, *g, grid, sgemmKernel<128, 128, 8, 8, 16, false>, K(nullptr), outputs, gemmReduceKernel, gz);
    case LANES_TILE_64:
        return launchTiles(stream, *g, grid, sgemmKernel<64, 64, 4, 4, 16, false>, sgemmKernel<64, 64, 4, 4, 16, true>, outputs,
                           gemmReduceKernel, gz);
    }
    return ERR_INVALID_VALUE;
}

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

extern "C" int lanes_bias_act(void *stream, float *y, const float *x, const float *bias, long long n, int channels, long long inner, int act) {
    if (n <= 0) {
        return 0;
    }
    return launch(biasActKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, y, x, bias, n, channels, inner, act);
}

extern "C" int lanes_binary(void *stream, int op, float *y, const float *a, const float *b, long long n) {
    if (n <= 0) {
        return 0;
    }
    return launch(binaryKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, op, y, a, b, n);
}

extern "C" int lanes_softmax_rows(void *stream, float *y, const float *x, long long rows, int cols) {
    if (rows <= 0 || cols <= 0) {
        return 0;
    }
    if (rows > 0x7fffffffLL) {
        return ERR_INVALID_VALUE;
    }
    return launch(softmaxRowsKernel, dim3((unsigned)rows), dim3(SOFTMAX_THREADS), stream, y, x, cols);
}

extern "C" int lanes_pool2d(void *stream, int kind, const LanesPool *p, float *y, float *idx, const float *x) {
    long long n = p->planes * p->oh * p->ow;
    if (n <= 0) {
        return 0;
    }
    return launch(pool2dKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, kind, *p, y, idx, x);
}

extern "C" int lanes_gather(void *stream, float *y, const float *x, const LanesGather *g) {
    if (g->n <= 0) {
        return 0;
    }
    if (g->dims < 1 || g->dims > LANES_GATHER_DIMS) {
        return ERR_INVALID_VALUE;
    }
    return launch(gatherKernel, gridFor(g->n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, y, x, *g);
}
