// reduce.cu: reductions over any axes (Sum, Max, Min, Mean, Var, Std,
// LogSumExp, Prod, Norm for p = 1, 2, Inf and (normKernel) any p, Any, All, and SumTo's
// accumulating sum), ArgMax and ArgMin, Softmax
// and LogSoftmax along an axis and their gradients. Every kernel runs
// over the rows of a LanesReduce (kernels.h): one block per row (a
// grid-stride loop over rows), its threads striding over the row's
// elements and combining their partial results in shared memory.

#include "common.cuh"

namespace {

// Reduce ops: tensor.ReduceOp's values.
enum { RED_SUM = 1, RED_MAX, RED_MIN, RED_MEAN, RED_VAR, RED_STD, RED_LOGSUMEXP, RED_PROD, RED_NORM1, RED_NORM2, RED_NORM_INF, RED_ANY, RED_ALL };

template <class T>
struct MulOp {
    __device__ T operator()(T a, T b) const { return a * b; }
};

// reduceKernel sets y (or adds to it, accumulate) the reduction op of
// each row of x. Mean, Var, Std, Prod and the 1- and 2-norms accumulate
// in double (Var and Std: the corrected two-pass formula about the mean);
// the others in float.
__global__ void __launch_bounds__(ROW_THREADS) reduceKernel(LanesReduce r, float *y, const float *x, int op, int ddof,
                                                               int accumulate) {
    __shared__ float sf[ROW_THREADS];
    __shared__ double sd[ROW_THREADS];
    const long long n = r.inner.n;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *xr = x + offsetOf(r.outer, r.xo, row);
        float res = 0;
        switch (op) {
        case RED_SUM: {
            float a = 0;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                a += xr[offsetOf(r.inner, r.xi, i)];
            }
            res = blockReduce(sf, a, SumOp<float>{});
            break;
        }
        case RED_MAX:
        case RED_MIN: {
            float a = op == RED_MAX ? -INFINITY : INFINITY;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const float v = xr[offsetOf(r.inner, r.xi, i)];
                a = op == RED_MAX ? maxOf(a, v) : minOf(a, v);
            }
            res = op == RED_MAX ? blockReduce(sf, a, MaxOp{}) : blockReduce(sf, a, MinOp{});
            break;
        }
        case RED_MEAN:
        case RED_VAR:
        case RED_STD: {
            double mean = rowMean(sd, r.inner, r.xi, xr);
            if (op == RED_MEAN) {
                res = (float)mean;
                break;
            }
            const double m2 = rowDeviations(sd, r.inner, r.xi, xr, mean);
            double v = n - ddof > 0 ? m2 / (double)(n - ddof) : NAN;
            res = (float)(op == RED_STD ? sqrt(v) : v);
            break;
        }
        case RED_PROD:
        case RED_NORM1:
        case RED_NORM2: { // in double, as tensor's foldaxes.go
            double a = op == RED_PROD ? 1 : 0;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const double v = (double)xr[offsetOf(r.inner, r.xi, i)];
                a = op == RED_PROD ? a * v : op == RED_NORM1 ? a + fabs(v) : a + v * v;
            }
            a = op == RED_PROD ? blockReduce(sd, a, MulOp<double>{}) : blockReduce(sd, a, SumOp<double>{});
            res = (float)(op == RED_NORM2 ? sqrt(a) : a);
            break;
        }
        case RED_NORM_INF: { // max|x|, NaN if any is
            float a = 0;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                a = maxOf(a, fabsf(xr[offsetOf(r.inner, r.xi, i)]));
            }
            res = blockReduce(sf, a, MaxOp{});
            break;
        }
        case RED_ANY:
        case RED_ALL: { // 1 or 0, NaN nonzero
            float a = op == RED_ANY ? 0 : 1;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const float v = xr[offsetOf(r.inner, r.xi, i)];
                a = op == RED_ANY ? (v != 0 ? 1 : a) : (v == 0 ? 0 : a);
            }
            res = op == RED_ANY ? blockReduce(sf, a, MaxOp{}) : blockReduce(sf, a, MinOp{});
            break;
        }
        case RED_LOGSUMEXP: {
            float m = rowMax(sf, r.inner, r.xi, xr);
            if (m == INFINITY || m == -INFINITY) {
                m = 0;
            }
            float a = 0;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                a += expf(xr[offsetOf(r.inner, r.xi, i)] - m);
            }
            res = logf(blockReduce(sf, a, SumOp<float>{})) + m;
            break;
        }
        }
        if (threadIdx.x == 0) {
            float *yr = y + offsetOf(r.outer, r.yo, row);
            *yr = accumulate ? *yr + res : res;
        }
    }
}

// MaxNum and MinNum fold doubles that are not NaN (common.cuh's MaxOp
// and MinOp are float's, NaN-propagating).
template <class T>
struct MaxNum {
    __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};
template <class T>
struct MinNum {
    __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};

// normKernel sets y to the p-norm of each row of x, as tensor's
// vectorNorm, in double: the count of nonzero elements (NaN included) for
// p = 0; NaN when an element is NaN; max|x| for +Inf, min|x| for -Inf;
// else m·(Σ(|x|/m)^p)^(1/p), m = max|x| (min|x| for p < 0, whose terms
// grow as |x| shrinks; 0 when p < 0 and an element is 0), m itself when
// it is 0 or Inf.
__global__ void __launch_bounds__(ROW_THREADS) normKernel(LanesReduce r, float *y, const float *x, double p) {
    __shared__ double sd[ROW_THREADS];
    const long long n = r.inner.n;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *xr = x + offsetOf(r.outer, r.xo, row);
        double hi = 0, lo = INFINITY, nan = 0, nonzero = 0;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const float v = xr[offsetOf(r.inner, r.xi, i)];
            const double a = fabs((double)v);
            if (a != a) {
                nan = 1;
            } else {
                hi = a > hi ? a : hi;
                lo = a < lo ? a : lo;
            }
            nonzero += v != 0 ? 1 : 0;
        }
        // Only the folds p needs (p is the same in every thread, so are
        // the block's synchronizations).
        if (p == 0) {
            nonzero = blockReduce(sd, nonzero, SumOp<double>{});
        } else {
            nan = blockReduce(sd, nan, MaxNum<double>{});
            if (p > 0) {
                hi = blockReduce(sd, hi, MaxNum<double>{});
            } else {
                lo = blockReduce(sd, lo, MinNum<double>{});
            }
        }
        double res;
        if (p == 0) {
            res = nonzero;
        } else if (nan != 0) {
            res = NAN;
        } else if (p == INFINITY) {
            res = hi;
        } else if (p == -INFINITY) {
            res = lo;
        } else if (p < 0 && lo == 0) {
            res = 0;
        } else {
            const double m = p < 0 ? lo : hi;
            if (m == 0 || m == INFINITY) {
                res = m;
            } else {
                double s = 0;
                for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                    s += pow(fabs((double)xr[offsetOf(r.inner, r.xi, i)]) / m, p);
                }
                s = blockReduce(sd, s, SumOp<double>{});
                res = m * pow(s, 1 / p);
            }
        }
        if (threadIdx.x == 0) {
            y[offsetOf(r.outer, r.yo, row)] = (float)res;
        }
        __syncthreads();
    }
}

// argKernel sets y to the index (a float) of the first maximum (op 1) or
// minimum (op 2) of each row of x, or of its first NaN.
__global__ void __launch_bounds__(ROW_THREADS) argKernel(LanesReduce r, float *y, const float *x, int op) {
    __shared__ float sv[ROW_THREADS];
    __shared__ long long si[ROW_THREADS];
    const int t = threadIdx.x;
    // better reports whether (v, j) replaces (a, i).
    auto better = [op](float v, long long j, float a, long long i) {
        if (a != a) {
            return v != v && j < i;
        }
        if (v != v) {
            return true;
        }
        if (v == a) {
            return j < i;
        }
        return op == 1 ? v > a : v < a;
    };
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *xr = x + offsetOf(r.outer, r.xo, row);
        float a = op == 1 ? -INFINITY : INFINITY;
        long long ai = 0x7fffffffffffffffLL;
        for (long long i = t; i < r.inner.n; i += blockDim.x) {
            const float v = xr[offsetOf(r.inner, r.xi, i)];
            if (better(v, i, a, ai)) {
                ai = i;
                a = v;
            }
        }
        sv[t] = a;
        si[t] = ai;
        __syncthreads();
        for (int h = blockDim.x / 2; h > 0; h /= 2) {
            if (t < h && better(sv[t + h], si[t + h], sv[t], si[t])) {
                sv[t] = sv[t + h];
                si[t] = si[t + h];
            }
            __syncthreads();
        }
        if (t == 0) {
            y[offsetOf(r.outer, r.yo, row)] = (float)si[0];
        }
        __syncthreads();
    }
}

// softmaxKernel sets each row of y to the softmax of x's (log: the log
// softmax): e^(x - max) / Σ e^(x - max), or x - max - log Σ e^(x - max).
// y may be x (the very same view): each element is read by the thread
// that writes it, after the row's sums.
__global__ void __launch_bounds__(ROW_THREADS) softmaxKernel(LanesReduce r, float *y, const float *x, int log) {
    __shared__ float s[ROW_THREADS];
    const long long n = r.inner.n;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *xr = x + offsetOf(r.outer, r.xo, row);
        float *yr = y + offsetOf(r.outer, r.yo, row);
        const float m = rowMax(s, r.inner, r.xi, xr);
        float sum = 0.0f;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            sum += expf(xr[offsetOf(r.inner, r.xi, i)] - m);
        }
        sum = blockReduce(s, sum, SumOp<float>{});
        if (log) {
            const double sub = (double)m + ::log((double)sum);
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                yr[offsetOf(r.inner, r.yi, i)] = (float)((double)xr[offsetOf(r.inner, r.xi, i)] - sub);
            }
        } else {
            const float inv = 1.0f / sum;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                yr[offsetOf(r.inner, r.yi, i)] = expf(xr[offsetOf(r.inner, r.xi, i)] - m) * inv;
            }
        }
    }
}

// softmaxBackwardKernel sets each row of dx (y's strides) from the
// softmax's output (x's) and its gradient dy (z's): dx = y·(dy - Σ dy·y),
// or for the log softmax dy - e^y·Σ dy. dx may be y or dy (the very same
// view).
__global__ void __launch_bounds__(ROW_THREADS) softmaxBackwardKernel(LanesReduce r, float *dx, const float *y,
                                                                        const float *dy, int log) {
    __shared__ float s[ROW_THREADS];
    const long long n = r.inner.n;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *yr = y + offsetOf(r.outer, r.xo, row);
        const float *dyr = dy + offsetOf(r.outer, r.zo, row);
        float *dxr = dx + offsetOf(r.outer, r.yo, row);
        float sum = 0.0f;
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const float g = dyr[offsetOf(r.inner, r.zi, i)];
            sum += log ? g : g * yr[offsetOf(r.inner, r.xi, i)];
        }
        sum = blockReduce(s, sum, SumOp<float>{});
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const float g = dyr[offsetOf(r.inner, r.zi, i)];
            const float v = yr[offsetOf(r.inner, r.xi, i)];
            dxr[offsetOf(r.inner, r.yi, i)] = log ? g - expf(v) * sum : v * (g - sum);
        }
    }
}

inline dim3 rowGrid(const LanesReduce *r) { return gridFor(r->outer.n, 1); }

} // namespace

extern "C" int lanes_reduce(void *stream, int op, const LanesReduce *r, float *y, const float *x, int ddof, int accumulate) {
    if (!validRows(r) || op < RED_SUM || op > RED_ALL) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0) {
        return 0;
    }
    return launch(reduceKernel, rowGrid(r), dim3(rowThreads(r->inner.n)), stream, *r, y, x, op, ddof, accumulate);
}

extern "C" int lanes_reduce_norm(void *stream, const LanesReduce *r, float *y, const float *x, double p) {
    if (!validRows(r) || p != p) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0) {
        return 0;
    }
    return launch(normKernel, rowGrid(r), dim3(rowThreads(r->inner.n)), stream, *r, y, x, p);
}

extern "C" int lanes_argreduce(void *stream, int op, const LanesReduce *r, float *y, const float *x) {
    if (!validRows(r) || (op != 1 && op != 2)) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0) {
        return 0;
    }
    return launch(argKernel, rowGrid(r), dim3(rowThreads(r->inner.n)), stream, *r, y, x, op);
}

extern "C" int lanes_softmax(void *stream, int log, const LanesReduce *r, float *y, const float *x) {
    if (!validRows(r)) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0 || r->inner.n <= 0) {
        return 0;
    }
    return launch(softmaxKernel, rowGrid(r), dim3(rowThreads(r->inner.n)), stream, *r, y, x, log);
}

extern "C" int lanes_softmax_backward(void *stream, int log, const LanesReduce *r, float *dx, const float *y, const float *dy) {
    if (!validRows(r)) {
        return ERR_INVALID_VALUE;
    }
    if (r->outer.n <= 0 || r->inner.n <= 0) {
        return 0;
    }
    return launch(softmaxBackwardKernel, rowGrid(r), dim3(rowThreads(r->inner.n)), stream, *r, dx, y, dy, log);
}
