package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/lanesgo/lanes/tensor"
)

// TransformerBlock is a pre-LN Transformer block, as GPT-2's and
// nanoGPT's Block, on [B, T, D]:
//
//	x = x + Attn(LN1(x))
//	x = x + Drop(FC2(GELU(FC1(LN2(x)))))   (FC1 [4D, D], FC2 [D, 4D], GELU the erf form)
//
// Its state is nanoGPT's: "ln_1.weight", "ln_1.bias", "attn.c_attn.weight",
// "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
// "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
// "mlp.c_proj.weight", "mlp.c_proj.bias".
type TransformerBlock struct {
	LN1, LN2 *LayerNorm
	Attn     *MultiHeadAttention
	FC1, FC2 *Linear
	Drop     *Dropout
}

// NewTransformerBlock returns a block of width d with the given number of
// heads, causal attention or not, and dropout of probability dropout
// (attention probabilities, attention output and MLP output), drawing from
// r: the LayerNorms 1 and 0, the Linears initialized as PyTorch's
// (NewMultiHeadAttention's, then FC1's and FC2's weight and bias, in that
// order). NewGPT initializes its blocks as nanoGPT instead.
func NewTransformerBlock(d, heads int, causal bool, dropout float32, r *rand.Rand) *TransformerBlock {
	mustRand("NewTransformerBlock", r)
	attn := NewMultiHeadAttention(d, heads, causal, dropout, r)
	return &TransformerBlock{LN1: NewLayerNorm(d), Attn: attn, LN2: NewLayerNorm(d),
		FC1: NewLinear(d, 4*d, r), FC2: NewLinear(4*d, d, r), Drop: NewDropout(dropout, r)}
}

// Forward implements Module: x [B, T, D] gives [B, T, D].
func (k *TransformerBlock) Forward(tp *Tape, x *Var) *Var {
	return sequenceRows(tp, "TransformerBlock", x, k.forward)
}

// forward is Forward on the rows x [B·T, D] of B sequences of length t.
func (k *TransformerBlock) forward(tp *Tape, x *Var, b, t int) *Var {
	x = tp.Add(x, k.Attn.forward(tp, k.LN1.Forward(tp, x), b, t))
	h := tp.Linear(k.LN2.Forward(tp, x), k.FC1.W, k.FC1.B, Act{Kind: ActGELU})
	h = tp.Linear(h, k.FC2.W, k.FC2.B, Act{})
	if k.Drop != nil {
		h = k.Drop.Forward(tp, h)
	}
	return tp.Add(x, h)
}

// State implements Module (see TransformerBlock for the names).
func (k *TransformerBlock) State(prefix string, f func(string, *Var)) {
	k.LN1.State(prefix+"ln_1.", f)
	k.Attn.State(prefix+"attn.", f)
	k.LN2.State(prefix+"ln_2.", f)
	k.FC1.State(prefix+"mlp.c_fc.", f)
	k.FC2.State(prefix+"mlp.c_proj.", f)
}

// SetTraining implements Module.
func (k *TransformerBlock) SetTraining(on bool) {
	k.Attn.SetTraining(on)
	if k.Drop != nil {
		k.Drop.SetTraining(on)
	}
}

// GPTConfig is the shape of a GPT: a vocabulary of Vocab tokens, sequences
// of up to Context tokens, Layers blocks of width Width with Heads heads,
// dropout of probability Dropout (after the embeddings, on the attention
// probabilities and on each residual branch), RoPE instead of learned
// positional embeddings, and the output head sharing the token embedding's
// weight (TieWeights).
type GPTConfig struct {
	Vocab, Context, Layers, Heads, Width int
	Dropout                              float32
	RoPE                                 bool
	TieWeights                           bool
}

// DefaultGPTConfig returns the small character-level model of
// nn/cmd/chargpt for a vocabulary of vocab tokens: 4 layers, 4 heads,
// width 128, context 128, no dropout, learned positions, tied weights.
func DefaultGPTConfig(vocab int) GPTConfig {
	return GPTConfig{Vocab: vocab, Context: 128, Layers: 4, Heads: 4, Width: 128, TieWeights: true}
}

// GPT is a decoder-only Transformer language model, as nanoGPT's GPT:
//
//	x = Drop(wte[tokens] + wpe[0..T-1])   (no wpe with RoPE: the attention rotates q and k)
//	x = Blocks[i](x) for each block       (causal TransformerBlocks)
//	logits = LNF(x)·Headᵀ                 (Head [Vocab, Width], no bias; Tok.W itself when tied)
//
// Its state names are nanoGPT's state_dict names, in this order:
//
//	transformer.wte.weight             [Vocab, Width]
//	transformer.wpe.weight             [Context, Width]   (not with RoPE)
//	transformer.h.<i>.ln_1.weight      [Width]            (and .bias)
//	transformer.h.<i>.attn.c_attn.weight [3·Width, Width] (and .bias [3·Width])
//	transformer.h.<i>.attn.c_proj.weight [Width, Width]   (and .bias)
//	transformer.h.<i>.ln_2.weight      [Width]            (and .bias)
//	transformer.h.<i>.mlp.c_fc.weight  [4·Width, Width]   (and .bias [4·Width])
//	transformer.h.<i>.mlp.c_proj.weight [Width, 4·Width]  (and .bias)
//	transformer.ln_f.weight            [Width]            (and .bias)
//	lm_head.weight                     [Vocab, Width]     (only when not tied)
//
// With TieWeights the head is the token embedding: one parameter, listed
// once, as "transformer.wte.weight" (PyTorch's state_dict lists it a second
// time as "lm_head.weight"; load such a file with that entry dropped, and
// load a lanes file into PyTorch with strict=False or by tying after the
// load). The rotary tables and the causal mask are not state (nanoGPT's
// persistent=False buffers).
type GPT struct {
	Config GPTConfig
	Tok    *Embedding
	Pos    *Embedding // nil with RoPE
	Drop   *Dropout
	Blocks []*TransformerBlock
	LNF    *LayerNorm
	Head   *Linear // Head.W is Tok.W when tied; Head.B is nil
	consts *attnConsts
	// pos holds 0, 1, ..., Context-1 on the device of the last forward
	// pass, the indices of the positional embedding; posV is the view of
	// its first T last handed out.
	pos, posV *tensor.Tensor
}

// NewGPT returns a GPT of the given shape initialized as nanoGPT's
// _init_weights, drawing from r in State order: each Linear's weight and
// each embedding normal with mean 0 and standard deviation 0.02, except
// the two residual projections of each block (attn.c_proj.weight and
// mlp.c_proj.weight), whose standard deviation is 0.02/√(2·Layers); every
// bias 0, every LayerNorm weight 1 and bias 0. The normals are
// r.NormFloat64()·std rounded to float32, one per element in row-major
// order. The dropouts draw their seeds from r too (one number per forward
// pass each, see Dropout). NewGPT panics, naming the field, for sizes that
// are not positive, Width not divisible by Heads, or (with RoPE) an odd
// head size.
func NewGPT(cfg GPTConfig, r *rand.Rand) *GPT {
	const op = "NewGPT"
	mustRand(op, r)
	for _, f := range []struct {
		name string
		v    int
	}{{"Vocab", cfg.Vocab}, {"Context", cfg.Context}, {"Layers", cfg.Layers}, {"Heads", cfg.Heads}, {"Width", cfg.Width}} {
		if f.v <= 0 {
			panic(fmt.Sprintf("nn: %s: %s %d (want > 0)", op, f.name, f.v))
		}
	}
	if cfg.Width%cfg.Heads != 0 {
		panic(fmt.Sprintf("nn: %s: Width %d does not split into %d heads", op, cfg.Width, cfg.Heads))
	}
	if cfg.RoPE && cfg.Width/cfg.Heads%2 != 0 {
		panic(fmt.Sprintf("nn: %s: RoPE needs an even head size, Width %d / Heads %d = %d", op, cfg.Width, cfg.Heads, cfg.Width/cfg.Heads))
	}
	if !(cfg.Dropout >= 0 && cfg.Dropout < 1) {
		panic(fmt.Sprintf("nn: %s: Dropout %v outside [0, 1)", op, cfg.Dropout))
	}
	d, consts := cfg.Width, &attnConsts{}
	lin := func(in, out int, bias bool) *Linear {
		l := &Linear{W: NewParam(tensor.New(out, in))}
		if bias {
			l.B = NewParam(tensor.New(out))
		}
		return l
	}
	m := &GPT{Config: cfg, Tok: &Embedding{W: NewParam(tensor.New(cfg.Vocab, d))}, Drop: NewDropout(cfg.Dropout, r),
		LNF: NewLayerNorm(d), consts: consts}
	if !cfg.RoPE {
		m.Pos = &Embedding{W: NewParam(tensor.New(cfg.Context, d))}
	}
	for range cfg.Layers {
		attn := &MultiHeadAttention{QKV: lin(d, 3*d, true), Proj: lin(d, d, true), Heads: cfg.Heads, Causal: true, RoPE: cfg.RoPE,
			AttnDrop: NewDropout(cfg.Dropout, r), ResidDrop: NewDropout(cfg.Dropout, r), consts: consts}
		m.Blocks = append(m.Blocks, &TransformerBlock{LN1: NewLayerNorm(d), Attn: attn, LN2: NewLayerNorm(d),
			FC1: lin(d, 4*d, true), FC2: lin(4*d, d, true), Drop: NewDropout(cfg.Dropout, r)})
	}
	m.Head = &Linear{W: m.Tok.W}
	if !cfg.TieWeights {
		m.Head.W = NewParam(tensor.New(cfg.Vocab, d))
	}
	m.Tok.W.noDecay = true
	if m.Pos != nil {
		m.Pos.W.noDecay = true
	}
	resid := 0.02 / math.Sqrt(2*float64(cfg.Layers))
	m.State("", func(name string, v *Var) {
		t := v.value
		switch {
		case t.Dims() == 1: // biases and LayerNorms keep their 0 and 1
		case strings.HasSuffix(name, ".c_proj.weight"):
			normal(t, 0, resid, r)
		default:
			normal(t, 0, 0.02, r)
		}
	})
	return m
}

// Logits returns the next-token logits [B, T, Vocab] for tokens [B, T]
// (token ids held as float32, as Embedding's indices; T at most Context),
// recording on tp. It panics, naming itself, for tokens of another rank
// or longer than the context.
func (m *GPT) Logits(tp *Tape, tokens *tensor.Tensor) *Var {
	const op = "GPT.Logits"
	mustTensor(op, "tokens", tokens)
	if tokens.Dims() != 2 {
		panic(fmt.Sprintf("nn: %s: tokens of shape %v are not [batch, seq]", op, tokens.Shape()))
	}
	b, t, d := tokens.Dim(0), tokens.Dim(1), m.Config.Width
	if t > m.Config.Context {
		panic(fmt.Sprintf("nn: %s: %d tokens for a context of %d", op, t, m.Config.Context))
	}
	dev := deviceOf(op, tokens, m.Tok.W.value)
	m.consts.ensure(dev, m.Config.Context, d/m.Config.Heads)
	x := tp.Reshape(tp.Embedding(tokens, m.Tok.W), b*t, d)
	if m.Pos != nil {
		if m.pos == nil || m.pos.Device() != dev {
			m.pos, m.posV = mustTo(op, tensor.Arange(0, float64(m.Config.Context), 1), dev), nil
		}
		if m.posV == nil || m.posV.Dim(0) != t {
			m.posV = m.pos.Slice(0, 0, t, 1)
		}
		p := tp.Embedding(m.posV, m.Pos.W)
		x = tp.Reshape(tp.Add(tp.Reshape(x, b, t, d), p), b*t, d)
	}
	x = m.Drop.Forward(tp, x)
	for _, k := range m.Blocks {
		x = k.forward(tp, x, b, t)
	}
	x = tp.Linear(m.LNF.Forward(tp, x), m.Head.W, nil, Act{})
	return tp.Reshape(x, b, t, m.Config.Vocab)
}

// Forward implements Module: Logits of the token ids x holds.
func (m *GPT) Forward(tp *Tape, x *Var) *Var {
	tp.use("GPT", "tokens", x)
	return m.Logits(tp, x.value)
}

// State implements Module (see GPT for the names).
func (m *GPT) State(prefix string, f func(string, *Var)) {
	m.Tok.State(prefix+"transformer.wte.", f)
	if m.Pos != nil {
		m.Pos.State(prefix+"transformer.wpe.", f)
	}
	for i, k := range m.Blocks {
		k.State(prefix+"transformer.h."+strconv.Itoa(i)+".", f)
	}
	m.LNF.State(prefix+"transformer.ln_f.", f)
	if m.Head.W != m.Tok.W {
		f(prefix+"lm_head.weight", m.Head.W)
	}
}

// SetTraining implements Module.
func (m *GPT) SetTraining(on bool) {
	m.Drop.SetTraining(on)
	for _, k := range m.Blocks {
		k.SetTraining(on)
	}
}
