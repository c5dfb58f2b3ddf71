// tune.cu: times instantiations of the SGEMM and Conv2D kernels (gemm.cu, conv.cu)
// on one device, so that the tile configurations the plugin uses are
// chosen by measurement. Each variant is first checked against a plain
// FP64 kernel on fresh random data (relative error against Σ|a·b|), then
// timed with CUDA events: the median of 20 launches after 3 warm-ups.
// Built by `make cuda-tune` (static cudart); run on an NVIDIA machine.
// It prints one benchstat-style line per variant.

#include "../conv.cu"
#include "../gemm.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

// refGemm: C(i,j) = Σ A(i,p) B(p,j) and S(i,j) = Σ |A(i,p) B(p,j)| in FP64.
__global__ void refGemm(int m, int n, int k, const float *a, const float *b, double *c, double *s) {
    int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n) {
        return;
    }
    double acc = 0, abs = 0;
    for (int p = 0; p < k; p++) {
        double v = (double)a[(long long)i * k + p] * b[(long long)p * n + j];
        acc += v;
        abs += fabs(v);
    }
    c[(long long)i * n + j] = acc;
    s[(long long)i * n + j] = abs;
}

// refConv: stride 1, "same" padding p, no groups; y and |y| in FP64, before bias.
__global__ void refConv(LanesConv c, double *y, double *s) {
    long long total = (long long)c.n * c.cout * c.oh * c.ow;
    for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < total; o += (long long)gridDim.x * blockDim.x) {
        int ox = o % c.ow, oy = (o / c.ow) % c.oh, oc = (o / ((long long)c.ow * c.oh)) % c.cout;
        long long img = o / ((long long)c.ow * c.oh * c.cout);
        double acc = 0, abs = 0;
        for (int ci = 0; ci < c.c; ci++) {
            for (int u = 0; u < c.kh; u++) {
                for (int v = 0; v < c.kw; v++) {
                    int iy = oy * c.sh - c.ph + u * c.dh, ix = ox * c.sw - c.pw + v * c.dw;
                    if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w_) {
                        continue;
                    }
                    double t = (double)c.x[((img * c.c + ci) * c.h + iy) * c.w_ + ix] * c.w[((long long)(oc * c.c + ci) * c.kh + u) * c.kw + v];
                    acc += t;
                    abs += fabs(t);
                }
            }
        }
        y[o] = acc;
        s[o] = abs;
    }
}

static std::mt19937_64 rng(12345);

static float *randDev(size_t n) {
    std::vector<float> h(n);
    std::normal_distribution<float> d;
    for (auto &v : h) {
        v = d(rng);
    }
    float *p;
    CK(cudaMalloc(&p, n * sizeof(float)));
    CK(cudaMemcpy(p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    return p;
}

// relErr returns max |got - want| / (s + |want|), or +Inf on NaN; it
// fills got with NaN first through poison (called before the launch).
static double relErr(const float *dGot, const double *dWant, const double *dS, size_t n) {
    std::vector<float> got(n);
    std::vector<double> want(n), s(n);
    CK(cudaMemcpy(got.data(), dGot, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(want.data(), dWant, n * 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(s.data(), dS, n * 8, cudaMemcpyDeviceToHost));
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(got[i] - want[i]) / (s[i] + fabs(want[i]) + 1e-30);
        if (!(d == d)) {
            return INFINITY;
        }
        e = std::max(e, d);
    }
    return e;
}

static double medianMs(const std::function<void()> &f) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) {
        f();
    }
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < 20; i++) {
        CK(cudaEventRecord(e0));
        f();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <int BM, int BN, int TM, int TN, int BK>
static void gemmVariant(int m, int n, int k, const float *a, const float *b, float *c, const double *want, const double *s) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    LanesGemm g{};
    g.m = m, g.n = n, g.k = k, g.alpha = 1, g.beta = 0;
    g.a = a, g.b = b, g.c = c, g.lda = k, g.ldb = n, g.ldc = n;
    g.vec_a = k % 4 == 0, g.vec_b = n % 4 == 0;
    dim3 grid((n + BN - 1) / BN, (m + BM - 1) / BM, 1);
    auto run = [&] { sgemmKernel<BM, BN, TM, TN, BK, false><<<grid, THREADS>>>(g); };
    CK(cudaMemset(c, 0xff, (size_t)m * n * 4)); // NaN: every element must be written
    run();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double err = relErr(c, want, s, (size_t)m * n);
    double ms = medianMs(run);
    CK(cudaGetLastError());
    printf("BenchmarkSgemm/%dx%dx%d/tile=%dx%dx%d/reg=%dx%d 20 %.0f ns/op %.0f GFLOP/s %.1e maxrelerr\n", m, n, k, BM, BN, BK, TM, TN,
           ms * 1e6, 2.0 * m * n * k / (ms * 1e6), err);
}

template <int BM, int BN, int TM, int TN, int BK>
static void convVariant(LanesConv cv, const double *want, const double *s) {
    constexpr int THREADS = (BM / TM) * (BN / TN);
    long long cols = (long long)cv.n * cv.oh * cv.ow;
    dim3 grid((unsigned)((cols + BN - 1) / BN), (cv.cout + BM - 1) / BM, 1);
    auto run = [&] { conv2dKernel<BM, BN, TM, TN, BK, false><<<grid, THREADS>>>(cv); };
    size_t total = (size_t)cols * cv.cout;
    CK(cudaMemset(cv.y, 0xff, total * 4));
    run();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double err = relErr(cv.y, want, s, total);
    double ms = medianMs(run);
    CK(cudaGetLastError());
    double flops = 2.0 * total * cv.c * cv.kh * cv.kw;
    printf("BenchmarkConv2D/%dx%dx%dx%d/k%dx%d/out%d/tile=%dx%dx%d/reg=%dx%d 20 %.0f ns/op %.0f GFLOP/s %.1e maxrelerr\n", cv.n, cv.c,
           cv.h, cv.w_, cv.kh, cv.kw, cv.cout, BM, BN, BK, TM, TN, ms * 1e6, flops / (ms * 1e6), err);
}

// gemmSplit times lanes_sgemm with the small tile and k cut into splits
// parts (1: none), reduction kernel included.
static void gemmSplit(int m, int n, int k, int splits, const float *a, const float *b, float *c, float *partial, const double *want,
                      const double *s) {
    LanesGemm g{};
    g.m = m, g.n = n, g.k = k, g.alpha = 1, g.beta = 0;
    g.a = a, g.b = b, g.c = c, g.lda = k, g.ldb = n, g.ldc = n;
    g.vec_a = k % 4 == 0, g.vec_b = n % 4 == 0;
    g.splits = splits, g.partial = partial;
    auto run = [&] { CK((cudaError_t)lanes_sgemm(nullptr, LANES_TILE_64, &g, (n + 63) / 64, (m + 63) / 64, 1)); };
    CK(cudaMemset(c, 0xff, (size_t)m * n * 4));
    run();
    CK(cudaDeviceSynchronize());
    double err = relErr(c, want, s, (size_t)m * n);
    double ms = medianMs(run);
    printf("BenchmarkSgemmSplit/%dx%dx%d/splits=%d 20 %.0f ns/op %.0f GFLOP/s %.1e maxrelerr\n", m, n, k, splits, ms * 1e6,
           2.0 * m * n * k / (ms * 1e6), err);
}

static void gemmSplits(int m, int n, int k) {
    float *a = randDev((size_t)m * k), *b = randDev((size_t)k * n), *c, *partial;
    double *want, *s;
    CK(cudaMalloc(&c, (size_t)m * n * 4));
    CK(cudaMalloc(&partial, (size_t)16 * m * n * 4));
    CK(cudaMalloc(&want, (size_t)m * n * 8));
    CK(cudaMalloc(&s, (size_t)m * n * 8));
    refGemm<<<dim3((n + 15) / 16, (m + 15) / 16), dim3(16, 16)>>>(m, n, k, a, b, want, s);
    CK(cudaGetLastError());
    for (int splits : {1, 2, 4, 8, 16}) {
        gemmSplit(m, n, k, splits, a, b, c, partial, want, s);
    }
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaFree(partial));
    CK(cudaFree(want));
    CK(cudaFree(s));
}

static void gemm(int m, int n, int k) {
    float *a = randDev((size_t)m * k), *b = randDev((size_t)k * n), *c;
    double *want, *s;
    CK(cudaMalloc(&c, (size_t)m * n * 4));
    CK(cudaMalloc(&want, (size_t)m * n * 8));
    CK(cudaMalloc(&s, (size_t)m * n * 8));
    refGemm<<<dim3((n + 15) / 16, (m + 15) / 16), dim3(16, 16)>>>(m, n, k, a, b, want, s);
    CK(cudaGetLastError());
    gemmVariant<128, 128, 8, 8, 8>(m, n, k, a, b, c, want, s);
    gemmVariant<128, 128, 8, 8, 16>(m, n, k, a, b, c, want, s);
    gemmVariant<128, 64, 8, 8, 16>(m, n, k, a, b, c, want, s);
    gemmVariant<64, 128, 8, 8, 16>(m, n, k, a, b, c, want, s);
    gemmVariant<64, 64, 4, 4, 8>(m, n, k, a, b, c, want, s);
    gemmVariant<64, 64, 4, 4, 16>(m, n, k, a, b, c, want, s);
    gemmVariant<64, 64, 8, 4, 16>(m, n, k, a, b, c, want, s);
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaFree(want));
    CK(cudaFree(s));
}

// sameConv is a stride-1 convolution of random input and weights on the
// device (no bias), output not yet allocated.
static LanesConv sameConv(int n, int c, int h, int w, int cout, int k, int pad) {
    LanesConv cv{};
    cv.n = n, cv.c = c, cv.h = h, cv.w_ = w, cv.cout = cout, cv.kh = k, cv.kw = k;
    cv.sh = cv.sw = cv.dh = cv.dw = cv.groups = 1;
    cv.ph = cv.pw = pad;
    cv.oh = h + 2 * pad - k + 1, cv.ow = w + 2 * pad - k + 1;
    cv.vec_w = (c * k * k) % 4 == 0;
    cv.x = randDev((size_t)n * c * h * w);
    cv.w = randDev((size_t)cout * c * k * k);
    return cv;
}

static void convSplits(int n, int c, int h, int w, int cout, int k, int pad) {
    LanesConv cv = sameConv(n, c, h, w, cout, k, pad);
    long long cols = (long long)n * cv.oh * cv.ow;
    size_t total = (size_t)cols * cout;
    float *y, *partial;
    double *want, *s;
    CK(cudaMalloc(&y, total * 4));
    CK(cudaMalloc(&partial, 16 * total * 4));
    CK(cudaMalloc(&want, total * 8));
    CK(cudaMalloc(&s, total * 8));
    cv.y = y;
    refConv<<<4096, 256>>>(cv, want, s);
    CK(cudaGetLastError());
    for (int splits : {1, 2, 4, 8, 16}) {
        cv.splits = splits, cv.partial = partial;
        auto run = [&] { CK((cudaError_t)lanes_conv2d(nullptr, LANES_TILE_64, &cv, (unsigned)((cols + 63) / 64), (cout + 63) / 64, 1)); };
        CK(cudaMemset(y, 0xff, total * 4));
        run();
        CK(cudaDeviceSynchronize());
        double err = relErr(y, want, s, total);
        double ms = medianMs(run);
        printf("BenchmarkConv2DSplit/%dx%dx%dx%d/k%dx%d/out%d/splits=%d 20 %.0f ns/op %.0f GFLOP/s %.1e maxrelerr\n", n, c, h, w, k, k,
               cout, splits, ms * 1e6, 2.0 * total * c * k * k / (ms * 1e6), err);
    }
    CK(cudaFree((void *)cv.x));
    CK(cudaFree((void *)cv.w));
    CK(cudaFree(y));
    CK(cudaFree(partial));
    CK(cudaFree(want));
    CK(cudaFree(s));
}

static void conv(int n, int c, int h, int w, int cout, int k, int pad) {
    LanesConv cv = sameConv(n, c, h, w, cout, k, pad);
    size_t total = (size_t)n * cout * cv.oh * cv.ow;
    float *y;
    double *want, *s;
    CK(cudaMalloc(&y, total * 4));
    CK(cudaMalloc(&want, total * 8));
    CK(cudaMalloc(&s, total * 8));
    cv.y = y;
    refConv<<<4096, 256>>>(cv, want, s);
    CK(cudaGetLastError());
    convVariant<128, 128, 8, 8, 8>(cv, want, s);
    convVariant<128, 128, 8, 8, 16>(cv, want, s);
    convVariant<64, 64, 4, 4, 8>(cv, want, s);
    convVariant<64, 64, 4, 4, 16>(cv, want, s);
    convVariant<64, 128, 4, 8, 16>(cv, want, s);
    convVariant<64, 128, 8, 8, 16>(cv, want, s);
    CK(cudaFree((void *)cv.x));
    CK(cudaFree((void *)cv.w));
    CK(cudaFree(y));
    CK(cudaFree(want));
    CK(cudaFree(s));
}

int main(int argc, char **argv) {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device: %s, %d SMs, sm_%d%d\n", p.name, p.multiProcessorCount, p.major, p.minor);
    for (int n : {1024, 2048, 4096}) {
        gemm(n, n, n);
    }
    gemm(1000, 1000, 4096);
    conv(32, 64, 56, 56, 64, 3, 1);
    conv(32, 128, 28, 28, 128, 3, 1);
    if (argc > 1 && std::string(argv[1]) == "-splits") { // split-K on grids that leave the device idle
        for (int n : {256, 512}) {
            gemmSplits(n, n, n);
        }
        gemmSplits(64, 64, 4096);
        gemmSplits(128, 256, 2048);
        convSplits(1, 64, 56, 56, 64, 3, 1);
        convSplits(1, 64, 28, 28, 64, 3, 1);
        convSplits(1, 64, 14, 14, 64, 3, 1);
        convSplits(4, 64, 56, 56, 64, 3, 1);
        convSplits(1, 256, 14, 14, 256, 3, 1);
    }
    return 0;
}
