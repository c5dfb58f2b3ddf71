package nn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// panicMessage returns what f panics with, or "" when it returns.
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// failAfter is a writer that takes n bytes and then fails.
type failAfter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestSaveAtomic checks that a Save that fails part way, whether at the
// start, in the header or half way through the data, leaves the previous
// file as it was and no temporary file; that a Save that succeeds replaces
// the file, keeping its permission bits; and that through a symbolic link
// it replaces the file linked to.
func TestSaveAtomic(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	a, b := cnnSmall(r), cnnSmall(r)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	if err := Save(path, a, nil); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{0, 8, 100, len(old) / 2, len(old) - 1} {
		saveHook = func(w io.Writer) io.Writer { return &failAfter{w, n} }
		err := Save(path, b, map[string]string{"k": "v"})
		saveHook = nil
		if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), path) {
			t.Fatalf("writes failing after %d bytes: error %v, want %v naming the path", n, err, errDiskFull)
		}
		if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, old) {
			t.Fatalf("writes failing after %d bytes: the previous file changed (%d bytes, was %d; %v)", n, len(now), len(old), err)
		}
		if names := dirNames(t, dir); len(names) != 1 {
			t.Fatalf("writes failing after %d bytes left %v", n, names)
		}
	}
	if err := Save(path, b, nil); err != nil {
		t.Fatal(err)
	}
	c := cnnSmall(r)
	if _, err := Load(path, c); err != nil {
		t.Fatal(err)
	}
	if err := stSameBits(StateDict(c)[0].T, StateDict(b)[0].T); err != nil {
		t.Errorf("after a successful Save: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("a successful Save left %v", names)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("mode after Save: %v (%v), want 0640", fi.Mode(), err)
		}
		link := filepath.Join(t.TempDir(), "link.safetensors")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		if err := Save(link, a, nil); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v (%v)", fi.Mode(), err)
		}
		if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, old) {
			t.Errorf("Save through a link did not write the file linked to (%v)", err)
		}
	}
}

// TestStateNil checks the named panics and errors that nil modules, Vars,
// tensors and parameters get instead of nil-pointer dereferences.
func TestStateNil(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	path := filepath.Join(t.TempDir(), "m.safetensors")
	m := cnnSmall(r)
	if err := Save(path, m, nil); err != nil {
		t.Fatal(err)
	}
	broken := NewSequential(&Linear{W: NewParam(tensor.New(2, 2))}, &Linear{})
	p := NewParam(tensor.New(2))
	panics := []struct {
		name, want string
		f          func()
	}{
		{"Save nil", "nn: Save: nil module", func() { Save(path, nil, nil) }},
		{"Save nil Var", `nn: Save: the module's "1.weight" is a nil Var`, func() { Save(path, broken, nil) }},
		{"Load nil", "nn: Load: nil module", func() { Load(path, nil) }},
		{"LoadState nil", "nn: LoadState: nil module", func() { LoadState(nil, StateDict(m)) }},
		{"LoadState nil Var", `nn: LoadState: the module's "1.weight" is a nil Var`, func() { LoadState(broken, nil) }},
		{"NewSGD", "nn: NewSGD: parameter 1 of 2 is nil", func() { NewSGD([]*Var{p, nil}, 1) }},
		{"NewAdam", "nn: NewAdam: parameter 0 of 1 is nil", func() { NewAdam([]*Var{nil}, 1) }},
		{"NewAdamW", "nn: NewAdamW: parameter 0 of 1 is nil", func() { NewAdamW([]*Var{{}}, 1) }},
		{"NewRMSProp", "nn: NewRMSProp: parameter 0 of 1 is nil", func() { NewRMSProp([]*Var{nil}, 1) }},
	}
	for _, c := range panics {
		t.Run(c.name, func(t *testing.T) {
			if msg := panicMessage(c.f); !strings.HasPrefix(msg, c.want) {
				t.Errorf("panic %q, want %q", msg, c.want)
			}
		})
	}
	ts := StateDict(m)
	ts[2].T = nil
	before := fmt.Sprint(m.Layers[0].(*Conv2D).W.value.Data()[:3])
	if err := LoadState(m, ts); err == nil || !strings.Contains(err.Error(), `tensor "3.weight" is nil`) {
		t.Errorf("LoadState with a nil tensor: error %v", err)
	}
	if after := fmt.Sprint(m.Layers[0].(*Conv2D).W.value.Data()[:3]); after != before {
		t.Error("a failed LoadState changed the model")
	}
	for _, save := range []func() error{
		func() error { return WriteSafetensors(io.Discard, ts, nil) },
		func() error { return SaveSafetensors(path, ts, nil) },
	} {
		if err := save(); err == nil || !strings.Contains(err.Error(), `tensor "3.weight" is nil`) {
			t.Errorf("writing a nil tensor: error %v", err)
		}
	}
}

// ckptData returns 100 random 8×8 images with labels 0..4.
func ckptData(r *rand.Rand) (x, y *tensor.Tensor) {
	y = tensor.New(100)
	for i := range y.Data() {
		y.Data()[i] = float32(r.IntN(5))
	}
	return tensor.RandN(r, 100, 1, 8, 8), y
}

// trainUntil trains m with opt over b, from where b is, to the end of
// epoch epochs-1, or until it has taken maxSteps steps when maxSteps >= 0,
// setting the learning rate from sched at each epoch's start.
func trainUntil(m Module, opt Optimizer, b *Batches, sched Schedule, epochs, maxSteps int) {
	tp := NewTape()
	for steps := 0; maxSteps < 0 || steps < maxSteps; steps++ {
		x, y, ok := b.Next()
		for !ok {
			if b.Epoch()+1 >= epochs {
				return
			}
			b.Reset()
			opt.SetLR(sched.At(b.Epoch()))
			x, y, ok = b.Next()
		}
		tp.Reset()
		loss := tp.CrossEntropy(m.Forward(tp, tp.Const(x)), y)
		opt.ZeroGrad()
		tp.Backward(loss)
		opt.Step()
	}
}

// checkpointOptimizers make each optimizer with settings other than the
// defaults, and with the defaults (which a checkpoint must overwrite).
var checkpointOptimizers = []struct {
	name           string
	make, defaults func([]*Var) Optimizer
}{
	{"SGD", func(ps []*Var) Optimizer {
		o := NewSGD(ps, 0.05)
		o.Momentum, o.Dampening, o.WeightDecay, o.Nesterov = 0.9, 0, 1e-3, true
		return o
	}, func(ps []*Var) Optimizer { return NewSGD(ps, 1) }},
	{"Adam", func(ps []*Var) Optimizer {
		o := NewAdam(ps, 0.01)
		o.Beta1, o.WeightDecay = 0.8, 1e-4
		return o
	}, func(ps []*Var) Optimizer { return NewAdam(ps, 1) }},
	{"AdamW", func(ps []*Var) Optimizer { return NewAdamW(ps, 0.01) }, func(ps []*Var) Optimizer { return NewAdam(ps, 1) }},
	{"AdamWGroups", func(ps []*Var) Optimizer {
		o := NewAdamWGroups(splitByDims(ps))
		o.SetLR(0.01)
		o.WeightDecay = 0.1
		return o
	}, func(ps []*Var) Optimizer {
		o := NewAdamWGroups(splitByDims(ps))
		o.WeightDecay = 0
		return o
	}},
	{"RMSProp", func(ps []*Var) Optimizer {
		o := NewRMSProp(ps, 0.005)
		o.Momentum, o.Centered, o.Alpha = 0.5, true, 0.9
		return o
	}, func(ps []*Var) Optimizer { return NewRMSProp(ps, 1) }},
}

// TestCheckpointResume trains a small CNN (convolution, batch norm, layer
// norm, linear layers) on shuffled batches for 5 epochs straight, and
// again stopping after 2 epochs, or 3 batches into the third, saving a
// checkpoint, loading it into a model, optimizer and iterator made from
// another seed and with the optimizer's defaults, and training on to the
// end of the fifth epoch: the parameters and buffers must be bit for bit
// the same.
func TestCheckpointResume(t *testing.T) {
	sched := StepLR{Base: 1, Gamma: 0.5, Every: 2}
	const batch, perEpoch = 16, 7 // 100 rows: 6 batches of 16 and one of 4
	for _, c := range checkpointOptimizers {
		for _, stop := range []int{2 * perEpoch, 2*perEpoch + 3} {
			t.Run(fmt.Sprintf("%s/after %d steps", c.name, stop), func(t *testing.T) {
				start := func(seed uint64, makeOpt func([]*Var) Optimizer) (Module, Optimizer, *Batches) {
					r := rand.New(rand.NewPCG(seed, 2))
					m := cnnSmall(r)
					x, y := ckptData(rand.New(rand.NewPCG(7, 7)))
					opt := makeOpt(Params(m))
					opt.SetLR(opt.LR() * sched.At(0))
					return m, opt, NewBatches(x, y, batch, r)
				}
				// Learning rates are the optimizer's times the schedule's.
				lrSched := func(opt Optimizer) Schedule {
					base := opt.LR()
					return scaled{sched, base}
				}
				m, opt, b := start(1, c.make)
				trainUntil(m, opt, b, lrSched(opt), 5, -1)

				m1, opt1, b1 := start(1, c.make)
				s1 := lrSched(opt1)
				trainUntil(m1, opt1, b1, s1, 5, stop)
				path := filepath.Join(t.TempDir(), "ckpt.safetensors")
				if err := SaveCheckpoint(path, m1, opt1, b1, map[string]string{"note": "x"}); err != nil {
					t.Fatal(err)
				}
				m2, opt2, b2 := start(99, c.defaults)
				meta, err := LoadCheckpoint(path, m2, opt2, b2)
				if err != nil {
					t.Fatal(err)
				}
				if len(meta) != 1 || meta["note"] != "x" {
					t.Errorf("metadata %v, want only note=x", meta)
				}
				if b2.Epoch() != stop/perEpoch-boolInt(stop%perEpoch == 0) {
					t.Errorf("resumed in epoch %d", b2.Epoch())
				}
				trainUntil(m2, opt2, b2, s1, 5, -1)

				want, got := StateDict(m), StateDict(m2)
				for i := range want {
					if err := stSameBits(got[i].T, want[i].T); err != nil {
						t.Errorf("%s: %v", want[i].Name, err)
					}
				}
			})
		}
	}
}

// scaled is a Schedule times a base learning rate.
type scaled struct {
	s    Schedule
	base float32
}

func (s scaled) At(epoch int) float32 { return s.base * s.s.At(epoch) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// otherOptimizer is an Optimizer of another package's kind.
type otherOptimizer struct{ Optimizer }

// TestCheckpointErrors checks that LoadCheckpoint refuses what does not
// match, changing nothing, and that SaveCheckpoint refuses what it cannot
// keep, writing nothing.
func TestCheckpointErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := cnnSmall(r)
	x, y := ckptData(r)
	opt := NewAdam(Params(m), 0.01)
	b := NewBatches(x, y, 16, r)
	trainUntil(m, opt, b, StepLR{Base: 0.01, Gamma: 1, Every: 1}, 2, 10)
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	if err := SaveCheckpoint(path, m, opt, b, nil); err != nil {
		t.Fatal(err)
	}
	noBatches := filepath.Join(dir, "nobatches.safetensors")
	if err := SaveCheckpoint(noBatches, m, opt, nil, nil); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.safetensors")
	if err := Save(plain, m, nil); err != nil {
		t.Fatal(err)
	}

	fresh := func() (Module, *Batches) {
		r := rand.New(rand.NewPCG(5, 5))
		return cnnSmall(r), NewBatches(x, y, 16, r)
	}
	m2, b2 := fresh()
	tests := []struct {
		name, path, want string
		m                Module
		opt              Optimizer
		b                *Batches
	}{
		{"optimizer type", path, "optimizer: the file's is Adam, this one SGD", m2, NewSGD(Params(m2), 1), b2},
		{"optimizer parameters", path, "optimizer: the file's has 12 parameters, this one 2", m2, NewAdam(Params(m2)[:2], 1), b2},
		{"other optimizer", path, "optimizer: nn.otherOptimizer", m2, otherOptimizer{NewAdam(Params(m2), 1)}, b2},
		{"batch size", path, "batch iterator: batches of 16 rows of 100, the iterator's are of 8 rows of 100", m2, NewAdam(Params(m2), 1), NewBatches(x, y, 8, r)},
		{"sequential", path, "batch iterator: shuffled true, the iterator false", m2, NewAdam(Params(m2), 1), NewBatches(x, y, 16, nil)},
		{"no iterator state", noBatches, `no batch iterator state ("lanes.batches")`, m2, NewAdam(Params(m2), 1), b2},
		{"not a checkpoint", plain, `not a checkpoint (no "lanes.checkpoint" in its metadata)`, m2, nil, nil},
		{"model", path, `model: "0.weight" has shape [4 1 3 3], the model [2 2]`, NewSequential(NewLinear(2, 2, r)), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := StateDict(tt.m)[0].T.Clone()
			epoch := -1
			if tt.b != nil {
				epoch = tt.b.Epoch()
			}
			_, err := LoadCheckpoint(tt.path, tt.m, tt.opt, tt.b)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("error %v, want one naming the path and containing %q", err, tt.want)
			}
			if err := stSameBits(StateDict(tt.m)[0].T, before); err != nil {
				t.Errorf("the failed load changed the model: %v", err)
			}
			if tt.opt != nil && tt.opt.LR() != 1 {
				t.Errorf("the failed load changed the learning rate to %v", tt.opt.LR())
			}
			if tt.b != nil && tt.b.Epoch() != epoch {
				t.Errorf("the failed load moved the iterator to epoch %d", tt.b.Epoch())
			}
		})
	}

	// The model part of a checkpoint loads with Load; the optimizer and
	// the iterator may be left out.
	m3, _ := fresh()
	if _, err := Load(path, m3); err != nil {
		t.Errorf("Load of a checkpoint: %v", err)
	}
	if _, err := LoadCheckpoint(path, m3, nil, nil); err != nil {
		t.Errorf("LoadCheckpoint of the model alone: %v", err)
	}
	if err := stSameBits(StateDict(m3)[0].T, StateDict(m)[0].T); err != nil {
		t.Errorf("model after Load: %v", err)
	}

	for _, c := range []struct {
		name, want string
		save       func(path string) error
	}{
		{"lanes metadata", `metadata key "lanes.x" starts with "lanes."`, func(p string) error {
			return SaveCheckpoint(p, m, opt, b, map[string]string{"lanes.x": "1"})
		}},
		{"other optimizer", "optimizer nn.otherOptimizer", func(p string) error { return SaveCheckpoint(p, m, otherOptimizer{opt}, b, nil) }},
		{"nil optimizer", "optimizer *nn.Adam", func(p string) error { return SaveCheckpoint(p, m, (*Adam)(nil), b, nil) }},
	} {
		p := filepath.Join(dir, "new.safetensors")
		if err := c.save(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s: the failed SaveCheckpoint wrote a file", c.name)
		}
	}
	if msg := panicMessage(func() { SaveCheckpoint(path, nil, nil, nil, nil) }); msg != "nn: SaveCheckpoint: nil module" {
		t.Errorf("SaveCheckpoint(nil module) panic %q", msg)
	}
	if msg := panicMessage(func() { LoadCheckpoint(path, nil, nil, nil) }); msg != "nn: LoadCheckpoint: nil module" {
		t.Errorf("LoadCheckpoint(nil module) panic %q", msg)
	}
}

func TestFashionNilRand(t *testing.T) {
	for name, f := range map[string]func(){
		"nn: FashionMLP: nil rand source (give a seeded *rand.Rand)": func() { FashionMLP(nil) },
		"nn: FashionCNN: nil rand source (give a seeded *rand.Rand)": func() { FashionCNN(nil) },
	} {
		if msg := panicMessage(f); msg != name {
			t.Errorf("panic %q, want %q", msg, name)
		}
	}
}
