// loss.cu: the fused losses, each a loss and its gradient in one pass:
// CrossEntropy (one block per row of the logits: the row's softmax, its
// loss, its gradient), MSE and BCEWithLogits (a grid of blocks over the
// elements, every operand strided); the blocks' partial sums (double)
// are then added in a fixed order by one block (lossMeanKernel), so the
// loss is the same at every run.

#include "common.cuh"

namespace {

constexpr int LOSS_BLOCKS = 1024; // the most partial sums of MSE and BCEWithLogits

// crossEntropyKernel: per row of logits (x's strides in r; dlogits y's,
// when not NULL), loss[row] = logsumexp(row) - row[label] and dlogits =
// (softmax(row) - onehot(label))·scale. A label that is not a class is
// reported in err and gives the row NaN.
__global__ void __launch_bounds__(ROW_THREADS) crossEntropyKernel(LanesReduce r, float *dlogits, const float *logits,
                                                                   const float *labels, long long ls, double *rowLoss,
                                                                   float scale, float *err) {
    __shared__ double sd[ROW_THREADS];
    __shared__ float sf[ROW_THREADS];
    const long long c = r.inner.n;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *x = logits + offsetOf(r.outer, r.xo, row);
        float *g = dlogits ? dlogits + offsetOf(r.outer, r.yo, row) : nullptr;
        const float lf = labels[row * ls];
        const double lv = (double)lf;
        const bool ok = lv >= 0 && lv < (double)c && lv == floor(lv);
        const long long label = ok ? (long long)lv : -1;
        const float m = rowMax(sf, r.inner, r.xi, x);
        double sum = 0;
        for (long long i = threadIdx.x; i < c; i += blockDim.x) {
            sum += (double)expf(x[offsetOf(r.inner, r.xi, i)] - m);
        }
        sum = blockReduce(sd, sum, SumOp<double>{});
        if (threadIdx.x == 0) {
            if (ok) {
                rowLoss[row] = (double)m + log(sum) - (double)x[offsetOf(r.inner, r.xi, label)];
            } else {
                rowLoss[row] = NAN;
                reportBad(err, lf);
            }
        }
        if (g != nullptr) {
            const float inv = (float)(1 / sum);
            for (long long i = threadIdx.x; i < c; i += blockDim.x) {
                const float p = expf(x[offsetOf(r.inner, r.xi, i)] - m) * inv;
                g[offsetOf(r.inner, r.yi, i)] = ok ? (p - (i == label ? 1.0f : 0.0f)) * scale : NAN;
            }
        }
    }
}

// pointwiseLossKernel: kind 0 MSE, (p - t)², gradient 2(p - t)·scale;
// kind 1 BCEWithLogits, max(p, 0) - p·t + log(1 + e^-|p|), gradient
// (sigmoid(p) - t)·scale. Each block's sum of terms goes to partial.
__global__ void __launch_bounds__(ROW_THREADS) pointwiseLossKernel(int kind, LanesShape shape, float *grad, LanesStrides gs,
                                                                    const float *pred, LanesStrides ps, const float *target,
                                                                    LanesStrides ts, float scale, double *partial) {
    __shared__ double sd[ROW_THREADS];
    double a = 0;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < shape.n; e += (long long)gridDim.x * blockDim.x) {
        const float p = pred[offsetOf(shape, ps, e)], t = target[offsetOf(shape, ts, e)];
        float term, d;
        if (kind == 0) {
            const float diff = p - t;
            term = diff * diff;
            d = 2 * diff * scale;
        } else {
            term = fmaxf(p, 0.0f) - p * t + log1pf(expf(-fabsf(p)));
            d = (1 / (1 + expf(-p)) - t) * scale;
        }
        a += (double)term;
        if (grad != nullptr) {
            grad[offsetOf(shape, gs, e)] = d;
        }
    }
    a = blockReduce(sd, a, SumOp<double>{});
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = a;
    }
}

// lossMeanKernel sets *loss to the sum of the count partial sums over
// divisor, adding them in a fixed order.
__global__ void __launch_bounds__(ROW_THREADS) lossMeanKernel(const double *partial, long long count, double divisor, float *loss) {
    __shared__ double sd[ROW_THREADS];
    double a = 0;
    for (long long i = threadIdx.x; i < count; i += blockDim.x) {
        a += partial[i];
    }
    a = blockReduce(sd, a, SumOp<double>{});
    if (threadIdx.x == 0) {
        *loss = (float)(a / divisor);
    }
}

} // namespace

extern "C" int lanes_cross_entropy(void *stream, const LanesReduce *r, float *dlogits, const float *logits, const float *labels,
                                   long long label_stride, double *row_loss, float *loss, float *err) {
    if (!validRows(r)) {
        return ERR_INVALID_VALUE;
    }
    const long long n = r->outer.n;
    if (n > 0) {
        int e = launch(crossEntropyKernel, gridFor(n, 1), dim3(rowThreads(r->inner.n)), stream, *r, dlogits, logits, labels,
                       label_stride, row_loss, (float)(1.0 / (double)n), err);
        if (e != 0) {
            return e;
        }
    }
    return launch(lossMeanKernel, dim3(1), dim3(ROW_THREADS), stream, (const double *)row_loss, n, (double)n, loss);
}

extern "C" int lanes_pointwise_loss(void *stream, int kind, const LanesShape *shape, float *grad, const LanesStrides *gs,
                                    const float *pred, const LanesStrides *ps, const float *target, const LanesStrides *ts,
                                    double *partial, float *loss) {
    if (!validShape(shape) || kind < 0 || kind > 1) {
        return ERR_INVALID_VALUE;
    }
    const long long n = shape->n;
    long long blocks = 0;
    if (n > 0) {
        blocks = (n + ROW_THREADS - 1) / ROW_THREADS;
        if (blocks > LOSS_BLOCKS) {
            blocks = LOSS_BLOCKS;
        }
        int e = launch(pointwiseLossKernel, dim3((unsigned)blocks), dim3(ROW_THREADS), stream, kind, *shape, grad, *gs, pred, *ps,
                       target, *ts, (float)(1.0 / (double)n), partial);
        if (e != 0) {
            return e;
        }
    }
    return launch(lossMeanKernel, dim3(1), dim3(ROW_THREADS), stream, (const double *)partial, blocks, (double)n, loss);
}
