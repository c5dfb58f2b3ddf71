// loss.cu: the losses (tensor.LossKernels). CrossEntropy's fused case
// (one block per row of the logits: the row's softmax, its loss, its
// gradient); the pointwise losses (a grid of blocks over the elements,
// every operand strided, the loss and gradient in one pass); the class
// losses with their options (a thread per position over contiguous
// operands: the terms and weights, their sums, then the gradient, which
// needs the mean's divisor). Partial sums (double) are added in a fixed
// order by one block, so the loss is the same at every run.

#include "common.cuh"

namespace {

constexpr int LOSS_BLOCKS = 1024; // the most partial sums of lanes_point_loss

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

// pointTerm returns the term of the pointwise loss p.kind (not fused) of
// x and t, weight w, and sets *d to its derivative with respect to x, in
// double as package tensor's CPU code (losscpu.go: pointTerms.term).
__device__ double pointTerm(const LanesPointLoss &p, double x, double t, double w, double *d) {
    const double z = x - t;
    const double sz = z > 0 ? 1.0 : z < 0 ? -1.0 : z;
    switch (p.kind) {
    case 0: // MSE
        *d = 2 * z;
        return z * z;
    case 1: // L1
        *d = sz;
        return fabs(z);
    case 2: { // SmoothL1
        const double beta = p.arg;
        if (fabs(z) < beta) {
            *d = z / beta;
            return 0.5 * z * z / beta;
        }
        *d = sz;
        return fabs(z) - 0.5 * beta;
    }
    case 3: { // Huber
        const double delta = p.arg;
        if (fabs(z) < delta) {
            *d = z;
            return 0.5 * z * z;
        }
        *d = delta * sz;
        return delta * (fabs(z) - 0.5 * delta);
    }
    case 4: // KLDiv
        if (p.log_target) {
            const double e = exp(t);
            *d = -e;
            return e * (t - x);
        }
        *d = -t;
        return (t != 0 ? t * log(t) : 0.0) - t * x;
    case 5: { // BCE
        const double lx = fmax(log(x), -100.0), l1x = fmax(log1p(-x), -100.0);
        *d = w * (x - t) / fmax((1 - x) * x, 1e-12);
        return -w * (t * lx + (1 - t) * l1x);
    }
    default: { // BCEWithLogits, w the positive weight
        const double sp = fmax(x, 0.0) + log1p(exp(-fabs(x)));
        const double sg = 1 / (1 + exp(-x));
        *d = -w * t * (1 - sg) + (1 - t) * sg;
        return w * t * (sp - x) + (1 - t) * sp;
    }
    }
}

// pointLossKernel: the terms and gradients of lanes_point_loss; each
// block's sum of terms goes to partial (unless reduction is none).
__global__ void __launch_bounds__(ROW_THREADS) pointLossKernel(LanesPointLoss p) {
    __shared__ double sd[ROW_THREADS];
    double *partial = (double *)p.partial;
    double a = 0;
    for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < p.shape.n; e += (long long)gridDim.x * blockDim.x) {
        const float x = p.pred[offsetOf(p.shape, p.ps, e)], t = p.target[offsetOf(p.shape, p.ts, e)];
        double term;
        float d;
        if (p.fused) { // MSE and BCEWithLogits as before the options: float32
            float ft;
            if (p.kind == 0) {
                const float diff = x - t;
                ft = diff * diff;
                d = 2 * diff * p.scale;
            } else {
                ft = fmaxf(x, 0.0f) - x * t + log1pf(expf(-fabsf(x)));
                d = (1 / (1 + expf(-x)) - t) * p.scale;
            }
            term = (double)ft;
        } else {
            const double w = p.w ? (double)p.w[offsetOf(p.shape, p.ws, e)] : 1.0;
            double dd;
            if (p.kind == 5 && !(x >= 0 && x <= 1)) {
                reportBad(p.err, x);
                term = NAN;
                dd = NAN;
            } else {
                term = pointTerm(p, x, t, w, &dd);
            }
            double g;
            if (p.reduction == 2) {
                g = p.dloss ? (double)p.dloss[offsetOf(p.shape, p.ds, e)] : 1.0;
            } else {
                g = (p.dloss ? (double)p.dloss[0] : 1.0) / p.divisor;
            }
            d = (float)(g * dd);
        }
        if (p.reduction == 2) {
            if (p.loss != nullptr) {
                p.loss[offsetOf(p.shape, p.ls, e)] = (float)term;
            }
        } else {
            a += term;
        }
        if (p.grad != nullptr) {
            p.grad[offsetOf(p.shape, p.gs, e)] = d;
        }
    }
    if (p.reduction != 2) {
        a = blockReduce(sd, a, SumOp<double>{});
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = a;
        }
    }
}

// classNorm sets *m and *ls so that the log-probability of class k of
// sample i at position j of the class loss p is (x_k - m) - ls: the
// row's maximum and log Σ e^(x - m) of the logits in double (as
// losscpu.go's logProbs), or 0 and 0 for log-probabilities.
__device__ void classNorm(const LanesClassLoss &p, long long i, long long j, double *m, double *ls) {
    *m = 0;
    *ls = 0;
    if (!p.logits) {
        return;
    }
    const float *x = p.x + i * p.c * p.s + j;
    double mx = -INFINITY;
    for (long long k = 0; k < p.c; k++) {
        mx = fmax(mx, (double)x[k * p.s]);
    }
    double sum = 0;
    for (long long k = 0; k < p.c; k++) {
        sum += exp((double)x[k * p.s] - mx);
    }
    *m = mx;
    *ls = log(sum);
}

// classCoef is the coefficient a_k of the term -Σ a_k·lp_k at position
// (i, j) of target class y (losscpu.go: classTerms.coef).
__device__ double classCoef(const LanesClassLoss &p, long long k, long long i, long long j, long long y) {
    const double eps = p.eps;
    const double wk = p.w ? (double)p.w[k] : 1.0;
    if (p.soft) {
        const double q = (double)p.target[(i * p.c + k) * p.s + j];
        return wk * ((1 - eps) * q + eps / (double)p.c);
    }
    double a = 0;
    if (k == y) {
        a = (1 - eps) * wk;
    }
    if (eps != 0) {
        a += eps / (double)p.c * wk;
    }
    return a;
}

// classTarget returns the class of the target at position t (-1 for
// probabilities), or -2 when it is ignored, -3 when it is no class (then
// reported in err).
__device__ long long classTarget(const LanesClassLoss &p, long long t) {
    if (p.soft) {
        return -1;
    }
    const float v = p.target[t];
    if (p.ignore && v == p.ign) {
        return -2;
    }
    const double dv = (double)v;
    if (!(dv >= 0 && dv < (double)p.c && dv == floor(dv))) {
        reportBad(p.err, v);
        return -3;
    }
    return (long long)dv;
}

// classTermKernel: per position t (sample t/s, place t%s), term[t] its
// term and wsum[t] its weight in the mean's divisor (0 when ignored; NaN
// for a bad target); for reduction none, loss[t] the term.
__global__ void __launch_bounds__(ROW_THREADS) classTermKernel(LanesClassLoss p) {
    double *term = (double *)p.term, *wsum = (double *)p.wsum;
    const long long np = p.n * p.s;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < np; t += (long long)gridDim.x * blockDim.x) {
        const long long i = t / p.s, j = t % p.s, y = classTarget(p, t);
        double v = 0, w = 0;
        if (y == -3) {
            v = w = NAN;
        } else if (y != -2) {
            w = p.soft ? 1.0 : p.w ? (double)p.w[y] : 1.0;
            double m, ls;
            classNorm(p, i, j, &m, &ls);
            if (p.norm != nullptr) { // for classGradKernel
                ((double *)p.norm)[2 * t] = m;
                ((double *)p.norm)[2 * t + 1] = ls;
            }
            const float *x = p.x + i * p.c * p.s + j;
            for (long long k = 0; k < p.c; k++) {
                const double a = classCoef(p, k, i, j, y);
                if (a != 0) {
                    v -= a * (((double)x[k * p.s] - m) - ls);
                }
            }
        }
        term[t] = v;
        wsum[t] = w;
        if (p.reduction == 2 && p.loss != nullptr) {
            p.loss[t] = (float)v;
        }
    }
}

// classSumKernel (one block): the sums of term and wsum in a fixed
// order; *den the mean's divisor (the weights' sum; 1 for a sum), and
// unless the reduction is none, *loss the terms' sum over it.
__global__ void __launch_bounds__(ROW_THREADS) classSumKernel(LanesClassLoss p) {
    __shared__ double sd[ROW_THREADS];
    const double *term = (const double *)p.term, *wsum = (const double *)p.wsum;
    const long long np = p.n * p.s;
    double a = 0, b = 0;
    for (long long i = threadIdx.x; i < np; i += blockDim.x) {
        a += term[i];
        b += wsum[i];
    }
    a = blockReduce(sd, a, SumOp<double>{});
    b = blockReduce(sd, b, SumOp<double>{});
    if (threadIdx.x == 0) {
        const double den = p.reduction == 0 ? b : 1.0;
        *(double *)p.den = den;
        if (p.reduction != 2 && p.loss != nullptr) {
            *p.loss = (float)(a / den);
        }
    }
}

// classGradKernel: per position, the gradient of its term times its
// factor (dloss, over *den unless the reduction is none): for NLL -a_k,
// for cross entropy (Σ_c a_c)·softmax_k - a_k, softmax_k from the row's
// classNorm that classTermKernel saved in norm; 0 at ignored targets, NaN
// at bad ones.
__global__ void __launch_bounds__(ROW_THREADS) classGradKernel(LanesClassLoss p) {
    const long long np = p.n * p.s;
    for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < np; t += (long long)gridDim.x * blockDim.x) {
        const long long i = t / p.s, j = t % p.s, y = classTarget(p, t);
        float *dx = p.dx + i * p.c * p.s + j;
        if (y == -2 || y == -3) {
            for (long long k = 0; k < p.c; k++) {
                dx[k * p.s] = y == -3 ? NAN : 0.0f;
            }
            continue;
        }
        double g;
        if (p.reduction == 2) {
            g = p.dloss ? (double)p.dloss[t] : 1.0;
        } else {
            g = p.dloss ? (double)p.dloss[0] : 1.0;
            if (p.reduction != 1) {
                g /= *(const double *)p.den;
            }
        }
        double m = 0, ls = 0, sa = 0;
        if (p.logits) {
            m = ((const double *)p.norm)[2 * t];
            ls = ((const double *)p.norm)[2 * t + 1];
        }
        for (long long k = 0; k < p.c; k++) {
            sa += classCoef(p, k, i, j, y);
        }
        const float *x = p.x + i * p.c * p.s + j;
        for (long long k = 0; k < p.c; k++) {
            double d = -classCoef(p, k, i, j, y);
            if (p.logits) {
                d += sa * exp(((double)x[k * p.s] - m) - ls);
            }
            dx[k * p.s] = (float)(g * d);
        }
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

extern "C" int lanes_point_loss(void *stream, const LanesPointLoss *p) {
    if (!validShape(&p->shape) || p->kind < 0 || p->kind > 6 || p->reduction < 0 || p->reduction > 3) {
        return ERR_INVALID_VALUE;
    }
    const long long n = p->shape.n;
    long long blocks = 0;
    if (n > 0) {
        blocks = (n + ROW_THREADS - 1) / ROW_THREADS;
        if (blocks > LOSS_BLOCKS) {
            blocks = LOSS_BLOCKS;
        }
        int e = launch(pointLossKernel, dim3((unsigned)blocks), dim3(ROW_THREADS), stream, *p);
        if (e != 0) {
            return e;
        }
    }
    if (p->reduction == 2 || p->loss == nullptr) {
        return 0;
    }
    return launch(lossMeanKernel, dim3(1), dim3(ROW_THREADS), stream, (const double *)p->partial, blocks, p->divisor, p->loss);
}

extern "C" int lanes_class_loss(void *stream, const LanesClassLoss *p) {
    if (p->n < 0 || p->c < 0 || p->s < 0 || p->reduction < 0 || p->reduction > 2) {
        return ERR_INVALID_VALUE;
    }
    const long long np = p->n * p->s;
    if (np > 0) {
        int e = launch(classTermKernel, gridFor(np, ROW_THREADS), dim3(ROW_THREADS), stream, *p);
        if (e != 0) {
            return e;
        }
    }
    int e = launch(classSumKernel, dim3(1), dim3(ROW_THREADS), stream, *p);
    if (e != 0 || p->dx == nullptr || np == 0) {
        return e;
    }
    return launch(classGradKernel, gridFor(np, ROW_THREADS), dim3(ROW_THREADS), stream, *p);
}
