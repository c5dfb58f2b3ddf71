package nn

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// The losses run as one call of tensor's Loss family each (tensor's
// CrossEntropy, MSE, BCEWithLogits), which computes the loss and, when a
// gradient will be wanted, its gradient for an upstream gradient of 1, on
// the device of the prediction; the backward pass multiplies that saved
// gradient by the loss's gradient (a tensor op, on the same device). The
// loss stays on the device until the caller reads it (Value().Item()).

// CrossEntropy returns the mean over the rows of logits [N, C] of
// -log softmax(row)[label], with labels [N] holding class indices in
// [0, C) as float32 (PyTorch's cross_entropy with mean reduction). It is
// fused and stable (tensor.CrossEntropy): each row's loss is
// logsumexp(row) - row[label], and the gradient (softmax(row) -
// onehot(label))/N is computed with it. It panics on a label that is not
// such an integer (tensor's panic; on a device, the device's error). With
// no rows (N = 0) the mean is NaN, as PyTorch's, and the gradient is the
// empty [0, C].
func (tp *Tape) CrossEntropy(logits *Var, labels *tensor.Tensor) *Var {
	const op = "CrossEntropy"
	tp.use(op, "logits", logits)
	mustTensor(op, "labels", labels)
	n, _ := matrix(op, "logits", logits)
	if labels.Dims() != 1 || labels.Dim(0) != n {
		panic(fmt.Sprintf("nn: %s: labels of shape %v do not match logits of shape %v", op, labels.Shape(), logits.value.Shape()))
	}
	y, d := tp.lossOutputs(logits)
	tensor.CrossEntropyInto(y, d, logits.value, labels)
	return tp.lossResult(y, d, logits, lossCrossEntropy, labels)
}

// MSE returns the mean of (pred - target)² over every element (NaN when
// there is none, as PyTorch's); target has pred's shape.
func (tp *Tape) MSE(pred *Var, target *tensor.Tensor) *Var {
	const op = "MSE"
	tp.use(op, "pred", pred)
	mustTensor(op, "target", target)
	checkTarget(op, pred, target)
	y, d := tp.lossOutputs(pred)
	tensor.MSEInto(y, d, pred.value, target)
	return tp.lossResult(y, d, pred, lossMSE, target)
}

// BCEWithLogits returns the mean over every element of the binary cross
// entropy between sigmoid(x) and target (values in [0, 1], x's shape),
// computed stably from the logits: max(x, 0) - x·t + log(1 + e^-|x|). It is
// NaN when x has no element, as PyTorch's.
func (tp *Tape) BCEWithLogits(x *Var, target *tensor.Tensor) *Var {
	const op = "BCEWithLogits"
	tp.use(op, "x", x)
	mustTensor(op, "target", target)
	checkTarget(op, x, target)
	y, d := tp.lossOutputs(x)
	tensor.BCEWithLogitsInto(y, d, x.value, target)
	return tp.lossResult(y, d, x, lossBCEWithLogits, target)
}

// lossOutputs returns where a loss of the prediction pred writes its value
// (0-d) and its gradient (nil when no gradient will be asked for: the
// loss alone then costs less).
func (tp *Tape) lossOutputs(pred *Var) (y, d *tensor.Tensor) {
	y = tp.allocOn(pred.value.Device())
	if pred.requires && !tp.noGrad {
		d = tp.like(pred.value)
	}
	return y, d
}

// lossKind names a loss for its second-order gradient (gradLoss), which
// recomputes the first from the prediction and the target.
type lossKind int

const (
	lossMSE lossKind = iota + 1
	lossCrossEntropy
	lossBCEWithLogits
)

// lossResult makes the output Var of a loss of the given kind with value y
// whose gradient with respect to pred, for an upstream gradient of 1, is
// d; target is the loss's target (labels for CrossEntropy).
func (tp *Tape) lossResult(y, d *tensor.Tensor, pred *Var, kind lossKind, target *tensor.Tensor) *Var {
	out, nd := tp.result(y, backLoss, pred)
	if nd != nil {
		nd.saved[0], nd.saved[1], nd.dims = d, target, int(kind)
	}
	return out
}

// backLoss sends a loss's gradient back: its saved gradient times the
// loss's own, g, a 0-d tensor on the loss's device (on the host, read as a
// float for ScaleInto, simd's Scale: MulInto by a 0-d tensor takes the
// broadcast path, 10 times slower for [256 1000]; on a device, MulInto,
// which leaves g there).
func backLoss(tp *Tape, n *node) {
	pred, g := n.in[0], n.out.grad
	dx, add := tp.gradFor(pred)
	if g.Device() == tensor.CPU {
		tensor.ScaleInto(dx, n.saved[0], g.Item())
	} else {
		tensor.MulInto(dx, n.saved[0], g)
	}
	tp.flush(pred, dx, add)
}

// checkTarget checks that target's shape is pred's.
func checkTarget(op string, pred *Var, target *tensor.Tensor) {
	if !sameShapeAs(pred.value, target) {
		panic(fmt.Sprintf("nn: %s: prediction of shape %v and target of shape %v differ", op, pred.value.Shape(), target.Shape()))
	}
}

func sameShapeAs(a, b *tensor.Tensor) bool {
	if a.Dims() != b.Dims() {
		return false
	}
	for i := range a.Dims() {
		if a.Dim(i) != b.Dim(i) {
			return false
		}
	}
	return true
}
