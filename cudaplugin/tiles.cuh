// tiles.cuh: the main loop that SGEMM (gemm.cu) and Conv2D (conv.cu)
// share.
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
// A grid too small to fill the device can split k (split-K): each block
// sums one part into a workspace, and a second kernel adds the parts in
// order (so results do not depend on timing).
#ifndef LANES_TILES_CUH
#define LANES_TILES_CUH

#include "common.cuh"

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

#endif
