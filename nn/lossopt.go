package nn

import (
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// The losses with PyTorch's options (tensor.LossParams: reduction, class
// weights, ignore_index, label smoothing, log_target, pos_weight). Each
// runs tensor's forward (the loss: 0-d, or of the per-element shape for
// tensor.LossNone) and, in the backward pass, tensor's ...Backward with
// the loss's upstream gradient. They run where their operands are (the
// host, or a device's Loss family, the target and the weights on the
// prediction's device) and allocate their results, unlike the fused
// CrossEntropy, MSE and BCEWithLogits, which CrossEntropyWith uses for its
// default options on the host.

// NLL is tensor.NLL of log-probabilities input [N, C, d...] (or [C]) and
// class-index target [N, d...] (or 0-d).
func (tp *Tape) NLL(input *Var, target *tensor.Tensor, p tensor.LossParams) *Var {
	return tp.optLoss("NLL", "input", input, target,
		func() *tensor.Tensor { return tensor.NLL(input.value, target, p) },
		func(d *tensor.Tensor) *tensor.Tensor { return tensor.NLLBackward(d, input.value, target, p) })
}

// CrossEntropyWith is tensor.CrossEntropyWith of logits [N, C, d...] (or
// [C]) and class-index labels [N, d...] (or class probabilities of the
// logits' shape). With the default options, [N, C]
// logits on the host and no label of -100 (PyTorch's default ignored
// index) it is CrossEntropy, the fused op; on a device, whose labels it
// cannot read, the labels of -100 are ignored by the device's kernel.
func (tp *Tape) CrossEntropyWith(logits *Var, labels *tensor.Tensor, p tensor.LossParams) *Var {
	const op = "CrossEntropyWith"
	tp.use(op, "logits", logits)
	mustTensor(op, "labels", labels)
	if p == (tensor.LossParams{}) && logits.value.Dims() == 2 && labels.Dims() == 1 &&
		onHost(labels) && onHost(logits.value) && !slices.Contains(labels.Data(), -100) {
		return tp.CrossEntropy(logits, labels)
	}
	return tp.optLoss(op, "logits", logits, labels,
		func() *tensor.Tensor { return tensor.CrossEntropyWith(logits.value, labels, p) },
		func(d *tensor.Tensor) *tensor.Tensor {
			return tensor.CrossEntropyWithBackward(d, logits.value, labels, p)
		})
}

// L1 is tensor.L1: |pred - target| reduced by p.Reduction.
func (tp *Tape) L1(pred *Var, target *tensor.Tensor, p tensor.LossParams) *Var {
	return tp.optLoss("L1", "pred", pred, target,
		func() *tensor.Tensor { return tensor.L1(pred.value, target, p) },
		func(d *tensor.Tensor) *tensor.Tensor { return tensor.L1Backward(d, pred.value, target, p) })
}

// SmoothL1 is tensor.SmoothL1 with beta ≥ 0 (PyTorch's default 1).
func (tp *Tape) SmoothL1(pred *Var, target *tensor.Tensor, beta float32, p tensor.LossParams) *Var {
	return tp.optLoss("SmoothL1", "pred", pred, target,
		func() *tensor.Tensor { return tensor.SmoothL1(pred.value, target, beta, p) },
		func(d *tensor.Tensor) *tensor.Tensor { return tensor.SmoothL1Backward(d, pred.value, target, beta, p) })
}

// Huber is tensor.Huber with delta > 0 (PyTorch's default 1).
func (tp *Tape) Huber(pred *Var, target *tensor.Tensor, delta float32, p tensor.LossParams) *Var {
	return tp.optLoss("Huber", "pred", pred, target,
		func() *tensor.Tensor { return tensor.Huber(pred.value, target, delta, p) },
		func(d *tensor.Tensor) *tensor.Tensor { return tensor.HuberBackward(d, pred.value, target, delta, p) })
}

// KLDiv is tensor.KLDiv of log-probabilities input and a target of
// probabilities (log-probabilities with p.LogTarget).
func (tp *Tape) KLDiv(input *Var, target *tensor.Tensor, p tensor.LossParams) *Var {
	return tp.optLoss("KLDiv", "input", input, target,
		func() *tensor.Tensor { return tensor.KLDiv(input.value, target, p) },
		func(d *tensor.Tensor) *tensor.Tensor { return tensor.KLDivBackward(d, input.value, target, p) })
}

// BCE is tensor.BCE of probabilities x in [0, 1].
func (tp *Tape) BCE(x *Var, target *tensor.Tensor, p tensor.LossParams) *Var {
	return tp.optLoss("BCE", "x", x, target,
		func() *tensor.Tensor { return tensor.BCE(x.value, target, p) },
		func(d *tensor.Tensor) *tensor.Tensor { return tensor.BCEBackward(d, x.value, target, p) })
}

// BCEWithLogitsWith is tensor.BCEWithLogitsWith (pos_weight, reduction).
func (tp *Tape) BCEWithLogitsWith(x *Var, target *tensor.Tensor, p tensor.LossParams) *Var {
	return tp.optLoss("BCEWithLogitsWith", "x", x, target,
		func() *tensor.Tensor { return tensor.BCEWithLogitsWith(x.value, target, p) },
		func(d *tensor.Tensor) *tensor.Tensor { return tensor.BCEWithLogitsWithBackward(d, x.value, target, p) })
}

// optLoss records a loss of pred (the operand name of op) computed by fwd, whose gradient with
// respect to pred for the upstream gradient d is bwd(d).
func (tp *Tape) optLoss(op, name string, pred *Var, target *tensor.Tensor, fwd func() *tensor.Tensor, bwd func(d *tensor.Tensor) *tensor.Tensor) *Var {
	tp.use(op, name, pred)
	mustTensor(op, "target", target)
	out, _ := tp.result(fwd(), func(tp *Tape, n *node) {
		tp.addGrad(n.in[0], bwd(n.out.grad))
	}, pred)
	return out
}
