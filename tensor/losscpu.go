package tensor

import (
	"fmt"
	"math"
)

// The CPU's general LossKernels.Class and Pointwise (the fused cases are
// in loss.go): every term and derivative in float64, each result rounded
// once.

// lossUpstream returns the factor of term i's derivative: dloss[i] for
// LossNone, else dloss (1 when nil) divided by den (1 for a sum).
func lossUpstream(op string, dloss *Tensor, r LossReduction, den float64) func(i int) float64 {
	if r == LossNone {
		g := dloss.hostData(op)
		return func(i int) float64 { return float64(g[i]) }
	}
	g := 1.0
	if dloss != nil {
		g = float64(dloss.hostData(op)[0])
	}
	if r != LossSum {
		g /= den
	}
	return func(int) float64 { return g }
}

// writeLoss writes the loss of terms into loss (nil: none): the terms
// themselves for LossNone, else their sum divided by den (1 for a sum).
func writeLoss(op string, loss *Tensor, terms []float64, r LossReduction, den float64) {
	if loss == nil {
		return
	}
	if r == LossNone {
		out, o := gradBuffer(op, loss)
		for i, v := range terms {
			out[i] = float32(v)
		}
		finish(loss, o)
		return
	}
	var s float64
	for _, v := range terms {
		s += v
	}
	if r != LossSum {
		s /= den
	}
	loss.data[loss.offset] = float32(s)
}

// pointTerms is one pointwise loss of host operands.
type pointTerms struct {
	a     PointLossArgs
	x, t  []float32
	w, pw []float32 // BCE's weights, BCEWithLogits' positive weights (nil: 1)
}

// pointLossCPU is the CPU's Pointwise beside the fused cases.
func pointLossCPU(loss, dpred, dloss, pred, target *Tensor, a PointLossArgs) error {
	const op = "Loss.Pointwise"
	l := pointTerms{a: a, x: pred.hostData(op), t: target.hostData(op)}
	if a.Weight != nil {
		l.w = a.Weight.hostData(op)
	}
	if a.PosWeight != nil {
		l.pw = a.PosWeight.hostData(op)
	}
	if a.Kind == LossBCE {
		for i, v := range l.x {
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("input element %d is %v, outside [0, 1]", i, v)
			}
		}
	}
	den := meanDen(a.Reduction, pred.shape, len(l.x))
	if loss != nil {
		terms := make([]float64, len(l.x))
		for i := range terms {
			terms[i], _ = l.term(i)
		}
		writeLoss(op, loss, terms, a.Reduction, den)
	}
	if dpred != nil {
		g := lossUpstream(op, dloss, a.Reduction, den)
		d, out := gradBuffer(op, dpred)
		for i := range l.x {
			_, v := l.term(i)
			d[i] = float32(g(i) * v)
		}
		finish(dpred, out)
	}
	return nil
}

// term returns element i's loss and its derivative with respect to x.
func (l *pointTerms) term(i int) (v, d float64) {
	x, t := float64(l.x[i]), float64(l.t[i])
	switch l.a.Kind {
	case LossMSE:
		z := x - t
		return z * z, 2 * z
	case LossL1:
		z := x - t
		return math.Abs(z), sign(z)
	case LossSmoothL1:
		z, beta := x-t, float64(l.a.Arg)
		if a := math.Abs(z); a < beta {
			return 0.5 * z * z / beta, z / beta
		} else {
			return a - 0.5*beta, sign(z)
		}
	case LossHuber:
		z, delta := x-t, float64(l.a.Arg)
		if a := math.Abs(z); a < delta {
			return 0.5 * z * z, z
		} else {
			return delta * (a - 0.5*delta), delta * sign(z)
		}
	case LossKLDiv:
		if l.a.LogTarget {
			e := math.Exp(t)
			return e * (t - x), -e
		}
		var xlogx float64
		if t != 0 {
			xlogx = t * math.Log(t)
		}
		return xlogx - t*x, -t
	case LossBCE:
		w := 1.0
		if l.w != nil {
			w = float64(l.w[i])
		}
		lx, l1x := math.Max(math.Log(x), -100), math.Max(math.Log1p(-x), -100)
		return -w * (t*lx + (1-t)*l1x), w * (x - t) / math.Max((1-x)*x, 1e-12)
	default: // LossBCEWithLogits
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

// classTerms is a class loss of host operands: input [N, C, S...] and
// target [N, S...] (class indices) or input's shape (probabilities).
type classTerms struct {
	a       ClassLossArgs
	x, lab  []float32
	w       []float32
	n, c, s int
}

// classLossCPU is the CPU's Class beside CrossEntropy's fused case.
func classLossCPU(loss, dinput, dloss, input, target *Tensor, a ClassLossArgs) error {
	const op = "Loss.Class"
	l := &classTerms{a: a, n: input.shape[0], c: input.shape[1], s: shapeLen(input.shape[2:]),
		x: input.hostData(op), lab: target.hostData(op)}
	if a.Weight != nil {
		l.w = a.Weight.hostData(op)
	}
	if !a.Soft {
		for i, v := range l.lab {
			if a.Ignore && v == a.IgnoreIndex || v >= 0 && v < float32(l.c) && v == float32(int(v)) {
				continue
			}
			if a.Ignore {
				return fmt.Errorf("target %v at %d outside [0, %d) and not the ignored index %v", v, i, l.c, a.IgnoreIndex)
			}
			return fmt.Errorf("target %v at %d outside [0, %d)", v, i, l.c)
		}
	}
	den := l.den()
	lp := make([]float64, l.c)
	if loss != nil {
		terms := make([]float64, l.n*l.s)
		for t := range terms {
			y, ok := l.target(t)
			if !ok {
				continue
			}
			l.logProbs(lp, t/l.s, t%l.s)
			var s float64
			for k, q := range lp {
				if c := l.coef(k, t, y); c != 0 {
					s -= c * q
				}
			}
			terms[t] = s
		}
		writeLoss(op, loss, terms, a.Reduction, den)
	}
	if dinput == nil {
		return nil
	}
	// For NLL, d/dlp_k = -a_k; for cross entropy, d/dz_k = (Σ_c a_c)·softmax_k - a_k.
	g := lossUpstream(op, dloss, a.Reduction, den)
	dx, out := gradBuffer(op, dinput)
	clear(dx)
	for t := range l.n * l.s {
		y, ok := l.target(t)
		if !ok {
			continue
		}
		i, j := t/l.s, t%l.s
		gt := g(t)
		if a.Logits {
			l.logProbs(lp, i, j)
		}
		var sa float64
		for k := range lp {
			sa += l.coef(k, t, y)
		}
		for k := range lp {
			d := -l.coef(k, t, y)
			if a.Logits {
				d += sa * math.Exp(lp[k])
			}
			dx[(i*l.c+k)*l.s+j] = float32(gt * d)
		}
	}
	finish(dinput, out)
	return nil
}

func (l *classTerms) weight(k int) float64 {
	if l.w == nil {
		return 1
	}
	return float64(l.w[k])
}

// target returns the class of the target at position t (sample t/s,
// place t%s), and false when it is ignored (always true, class -1, for
// probabilities).
func (l *classTerms) target(t int) (int, bool) {
	if l.a.Soft {
		return -1, true
	}
	v := l.lab[t]
	return int(v), !l.a.Ignore || v != l.a.IgnoreIndex
}

// den is the mean's divisor: the sum of the weights of the targets not
// ignored, or for probabilities the number of positions (PyTorch's
// numel/C).
func (l *classTerms) den() float64 {
	if l.a.Soft {
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
func (l *classTerms) at(i, k, j int) float64 { return float64(l.x[(i*l.c+k)*l.s+j]) }

// logProbs writes the log-probabilities of sample i at position j into lp
// (log-softmax of the logits, or the input itself for NLL).
func (l *classTerms) logProbs(lp []float64, i, j int) {
	if !l.a.Logits {
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
// of target class y: (1-ε)·w_y·[k = y] + ε/C·w_k, or for probabilities
// q, w_k·((1-ε)·q_k + ε/C).
func (l *classTerms) coef(k, t, y int) float64 {
	eps := float64(l.a.Smoothing)
	if l.a.Soft {
		q := float64(l.lab[(t/l.s*l.c+k)*l.s+t%l.s])
		return l.weight(k) * ((1-eps)*q + eps/float64(l.c))
	}
	var a float64
	if k == y {
		a = (1 - eps) * l.weight(y)
	}
	if eps != 0 {
		a += eps / float64(l.c) * l.weight(k)
	}
	return a
}
