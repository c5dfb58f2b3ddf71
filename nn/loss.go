package nn

import (
	"fmt"
	"math"

	"github.com/lanesgo/lanes/simd"
	"github.com/lanesgo/lanes/tensor"
)

// CrossEntropy returns the mean over the rows of logits [N, C] of
// -log softmax(row)[label], with labels [N] holding class indices in
// [0, C) as float32 (PyTorch's cross_entropy with mean reduction). It is
// fused and stable: each row's loss is logsumexp(row) - row[label], and the
// backward is (softmax(row) - onehot(label))/N from the probabilities kept
// by the forward pass. It panics on a label that is not such an integer.
// With no rows (N = 0) the mean is NaN, as PyTorch's, and the gradient is
// the empty [0, C].
func (tp *Tape) CrossEntropy(logits *Var, labels *tensor.Tensor) *Var {
	const op = "CrossEntropy"
	tp.use(op, "logits", logits)
	mustTensor(op, "labels", labels)
	n, c := matrix(op, "logits", logits)
	if labels.Dims() != 1 || labels.Dim(0) != n {
		panic(fmt.Sprintf("nn: %s: labels of shape %v do not match logits of shape %v", op, labels.Shape(), logits.value.Shape()))
	}
	lab, x := labels.Data(), data(logits)
	probs := tp.alloc(n, c)
	pd := probs.Data()
	var sum float64
	for i, l := range lab {
		if !(l >= 0 && l < float32(c)) || l != float32(int(l)) {
			panic(fmt.Sprintf("nn: %s: label %v of row %d outside [0, %d)", op, l, i, c))
		}
		row := x[i*c : (i+1)*c]
		sum += float64(simd.LogSumExp(row)) - float64(row[int(l)])
		simd.Softmax(pd[i*c:(i+1)*c], row)
	}
	y := tp.alloc()
	y.Data()[0] = float32(sum / float64(n)) // 0/0 = NaN for no rows
	out, nd := tp.result(y, backCrossEntropy, logits)
	if nd != nil {
		nd.saved[0], nd.saved[1] = probs, labels
	}
	return out
}

func backCrossEntropy(tp *Tape, n *node) {
	logits := n.in[0]
	probs, lab := n.saved[0].Data(), n.saved[1].Data()
	rows := len(lab)
	c := logits.value.Dim(1)
	s := grad(n.out)[0] / float32(rows) // no rows: s is ±Inf or NaN, and unused
	dx, add := tp.gradFor(logits)
	d := dx.Data()
	simd.Scale(d, probs, s)
	for i, l := range lab {
		d[i*c+int(l)] -= s
	}
	tp.flush(logits, dx, add)
}

// MSE returns the mean of (pred - target)² over every element (NaN when
// there is none, as PyTorch's); target has pred's shape.
func (tp *Tape) MSE(pred *Var, target *tensor.Tensor) *Var {
	const op = "MSE"
	tp.use(op, "pred", pred)
	mustTensor(op, "target", target)
	p := data(pred)
	t := sameLen(op, pred, target)
	diff := tp.like(pred.value)
	d := diff.Data()
	simd.Sub(d, p, t)
	y := tp.alloc()
	y.Data()[0] = float32(float64(simd.Dot(d, d)) / float64(len(d))) // 0/0 = NaN when empty
	out, nd := tp.result(y, backMSE, pred)
	if nd != nil {
		nd.saved[0] = diff
	}
	return out
}

func backMSE(tp *Tape, n *node) {
	pred, d := n.in[0], n.saved[0].Data()
	dx, add := tp.gradFor(pred)
	simd.Scale(dx.Data(), d, 2*grad(n.out)[0]/float32(len(d)))
	tp.flush(pred, dx, add)
}

// BCEWithLogits returns the mean over every element of the binary cross
// entropy between sigmoid(x) and target (values in [0, 1], x's shape),
// computed stably from the logits: max(x, 0) - x·t + log(1 + e^-|x|). It is
// NaN when x has no element, as PyTorch's.
func (tp *Tape) BCEWithLogits(x *Var, target *tensor.Tensor) *Var {
	const op = "BCEWithLogits"
	tp.use(op, "x", x)
	mustTensor(op, "target", target)
	xd := data(x)
	t := sameLen(op, x, target)
	var sum float64
	for i, v := range xd {
		a := float64(v)
		sum += math.Max(a, 0) - a*float64(t[i]) + math.Log1p(math.Exp(-math.Abs(a)))
	}
	y := tp.alloc()
	y.Data()[0] = float32(sum / float64(len(xd))) // 0/0 = NaN when empty
	out, nd := tp.result(y, backBCE, x)
	if nd != nil {
		nd.saved[0] = target
	}
	return out
}

func backBCE(tp *Tape, n *node) {
	x := n.in[0]
	t := n.saved[0].Data()
	dx, add := tp.gradFor(x)
	d := dx.Data()
	simd.Sigmoid(d, data(x))
	simd.Sub(d, d, t)
	simd.Scale(d, d, grad(n.out)[0]/float32(len(d)))
	tp.flush(x, dx, add)
}

// sameLen returns target's data after checking that its shape is pred's.
func sameLen(op string, pred *Var, target *tensor.Tensor) []float32 {
	if !sameShapeAs(pred.value, target) {
		panic(fmt.Sprintf("nn: %s: prediction of shape %v and target of shape %v differ", op, pred.value.Shape(), target.Shape()))
	}
	return target.Data()
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
