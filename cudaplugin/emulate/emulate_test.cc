// emulate_test.cc: runs the kernels (every family's .cu file) on the host (emulate.h) and
// compares them with plain double-precision loops. It checks indexing,
// masking, transposes, batching, the double buffering and the conv
// gather, not speed and not the GPU's own arithmetic. Exit status 1 on a
// mismatch. Built and run by `make cuda-emulate`.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "../kernels.h"

static std::mt19937 rng(42);
static int failures = 0;

static std::vector<float> randomVec(size_t n) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto &x : v) {
        x = d(rng);
    }
    return v;
}

// close compares with a tolerance relative to the sum of the magnitudes of
// the terms (scale), as the CPU path's error bound.
static bool close(double got, double want, double scale) {
    return std::fabs(got - want) <= 1e-5 * (scale + std::fabs(want)) + 1e-30;
}

static int tiles(int n, int t) { return (n + t - 1) / t; }

static void testGemm(int cfg, int m, int n, int k, bool ta, bool tb, float alpha, float beta, int batch, int padA, int splits = 1) {
    int tile = cfg == LANES_TILE_128 ? 128 : 64;
    long long lda = (ta ? m : k) + padA, ldb = tb ? k : n, ldc = n + 3;
    long long sa = lda * (ta ? k : m), sb = ldb * (tb ? n : k), sc = ldc * m;
    auto a = randomVec(sa * batch), b = randomVec(sb * batch), c = randomVec(sc * batch);
    auto c0 = c;
    LanesGemm g{m, n, k, alpha, beta, a.data(), b.data(), c.data(), lda, ldb, ldc, sa, sb, sc, ta, tb,
                lda % 4 == 0, ldb % 4 == 0};
    std::vector<float> partial((size_t)splits * batch * m * n, NAN); // every part element must be written
    if (splits > 1) {
        g.splits = splits;
        g.partial = partial.data();
    }
    lanes_sgemm(nullptr, cfg, &g, tiles(n, tile), tiles(m, tile), batch);
    for (int z = 0; z < batch; z++) {
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n + 3; j++) {
                double got = c[z * sc + i * ldc + j];
                if (j >= n) { // the gap between rows is untouched
                    if (got != c0[z * sc + i * ldc + j]) {
                        std::printf("sgemm cfg %d %dx%dx%d: wrote the row gap at %d,%d\n", cfg, m, n, k, i, j);
                        failures++;
                        return;
                    }
                    continue;
                }
                double s = 0, mag = 0;
                for (int p = 0; p < k; p++) {
                    double av = ta ? a[z * sa + p * lda + i] : a[z * sa + i * lda + p];
                    double bv = tb ? b[z * sb + j * ldb + p] : b[z * sb + p * ldb + j];
                    s += av * bv;
                    mag += std::fabs(av * bv);
                }
                double want = alpha * s + (beta != 0 ? beta * c0[z * sc + i * ldc + j] : 0);
                if (!close(got, want, std::fabs(alpha) * mag + std::fabs(beta * c0[z * sc + i * ldc + j]))) {
                    std::printf("sgemm cfg %d %dx%dx%d ta=%d tb=%d alpha=%g beta=%g batch %d splits %d: C[%d][%d][%d] = %g, want %g\n",
                                cfg, m, n, k, ta, tb, alpha, beta, z, splits, i, j, got, want);
                    failures++;
                    return;
                }
            }
        }
    }
}

static void testConv(int cfg, int n, int c, int h, int w, int cout, int kh, int kw, int sh, int sw, int ph, int pw,
                     int dh, int dw, int groups, bool bias, bool relu, int splits = 1) {
    int tile = cfg == LANES_TILE_128 ? 128 : 64;
    int oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    int cpg = c / groups, opg = cout / groups, K = cpg * kh * kw;
    auto x = randomVec((size_t)n * c * h * w), wt = randomVec((size_t)cout * K), bs = randomVec(cout);
    std::vector<float> y((size_t)n * cout * oh * ow, NAN);
    LanesConv cv{x.data(), wt.data(), bias ? bs.data() : nullptr, y.data(), n, c, h, w, cout, kh, kw,
                 sh, sw, ph, pw, dh, dw, groups, oh, ow, K % 4 == 0, relu};
    std::vector<float> partial((size_t)splits * cout * n * oh * ow, NAN);
    if (splits > 1) {
        cv.splits = splits;
        cv.partial = partial.data();
    }
    lanes_conv2d(nullptr, cfg, &cv, tiles(n * oh * ow, tile), tiles(opg, tile), groups);
    for (int im = 0; im < n; im++) {
        for (int o = 0; o < cout; o++) {
            int g = o / opg;
            for (int i = 0; i < oh; i++) {
                for (int j = 0; j < ow; j++) {
                    double s = bias ? bs[o] : 0, mag = std::fabs(s);
                    for (int ci = 0; ci < cpg; ci++) {
                        for (int u = 0; u < kh; u++) {
                            for (int v = 0; v < kw; v++) {
                                int iy = i * sh - ph + u * dh, ix = j * sw - pw + v * dw;
                                if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
                                    continue;
                                }
                                double p = (double)x[((size_t)(im * c + g * cpg + ci) * h + iy) * w + ix] *
                                           wt[(size_t)o * K + (ci * kh + u) * kw + v];
                                s += p;
                                mag += std::fabs(p);
                            }
                        }
                    }
                    if (relu && s < 0) {
                        s = 0;
                    }
                    double got = y[((size_t)(im * cout + o) * oh + i) * ow + j];
                    if (!close(got, s, mag)) {
                        std::printf("conv2d cfg %d n%d c%d %dx%d cout%d k%dx%d s%d,%d p%d,%d d%d,%d g%d splits %d: y[%d][%d][%d][%d] = %g, want %g\n",
                                    cfg, n, c, h, w, cout, kh, kw, sh, sw, ph, pw, dh, dw, groups, splits, im, o, i, j, got, s);
                        failures++;
                        return;
                    }
                }
            }
        }
    }
}

static void testCopy();

static void testSmallOps() {
    // bias + ReLU over [2, 3, 5]; ReLU keeps a NaN (as tensor.ReLU)
    auto x = randomVec(30), bias = randomVec(3);
    x[7] = NAN;
    std::vector<float> y(30);
    lanes_bias_act(nullptr, y.data(), x.data(), bias.data(), 30, 3, 5, 1);
    for (int i = 0; i < 30; i++) {
        float v = x[i] + bias[i / 5 % 3];
        float want = v > 0 || std::isnan(v) ? v : 0.0f;
        if (y[i] != want && !(std::isnan(y[i]) && std::isnan(want))) {
            std::printf("bias_act: y[%d] = %g, want %g\n", i, y[i], want);
            failures++;
            break;
        }
    }
    auto a = randomVec(1000), b = randomVec(1000);
    std::vector<float> s(1000), p(1000);
    LanesShape flat{1, 1000, {1000}};
    LanesStrides unit{{1}};
    lanes_binary(nullptr, LANES_ELEM_ADD, &flat, s.data(), &unit, a.data(), &unit, b.data(), &unit);
    lanes_binary(nullptr, LANES_ELEM_MUL, &flat, p.data(), &unit, a.data(), &unit, b.data(), &unit);
    for (int i = 0; i < 1000; i++) {
        if (s[i] != a[i] + b[i] || p[i] != a[i] * b[i]) {
            std::printf("binary: element %d\n", i);
            failures++;
            break;
        }
    }
    // softmax: 3 rows of 300 (more than a block's threads)
    auto sx = randomVec(900);
    sx[5] = 80; // would overflow without the max
    std::vector<float> sy(900);
    LanesReduce rows{};
    rows.outer.dims = rows.inner.dims = 1;
    rows.outer.n = rows.outer.shape[0] = 3;
    rows.inner.n = rows.inner.shape[0] = 300;
    rows.xo.s[0] = rows.yo.s[0] = 300;
    rows.xi.s[0] = rows.yi.s[0] = 1;
    lanes_softmax(nullptr, 0, &rows, sy.data(), sx.data());
    for (int r = 0; r < 3; r++) {
        double m = -INFINITY, sum = 0;
        for (int i = 0; i < 300; i++) {
            m = std::max(m, (double)sx[r * 300 + i]);
        }
        for (int i = 0; i < 300; i++) {
            sum += std::exp(sx[r * 300 + i] - m);
        }
        for (int i = 0; i < 300; i++) {
            double want = std::exp(sx[r * 300 + i] - m) / sum;
            if (std::fabs(sy[r * 300 + i] - want) > 1e-6 * want + 1e-12) {
                std::printf("softmax: row %d col %d = %g, want %g\n", r, i, sy[r * 300 + i], want);
                failures++;
                r = 3;
                break;
            }
        }
    }
    // pooling: 2 planes of 7×6, kernel 3×2, stride 2×1, padding 1×1
    LanesPool pp{2, 7, 6, 4, 7, 3, 2, 2, 1, 1, 1, 0};
    auto px = randomVec(84);
    px[8] = NAN;
    std::vector<float> my(56), mi(56), ay(56), ey(56);
    lanes_pool2d(nullptr, 0, &pp, my.data(), mi.data(), px.data());
    lanes_pool2d(nullptr, 1, &pp, ay.data(), nullptr, px.data());
    pp.exclude_pad = 1;
    lanes_pool2d(nullptr, 1, &pp, ey.data(), nullptr, px.data());
    for (int pl = 0; pl < 2; pl++) {
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 7; j++) {
                int r0 = i * 2 - 1, c0 = j - 1, r1 = std::min(r0 + 3, 8), c1 = std::min(c0 + 2, 7);
                int size = (r1 - r0) * (c1 - c0);
                r0 = std::max(r0, 0), c0 = std::max(c0, 0), r1 = std::min(r1, 7), c1 = std::min(c1, 6);
                double best = NAN, sum = 0;
                int at = -1;
                for (int r = r0; r < r1; r++) {
                    for (int c = c0; c < c1; c++) {
                        float v = px[pl * 42 + r * 6 + c];
                        sum += v;
                        if (at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                            best = v, at = r * 6 + c;
                        }
                    }
                }
                int o = pl * 28 + i * 7 + j;
                bool maxOK = (std::isnan(best) ? std::isnan(my[o]) : my[o] == best) && mi[o] == at;
                if (!maxOK || std::fabs(ay[o] - sum / size) > 1e-6 ||
                    std::fabs(ey[o] - sum / ((r1 - r0) * (c1 - c0))) > 1e-6) {
                    std::printf("pool2d: plane %d (%d,%d): max %g at %g, avg %g, excl %g\n", pl, i, j, my[o], mi[o], ay[o], ey[o]);
                    failures++;
                    pl = 2;
                    i = 4;
                    break;
                }
            }
        }
    }
    testCopy();
}

// testCopy checks lanes_copy: a gather (the transpose of a 3×4 matrix), a
// scatter into every other element of a 4×6 buffer (the rest untouched)
// from a row broadcast down the rows (stride 0), and a single element
// (no dimensions).
static void testCopy() {
    auto gx = randomVec(12);
    std::vector<float> gy(12);
    LanesShape t{2, 12, {4, 3}};
    LanesStrides tyS{{3, 1}}, txS{{1, 4}};
    lanes_copy(nullptr, &t, gy.data(), &tyS, gx.data(), &txS);
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 3; j++) {
            if (gy[i * 3 + j] != gx[j * 4 + i]) {
                std::printf("copy, gather: (%d,%d)\n", i, j);
                failures++;
                return;
            }
        }
    }
    auto row = randomVec(3);
    std::vector<float> sy(24, -7.0f);
    LanesShape b{2, 12, {4, 3}};
    LanesStrides byS{{6, 2}}, bxS{{0, 1}};
    lanes_copy(nullptr, &b, sy.data(), &byS, row.data(), &bxS);
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 6; j++) {
            float want = j % 2 == 0 ? row[j / 2] : -7.0f;
            if (sy[i * 6 + j] != want) {
                std::printf("copy, broadcast scatter: (%d,%d) = %g, want %g\n", i, j, sy[i * 6 + j], want);
                failures++;
                return;
            }
        }
    }
    float one = 3.5f, out = 0;
    LanesShape e{0, 1, {}};
    LanesStrides none{};
    lanes_copy(nullptr, &e, &out, &none, &one, &none);
    if (out != 3.5f) {
        std::printf("copy, one element: %g\n", out);
        failures++;
    }
}

int main() {
    for (int cfg : {LANES_TILE_128, LANES_TILE_64}) {
        for (bool ta : {false, true}) {
            for (bool tb : {false, true}) {
                testGemm(cfg, 70, 131, 37, ta, tb, 1.0f, 0.0f, 1, 0);   // edges on every side, k not a multiple of 8
                testGemm(cfg, 129, 65, 64, ta, tb, -0.5f, 2.0f, 2, 1);  // batch, beta, lda not a multiple of 4
                testGemm(cfg, 1, 1, 1, ta, tb, 1.0f, 0.0f, 1, 0);
            }
        }
        testGemm(cfg, 5, 7, 0, false, false, 1.0f, 0.5f, 1, 0); // k = 0: C = beta·C
        testConv(cfg, 2, 3, 9, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, true);
        testConv(cfg, 1, 4, 11, 10, 6, 3, 2, 2, 1, 0, 1, 2, 1, 2, true, false); // stride, dilation, groups
        testConv(cfg, 3, 8, 5, 5, 130, 1, 1, 1, 1, 0, 0, 1, 1, 1, false, false); // pointwise, cout over a tile
        testConv(cfg, 1, 2, 6, 7, 4, 5, 5, 3, 2, 2, 2, 1, 1, 2, true, true);
    }
    // Split-K (the small tile only): uneven parts, empty last parts,
    // batches and groups.
    testGemm(LANES_TILE_64, 70, 131, 37, false, true, 1.0f, 0.0f, 1, 0, 3);
    testGemm(LANES_TILE_64, 129, 65, 64, true, false, -0.5f, 2.0f, 2, 1, 5);
    testConv(LANES_TILE_64, 2, 3, 9, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, true, 4);
    testConv(LANES_TILE_64, 1, 4, 11, 10, 6, 3, 2, 2, 1, 0, 1, 2, 1, 2, true, true, 3);
    testConv(LANES_TILE_64, 2, 40, 6, 6, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, false, 7);
    {
        float dummy[4] = {};
        LanesGemm g{1, 1, 1, 1.0f, 0.0f, dummy, dummy, dummy, 1, 1, 1, 1, 1, 1};
        g.splits = 2;
        g.partial = dummy;
        if (lanes_sgemm(nullptr, LANES_TILE_128, &g, 1, 1, 1) == 0) {
            std::printf("sgemm: the large tile accepted a split\n");
            failures++;
        }
    }
    testSmallOps();
    if (failures > 0) {
        std::printf("FAIL: %d mismatches\n", failures);
        return 1;
    }
    std::printf("ok: sgemm, conv2d, bias_act, binary, softmax, pool2d and copy match the double-precision loops\n");
    return 0;
}
