package nn

import (
	"math"
	"math/rand/v2"
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
