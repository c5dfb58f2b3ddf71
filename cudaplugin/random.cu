// random.cu: the Random family's kernel: Philox4x32-10 counter-based
// random numbers (Salmon et al., SC'11; Random123's constants), giving
// the very words, uniforms and dropout masks of package tensor's CPU
// kernels (tensor/random.go), bit for bit.

#include "common.cuh"

namespace {

// philox sets c to Philox4x32-10 of the counter c under the key (k0, k1).
__device__ __forceinline__ void philox(unsigned c[4], unsigned k0, unsigned k1) {
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned long long p0 = 0xD2511F53ull * c[0], p1 = 0xCD9E8D57ull * c[2];
        const unsigned c1 = c[1], c3 = c[3];
        c[0] = (unsigned)(p1 >> 32) ^ c1 ^ k0;
        c[1] = (unsigned)p1;
        c[2] = (unsigned)(p0 >> 32) ^ c3 ^ k1;
        c[3] = (unsigned)p0;
    }
}

// philoxKernel runs over the counter blocks of elements first ...
// first + n - 1 (row-major indices of the op's shape; this launch covers
// shape, whose element i is the op's element first + i), one block of
// four words a thread: element e gets word e mod 4 of block offset +
// ⌊e/4⌋. y is the word's uniform ⌊w/2⁸⌋·2⁻²⁴ (x NULL) or x times 0 where
// ⌊w/2⁸⌋ < thr, else times scale.
__global__ void philoxKernel(LanesShape shape, long long first, float *y, LanesStrides ys, const float *x, LanesStrides xs, unsigned thr,
                             float scale, unsigned long long seed, unsigned long long offset) {
    const long long b0 = first / 4, b1 = (first + shape.n + 3) / 4;
    for (long long b = b0 + blockIdx.x * (long long)blockDim.x + threadIdx.x; b < b1; b += (long long)gridDim.x * blockDim.x) {
        const unsigned long long ctr = offset + (unsigned long long)b;
        unsigned w[4] = {(unsigned)ctr, (unsigned)(ctr >> 32), 0, 0};
        philox(w, (unsigned)seed, (unsigned)(seed >> 32));
        for (int j = 0; j < 4; j++) {
            const long long i = 4 * b + j - first;
            if (i < 0 || i >= shape.n) {
                continue;
            }
            const unsigned u = w[j] >> 8;
            if (x == nullptr) {
                y[offsetOf(shape, ys, i)] = (float)u * (1.0f / 16777216.0f);
            } else {
                y[offsetOf(shape, ys, i)] = x[offsetOf(shape, xs, i)] * (u < thr ? 0.0f : scale);
            }
        }
    }
}

} // namespace

extern "C" int lanes_philox(void *stream, const LanesShape *shape, long long first, float *y, const LanesStrides *ys, const float *x,
                            const LanesStrides *xs, unsigned thr, float scale, unsigned long long seed, unsigned long long offset) {
    if (shape->n <= 0) {
        return 0;
    }
    if (!validShape(shape) || first < 0) {
        return ERR_INVALID_VALUE;
    }
    const LanesStrides none{};
    return launch(philoxKernel, gridFor((shape->n + 3) / 4 + 1, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *shape, first, y, *ys, x,
                  x ? *xs : none, thr, scale, seed, offset);
}
