// norm.cu: BatchNorm, LayerNorm and RMSNorm, forward and backward, over
// the rows of a LanesNorm (kernels.h): a row is a channel of BatchNorm
// (the elements of every image) or a row of LayerNorm or RMSNorm; one
// block per row, its statistics summed in double in shared memory (the
// mean, then the corrected two-pass variance about it; RMSNorm's mean
// square), the running statistics updated by the row's block. RMSNorm's
// element formulas are tensor's CPU ones, operation for operation, in
// double.

#include "common.cuh"

namespace {


// affine returns gamma's (or beta's) entry for row r, element i: per row
// for BatchNorm, per element for LayerNorm; def when there is none.
__device__ __forceinline__ double affine(const float *p, int kind, long long r, long long i, double def) {
    if (p == nullptr) {
        return def;
    }
    return (double)p[kind == LANES_BATCHNORM ? r : i];
}

__global__ void __launch_bounds__(ROW_THREADS) normForwardKernel(LanesNorm p) {
    __shared__ double s[ROW_THREADS];
    const LanesReduce &r = p.r;
    const long long n = r.inner.n;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *xr = p.x + offsetOf(r.outer, r.xo, row);
        float *yr = p.y + offsetOf(r.outer, r.yo, row);
        double mean, invStd;
        if (p.kind == LANES_RMSNORM) {
            double ss = 0;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const double v = (double)xr[offsetOf(r.inner, r.xi, i)];
                ss += v * v;
            }
            invStd = 1 / sqrt(blockReduce(s, ss, SumOp<double>{}) / (double)n + (double)p.eps);
            if (threadIdx.x == 0) {
                p.inv_std[row] = (float)invStd;
            }
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const double v = (double)xr[offsetOf(r.inner, r.xi, i)] * invStd;
                yr[offsetOf(r.inner, r.yi, i)] = (float)(p.gamma == nullptr ? v : v * (double)p.gamma[i]);
            }
            continue;
        }
        if (p.training) {
            mean = rowMean(s, r.inner, r.xi, xr);
            double var = rowDeviations(s, r.inner, r.xi, xr, mean) / (double)n;
            var = var > 0 ? var : 0;
            invStd = 1 / sqrt(var + (double)p.eps);
            if (threadIdx.x == 0 && p.run_mean != nullptr) {
                const double m = p.momentum;
                p.run_mean[row] = (float)((1 - m) * (double)p.run_mean[row] + m * mean);
                p.run_var[row] = (float)((1 - m) * (double)p.run_var[row] + m * var * (double)n / (double)(n - 1));
            }
        } else {
            mean = (double)p.run_mean[row];
            invStd = 1 / sqrt((double)p.run_var[row] + (double)p.eps);
        }
        if (threadIdx.x == 0) {
            p.mean[row] = (float)mean;
            p.inv_std[row] = (float)invStd;
        }
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            const double g = affine(p.gamma, p.kind, row, i, 1), b = affine(p.beta, p.kind, row, i, 0);
            const double v = ((double)xr[offsetOf(r.inner, r.xi, i)] - mean) * invStd;
            yr[offsetOf(r.inner, r.yi, i)] = (float)(v * g + b);
        }
        __syncthreads(); // the running statistics' reads before the next row's writes
    }
}

// normBackwardKernel sets dx (y's strides) from x and dy (z's strides)
// and the forward's statistics; BatchNorm also sets dgamma and dbeta.
__global__ void __launch_bounds__(ROW_THREADS) normBackwardKernel(LanesNorm p) {
    __shared__ double s[ROW_THREADS];
    const LanesReduce &r = p.r;
    const long long n = r.inner.n;
    for (long long row = blockIdx.x; row < r.outer.n; row += gridDim.x) {
        const float *xr = p.x + offsetOf(r.outer, r.xo, row);
        const float *dyr = p.dy + offsetOf(r.outer, r.zo, row);
        float *dxr = p.y + offsetOf(r.outer, r.yo, row);
        if (p.kind == LANES_RMSNORM) { // dx = r·(g - x·r·mean(g·x·r)), g = dy·gamma
            const double ri = p.inv_std[row];
            double m = 0;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const double g = (double)dyr[offsetOf(r.inner, r.zi, i)] * affine(p.gamma, p.kind, row, i, 1);
                m += g * (double)xr[offsetOf(r.inner, r.xi, i)] * ri;
            }
            m = blockReduce(s, m, SumOp<double>{}) / (double)n;
            for (long long i = threadIdx.x; i < n; i += blockDim.x) {
                const double g = (double)dyr[offsetOf(r.inner, r.zi, i)] * affine(p.gamma, p.kind, row, i, 1);
                dxr[offsetOf(r.inner, r.yi, i)] = (float)(ri * (g - (double)xr[offsetOf(r.inner, r.xi, i)] * ri * m));
            }
            continue;
        }
        const double mean = p.mean[row], invStd = p.inv_std[row];
        double sg = 0, sgx = 0; // Σ g and Σ g·(x - mean), g = dy (BatchNorm) or dy·gamma (LayerNorm)
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            double g = (double)dyr[offsetOf(r.inner, r.zi, i)];
            if (p.kind == LANES_LAYERNORM) {
                g *= affine(p.gamma, p.kind, row, i, 1);
            }
            sg += g;
            sgx += g * ((double)xr[offsetOf(r.inner, r.xi, i)] - mean);
        }
        sg = blockReduce(s, sg, SumOp<double>{});
        sgx = blockReduce(s, sgx, SumOp<double>{});
        double a, b, k;
        if (p.kind == LANES_BATCHNORM) {
            if (threadIdx.x == 0) {
                if (p.dgamma != nullptr) {
                    p.dgamma[row] = (float)(sgx * invStd);
                }
                if (p.dbeta != nullptr) {
                    p.dbeta[row] = (float)sg;
                }
            }
            a = affine(p.gamma, p.kind, row, 0, 1) * invStd;
            b = p.training ? -a * invStd * invStd * sgx / (double)n : 0;
            k = p.training ? -a * sg / (double)n : 0;
        } else { // dx = (g - mean(g·x̂)·x̂ - mean(g))·invStd
            a = invStd;
            b = -invStd * invStd * invStd * sgx / (double)n;
            k = -invStd * sg / (double)n;
        }
        for (long long i = threadIdx.x; i < n; i += blockDim.x) {
            double g = (double)dyr[offsetOf(r.inner, r.zi, i)];
            if (p.kind == LANES_LAYERNORM) {
                g *= affine(p.gamma, p.kind, row, i, 1);
            }
            const double d = (double)xr[offsetOf(r.inner, r.xi, i)] - mean;
            dxr[offsetOf(r.inner, r.yi, i)] = (float)(d * b + a * g + k);
        }
    }
}

// layerNormParamsKernel sets dgamma and dbeta of LayerNorm (RMSNorm's
// dgamma: mean NULL, 0): each row of p.r is an element of the normalized
// shape, its elements the rows of x (the statistics' index):
// Σ dy·(x - mean)·invStd and Σ dy.
__global__ void __launch_bounds__(ROW_THREADS) layerNormParamsKernel(LanesNorm p) {
    __shared__ double s[ROW_THREADS];
    const LanesReduce &r = p.r;
    for (long long col = blockIdx.x; col < r.outer.n; col += gridDim.x) {
        const float *xr = p.x + offsetOf(r.outer, r.xo, col);
        const float *dyr = p.dy + offsetOf(r.outer, r.zo, col);
        double sg = 0, sgx = 0;
        for (long long i = threadIdx.x; i < r.inner.n; i += blockDim.x) {
            const double g = (double)dyr[offsetOf(r.inner, r.zi, i)];
            sg += g;
            const double x = (double)xr[offsetOf(r.inner, r.xi, i)];
            sgx += g * (p.mean == nullptr ? x : x - (double)p.mean[i]) * (double)p.inv_std[i];
        }
        sg = blockReduce(s, sg, SumOp<double>{});
        sgx = blockReduce(s, sgx, SumOp<double>{});
        if (threadIdx.x == 0) {
            if (p.dgamma != nullptr) {
                p.dgamma[col] = (float)sgx;
            }
            if (p.dbeta != nullptr) {
                p.dbeta[col] = (float)sg;
            }
        }
    }
}

inline bool validNorm(const LanesNorm *p) {
    return validRows(&p->r) && (p->kind == LANES_BATCHNORM || p->kind == LANES_LAYERNORM || p->kind == LANES_RMSNORM);
}

} // namespace

extern "C" int lanes_norm(void *stream, int pass, const LanesNorm *p) {
    if (!validNorm(p) || pass < 0 || pass > 2) {
        return ERR_INVALID_VALUE;
    }
    if (p->r.outer.n <= 0) {
        return 0;
    }
    const dim3 grid = gridFor(p->r.outer.n, 1), block(rowThreads(p->r.inner.n));
    switch (pass) {
    case 0:
        return launch(normForwardKernel, grid, block, stream, *p);
    case 1:
        return launch(normBackwardKernel, grid, block, stream, *p);
    default:
        return launch(layerNormParamsKernel, grid, block, stream, *p);
    }
}
