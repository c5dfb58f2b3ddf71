package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/tensor"
)

// tinyCorpus writes a tree of 23 .go files (in nested directories, out of
// order) plus files that are not read: a .txt, a link to a .go file and a
// directory named like one. It returns the root and the contents of the
// .go files in sorted path order.
func tinyCorpus(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	var paths []string
	for i := range 23 {
		dir := []string{"a", "b/c", "b", "z"}[i%4]
		paths = append(paths, fmt.Sprintf("%s/f%02d.go", dir, (i*7)%23))
	}
	content := map[string]string{}
	for i, p := range paths {
		var b strings.Builder
		fmt.Fprintf(&b, "package %s\n\n", filepath.Base(filepath.Dir(p)))
		for j := range 6 + i%5 {
			fmt.Fprintf(&b, "func f%d(x int) int {\n\treturn x + %d\n}\n\n", j, i*j)
		}
		content[p] = b.String()
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content[p]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct{ path, text string }{{"a/notes.txt", "not Go"}, {"a/x.go.orig", "not Go"}} {
		if err := os.WriteFile(filepath.Join(root, f.path), []byte(f.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "dir.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "a", "f00.go"), filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	slices.Sort(paths)
	var texts []string
	for _, p := range paths {
		texts = append(texts, content[p])
	}
	return root, texts
}

func TestCorpusSplit(t *testing.T) {
	root, texts := tinyCorpus(t)
	c, err := loadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	var train, val string
	for i, s := range texts {
		if i == 9 || i == 19 {
			val += s
		} else {
			train += s
		}
	}
	if len(c.files) != 23 || c.valFiles != 2 {
		t.Fatalf("%d files, %d for validation; want 23 and 2: %q", len(c.files), c.valFiles, c.files)
	}
	if !slices.IsSorted(c.files) || c.files[0] != "a/f00.go" || c.files[22] != "z/f21.go" {
		t.Errorf("files %q: want sorted bytewise from a/f00.go to z/f21.go", c.files)
	}
	if string(c.train) != train || string(c.val) != val {
		t.Errorf("train %d bytes, val %d; want %d and %d bytes, files 9 and 19 in validation", len(c.train), len(c.val), len(train), len(val))
	}
	again, err := loadCorpus(root)
	if err != nil || !bytes.Equal(again.train, c.train) || !bytes.Equal(again.val, c.val) || !slices.Equal(again.files, c.files) {
		t.Errorf("a second load differs (err %v)", err)
	}
	if _, err := loadCorpus(filepath.Join(root, "dir.go")); err == nil {
		t.Error("a tree without .go files: no error")
	}
	if _, err := loadCorpus(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing root: no error")
	}
}

func TestVocabRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{"", "package main\n", "π ≈ 3.14 — “quotes”\t\x00", string(all), "\xff\xfe invalid UTF-8"} {
		ids := encode(s)
		if len(ids) != len(s) {
			t.Errorf("encode(%q): %d tokens, want one a byte (%d)", s, len(ids), len(s))
		}
		for _, id := range ids {
			if id < 0 || id >= vocab {
				t.Errorf("encode(%q): token %d outside [0, %d)", s, id, vocab)
			}
		}
		if got := decode(ids); got != s {
			t.Errorf("decode(encode(%q)) = %q", s, got)
		}
	}
	for _, id := range []int{-1, 256} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "decode") {
					t.Errorf("decode([%d]): panic %v, want one naming decode", id, r)
				}
			}()
			decode([]int{id})
		}()
	}
}

// TestOffsets checks SplitMix64 against its published vector (seed
// 1234567) and the offsets against testdata/offsets.json, written by
// bench/torchref/chargpt.py's offsets (numpy).
func TestOffsets(t *testing.T) {
	for k, want := range []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423} {
		if got := mix64(1234567 + uint64(k+1)*golden); got != want {
			t.Errorf("SplitMix64(1234567) output %d = %d, want %d", k+1, got, want)
		}
	}
	js, err := os.ReadFile("testdata/offsets.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Seed        string
		N, W, Batch int
		Offsets     [][]int
	}
	if err := json.Unmarshal(js, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no case in testdata/offsets.json")
	}
	for _, c := range cases {
		seed, err := strconv.ParseUint(c.Seed, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		for step, want := range c.Offsets {
			for j, w := range want {
				if got := offset(seed, step*c.Batch+j, c.N, c.W); got != w {
					t.Errorf("seed %d n %d w %d: step %d row %d at %d, the fixture %d", seed, c.N, c.W, step, j, got, w)
				}
			}
		}
	}
}

func TestBatch(t *testing.T) {
	text := []byte("abcdefghijklmnopqrstuvwxyz0123456789")
	const b, ctx, seed = 3, 5, 42
	x, y := tensor.New(b, ctx), tensor.New(b, ctx)
	for step := range 4 {
		batch(x, y, text, seed, step)
		for j := range b {
			o := offset(seed, step*b+j, len(text), ctx+1)
			if o < 0 || o+ctx+1 > len(text) {
				t.Fatalf("offset %d: the window of %d leaves a text of %d", o, ctx+1, len(text))
			}
			for i := range ctx {
				if x.At(j, i) != float32(text[o+i]) || y.At(j, i) != float32(text[o+i+1]) {
					t.Fatalf("step %d row %d col %d: x %v y %v, want the bytes at %d and %d", step, j, i, x.At(j, i), y.At(j, i), o+i, o+i+1)
				}
			}
		}
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("a text shorter than a window: no panic")
		}
	}()
	batch(x, y, text[:ctx], seed, 0)
}

// tinyArgs are the flags of a model small enough for tests.
func tinyArgs(root string, more ...string) []string {
	return append([]string{"-data", root, "-layers", "1", "-heads", "2", "-width", "16", "-context", "16", "-batch", "8",
		"-warmup", "2", "-lr", "1e-2", "-min-lr", "1e-3", "-eval-batches", "2"}, more...)
}

var lineRE = regexp.MustCompile(`^step=(\d+) tokens=\d+ seconds=\S+ tokens_per_s=\S+ lr=\S+ train_loss=(\S+) val_loss=(\S+)$`)

// losses parses the step lines of out: each step's train and validation
// loss.
func losses(t *testing.T, out string) (steps []int, train, val []float64) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s, _ := strconv.Atoi(m[1])
		tr, _ := strconv.ParseFloat(m[2], 64)
		v, _ := strconv.ParseFloat(m[3], 64)
		steps, train, val = append(steps, s), append(train, tr), append(val, v)
	}
	return steps, train, val
}

func runCmd(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	if err := run(args, &o, &e); err != nil {
		t.Fatalf("chargpt %s: %v\n%s", strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

func TestTrainLossFalls(t *testing.T) {
	root, _ := tinyCorpus(t)
	out, _ := runCmd(t, tinyArgs(root, "-steps", "60", "-eval-every", "20")...)
	steps, train, val := losses(t, out)
	if !slices.Equal(steps, []int{20, 40, 60}) {
		t.Fatalf("lines at steps %v, want 20, 40, 60:\n%s", steps, out)
	}
	// From about ln 256 = 5.5 at the start; the corpus is very regular.
	if !(train[2] < train[0] && val[2] < val[0] && val[2] < 3.5) {
		t.Errorf("losses did not fall: train %v, val %v", train, val)
	}
}

// TestTime checks that -time ends the run, at a step set after the
// calibration steps, with a final line.
func TestTime(t *testing.T) {
	root, _ := tinyCorpus(t)
	out, _ := runCmd(t, tinyArgs(root, "-time", "200ms", "-steps", "1000000000", "-eval-every", "1000000")...)
	steps, _, _ := losses(t, out)
	if len(steps) != 1 || steps[0] < calibrate || steps[0] >= 1000000 {
		t.Errorf("-time 200ms: lines at steps %v, want one at the end, after %d steps:\n%s", steps, calibrate, out)
	}
}

// TestResume checks that a run saved at step 6 and resumed gives bit for
// bit the parameters of a run of 12 steps that never stopped.
func TestResume(t *testing.T) {
	root, _ := tinyCorpus(t)
	c, err := loadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	s := defaults()
	s.Layers, s.Heads, s.Width, s.Context, s.Batch, s.Steps, s.Warmup, s.LR = 1, 2, 16, 16, 4, 12, 3, 1e-2
	straight := newTrainer(s)
	for range s.Steps {
		straight.trainStep(c.train)
	}
	first := newTrainer(s)
	for range 6 {
		first.trainStep(c.train)
	}
	path := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := first.save(path); err != nil {
		t.Fatal(err)
	}
	resumed, err := resume(path)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.step != 6 || resumed.s != s {
		t.Fatalf("resumed at step %d with %+v, want 6 and %+v", resumed.step, resumed.s, s)
	}
	for resumed.step < s.Steps {
		resumed.trainStep(c.train)
	}
	want, got := nn.Params(straight.m), nn.Params(resumed.m)
	for i := range want {
		a, b := want[i].Value().Data(), got[i].Value().Data()
		for j := range a {
			if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
				t.Fatalf("parameter %d element %d: %v resumed, %v straight", i, j, b[j], a[j])
			}
		}
	}
	// The command: a flag that contradicts the checkpoint is an error;
	// -steps may extend it.
	var e bytes.Buffer
	if err := run([]string{"-resume", path, "-width", "32"}, &bytes.Buffer{}, &e); err == nil || !strings.Contains(err.Error(), "Width 16 (flag 32)") {
		t.Errorf("-resume with another -width: error %v", err)
	}
	out, _ := runCmd(t, "-resume", path, "-data", root, "-steps", "8", "-eval-every", "2", "-eval-batches", "2")
	if steps, _, _ := losses(t, out); !slices.Equal(steps, []int{8}) {
		t.Errorf("resumed at 6 to 8, eval every 2: lines at %v, want 8:\n%s", steps, out)
	}
	if _, err := resume(filepath.Join(root, "a", "f00.go")); err == nil {
		t.Error("resume from a Go file: no error")
	}
}

func TestSample(t *testing.T) {
	root, _ := tinyCorpus(t)
	dir := t.TempDir()
	init := filepath.Join(dir, "init.safetensors")
	runCmd(t, tinyArgs(root, "-steps", "0", "-save", init)...)
	out, errOut := runCmd(t, "-resume", init, "-sample", "40", "-prompt", "func", "-topk", "5")
	if !strings.HasPrefix(out, "func") || len(out) != len("func")+40+1 {
		t.Errorf("-sample 40 after %q: %q (%d bytes), want the prompt, 40 bytes and a newline", "func", out, len(out))
	}
	if !regexp.MustCompile(`generate tokens=40 seconds=\S+ tokens_per_s=\d+`).MatchString(errOut) {
		t.Errorf("no generation line on stderr: %q", errOut)
	}
}

// TestGenerate checks generate's greedy tokens against the argmax of
// GPT.Logits over the same window, recomputed from scratch at each token,
// past the context (the cache refilled with the last Context/2 tokens).
func TestGenerate(t *testing.T) {
	s := defaults()
	s.Layers, s.Heads, s.Width, s.Context = 2, 2, 16, 8
	m := nn.NewGPT(s.model(), newRand(3))
	prompt := "func f("
	got, _ := generate(m, prompt, 20, 0, 0, newRand(4))
	window := encode(prompt)
	tp := nn.NewTape()
	tp.SetGrad(false)
	for i, g := range got {
		x := tensor.New(1, len(window))
		for j, id := range window {
			x.Data()[j] = float32(id)
		}
		tp.Reset()
		last := tensor.ArgMax(m.Logits(tp, x).Value().Slice(1, len(window)-1, len(window), 1).Reshape(1, vocab), 1, false).Item()
		if int(last) != g {
			t.Fatalf("token %d: generate %d, the argmax of Logits over %v %v", i, g, window, last)
		}
		if window = append(window, g); len(window) > s.Context {
			window = window[len(window)-s.Context/2:]
		}
	}
}

// TestPythonCrossCheck runs bench/torchref/chargpt.py (skipped without
// /usr/bin/python3 and torch) and checks that it reads the same corpus,
// draws the same batches and, started from the Go initialization, trains
// to the same losses; and that the model it saves loads into nn.GPT.
func TestPythonCrossCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("runs python3 with torch")
	}
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("%s with torch and numpy: %v", py, err)
	}
	script := filepath.Join("..", "..", "..", "bench", "torchref", "chargpt.py")
	root, _ := tinyCorpus(t)
	python := func(args ...string) string {
		out, err := exec.Command(py, append([]string{script}, args...)...).Output()
		if err != nil {
			t.Fatalf("chargpt.py %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	var d struct {
		Files, Train, Val int
		TrainSum          uint64  `json:"train_sum"`
		ValSum            uint64  `json:"val_sum"`
		Offsets           [][]int `json:"offsets"`
		ValOffsets        [][]int `json:"val_offsets"`
	}
	if err := json.Unmarshal([]byte(python("-data", root, "-describe", "-seed", "5", "-batch", "3", "-context", "16", "-steps", "4", "-eval-batches", "2")), &d); err != nil {
		t.Fatal(err)
	}
	c, err := loadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(b []byte) (s uint64) {
		for _, c := range b {
			s += uint64(c)
		}
		return s
	}
	if d.Files != len(c.files) || d.Train != len(c.train) || d.Val != len(c.val) || d.TrainSum != sum(c.train) || d.ValSum != sum(c.val) {
		t.Errorf("Python's corpus: %d files, %d+%d bytes summing to %d and %d; Go's %d, %d+%d, %d and %d",
			d.Files, d.Train, d.Val, d.TrainSum, d.ValSum, len(c.files), len(c.train), len(c.val), sum(c.train), sum(c.val))
	}
	for _, part := range []struct {
		offs [][]int
		seed uint64
		n    int
	}{{d.Offsets, 5, len(c.train)}, {d.ValOffsets, 5 ^ valStream, len(c.val)}} {
		if len(part.offs) == 0 {
			t.Fatal("Python gave no offsets")
		}
		for step, row := range part.offs {
			for j, o := range row {
				if got := offset(part.seed, step*3+j, part.n, 17); got != o {
					t.Errorf("seed %d step %d row %d: Go's offset %d, Python's %d", part.seed, step, j, got, o)
				}
			}
		}
	}

	// Training from the same initialization gives the same losses (to the
	// printed 4 decimals, give or take float32 rounding).
	dir := t.TempDir()
	init, pySaved := filepath.Join(dir, "init.safetensors"), filepath.Join(dir, "py.safetensors")
	args := tinyArgs(root, "-steps", "6", "-eval-every", "2", "-seed", "3")
	runCmd(t, append(args, "-steps", "0", "-save", init)...)
	goOut, _ := runCmd(t, args...)
	pyOut := python(append(args, "-init", init, "-save", pySaved, "-threads", "1")...)
	gs, gt, gv := losses(t, goOut)
	ps, pt, pv := losses(t, pyOut)
	if !slices.Equal(gs, []int{2, 4, 6}) || !slices.Equal(gs, ps) {
		t.Fatalf("lines at steps %v (Go) and %v (Python), want 2, 4, 6:\n%s\n%s", gs, ps, goOut, pyOut)
	}
	for i := range gs {
		if math.Abs(gt[i]-pt[i]) > 2e-3 || math.Abs(gv[i]-pv[i]) > 2e-3 {
			t.Errorf("step %d: Go train %.4f val %.4f, Python %.4f and %.4f", gs[i], gt[i], gv[i], pt[i], pv[i])
		}
	}

	// Python's trained model loads into the Go model and gives its
	// validation loss.
	s := defaults()
	s.Layers, s.Heads, s.Width, s.Context, s.Batch, s.EvalBatches, s.Seed = 1, 2, 16, 16, 8, 2, 3
	tr := newTrainer(s)
	if _, err := nn.Load(pySaved, tr.m); err != nil {
		t.Fatal(err)
	}
	if v := tr.evalLoss(c.val); math.Abs(v-pv[len(pv)-1]) > 2e-3 {
		t.Errorf("Python's model in Go: validation loss %.4f, Python's %.4f", v, pv[len(pv)-1])
	}
}

// benchText is a text of n bytes of Go-like lines for the benchmarks.
func benchText(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "func f%d(x int) int {\n\treturn x*%d + %d\n}\n\n", i, i%7, i%13)
	}
	return b.Bytes()[:n]
}

// BenchmarkTrainStep times a training step of the default model (batch
// 32, context 128) and reports tokens/s.
func BenchmarkTrainStep(b *testing.B) {
	text := benchText(1 << 20)
	tr := newTrainer(defaults())
	tr.trainStep(text)
	b.ResetTimer()
	for b.Loop() {
		tr.trainStep(text)
	}
	b.ReportMetric(float64(b.N*tr.s.Batch*tr.s.Context)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkGenerate times the generation of 500 bytes with the KV cache
// by the default model (batch 1) and reports tokens/s.
func BenchmarkGenerate(b *testing.B) {
	m := nn.NewGPT(defaults().model(), newRand(1))
	r := newRand(2)
	for b.Loop() {
		generate(m, "package main\n\n", 500, 0.8, 0, r)
	}
	b.ReportMetric(float64(b.N*500)/b.Elapsed().Seconds(), "tokens/s")
}
