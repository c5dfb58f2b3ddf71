package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/simd"
)

// The losses. Each computes, in one call, a loss (the mean over the
// elements or rows, a 0-d tensor) and its gradient with respect to the
// prediction, for a gradient of 1 of the loss: a tape that gets an
// upstream gradient g multiplies the gradient by g (Mul with the 0-d g).
// The plain forms return both on the operands' device; the Into forms
// write them into loss (0-d) and the gradient (the prediction's shape, or
// nil for the loss alone), which must be on the operands' device too.
// The loss stays there until the caller asks for it (Item copies one
// element back), so that a training step on a device need not wait for
// it.
//
// Every operand must be on one device: unlike the elementwise ops, the
// losses take no 0-d host tensor beside device ones (the loss is a result,
// and a prediction or target of one element belongs with the others). The
// operands may be any views; on the host, outputs that overlap the inputs
// are computed from copies of the inputs.
//
// With no element (or no row) the mean is NaN, as PyTorch's, and the
// gradient is empty.

// CrossEntropy returns the mean over the rows of logits [N, C] of
// -log softmax(row)[label], labels [N] holding class indices in [0, C) as
// float32 (PyTorch's cross_entropy with mean reduction), and its gradient
// with respect to logits, (softmax(row) - onehot(label))/N. It is fused
// and stable: one softmax of each row (simd's, within 4 ulp) gives both
// the row's loss, -log softmax(row)[label] (within 2.4e-7 absolute; where
// that probability underflows, below 2⁻¹⁰⁰, logsumexp(row) - row[label],
// within 3e-7), summed in float64 and rounded once, and each gradient
// element, the probability minus the one-hot, times the float32 1/N. On
// the host a label that is not such an integer panics, naming the
// function, the row and the value; on a device it is the device's error
// (see LossKernels). With no rows the loss is NaN and the gradient the
// empty [0, C].
func CrossEntropy(logits, labels *Tensor) (loss, dlogits *Tensor) {
	const op = "CrossEntropy"
	checkNil(op, "logits, labels", logits, labels)
	checkCrossEntropy(op, logits, labels)
	return runLoss(op, crossEntropyKernel, logits, labels)
}

// CrossEntropyInto is CrossEntropy into loss (0-d) and dlogits (of
// logits' shape, or nil for the loss alone).
func CrossEntropyInto(loss, dlogits, logits, labels *Tensor) {
	const op = "CrossEntropyInto"
	checkNil(op, "loss, logits, labels", loss, logits, labels)
	checkCrossEntropy(op, logits, labels)
	runLossInto(op, crossEntropyKernel, loss, dlogits, logits, labels)
}

func checkCrossEntropy(op string, logits, labels *Tensor) {
	if len(logits.shape) != 2 || len(labels.shape) != 1 || labels.shape[0] != logits.shape[0] {
		panic(fmt.Sprintf("tensor: %s: logits of shape %v and labels of shape %v, want [N C] and [N]", op, logits.shape, labels.shape))
	}
}

// MSE returns the mean of (pred - target)² over every element, target
// having pred's shape, and its gradient with respect to pred,
// 2(pred - target)/n. The squares are summed in float64 by blocks of
// simd's Dot (float32 within a block of 1024 elements), the mean rounded
// once; each gradient element is the float32 difference times the
// float32 2/n. With no element the loss is NaN.
func MSE(pred, target *Tensor) (loss, dpred *Tensor) {
	const op = "MSE"
	checkNil(op, "pred, target", pred, target)
	checkSameShape(op, "target", target, pred)
	return runLoss(op, pointKernel(LossMSE), pred, target)
}

// MSEInto is MSE into loss (0-d) and dpred (of pred's shape, or nil for
// the loss alone).
func MSEInto(loss, dpred, pred, target *Tensor) {
	const op = "MSEInto"
	checkNil(op, "loss, pred, target", loss, pred, target)
	checkSameShape(op, "target", target, pred)
	runLossInto(op, pointKernel(LossMSE), loss, dpred, pred, target)
}

// BCEWithLogits returns the mean over every element of the binary cross
// entropy between sigmoid(x) and target (values in [0, 1], x's shape),
// computed stably from the logits, max(x, 0) - x·t + log(1 + e^-|x|),
// and its gradient with respect to x, (sigmoid(x) - t)/n. Each term is
// computed and summed in float64 and the mean rounded once; each gradient
// element is simd's Sigmoid (a few ulp) minus t, times the float32 1/n.
// The target is not checked (PyTorch's is not either). With no element
// the loss is NaN.
func BCEWithLogits(x, target *Tensor) (loss, dx *Tensor) {
	const op = "BCEWithLogits"
	checkNil(op, "x, target", x, target)
	checkSameShape(op, "target", target, x)
	return runLoss(op, pointKernel(LossBCEWithLogits), x, target)
}

// BCEWithLogitsInto is BCEWithLogits into loss (0-d) and dx (of x's
// shape, or nil for the loss alone).
func BCEWithLogitsInto(loss, dx, x, target *Tensor) {
	const op = "BCEWithLogitsInto"
	checkNil(op, "loss, x, target", loss, x, target)
	checkSameShape(op, "target", target, x)
	runLossInto(op, pointKernel(LossBCEWithLogits), loss, dx, x, target)
}

// lossKernel is a fused loss of the Loss family: loss and gradient d of
// pred and target for an upstream gradient of 1.
type lossKernel func(k LossKernels, loss, d, pred, target *Tensor) error

// crossEntropyKernel is CrossEntropy's case of LossKernels.Class.
func crossEntropyKernel(k LossKernels, loss, d, logits, labels *Tensor) error {
	return k.Class(loss, d, nil, logits, labels, ClassLossArgs{Logits: true})
}

// pointKernel is kind's case of LossKernels.Pointwise with the default
// options (MSE, BCEWithLogits).
func pointKernel(kind LossKind) lossKernel {
	return func(k LossKernels, loss, d, pred, target *Tensor) error {
		return k.Pointwise(loss, d, nil, pred, target, PointLossArgs{Kind: kind})
	}
}

// runLoss runs the loss f of pred and target, checked, on their device,
// into a new loss (0-d) and gradient there.
func runLoss(op string, f lossKernel, pred, target *Tensor) (loss, d *Tensor) {
	dev := sameDevice(op, nil, pred, target)
	k := lossOn(op, dev, nil, pred, target)
	loss = result(op, dev, nil, pred, target)
	d = result(op, dev, pred.shape, pred, target)
	lossRan(op, dev, f(k, loss, d, pred, target), loss, pred, target)
	return loss, d
}

// runLossInto runs the loss f of pred and target, checked, into loss and
// d (nil: none) after checking them, on their device.
func runLossInto(op string, f lossKernel, loss, d, pred, target *Tensor) {
	checkLossOutputs(op, loss, d, pred)
	dev := sameDevice(op, loss, d, pred, target)
	k := lossOn(op, dev, loss, d, pred, target)
	if dev == CPU {
		pred, target = detachFrom(pred, loss, d), detachFrom(target, loss, d)
	}
	lossRan(op, dev, f(k, loss, d, pred, target), loss, d, pred, target)
}

// checkLossOutputs checks an Into form's loss (0-d) and gradient d (nil,
// or writable of pred's shape).
func checkLossOutputs(op string, loss, d, pred *Tensor) {
	if len(loss.shape) != 0 {
		panic(fmt.Sprintf("tensor: %s: loss of shape %v, want a 0-d tensor", op, loss.shape))
	}
	if d == nil {
		return
	}
	if !slices.Equal(d.shape, pred.shape) {
		panic(fmt.Sprintf("tensor: %s: gradient of shape %v for a prediction of shape %v", op, d.shape, pred.shape))
	}
	checkWritable(op, d)
}

// detachFrom returns x, or a copy of it when it overlaps one of the
// outputs loss and d (d may be nil).
func detachFrom(x, loss, d *Tensor) *Tensor {
	if overlaps(loss, x) || d != nil && overlaps(d, x) {
		return x.Clone()
	}
	return x
}

// sameDevice is deviceOn (dst may be nil) without its exception for 0-d
// host operands: every operand must be on the one device, for the Loss
// family, whose 0-d operands (a loss, a prediction of one element) belong
// with the others.
func sameDevice(op string, dst *Tensor, ts ...*Tensor) Device {
	dev := deviceOn(op, dst, ts...)
	if dev == CPU {
		return dev
	}
	for _, t := range ts {
		if t != nil && t.store == nil {
			panic(mixed(op, dev, withDst(dst, ts)))
		}
	}
	return dev
}

// mixed is the panic of op on the operands ts, some on dev and some on the
// host (deviceOn's message).
func mixed(op string, dev Device, ts []*Tensor) string {
	return fmt.Sprintf("tensor: %s: %s: operands on %v and cpu; copy them to one device with To", op, placesOf(ts), dev)
}

// lossRan panics when the implementation of op returned err: on the host
// the error is a bad label, which the panic names with op; on a device
// the panic is ran's.
func lossRan(op string, dev Device, err error, dst *Tensor, ts ...*Tensor) {
	if err != nil && dev == CPU {
		panic(fmt.Sprintf("tensor: %s: %v", op, err))
	}
	ran(op, err, dst, ts...)
}

// lossBlock is the block of elements over which MSE sums its squares in
// float32 (simd.Dot) before adding the block's sum in float64.
const lossBlock = 1024

// lossScratch holds the losses' scratch when they compute no gradient:
// MSE's blocks of differences, CrossEntropy's rows of probabilities.
var lossScratch freelist.Stack[[]float32]

// scratchOf returns a scratch buffer of at least n elements from
// lossScratch (put it back there).
func scratchOf(n int) *[]float32 {
	b := lossScratch.Get()
	if len(*b) < n {
		*b = make([]float32, n)
	}
	return b
}

// Class is the CPU's LossKernels.Class: the operands on the host, outputs
// not overlapping inputs. It checks every label before it writes
// anything. CrossEntropy's case is the fused crossEntropy.
func (cpuKernels) Class(loss, dinput, dloss, input, target *Tensor, a ClassLossArgs) error {
	if isCrossEntropy(loss, dloss, input, target, a) {
		return crossEntropy(loss, dinput, input, target)
	}
	return classLossCPU(loss, dinput, dloss, input, target, a)
}

// isCrossEntropy reports whether Class's arguments are CrossEntropy's
// fused case: [N, C] logits, the mean, no option but an ignored index
// that no label has, a loss and no dloss.
func isCrossEntropy(loss, dloss, input, target *Tensor, a ClassLossArgs) bool {
	if !a.Logits || a.Soft || a.Reduction != LossMean || a.Weight != nil || a.Smoothing != 0 ||
		len(input.shape) != 2 || loss == nil || dloss != nil {
		return false
	}
	return !a.Ignore || !slices.Contains(target.hostData("CrossEntropy"), a.IgnoreIndex)
}

// Pointwise is the CPU's LossKernels.Pointwise: the operands on the host,
// outputs not overlapping inputs. The cases of MSE and BCEWithLogits are
// their fused code.
func (cpuKernels) Pointwise(loss, dpred, dloss, pred, target *Tensor, a PointLossArgs) error {
	if loss != nil && dloss == nil && a.Reduction == LossMean && a.Weight == nil && a.PosWeight == nil {
		switch a.Kind {
		case LossMSE:
			return mse(loss, dpred, pred, target)
		case LossBCEWithLogits:
			return bceWithLogits(loss, dpred, pred, target)
		}
	}
	return pointLossCPU(loss, dpred, dloss, pred, target, a)
}

// crossEntropy is CrossEntropy's fused loss and gradient on the host.
func crossEntropy(loss, dlogits, logits, labels *Tensor) error {
	const op = "CrossEntropy"
	n, c := logits.shape[0], logits.shape[1]
	lab := labels.hostData(op)
	for i, l := range lab {
		if !(l >= 0 && l < float32(c)) || l != float32(int(l)) {
			return fmt.Errorf("label %v of row %d outside [0, %d)", l, i, c)
		}
	}
	x := logits.hostData(op)
	d, out := gradBuffer(op, dlogits)
	var p []float32 // a row's softmax without a gradient to write it to
	if d == nil && n > 0 {
		buf := scratchOf(c)
		defer lossScratch.Put(buf)
		p = (*buf)[:c]
	}
	inv := 1 / float32(n)
	var sum float64
	for i, l := range lab {
		row := x[i*c : (i+1)*c]
		k := int(l)
		if d != nil {
			p = d[i*c : (i+1)*c]
		}
		simd.Softmax(p, row)
		sum += rowLoss(row, p, k)
		if d != nil {
			p[k]--
			simd.Scale(p, p, inv)
		}
	}
	setLoss(loss, sum, n)
	finish(dlogits, out)
	return nil
}

// rowLoss is the cross entropy of a row of logits whose softmax is p and
// label k: -log p[k] (p within 4 ulp, so within 2.4e-7 absolute), or
// logsumexp(row) - row[k] (2 ulp or 3e-7 absolute) where p[k] is below
// 2⁻¹⁰⁰, its relative accuracy lost to underflow, or NaN (a row with
// ±Inf). The softmax so serves loss and gradient with one pass of
// exponentials.
func rowLoss(row, p []float32, k int) float64 {
	if pk := p[k]; pk >= 0x1p-100 {
		return -math.Log(float64(pk))
	}
	return float64(simd.LogSumExp(row)) - float64(row[k])
}

// mse is MSE's fused loss and gradient on the host.
func mse(loss, dpred, pred, target *Tensor) error {
	const op = "MSE"
	p, t := pred.hostData(op), target.hostData(op)
	d, out := gradBuffer(op, dpred)
	scale := 2 / float32(len(p))
	var buf []float32 // the differences' block without a gradient
	if d == nil {
		b := scratchOf(lossBlock)
		defer lossScratch.Put(b)
		buf = *b
	}
	var sum float64
	for lo := 0; lo < len(p); lo += lossBlock {
		hi := min(lo+lossBlock, len(p))
		var b []float32
		if d != nil {
			b = d[lo:hi]
		} else {
			b = buf[:hi-lo]
		}
		simd.Sub(b, p[lo:hi], t[lo:hi])
		sum += float64(simd.Dot(b, b))
		if d != nil {
			simd.Scale(b, b, scale)
		}
	}
	setLoss(loss, sum, len(p))
	finish(dpred, out)
	return nil
}

// bceWithLogits is BCEWithLogits' fused loss and gradient on the host.
func bceWithLogits(loss, dx, x, target *Tensor) error {
	const op = "BCEWithLogits"
	xd, t := x.hostData(op), target.hostData(op)
	var sum float64
	for i, v := range xd {
		a := float64(v)
		sum += math.Max(a, 0) - a*float64(t[i]) + math.Log1p(math.Exp(-math.Abs(a)))
	}
	if d, out := gradBuffer(op, dx); d != nil {
		simd.Sigmoid(d, xd)
		simd.Sub(d, d, t)
		simd.Scale(d, d, 1/float32(len(d)))
		finish(dx, out)
	}
	setLoss(loss, sum, len(xd))
	return nil
}

// gradBuffer returns where a loss writes its gradient d, and the tensor
// holding it (target: d itself when contiguous), which finish copies into
// d; nil, nil when d is nil.
func gradBuffer(op string, d *Tensor) ([]float32, *Tensor) {
	if d == nil {
		return nil, nil
	}
	out := target(d)
	return out.hostData(op), out
}

// setLoss writes sum/n, rounded once, to the 0-d loss (NaN for n = 0).
func setLoss(loss *Tensor, sum float64, n int) {
	loss.data[loss.offset] = float32(sum / float64(n))
}
