package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/nn/cmd/internal/progress"
	"github.com/lanesgo/lanes/tensor"
)

// settings are what a run trains with; a checkpoint keeps them (its
// "chargpt.settings" metadata, JSON) so that a resumed run goes on with
// the same model, schedule and batches.
type settings struct {
	Context, Layers, Heads, Width int
	Dropout                       float32
	RoPE                          bool
	Batch                         int
	Steps                         int     // total steps: the end of the cosine decay
	Warmup                        int     // steps of linear warmup
	LR, MinLR                     float32 // the schedule's peak and floor
	WeightDecay                   float32 // AdamW's, on the matrices of the Linears only
	Beta1, Beta2                  float32
	Clip                          float32 // the gradients' global norm is clipped to this
	Seed                          uint64
	EvalEvery, EvalBatches        int
}

// defaults are the command's defaults: the model (4 layers, 4
// heads, width 128, context 128, batch 32) and nanoGPT's
// shakespeare_char optimizer (AdamW, β = (0.9, 0.99), weight decay 0.1,
// learning rate 1e-3 after 100 warmup steps, decaying to 1e-4 along a
// cosine), gradients clipped to norm 1, no dropout.
func defaults() settings {
	return settings{Context: 128, Layers: 4, Heads: 4, Width: 128, Batch: 32, Steps: 2000, Warmup: 100,
		LR: 1e-3, MinLR: 1e-4, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.99, Clip: 1, Seed: 1, EvalEvery: 100, EvalBatches: 20}
}

// model returns the GPT the settings describe (byte vocabulary, tied head).
func (s settings) model() nn.GPTConfig {
	return nn.GPTConfig{Vocab: vocab, Context: s.Context, Layers: s.Layers, Heads: s.Heads, Width: s.Width,
		Dropout: s.Dropout, RoPE: s.RoPE, TieWeights: true}
}

// schedule is the learning rate of each step (nanoGPT's get_lr).
func (s settings) schedule() nn.WarmupCosine {
	return nn.WarmupCosine{Base: s.LR, Min: s.MinLR, Warmup: s.Warmup, Decay: s.Steps}
}

// newRand returns the generator of the model's initialization (and
// dropout) for seed, as nn/cmd/fashion's.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^golden)) }

// trainer is a training run: the model, its optimizer and where it is.
type trainer struct {
	s      settings
	m      *nn.GPT
	opt    *nn.Adam
	tp     *nn.Tape
	params []*nn.Var // the model's, once each
	step   int       // steps done
	x, y   *tensor.Tensor
	evalX  []*tensor.Tensor // the validation batches, fixed for the run
	evalY  []*tensor.Tensor
}

// newTrainer returns a run at step 0 with the model initialized from the
// seed (nn.NewGPT's nanoGPT initialization) and AdamW over the two groups
// of nn.DecayGroups.
func newTrainer(s settings) *trainer {
	m := nn.NewGPT(s.model(), newRand(s.Seed))
	decay, noDecay := nn.DecayGroups(m)
	opt := nn.NewAdamWGroups(decay, noDecay, s.LR)
	opt.WeightDecay, opt.Beta1, opt.Beta2 = s.WeightDecay, s.Beta1, s.Beta2
	return &trainer{s: s, m: m, opt: opt, tp: nn.NewTape(), params: nn.Params(m),
		x: tensor.New(s.Batch, s.Context), y: tensor.New(s.Batch * s.Context)}
}

// Checkpoint metadata keys.
const (
	metaSettings = "chargpt.settings"
	metaStep     = "chargpt.step"
)

// save writes a checkpoint of the run (nn.SaveCheckpoint: model, AdamW's
// state, and the settings and step in the metadata), replacing path
// atomically.
func (t *trainer) save(path string) error {
	js, err := json.Marshal(t.s)
	if err != nil {
		return err
	}
	return nn.SaveCheckpoint(path, t.m, t.opt, nil, map[string]string{
		metaSettings: string(js), metaStep: strconv.Itoa(t.step), "format": "pt"})
}

// resume returns the run a checkpoint written by save holds. Its batches
// need no state of their own: the batch of a step is a function of the
// seed and the step (see offset).
func resume(path string) (*trainer, error) {
	_, meta, err := nn.LoadSafetensors(path)
	if err != nil {
		return nil, err
	}
	var s settings
	if err := json.Unmarshal([]byte(meta[metaSettings]), &s); err != nil {
		return nil, fmt.Errorf("%s: not a chargpt checkpoint (%s: %v)", path, metaSettings, err)
	}
	step, err := strconv.Atoi(meta[metaStep])
	if err != nil || step < 0 {
		return nil, fmt.Errorf("%s: not a chargpt checkpoint (%s %q)", path, metaStep, meta[metaStep])
	}
	t := newTrainer(s)
	if _, err := nn.LoadCheckpoint(path, t.m, t.opt, nil); err != nil {
		return nil, err
	}
	t.step = step
	return t, nil
}

// trainStep runs step t.step on its batch of text and returns its loss.
func (t *trainer) trainStep(text []byte) float32 {
	t.opt.SetLR(t.s.schedule().At(t.step))
	batch(t.x, t.y, text, t.s.Seed, t.step)
	tp := t.tp
	tp.Reset()
	n := t.s.Batch * t.s.Context
	loss := tp.CrossEntropy(tp.Reshape(t.m.Logits(tp, t.x), n, vocab), t.y)
	t.opt.ZeroGrad()
	tp.Backward(loss)
	nn.ClipGradNorm(t.params, t.s.Clip)
	t.opt.Step()
	t.step++
	return loss.Value().Item()
}

// evalLoss returns the mean loss over the run's validation batches: the
// first EvalBatches batches of the validation stream (seed xor valStream),
// the same at every evaluation, in evaluation mode without gradients.
func (t *trainer) evalLoss(val []byte) float64 {
	if t.evalX == nil {
		for i := range t.s.EvalBatches {
			x, y := tensor.New(t.s.Batch, t.s.Context), tensor.New(t.s.Batch*t.s.Context)
			batch(x, y, val, t.s.Seed^valStream, i)
			t.evalX, t.evalY = append(t.evalX, x), append(t.evalY, y)
		}
	}
	t.m.SetTraining(false)
	defer t.m.SetTraining(true)
	tp := nn.NewTape()
	tp.SetGrad(false)
	n := t.s.Batch * t.s.Context
	var sum float64
	for i, x := range t.evalX {
		tp.Reset()
		sum += float64(tp.CrossEntropy(tp.Reshape(t.m.Logits(tp, x), n, vocab), t.evalY[i]).Value().Item())
	}
	return sum / float64(max(len(t.evalX), 1))
}

// runOptions are the parts of a run that are not its settings.
type runOptions struct {
	save     string        // checkpoint path, written at each evaluation and at the end
	duration time.Duration // when > 0: Steps is set from the speed of the first steps
	bar      *os.File      // the progress bar's terminal (nil: none)
}

// calibrate is the step (counted in this invocation) after which -time
// fixes the number of steps; the first two are left out of the timing.
const calibrate = 12

// train runs t to t.s.Steps on c and writes a line at each evaluation
// (every EvalEvery steps and at the last):
//
//	step=S tokens=N seconds=T tokens_per_s=R lr=L train_loss=A val_loss=V
//
// N counts the tokens trained on by this invocation, T the seconds of its
// training steps (evaluations left out), R = N/T, A the mean training loss
// of the steps since the previous line, V evalLoss. bench/torchref/chargpt.py
// prints the same.
func (t *trainer) train(c *corpus, o runOptions, out io.Writer) error {
	if t.s.Steps > 0 && len(c.val) < t.s.Context+1 {
		return fmt.Errorf("the validation text has %d bytes, fewer than a window of %d", len(c.val), t.s.Context+1)
	}
	var bar *progress.Bar
	if o.bar != nil {
		bar = progress.New(o.bar, t.s.Steps)
	}
	tokens, first := 0, t.step
	var trainTime, calStart time.Duration
	var lossSum float64
	var lossN int
	val := 0.0
	for t.step < t.s.Steps {
		start := time.Now()
		loss := t.trainStep(c.train)
		trainTime += time.Since(start)
		tokens += t.s.Batch * t.s.Context
		lossSum += float64(loss)
		lossN++
		switch done := t.step - first; {
		case o.duration > 0 && done == 2:
			calStart = trainTime
		case o.duration > 0 && done == calibrate:
			per := (trainTime - calStart) / (calibrate - 2)
			t.s.Steps = t.step + max(int((o.duration-trainTime)/max(per, 1)), 0)
			if bar != nil {
				bar.SetTotal(t.s.Steps)
			}
		}
		if t.step%t.s.EvalEvery == 0 || t.step == t.s.Steps {
			val = t.evalLoss(c.val)
			if bar != nil {
				bar.Done()
			}
			fmt.Fprintf(out, "step=%d tokens=%d seconds=%.2f tokens_per_s=%.0f lr=%.3g train_loss=%.4f val_loss=%.4f\n",
				t.step, tokens, trainTime.Seconds(), float64(tokens)/trainTime.Seconds(), t.opt.LR(), lossSum/float64(lossN), val)
			lossSum, lossN = 0, 0
			if o.save != "" {
				if err := t.save(o.save); err != nil {
					return err
				}
			}
		}
		if bar != nil && bar.Due(t.step) {
			bar.Update(t.step, fmt.Sprintf("tokens/s=%.0f loss=%.4f val=%.4f", float64(tokens)/trainTime.Seconds(), loss, val))
		}
	}
	if o.save != "" && t.step == first { // nothing trained: save the model as it is (the initialization with -steps 0)
		return t.save(o.save)
	}
	return nil
}

// generate continues prompt by n tokens drawn with nn.Sample (temperature,
// topK; r draws) from m's next-token distributions, computed with the KV
// cache (batch 1), and returns the n tokens and the seconds they took. A
// prompt longer than Context-1 tokens is cut to its last Context-1 (an
// empty one starts from "\n"). When the cache is full, it is refilled with
// the last Context/2 tokens, whose positions then start again from 0
// (nanoGPT's generate instead crops to the last Context tokens at every
// step, which a cache cannot do without recomputing it; the two agree
// while prompt and text fit the context).
func generate(m *nn.GPT, prompt string, n int, temperature float32, topK int, r *rand.Rand) ([]int, float64) {
	ctx := m.Config.Context
	ids := encode(prompt)
	if len(ids) == 0 {
		ids = encode("\n")
	}
	ids = ids[max(len(ids)-(ctx-1), 0):]
	start := time.Now()
	cache := m.NewKVCache(1)
	feed := func(ids []int) *tensor.Tensor {
		t := tensor.New(1, len(ids))
		d := t.Data()
		for i, id := range ids {
			d[i] = float32(id)
		}
		return m.Next(cache, t)
	}
	logits := feed(ids)
	next := tensor.New(1, 1)
	out := make([]int, 0, n)
	for len(out) < n {
		nn.Sample(next, logits, temperature, topK, r)
		id := int(next.Data()[0])
		out, ids = append(out, id), append(ids, id)
		if len(out) == n {
			break
		}
		if cache.Pos() == ctx {
			cache.Reset()
			ids = ids[len(ids)-ctx/2:]
			logits = feed(ids)
		} else {
			logits = m.Next(cache, next)
		}
	}
	return out, time.Since(start).Seconds()
}
