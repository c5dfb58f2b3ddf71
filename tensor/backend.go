package tensor

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/lanesgo/lanes/dispatch"
)

// Where ops run (docs/device-backends.md has the whole design). Every op
// belongs to a family, an interface below; each place ops run, the CPU or
// a device, has a Backend holding its implementation of each family. The
// public function (MatMul, Conv2D, ...) checks its arguments, finds the
// device of its operands (dst included) and calls that device's
// implementation:
//
//   - Operands on two devices panic, naming the op, the shapes and the
//     devices; so do host operands beside device ones (MatMul and the
//     convolutions included), except a 0-d host tensor (a scalar), which
//     the device's implementation reads.
//   - Operands on a device run on its Backend whatever dispatch.Place
//     says: the CPU cannot read device memory. A device that lacks the
//     family, or is no longer registered, or whose implementation returns
//     an error, makes the op panic naming the op, the shapes, the devices
//     and the cause (the public functions have no error return; a
//     plugin's own methods, such as (*cudaplugin.GPU).MatMul, return the
//     error instead). Nothing is copied to the host behind the caller's
//     back.
//   - Operands all on the host run on the CPU's Backend, except MatMul
//     and Conv2D work that dispatch.Place sends to the offload device
//     (SetOffload); an error there leaves the work to the CPU, which
//     overwrites dst.

// MatMulKernels is the family of matrix products. The public function
// has checked the shapes (dst has the shape of MatMul(a, b)).
type MatMulKernels interface {
	// MatMul sets dst to MatMul(a, b). Any of dst, a and b may be views;
	// on a device Backend they are all on the device, or all on the host
	// for work offloaded to it (SetOffload).
	MatMul(dst, a, b *Tensor) error
}

// ConvKernels is the family of 2-D convolutions and their gradients. The
// public functions have checked the shapes, the parameters and bias. On a
// device Backend the operands are all on the device, or all on the host
// for a Conv2D offloaded to it (SetOffload).
type ConvKernels interface {
	// Conv2D sets dst to Conv2D(x, w, bias, p); bias may be nil.
	Conv2D(dst, x, w, bias *Tensor, p ConvParams) error
	// Conv2DBackwardInput sets dx to the gradient of Conv2D with respect
	// to its input, given dy and the weight w.
	Conv2DBackwardInput(dx, dy, w *Tensor, p ConvParams) error
	// Conv2DBackwardWeight sets dw to the gradient of Conv2D with respect
	// to its weight, given dy and the input x.
	Conv2DBackwardWeight(dw, dy, x *Tensor, p ConvParams) error
}

// ElementwiseKernels is the family of elementwise ops (elementwise.go).
// The public function has checked that the operands broadcast to dst's
// shape under NumPy's rules; the implementation broadcasts them (a
// dimension of size 1, or missing, repeats) and reads any strides. The
// ops and their arguments are ElemOp's.
type ElementwiseKernels interface {
	// Binary sets dst = op(a, b) for the binary ops and comparisons
	// (ElemAdd ... ElemNotEqual).
	Binary(op ElemOp, dst, a, b *Tensor) error
	// Unary sets dst = op(x; arg) for the unary ops (ElemExp ...
	// ElemFill); x is nil for ElemFill.
	Unary(op ElemOp, dst, x *Tensor, arg [2]float32) error
	// Where sets dst to a where cond is nonzero (NaN included), else b.
	Where(dst, cond, a, b *Tensor) error
	// UnaryBackward sets dx = dy·f'(x), the gradient of the unary op f =
	// op(·; arg) (ElemExp ... ElemAddScalar, not ElemFill), given the op's
	// input x or its output y: exactly the one UnaryGrad documents for op
	// is given, the other is nil (both are nil for ElemNeg, ElemScale and
	// ElemAddScalar). dy, x and y have dx's shape (no broadcasting), any
	// strides.
	UnaryBackward(op ElemOp, dx, dy, x, y *Tensor, arg [2]float32) error
}

// ReduceKernels is the family of reductions (reduce.go, moments.go). The
// public functions have checked the axes and shapes. dst and x are as
// the public function made or was given them: on a device Backend both
// are on the device.
type ReduceKernels interface {
	// Reduce sets dst to op over x's axes (distinct, ascending, none
	// negative; every axis for a reduction over all of them), dst having
	// x's rank with size 1 along axes (keepdims: the public function drops
	// them). ddof is Var's and Std's degrees of freedom. A reduction of
	// no elements gives Sum 0, Mean, Var and Std NaN, LogSumExp -Inf (Max
	// and Min panic before the call). axes must not be written.
	Reduce(op ReduceOp, dst, x *Tensor, axes []int, ddof int) error
	// ArgReduce sets dst to the index, as a float32, of the maximum
	// (ArgOpMax) or minimum (ArgOpMin) of x along axis, dst having x's
	// shape with size 1 along axis. The axis is not empty and has at most
	// 2²⁴ elements.
	ArgReduce(op ArgOp, dst, x *Tensor, axis int) error
	// Softmax sets dst, of x's shape, to the softmax of x along axis
	// (LogSoftmax when log is set).
	Softmax(dst, x *Tensor, axis int, log bool) error
	// SumTo adds to dst the sums of x over the axes along which dst
	// broadcasts to x's shape (SumToInto).
	SumTo(dst, x *Tensor) error
	// SoftmaxBackward sets dx to the gradient with respect to x of
	// Softmax(x, axis) (LogSoftmax when log is set), given its output y
	// and the gradient dy of y, all three of one shape: dx = y·(dy - Σ
	// dy·y) (softmax) or dy - e^y·Σ dy (log), the sums along axis.
	SoftmaxBackward(dx, y, dy *Tensor, axis int, log bool) error
	// NormP sets dst (as Reduce's) to Norm(x, p) over x's axes for any
	// order p but NaN, as Norm computes it: in float64, the count of
	// nonzero elements (NaN included) for p = 0, max|x| or min|x| for
	// ±Inf, else m·(Σ(|x|/m)^p)^(1/p) with m = max|x| (min|x| for p < 0;
	// 0 when p < 0 and an element is 0; m itself when it is 0 or Inf),
	// NaN when an element is and p ≠ 0; rounded once to float32. The
	// public function has excluded ±Inf and p < 0 over no element.
	NormP(dst, x *Tensor, axes []int, p float64) error
}

// NormKernels is the family of normalizations (norm.go, groupnorm.go's
// RMSNorm; GroupNorm and InstanceNorm compose LayerNorm). The public
// functions have checked the shapes and parameters and filled in the
// parameters' defaults (Momentum, Eps and Dims are not zero): x is [N, C,
// ...] for BatchNorm, y, dy and dx have x's shape; gamma, beta, the
// running statistics and NormStats' Mean and InvStd have one element per
// group (a channel for BatchNorm, a row for LayerNorm: LayerNorm's gamma
// and beta have the normalized trailing shape, its statistics the leading
// one), in row-major order whatever their shape. Gamma and Beta may be
// nil (1 and 0). The running statistics are both nil or both contiguous.
type NormKernels interface {
	// BatchNorm sets y to BatchNorm(x, p) and s to the mean and
	// 1/√(variance + eps) it used per channel: the batch's (biased
	// variance) when p.Training, which also updates p.RunningMean and
	// p.RunningVar when they are not nil (r = (1 - Momentum)·r +
	// Momentum·statistic, with the unbiased variance); else the running
	// ones (then not nil). In training each channel has at least two
	// elements.
	BatchNorm(y *Tensor, s NormStats, x *Tensor, p BatchNormParams) error
	// BatchNormBackward sets dx, dgamma and dbeta (either of the last two
	// may be nil) to the gradients of BatchNorm(x, p), which returned s,
	// given dy; p.Training says whether the batch statistics' gradient is
	// included. It reads p.Gamma and p.Training only (the other tensors
	// of p are nil).
	BatchNormBackward(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p BatchNormParams) error
	// LayerNorm sets y to LayerNorm(x, p) and s to each row's mean and
	// 1/√(variance + eps).
	LayerNorm(y *Tensor, s NormStats, x *Tensor, p LayerNormParams) error
	// LayerNormBackward sets dx, dgamma and dbeta (either of the last two
	// may be nil) to the gradients of LayerNorm(x, p), which returned s,
	// given dy. It reads p.Gamma and p.Dims (p.Beta is nil).
	LayerNormBackward(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p LayerNormParams) error
	// RMSNorm sets y to RMSNorm(x, p) and rrms (one element per row of
	// p.Dims trailing axes) to each row's 1/√(mean(x²) + eps), the mean
	// square summed in float64. p.Dims and p.Eps are filled in (not
	// zero); rrms is a vector as the statistics are.
	RMSNorm(y, rrms, x *Tensor, p RMSNormParams) error
	// RMSNormBackward sets dx and dgamma (may be nil; nil when p.Gamma is)
	// to the gradients of RMSNorm(x, p), which returned rrms, given dy.
	RMSNormBackward(dx, dgamma, dy, x, rrms *Tensor, p RMSNormParams) error
}

// CopyKernels is the family of copies (view.go, join.go). The public
// functions have checked the shapes. On a device Backend the operands are
// all on the device.
type CopyKernels interface {
	// CopyInto copies src into dst, src broadcasting to dst's shape; both
	// may have any strides (Contiguous, Clone, CopyInto).
	CopyInto(dst, src *Tensor) error
	// Concat copies ts, joined along axis, into dst (Concat; Stack gives
	// it views of its operands with the new axis of size 1).
	Concat(dst *Tensor, axis int, ts []*Tensor) error
}

// PoolKernels is the family of 2-D poolings and their gradients (pool.go,
// adaptivepool.go). The public functions have checked the shapes (NCHW;
// [..., H, W] for the adaptive ones) and the parameters;
// the operands are all on the Backend's device. On the host, no output
// overlaps an input.
type PoolKernels interface {
	// MaxPool2D sets dst to MaxPool2D(x, p) and indices to the index of
	// each maximum in its input plane (as float32; the plane has at most
	// MaxIndexPlane elements when indices is not nil). Either may be nil
	// to skip it, not both.
	MaxPool2D(dst, indices, x *Tensor, p PoolParams) error
	// AvgPool2D sets dst to AvgPool2D(x, p).
	AvgPool2D(dst, x *Tensor, p PoolParams) error
	// MaxPool2DBackward sets dx (the input's shape) to the gradient of
	// MaxPool2D: zero but for each dy element added at its index. An index
	// that names no element of its plane must make it return an error,
	// never write outside dx (the public function cannot read device
	// indices to check them).
	MaxPool2DBackward(dx, dy, indices *Tensor, p PoolParams) error
	// AvgPool2DBackward sets dx (the input's shape) to the gradient of
	// AvgPool2D: each dy element spread over its window.
	AvgPool2DBackward(dx, dy *Tensor, p PoolParams) error
	// AdaptiveMaxPool2D sets dst [..., OH, OW] to AdaptiveMaxPool2D(x,
	// [OH, OW]) of x [..., H, W] (any leading axes) and indices (nil to
	// skip them) to the index of each maximum in its input plane.
	AdaptiveMaxPool2D(dst, indices, x *Tensor) error
	// AdaptiveAvgPool2D sets dst [..., OH, OW] to AdaptiveAvgPool2D(x,
	// [OH, OW]), each mean summed in float64.
	AdaptiveAvgPool2D(dst, x *Tensor) error
	// AdaptiveMaxPool2DBackward sets dx to the gradient of
	// AdaptiveMaxPool2D, the output size dy's; a bad index is an error,
	// never a stray write, as MaxPool2DBackward's.
	AdaptiveMaxPool2DBackward(dx, dy, indices *Tensor) error
	// AdaptiveAvgPool2DBackward sets dx to the gradient of
	// AdaptiveAvgPool2D, the output size dy's: each dx element the sum,
	// windows in row-major order, of dy/(window size) in float32.
	AdaptiveAvgPool2DBackward(dx, dy *Tensor) error
}

// IndexKernels is the family of lookups by index and their gradients
// (index.go). Indices are float32 tensors holding integers (exact below
// MaxIndexPlane); along an axis of length n, -n..n-1 name its positions,
// negative ones counting from the end. The public functions have checked
// the shapes and the axis (in range, not negative) but not the index
// values, which a device's implementation cannot have read: an index that
// names no position (out of range, not an integer, NaN), or a label of
// OneHot outside 0..classes-1, must make it return an error, never read
// or write outside its operands. (The CPU's returns an error that the
// public function panics with, naming itself and the value; it checks
// the indices before it writes into a tensor of the caller's.) The
// operands are all on the Backend's device; on the host dst overlaps no
// other operand.
type IndexKernels interface {
	// IndexSelect sets dst.Index(axis, i) to t.Index(axis, index[i]) for
	// each i of the 1-D index; dst has t's shape but index's length along
	// axis.
	IndexSelect(dst, t *Tensor, axis int, index *Tensor) error
	// Gather sets dst[p] to t[p with p[axis] replaced by index[p]] for
	// each position p of index, which has t's rank; dst has index's shape.
	Gather(dst, t *Tensor, axis int, index *Tensor) error
	// IndexAdd adds src.Index(axis, i) to dst.Index(axis, index[i]) for
	// each i of the 1-D index (repeated indices accumulate); src has dst's
	// shape but index's length along axis. It is IndexSelect's adjoint.
	IndexAdd(dst *Tensor, axis int, index, src *Tensor) error
	// ScatterAdd adds src[p] to dst[p with p[axis] replaced by index[p]]
	// for each position p of index, which has src's shape and dst's rank
	// (repeated targets accumulate). It is Gather's adjoint.
	ScatterAdd(dst *Tensor, axis int, index, src *Tensor) error
	// Scatter sets dst[p with p[axis] replaced by index[p]] to src[p] for
	// each position p of index, which has src's shape and dst's rank; a
	// target named twice takes the later of src's elements in row-major
	// order (deterministically: the positions naming one target differ
	// only along axis, so a walk along axis per position of the others
	// orders them).
	Scatter(dst *Tensor, axis int, index, src *Tensor) error
	// MaskedSelect sets dst, 1-D, to the elements of x whose element of
	// mask is nonzero (NaN included), in row-major order; x and mask have
	// one shape (the public function broadcasts them), dst as many
	// elements as mask has nonzero ones. On the host dst overlaps
	// neither; a device's implementation copies one that does first.
	MaskedSelect(dst, x, mask *Tensor) error
	// OneHot sets to 1 the element of dst at each label (labels are
	// integers in 0..classes-1): dst, of labels' shape plus a last axis of
	// classes, is a new tensor, contiguous and zero-filled.
	OneHot(dst, labels *Tensor) error
}

// LossKernels is the family of losses (loss.go, lossopt.go): one method
// for the losses over classes, one for the pointwise losses, each
// computing in one call the loss and, unless nil, its gradient with
// respect to the prediction. The public functions have checked the
// shapes and the options; all operands are on the Backend's device.
//
// loss is 0-d, or for LossNone a new contiguous tensor of the terms'
// shape; it may be nil when a gradient is asked for. dloss is the
// upstream gradient of the loss (of loss's shape), or nil for a gradient
// of 1: the gradient is dloss (each term's own element for LossNone, else
// the 0-d dloss divided by the reduction's divisor) times each term's
// derivative. The gradient is nil or of the prediction's shape.
//
// A value that the public function cannot check because it is on a
// device (a class label, BCE's probability) and that is wrong is an error
// naming it; a device that finds one only after the call returned (it
// checks the values in its kernel) reports it as its error from a later
// operation, and the loss and the gradients of the bad positions are NaN
// meanwhile. (The CPU's checks every value before it writes anything.)
type LossKernels interface {
	// Class sets loss to the class loss a of input [N, C, d...] and
	// target: class indices [N, d...] as float32, or probabilities of
	// input's shape (a.Soft). With a.Logits the input holds logits
	// (CrossEntropy, CrossEntropyWith), else log-probabilities (NLL);
	// the terms and the divisor of LossMean are CrossEntropyWith's and
	// NLL's. CrossEntropy is the case of [N, C] logits, LossMean and the
	// zero options otherwise, with dloss nil: the loss the mean over the
	// rows of logsumexp(row) - row[label], the gradient
	// (softmax(row) - onehot(label))/N.
	Class(loss, dinput, dloss, input, target *Tensor, a ClassLossArgs) error
	// Pointwise sets loss to the pointwise loss a.Kind of pred and
	// target (pred's shape), its terms reduced by a.Reduction (LossMean:
	// over every element; LossBatchMean: over the first axis' size).
	// MSE and BCEWithLogits are the cases of LossMean and the zero
	// options otherwise, with dloss nil: the mean of (pred - target)² with
	// gradient 2(pred - target)/n, and the mean of max(x, 0) - x·t +
	// log(1 + e^-|x|) with gradient (sigmoid(x) - t)/n.
	Pointwise(loss, dpred, dloss, pred, target *Tensor, a PointLossArgs) error
}

// ClassLossArgs are the options of LossKernels.Class, checked by the
// public function.
type ClassLossArgs struct {
	Logits    bool // the input holds logits (cross entropy), else log-probabilities (NLL)
	Soft      bool // the target holds probabilities, of the input's shape
	Reduction LossReduction
	// Weight is nil or a weight per class [C].
	Weight *Tensor
	// Ignore: a class-index target equal to IgnoreIndex is ignored (no
	// term, no gradient, not counted by the mean).
	Ignore      bool
	IgnoreIndex float32
	// Smoothing is the label smoothing ε in [0, 1] (with Logits).
	Smoothing float32
}

// LossKind names a pointwise loss of LossKernels.Pointwise (the
// functions of the same names give their terms and derivatives).
type LossKind int

const (
	LossMSE           LossKind = iota // (x - t)²
	LossL1                            // |x - t|
	LossSmoothL1                      // SmoothL1 with beta Arg
	LossHuber                         // Huber with delta Arg
	LossKLDiv                         // KLDiv (LogTarget)
	LossBCE                           // BCE of probabilities x, weighted by Weight
	LossBCEWithLogits                 // BCEWithLogitsWith, PosWeight
)

// PointLossArgs are the options of LossKernels.Pointwise, checked by the
// public function. Weight and PosWeight are nil or broadcast to the
// prediction's shape (views of zero strides, as BroadcastTo makes).
type PointLossArgs struct {
	Kind      LossKind
	Reduction LossReduction
	Arg       float32 // SmoothL1's beta, Huber's delta
	LogTarget bool    // KLDiv: the target holds log-probabilities
	Weight    *Tensor // BCE
	PosWeight *Tensor // BCEWithLogits
}

// OptimKernels is the family of multi-tensor optimizer steps (optim.go,
// optim_adaptive.go): one call updates every parameter. The public
// functions have checked the lists (one entry per parameter; every
// tensor contiguous, of its parameter's shape, on the Backend's device;
// the slot lists a step does not read may be nil) and the counters. A
// nil grads[i] skips parameter i and its state. The per-step scalars of
// a step (bias corrections, learning-rate decay, NAdam's μ products,
// RAdam's rectification) are those of the exported functions its method
// names, computed on the host in float64 and rounded once, so that every
// device rounds them alike; the host counters they come from are
// advanced by the public function before the call (but NAdam's μ
// products, which the method advances as it computes its factors).
//
// An implementation that fails for want of memory does so before it has
// written anything (the public function then advances no counter), so that
// a step is done for every parameter or for none: a program that catches
// the panic (Catch) can run the step again elsewhere.
type OptimKernels interface {
	// SGD is SGDStep's update; started[i] says whether momentum[i] holds
	// a buffer yet (the public function sets the flags afterwards).
	SGD(params, grads, momentum []*Tensor, started []bool, hp SGDParams) error
	// Adam is AdamStep's update, or AdamAMSGradStep's when vmax is not
	// nil; steps[i] is parameter i's step t, already advanced, whose bias
	// corrections AdamCorrections gives.
	Adam(params, grads, m, v, vmax []*Tensor, steps []int64, hp AdamParams) error
	// RMSProp is RMSPropStep's update.
	RMSProp(params, grads, squareAvg, gradAvg, momentum []*Tensor, hp RMSPropParams) error
	// Adagrad is AdagradStep's update; steps advanced, whose factors
	// AdagradStepSize gives.
	Adagrad(params, grads, sum []*Tensor, steps []int64, hp AdagradParams) error
	// Adamax is AdamaxStep's update; steps advanced, whose factors
	// AdamaxStepSize gives.
	Adamax(params, grads, m, u []*Tensor, steps []int64, hp AdamaxParams) error
	// NAdam is NAdamStep's update; steps advanced; muProduct[i] the
	// product through μₜ₋₁, which it advances through this step's μₜ
	// for each parameter with a gradient (NAdamAdvance, which gives the
	// factors too; the public function puts the products back if the
	// call fails).
	NAdam(params, grads, m, v []*Tensor, steps []int64, muProduct []float64, hp NAdamParams) error
	// RAdam is RAdamStep's update; steps advanced, whose factors
	// RAdamCorrections gives.
	RAdam(params, grads, m, v []*Tensor, steps []int64, hp RAdamParams) error
}

// SortKernels is the family of sorts and scans along one axis (sort.go,
// scan.go). The public functions have checked the shapes and the axis
// (in range, not negative; for the sorts at most 2²⁴ elements, so that
// every index is exact in float32); x is not empty. The results are as
// the host's, bit for bit: the sorts order elements as Sort documents
// (-0 equal to +0, NaN above +Inf, equal elements in their order along
// the axis, in both directions), and the scans carry a float64 running
// value along the axis, rounded once per output. On a device Backend all
// operands are on the device and x may overlap the results (the
// implementation reads it before it writes them, or copies it); on the
// host no result overlaps x.
type SortKernels interface {
	// Sort sets indices, and values unless nil, both of x's shape with k
	// (1 ≤ k ≤ n, the length of axis) along axis, to the first k elements
	// of each row of x along axis in Sort's order (descending: the
	// largest first) and their positions along axis as float32.
	Sort(values, indices, x *Tensor, axis, k int, descending bool) error
	// Median sets values and indices, x's shape with 1 along axis, to
	// each row's element at position (n-1)/2 of the ascending stable
	// order and its position along axis; a row holding NaN gives NaN and
	// the position of its first NaN.
	Median(values, indices, x *Tensor, axis int) error
	// Scan sets dst, of x's shape, to the cumulative sums (prod false) or
	// products of x along axis: dst[..i..] = float32(float64 x[..0..] ∘
	// ... ∘ x[..i..]), the running value float64, the elements in order.
	Scan(dst, x *Tensor, axis int, prod bool) error
	// CumProdBackward sets dx, of x's shape, to the gradient of
	// CumProd(x, axis) given the gradient dy of its output (x's shape),
	// computed per line in float64 as CumProdBackward documents.
	CumProdBackward(dx, x, dy *Tensor, axis int) error
}

// SampleKernels is the family of resampling ops and their gradients
// (gridsample.go): GridSample, AffineGrid, Interpolate. The public
// functions have checked the shapes and parameters and resolved
// InterpDefault to the op's mode; the operands are on the Backend's
// device, of any strides; on the host no output overlaps an input. Each
// output element is computed in float64 and rounded once, and each
// gradient element summed in float64 in the CPU's order (per image plane,
// output positions in row-major order), so that a device equals the CPU
// bit for bit.
type SampleKernels interface {
	// GridSample sets dst [N, C, Ho, Wo] to GridSample(input, grid, p).
	GridSample(dst, input, grid *Tensor, p GridSampleParams) error
	// GridSampleBackward sets dinput and dgrid, of input's and grid's
	// shapes (either may be nil, not both), to the gradients of
	// GridSample(input, grid, p) given dy.
	GridSampleBackward(dinput, dgrid, dy, input, grid *Tensor, p GridSampleParams) error
	// AffineGrid sets dst [N, H, W, 2] to AffineGrid(theta, [N, ·, H, W],
	// alignCorners).
	AffineGrid(dst, theta *Tensor, alignCorners bool) error
	// AffineGridBackward sets dtheta [N, 2, 3] to AffineGridBackward of
	// dgrid [N, H, W, 2].
	AffineGridBackward(dtheta, dgrid *Tensor, alignCorners bool) error
	// Interpolate sets dst [N, C, Ho, Wo] to Interpolate(x, p).
	Interpolate(dst, x *Tensor, p InterpolateParams) error
	// InterpolateBackward sets dx, of x's shape, to the gradient of
	// Interpolate(x, p) given dy.
	InterpolateBackward(dx, dy *Tensor, p InterpolateParams) error
}

// A Backend is a place ops run: its memory and its implementation of each
// op family. A nil family is one the device lacks: ops of that family on
// its tensors panic.
type Backend struct {
	// Memory provides the device's tensors (NewOn, To). It is nil only
	// for the CPU's Backend.
	Memory      DeviceAllocator
	MatMul      MatMulKernels
	Conv        ConvKernels
	Elementwise ElementwiseKernels
	Reduce      ReduceKernels
	Copy        CopyKernels
	Pool        PoolKernels
	Index       IndexKernels
	Norm        NormKernels
	Loss        LossKernels
	Optim       OptimKernels
	Random      RandomKernels
	Sort        SortKernels
	Sample      SampleKernels
	// Graph captures and replays the device's work (graph.go); nil
	// (the CPU, tensortest.HostDevice) runs every step eagerly.
	Graph GraphKernels
}

// cpuBackend runs every family on the host (cpuKernels: matmul.go,
// conv.go, elementwise.go, reduce.go, view.go, join.go, pool.go,
// index.go, norm.go, grad.go, random.go, sort.go, scan.go, gridsample.go).
var cpuBackend = Backend{MatMul: cpuKernels{}, Conv: cpuKernels{}, Elementwise: cpuKernels{},
	Reduce: cpuKernels{}, Copy: cpuKernels{}, Pool: cpuKernels{}, Index: cpuKernels{},
	Norm: cpuKernels{}, Loss: cpuKernels{}, Optim: cpuKernels{}, Random: cpuKernels{},
	Sort: cpuKernels{}, Sample: cpuKernels{}}

// cpuKernels is the CPU's implementation of every family.
type cpuKernels struct{}

// CPUBackend returns a copy of the CPU's Backend: every family, run on
// the host by the code the public functions run for host operands; its
// Memory is nil. It is for device stand-ins (tensortest.HostDevice runs
// it on host copies of device operands) and conformance tests (the
// reference a device is compared with), not for programs, which call the
// public functions. Its methods take host operands whose shapes and
// parameters are as the public functions check them, and a dst that does
// not overlap them; they do not check again.
func CPUBackend() Backend { return cpuBackend }

// devices maps each registered device to its Backend; it is copied on
// write, so that finding a device's Backend is one atomic load and a map
// read.
var (
	devices   atomic.Pointer[map[Device]*Backend]
	devicesMu sync.Mutex // serialises the writers of devices
)

// RegisterDevice makes dev usable: its tensors' memory comes from
// b.Memory (To, NewOn) and the ops on them run on b's families. A nil b
// unregisters dev. dev must not be CPU and b.Memory must not be nil; b is
// not copied, and must not be changed afterwards.
func RegisterDevice(dev Device, b *Backend) {
	if dev == CPU {
		panic("tensor: RegisterDevice: CPU is not an accelerator")
	}
	if b != nil && b.Memory == nil {
		panic(fmt.Sprintf("tensor: RegisterDevice: %v without Memory", dev))
	}
	devicesMu.Lock()
	defer devicesMu.Unlock()
	m := map[Device]*Backend{}
	if old := devices.Load(); old != nil {
		for d, ob := range *old {
			m[d] = ob
		}
	}
	if b == nil {
		delete(m, dev)
	} else {
		m[dev] = b
	}
	devices.Store(&m)
}

// registered returns dev's Backend: the CPU's, a registered device's, or
// nil.
func registered(dev Device) *Backend {
	if dev == CPU {
		return &cpuBackend
	}
	if m := devices.Load(); m != nil {
		return (*m)[dev]
	}
	return nil
}

// backendOf returns the Backend of dev, where op runs on the operands ts
// (dst, if not nil, is the result); an unregistered device makes op panic.
func backendOf(op string, dev Device, dst *Tensor, ts ...*Tensor) *Backend {
	if b := registered(dev); b != nil {
		return b
	}
	panic(residentFailure(op, dst, ts, fmt.Errorf("%v is not registered (tensor.RegisterDevice)", dev)))
}

// lacks is the panic of op on dev, whose Backend has no family fam.
func lacks(op string, dev Device, fam string, dst *Tensor, ts ...*Tensor) string {
	return residentFailure(op, dst, ts, fmt.Errorf("%v has no %s kernels; copy the operands with To(tensor.CPU)", dev, fam))
}

// present returns k, dev's family fam for op, panicking (see lacks) when
// dev has none. The xxxOn functions below find each family through it.
func present[K comparable](k K, op string, dev Device, fam string, dst *Tensor, ts []*Tensor) K {
	var none K
	if k == none {
		panic(lacks(op, dev, fam, dst, ts...))
	}
	return k
}

// matmulOn, convOn, elementwiseOn, reduceOn, copyOn, poolOn, indexOn and
// normOn return dev's family for op on the operands ts, panicking when dev
// has none.
func matmulOn(op string, dev Device, dst *Tensor, ts ...*Tensor) MatMulKernels {
	return present(backendOf(op, dev, dst, ts...).MatMul, op, dev, "MatMul", dst, ts)
}

func convOn(op string, dev Device, dst *Tensor, ts ...*Tensor) ConvKernels {
	return present(backendOf(op, dev, dst, ts...).Conv, op, dev, "Conv", dst, ts)
}

func elementwiseOn(op string, dev Device, dst *Tensor, ts ...*Tensor) ElementwiseKernels {
	return present(backendOf(op, dev, dst, ts...).Elementwise, op, dev, "Elementwise", dst, ts)
}

func reduceOn(op string, dev Device, dst *Tensor, ts ...*Tensor) ReduceKernels {
	return present(backendOf(op, dev, dst, ts...).Reduce, op, dev, "Reduce", dst, ts)
}

func copyOn(op string, dev Device, dst *Tensor, ts ...*Tensor) CopyKernels {
	return present(backendOf(op, dev, dst, ts...).Copy, op, dev, "Copy", dst, ts)
}

func poolOn(op string, dev Device, dst *Tensor, ts ...*Tensor) PoolKernels {
	return present(backendOf(op, dev, dst, ts...).Pool, op, dev, "Pool", dst, ts)
}

func indexOn(op string, dev Device, dst *Tensor, ts ...*Tensor) IndexKernels {
	return present(backendOf(op, dev, dst, ts...).Index, op, dev, "Index", dst, ts)
}

func normOn(op string, dev Device, dst *Tensor, ts ...*Tensor) NormKernels {
	return present(backendOf(op, dev, dst, ts...).Norm, op, dev, "Norm", dst, ts)
}

// lossOn returns dev's Loss family for op, panicking when dev has none.
func lossOn(op string, dev Device, dst *Tensor, ts ...*Tensor) LossKernels {
	return present(backendOf(op, dev, dst, ts...).Loss, op, dev, "Loss", dst, ts)
}

// optimOn returns dev's Optim family for op on params, panicking (naming
// the first parameter) when dev has none.
func optimOn(op string, dev Device, params []*Tensor) OptimKernels {
	first := params[:min(len(params), 1)]
	return present(backendOf(op, dev, nil, first...).Optim, op, dev, "Optim", nil, first)
}

// sortOn returns dev's Sort family for op, panicking when dev has none.
func sortOn(op string, dev Device, dst *Tensor, ts ...*Tensor) SortKernels {
	return present(backendOf(op, dev, dst, ts...).Sort, op, dev, "Sort", dst, ts)
}

// randomOn returns dev's Random family for op, panicking when dev has none.
func randomOn(op string, dev Device, dst *Tensor, ts ...*Tensor) RandomKernels {
	return present(backendOf(op, dev, dst, ts...).Random, op, dev, "Random", dst, ts)
}

// sampleOn returns dev's Sample family for op, panicking when dev has none.
func sampleOn(op string, dev Device, dst *Tensor, ts ...*Tensor) SampleKernels {
	return present(backendOf(op, dev, dst, ts...).Sample, op, dev, "Sample", dst, ts)
}

// offloadDevice is the device that SetOffload named (CPU: none).
var offloadDevice atomic.Int64

// SetOffload names the device that may run MatMul and Conv2D work whose
// operands are all on the host (CPU, the default, names none), and
// returns the previous one. Such work goes to dev's family when dev is
// registered with it and dispatch.Place answers OnGPU; the family then
// reads the host operands and writes dst on the host, and an error leaves
// the work to the CPU. Device work never asks dispatch.Place.
func SetOffload(dev Device) (prev Device) {
	return Device(offloadDevice.Swap(int64(dev)))
}

// offloadTo returns the Backend that takes host work w instead of the CPU,
// or nil: Place is asked only when an offload device is registered.
func offloadTo(w dispatch.Work) *Backend {
	dev := Device(offloadDevice.Load())
	if dev == CPU {
		return nil
	}
	b := registered(dev)
	if b == nil || dispatch.Place(w) != dispatch.OnGPU {
		return nil
	}
	return b
}

// ran panics, naming op, the operands ts and the cause, when the
// implementation that ran op returned err: with an *OutOfMemoryError
// when err is one (failure), else with a message.
func ran(op string, err error, dst *Tensor, ts ...*Tensor) {
	if err != nil {
		panic(failure(op, dst, ts, err))
	}
}

// residentFailure is the panic message of device work that could not
// run: "tensor: MatMul: [2 3] on device(1) and [3 4] on cpu (result [2 4]
// on device(1)): " and the cause.
func residentFailure(op string, dst *Tensor, ts []*Tensor, err error) string {
	res := ""
	if dst != nil {
		res = fmt.Sprintf(" (result %v on %v)", dst.shape, dst.Device())
	}
	return fmt.Sprintf("tensor: %s: %s%s: %v", op, placesOf(ts), res, err)
}

// placesOf describes where the operands ts (nil ones skipped) are:
// "[2 3] on device(1) and [3 4] on cpu".
func placesOf(ts []*Tensor) string { return describe(ts, true) }

// deviceOn returns the device of op's operands, dst (it may be nil) and
// ts (nil ones skipped): CPU when all are on the host. Operands on two
// devices make op panic, and so does a host operand of one or more
// dimensions beside a device operand; a 0-d host operand is allowed: it
// is a scalar that the device reads. A host dst beside device operands
// panics whatever its shape: a device does not write host memory.
func deviceOn(op string, dst *Tensor, ts ...*Tensor) Device {
	dev := CPU
	if dst != nil && dst.store != nil {
		dev = dst.store.dev
	}
	host := dst != nil && dst.store == nil
	for _, t := range ts {
		switch {
		case t == nil:
		case t.store == nil:
			host = host || len(t.shape) > 0
		case dev == CPU:
			dev = t.store.dev
		case t.store.dev != dev:
			panic(fmt.Sprintf("tensor: %s: %s: operands on %v and %v; copy them to one device with To", op, placesOf(withDst(dst, ts)), dev, t.store.dev))
		}
	}
	if dev != CPU && host {
		panic(fmt.Sprintf("tensor: %s: %s: operands on %v and cpu; copy them to one device with To", op, placesOf(withDst(dst, ts)), dev))
	}
	return dev
}

// withDst returns dst (if not nil) followed by ts, for messages.
func withDst(dst *Tensor, ts []*Tensor) []*Tensor {
	if dst == nil {
		return ts
	}
	return append([]*Tensor{dst}, ts...)
}

// result returns the tensor of the given shape that op writes on dev for
// the operands ts: a host tensor for CPU, else one on dev, failing to
// allocate which panics.
func result(op string, dev Device, shape []int, ts ...*Tensor) *Tensor {
	if dev == CPU {
		return alloc(op, shape)
	}
	dst, err := NewOn(dev, shape...)
	if err != nil {
		panic(failure(op, nil, ts, fmt.Errorf("allocating the result of shape %v: %w", shape, err)))
	}
	return dst
}
