package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// This file holds the operations on feature maps (convolution, pooling),
// the normalizations, dropout and embedding lookups.

// Conv2D returns the convolution of x [N, C, H, W] with w [Cout, C/groups,
// kh, kw] plus b [Cout] (b may be nil), computed by tensor.Conv2D; p.ReLU
// is fused into the pass that adds the bias.
func (tp *Tape) Conv2D(x, w, b *Var, p tensor.ConvParams) *Var {
	const op = "Conv2D"
	tp.use(op, "x", x)
	tp.use(op, "weight", w)
	tp.useOpt(op, "bias", b)
	s := tensor.Conv2DShape(x.value, w.value, p)
	y := tp.allocOn(deviceOf(op, x.value, w.value, value(b)), s[:]...)
	tensor.Conv2DInto(y, x.value, w.value, value(b), p)
	out, nd := tp.result(y, backConv2D, x, w, b)
	if nd != nil {
		nd.conv, nd.relu = p, p.ReLU
	}
	return out
}

func backConv2D(tp *Tape, n *node) {
	x, w, b := n.in[0], n.in[1], n.in[2]
	g := n.out.grad
	if n.conv.ReLU && !n.out.reluMasked {
		dz := tp.like(g)
		reluAct.gradInto(dz, g, nil, n.out.value)
		g = dz
	}
	if x.requires {
		dx, add := tp.gradFor(x)
		tensor.Conv2DBackwardInputInto(dx, g, w.value, n.conv)
		tp.flush(x, dx, add)
	}
	if w.requires {
		dw, add := tp.gradFor(w)
		tensor.Conv2DBackwardWeightInto(dw, g, x.value, n.conv)
		tp.flush(w, dw, add)
	}
	if s := n.saved[0]; s != nil && n.out.reluMasked {
		// The MaxPool2D of the output summed the bias gradient from
		// its own, four times smaller, gradient (see backMaxPool2D).
		if b != nil && b.requires {
			tp.addGrad(b, s)
		}
		return
	}
	tp.channelBiasGrad(b, g)
}

// channelBiasGrad adds to the gradient of b [C] (when b is not nil and
// requires one) the sums of g [N, C, H, W] over every axis but C: the bias
// gradient of the convolutions.
func (tp *Tape) channelBiasGrad(b *Var, g *tensor.Tensor) {
	if b == nil || !b.requires {
		return
	}
	db, beta := tp.gradAcc(b)
	channelSumsInto(db, g, beta)
}

// channelSumsInto sets (beta 0) or adds to (beta 1) d [C] the sums of g
// [N, C, H, W] over every axis but C, on g's device: on the host,
// channelSums (each channel in image order), else SumToInto.
func channelSumsInto(d, g *tensor.Tensor, beta float32) {
	if !onHost(d) {
		zeroIfFirst(d, beta)
		tensor.SumToInto(d.Reshape(d.Len(), 1, 1), g)
		return
	}
	channelSums(d.Data(), hostData(g), g.Dim(0), g.Len()/max(g.Dim(0)*d.Len(), 1), beta != 0)
}

// MaxPool2D returns the maxima of x [N, C, H, W] over the windows of p.
func (tp *Tape) MaxPool2D(x *Var, p tensor.PoolParams) *Var {
	tp.use("MaxPool2D", "x", x)
	s := tensor.Pool2DShape(x.value, p)
	dev := x.value.Device()
	y := tp.allocOn(dev, s[:]...)
	var idx *tensor.Tensor
	if !tp.noGrad && x.requires {
		idx = tp.allocOn(dev, s[:]...)
	}
	tensor.MaxPool2DInto(y, idx, x.value, p)
	out, nd := tp.result(y, backMaxPool2D, x)
	if nd != nil {
		nd.pool, nd.saved[0] = p, idx
		// Pooling a ReLU's output: see backMaxPool2D.
		nd.relu = len(tp.nodes) > 1 && tp.nodes[len(tp.nodes)-2].out == x && tp.nodes[len(tp.nodes)-2].relu
		// A Conv2D node with its ReLU and a bias before it: the pooling
		// sums the bias gradient (not a Conv2DMaxPool's, whose saved[0]
		// holds its indices and whose own backward sums its bias's).
		if nd.relu {
			if prev := &tp.nodes[len(tp.nodes)-2]; prev.in[2] != nil && backPC(prev.back) == backPC(backConv2D) {
				nd.idx[0] = len(tp.nodes) - 1 // the Conv2D's node, + 1
			}
		}
	}
	return out
}

// backMaxPool2D routes each output gradient to its window's maximum. When
// x came out of a ReLU, a maximum of 0 means the whole window was clipped
// and the ReLU passes no gradient there: masking the (four times smaller)
// output gradient by out > 0 before routing it gives the ReLU's input
// gradient directly, and marks x so that the ReLU skips its mask pass over
// the large input (unless another consumer of x adds to its gradient).
func backMaxPool2D(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	dy := n.out.grad
	if n.relu {
		m := tp.like(dy)
		reluAct.gradInto(m, dy, nil, n.out.value)
		dy = m
	}
	tensor.MaxPool2DBackwardInto(dx, dy, n.saved[0], n.pool)
	tp.flush(x, dx, add)
	x.reluMasked = n.relu && !add
	if n.idx[0] > 0 && poolBiasOn {
		tp.convBiasSums(&tp.nodes[n.idx[0]-1], dy, x.reluMasked)
	}
}

// convBiasSums saves in the Conv2D node c, whose ReLU'd output a
// MaxPool2D pooled, the sums per channel of the pooling's masked output
// gradient dy [N, C, OH, OW], when x's gradient is the routed dy alone
// (masked) and the operands are on the host: every element of dy lands on
// one element of x's gradient, and the rest are zeros, so these are the
// bias gradient that backConv2D would sum over the four times larger
// gradient of x, in another order (the float32 sums of the same nonzero
// terms, rounded differently). Otherwise it clears the saved sums.
func (tp *Tape) convBiasSums(c *node, dy *tensor.Tensor, masked bool) {
	c.saved[0] = nil
	b := c.in[2]
	if !masked || b == nil || !b.requires || !onHost(dy) || !onHost(b.value) {
		return
	}
	c.saved[0] = tp.channelSumsOf(dy)
}

// channelSumsOf returns, in a tape buffer on g's device, the sums of g
// [N, C, ...] over every axis but C (channelSumsInto): the bias gradient
// a pooling sums for the convolution before it (convBiasSums,
// backConv2DMaxPool).
func (tp *Tape) channelSumsOf(g *tensor.Tensor) *tensor.Tensor {
	s := tp.allocOn(g.Device(), g.Dim(1))
	channelSumsInto(s, g, 0)
	return s
}

// Conv2DMaxPool returns MaxPool2D(Conv2D(x, w, b, p), pool), computed by
// tensor.Conv2DMaxPoolInto: where tensor.Conv2DMaxPoolFuses, the
// convolution's output is neither stored nor read back (nor, in Backward,
// its gradient). Its value and the gradients of x and w are those of the
// two operations bit for bit; so is b's with p.ReLU (summed from the
// masked pooled gradient, as MaxPool2D's backward sums it for the Conv2D
// before it), while without the ReLU b's gradient is summed from the
// pooled gradient rather than the convolution's: the same terms in
// another order. Sequential uses it for a Conv2D (with or without its
// ReLU layer) followed by a MaxPool2D when tensor fuses them.
func (tp *Tape) Conv2DMaxPool(x, w, b *Var, p tensor.ConvParams, pool tensor.PoolParams) *Var {
	const op = "Conv2DMaxPool"
	tp.use(op, "x", x)
	tp.use(op, "weight", w)
	tp.useOpt(op, "bias", b)
	s := tensor.Conv2DMaxPoolShape(x.value, w.value, p, pool)
	dev := deviceOf(op, x.value, w.value, value(b))
	y := tp.allocOn(dev, s[:]...)
	var idx *tensor.Tensor
	if !tp.noGrad && (x.requires || w.requires) {
		idx = tp.allocOn(dev, s[:]...)
	}
	tensor.Conv2DMaxPoolInto(y, idx, x.value, w.value, value(b), p, pool)
	out, nd := tp.result(y, backConv2DMaxPool, x, w, b)
	if nd != nil {
		nd.conv, nd.pool, nd.relu, nd.saved[0] = p, pool, p.ReLU, idx
	}
	return out
}

// backConv2DMaxPool masks the pooled gradient by the ReLU (as
// backMaxPool2D does: a window whose maximum is 0 passes none), computes
// the convolution's input gradient and then its weight gradient from it
// and the pooling's indices (tensor.Conv2DMaxPoolBackwardInto; one at a
// time, so that a Var that is both accumulates), and the bias gradient as
// the channel sums of the masked pooled gradient, added as backConv2D
// adds the sums convBiasSums saves for it.
func backConv2DMaxPool(tp *Tape, n *node) {
	x, w, b := n.in[0], n.in[1], n.in[2]
	dp := n.out.grad
	if n.relu {
		m := tp.like(dp)
		reluAct.gradInto(m, dp, nil, n.out.value)
		dp = m
	}
	if x.requires {
		dx, add := tp.gradFor(x)
		tensor.Conv2DMaxPoolBackwardInto(dx, nil, dp, n.saved[0], x.value, w.value, n.conv, n.pool)
		tp.flush(x, dx, add)
	}
	if w.requires {
		dw, add := tp.gradFor(w)
		tensor.Conv2DMaxPoolBackwardInto(nil, dw, dp, n.saved[0], x.value, w.value, n.conv, n.pool)
		tp.flush(w, dw, add)
	}
	if b != nil && b.requires {
		tp.addGrad(b, tp.channelSumsOf(dp))
	}
}

// AvgPool2D returns the means of x [N, C, H, W] over the windows of p.
func (tp *Tape) AvgPool2D(x *Var, p tensor.PoolParams) *Var {
	tp.use("AvgPool2D", "x", x)
	s := tensor.Pool2DShape(x.value, p)
	y := tp.allocOn(x.value.Device(), s[:]...)
	tensor.AvgPool2DInto(y, x.value, p)
	out, nd := tp.result(y, backAvgPool2D, x)
	if nd != nil {
		nd.pool = p
	}
	return out
}

func backAvgPool2D(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.AvgPool2DBackwardInto(dx, n.out.grad, n.pool)
	tp.flush(x, dx, add)
}

// NormParams are the settings of BatchNorm and LayerNorm that are not
// tensors: Momentum and Eps as in tensor.BatchNormParams (0 means 0.1 and
// 1e-5), Dims as in tensor.LayerNormParams.
type NormParams struct {
	Momentum, Eps float32
	Dims          int
}

// BatchNorm normalizes x [N, C, ...] per channel with the batch
// statistics (training, which also updates runMean and runVar when they
// are not nil) or with runMean and runVar (inference), then scales by
// gamma and shifts by beta (either may be nil), as tensor.BatchNorm.
func (tp *Tape) BatchNorm(x, gamma, beta *Var, runMean, runVar *tensor.Tensor, training bool, p NormParams) *Var {
	const op = "BatchNorm"
	tp.use(op, "x", x)
	tp.useOpt(op, "gamma", gamma)
	tp.useOpt(op, "beta", beta)
	if x.value.Dims() < 2 {
		panic(fmt.Sprintf("nn: %s: x of shape %v has no channel axis", op, x.value.Shape()))
	}
	c := x.value.Dim(1)
	dev := deviceOf(op, x.value, value(gamma), value(beta), runMean, runVar)
	y, st := tp.like(x.value), tensor.NormStats{Mean: tp.allocOn(dev, c), InvStd: tp.allocOn(dev, c)}
	tensor.BatchNormInto(y, st, x.value, tensor.BatchNormParams{Gamma: value(gamma), Beta: value(beta),
		RunningMean: runMean, RunningVar: runVar, Training: training, Momentum: p.Momentum, Eps: p.Eps})
	out, nd := tp.result(y, backBatchNorm, x, gamma, beta)
	if nd != nil {
		nd.norm, nd.f[0], nd.f[1] = st, p.Eps, b2f(training)
	}
	return out
}

func backBatchNorm(tp *Tape, n *node) {
	x, gamma, beta := n.in[0], n.in[1], n.in[2]
	p := tensor.BatchNormParams{Gamma: value(gamma), Training: n.f[1] != 0, Eps: n.f[0]}
	ng := tp.normGrads(x, gamma, beta)
	tensor.BatchNormBackwardInto(ng.dx, ng.dg, ng.db, n.out.grad, x.value, n.norm, p)
	ng.flush(tp)
}

// LayerNorm normalizes each row of x's last p.Dims axes (0 means 1), then
// scales by gamma and shifts by beta (of the rows' shape; either may be
// nil), as tensor.LayerNorm.
func (tp *Tape) LayerNorm(x, gamma, beta *Var, p NormParams) *Var {
	const op = "LayerNorm"
	tp.use(op, "x", x)
	tp.useOpt(op, "gamma", gamma)
	tp.useOpt(op, "beta", beta)
	dims := max(p.Dims, 1)
	if dims > x.value.Dims() {
		panic(fmt.Sprintf("nn: LayerNorm: %d normalized axes for x of shape %v", dims, x.value.Shape()))
	}
	lead := x.value.Shape()[:x.value.Dims()-dims]
	dev := deviceOf(op, x.value, value(gamma), value(beta))
	y, st := tp.like(x.value), tensor.NormStats{Mean: tp.allocOn(dev, lead...), InvStd: tp.allocOn(dev, lead...)}
	tensor.LayerNormInto(y, st, x.value, tensor.LayerNormParams{Dims: dims, Gamma: value(gamma), Beta: value(beta), Eps: p.Eps})
	out, nd := tp.result(y, backLayerNorm, x, gamma, beta)
	if nd != nil {
		nd.norm, nd.f[0], nd.dims = st, p.Eps, dims
	}
	return out
}

func backLayerNorm(tp *Tape, n *node) {
	x, gamma, beta := n.in[0], n.in[1], n.in[2]
	p := tensor.LayerNormParams{Dims: n.dims, Gamma: value(gamma), Eps: n.f[0]}
	ng := tp.normGrads(x, gamma, beta)
	tensor.LayerNormBackwardInto(ng.dx, ng.dg, ng.db, n.out.grad, x.value, n.norm, p)
	ng.flush(tp)
}

// normGrads are where a normalization's backward writes its gradients:
// dx always (the tensor functions need it), dg and db only for a gamma and
// beta that require them.
type normGrads struct {
	x, gamma, beta   *Var
	dx, dg, db       *tensor.Tensor
	addX, addG, addB bool
}

func (tp *Tape) normGrads(x, gamma, beta *Var) normGrads {
	ng := normGrads{x: x, gamma: gamma, beta: beta}
	if x.requires {
		ng.dx, ng.addX = tp.gradFor(x)
	} else {
		ng.dx = tp.like(x.value)
	}
	if gamma != nil && gamma.requires {
		ng.dg, ng.addG = tp.gradFor(gamma)
	}
	if beta != nil && beta.requires {
		ng.db, ng.addB = tp.gradFor(beta)
	}
	return ng
}

// flush adds the written gradients to the Vars.
func (ng *normGrads) flush(tp *Tape) {
	if ng.x.requires {
		tp.flush(ng.x, ng.dx, ng.addX)
	}
	if ng.dg != nil {
		tp.flush(ng.gamma, ng.dg, ng.addG)
	}
	if ng.db != nil {
		tp.flush(ng.beta, ng.db, ng.addB)
	}
}

// Dropout zeroes each element of x, of any shape, with probability p and
// scales the others by 1/(1-p), so that the expectation is unchanged:
// tensor.Dropout, whose mask comes from the Philox stream of a seed drawn
// from r (one number per call), so that it is the same on every device
// (a zero-size x draws its seed too and gives an empty result). The backward
// pass applies the same mask to the gradient by running tensor.Dropout
// again with that seed, so no mask is stored. Use it in training only
// (the Dropout layer is the identity in evaluation).
func (tp *Tape) Dropout(x *Var, p float32, r *rand.Rand) *Var {
	tp.use("Dropout", "x", x)
	mustRand("Dropout", r)
	if !(p >= 0 && p < 1) {
		panic(fmt.Sprintf("nn: Dropout: probability %v outside [0, 1)", p))
	}
	if p == 0 {
		return x
	}
	seed := r.Uint64()
	y := tp.like(x.value)
	tensor.DropoutInto(y, x.value, p, seed, 0)
	out, nd := tp.result(y, backDropout, x)
	if nd != nil {
		nd.f[0], nd.seed = p, seed
	}
	return out
}

func backDropout(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.DropoutInto(dx, n.out.grad, n.f[0], n.seed, 0)
	tp.flush(x, dx, add)
}

// Embedding returns the rows of w [V, D] named by indices (a tensor of any
// shape holding integers in [-V, V) as float32, negative ones counting
// from the end, as tensor.IndexSelect's): a result of shape indices' shape
// + [D], computed by tensor.IndexSelectInto, and its backward by
// tensor.IndexAdd, on the operands' device. It panics on an index that is
// not such an integer (on a device, its kernel reports it).
func (tp *Tape) Embedding(indices *tensor.Tensor, w *Var) *Var {
	const op = "Embedding"
	tp.use(op, "weight", w)
	mustTensor(op, "indices", indices)
	_, d := matrix(op, "weight", w)
	dev := deviceOf(op, indices, w.value)
	var dims [tensor.MaxDims + 1]int
	nd := indices.Dims()
	for i := range nd {
		dims[i] = indices.Dim(i)
	}
	dims[nd] = d
	n := indices.Len()
	flat := tp.view(indices, n)
	y := tp.allocOn(dev, dims[:nd+1]...)
	tensor.IndexSelectInto(tp.view(y, n, d), w.value, 0, flat)
	out, node := tp.result(y, backEmbedding, w)
	if node != nil {
		node.saved[0] = flat
	}
	return out
}

func backEmbedding(tp *Tape, n *node) {
	w, idx := n.in[0], n.saved[0]
	dw, beta := tp.gradAcc(w)
	zeroIfFirst(dw, beta)
	tensor.IndexAdd(dw, 0, idx, tp.view(n.out.grad, idx.Len(), w.value.Dim(1)))
}

func value(v *Var) *tensor.Tensor {
	if v == nil {
		return nil
	}
	return v.value
}

func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// poolBiasOn is a variable so that TestPoolBiasCPU can time the unfused
// bias gradient.
var poolBiasOn = true

// convPoolOn is a variable so that the tests can compare Sequential's
// fused Conv2DMaxPool with the two operations.
var convPoolOn = true
