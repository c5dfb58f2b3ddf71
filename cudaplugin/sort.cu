// sort.cu: the Sort family (tensor.SortKernels): Sort, TopK and ArgSort
// (lanes_sort), Median (lanes_sort with median set), CumSum and CumProd
// (lanes_scan) and CumProd's gradient (lanes_cumprod_backward), each over
// the rows of a LanesReduce (kernels.h): outer the rows, inner the axis.
// Every result is the CPU's bit for bit: the sorts order distinct 64-bit
// keys (the value's order key above the element's position along the
// axis, as tensor's sortRows), so the one order there is is the stable
// one, whatever the sorting network; the scans carry a double running
// value, one thread per line, in the CPU's order. No atomics.

#include "common.cuh"

namespace {

// SORT_THREADS is the block size of the sort: one block per row.
constexpr int SORT_THREADS = 256;

// SORT_SHARED is the most keys a row sorts in shared memory (16 KiB);
// longer rows sort in the scratch buffer, in global memory.
constexpr long long SORT_SHARED = LANES_SORT_SHARED;

// SCAN_THREADS is the block size of the scans: one thread per line.
constexpr int SCAN_THREADS = 128;

// sortKey is tensor's sortKey (the unsigned order of float32 values:
// -0 as +0, every NaN equal and above +Inf), inverted for descending,
// above the position i.
__device__ __forceinline__ unsigned long long sortKey(float v, long long i, int desc) {
    unsigned int k;
    if (v != v) {
        k = 0xFFFFFFFFu;
    } else {
        const unsigned int b = v == 0.0f ? 0u : __float_as_uint(v); // -0 as +0
        k = (b >> 31) ? ~b : (b | 0x80000000u);
    }
    if (desc) {
        k = ~k;
    }
    return ((unsigned long long)k << 32) | (unsigned long long)i;
}

// sortKernel sorts each row of x along the axis (p keys, a power of 2 at
// least n: in shared memory up to SORT_SHARED, else in scratch, p per
// block) and writes the first k positions as
// floats to idx (strides zo, zi) and their values to vals (yo, yi; NULL:
// none); or, median set, the element at position (n-1)/2, or the row's
// first NaN when it holds one, and its position (k unused).
__global__ void __launch_bounds__(SORT_THREADS) sortKernel(LanesReduce r, float *vals, float *idx, const float *x,
                                                             unsigned long long *scratch, long long p, long long k, int desc,
                                                             int median) {
    __shared__ unsigned long long sk[SORT_SHARED];
    const long long n = r.inner.n;
    unsigned long long *a = p <= SORT_SHARED ? sk : scratch + (long long)blockIdx.x * p;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *xr = x + offsetOf(r.outer, r.xo, row);
        for (long long i = threadIdx.x; i < p; i += blockDim.x) {
            a[i] = i < n ? sortKey(xr[offsetOf(r.inner, r.xi, i)], i, desc) : ~0ULL;
        }
        __syncthreads();
        // Bitonic sort of the p keys, ascending.
        for (long long s = 2; s <= p; s <<= 1) {
            for (long long j = s >> 1; j > 0; j >>= 1) {
                for (long long i = threadIdx.x; i < p; i += blockDim.x) {
                    const long long l = i ^ j;
                    if (l > i) {
                        const unsigned long long u = a[i], w = a[l];
                        if ((u > w) == ((i & s) == 0)) {
                            a[i] = w;
                            a[l] = u;
                        }
                    }
                }
                __syncthreads();
            }
        }
        if (median) {
            if (threadIdx.x == 0) {
                long long m = (n - 1) / 2;
                if ((a[n - 1] >> 32) == 0xFFFFFFFFull) { // the first NaN: the first key of the top word
                    long long lo = 0, hi = n - 1;
                    while (lo < hi) {
                        const long long mid = lo + (hi - lo) / 2;
                        if ((a[mid] >> 32) == 0xFFFFFFFFull) {
                            hi = mid;
                        } else {
                            lo = mid + 1;
                        }
                    }
                    m = lo;
                }
                const long long pos = (long long)(unsigned int)a[m];
                vals[offsetOf(r.outer, r.yo, row)] = xr[offsetOf(r.inner, r.xi, pos)];
                idx[offsetOf(r.outer, r.zo, row)] = (float)pos;
            }
        } else {
            float *ir = idx + offsetOf(r.outer, r.zo, row);
            float *vr = vals ? vals + offsetOf(r.outer, r.yo, row) : nullptr;
            for (long long i = threadIdx.x; i < k; i += blockDim.x) {
                const long long pos = (long long)(unsigned int)a[i];
                ir[offsetOf(r.inner, r.zi, i)] = (float)pos;
                if (vr) {
                    vr[offsetOf(r.inner, r.yi, i)] = xr[offsetOf(r.inner, r.xi, pos)];
                }
            }
        }
        __syncthreads(); // a is the next row's
    }
}

// scanKernel sets each line of y to the cumulative sums (prod: products)
// of x's, a double running value rounded once per output.
__global__ void __launch_bounds__(SCAN_THREADS) scanKernel(LanesReduce r, float *y, const float *x, int prod) {
    const long long n = r.inner.n;
    for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x; line < r.outer.n;
         line += (long long)gridDim.x * blockDim.x) {
        const float *xr = x + offsetOf(r.outer, r.xo, line);
        float *yr = y + offsetOf(r.outer, r.yo, line);
        double acc = prod ? 1.0 : 0.0;
        for (long long i = 0; i < n; i++) {
            const double v = (double)xr[offsetOf(r.inner, r.xi, i)];
            acc = prod ? acc * v : acc + v;
            yr[offsetOf(r.inner, r.yi, i)] = (float)acc;
        }
    }
}

// cumProdBackwardKernel sets each line of dx to the gradient of the
// cumulative product of x's given dy's (z), as tensor's cumProdGrad: the
// prefix products in scratch (n doubles per line). Its products of dy are
// __dmul_rn's, never fused into the sums that take them (the CPU rounds
// its products too).
__global__ void __launch_bounds__(SCAN_THREADS) cumProdBackwardKernel(LanesReduce r, float *dx, const float *x,
                                                                        const float *dy, double *scratch) {
    const long long n = r.inner.n;
    for (long long line = (long long)blockIdx.x * blockDim.x + threadIdx.x; line < r.outer.n;
         line += (long long)gridDim.x * blockDim.x) {
        const float *xr = x + offsetOf(r.outer, r.xo, line);
        const float *gr = dy + offsetOf(r.outer, r.zo, line);
        float *dr = dx + offsetOf(r.outer, r.yo, line);
        double *y = scratch + line * n;
#define X(i) xr[offsetOf(r.inner, r.xi, (i))]
#define G(i) gr[offsetOf(r.inner, r.zi, (i))]
#define D(i) dr[offsetOf(r.inner, r.yi, (i))]
        long long z = n;
        for (long long i = 0; i < n; i++) {
            if (X(i) == 0.0f) {
                z = i;
                break;
            }
        }
        double p = 1.0;
        for (long long i = 0; i < z; i++) {
            p *= (double)X(i);
            y[i] = p;
        }
        double s = 0.0;
        for (long long q = z - 1; q >= 0; q--) {
            s += __dmul_rn((double)G(q), y[q]);
            D(q) = (float)(s / (double)X(q));
        }
        if (z == n) {
            continue;
        }
        double q = z > 0 ? y[z - 1] : 1.0;
        double acc = 0.0;
        for (long long i = z; i < n; i++) {
            if (i > z) {
                q *= (double)X(i);
            }
            acc += __dmul_rn((double)G(i), q);
        }
        D(z) = (float)acc;
        for (long long i = z + 1; i < n; i++) {
            D(i) = 0.0f;
        }
#undef X
#undef G
#undef D
    }
}

} // namespace

extern "C" int lanes_sort(void *stream, const LanesReduce *r, float *vals, float *idx, const float *x, unsigned long long *scratch,
                          long long blocks, long long k, int desc, int median) {
    const long long n = r->inner.n;
    if (!validRows(r) || !idx || (median && !vals) || blocks < 1 || n > (1LL << 24) || k < 0 || k > n) {
        return ERR_INVALID_VALUE;
    }
    const long long p = lanes_sort_pad(n);
    if (p > SORT_SHARED && !scratch) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0 || n <= 0 || (!median && k == 0)) {
        return 0;
    }
    return launch(sortKernel, dim3((unsigned)blocks), dim3(SORT_THREADS), stream, *r, vals, idx, x, scratch, p, k, desc, median);
}

extern "C" int lanes_scan(void *stream, const LanesReduce *r, float *y, const float *x, int prod) {
    if (!validRows(r)) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0 || r->inner.n <= 0) {
        return 0;
    }
    return launch(scanKernel, gridFor(r->outer.n, SCAN_THREADS), dim3(SCAN_THREADS), stream, *r, y, x, prod);
}

extern "C" int lanes_cumprod_backward(void *stream, const LanesReduce *r, float *dx, const float *x, const float *dy, double *scratch) {
    if (!validRows(r)) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0 || r->inner.n <= 0) {
        return 0;
    }
    return launch(cumProdBackwardKernel, gridFor(r->outer.n, SCAN_THREADS), dim3(SCAN_THREADS), stream, *r, dx, x, dy, scratch);
}
