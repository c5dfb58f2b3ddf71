package tensor

import (
	"fmt"
	"slices"
)

// The losses with PyTorch's options (torch.nn.functional's nll_loss,
// cross_entropy with weight, ignore_index and label_smoothing, l1_loss,
// smooth_l1_loss, huber_loss, kl_div, binary_cross_entropy,
// binary_cross_entropy_with_logits with pos_weight), each as a forward
// function returning the loss (0-d, or of the per-element shape for
// LossNone) and a ...Backward function returning the gradient with respect
// to the prediction for an upstream gradient dloss (0-d, or of the loss's
// shape for LossNone). Terms, sums and derivatives are computed in float64
// and rounded once per element (the reduced loss: once), so each result is
// within an ulp or two of the float64 formula. They run on the operands'
// device (its Loss family: LossKernels.Class and Pointwise), every operand
// (the weights and dloss included) on that one device, and return their
// results there; a target value that the function cannot check on a
// device (a class index, BCE's probability) is the device's error (see
// LossKernels). Operands may be any views.
//
// The existing CrossEntropy, MSE and BCEWithLogits are the fused fast
// paths of the default case; CrossEntropyWith takes that path on the host
// when its options are the defaults, its logits [N, C] and no label -100.

// LossReduction is PyTorch's reduction argument of a loss.
type LossReduction int

const (
	// LossMean is the mean of the terms (PyTorch's default 'mean'); for
	// NLL and CrossEntropyWith with class weights, the sum of the weighted
	// terms divided by the sum of the weights of the targets that are not
	// ignored (NaN when every target is ignored or there is none, as
	// PyTorch's).
	LossMean LossReduction = iota
	LossSum                // 'sum': the sum of the terms (0 with none)
	LossNone               // 'none': the terms, of the per-element shape
	// LossBatchMean is KLDiv's 'batchmean': the sum divided by the size
	// of the first axis (of the whole, for a 0-d input).
	LossBatchMean
)

// String returns PyTorch's name of r.
func (r LossReduction) String() string {
	switch r {
	case LossMean:
		return "mean"
	case LossSum:
		return "sum"
	case LossNone:
		return "none"
	case LossBatchMean:
		return "batchmean"
	}
	return fmt.Sprintf("LossReduction(%d)", int(r))
}

// LossParams are the options of the losses that take them; each loss reads
// the fields its doc names and ignores the others. The zero value is
// PyTorch's defaults.
type LossParams struct {
	Reduction LossReduction
	// Weight: NLL and CrossEntropyWith: a weight per class [C]; BCE: a
	// weight per element, broadcast to the input's shape. nil means 1.
	Weight *Tensor
	// IgnoreIndex is the class whose targets NLL and CrossEntropyWith
	// ignore (no loss, no gradient, not counted by the mean) when Ignore
	// is set; without it they ignore -100, PyTorch's default.
	Ignore      bool
	IgnoreIndex int
	// LabelSmoothing ε in [0, 1] (CrossEntropyWith): the target is
	// (1-ε)·onehot + ε/C, as PyTorch's label_smoothing.
	LabelSmoothing float32
	// LogTarget (KLDiv): the target holds log-probabilities.
	LogTarget bool
	// PosWeight (BCEWithLogitsWith): the weight of the positive term,
	// broadcast to the input's shape (PyTorch's pos_weight, usually [C]
	// over the last axis). nil means 1.
	PosWeight *Tensor
}

// ignored returns the class index p ignores.
func (p *LossParams) ignored() float32 {
	if p.Ignore {
		return float32(p.IgnoreIndex)
	}
	return -100
}

func checkReduction(op string, r LossReduction, batchMean bool) {
	if r < LossMean || r > LossBatchMean || r == LossBatchMean && !batchMean {
		panic(fmt.Sprintf("tensor: %s: reduction %v not supported", op, r))
	}
}

// meanDen is the mean's divisor of n elements: n, or the first axis for
// LossBatchMean.
func meanDen(r LossReduction, shape []int, n int) float64 {
	if r == LossBatchMean && len(shape) > 0 {
		return float64(shape[0])
	}
	return float64(n)
}

// lossShape is the shape of a loss whose terms have shape terms.
func lossShape(r LossReduction, terms []int) []int {
	if r == LossNone {
		return terms
	}
	return nil
}

// checkDLoss checks a ...Backward function's upstream gradient: 0-d, or
// of the terms' shape for LossNone.
func checkDLoss(op string, dloss *Tensor, terms []int, r LossReduction) {
	checkNil(op, "dloss", dloss)
	if want := lossShape(r, terms); !slices.Equal(dloss.shape, want) {
		if r == LossNone {
			panic(fmt.Sprintf("tensor: %s: dloss of shape %v, want the loss's shape %v", op, dloss.shape, want))
		}
		panic(fmt.Sprintf("tensor: %s: dloss of shape %v, want a 0-d tensor", op, dloss.shape))
	}
}

// ---- pointwise losses ----

// pointArgs checks the operands and options of the pointwise loss kind
// and returns the Loss family's arguments.
func pointArgs(op string, kind LossKind, arg float32, pred, target *Tensor, p LossParams) PointLossArgs {
	checkNil(op, "pred, target", pred, target)
	checkSameShape(op, "target", target, pred)
	checkReduction(op, p.Reduction, kind == LossKLDiv)
	a := PointLossArgs{Kind: kind, Reduction: p.Reduction, Arg: arg, LogTarget: p.LogTarget}
	switch kind {
	case LossSmoothL1, LossHuber:
		if !(arg >= 0) || kind == LossHuber && arg == 0 {
			panic(fmt.Sprintf("tensor: %s: parameter %v must be positive", op, arg))
		}
	case LossBCE:
		a.Weight = broadcastOperand(op, "weight", p.Weight, pred.shape)
	case LossBCEWithLogits:
		a.PosWeight = broadcastOperand(op, "pos_weight", p.PosWeight, pred.shape)
	}
	return a
}

// broadcastOperand returns t broadcast to shape (nil for nil).
func broadcastOperand(op, name string, t *Tensor, shape []int) *Tensor {
	if t == nil {
		return nil
	}
	ok := len(t.shape) <= len(shape)
	for i := 1; ok && i <= len(t.shape); i++ {
		d := t.shape[len(t.shape)-i]
		ok = d == 1 || d == shape[len(shape)-i]
	}
	if !ok {
		panic(fmt.Sprintf("tensor: %s: %s of shape %v does not broadcast to %v", op, name, t.shape, shape))
	}
	return t.BroadcastTo(shape...)
}

// pointLoss runs the pointwise loss kind's forward on the operands'
// device.
func pointLoss(op string, kind LossKind, arg float32, pred, target *Tensor, p LossParams) *Tensor {
	a := pointArgs(op, kind, arg, pred, target, p)
	dev := sameDevice(op, nil, pred, target, a.Weight, a.PosWeight)
	k := lossOn(op, dev, nil, pred, target)
	loss := result(op, dev, lossShape(p.Reduction, pred.shape), pred, target)
	lossRan(op, dev, k.Pointwise(loss, nil, nil, pred, target, a), loss, pred, target)
	return loss
}

// pointGrad runs the pointwise loss kind's backward for the upstream
// gradient dloss on the operands' device.
func pointGrad(op string, kind LossKind, arg float32, dloss, pred, target *Tensor, p LossParams) *Tensor {
	a := pointArgs(op, kind, arg, pred, target, p)
	checkDLoss(op, dloss, pred.shape, p.Reduction)
	dev := sameDevice(op, nil, dloss, pred, target, a.Weight, a.PosWeight)
	k := lossOn(op, dev, nil, dloss, pred, target)
	d := result(op, dev, pred.shape, pred, target)
	lossRan(op, dev, k.Pointwise(nil, d, dloss, pred, target, a), d, dloss, pred, target)
	return d
}

// L1 returns PyTorch's l1_loss: the terms |pred - target| reduced by
// p.Reduction. Its derivative is sign(pred - target), 0 at 0 (L1Backward).
func L1(pred, target *Tensor, p LossParams) *Tensor {
	return pointLoss("L1", LossL1, 0, pred, target, p)
}

// L1Backward returns the gradient of L1 with respect to pred for the
// upstream gradient dloss.
func L1Backward(dloss, pred, target *Tensor, p LossParams) *Tensor {
	return pointGrad("L1Backward", LossL1, 0, dloss, pred, target, p)
}

// SmoothL1 returns PyTorch's smooth_l1_loss with beta ≥ 0 (PyTorch's
// default is 1): with z = pred - target, 0.5·z²/beta where |z| < beta,
// else |z| - 0.5·beta; beta = 0 is L1. Derivative z/beta or sign(z).
func SmoothL1(pred, target *Tensor, beta float32, p LossParams) *Tensor {
	return pointLoss("SmoothL1", LossSmoothL1, beta, pred, target, p)
}

// SmoothL1Backward returns the gradient of SmoothL1 with respect to pred.
func SmoothL1Backward(dloss, pred, target *Tensor, beta float32, p LossParams) *Tensor {
	return pointGrad("SmoothL1Backward", LossSmoothL1, beta, dloss, pred, target, p)
}

// Huber returns PyTorch's huber_loss with delta > 0 (default 1): with
// z = pred - target, 0.5·z² where |z| < delta, else delta·(|z| -
// 0.5·delta) — SmoothL1 times beta, PyTorch's other definition.
// Derivative z or delta·sign(z).
func Huber(pred, target *Tensor, delta float32, p LossParams) *Tensor {
	return pointLoss("Huber", LossHuber, delta, pred, target, p)
}

// HuberBackward returns the gradient of Huber with respect to pred.
func HuberBackward(dloss, pred, target *Tensor, delta float32, p LossParams) *Tensor {
	return pointGrad("HuberBackward", LossHuber, delta, dloss, pred, target, p)
}

// KLDiv returns PyTorch's kl_div(input, target): input holds
// log-probabilities, target probabilities (log-probabilities with
// p.LogTarget); the terms are target·(log target - input), 0 where
// target is 0 (xlogy), or e^target·(target - input), reduced by
// p.Reduction, which may be LossBatchMean (the sum over the first axis's
// size, the KL divergence per sample; PyTorch's default 'mean' divides by
// every element). Derivative -target (or -e^target).
func KLDiv(input, target *Tensor, p LossParams) *Tensor {
	return pointLoss("KLDiv", LossKLDiv, 0, input, target, p)
}

// KLDivBackward returns the gradient of KLDiv with respect to input.
func KLDivBackward(dloss, input, target *Tensor, p LossParams) *Tensor {
	return pointGrad("KLDivBackward", LossKLDiv, 0, dloss, input, target, p)
}

// BCE returns PyTorch's binary_cross_entropy of probabilities x in [0, 1]
// (other values panic, as PyTorch raises; on a device they are its
// error): the terms -w·(t·log x + (1-t)·log(1-x)) with each log clamped
// at -100 as PyTorch's, w from p.Weight (broadcast to x; nil: 1). Its
// derivative is PyTorch's, w·(x - t)/max(x·(1-x), 1e-12).
func BCE(x, target *Tensor, p LossParams) *Tensor {
	return pointLoss("BCE", LossBCE, 0, x, target, p)
}

// BCEBackward returns the gradient of BCE with respect to x.
func BCEBackward(dloss, x, target *Tensor, p LossParams) *Tensor {
	return pointGrad("BCEBackward", LossBCE, 0, dloss, x, target, p)
}

// BCEWithLogitsWith is BCEWithLogits with PyTorch's options: the terms
// pw·t·softplus(-x) + (1-t)·softplus(x) (pw from p.PosWeight, broadcast
// to x; nil: 1) reduced by p.Reduction; derivative -pw·t·(1-σ(x)) +
// (1-t)·σ(x).
func BCEWithLogitsWith(x, target *Tensor, p LossParams) *Tensor {
	return pointLoss("BCEWithLogitsWith", LossBCEWithLogits, 0, x, target, p)
}

// BCEWithLogitsWithBackward returns the gradient of BCEWithLogitsWith
// with respect to x.
func BCEWithLogitsWithBackward(dloss, x, target *Tensor, p LossParams) *Tensor {
	return pointGrad("BCEWithLogitsWithBackward", LossBCEWithLogits, 0, dloss, x, target, p)
}

// ---- class-index losses ----

// classCall is a class loss's operands and arguments as the Loss family
// takes them (classOperands).
type classCall struct {
	in, tg *Tensor
	a      ClassLossArgs
	// terms is the terms' shape as the caller sees it (input's without
	// its class axis; [] for a [C] input), inTerms as the family does
	// (in's: [1] for a [C] input).
	terms, inTerms []int
}

// classOperands checks NLL's or CrossEntropyWith's (logits) input [N, C,
// d...] (or [C]) and target [N, d...] (or 0-d; for CrossEntropyWith also
// probabilities of input's shape) and returns them as the Loss family
// takes them (a [C] input as [1, C], its target as [1]), with its
// arguments and the terms' shapes.
func classOperands(op string, logits bool, input, target *Tensor, p LossParams) classCall {
	checkNil(op, "input, target", input, target)
	checkReduction(op, p.Reduction, false)
	terms, inTerms := input.shape, input.shape
	if len(input.shape) == 1 {
		terms, inTerms = []int{}, []int{1}
	} else if len(input.shape) >= 2 {
		terms = slices.Delete(slices.Clone(input.shape), 1, 2)
		inTerms = terms
	}
	soft := logits && len(input.shape) > 0 && slices.Equal(target.shape, input.shape)
	if len(input.shape) == 0 || !soft && !slices.Equal(target.shape, terms) {
		panic(fmt.Sprintf("tensor: %s: input of shape %v and target of shape %v, want [N C d...] and [N d...] (or [C] and [])", op, input.shape, target.shape))
	}
	if soft && p.Ignore && p.IgnoreIndex >= 0 {
		panic(fmt.Sprintf("tensor: %s: ignore index %d with a target of probabilities (PyTorch refuses it)", op, p.IgnoreIndex))
	}
	c := input.shape[min(1, len(input.shape)-1)]
	if p.Weight != nil && (len(p.Weight.shape) != 1 || p.Weight.shape[0] != c) {
		panic(fmt.Sprintf("tensor: %s: weight of shape %v for %d classes", op, p.Weight.shape, c))
	}
	if e := p.LabelSmoothing; !(e >= 0 && e <= 1) {
		panic(fmt.Sprintf("tensor: %s: label smoothing %v outside [0, 1]", op, e))
	}
	if !logits {
		p.LabelSmoothing = 0
	}
	cc := classCall{in: input, tg: target, terms: terms, inTerms: inTerms,
		a: ClassLossArgs{Logits: logits, Soft: soft, Reduction: p.Reduction, Weight: p.Weight,
			Ignore: !soft, IgnoreIndex: p.ignored(), Smoothing: p.LabelSmoothing}}
	if len(input.shape) == 1 {
		cc.in = input.Reshape(1, c)
		cc.tg = target.Reshape(1)
		if soft {
			cc.tg = target.Reshape(1, c)
		}
	}
	return cc
}

// classLoss runs NLL's or CrossEntropyWith's forward on the operands'
// device.
func classLoss(op string, logits bool, input, target *Tensor, p LossParams) *Tensor {
	cc := classOperands(op, logits, input, target, p)
	dev := sameDevice(op, nil, input, target, p.Weight)
	k := lossOn(op, dev, nil, input, target)
	loss := result(op, dev, lossShape(p.Reduction, cc.inTerms), input, target)
	lossRan(op, dev, k.Class(loss, nil, nil, cc.in, cc.tg, cc.a), loss, input, target)
	return loss.Reshape(lossShape(p.Reduction, cc.terms)...)
}

// classGrad runs NLL's or CrossEntropyWith's backward for the upstream
// gradient dloss on the operands' device.
func classGrad(op string, logits bool, dloss, input, target *Tensor, p LossParams) *Tensor {
	cc := classOperands(op, logits, input, target, p)
	checkDLoss(op, dloss, cc.terms, p.Reduction)
	dev := sameDevice(op, nil, dloss, input, target, p.Weight)
	k := lossOn(op, dev, nil, dloss, input, target)
	dl := dloss
	if p.Reduction == LossNone {
		dl = dloss.Reshape(cc.inTerms...)
	}
	d := result(op, dev, cc.in.shape, input, target)
	lossRan(op, dev, k.Class(nil, d, dl, cc.in, cc.tg, cc.a), d, dloss, input, target)
	return d.Reshape(input.shape...)
}

// NLL returns PyTorch's nll_loss of log-probabilities input [N, C, d...]
// (or [C]) and target [N, d...] (or 0-d) holding class indices as float32:
// the terms -w[y]·input[i, y, j] (w from p.Weight, nil: 1), 0 for an
// ignored target (see LossParams), reduced by p.Reduction: LossMean is
// the weighted mean Σ terms / Σ w[y] over the targets not ignored, NaN
// when there is none (as PyTorch's). A target that is neither an integer
// in [0, C) nor the ignored index panics, naming the function, its
// position and value (on a device: the device's error, see LossKernels).
func NLL(input, target *Tensor, p LossParams) *Tensor {
	return classLoss("NLL", false, input, target, p)
}

// NLLBackward returns the gradient of NLL with respect to input for the
// upstream gradient dloss: -w[y]·dloss/Σw at each target's class (its
// dloss element for LossNone), 0 elsewhere and at ignored targets (all 0
// when every target is ignored).
func NLLBackward(dloss, input, target *Tensor, p LossParams) *Tensor {
	return classGrad("NLLBackward", false, dloss, input, target, p)
}

// CrossEntropyWith returns PyTorch's cross_entropy of logits [N, C, d...]
// (or [C]) and class-index target [N, d...] with its options: the terms
// -Σ_k a_k·log softmax_k with a_k = (1-ε)·w[y]·[k = y] + ε/C·w[k] (ε from
// p.LabelSmoothing, w from p.Weight), 0 for ignored targets, reduced as
// NLL's (the mean divides by Σ w[y] of the targets not ignored, as
// PyTorch's, also for the smoothing term). With the default options and
// [N, C] logits (and no target of -100) it is the fused CrossEntropy.
// The log-softmax is computed in float64.
//
// A target of the logits' shape holds class probabilities q (PyTorch's
// soft targets): the terms are -Σ_k w[k]·((1-ε)·q_k + ε/C)·log softmax_k,
// the mean divides by the number of positions N·d... (PyTorch's), and an
// ignored index ≥ 0 panics (PyTorch refuses it).
func CrossEntropyWith(logits, labels *Tensor, p LossParams) *Tensor {
	return classLoss("CrossEntropyWith", true, logits, labels, p)
}

// CrossEntropyWithBackward returns the gradient of CrossEntropyWith with
// respect to logits for the upstream gradient dloss: ((Σ_k a_k)·softmax -
// a)·dloss/den at each target, 0 at ignored ones.
func CrossEntropyWithBackward(dloss, logits, labels *Tensor, p LossParams) *Tensor {
	return classGrad("CrossEntropyWithBackward", true, dloss, logits, labels, p)
}
