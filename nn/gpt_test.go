package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// randTokens returns [b, t] token ids in [0, vocab).
func randTokens(r *rand.Rand, vocab, b, t int) *tensor.Tensor {
	x := tensor.New(b, t)
	for i := range x.Data() {
		x.Data()[i] = float32(r.IntN(vocab))
	}
	return x
}

// TestKVCacheMatchesLogits feeds sequences to Next (a prompt at once, then
// one token at a time) and checks each returned row against the last
// position of Logits over the whole prefix.
func TestKVCacheMatchesLogits(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  GPTConfig
		b    int
	}{
		{"learned", GPTConfig{Vocab: 11, Context: 9, Layers: 2, Heads: 2, Width: 8, TieWeights: true}, 2},
		{"rope", GPTConfig{Vocab: 7, Context: 8, Layers: 2, Heads: 4, Width: 16, RoPE: true}, 3},
		{"one-head", GPTConfig{Vocab: 5, Context: 6, Layers: 1, Heads: 1, Width: 4, Dropout: 0.3}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			m := NewGPT(c.cfg, r)
			m.SetTraining(false)
			toks := randTokens(r, c.cfg.Vocab, c.b, c.cfg.Context)
			cache := m.NewKVCache(c.b)
			tp := NewTape()
			tp.SetGrad(false)
			for _, prompt := range []int{3, 1} {
				cache.Reset()
				for n := prompt; n <= c.cfg.Context; n++ {
					var got *tensor.Tensor
					if n == prompt {
						got = m.Next(cache, toks.Slice(1, 0, n, 1))
					} else {
						got = m.Next(cache, toks.Slice(1, n-1, n, 1))
					}
					tp.Reset()
					want := m.Logits(tp, toks.Slice(1, 0, n, 1).Contiguous()).Value()
					want = want.Slice(1, n-1, n, 1).Reshape(c.b, c.cfg.Vocab)
					for i := range c.b {
						for j := range c.cfg.Vocab {
							g, w := got.At(i, j), want.At(i, j)
							if math.Abs(float64(g-w)) > 1e-4*(1+math.Abs(float64(w))) {
								t.Fatalf("prompt %d, %d tokens: logits[%d, %d] = %v, Logits gives %v", prompt, n, i, j, g, w)
							}
						}
					}
				}
			}
		})
	}
}

// smallGPT is a GPT small enough for finite differences.
func smallGPT(rope, tie bool) GPTConfig {
	return GPTConfig{Vocab: 7, Context: 6, Layers: 2, Heads: 2, Width: 8, RoPE: rope, TieWeights: tie}
}

// TestModuleGradients checks the gradients of the new modules' every
// parameter (and of the attention's and block's input) by central
// differences (gradCheckVars).
func TestModuleGradients(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name          string
		causal, rope  bool
		block         bool
		heads, b, seq int
	}{
		{"MultiHeadAttention", false, false, false, 2, 2, 5},
		{"MultiHeadAttention/causal", true, false, false, 2, 2, 5},
		{"MultiHeadAttention/causal/rope", true, true, false, 4, 1, 4},
		{"TransformerBlock/causal", true, false, true, 2, 2, 3},
		{"TransformerBlock/rope", false, true, true, 1, 1, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m Module
			if c.block {
				k := NewTransformerBlock(8, c.heads, c.causal, 0, r)
				k.Attn.RoPE = c.rope
				m = k
			} else {
				a := NewMultiHeadAttention(8, c.heads, c.causal, 0, r)
				a.RoPE = c.rope
				m = a
			}
			x := NewParam(tensor.RandN(r, c.b, c.seq, 8))
			gradCheckVars(t, c.name, append([]*Var{x}, Params(m)...), func(tp *Tape) *Var { return m.Forward(tp, x) }, 0)
		})
	}
	for _, c := range []struct {
		name      string
		rope, tie bool
	}{{"GPT/tied", false, true}, {"GPT/rope", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			m := NewGPT(smallGPT(c.rope, c.tie), r)
			toks := randTokens(r, 7, 2, 5)
			// LayerNorms of activations of nanoGPT's small scale (0.02)
			// bend too much for the default step.
			gradCheckVars(t, c.name, Params(m), func(tp *Tape) *Var { return m.Logits(tp, toks) }, 1e-3)
		})
	}
}

// refMHA is MultiHeadAttention's forward pass in float64 loops, from
// the definition in its doc comment.
func refMHA(a *MultiHeadAttention, x *tensor.Tensor) []float64 {
	b, t, d := x.Dim(0), x.Dim(1), x.Dim(2)
	h, hd := a.Heads, d/a.Heads
	lin := func(l *Linear, in []float64, rows, nin int) []float64 {
		nout := l.W.value.Dim(0)
		out := make([]float64, rows*nout)
		for r := range rows {
			for o := range nout {
				s := float64(l.B.value.Data()[o])
				for i := range nin {
					s += in[r*nin+i] * float64(l.W.value.At(o, i))
				}
				out[r*nout+o] = s
			}
		}
		return out
	}
	xs := make([]float64, x.Len())
	for i, v := range x.Contiguous().Data() {
		xs[i] = float64(v)
	}
	qkv := lin(a.QKV, xs, b*t, d)
	at := func(which, bi, ti, hh, e int) float64 { return qkv[(bi*t+ti)*3*d+which*d+hh*hd+e] }
	rot := func(which, bi, ti, hh, e int) float64 {
		v := at(which, bi, ti, hh, e)
		if !a.RoPE {
			return v
		}
		half := hd / 2
		i := e % half
		ang := float64(ti) * math.Pow(10000, -2*float64(i)/float64(hd))
		if e < half {
			return v*math.Cos(ang) - at(which, bi, ti, hh, e+half)*math.Sin(ang)
		}
		return v*math.Cos(ang) + at(which, bi, ti, hh, e-half)*math.Sin(ang)
	}
	merged := make([]float64, b*t*d)
	for bi := range b {
		for hh := range h {
			for i := range t {
				s := make([]float64, t)
				top := math.Inf(-1)
				for j := range t {
					s[j] = math.Inf(-1)
					if a.Causal && j > i {
						continue
					}
					var dot float64
					for e := range hd {
						dot += rot(0, bi, i, hh, e) * rot(1, bi, j, hh, e)
					}
					s[j] = dot / math.Sqrt(float64(hd))
					top = max(top, s[j])
				}
				var sum float64
				for j := range s {
					s[j] = math.Exp(s[j] - top)
					sum += s[j]
				}
				for e := range hd {
					var o float64
					for j := range t {
						o += s[j] / sum * at(2, bi, j, hh, e)
					}
					merged[(bi*t+i)*d+hh*hd+e] = o
				}
			}
		}
	}
	return lin(a.Proj, merged, b*t, d)
}

// TestMultiHeadAttentionReference compares the attention's forward pass
// with refMHA: within 1e-5 of the largest output.
func TestMultiHeadAttentionReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		d, heads, b, t int
		causal, rope   bool
	}{{8, 2, 2, 5, false, false}, {8, 2, 2, 5, true, false}, {12, 3, 1, 7, true, true}, {4, 1, 3, 1, true, false}, {16, 4, 2, 9, false, true}} {
		name := fmt.Sprintf("d=%d/heads=%d/b=%d/t=%d/causal=%v/rope=%v", c.d, c.heads, c.b, c.t, c.causal, c.rope)
		t.Run(name, func(t *testing.T) {
			a := NewMultiHeadAttention(c.d, c.heads, c.causal, 0, r)
			a.RoPE = c.rope
			x := tensor.RandN(r, c.b, c.t, c.d)
			tp := NewTape()
			got := a.Forward(tp, tp.Const(x)).Value()
			if !slices.Equal(got.Shape(), x.Shape()) {
				t.Fatalf("shape %v, want %v", got.Shape(), x.Shape())
			}
			want := refMHA(a, x)
			var scale float64
			for _, w := range want {
				scale = max(scale, math.Abs(w))
			}
			for i, g := range got.Data() {
				if math.Abs(float64(g)-want[i]) > 1e-5*scale {
					t.Fatalf("element %d: %v, reference %v", i, g, want[i])
				}
			}
		})
	}
}

// TestCausal changes the tokens (inputs) from position p on and checks that
// the outputs before p do not move at all, and that those from p on do.
func TestCausal(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, rope := range []bool{false, true} {
		m := NewGPT(GPTConfig{Vocab: 9, Context: 8, Layers: 2, Heads: 2, Width: 8, RoPE: rope}, r)
		a := NewMultiHeadAttention(8, 2, true, 0, r)
		a.RoPE = rope
		toks := randTokens(r, 9, 2, 8)
		x := tensor.RandN(r, 2, 8, 8)
		tp := NewTape()
		before := m.Logits(tp, toks).Value().Clone()
		xb := a.Forward(tp, tp.Const(x)).Value().Clone()
		for p := range 8 {
			t2, x2 := toks.Clone(), x.Clone()
			for i := range 2 {
				for j := p; j < 8; j++ {
					t2.Set(float32((int(t2.At(i, j))+1)%9), i, j)
					for e := range 8 {
						x2.Set(x2.At(i, j, e)+1, i, j, e)
					}
				}
			}
			after := m.Logits(tp, t2).Value()
			xa := a.Forward(tp, tp.Const(x2)).Value()
			for _, c := range []struct {
				name          string
				before, after *tensor.Tensor
			}{{"GPT", before, after}, {"MultiHeadAttention", xb, xa}} {
				for i := range 2 {
					for j := range 8 {
						same := slices.Equal(c.before.Slice(0, i, i+1, 1).Slice(1, j, j+1, 1).Contiguous().Data(),
							c.after.Slice(0, i, i+1, 1).Slice(1, j, j+1, 1).Contiguous().Data())
						if same != (j < p) {
							t.Errorf("%s rope=%v: changing positions %d.. : position %d of sequence %d unchanged=%v", c.name, rope, p, j, i, same)
						}
					}
				}
			}
		}
	}
}

// TestWeightTying checks that a tied GPT has one parameter for the token
// embedding and the head, listed once, whose gradient is the sum of the
// gradients an untied copy gives its embedding and its head.
func TestWeightTying(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	tied := NewGPT(smallGPT(false, true), r)
	untied := NewGPT(smallGPT(false, false), r)
	if tied.Head.W != tied.Tok.W || untied.Head.W == untied.Tok.W {
		t.Fatal("Head.W is Tok.W only when tied")
	}
	n := 0
	for _, v := range Params(tied) {
		if v == tied.Tok.W {
			n++
		}
	}
	if n != 1 || len(Params(tied))+1 != len(Params(untied)) {
		t.Fatalf("the tied weight is listed %d times; %d parameters tied, %d untied", n, len(Params(tied)), len(Params(untied)))
	}
	// The untied copy: the tied model's values, the head a copy of wte.
	st := StateDict(tied)
	st = append(st, Named{Name: "lm_head.weight", T: tied.Tok.W.value.Clone()})
	if err := LoadState(untied, st); err != nil {
		t.Fatal(err)
	}
	toks, labels := randTokens(r, 7, 3, 6), randTokens(r, 7, 18, 1).Reshape(18)
	for _, m := range []*GPT{tied, untied} {
		tp := NewTape()
		tp.Backward(tp.CrossEntropy(tp.Reshape(m.Logits(tp, toks), 18, 7), labels))
	}
	want := tensor.Add(untied.Tok.W.Grad(), untied.Head.W.Grad())
	got := tied.Tok.W.Grad()
	if e := relErr(got.Data(), want.Data()); e > 1e-5 {
		t.Errorf("tied gradient: relative error %.3g against the sum of the untied ones", e)
	}
	if tied.Head.W.Grad() != got {
		t.Errorf("the head's gradient is not the embedding's")
	}
}

// TestGPTStateNames checks the State names and shapes against nanoGPT's
// state_dict and that Save and Load round-trip them.
func TestGPTStateNames(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	block := func(i int) []string {
		p := fmt.Sprintf("transformer.h.%d.", i)
		return []string{p + "ln_1.weight [8]", p + "ln_1.bias [8]", p + "attn.c_attn.weight [24 8]", p + "attn.c_attn.bias [24]",
			p + "attn.c_proj.weight [8 8]", p + "attn.c_proj.bias [8]", p + "ln_2.weight [8]", p + "ln_2.bias [8]",
			p + "mlp.c_fc.weight [32 8]", p + "mlp.c_fc.bias [32]", p + "mlp.c_proj.weight [8 32]", p + "mlp.c_proj.bias [8]"}
	}
	for _, c := range []struct {
		rope, tie bool
	}{{false, true}, {true, false}} {
		var want []string
		want = append(want, "transformer.wte.weight [7 8]")
		if !c.rope {
			want = append(want, "transformer.wpe.weight [6 8]")
		}
		want = append(append(append(want, block(0)...), block(1)...), "transformer.ln_f.weight [8]", "transformer.ln_f.bias [8]")
		if !c.tie {
			want = append(want, "lm_head.weight [7 8]")
		}
		m := NewGPT(smallGPT(c.rope, c.tie), r)
		var got []string
		for _, s := range StateDict(m) {
			got = append(got, fmt.Sprintf("%s %v", s.Name, s.T.Shape()))
		}
		if !slices.Equal(got, want) {
			t.Errorf("rope=%v tie=%v: names\n%v\nwant\n%v", c.rope, c.tie, got, want)
		}
		path := filepath.Join(t.TempDir(), "gpt.safetensors")
		if err := Save(path, m, nil); err != nil {
			t.Fatal(err)
		}
		m2 := NewGPT(smallGPT(c.rope, c.tie), r)
		if _, err := Load(path, m2); err != nil {
			t.Fatal(err)
		}
		for i, s := range StateDict(m2) {
			if !slices.Equal(s.T.Data(), StateDict(m)[i].T.Data()) {
				t.Errorf("%s differs after Save and Load", s.Name)
			}
		}
	}
}

// TestGPTInit checks NewGPT's initialization statistics: the standard
// deviations 0.02 and 0.02/√(2·Layers) of the weights, zero biases and the
// LayerNorms' 1 and 0.
func TestGPTInit(t *testing.T) {
	cfg := GPTConfig{Vocab: 64, Context: 32, Layers: 8, Heads: 4, Width: 64}
	m := NewGPT(cfg, rand.New(rand.NewPCG(1, 1)))
	for _, s := range StateDict(m) {
		d := s.T.Data()
		var mean, sq float64
		for _, v := range d {
			mean += float64(v)
			sq += float64(v) * float64(v)
		}
		mean /= float64(len(d))
		std := math.Sqrt(sq/float64(len(d)) - mean*mean)
		switch {
		case strings.HasSuffix(s.Name, ".bias"):
			if sq != 0 {
				t.Errorf("%s is not zero", s.Name)
			}
		case strings.Contains(s.Name, "ln_"):
			if mean != 1 || std != 0 {
				t.Errorf("%s: mean %v std %v, want ones", s.Name, mean, std)
			}
		default:
			want := 0.02
			if strings.HasSuffix(s.Name, "c_proj.weight") {
				want = 0.02 / math.Sqrt(16)
			}
			// 4096 draws or more: the sample deviation is within 5% with
			// overwhelming probability.
			if math.Abs(std-want) > 0.05*want || math.Abs(mean) > 0.1*want {
				t.Errorf("%s: mean %.3g std %.4g, want 0 and %.4g", s.Name, mean, std, want)
			}
		}
	}
}

// TestNextAllocsAndPanics checks that Next and Sample allocate nothing and
// that Next panics, naming itself, past the context and on bad tokens.
func TestNextAllocsAndPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 7))
	cfg := GPTConfig{Vocab: 10, Context: 40, Layers: 2, Heads: 2, Width: 16, RoPE: true}
	m := NewGPT(cfg, r)
	c := m.NewKVCache(2)
	tok := tensor.New(2, 1)
	m.Next(c, randTokens(r, 10, 2, 3))
	if n := testing.AllocsPerRun(20, func() {
		Sample(tok, m.Next(c, tok), 0.8, 5, r)
	}); n != 0 {
		t.Errorf("Next and Sample: %v allocations a token", n)
	}
	if c.Pos() != 3+21 {
		t.Errorf("Pos %d after 24 tokens", c.Pos())
	}
	other := m.NewKVCache(1)
	for _, p := range []struct {
		want string
		f    func()
	}{
		{"nn: GPT.Next: 24 cached + 17 new tokens is past the context of 40", func() { m.Next(c, tensor.New(2, 17)) }},
		{"nn: GPT.Next: tokens of shape [1 1] for a cache of batch 2", func() { m.Next(c, tensor.New(1, 1)) }},
		{"nn: GPT.Next: token 10 at [1, 0] is not an id in [0, 10)", func() { m.Next(c, tensor.FromSlice([]float32{0, 10}, 2, 1)) }},
		{"nn: GPT.Next: token 0.5 at [0, 0]", func() { m.Next(c, tensor.FromSlice([]float32{0.5, 1}, 2, 1)) }},
		{"nn: GPT.Next: the cache is not this model's", func() { NewGPT(cfg, r).Next(other, tensor.New(1, 1)) }},
		{"nn: GPT.Logits: 41 tokens for a context of 40", func() { m.Logits(NewTape(), tensor.New(1, 41)) }},
		{"nn: Sample: temperature -1", func() { Sample(tok, tensor.New(2, 3), -1, 0, r) }},
		{"nn: Sample: logits of shape [3 3] and dst of shape [2 1]", func() { Sample(tok, tensor.New(3, 3), 1, 0, r) }},
	} {
		if msg := panicMsg(p.f); !strings.HasPrefix(msg, p.want) {
			t.Errorf("panic %q, want %q", msg, p.want)
		}
	}
}

// TestSample checks Sample's distribution: greedy at temperature 0, only
// the top k (ties at the k-th included), and frequencies within 4
// standard deviations of softmax(logits/temperature).
func TestSample(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	logits := tensor.FromSlice([]float32{1, 3, 2, 3, -1, 0, 2, 2}, 2, 4)
	dst := tensor.New(2, 1)
	Sample(dst, logits, 0, 0, r)
	if got := dst.Data(); got[0] != 1 || got[1] != 2 {
		t.Errorf("greedy: %v, want [1 2] (the first of equal maxima)", got)
	}
	for _, c := range []struct {
		temp float32
		k    int
	}{{1, 0}, {0.5, 0}, {2, 2}, {1, 3}, {1, 1}, {1, 4}} {
		const n = 20000
		counts := [2][4]float64{}
		for range n {
			Sample(dst, logits, c.temp, c.k, r)
			counts[0][int(dst.Data()[0])]++
			counts[1][int(dst.Data()[1])]++
		}
		for row := range 2 {
			l := logits.Data()[row*4 : row*4+4]
			sorted := slices.Clone(l)
			slices.Sort(sorted)
			cut := float32(math.Inf(-1))
			if c.k > 0 && c.k < 4 {
				cut = sorted[4-c.k]
			}
			var p [4]float64
			var sum float64
			for j, x := range l {
				if x >= cut {
					p[j] = math.Exp(float64(x) / float64(c.temp))
					sum += p[j]
				}
			}
			for j := range p {
				p[j] /= sum
				sd := math.Sqrt(p[j] * (1 - p[j]) / n)
				if f := counts[row][j] / n; math.Abs(f-p[j]) > 4*sd+1e-9 {
					t.Errorf("temperature %v top-%d: row %d token %d drawn %.4f of the time, want %.4f", c.temp, c.k, row, j, f, p[j])
				}
			}
		}
	}
}

// BenchmarkGPTNext generates with the default model (vocabulary 96) and a
// batch of one: each op is one token, the cache reset every Context
// tokens.
func BenchmarkGPTNext(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	m := NewGPT(DefaultGPTConfig(96), r)
	c := m.NewKVCache(1)
	tok := tensor.New(1, 1)
	b.ReportAllocs()
	for b.Loop() {
		if c.Pos() == m.Config.Context {
			c.Reset()
		}
		Sample(tok, m.Next(c, tok), 1, 10, r)
	}
}

// BenchmarkGPTTrainStep is one training step of the default model
// (vocabulary 96, batch 32, context 128) as gptTrainer runs it.
func BenchmarkGPTTrainStep(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	s := newGPTTrainer(NewGPT(DefaultGPTConfig(96), r), r, 32)
	s.step()
	b.ReportAllocs()
	for b.Loop() {
		s.step()
	}
}

// TestGPTZeroSize runs Logits and its backward on no sequences and on
// sequences of no tokens: empty logits of the right shape, zero gradients.
func TestGPTZeroSize(t *testing.T) {
	for _, rope := range []bool{false, true} {
		m := NewGPT(smallGPT(rope, true), rand.New(rand.NewPCG(1, 1)))
		for _, sh := range [][]int{{2, 0}, {0, 3}} {
			tp := NewTape()
			y := m.Logits(tp, tensor.New(sh...))
			tp.Backward(tp.Sum(y))
			if want := append(slices.Clone(sh), 7); !slices.Equal(y.Shape(), want) {
				t.Errorf("rope=%v: tokens %v give logits %v, want %v", rope, sh, y.Shape(), want)
			}
			if g := m.Tok.W.Grad(); g == nil || tensor.Max(tensor.Abs(g), false).Item() != 0 {
				t.Errorf("rope=%v: tokens %v: the embedding's gradient is %v, want zeros", rope, sh, g)
			}
			m.Tok.W.ZeroGrad()
		}
	}
}
