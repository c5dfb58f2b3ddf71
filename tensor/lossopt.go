package tensor

import (
	"fmt"
	"math"
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
// within an ulp or two of the float64 formula. They run on the host: an
// operand on a device makes them panic naming the function (copy it with
// To(CPU)). Operands may be any views.
//
// The existing CrossEntropy, MSE and BCEWithLogits are the fused fast
// paths of the default case; CrossEntropyWith takes that path when its
// options are the defaults.

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

// reduceTerms returns the loss of terms (per-element, of shape): the terms
// themselves for LossNone, else their sum divided by den (1 for a sum).
func reduceTerms(terms []float64, shape []int, r LossReduction, den float64) *Tensor {
	if r == LossNone {
		out := New(shape...)
		for i, v := range terms {
			out.data[i] = float32(v)
		}
		return out
	}
	var s float64
	for _, v := range terms {
		s += v
	}
	if r != LossSum {
		s /= den
	}
	return Scalar(float32(s))
}

// upstream returns the factor of term i's derivative for the upstream
// gradient dloss: dloss[i] for LossNone, else dloss/den (den 1 for a sum).
// dloss is checked: 0-d, or of shape for LossNone.
func upstream(op string, dloss *Tensor, shape []int, r LossReduction, den float64) func(i int) float64 {
	checkNil(op, "dloss", dloss)
	if r == LossNone {
		if !slices.Equal(dloss.shape, shape) {
			panic(fmt.Sprintf("tensor: %s: dloss of shape %v, want the loss's shape %v", op, dloss.shape, shape))
		}
		g := dloss.hostData(op)
		return func(i int) float64 { return float64(g[i]) }
	}
	if len(dloss.shape) != 0 {
		panic(fmt.Sprintf("tensor: %s: dloss of shape %v, want a 0-d tensor", op, dloss.shape))
	}
	g := float64(dloss.hostData(op)[0])
	if r != LossSum {
		g /= den
	}
	return func(int) float64 { return g }
}

// meanDen is the mean's divisor of n elements: n, or the first axis for
// LossBatchMean.
func meanDen(r LossReduction, shape []int, n int) float64 {
	if r == LossBatchMean && len(shape) > 0 {
		return float64(shape[0])
	}
	return float64(n)
}

// ---- pointwise losses ----

const (
	lossL1 = iota
	lossSmoothL1
	lossHuber
	lossKLDiv
	lossBCE
	lossBCEWithLogits
)

// pointLoss is one pointwise loss of pred and target (same shape) with
// its parameters.
type pointLoss struct {
	op     string
	kind   int
	arg    float64 // SmoothL1's beta, Huber's delta
	p      LossParams
	x, t   []float32
	w, pw  []float32 // BCE's weights, BCEWithLogits' positive weights
	shape  []int
	batchM bool
}

func newPointLoss(op string, kind int, arg float32, pred, target *Tensor, p LossParams) *pointLoss {
	checkNil(op, "pred, target", pred, target)
	checkSameShape(op, "target", target, pred)
	checkReduction(op, p.Reduction, kind == lossKLDiv)
	l := &pointLoss{op: op, kind: kind, arg: float64(arg), p: p, shape: pred.shape,
		x: pred.hostData(op), t: target.hostData(op)}
	switch kind {
	case lossSmoothL1, lossHuber:
		if !(arg >= 0) || kind == lossHuber && arg == 0 {
			panic(fmt.Sprintf("tensor: %s: parameter %v must be positive", op, arg))
		}
	case lossBCE:
		l.w = broadcastOperand(op, "weight", p.Weight, pred.shape)
		for i, v := range l.x {
			if !(v >= 0 && v <= 1) {
				panic(fmt.Sprintf("tensor: %s: input element %d is %v, outside [0, 1]", op, i, v))
			}
		}
	case lossBCEWithLogits:
		l.pw = broadcastOperand(op, "pos_weight", p.PosWeight, pred.shape)
	}
	return l
}

// broadcastOperand returns t's elements broadcast to shape (nil for nil).
func broadcastOperand(op, name string, t *Tensor, shape []int) []float32 {
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
	t.hostOnly(op)
	return t.BroadcastTo(shape...).Contiguous().data
}

// term returns element i's loss and its derivative with respect to x.
func (l *pointLoss) term(i int) (v, d float64) {
	x, t := float64(l.x[i]), float64(l.t[i])
	switch l.kind {
	case lossL1:
		z := x - t
		return math.Abs(z), sign(z)
	case lossSmoothL1:
		z, beta := x-t, l.arg
		if a := math.Abs(z); a < beta {
			return 0.5 * z * z / beta, z / beta
		} else {
			return a - 0.5*beta, sign(z)
		}
	case lossHuber:
		z, delta := x-t, l.arg
		if a := math.Abs(z); a < delta {
			return 0.5 * z * z, z
		} else {
			return delta * (a - 0.5*delta), delta * sign(z)
		}
	case lossKLDiv:
		if l.p.LogTarget {
			e := math.Exp(t)
			return e * (t - x), -e
		}
		var xlogx float64
		if t != 0 {
			xlogx = t * math.Log(t)
		}
		return xlogx - t*x, -t
	case lossBCE:
		w := 1.0
		if l.w != nil {
			w = float64(l.w[i])
		}
		lx, l1x := math.Max(math.Log(x), -100), math.Max(math.Log1p(-x), -100)
		return -w * (t*lx + (1-t)*l1x), w * (x - t) / math.Max((1-x)*x, 1e-12)
	default: // lossBCEWithLogits
		pw := 1.0
		if l.pw != nil {
			pw = float64(l.pw[i])
		}
		// log σ(x) = -softplus(-x), log(1 - σ(x)) = -softplus(x).
		sp := math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
		spn := sp - x
		s := 1 / (1 + math.Exp(-x))
		return pw*t*spn + (1-t)*sp, -pw*t*(1-s) + (1-t)*s
	}
}

func sign(z float64) float64 {
	switch {
	case z > 0:
		return 1
	case z < 0:
		return -1
	}
	return z // 0 and NaN
}

func (l *pointLoss) forward() *Tensor {
	terms := make([]float64, len(l.x))
	for i := range terms {
		terms[i], _ = l.term(i)
	}
	return reduceTerms(terms, l.shape, l.p.Reduction, meanDen(l.p.Reduction, l.shape, len(terms)))
}

func (l *pointLoss) backward(dloss *Tensor) *Tensor {
	g := upstream(l.op, dloss, l.shape, l.p.Reduction, meanDen(l.p.Reduction, l.shape, len(l.x)))
	dx := New(l.shape...)
	for i := range l.x {
		_, d := l.term(i)
		dx.data[i] = float32(g(i) * d)
	}
	return dx
}

// L1 returns PyTorch's l1_loss: the terms |pred - target| reduced by
// p.Reduction. Its derivative is sign(pred - target), 0 at 0 (L1Backward).
func L1(pred, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("L1", lossL1, 0, pred, target, p).forward()
}

// L1Backward returns the gradient of L1 with respect to pred for the
// upstream gradient dloss.
func L1Backward(dloss, pred, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("L1Backward", lossL1, 0, pred, target, p).backward(dloss)
}

// SmoothL1 returns PyTorch's smooth_l1_loss with beta ≥ 0 (PyTorch's
// default is 1): with z = pred - target, 0.5·z²/beta where |z| < beta,
// else |z| - 0.5·beta; beta = 0 is L1. Derivative z/beta or sign(z).
func SmoothL1(pred, target *Tensor, beta float32, p LossParams) *Tensor {
	return newPointLoss("SmoothL1", lossSmoothL1, beta, pred, target, p).forward()
}

// SmoothL1Backward returns the gradient of SmoothL1 with respect to pred.
func SmoothL1Backward(dloss, pred, target *Tensor, beta float32, p LossParams) *Tensor {
	return newPointLoss("SmoothL1Backward", lossSmoothL1, beta, pred, target, p).backward(dloss)
}

// Huber returns PyTorch's huber_loss with delta > 0 (default 1): with
// z = pred - target, 0.5·z² where |z| < delta, else delta·(|z| -
// 0.5·delta) — SmoothL1 times beta, PyTorch's other definition.
// Derivative z or delta·sign(z).
func Huber(pred, target *Tensor, delta float32, p LossParams) *Tensor {
	return newPointLoss("Huber", lossHuber, delta, pred, target, p).forward()
}

// HuberBackward returns the gradient of Huber with respect to pred.
func HuberBackward(dloss, pred, target *Tensor, delta float32, p LossParams) *Tensor {
	return newPointLoss("HuberBackward", lossHuber, delta, pred, target, p).backward(dloss)
}

// KLDiv returns PyTorch's kl_div(input, target): input holds
// log-probabilities, target probabilities (log-probabilities with
// p.LogTarget); the terms are target·(log target - input), 0 where
// target is 0 (xlogy), or e^target·(target - input), reduced by
// p.Reduction, which may be LossBatchMean (the sum over the first axis's
// size, the KL divergence per sample; PyTorch's default 'mean' divides by
// every element). Derivative -target (or -e^target).
func KLDiv(input, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("KLDiv", lossKLDiv, 0, input, target, p).forward()
}

// KLDivBackward returns the gradient of KLDiv with respect to input.
func KLDivBackward(dloss, input, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("KLDivBackward", lossKLDiv, 0, input, target, p).backward(dloss)
}

// BCE returns PyTorch's binary_cross_entropy of probabilities x in [0, 1]
// (other values panic, as PyTorch raises): the terms
// -w·(t·log x + (1-t)·log(1-x)) with each log clamped at -100 as
// PyTorch's, w from p.Weight (broadcast to x; nil: 1). Its derivative is
// PyTorch's, w·(x - t)/max(x·(1-x), 1e-12).
func BCE(x, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("BCE", lossBCE, 0, x, target, p).forward()
}

// BCEBackward returns the gradient of BCE with respect to x.
func BCEBackward(dloss, x, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("BCEBackward", lossBCE, 0, x, target, p).backward(dloss)
}

// BCEWithLogitsWith is BCEWithLogits with PyTorch's options: the terms
// pw·t·softplus(-x) + (1-t)·softplus(x) (pw from p.PosWeight, broadcast
// to x; nil: 1) reduced by p.Reduction; derivative -pw·t·(1-σ(x)) +
// (1-t)·σ(x).
func BCEWithLogitsWith(x, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("BCEWithLogitsWith", lossBCEWithLogits, 0, x, target, p).forward()
}

// BCEWithLogitsWithBackward returns the gradient of BCEWithLogitsWith
// with respect to x.
func BCEWithLogitsWithBackward(dloss, x, target *Tensor, p LossParams) *Tensor {
	return newPointLoss("BCEWithLogitsWithBackward", lossBCEWithLogits, 0, x, target, p).backward(dloss)
}

// ---- class-index losses ----

// classLoss is NLL or CrossEntropyWith of input [N, C, d...] (or [C]) and
// target [N, d...] (or 0-d) holding class indices as float32, or, for
// CrossEntropyWith, a target of input's shape holding class
// probabilities.
type classLoss struct {
	op      string
	softmax bool // CrossEntropyWith: input holds logits
	soft    bool // the target holds probabilities (input's shape)
	p       LossParams
	x, lab  []float32
	w       []float32
	n, c, s int
	shape   []int // the terms' shape: input's without the class axis
	ign     float32
}

func newClassLoss(op string, softmax bool, input, target *Tensor, p LossParams) *classLoss {
	checkNil(op, "input, target", input, target)
	checkReduction(op, p.Reduction, false)
	l := &classLoss{op: op, softmax: softmax, p: p, ign: p.ignored()}
	want := input.shape
	if len(input.shape) == 1 {
		l.n, l.c, l.s, want = 1, input.shape[0], 1, []int{}
	} else if len(input.shape) >= 2 {
		l.n, l.c, l.s = input.shape[0], input.shape[1], shapeLen(input.shape[2:])
		want = slices.Delete(slices.Clone(input.shape), 1, 2)
	}
	l.soft = softmax && len(input.shape) > 0 && slices.Equal(target.shape, input.shape)
	if len(input.shape) == 0 || !l.soft && !slices.Equal(target.shape, want) {
		panic(fmt.Sprintf("tensor: %s: input of shape %v and target of shape %v, want [N C d...] and [N d...] (or [C] and [])", op, input.shape, target.shape))
	}
	if l.soft && p.Ignore && p.IgnoreIndex >= 0 {
		panic(fmt.Sprintf("tensor: %s: ignore index %d with a target of probabilities (PyTorch refuses it)", op, p.IgnoreIndex))
	}
	l.shape = want
	if p.Weight != nil {
		if len(p.Weight.shape) != 1 || p.Weight.shape[0] != l.c {
			panic(fmt.Sprintf("tensor: %s: weight of shape %v for %d classes", op, p.Weight.shape, l.c))
		}
		l.w = p.Weight.hostData(op)
	}
	if e := p.LabelSmoothing; !(e >= 0 && e <= 1) {
		panic(fmt.Sprintf("tensor: %s: label smoothing %v outside [0, 1]", op, e))
	}
	l.x, l.lab = input.hostData(op), target.hostData(op)
	for i, v := range l.lab {
		if !l.soft && v != l.ign && (!(v >= 0 && v < float32(l.c)) || v != float32(int(v))) {
			panic(fmt.Sprintf("tensor: %s: target %v at %d outside [0, %d) and not the ignored index %v", op, v, i, l.c, l.ign))
		}
	}
	return l
}

func (l *classLoss) weight(k int) float64 {
	if l.w == nil {
		return 1
	}
	return float64(l.w[k])
}

// target returns the class of the target at position t (sample t/s,
// place t%s), and false when it is ignored (always true, class -1, for
// probabilities).
func (l *classLoss) target(t int) (int, bool) {
	if l.soft {
		return -1, true
	}
	v := l.lab[t]
	return int(v), v != l.ign
}

// den is the mean's divisor: the sum of the weights of the targets not
// ignored, or for probabilities the number of positions (PyTorch's
// numel/C).
func (l *classLoss) den() float64 {
	if l.soft {
		return float64(l.n * l.s)
	}
	var d float64
	for t := range l.lab {
		if y, ok := l.target(t); ok {
			d += l.weight(y)
		}
	}
	return d
}

// at returns element (i, k, j) of the input: sample i, class k, position j.
func (l *classLoss) at(i, k, j int) float64 { return float64(l.x[(i*l.c+k)*l.s+j]) }

// logProbs writes the log-probabilities of sample i at position j into lp
// (log-softmax of the logits, or the input itself for NLL).
func (l *classLoss) logProbs(lp []float64, i, j int) {
	if !l.softmax {
		for k := range lp {
			lp[k] = l.at(i, k, j)
		}
		return
	}
	m := math.Inf(-1)
	for k := range lp {
		m = math.Max(m, l.at(i, k, j))
	}
	var s float64
	for k := range lp {
		lp[k] = l.at(i, k, j) - m
		s += math.Exp(lp[k])
	}
	ls := math.Log(s)
	for k := range lp {
		lp[k] -= ls
	}
}

// coef returns the coefficient a_k of the term -Σ a_k·lp_k at position t
// of target class y: (1-ε)·w_y·[k = y] + ε/C·w_k (ε only for
// CrossEntropyWith), or for probabilities q, w_k·((1-ε)·q_k + ε/C).
func (l *classLoss) coef(k, t, y int) float64 {
	eps := float64(l.p.LabelSmoothing)
	var a float64
	if l.soft {
		q := float64(l.lab[(t/l.s*l.c+k)*l.s+t%l.s])
		return l.weight(k) * ((1-eps)*q + eps/float64(l.c))
	}
	if k == y {
		a = (1 - eps) * l.weight(y)
	}
	if eps != 0 {
		a += eps / float64(l.c) * l.weight(k)
	}
	return a
}

func (l *classLoss) forward() *Tensor {
	terms := make([]float64, l.n*l.s)
	lp := make([]float64, l.c)
	for t := range terms {
		y, ok := l.target(t)
		if !ok {
			continue
		}
		l.logProbs(lp, t/l.s, t%l.s)
		var s float64
		for k, q := range lp {
			if a := l.coef(k, t, y); a != 0 {
				s -= a * q
			}
		}
		terms[t] = s
	}
	return reduceTerms(terms, l.shape, l.p.Reduction, l.den())
}

// backward: for NLL, d/dlp_k = -a_k; for CrossEntropyWith, d/dz_k =
// (Σ_c a_c)·softmax_k - a_k.
func (l *classLoss) backward(dloss *Tensor) *Tensor {
	g := upstream(l.op, dloss, l.shape, l.p.Reduction, l.den())
	dx := New(l.n, l.c, l.s)
	lp := make([]float64, l.c)
	for t := range l.n * l.s {
		y, ok := l.target(t)
		if !ok {
			continue
		}
		i, j := t/l.s, t%l.s
		gt := g(t)
		if l.softmax {
			l.logProbs(lp, i, j)
		}
		var sa float64
		for k := range lp {
			sa += l.coef(k, t, y)
		}
		for k := range lp {
			d := -l.coef(k, t, y)
			if l.softmax {
				d += sa * math.Exp(lp[k])
			}
			dx.data[(i*l.c+k)*l.s+j] = float32(gt * d)
		}
	}
	return dx.Reshape(l.inputShape()...)
}

func (l *classLoss) inputShape() []int {
	if len(l.shape) == 0 {
		return []int{l.c}
	}
	return slices.Insert(slices.Clone(l.shape), 1, l.c)
}

// NLL returns PyTorch's nll_loss of log-probabilities input [N, C, d...]
// (or [C]) and target [N, d...] (or 0-d) holding class indices as float32:
// the terms -w[y]·input[i, y, j] (w from p.Weight, nil: 1), 0 for an
// ignored target (see LossParams), reduced by p.Reduction: LossMean is
// the weighted mean Σ terms / Σ w[y] over the targets not ignored, NaN
// when there is none (as PyTorch's). A target that is neither an integer
// in [0, C) nor the ignored index panics, naming the function, its
// position and value.
func NLL(input, target *Tensor, p LossParams) *Tensor {
	return newClassLoss("NLL", false, input, target, p).forward()
}

// NLLBackward returns the gradient of NLL with respect to input for the
// upstream gradient dloss: -w[y]·dloss/Σw at each target's class (its
// dloss element for LossNone), 0 elsewhere and at ignored targets (all 0
// when every target is ignored).
func NLLBackward(dloss, input, target *Tensor, p LossParams) *Tensor {
	return newClassLoss("NLLBackward", false, input, target, p).backward(dloss)
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
	const op = "CrossEntropyWith"
	if crossEntropyFast(op, logits, labels, p) {
		loss := New()
		CrossEntropyInto(loss, nil, logits, labels)
		return loss
	}
	return newClassLoss(op, true, logits, labels, p).forward()
}

// CrossEntropyWithBackward returns the gradient of CrossEntropyWith with
// respect to logits for the upstream gradient dloss: ((Σ_k a_k)·softmax -
// a)·dloss/den at each target, 0 at ignored ones.
func CrossEntropyWithBackward(dloss, logits, labels *Tensor, p LossParams) *Tensor {
	const op = "CrossEntropyWithBackward"
	if crossEntropyFast(op, logits, labels, p) {
		checkNil(op, "dloss", dloss)
		if len(dloss.shape) != 0 {
			panic(fmt.Sprintf("tensor: %s: dloss of shape %v, want a 0-d tensor", op, dloss.shape))
		}
		loss, d := CrossEntropy(logits, labels)
		_ = loss
		return ScaleInto(d, d, dloss.Item())
	}
	return newClassLoss(op, true, logits, labels, p).backward(dloss)
}

// crossEntropyFast reports whether CrossEntropyWith of these operands is
// the fused CrossEntropy: default options, [N, C] logits on the host, no
// target of PyTorch's default ignored index -100.
func crossEntropyFast(op string, logits, labels *Tensor, p LossParams) bool {
	checkNil(op, "logits, labels", logits, labels)
	if p.Reduction != LossMean || p.Weight != nil || p.Ignore || p.LabelSmoothing != 0 ||
		len(logits.shape) != 2 || len(labels.shape) != 1 || labels.shape[0] != logits.shape[0] ||
		logits.Device() != CPU || labels.Device() != CPU {
		return false
	}
	return !slices.Contains(labels.hostData(op), -100)
}
