// Command chargpt trains a character-level GPT (nn.GPT) on the text of
// Go's own standard library, every .go file under $(go env GOROOT)/src,
// and samples text from it with the KV cache.
//
// Usage:
//
//	go run ./nn/cmd/chargpt [-steps N | -time 10m] [-save FILE] [-sample N] [flags]
//	go run ./nn/cmd/chargpt -resume FILE [-steps N] [-save FILE] [-sample N]
//	go run ./nn/cmd/chargpt -resume FILE -sample 500 -prompt 'func main() {' -temperature 0.8 -topk 20
//
// The model is nanoGPT's (nn.GPT, learned positions, the head tied to the
// token embedding), by default 4 layers of width 128 with 4 heads and a
// context of 128 bytes, trained on batches of 32 windows with AdamW
// (weight decay 0.1 on the Linears' matrices only: nn.DecayGroups, β =
// (0.9, 0.99)), gradients clipped to global norm 1, and a learning rate
// warming up linearly over 100 steps to 1e-3 and decaying along a cosine
// to 1e-4 at the last step (nn.WarmupCosine). The tokens are bytes (a
// vocabulary of 256); the files are split 90/10 by file, every tenth file
// in sorted order going to validation; the batches are windows at offsets
// drawn by SplitMix64 from the seed (data.go holds the exact rules, which
// bench/torchref/chargpt.py, the PyTorch reference, applies too).
//
// Every -eval-every steps, and at the last, it prints a line
//
//	step=S tokens=N seconds=T tokens_per_s=R lr=L train_loss=A val_loss=V
//
// (see trainer.train) and, with -save, writes a checkpoint (the model, the
// optimizer's state, the settings and the step: nn.SaveCheckpoint,
// replaced atomically). On a terminal a progress bar shows tokens/s and the
// losses as it runs. -resume goes on from such a checkpoint with its
// settings (flags that set them must agree, except -eval-every,
// -eval-batches and -steps, which may extend the run): the parameters
// are bit for bit those of a run that never stopped (with -dropout 0, the
// default; dropout's draws are not kept). -steps 0 -save FILE writes the initialization alone (the PyTorch
// script can start from it: -init FILE).
//
// -time D trains for about D: after the first 12 steps it sets -steps
// from their speed, so that the cosine schedule ends when the time does.
//
// -sample N then generates N bytes after -prompt with the KV cache
// (nn.GPT.Next, batch 1; nn.Sample with -temperature and -topk), prints
// them on stdout and, on stderr,
//
//	generate tokens=N seconds=T tokens_per_s=R
//
// -threads N sets GOMAXPROCS (the kernels' worker pool uses that many
// threads).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "chargpt:", err)
		os.Exit(1)
	}
}

// options are the flags that are not settings.
type options struct {
	data, save, resume, prompt string
	duration                   time.Duration
	threads, sample, topK      int
	temperature                float32
}

// f32 is a float32 flag.
type f32 struct{ p *float32 }

func (f f32) String() string {
	if f.p == nil {
		return "0"
	}
	return strconv.FormatFloat(float64(*f.p), 'g', -1, 32)
}

func (f f32) Set(s string) error {
	v, err := strconv.ParseFloat(s, 32)
	*f.p = float32(v)
	return err
}

// parse reads args into s and o.
func parse(args []string, s *settings, o *options, stderr io.Writer) error {
	fs := flag.NewFlagSet("chargpt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&s.Steps, "steps", s.Steps, "training steps in all (the cosine schedule ends at the last)")
	fs.IntVar(&s.Batch, "batch", s.Batch, "windows per batch")
	fs.IntVar(&s.Context, "context", s.Context, "context length in bytes (window size)")
	fs.IntVar(&s.Layers, "layers", s.Layers, "transformer blocks")
	fs.IntVar(&s.Heads, "heads", s.Heads, "attention heads")
	fs.IntVar(&s.Width, "width", s.Width, "model width")
	fs.Var(f32{&s.Dropout}, "dropout", "dropout probability (resumes are exact only with 0)")
	fs.BoolVar(&s.RoPE, "rope", s.RoPE, "rotary position embeddings instead of learned ones")
	fs.Var(f32{&s.LR}, "lr", "peak learning rate")
	fs.Var(f32{&s.MinLR}, "min-lr", "learning rate at the end of the cosine decay")
	fs.IntVar(&s.Warmup, "warmup", s.Warmup, "steps of linear warmup")
	fs.Var(f32{&s.WeightDecay}, "weight-decay", "AdamW weight decay of the Linears' matrices")
	fs.Var(f32{&s.Beta2}, "beta2", "AdamW β₂")
	fs.Var(f32{&s.Clip}, "clip", "clip the gradients' global norm to this")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "seed of the initialization and the batches")
	fs.IntVar(&s.EvalEvery, "eval-every", s.EvalEvery, "steps between evaluations (and checkpoints)")
	fs.IntVar(&s.EvalBatches, "eval-batches", s.EvalBatches, "validation batches per evaluation")
	fs.StringVar(&o.data, "data", o.data, "directory of the corpus (default $(go env GOROOT)/src)")
	fs.StringVar(&o.save, "save", o.save, "write checkpoints (safetensors) to this file")
	fs.StringVar(&o.resume, "resume", o.resume, "resume from this checkpoint, with its settings")
	fs.DurationVar(&o.duration, "time", o.duration, "train for about this long (sets -steps from the first steps' speed)")
	fs.IntVar(&o.threads, "threads", o.threads, "GOMAXPROCS (0: leave it)")
	fs.IntVar(&o.sample, "sample", o.sample, "after training, generate this many bytes with the KV cache")
	fs.StringVar(&o.prompt, "prompt", o.prompt, "text the sample continues")
	fs.Var(f32{&o.temperature}, "temperature", "sampling temperature (0: the most likely byte)")
	fs.IntVar(&o.topK, "topk", o.topK, "sample among the k most likely bytes (0: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return nil
}

// check returns an error for settings no model or run can have.
func (s settings) check() error {
	switch {
	case s.Context <= 0 || s.Layers <= 0 || s.Heads <= 0 || s.Width <= 0 || s.Batch <= 0:
		return fmt.Errorf("-context %d -layers %d -heads %d -width %d -batch %d: each must be > 0", s.Context, s.Layers, s.Heads, s.Width, s.Batch)
	case s.Width%s.Heads != 0:
		return fmt.Errorf("-width %d does not split into -heads %d", s.Width, s.Heads)
	case s.RoPE && s.Width/s.Heads%2 != 0:
		return fmt.Errorf("-rope needs an even head size (-width/-heads = %d)", s.Width/s.Heads)
	case !(s.Dropout >= 0 && s.Dropout < 1):
		return fmt.Errorf("-dropout %v outside [0, 1)", s.Dropout)
	case s.Steps < 0 || s.Warmup < 0 || s.EvalEvery <= 0 || s.EvalBatches <= 0:
		return fmt.Errorf("-steps %d -warmup %d -eval-every %d -eval-batches %d: want steps, warmup >= 0 and the others > 0", s.Steps, s.Warmup, s.EvalEvery, s.EvalBatches)
	case !(s.Clip >= 0):
		return fmt.Errorf("-clip %v: want >= 0", s.Clip)
	}
	return nil
}

// run is the command: args are its flags.
func run(args []string, stdout, stderr io.Writer) error {
	s, o := defaults(), options{temperature: 0.8, prompt: "package main\n\n"}
	if err := parse(args, &s, &o, stderr); err != nil {
		return err
	}
	var t *trainer
	if o.resume != "" {
		var err error
		if t, err = resume(o.resume); err != nil {
			return err
		}
		// The flags again, over the file's settings: any that differ
		// were set to another value.
		fileS, o2 := t.s, options{}
		if err := parse(args, &t.s, &o2, io.Discard); err != nil {
			return err
		}
		if err := sameSettings(fileS, t.s); err != nil {
			return fmt.Errorf("%s: %w", o.resume, err)
		}
		s = t.s
	}
	if err := s.check(); err != nil {
		return err
	}
	if o.threads > 0 {
		runtime.GOMAXPROCS(o.threads)
	}
	if t == nil {
		t = newTrainer(s)
	}
	if t.step < t.s.Steps || o.duration > 0 {
		root := o.data
		if root == "" {
			var err error
			if root, err = goSource(); err != nil {
				return err
			}
		}
		c, err := loadCorpus(root)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "corpus %s: %d files, %d training bytes, %d validation bytes (%d files)\n",
			root, len(c.files), len(c.train), len(c.val), c.valFiles)
		ro := runOptions{save: o.save, duration: o.duration}
		if f, ok := stderr.(*os.File); ok {
			ro.bar = f
		}
		if err := t.train(c, ro, stdout); err != nil {
			return err
		}
	} else if o.save != "" && o.save != o.resume {
		if err := t.save(o.save); err != nil {
			return err
		}
	}
	if o.sample > 0 {
		if !(o.temperature >= 0) || o.topK < 0 {
			return fmt.Errorf("-temperature %v -topk %d: want both >= 0", o.temperature, o.topK)
		}
		ids, secs := generate(t.m, o.prompt, o.sample, o.temperature, o.topK, rand.New(rand.NewPCG(t.s.Seed, 2)))
		fmt.Fprintf(stdout, "%s%s\n", o.prompt, decode(ids))
		fmt.Fprintf(stderr, "generate tokens=%d seconds=%.3f tokens_per_s=%.0f\n", len(ids), secs, float64(len(ids))/secs)
	}
	return nil
}

// sameSettings returns an error naming the fields in which b differs from
// a, aside from those a resumed run may change without changing its
// trajectory (EvalEvery, EvalBatches) and Steps, which may extend it.
func sameSettings(a, b settings) error {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var diff []string
	for i := range va.NumField() {
		name := va.Type().Field(i).Name
		if name != "Steps" && name != "EvalEvery" && name != "EvalBatches" && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			diff = append(diff, fmt.Sprintf("%s %v (flag %v)", name, va.Field(i).Interface(), vb.Field(i).Interface()))
		}
	}
	if len(diff) > 0 {
		return fmt.Errorf("the checkpoint was trained with %s: only -steps, -eval-every and -eval-batches may change on resume", strings.Join(diff, ", "))
	}
	return nil
}
