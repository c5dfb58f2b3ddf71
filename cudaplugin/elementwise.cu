// elementwise.cu: the Elementwise family's kernels: every binary op and
// comparison, every unary op and fill, Where, the unary ops' gradients,
// and the bias + activation of a layer. Each runs a grid-stride loop over
// the elements of a shape (kernels.h: LanesShape), reading and writing its
// operands through their strides: broadcast (stride 0), transposed and
// strided views are read where they are, without a gather.
//
// The ops follow package tensor's CPU kernels (simd's): Maximum and Minimum
// keep a NaN operand and give b where a and b compare equal; ReLU keeps NaN;
// Clamp is Minimum(Maximum(x, lo), hi); comparisons give 1 or 0. The
// transcendental ones use CUDA's single-precision functions (within 2 to 4
// ulp; the host's libm on the emulated device), arranged as the CPU's so
// that the limits and special values agree (SiLU and GELU at -Inf give -0,
// Sigmoid is e^x/(1+e^x) for x < 0, Softplus max(x,0) + log1p(e^-|x|)).

#include "common.cuh"

namespace {

constexpr float MAX_FLOAT = 3.40282346638528859812e+38f;

// A map kernel's operands: dst y and K inputs, each a base address and
// strides over the kernel's shape.
template <int K>
struct MapOperands {
    float *y;
    LanesStrides ys;
    const float *x[K > 0 ? K : 1];
    LanesStrides xs[K > 0 ? K : 1];
};

// mapKernel sets y = f(x[0], ..., x[K-1]) at every element of shape: the
// index is split into coordinates once for all the operands (a
// one-dimensional shape, the common contiguous case, needs no division).
template <int K, class F>
__global__ void mapKernel(LanesShape shape, MapOperands<K> p, F f) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < shape.n; i += (long long)gridDim.x * blockDim.x) {
        long long oy = 0, ox[K > 0 ? K : 1] = {};
        if (shape.dims == 1) {
            oy = i * p.ys.s[0];
            for (int k = 0; k < K; k++) {
                ox[k] = i * p.xs[k].s[0];
            }
        } else {
            long long r = i;
            for (int d = shape.dims - 1; d >= 0; d--) {
                const long long n = shape.shape[d], j = r % n;
                r /= n;
                oy += j * p.ys.s[d];
                for (int k = 0; k < K; k++) {
                    ox[k] += j * p.xs[k].s[d];
                }
            }
        }
        float v[K > 0 ? K : 1];
        for (int k = 0; k < K; k++) {
            v[k] = p.x[k][ox[k]];
        }
        p.y[oy] = f(v);
    }
}

template <int K, class F>
int mapLaunch(void *stream, const LanesShape *shape, const MapOperands<K> &p, F f) {
    if (shape->n <= 0) {
        return 0;
    }
    if (!validShape(shape)) {
        return ERR_INVALID_VALUE;
    }
    return launch(mapKernel<K, F>, gridFor(shape->n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, *shape, p, f);
}

// maximum and minimum are simd.Maximum's and Minimum's: a NaN a wins, then
// the strict comparison, else b (so NaN b, and b of an equal pair).
__device__ __forceinline__ float maximum(float a, float b) { return a > b || a != a ? a : b; }
__device__ __forceinline__ float minimum(float a, float b) { return a < b || a != a ? a : b; }

__device__ __forceinline__ float sigmoid(float x) {
    if (x < 0) {
        const float e = expf(x);
        return e / (1.0f + e);
    }
    return 1.0f / (1.0f + expf(-x));
}

// times returns x·s for a factor s that tends to 0 as x tends to -Inf:
// the limit -0 where s is 0, not -Inf·0.
__device__ __forceinline__ float times(float x, float s) { return s == 0.0f ? copysignf(0.0f, x) : x * s; }

template <int OP>
__device__ __forceinline__ float binaryOp(float a, float b) {
    switch (OP) {
    case LANES_ELEM_ADD:
        return a + b;
    case LANES_ELEM_SUB:
        return a - b;
    case LANES_ELEM_MUL:
        return a * b;
    case LANES_ELEM_DIV:
        return a / b;
    case LANES_ELEM_MAXIMUM:
        return maximum(a, b);
    case LANES_ELEM_MINIMUM:
        return minimum(a, b);
    case LANES_ELEM_POW:
        return powf(a, b);
    case LANES_ELEM_GREATER:
        return a > b ? 1.0f : 0.0f;
    case LANES_ELEM_GREATER_EQUAL:
        return a >= b ? 1.0f : 0.0f;
    case LANES_ELEM_LESS:
        return a < b ? 1.0f : 0.0f;
    case LANES_ELEM_LESS_EQUAL:
        return a <= b ? 1.0f : 0.0f;
    case LANES_ELEM_EQUAL:
        return a == b ? 1.0f : 0.0f;
    case LANES_ELEM_MOD: {
        // torch.remainder: fmod, plus b where nonzero and of the other sign.
        const float r = fmodf(a, b);
        return r != 0.0f && (r < 0.0f) != (b < 0.0f) ? r + b : r;
    }
    case LANES_ELEM_FMOD:
        return fmodf(a, b);
    case LANES_ELEM_LOGICAL_AND:
        return a != 0.0f && b != 0.0f ? 1.0f : 0.0f;
    case LANES_ELEM_LOGICAL_OR:
        return a != 0.0f || b != 0.0f ? 1.0f : 0.0f;
    case LANES_ELEM_LOGICAL_XOR:
        return (a != 0.0f) != (b != 0.0f) ? 1.0f : 0.0f;
    default: // LANES_ELEM_NOT_EQUAL
        return a != b ? 1.0f : 0.0f;
    }
}

template <int OP>
__device__ __forceinline__ float unaryOp(float x, float a0, float a1) {
    switch (OP) {
    case LANES_ELEM_EXP:
        return expf(x);
    case LANES_ELEM_LOG:
        return logf(x);
    case LANES_ELEM_SIGMOID:
        return sigmoid(x);
    case LANES_ELEM_SILU:
        return times(x, sigmoid(x));
    case LANES_ELEM_TANH:
        return tanhf(x);
    case LANES_ELEM_SOFTPLUS:
        return fmaxf(x, 0.0f) + log1pf(expf(-fabsf(x)));
    case LANES_ELEM_ERF:
        return erff(x);
    case LANES_ELEM_GELU:
        return times(x, 0.5f * erfcf(x * -0.70710678118654752f));
    case LANES_ELEM_GELU_TANH: {
        // x·sigmoid(2u), u = √(2/π)·(x + 0.044715·x³)
        const float w = -1.5957691216057308f * (x + 0.044715f * x * x * x);
        return times(x, 1.0f / (1.0f + expf(w)));
    }
    case LANES_ELEM_ABS:
        return fabsf(x);
    case LANES_ELEM_NEG:
        return -x;
    case LANES_ELEM_SQRT:
        return sqrtf(x);
    case LANES_ELEM_RELU:
        return relu(x);
    case LANES_ELEM_LEAKY_RELU:
        return x > 0 ? x : a0 * x;
    case LANES_ELEM_ELU:
        return x > 0 ? x : a0 * expm1f(x);
    case LANES_ELEM_CLAMP:
        return minimum(maximum(x, a0), a1);
    case LANES_ELEM_SCALE:
        return x * a0;
    case LANES_ELEM_ADD_SCALAR:
        return x + a0;
    case LANES_ELEM_SIN:
        return sinf(x);
    case LANES_ELEM_COS:
        return cosf(x);
    case LANES_ELEM_TAN:
        return tanf(x);
    case LANES_ELEM_LOG1P:
        return log1pf(x);
    case LANES_ELEM_EXPM1:
        return expm1f(x);
    case LANES_ELEM_FLOOR:
        return floorf(x);
    case LANES_ELEM_CEIL:
        return ceilf(x);
    case LANES_ELEM_ROUND:
        return rintf(x); // halves to even
    case LANES_ELEM_SIGN:
        return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? 0.0f : x;
    case LANES_ELEM_IS_NAN:
        return x != x ? 1.0f : 0.0f;
    case LANES_ELEM_IS_INF:
        return fabsf(x) > MAX_FLOAT ? 1.0f : 0.0f;
    case LANES_ELEM_IS_FINITE:
        return fabsf(x) <= MAX_FLOAT ? 1.0f : 0.0f;
    case LANES_ELEM_LOGICAL_NOT:
        return x == 0.0f ? 1.0f : 0.0f;
    default: // LANES_ELEM_FILL
        return a0;
    }
}

// gradOp is dx for dy and v (the op's input x, or its output y when fromY,
// or nothing) as tensor.UnaryGrad's table, in the CPU kernels' order of
// operations.
template <int OP>
__device__ __forceinline__ float gradOp(float dy, float v, bool fromY, float a0, float a1) {
    switch (OP) {
    case LANES_ELEM_EXP:
        return dy * v;
    case LANES_ELEM_LOG:
        return dy / v;
    case LANES_ELEM_SIGMOID:
        return dy * ((1.0f - v) * v);
    case LANES_ELEM_SILU: {
        // s·(1 + x·sigmoid(-x)): 1 - s as sigmoid(-x); x clamped so that
        // ±Inf gives the limits.
        const float xc = minimum(maximum(v, -MAX_FLOAT), MAX_FLOAT);
        return dy * ((sigmoid(-xc) * xc + 1.0f) * sigmoid(v));
    }
    case LANES_ELEM_TANH:
        return dy * ((1.0f - v) * (v + 1.0f));
    case LANES_ELEM_SOFTPLUS:
        return dy * sigmoid(v);
    case LANES_ELEM_ERF: {
        // 2/√π·e^(-x²), x² = h + l exactly: e^(-h)·(1 - l).
        const float xc = minimum(maximum(v, -11.0f), 11.0f);
        const float h = xc * xc, l = fmaf(xc, xc, -h);
        return dy * (1.1283791670955126f * expf(-h) * (1.0f - l));
    }
    case LANES_ELEM_GELU: {
        const float xc = minimum(maximum(v, -MAX_FLOAT), MAX_FLOAT);
        const float cdf = erff(xc * 0.70710678118654752f) * 0.5f + 0.5f;
        const float pdf = expf(xc * xc * -0.5f) * xc * 0.3989422804014327f;
        return dy * (cdf + pdf);
    }
    case LANES_ELEM_GELU_TANH: {
        const float c = 0.7978845608028654f, a = 0.044715f;
        const float xc = minimum(maximum(v, -20.0f), 20.0f);
        const float w = (xc * xc * a + 1.0f) * xc * (2 * c); // 2u
        const float s = sigmoid(w), sn = sigmoid(-w);
        return dy * ((sn * xc * (xc * xc * (3 * a) + 1.0f) * (2 * c) + 1.0f) * s);
    }
    case LANES_ELEM_ABS:
        // sign(x): ±1, 0 at ±0, NaN at NaN
        return dy * (v == 0.0f ? 0.0f : v != v ? v : copysignf(1.0f, v));
    case LANES_ELEM_NEG:
        return -dy;
    case LANES_ELEM_SQRT:
        return dy / (v + v);
    case LANES_ELEM_RELU:
        return v <= 0 ? 0.0f : dy;
    case LANES_ELEM_LEAKY_RELU:
        return dy * (v > 0 ? 1.0f : a0);
    case LANES_ELEM_ELU:
        if (v <= 0) {
            return dy * (fromY ? v + a0 : a0 * expf(v));
        }
        return dy;
    case LANES_ELEM_CLAMP:
        return v >= a0 && v <= a1 ? dy : 0.0f;
    case LANES_ELEM_SCALE:
        return dy * a0;
    case LANES_ELEM_SIN:
        return dy * cosf(v);
    case LANES_ELEM_COS:
        return dy * -sinf(v);
    case LANES_ELEM_TAN:
        return dy * (v * v + 1.0f);
    case LANES_ELEM_LOG1P:
        return dy / (v + 1.0f);
    case LANES_ELEM_EXPM1:
        return dy * (v + 1.0f);
    case LANES_ELEM_FLOOR:
    case LANES_ELEM_CEIL:
    case LANES_ELEM_ROUND:
    case LANES_ELEM_SIGN:
        return 0.0f;
    default: // LANES_ELEM_ADD_SCALAR
        return dy;
    }
}

template <int OP>
struct Binary {
    __device__ float operator()(const float *v) const { return binaryOp<OP>(v[0], v[1]); }
};

template <int OP>
struct Unary {
    float a0, a1;
    __device__ float operator()(const float *v) const { return unaryOp<OP>(v[0], a0, a1); }
};

struct Fill {
    float value;
    __device__ float operator()(const float *) const { return value; }
};

struct Where {
    __device__ float operator()(const float *v) const { return v[0] != 0.0f ? v[1] : v[2]; }
};

// Grad's v[0] is dy and v[1] the operand the gradient reads (K = 2), or
// none (K = 1).
template <int OP>
struct Grad {
    float a0, a1;
    bool fromY;
    __device__ float operator()(const float *v) const { return gradOp<OP>(v[0], v[1], fromY, a0, a1); }
};

template <int OP>
struct GradNone {
    float a0;
    __device__ float operator()(const float *v) const { return gradOp<OP>(v[0], 0.0f, false, a0, 0.0f); }
};

__global__ void biasActKernel(float *y, const float *x, const float *bias, long long n, int channels, long long inner, int act) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float v = x[i];
        if (bias) {
            v += bias[(i / inner) % channels];
        }
        if (act == 1) {
            v = relu(v);
        }
        y[i] = v;
    }
}

} // namespace

extern "C" int lanes_bias_act(void *stream, float *y, const float *x, const float *bias, long long n, int channels, long long inner, int act) {
    if (n <= 0) {
        return 0;
    }
    return launch(biasActKernel, gridFor(n, ELEMENTWISE_THREADS), dim3(ELEMENTWISE_THREADS), stream, y, x, bias, n, channels, inner, act);
}

extern "C" int lanes_binary(void *stream, int op, const LanesShape *shape, float *y, const LanesStrides *ys, const float *a, const LanesStrides *as,
                            const float *b, const LanesStrides *bs) {
    MapOperands<2> p{y, *ys, {a, b}, {*as, *bs}};
#define LANES_BINARY(OP)                                                                                                                   \
    case OP:                                                                                                                               \
        return mapLaunch(stream, shape, p, Binary<OP>{})
    switch (op) {
        LANES_BINARY(LANES_ELEM_ADD);
        LANES_BINARY(LANES_ELEM_SUB);
        LANES_BINARY(LANES_ELEM_MUL);
        LANES_BINARY(LANES_ELEM_DIV);
        LANES_BINARY(LANES_ELEM_MAXIMUM);
        LANES_BINARY(LANES_ELEM_MINIMUM);
        LANES_BINARY(LANES_ELEM_POW);
        LANES_BINARY(LANES_ELEM_GREATER);
        LANES_BINARY(LANES_ELEM_GREATER_EQUAL);
        LANES_BINARY(LANES_ELEM_LESS);
        LANES_BINARY(LANES_ELEM_LESS_EQUAL);
        LANES_BINARY(LANES_ELEM_EQUAL);
        LANES_BINARY(LANES_ELEM_NOT_EQUAL);
        LANES_BINARY(LANES_ELEM_MOD);
        LANES_BINARY(LANES_ELEM_FMOD);
        LANES_BINARY(LANES_ELEM_LOGICAL_AND);
        LANES_BINARY(LANES_ELEM_LOGICAL_OR);
        LANES_BINARY(LANES_ELEM_LOGICAL_XOR);
    }
#undef LANES_BINARY
    return ERR_INVALID_VALUE;
}

extern "C" int lanes_unary(void *stream, int op, float a0, float a1, const LanesShape *shape, float *y, const LanesStrides *ys, const float *x,
                           const LanesStrides *xs) {
    if (op == LANES_ELEM_FILL) {
        return mapLaunch(stream, shape, MapOperands<0>{y, *ys, {}, {}}, Fill{a0});
    }
    MapOperands<1> p{y, *ys, {x}, {*xs}};
#define LANES_UNARY(OP)                                                                                                                    \
    case OP:                                                                                                                               \
        return mapLaunch(stream, shape, p, Unary<OP>{a0, a1})
    switch (op) {
        LANES_UNARY(LANES_ELEM_EXP);
        LANES_UNARY(LANES_ELEM_LOG);
        LANES_UNARY(LANES_ELEM_SIGMOID);
        LANES_UNARY(LANES_ELEM_SILU);
        LANES_UNARY(LANES_ELEM_TANH);
        LANES_UNARY(LANES_ELEM_SOFTPLUS);
        LANES_UNARY(LANES_ELEM_ERF);
        LANES_UNARY(LANES_ELEM_GELU);
        LANES_UNARY(LANES_ELEM_GELU_TANH);
        LANES_UNARY(LANES_ELEM_ABS);
        LANES_UNARY(LANES_ELEM_NEG);
        LANES_UNARY(LANES_ELEM_SQRT);
        LANES_UNARY(LANES_ELEM_RELU);
        LANES_UNARY(LANES_ELEM_LEAKY_RELU);
        LANES_UNARY(LANES_ELEM_ELU);
        LANES_UNARY(LANES_ELEM_CLAMP);
        LANES_UNARY(LANES_ELEM_SCALE);
        LANES_UNARY(LANES_ELEM_ADD_SCALAR);
        LANES_UNARY(LANES_ELEM_SIN);
        LANES_UNARY(LANES_ELEM_COS);
        LANES_UNARY(LANES_ELEM_TAN);
        LANES_UNARY(LANES_ELEM_LOG1P);
        LANES_UNARY(LANES_ELEM_EXPM1);
        LANES_UNARY(LANES_ELEM_FLOOR);
        LANES_UNARY(LANES_ELEM_CEIL);
        LANES_UNARY(LANES_ELEM_ROUND);
        LANES_UNARY(LANES_ELEM_SIGN);
        LANES_UNARY(LANES_ELEM_IS_NAN);
        LANES_UNARY(LANES_ELEM_IS_INF);
        LANES_UNARY(LANES_ELEM_IS_FINITE);
        LANES_UNARY(LANES_ELEM_LOGICAL_NOT);
    }
#undef LANES_UNARY
    return ERR_INVALID_VALUE;
}

extern "C" int lanes_where(void *stream, const LanesShape *shape, float *y, const LanesStrides *ys, const float *c, const LanesStrides *cs,
                           const float *a, const LanesStrides *as, const float *b, const LanesStrides *bs) {
    return mapLaunch(stream, shape, MapOperands<3>{y, *ys, {c, a, b}, {*cs, *as, *bs}}, Where{});
}

extern "C" int lanes_unary_backward(void *stream, int op, int from_y, float a0, float a1, const LanesShape *shape, float *dx,
                                    const LanesStrides *dxs, const float *dy, const LanesStrides *dys, const float *v, const LanesStrides *vs) {
    switch (op) {
    case LANES_ELEM_NEG:
        return mapLaunch(stream, shape, MapOperands<1>{dx, *dxs, {dy}, {*dys}}, GradNone<LANES_ELEM_NEG>{a0});
    case LANES_ELEM_SCALE:
        return mapLaunch(stream, shape, MapOperands<1>{dx, *dxs, {dy}, {*dys}}, GradNone<LANES_ELEM_SCALE>{a0});
    case LANES_ELEM_ADD_SCALAR:
        return mapLaunch(stream, shape, MapOperands<1>{dx, *dxs, {dy}, {*dys}}, GradNone<LANES_ELEM_ADD_SCALAR>{a0});
    case LANES_ELEM_FLOOR:
    case LANES_ELEM_CEIL:
    case LANES_ELEM_ROUND:
    case LANES_ELEM_SIGN: // dx = 0
        return mapLaunch(stream, shape, MapOperands<1>{dx, *dxs, {dy}, {*dys}}, GradNone<LANES_ELEM_FLOOR>{a0});
    }
    if (v == nullptr) {
        return ERR_INVALID_VALUE;
    }
    MapOperands<2> p{dx, *dxs, {dy, v}, {*dys, *vs}};
    const bool fromY = from_y != 0;
#define LANES_GRAD(OP)                                                                                                                     \
    case OP:                                                                                                                               \
        return mapLaunch(stream, shape, p, Grad<OP>{a0, a1, fromY})
    switch (op) {
        LANES_GRAD(LANES_ELEM_EXP);
        LANES_GRAD(LANES_ELEM_LOG);
        LANES_GRAD(LANES_ELEM_SIGMOID);
        LANES_GRAD(LANES_ELEM_SILU);
        LANES_GRAD(LANES_ELEM_TANH);
        LANES_GRAD(LANES_ELEM_SOFTPLUS);
        LANES_GRAD(LANES_ELEM_ERF);
        LANES_GRAD(LANES_ELEM_GELU);
        LANES_GRAD(LANES_ELEM_GELU_TANH);
        LANES_GRAD(LANES_ELEM_ABS);
        LANES_GRAD(LANES_ELEM_SQRT);
        LANES_GRAD(LANES_ELEM_RELU);
        LANES_GRAD(LANES_ELEM_LEAKY_RELU);
        LANES_GRAD(LANES_ELEM_ELU);
        LANES_GRAD(LANES_ELEM_CLAMP);
        LANES_GRAD(LANES_ELEM_SIN);
        LANES_GRAD(LANES_ELEM_COS);
        LANES_GRAD(LANES_ELEM_TAN);
        LANES_GRAD(LANES_ELEM_LOG1P);
        LANES_GRAD(LANES_ELEM_EXPM1);
    }
#undef LANES_GRAD
    return ERR_INVALID_VALUE;
}
