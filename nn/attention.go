package nn

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// ScaledDotProductAttention returns softmax(q·kᵀ·scale + mask)·v for q
// [B, H, Sq, D], k [B, H, Sk, D] and v [B, H, Sk, Dv]:
// tensor.ScaledDotProductAttention, whose doc gives the masks (p.Causal,
// p.KeyPadding, a tensor on the operands' device), the rows that see no
// key (0, with a gradient of 0) and the special values. On the host it is
// fused and tiled (FlashAttention-2's online softmax, O(seq·dim) memory);
// the tape keeps the output and each row's logsumexp ([B, H, Sq]), from
// which the backward pass recomputes the probabilities.
func (tp *Tape) ScaledDotProductAttention(q, k, v *Var, p tensor.AttentionParams) *Var {
	const op = "ScaledDotProductAttention"
	tp.use(op, "q", q)
	tp.use(op, "k", k)
	tp.use(op, "v", v)
	if q.value.Dims() != 4 || v.value.Dims() != 4 {
		panic(fmt.Sprintf("nn: %s: q %v, k %v, v %v: want [B, H, S, D] each", op, q.value.Shape(), k.value.Shape(), v.value.Shape()))
	}
	dev := deviceOf(op, q.value, k.value, v.value, p.KeyPadding)
	qs := q.value.Shape()
	out := tp.allocOn(dev, qs[0], qs[1], qs[2], v.value.Dim(3))
	lse := tp.allocOn(dev, qs[0], qs[1], qs[2])
	tensor.ScaledDotProductAttentionInto(out, lse, q.value, k.value, v.value, p)
	y, nd := tp.result(out, backAttention, q, k, v)
	if nd != nil {
		nd.saved[0], nd.saved[1], nd.f[0] = lse, p.KeyPadding, p.Scale
		if p.Causal {
			nd.idx[0] = 1
		}
	}
	return y
}

func backAttention(tp *Tape, n *node) {
	q, k, v := n.in[0], n.in[1], n.in[2]
	p := tensor.AttentionParams{Scale: n.f[0], Causal: n.idx[0] == 1, KeyPadding: n.saved[1]}
	var g [3]*tensor.Tensor
	var add [3]bool
	for i, x := range n.in {
		switch {
		case !x.requires:
		case i > 0 && x == n.in[0] || i == 2 && x == n.in[1]:
			// The Var again (self-attention of x, x, x): a buffer of its
			// own, added by flush after the first.
			g[i], add[i] = tp.like(x.value), true
		default:
			g[i], add[i] = tp.gradFor(x)
		}
	}
	tensor.ScaledDotProductAttentionBackwardInto(g[0], g[1], g[2], n.out.grad, q.value, k.value, v.value, n.out.value, n.saved[0], p)
	for i, x := range n.in {
		if x.requires {
			tp.flush(x, g[i], add[i])
		}
	}
}
