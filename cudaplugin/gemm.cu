// gemm.cu: SGEMM, C = alpha·op(A)·op(B) + beta·C for a batch of
// matrices (tiles.cuh's main loop), and its split-K reduction.

#include "tiles.cuh"

namespace {

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

} // namespace

// The tile configurations were chosen with cudaplugin/tune on an H100
// (bench/results/gpu-h100/tune.txt): 16-deep slices pay for SGEMM at both tile
// sizes. Only the small tile has a split-K form: the large one is planned
// only for grids that fill the device.
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
