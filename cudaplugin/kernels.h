// kernels.h: the C interface of the kernels (one .cu file per op family:
// gemm.cu, conv.cu, elementwise.cu, reduce.cu, pooling.cu, copy.cu),
// shared by nvcc and cgo.
// Every launcher queues its kernel on stream (a cudaStream_t) and returns
// cudaGetLastError() as an int (0: queued).
#ifndef LANES_KERNELS_H
#define LANES_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

// Tile configurations of the SGEMM and Conv2D kernels; cudaplugin's
// planGemm picks one and computes the grid (plan.go: gemmConfigs).
enum { LANES_TILE_128 = 0, LANES_TILE_64 = 1 };

// LanesGemm is C = alpha·op(A)·op(B) + beta·C for gz matrices, row-major:
// op(A) is m×k, A(i, p) = a[i·lda + p], or a[p·lda + i] when trans_a;
// op(B) is k×n, B(p, j) = b[p·ldb + j], or b[j·ldb + p] when trans_b;
// C(i, j) = c[i·ldc + j]. Matrix z starts stride_* elements after matrix
// z-1. C is not read when beta is 0. vec_a (vec_b): 16-byte loads are
// safe: a is 16-byte aligned and lda and stride_a are multiples of 4.
typedef struct {
	int m, n, k;
	float alpha, beta;
	const float *a, *b;
	float *c;
	long long lda, ldb, ldc;
	long long stride_a, stride_b, stride_c;
	int trans_a, trans_b, vec_a, vec_b;
	// Split-K: with splits > 1, each product's k is cut into splits parts
	// summed by separate blocks into partial (splits·gz·m·n floats, device
	// memory), then added in order by a second kernel; 0 or 1: no split.
	// Only LANES_TILE_64 splits (cudaErrorInvalidValue otherwise).
	int splits;
	float *partial;
} LanesGemm;

// LanesConv is y = act(conv2d(x, w) + bias) in NCHW, as tensor.Conv2D:
// x [n, c, h, w], w [cout, c/groups, kh, kw], bias [cout] or NULL,
// y [n, cout, oh, ow]; an implicit GEMM per group (grid z) of m = cout/groups,
// n = n·oh·ow, k = c/groups·kh·kw. vec_w: w is 16-byte aligned and k is a
// multiple of 4. relu: apply max(0, ·) after the bias.
typedef struct {
	const float *x, *w, *bias;
	float *y;
	int n, c, h, w_, cout, kh, kw;
	int sh, sw, ph, pw, dh, dw, groups;
	int oh, ow;
	int vec_w, relu;
	// Split-K as LanesGemm's: partial holds splits·cout·n·oh·ow floats.
	int splits;
	float *partial;
} LanesConv;

// LanesCols is the im2col matrix of a chunk of a convolution, as
// LanesConv's geometry: output rows oy0..oy0+ohc-1 of imgs images (whole
// images: oy0 = 0, ohc = oh); rows c·kh·kw (channel, tap), columns
// imgs·ohc·ow (image, output pixel), row-major. xs are the input's
// strides (NCHW, in elements): lanes_im2col reads any view of it.
// lanes_col2im writes input rows iy0..iy0+ihc-1 of the input's gradient
// (dense NCHW, xs ignored), each element the sum, in tap order, of the
// matrix's elements that stand for it (a gather: no atomics), set, or
// added to it when acc.
typedef struct {
	int imgs, c, h, w_, kh, kw;
	int sh, sw, ph, pw, dh, dw;
	int oh, ow;
	int oy0, ohc, iy0, ihc, acc;
	long long xs[4];
} LanesCols;

// LanesPool is a 2-D max or average pooling of planes×h×w (NCHW with
// planes = n·c) into planes×oh×ow, as tensor.MaxPool2D and AvgPool2D; or,
// when adaptive is set, as tensor.AdaptiveMaxPool2D and AdaptiveAvgPool2D
// (window i of out over in: floor(i·in/out) .. ceil((i+1)·in/out); the
// kernel, stride and padding unused; the average summed in double, a NaN
// maximum the window's last, as the CPU's).
typedef struct {
	long long planes;
	int h, w, oh, ow, kh, kw, sh, sw, ph, pw;
	int exclude_pad, adaptive;
} LanesPool;

// LanesSample is a resampling of input planes n·c of h×w into ho×wo
// (sample.cu, tensor.SampleKernels): GridSample's mode (1 nearest, 2
// bilinear), padding (0 zeros, 1 border, 2 reflection) and align; or
// Interpolate's mode (tensor.InterpMode: 1 nearest, 2 bilinear, 3
// nearest-exact, 4 bicubic), align and float32 scales per axis
// (tensor.InterpolateScale). Every operand contiguous.
typedef struct {
	int n, c, h, w, ho, wo;
	int mode, padding, align;
	float scale_h, scale_w;
} LanesSample;

// LanesShape and LanesStrides describe the operands of a kernel that runs
// over the n elements of a shape (row-major, dims ≤ LANES_MAX_DIMS, each
// dimension > 1): each operand is a view of that shape, the strides
// placing its elements in its memory, in elements (0 along a dimension
// the operand broadcasts; negative where it runs backwards). The plugin
// merges dimensions that are contiguous in every operand and drops those
// of size 1 before it fills them (operand.go: merge), so most operands
// have one to three dimensions, and loops over dimensions beyond
// LANES_MAX_DIMS with one launch each. This is the descriptor of every strided
// or broadcasting elementwise kernel: common.cuh's offsetOf turns an
// element's index into each operand's offset.
#define LANES_MAX_DIMS 8
typedef struct {
	int dims;
	long long n;
	long long shape[LANES_MAX_DIMS];
} LanesShape;
typedef struct {
	long long s[LANES_MAX_DIMS];
} LanesStrides;

// LanesReduce is a kernel over rows (reduce.cu): outer holds the
// dimensions of the rows (one result each, or one softmax), inner those
// of a row's elements (the reduced axes, or a softmax's axis), each
// operand's strides over them (xo, xi: the input; yo, yi: the output; zo,
// zi: a second input). Operands that a kernel does not take are ignored.
typedef struct {
	LanesShape outer;
	LanesStrides yo, xo, zo;
	LanesShape inner;
	LanesStrides yi, xi, zi;
} LanesReduce;

// LanesNorm is a BatchNorm, LayerNorm or RMSNorm pass (norm.cu) over the
// rows of r: BatchNorm's channels, LayerNorm's and RMSNorm's rows (for
// their dgamma and dbeta, the elements of the normalized shape, each over
// the rows). x (xo, xi), dy (zo, zi) and y, the result or dx (yo, yi),
// are strided; the others contiguous: mean and inv_std per row (RMSNorm:
// mean NULL, inv_std the reciprocal root mean square), gamma and beta per
// row (BatchNorm) or per element of a row (LayerNorm, RMSNorm: beta
// NULL), NULL for 1 and 0; run_mean and run_var (BatchNorm, or NULL) per
// row; dgamma and dbeta (or NULL) as gamma.
enum { LANES_BATCHNORM = 0, LANES_LAYERNORM = 1, LANES_RMSNORM = 2 };
typedef struct {
	LanesReduce r;
	float *y;
	const float *x, *dy;
	float *mean, *inv_std;
	const float *gamma, *beta;
	float *run_mean, *run_var;
	float *dgamma, *dbeta;
	int kind, training;
	float eps, momentum;
} LanesNorm;

// LanesIndex is the walk of an index kernel (index.cu) over the positions
// k < len along an axis and r over rest, the other dimensions (merged):
// y, x and the index idx are at offsetOf(rest, ys|xs|is, r) plus k, or the
// index value v, times ya|xa|ia. Values name positions 0..n-1, or -n..-1
// from the end when negative is set.
typedef struct {
	LanesShape rest;
	LanesStrides ys, xs, is;
	long long len, ya, xa, ia;
	long long n;
	int negative;
} LanesIndex;

// LanesOptTable is the parameters an optimizer step updates in one launch
// (optim.cu): tensor i has start[i+1] - start[i] elements (start[0] = 0) at
// p[i], its gradient g[i] and state slots s0..s2[i] (SGD: the momentum
// buffer; Adam: m, v and, with amsgrad, the maximum of v; RMSProp: the
// square average, the gradient average, the momentum buffer; Adagrad: the
// sum of squares; Adamax: m and the infinity norm; NAdam, RAdam: m, v;
// NULL where the step reads none), a[i], b[i] and c[i] its scalars (SGD:
// a ≠ 0 when the buffer has started; Adam: the bias corrections' step size
// and 1/√(1-β₂ᵗ); Adagrad, Adamax: a, the step size; NAdam: a and b the
// factors of g/d and m/d, c 1/√(1-β₂ᵗ); RAdam: a the factor, b ≠ 0 when
// the step is rectified). It is the kernel's argument, by value: at most
// LANES_OPT_TENSORS tensors a launch. scalars, when not NULL, is device
// memory holding a[i], b[i], c[i] as scalars[3i], scalars[3i+1],
// scalars[3i+2] instead (the steps that count, in a CUDA graph, whose
// scalars change each replay).
#define LANES_OPT_TENSORS 40
enum {
	LANES_OPT_SGD = 0, LANES_OPT_ADAM = 1, LANES_OPT_RMSPROP = 2, LANES_OPT_ADAGRAD = 3, LANES_OPT_ADAMAX = 4, LANES_OPT_NADAM = 5,
	LANES_OPT_RADAM = 6
};
typedef struct {
	float *p[LANES_OPT_TENSORS];
	const float *g[LANES_OPT_TENSORS];
	float *s0[LANES_OPT_TENSORS], *s1[LANES_OPT_TENSORS], *s2[LANES_OPT_TENSORS];
	long long start[LANES_OPT_TENSORS + 1];
	float a[LANES_OPT_TENSORS], b[LANES_OPT_TENSORS], c[LANES_OPT_TENSORS];
	const float *scalars;
	int count;
} LanesOptTable;
typedef struct {
	int kind;
	float lr, momentum, dampening, weight_decay, beta1, beta2, eps, alpha;
	int nesterov, decoupled, centered, amsgrad;
} LanesOptParams;

int lanes_sgemm(void *stream, int cfg, const LanesGemm *g, int gx, int gy, int gz);
int lanes_conv2d(void *stream, int cfg, const LanesConv *c, int gx, int gy, int gz);
int lanes_im2col(void *stream, const LanesCols *c, const float *x, float *col);
int lanes_col2im(void *stream, const LanesCols *c, const float *col, float *dx);
// y[i] = act(x[i] + bias[(i / inner) % channels]); bias may be NULL; act 0: none, 1: ReLU.
int lanes_bias_act(void *stream, float *y, const float *x, const float *bias, long long n, int channels, long long inner, int act);
// The Elementwise family's ops (elementwise.cu), as package tensor's
// ElemOp names them (cudaplugin maps one to the other).
enum {
	LANES_ELEM_ADD, LANES_ELEM_SUB, LANES_ELEM_MUL, LANES_ELEM_DIV, LANES_ELEM_MAXIMUM, LANES_ELEM_MINIMUM, LANES_ELEM_POW,
	LANES_ELEM_GREATER, LANES_ELEM_GREATER_EQUAL, LANES_ELEM_LESS, LANES_ELEM_LESS_EQUAL, LANES_ELEM_EQUAL, LANES_ELEM_NOT_EQUAL,
	LANES_ELEM_EXP, LANES_ELEM_LOG, LANES_ELEM_SIGMOID, LANES_ELEM_SILU, LANES_ELEM_TANH, LANES_ELEM_SOFTPLUS, LANES_ELEM_ERF,
	LANES_ELEM_GELU, LANES_ELEM_GELU_TANH, LANES_ELEM_ABS, LANES_ELEM_NEG, LANES_ELEM_SQRT, LANES_ELEM_RELU,
	LANES_ELEM_LEAKY_RELU, LANES_ELEM_ELU, LANES_ELEM_CLAMP, LANES_ELEM_SCALE, LANES_ELEM_ADD_SCALAR, LANES_ELEM_FILL,
	// tensor/elemfn.go's: binary, then unary (the masks without a gradient last).
	LANES_ELEM_MOD, LANES_ELEM_FMOD, LANES_ELEM_LOGICAL_AND, LANES_ELEM_LOGICAL_OR, LANES_ELEM_LOGICAL_XOR,
	LANES_ELEM_SIN, LANES_ELEM_COS, LANES_ELEM_TAN, LANES_ELEM_LOG1P, LANES_ELEM_EXPM1, LANES_ELEM_FLOOR, LANES_ELEM_CEIL,
	LANES_ELEM_ROUND, LANES_ELEM_SIGN, LANES_ELEM_IS_NAN, LANES_ELEM_IS_INF, LANES_ELEM_IS_FINITE, LANES_ELEM_LOGICAL_NOT
};
// The elementwise launchers run over shape, each operand with its strides
// (stride 0: broadcast); dst must not overlap an input but as the very
// same view. y = op(a, b) for the binary ops and comparisons (1 or 0).
int lanes_binary(void *stream, int op, const LanesShape *shape, float *y, const LanesStrides *ys, const float *a, const LanesStrides *as,
                 const float *b, const LanesStrides *bs);
// y = op(x; a0, a1) for the unary ops; x is not read (may be NULL) for LANES_ELEM_FILL (y = a0).
int lanes_unary(void *stream, int op, float a0, float a1, const LanesShape *shape, float *y, const LanesStrides *ys, const float *x,
                const LanesStrides *xs);
// y = c != 0 (NaN included) ? a : b.
int lanes_where(void *stream, const LanesShape *shape, float *y, const LanesStrides *ys, const float *c, const LanesStrides *cs,
                const float *a, const LanesStrides *as, const float *b, const LanesStrides *bs);
// dx = dy·f'(·), the gradient of unary op (not FILL) as tensor.UnaryGrad:
// v is the op's input x, or its output y when from_y; NULL (not read) for
// NEG, SCALE, ADD_SCALAR, FLOOR, CEIL, ROUND and SIGN (0).
int lanes_unary_backward(void *stream, int op, int from_y, float a0, float a1, const LanesShape *shape, float *dx,
                         const LanesStrides *dxs, const float *dy, const LanesStrides *dys, const float *v, const LanesStrides *vs);
// y = the reduction op (tensor.ReduceOp: 1 Sum, 2 Max, 3 Min, 4 Mean,
// 5 Var, 6 Std, 7 LogSumExp, 8 Prod, 9-11 Norm p = 1, 2, Inf, 12 Any,
// 13 All; ddof Var's and Std's) of each row of x, or
// y += it (accumulate).
int lanes_reduce(void *stream, int op, const LanesReduce *r, float *y, const float *x, int ddof, int accumulate);
int lanes_reduce_norm(void *stream, const LanesReduce *r, float *y, const float *x, double p);
// y = the index of the first maximum (op 1) or minimum (op 2) of each row of x, or of its first NaN.
int lanes_argreduce(void *stream, int op, const LanesReduce *r, float *y, const float *x);
// y = softmax (log 0) or log softmax (log 1) of each row of x; y may be x.
int lanes_softmax(void *stream, int log, const LanesReduce *r, float *y, const float *x);
// dx (strides yo, yi) = the gradient of the softmax (log 0) or log softmax of
// each row, given its output y (xo, xi) and dy (zo, zi); dx may be y or dy.
int lanes_softmax_backward(void *stream, int log, const LanesReduce *r, float *dx, const float *y, const float *dy);
// pass 0: forward (y, mean and inv_std; training: the batch's, updating
// run_mean and run_var when not NULL; else from them; RMSNorm: y and
// inv_std); 1: backward (dx in y; BatchNorm's dgamma and dbeta); 2:
// LayerNorm's dgamma and dbeta, RMSNorm's dgamma.
int lanes_norm(void *stream, int pass, const LanesNorm *p);
// kind 0: max (idx, if not NULL, gets row·w + column of each maximum), 1: average.
int lanes_pool2d(void *stream, int kind, const LanesPool *p, float *y, float *idx, const float *x);
// dx = the gradient of max (kind 0: dy added at each index idx, atomically; dx
// must be zeroed; an index that names no element of its plane is skipped and
// reported in err, two zeroed floats: err[0]'s bits become 1, err[1] the value)
// or average pooling (kind 1: idx and err unused) given dy; all contiguous.
int lanes_pool2d_backward(void *stream, int kind, const LanesPool *p, float *dx, const float *dy, const float *idx, float *err);
// GridSample (sample.cu): pass 0 sets y [n,c,ho,wo] from x and grid
// [n,ho,wo,2]; pass 1 sets dx [n,c,h,w] (one thread per plane, summing in
// the double scratch acc of n·c·h·w, in the CPU's order, the grid points'
// source coordinates after them: acc holds n·c·h·w + 2·n·ho·wo doubles);
// pass 2 sets dgrid [n,ho,wo,2] (one thread per grid point), both given dy.
int lanes_grid_sample(void *stream, int pass, const LanesSample *p, float *y, double *acc, const float *x, const float *grid, const float *dy);
// AffineGrid: pass 0 sets grid [n,ho,wo,2] from theta [n,2,3]; pass 1 sets
// dtheta [n,2,3] from dgrid (one thread per element, summed in double).
int lanes_affine_grid(void *stream, int pass, const LanesSample *p, float *y, const float *x);
// Interpolate: pass 0 sets y [n,c,ho,wo] from x [n,c,h,w]; pass 1 sets dx
// from dy (one thread per plane, summing in the double scratch acc of
// n·c·h·w, in the CPU's order).
int lanes_interpolate(void *stream, int pass, const LanesSample *p, float *y, double *acc, const float *x);
// mode 0 (gather): y[r, k] = x[r, v]; 1 (scatter-add): y[r, v] += x[r, k],
// atomically; 2 (one-hot): y[r, v] = 1; 3 (scatter): y[r, v] = x[r, k],
// one thread per r walking k in order (the later k wins); v the index
// value at (r, k). A value
// that names no position is skipped and reported in err (as lanes_pool2d_backward's).
int lanes_index(void *stream, int mode, const LanesIndex *p, float *y, const float *x, const float *idx, float *err);
// MaskedSelect: y[k·ystride] = the k-th element of x, in the row-major order
// of sh, whose element of mask is nonzero (NaN counts); scratch holds
// 2·⌈n/LANES_SELECT_CHUNK⌉ long longs (the chunks' counts, then their first
// positions).
#define LANES_SELECT_CHUNK 256
int lanes_masked_select(void *stream, const LanesShape *sh, const LanesStrides *xs, const LanesStrides *ms, float *y,
                        long long ystride, const float *x, const float *mask, long long *scratch);
// CrossEntropy over the rows of logits (r: outer the rows, inner the classes;
// logits at xo, xi, dlogits at yo, yi, or NULL): row_loss (rows doubles of
// device memory) gets each row's logsumexp - logit[label], loss their mean,
// dlogits (softmax - onehot)/rows; labels[row·label_stride] that are not
// classes give the row NaN and are reported in err (as lanes_index's).
int lanes_cross_entropy(void *stream, const LanesReduce *r, float *dlogits, const float *logits, const float *labels,
	long long label_stride, double *row_loss, float *loss, float *err);
// The arguments of lanes_point_loss: the pointwise loss kind
// (tensor.LossKind: 0 MSE, 1 L1, 2 SmoothL1 (beta arg), 3 Huber (delta arg),
// 4 KLDiv (log_target), 5 BCE (weight w), 6 BCEWithLogits (pos_weight w))
// of pred and target over shape, every operand strided (w and dloss NULL:
// 1). reduction is tensor.LossReduction's (0 mean, 1 sum, 2 none, 3
// batchmean): for none, loss (or NULL) gets each term at ls and the
// gradient's factor is dloss at ds; else loss (or NULL) gets the terms'
// sum over divisor (1 for a sum), the factor dloss[0] (NULL: 1) over
// divisor. grad (or NULL) gets each term's derivative times the factor.
// fused (MSE and BCEWithLogits with the mean and no option or dloss) is
// their float32 formulas, the factor scale. partial holds 1024 doubles of
// device memory; a BCE input outside [0, 1] is reported in err (as
// lanes_index's) and gives NaN.
typedef struct {
	int kind, reduction, fused, log_target;
	float arg, scale;
	double divisor;
	LanesShape shape;
	LanesStrides ls, gs, ps, ts, ws, ds;
	float *loss, *grad, *pred, *target, *w, *dloss, *partial, *err;
} LanesPointLoss;
int lanes_point_loss(void *stream, const LanesPointLoss *p);
// The arguments of lanes_class_loss: the loss over the classes of input
// [n, c, s] (contiguous; logits: log-softmax first, else
// log-probabilities) and target [n, s] class indices (soft: [n, c, s]
// probabilities), weight w [c] (or NULL: 1), ignore: a class index
// equal to ign is ignored, eps the label smoothing; reduction as
// lanes_point_loss's. term and wsum hold n·s doubles each, den one;
// norm (with dx and logits, else NULL) 2·n·s: each position's logit
// maximum and log Σ e^(x - max), saved by the loss pass for the gradient's.
// loss (or NULL) gets the terms [n, s] (none) or their sum, over the sum
// of the weights of the targets not ignored for the mean; dx (or NULL:
// contiguous [n, c, s]) the gradient times dloss (none: dloss[n, s];
// else dloss[0] over the mean's divisor; NULL: 1). A target that is no
// class and not ign is reported in err and gives NaN.
typedef struct {
	int logits, soft, ignore, reduction;
	float ign, eps;
	long long n, c, s;
	float *loss, *dx, *x, *target, *w, *dloss, *term, *wsum, *den, *norm, *err;
} LanesClassLoss;
int lanes_class_loss(void *stream, const LanesClassLoss *p);
// One optimizer step (h->kind) over every tensor of t.
int lanes_optim(void *stream, const LanesOptTable *t, const LanesOptParams *h);
// Philox4x32-10 (random.cu, as tensor's Random family): element first + i
// of the op (row-major; element i of shape) gets word e mod 4 of counter
// block offset + ⌊e/4⌋ (e = first + i) under key seed; y is its uniform
// ⌊w/2⁸⌋·2⁻²⁴ (x NULL), or x·0 where ⌊w/2⁸⌋ < thr, else x·scale.
int lanes_philox(void *stream, const LanesShape *shape, long long first, float *y, const LanesStrides *ys, const float *x, const LanesStrides *xs,
                 unsigned thr, float scale, unsigned long long seed, unsigned long long offset);
// The Sort family (sort.cu), over the rows of r (outer: the rows, inner:
// the axis; y: vals, x: x, z: idx). lanes_sort sorts each row (stable;
// -0 as +0, NaN above +Inf; desc: largest first) through scratch
// (blocks·p keys, p = lanes_sort_pad(row length), one block per row in a
// grid of blocks; NULL when p is at most LANES_SORT_SHARED, which sorts
// in shared memory) and writes its first k positions as floats
// to idx and their values to vals (NULL: none); median: the element at
// position (n-1)/2 of the ascending order, or the row's first NaN, and
// its position (vals and idx at the row's place, k unused).
#define LANES_SORT_SHARED 2048
// lanes_sort_pad is the length a row of n is padded to: the least power of
// 2 at least n (1 for n ≤ 1).
static inline long long lanes_sort_pad(long long n) {
    long long p = 1;
    while (p < n) p *= 2;
    return p;
}
int lanes_sort(void *stream, const LanesReduce *r, float *vals, float *idx, const float *x, unsigned long long *scratch,
               long long blocks, long long k, int desc, int median);
// y = the cumulative sums (prod 0) or products of each row of x, a double
// running value, one thread per row.
int lanes_scan(void *stream, const LanesReduce *r, float *y, const float *x, int prod);
// dx (y) = the gradient of the cumulative product of each row of x given
// dy (z), as tensor.CumProdBackward; scratch holds rows·n doubles.
int lanes_cumprod_backward(void *stream, const LanesReduce *r, float *dx, const float *x, const float *dy, double *scratch);
// y = x over shape, each with its strides: gather, scatter, broadcast.
int lanes_copy(void *stream, const LanesShape *shape, float *y, const LanesStrides *ys, const float *x, const LanesStrides *xs);

#ifdef __cplusplus
}
#endif

#endif
