package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lanesgo/lanes/simd"
	"github.com/lanesgo/lanes/tensor"
)

// KVCache holds a GPT's attention keys and values for a batch of
// sequences being generated, so that each new token costs one pass over
// the model for that token alone (GPT.Next). It also holds the scratch
// memory of that pass: after NewKVCache, Next allocates nothing.
type KVCache struct {
	m          *GPT
	batch, pos int
	// k[l] and v[l] are layer l's keys and values, [batch, heads,
	// Context, headDim]: a head's keys are one contiguous matrix.
	k, v [][]float32
	// Scratch for up to batch·Context rows of a pass.
	x, h, att, y, qkv, fc []float32
	scores                []float32 // [Context, Context]: one head's
	last                  []float32 // [batch, Width]
	logits                *tensor.Tensor
	// toks is the last call's tokens, [batch, T], over tokBuf: rebuilt
	// only when T changes.
	toks   *tensor.Tensor
	tokBuf []float32
}

// NewKVCache returns an empty cache for batch sequences of m, on the host
// (Next runs there). Its memory is 2·Layers·batch·Context·Width floats of
// keys and values and about 10·batch·Context·Width of scratch.
func (m *GPT) NewKVCache(batch int) *KVCache {
	if batch <= 0 {
		panic(fmt.Sprintf("nn: GPT.NewKVCache: batch %d (want > 0)", batch))
	}
	cfg := m.Config
	rows, d := batch*cfg.Context, cfg.Width
	c := &KVCache{m: m, batch: batch,
		x: make([]float32, rows*d), h: make([]float32, rows*d), att: make([]float32, rows*d), y: make([]float32, rows*d),
		qkv: make([]float32, rows*3*d), fc: make([]float32, rows*4*d), scores: make([]float32, cfg.Context*cfg.Context),
		last: make([]float32, batch*d), logits: tensor.New(batch, cfg.Vocab), tokBuf: make([]float32, rows)}
	for range cfg.Layers {
		c.k = append(c.k, make([]float32, rows*d))
		c.v = append(c.v, make([]float32, rows*d))
	}
	return c
}

// Pos returns the number of tokens of each sequence in the cache.
func (c *KVCache) Pos() int { return c.pos }

// Reset empties the cache (for new sequences); its memory is kept.
func (c *KVCache) Reset() { c.pos = 0 }

// Next appends tokens [B, T] (token ids as float32, B the cache's batch,
// T ≥ 1) to the sequences in c at its position, runs the model over them
// in evaluation mode (no dropout) attending to every token cached before,
// and returns the logits of the last of them, [B, Vocab]: what
// Logits(all tokens so far)[:, -1] gives, within float32 rounding (the
// tests hold them to 1e-4 relative). A prompt may go in at once and the
// generated tokens one at a time. The result is the cache's own tensor,
// overwritten by the next call.
//
// Next runs on the host with simd kernels (one Sgemm per projection and
// per head's scores and values) and allocates nothing. It panics, naming
// itself, for a cache of another model, tokens of another shape, a token
// outside [0, Vocab), a model on a device, or tokens past the context:
// Pos()+T > Context.
func (m *GPT) Next(c *KVCache, tokens *tensor.Tensor) *tensor.Tensor {
	const op = "GPT.Next"
	cfg := m.Config
	mustTensor(op, "tokens", tokens)
	switch {
	case c == nil || c.m != m:
		panic(fmt.Sprintf("nn: %s: the cache is not this model's (NewKVCache)", op))
	case tokens.Dims() != 2 || tokens.Dim(0) != c.batch || tokens.Dim(1) == 0:
		panic(fmt.Sprintf("nn: %s: tokens of shape %v for a cache of batch %d (want [%d, T ≥ 1])", op, tokens.Shape(), c.batch, c.batch))
	case c.pos+tokens.Dim(1) > cfg.Context:
		panic(fmt.Sprintf("nn: %s: %d cached + %d new tokens is past the context of %d (Reset the cache)", op, c.pos, tokens.Dim(1), cfg.Context))
	case !onHost(tokens) || !onHost(m.Tok.W.value):
		panic(fmt.Sprintf("nn: %s: the model is on %v and tokens on %v: Next runs on the host (To(m, tensor.CPU))", op, m.Tok.W.value.Device(), tokens.Device()))
	}
	b, t, d, heads := c.batch, tokens.Dim(1), cfg.Width, cfg.Heads
	hd, rows := d/heads, c.batch*tokens.Dim(1)
	if c.toks == nil || c.toks.Dim(1) != t {
		c.toks = tensor.FromSlice(c.tokBuf[:rows], b, t)
	}
	tensor.CopyInto(c.toks, tokens) // tokens may be a strided view
	x := c.x[:rows*d]
	wte := m.Tok.W.value.Data()
	for i := range b {
		for j := range t {
			f := c.tokBuf[i*t+j]
			tok := int(f)
			if float32(tok) != f || tok < 0 || tok >= cfg.Vocab {
				panic(fmt.Sprintf("nn: %s: token %v at [%d, %d] is not an id in [0, %d)", op, f, i, j, cfg.Vocab))
			}
			row := x[(i*t+j)*d : (i*t+j+1)*d]
			copy(row, wte[tok*d:(tok+1)*d])
			if m.Pos != nil {
				p := c.pos + j
				simd.Add(row, row, m.Pos.W.value.Data()[p*d:(p+1)*d])
			}
		}
	}
	if cfg.RoPE {
		m.consts.ensure(tensor.CPU, cfg.Context, hd)
	}
	scale := float32(1 / math.Sqrt(float64(hd)))
	h, att, y, qkv, fc := c.h[:rows*d], c.att[:rows*d], c.y[:rows*d], c.qkv[:rows*3*d], c.fc[:rows*4*d]
	for l, k := range m.Blocks {
		layerNormRows(h, x, d, k.LN1)
		linearRows(qkv, h, rows, k.Attn.QKV)
		kc, vc := c.k[l], c.v[l]
		for i := range b {
			for j := range t {
				row := qkv[(i*t+j)*3*d:]
				p := c.pos + j
				for hh := range heads {
					q, kk, vv := row[hh*hd:(hh+1)*hd], row[d+hh*hd:d+(hh+1)*hd], row[2*d+hh*hd:2*d+(hh+1)*hd]
					if cfg.RoPE {
						ropeRow(q, m.consts, p)
						ropeRow(kk, m.consts, p)
					}
					at := ((i*heads+hh)*cfg.Context + p) * hd
					copy(kc[at:at+hd], kk)
					copy(vc[at:at+hd], vv)
				}
			}
			s := c.pos + t
			for hh := range heads {
				base := (i*heads + hh) * cfg.Context * hd
				sc := c.scores[:t*s]
				simd.Sgemm(false, true, t, s, hd, scale, qkv[i*t*3*d+hh*hd:], 3*d, kc[base:], hd, 0, sc, s)
				for j := range t {
					lim := c.pos + j + 1 // causal: keys up to this token's position
					r := sc[j*s : (j+1)*s]
					simd.Softmax(r[:lim], r[:lim])
					clear(r[lim:])
				}
				simd.Sgemm(false, false, t, hd, s, 1, sc, s, vc[base:], hd, 0, att[i*t*d+hh*hd:], d)
			}
		}
		linearRows(y, att, rows, k.Attn.Proj)
		simd.Add(x, x, y)
		layerNormRows(h, x, d, k.LN2)
		linearRows(fc, h, rows, k.FC1)
		simd.GELU(fc, fc)
		linearRows(y, fc, rows, k.FC2)
		simd.Add(x, x, y)
	}
	c.pos += t
	for i := range b {
		copy(c.last[i*d:(i+1)*d], x[(i*t+t-1)*d:(i*t+t)*d])
	}
	layerNormRows(c.last, c.last, d, m.LNF)
	linearRows(c.logits.Data(), c.last, b, m.Head)
	return c.logits
}

// ropeRow rotates one head's q or k (hd values) to position p with the
// host tables of cs (the rotation ropeTape applies).
func ropeRow(x []float32, cs *attnConsts, p int) {
	hd := len(x)
	half := hd / 2
	cos, sin := cs.hcos[p*hd:(p+1)*hd], cs.hsin[p*hd:(p+1)*hd]
	for i := range half {
		a, b := x[i], x[half+i]
		x[i] = a*cos[i] - b*sin[i]
		x[half+i] = b*cos[half+i] + a*sin[half+i]
	}
}

// layerNormRows sets dst to the LayerNorm of each row of width d of x
// (dst may be x), with l's scale, shift and epsilon: mean and variance in
// float64.
func layerNormRows(dst, x []float32, d int, l *LayerNorm) {
	eps := float64(l.Eps)
	if eps == 0 {
		eps = 1e-5
	}
	g, be := l.Gamma.value.Data(), l.Beta.value.Data()
	for r := 0; r+d <= len(x); r += d {
		row, out := x[r:r+d], dst[r:r+d]
		var mean, v float64
		for _, e := range row {
			mean += float64(e)
		}
		mean /= float64(d)
		for _, e := range row {
			v += (float64(e) - mean) * (float64(e) - mean)
		}
		inv := 1 / math.Sqrt(v/float64(d)+eps)
		for i, e := range row {
			out[i] = float32((float64(e)-mean)*inv)*g[i] + be[i]
		}
	}
}

// linearRows sets y [rows, out] to x [rows, in]·l.Wᵀ + l.B in one Sgemm
// seeded with the bias, as the tape's Linear on the host.
func linearRows(y, x []float32, rows int, l *Linear) {
	out, in := l.W.value.Dim(0), l.W.value.Dim(1)
	var beta float32
	if l.B != nil {
		bd := l.B.value.Data()
		for r := range rows {
			copy(y[r*out:(r+1)*out], bd)
		}
		beta = 1
	}
	simd.Sgemm(false, true, rows, out, in, 1, x, ld(in), l.W.value.Data(), ld(in), beta, y, ld(out))
}

// Sample draws one token for each row of logits [B, V] into dst (B
// elements, as the [B, 1] tokens Next takes), as nanoGPT's generate:
// logits are divided by temperature, all but the topK largest (those equal
// to the topK-th included; 0 or ≥ V keeps all) are dropped, and a token is
// drawn from the softmax of the rest with one r.Float64() per row. A
// temperature of 0 takes the largest logit (the first of equals) and draws
// nothing. The arithmetic is float64. It allocates nothing and panics,
// naming itself, for shapes that do not match, a negative or NaN
// temperature, a negative topK, a nil r or a row with a NaN.
func Sample(dst, logits *tensor.Tensor, temperature float32, topK int, r *rand.Rand) {
	const op = "Sample"
	mustTensor(op, "dst", dst)
	mustTensor(op, "logits", logits)
	mustRand(op, r)
	switch {
	case logits.Dims() != 2 || logits.Dim(1) == 0 || dst.Len() != logits.Dim(0):
		panic(fmt.Sprintf("nn: %s: logits of shape %v and dst of shape %v (want [B, V ≥ 1] and B elements)", op, logits.Shape(), dst.Shape()))
	case !onHost(dst) || !onHost(logits) || !dst.IsContiguous() || !logits.IsContiguous():
		panic(fmt.Sprintf("nn: %s: dst and logits must be contiguous host tensors", op))
	case !(temperature >= 0):
		panic(fmt.Sprintf("nn: %s: temperature %v (want >= 0)", op, temperature))
	case topK < 0:
		panic(fmt.Sprintf("nn: %s: topK %d (want >= 0)", op, topK))
	}
	v := logits.Dim(1)
	for i := range logits.Dim(0) {
		row := logits.Data()[i*v : (i+1)*v]
		best := 0
		for j, x := range row {
			if x != x {
				panic(fmt.Sprintf("nn: %s: NaN logit at [%d, %d]", op, i, j))
			}
			if x > row[best] {
				best = j
			}
		}
		if temperature == 0 {
			dst.Data()[i] = float32(best)
			continue
		}
		cut := float32(math.Inf(-1))
		if topK > 0 && topK < v {
			cut = kthLargest(row, topK)
		}
		top, inv := float64(row[best]), 1/float64(temperature)
		var sum float64
		for _, x := range row {
			if x >= cut {
				sum += math.Exp((float64(x) - top) * inv)
			}
		}
		u, pick := r.Float64()*sum, -1
		for j, x := range row {
			if x < cut {
				continue
			}
			pick = j
			if u -= math.Exp((float64(x) - top) * inv); u < 0 {
				break
			}
		}
		dst.Data()[i] = float32(pick)
	}
}

// kthLargest returns the k-th largest value of row counting equal values
// separately (torch.topk's last value), for 1 ≤ k < len(row), in
// O(k·len(row)) without scratch.
func kthLargest(row []float32, k int) float32 {
	var above float32 // the distinct values taken so far are those ≥ above
	seen := 0
	for first := true; ; first = false {
		next, found := float32(0), false
		for _, x := range row {
			if (first || x < above) && (!found || x > next) {
				next, found = x, true
			}
		}
		if !found {
			return above
		}
		for _, x := range row {
			if x == next {
				seen++
			}
		}
		if above = next; seen >= k {
			return next
		}
	}
}
