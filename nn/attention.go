package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// MultiHeadAttention is self-attention over [B, T, D] inputs with Heads
// heads of size D/Heads, as nanoGPT's CausalSelfAttention (PyTorch's
// nn.MultiheadAttention with one fused input projection):
//
//	q, k, v = split(x·QKVᵀ + b, 3)   (QKV.W [3D, D]: the rows of q, then k, then v)
//	each of q, k, v viewed as [B, T, Heads, D/Heads] and permuted to [B, Heads, T, D/Heads]
//	q, k rotated by RoPE when it is on (positions 0..T-1)
//	a = softmax(q·kᵀ/√(D/Heads) + mask)·v   (the mask -Inf above the diagonal when Causal)
//	y = merge(a)·Projᵀ + b          (merge: back to [B, T, D], heads in order)
//
// AttnDrop drops attention probabilities and ResidDrop the output, in
// training (nil or P 0 for none). Its state is nanoGPT's: "c_attn.weight"
// [3D, D], "c_attn.bias", "c_proj.weight" [D, D], "c_proj.bias".
type MultiHeadAttention struct {
	QKV, Proj           *Linear
	Heads               int
	Causal              bool
	RoPE                bool
	AttnDrop, ResidDrop *Dropout
	consts              *attnConsts
}

// NewMultiHeadAttention returns attention over width d with the given
// number of heads (which must divide d), its two projections initialized
// as PyTorch's nn.Linear (NewLinear, QKV's weight and bias drawn first),
// and attention and output dropout of probability dropout drawing from r.
func NewMultiHeadAttention(d, heads int, causal bool, dropout float32, r *rand.Rand) *MultiHeadAttention {
	if d < 0 || heads <= 0 || d%heads != 0 {
		panic(fmt.Sprintf("nn: NewMultiHeadAttention: width %d does not split into %d heads", d, heads))
	}
	mustRand("NewMultiHeadAttention", r)
	return &MultiHeadAttention{QKV: NewLinear(d, 3*d, r), Proj: NewLinear(d, d, r), Heads: heads, Causal: causal,
		AttnDrop: NewDropout(dropout, r), ResidDrop: NewDropout(dropout, r), consts: &attnConsts{}}
}

// Forward implements Module: x [B, T, D] gives [B, T, D].
func (a *MultiHeadAttention) Forward(tp *Tape, x *Var) *Var {
	return sequenceRows(tp, "MultiHeadAttention", x, a.forward)
}

// sequenceRows applies f, which works on the rows [B·T, D] of B
// sequences of length T, to x [B, T, D], checked for op.
func sequenceRows(tp *Tape, op string, x *Var, f func(tp *Tape, rows *Var, b, t int) *Var) *Var {
	tp.use(op, "x", x)
	if x.value.Dims() != 3 {
		panic(fmt.Sprintf("nn: %s: x of shape %v is not [batch, seq, width]", op, x.value.Shape()))
	}
	b, t, d := x.value.Dim(0), x.value.Dim(1), x.value.Dim(2)
	return tp.Reshape(f(tp, tp.Reshape(x, b*t, d), b, t), b, t, d)
}

// forward is Forward on the rows x [B·T, D] of B sequences of length t.
func (a *MultiHeadAttention) forward(tp *Tape, x *Var, b, t int) *Var {
	const op = "MultiHeadAttention"
	d := a.QKV.W.value.Dim(1)
	if x.value.Dim(1) != d {
		panic(fmt.Sprintf("nn: %s: x of width %d for attention of width %d", op, x.value.Dim(1), d))
	}
	h := a.Heads
	hd := d / h
	qkv := tp.Linear(x, a.QKV.W, a.QKV.B, Act{})
	// [B, T, 3, H, hd] -> [3, B, H, T, hd]
	qkv = tp.Permute(tp.Reshape(qkv, b, t, 3, h, hd), 2, 0, 3, 1, 4)
	parts := tp.Split(qkv, 0, 1, 1, 1)
	q, k, v := tp.Reshape(parts[0], b, h, t, hd), tp.Reshape(parts[1], b, h, t, hd), tp.Reshape(parts[2], b, h, t, hd)
	c := a.constsFor(x.value.Device(), t, hd)
	if a.RoPE {
		cos, sin := c.rope(t, 0)
		q, k = ropeTape(tp, q, cos, sin), ropeTape(tp, k, cos, sin)
	}
	var mask *tensor.Tensor
	if a.Causal {
		mask = c.causal(t, t)
	}
	var drop float32
	var r *rand.Rand
	if a.AttnDrop != nil && a.AttnDrop.training {
		drop, r = a.AttnDrop.P, a.AttnDrop.R
	}
	y := attend(tp, q, k, v, mask, drop, r)
	y = tp.Reshape(tp.Permute(y, 0, 2, 1, 3), b*t, d)
	y = tp.Linear(y, a.Proj.W, a.Proj.B, Act{})
	if a.ResidDrop != nil {
		y = a.ResidDrop.Forward(tp, y)
	}
	return y
}

// constsFor returns the attention's masks and rotary tables on dev, for
// sequences up to t long.
func (a *MultiHeadAttention) constsFor(dev tensor.Device, t, headDim int) *attnConsts {
	if a.consts == nil {
		a.consts = &attnConsts{}
	}
	a.consts.ensure(dev, t, headDim)
	return a.consts
}

// State implements Module: c_attn.weight, c_attn.bias, c_proj.weight,
// c_proj.bias.
func (a *MultiHeadAttention) State(prefix string, f func(string, *Var)) {
	a.QKV.State(prefix+"c_attn.", f)
	a.Proj.State(prefix+"c_proj.", f)
}

// SetTraining implements Module.
func (a *MultiHeadAttention) SetTraining(on bool) {
	for _, d := range []*Dropout{a.AttnDrop, a.ResidDrop} {
		if d != nil {
			d.SetTraining(on)
		}
	}
}

// attend is scaled dot-product attention on the tape, softmax(q·kᵀ/√hd +
// mask)·v for q [B, H, T, hd], k and v [B, H, S, hd], with dropout of
// probability drop (drawing its seed from r) on the probabilities when
// drop > 0. mask, when not nil, is the causal mask [T, S] (1 where key j
// lies after query i, aligned to the bottom right: j > i + S - T), which
// MaskedFill turns into -Inf before the softmax.
//
// It is the one place the model's attention is computed: on the host
// without dropout, the tape's fused ScaledDotProductAttention with
// AttentionParams{Causal: mask != nil} (O(T·hd) memory); otherwise
// composed of the tape's MatMul, Scale, MaskedFill, Softmax and Dropout
// (O(T·S)): the fused op draws no dropout, and on a device, where
// tensor's op is itself composed of the device's ops with temporaries of
// its own and a mask uploaded each call, the tape's composition reuses
// the tape's buffers and the model's device mask from step to step.
func attend(tp *Tape, q, k, v *Var, mask *tensor.Tensor, drop float32, r *rand.Rand) *Var {
	if drop <= 0 && q.value.Device() == tensor.CPU {
		return tp.ScaledDotProductAttention(q, k, v, tensor.AttentionParams{Causal: mask != nil})
	}
	hd := q.value.Dim(-1)
	s := tp.Scale(tp.MatMul(q, tp.Transpose(k, -1, -2)), float32(1/math.Sqrt(float64(hd))))
	if mask != nil {
		s = tp.MaskedFill(s, mask, float32(math.Inf(-1)))
	}
	p := tp.Softmax(s, -1)
	return tp.MatMul(tp.Dropout(p, drop, r), v)
}

// ropeTape rotates x [B, H, T, hd] by RoPE with the tables cos and sin
// [T, hd] (ropeTables): x·cos + rotateHalf(x)·sin, where rotateHalf(x) is
// (-x₂, x₁) for the halves x₁, x₂ of the last axis (GPT-NeoX's and
// Hugging Face LLaMA's rotate_half convention).
func ropeTape(tp *Tape, x *Var, cos, sin *tensor.Tensor) *Var {
	hd := x.value.Dim(-1)
	halves := tp.Split(x, -1, hd/2, hd/2)
	rot := tp.Concat(-1, tp.Scale(halves[1], -1), halves[0])
	return tp.Add(tp.Mul(x, tp.Const(cos)), tp.Mul(rot, tp.Const(sin)))
}

// ropeBase is RoPE's θ: pair i of a head of size hd turns by
// p·ropeBase^(-2i/hd) at position p.
const ropeBase = 10000

// attnConsts holds what the attention of a model reads but never learns,
// on one device: the causal mask of n×n and RoPE's tables for n positions
// of heads of size headDim. It grows to the longest sequence asked for and
// moves to the device last asked for; the blocks of a GPT share one.
type attnConsts struct {
	dev        tensor.Device
	n, headDim int
	mask       *tensor.Tensor // [n, n]: 1 where j > i
	cos, sin   *tensor.Tensor // [n, headDim], on dev
	hcos, hsin []float32      // the host tables, for Next
	made       bool
	// The views last handed out by causal and rope, kept so that a
	// repeated step makes no new headers.
	maskT, maskS, ropeT, ropePos int
	maskV, cosV, sinV            *tensor.Tensor
}

// ensure makes the constants for sequences of t on dev.
func (c *attnConsts) ensure(dev tensor.Device, t, headDim int) {
	if c.made && c.dev == dev && c.n >= t && c.headDim == headDim {
		return
	}
	n := max(t, c.n)
	if headDim != c.headDim {
		n = t
	}
	mask := tensor.New(n, n)
	md := mask.Data()
	for i := range n {
		for j := i + 1; j < n; j++ {
			md[i*n+j] = 1
		}
	}
	c.hcos, c.hsin = ropeTables(n, headDim)
	cos, sin := tensor.FromSlice(c.hcos, n, headDim), tensor.FromSlice(c.hsin, n, headDim)
	c.mask, c.cos, c.sin = mustTo("attention", mask, dev), mustTo("attention", cos, dev), mustTo("attention", sin, dev)
	c.dev, c.n, c.headDim, c.made = dev, n, headDim, true
	c.maskV, c.cosV, c.sinV = nil, nil, nil
}

// causal returns the causal mask [t, s] for t queries at the end of s
// keys: a view of rows s-t..s-1 and columns 0..s-1 of the n×n mask.
func (c *attnConsts) causal(t, s int) *tensor.Tensor {
	if c.maskV == nil || c.maskT != t || c.maskS != s {
		c.maskV, c.maskT, c.maskS = c.mask.Slice(0, s-t, s, 1).Slice(1, 0, s, 1), t, s
	}
	return c.maskV
}

// rope returns the rotary tables [t, headDim] for positions pos..pos+t-1.
func (c *attnConsts) rope(t, pos int) (cos, sin *tensor.Tensor) {
	if c.cosV == nil || c.ropeT != t || c.ropePos != pos {
		c.cosV, c.sinV, c.ropeT, c.ropePos = c.cos.Slice(0, pos, pos+t, 1), c.sin.Slice(0, pos, pos+t, 1), t, pos
	}
	return c.cosV, c.sinV
}

// ropeTables returns RoPE's cos and sin for n positions, [n, hd] row-major:
// element (p, i) and (p, i + hd/2) are cos and sin of p·ropeBase^(-2i/hd),
// computed in float64 and rounded once.
func ropeTables(n, hd int) (cos, sin []float32) {
	cos, sin = make([]float32, n*hd), make([]float32, n*hd)
	half := hd / 2
	for p := range n {
		for i := range half {
			a := float64(p) * math.Pow(ropeBase, -2*float64(i)/float64(hd))
			c, s := float32(math.Cos(a)), float32(math.Sin(a))
			cos[p*hd+i], cos[p*hd+half+i] = c, c
			sin[p*hd+i], sin[p*hd+half+i] = s, s
		}
	}
	return cos, sin
}

// mustTo returns t on dev, panicking as the tape does when the device
// cannot take it.
func mustTo(op string, t *tensor.Tensor, dev tensor.Device) *tensor.Tensor {
	if dev == tensor.CPU {
		return t
	}
	d, err := t.To(dev)
	if err != nil {
		panic(allocFailure("nn: "+op, fmt.Sprintf("constants of shape %v on %v", t.Shape(), dev), err))
	}
	return d
}

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
