package dispatch

import (
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func calibratedExample() Thresholds {
	return Thresholds{
		MatMul:     OpRules{Host: Rule{GPU: true, MinFLOPs: 2.9e9, FLOPsPerByte: 31.5}, Device: Rule{GPU: true, MinFLOPs: 6.2e7}},
		Conv2D:     OpRules{Host: Rule{}, Device: Rule{GPU: true, MinFLOPs: 1.1e8}},
		Calibrated: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
		CPU:        "test CPU, 2 threads, avx512",
		Device:     "test GPU",
		Margin:     0.1,
	}
}

func TestThresholdsRoundTrip(t *testing.T) {
	for _, want := range []Thresholds{DefaultThresholds(), CPUOnlyThresholds(), calibratedExample()} {
		data, err := MarshalThresholds(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseThresholds(data)
		if err != nil {
			t.Fatalf("ParseThresholds(%s): %v", data, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s\n%s", diff, data)
		}
	}
	if _, err := MarshalThresholds(Thresholds{MatMul: OpRules{Host: Rule{GPU: true, MinFLOPs: math.NaN()}}}); err == nil {
		t.Error("MarshalThresholds wrote a NaN threshold")
	}
}

// validFile is a well-formed file that the rejection cases spoil one way each.
const validFile = `{"version": 1, "calibrated": "2025-06-01T12:00:00Z", "cpu": "c", "device": "d", "margin": 0.1,
 "matmul": {"host": {"gpu": true, "min_flops": 2.9e9, "flops_per_byte": 31.5}, "device": {"gpu": true, "min_flops": 6.2e7, "flops_per_byte": 0}},
 "conv2d": {"host": {"gpu": false}, "device": {"gpu": true, "min_flops": 1.1e8, "flops_per_byte": 0}}}`

var malformedFiles = []struct{ name, data, why string }{
	{"empty", ``, "EOF"},
	{"not JSON", `thresholds: 1e9`, "invalid character"},
	{"array", `[1, 2]`, "cannot unmarshal array"},
	{"null", `null`, "no version"},
	{"no version", strings.Replace(validFile, `"version": 1,`, ``, 1), "no version"},
	{"version 2", strings.Replace(validFile, `"version": 1`, `"version": 2`, 1), "version 2, want 1"},
	{"version string", strings.Replace(validFile, `"version": 1`, `"version": "1"`, 1), "cannot unmarshal string"},
	{"version fraction", strings.Replace(validFile, `"version": 1`, `"version": 1.5`, 1), "cannot unmarshal number 1.5"},
	{"no matmul", `{"version": 1, "conv2d": {"host": {"gpu": false}, "device": {"gpu": false}}}`, "no matmul"},
	{"no conv2d host", strings.Replace(validFile, `"host": {"gpu": false}, `, ``, 1), "no conv2d.host"},
	{"rule without gpu", strings.Replace(validFile, `{"gpu": false}`, `{}`, 1), "conv2d.host: no gpu"},
	{"gpu string", strings.Replace(validFile, `{"gpu": false}`, `{"gpu": "no"}`, 1), "cannot unmarshal string"},
	{"gpu without min_flops", strings.Replace(validFile, `"min_flops": 6.2e7, `, ``, 1), "needs min_flops"},
	{"gpu without flops_per_byte", strings.Replace(validFile, `, "flops_per_byte": 31.5`, ``, 1), "needs min_flops and flops_per_byte"},
	{"negative", strings.Replace(validFile, `2.9e9`, `-2.9e9`, 1), "matmul.host.min_flops = -2.9e+09"},
	{"negative per byte", strings.Replace(validFile, `31.5`, `-1`, 1), "flops_per_byte = -1"},
	{"overflow", strings.Replace(validFile, `2.9e9`, `1e999`, 1), "cannot unmarshal number 1e999"},
	{"NaN", strings.Replace(validFile, `2.9e9`, `NaN`, 1), "invalid character"},
	{"NaN string", strings.Replace(validFile, `2.9e9`, `"NaN"`, 1), "cannot unmarshal string"},
	{"unknown field", strings.Replace(validFile, `"margin"`, `"margins"`, 1), `unknown field "margins"`},
	{"unknown rule field", strings.Replace(validFile, `{"gpu": false}`, `{"gpu": false, "max_flops": 1}`, 1), `unknown field "max_flops"`},
	{"cpu rule with numbers", strings.Replace(validFile, `{"gpu": false}`, `{"gpu": false, "min_flops": 1}`, 1), `with "gpu": false`},
	{"negative margin", strings.Replace(validFile, `0.1`, `-0.1`, 1), "margin = -0.1"},
	{"bad time", strings.Replace(validFile, `2025-06-01T12:00:00Z`, `yesterday`, 1), "calibrated"},
	{"trailing data", validFile + ` {}`, "data after the object"},
	{"truncated", validFile[:len(validFile)-3], "unexpected EOF"},
	{"key case", strings.Replace(validFile, `"version"`, `"Version"`, 1), `key "Version": keys are case-sensitive, want "version"`},
	{"nested key case", strings.Replace(validFile, `"min_flops": 2.9e9`, `"MIN_FLOPS": 2.9e9`, 1), `key "matmul.host.MIN_FLOPS": keys are case-sensitive`},
	{"object key case", strings.Replace(validFile, `"conv2d"`, `"Conv2D"`, 1), `key "Conv2D": keys are case-sensitive, want "conv2d"`},
	{"key folded by Unicode", strings.Replace(validFile, `"flops_per_byte": 31.5`, `"flop\u017f_per_byte": 31.5`, 1), "key \"matmul.host.flop\u017f_per_byte\": keys are case-sensitive"},
	{"duplicate key", strings.Replace(validFile, `"margin": 0.1`, `"margin": 0.1, "margin": 0.2`, 1), `duplicate key "margin"`},
	{"duplicate key in another case", strings.Replace(validFile, `"margin": 0.1`, `"margin": 0.1, "MARGIN": 0.2`, 1), `key "MARGIN": keys are case-sensitive`},
	{"duplicate escaped key", strings.Replace(validFile, `"margin": 0.1`, `"margin": 0.1, "m\u0061rgin": 0.2`, 1), `duplicate key "margin"`},
	{"duplicate nested key", strings.Replace(validFile, `{"gpu": false}`, `{"gpu": false, "gpu": false}`, 1), `duplicate key "conv2d.host.gpu"`},
	{"duplicate rule", strings.Replace(validFile, `"host": {"gpu": false}`, `"host": {"gpu": false}, "host": {"gpu": false}`, 1), `duplicate key "conv2d.host"`},
	{"duplicate op", validFile[:len(validFile)-1] + `, "matmul": {"host": {"gpu": false}, "device": {"gpu": false}}}`, `duplicate key "matmul"`},
}

func TestParseThresholdsRejects(t *testing.T) {
	if _, err := ParseThresholds([]byte(validFile)); err != nil {
		t.Fatalf("the valid file is rejected: %v", err)
	}
	for _, c := range malformedFiles {
		_, err := ParseThresholds([]byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.why)
		}
	}
}

// TestCommittedThresholdsLoad loads the thresholds files committed to the
// repository (bench/results) and the examples in the documentation
// (README.md and docs/*.md, where docs/placement.md shows one): the strict
// loader still reads what calibrate wrote.
func TestCommittedThresholdsLoad(t *testing.T) {
	files, _ := filepath.Glob("../bench/results/*/thresholds.json")
	if len(files) == 0 {
		t.Skip("no committed thresholds files (not in the repository?)")
	}
	for _, f := range files {
		got, err := LoadThresholds(f)
		if err != nil || got.Calibrated.IsZero() || got.Device == "" || got == DefaultThresholds() {
			t.Errorf("LoadThresholds(%s) = %+v, %v", f, got, err)
		}
	}
	docs, _ := filepath.Glob("../docs/*.md")
	n := 0
	for _, doc := range append([]string{"../README.md"}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range strings.Split(string(text), "```json\n")[1:] {
			block, _, _ = strings.Cut(block, "```")
			if !strings.Contains(block, `"matmul"`) {
				continue
			}
			n++
			if _, err := ParseThresholds([]byte(block)); err != nil {
				t.Errorf("%s: thresholds example: %v\n%s", doc, err, block)
			}
		}
	}
	if n == 0 {
		t.Error("no thresholds example found in README.md or docs/*.md")
	}
}

// env returns a getenv reading m.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadInstalled(t *testing.T) {
	dir := t.TempDir()
	cfg := func() (string, error) { return dir, nil }
	good := filepath.Join(dir, "good.json")
	if err := WriteThresholds(good, calibratedExample()); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version": 7}`), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(validFile+strings.Repeat(" ", maxThresholdsFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		getenv   map[string]string
		config   func() (string, error)
		want     Thresholds
		source   string // a substring of the source
		warnings int
	}{
		{"no file at the default path", nil, cfg, DefaultThresholds(), "built-in defaults (no " + filepath.Join(dir, "lanes", "thresholds.json"), 0},
		{"no config dir", nil, func() (string, error) { return "", errors.New("$HOME is not defined") }, DefaultThresholds(), "no config directory", 0},
		{"env file", map[string]string{ThresholdsEnv: good}, cfg, calibratedExample(), good, 0},
		{"env default", map[string]string{ThresholdsEnv: "default"}, cfg, DefaultThresholds(), ThresholdsEnv + "=default", 0},
		{"env missing file", map[string]string{ThresholdsEnv: filepath.Join(dir, "none.json")}, cfg, DefaultThresholds(), "rejected", 1},
		{"env bad file", map[string]string{ThresholdsEnv: bad}, cfg, DefaultThresholds(), bad + " rejected", 1},
		{"env oversized file", map[string]string{ThresholdsEnv: big}, cfg, DefaultThresholds(), "rejected", 1},
		{"env directory", map[string]string{ThresholdsEnv: dir}, cfg, DefaultThresholds(), "rejected", 1},
	} {
		var warnings []string
		warn := func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) }
		got := loadInstalled(env(c.getenv), c.config, warn)
		if diff := cmp.Diff(c.want, got.t); diff != "" {
			t.Errorf("%s: thresholds (-want +got):\n%s", c.name, diff)
		}
		if !strings.Contains(got.source, c.source) {
			t.Errorf("%s: source %q, want it to contain %q", c.name, got.source, c.source)
		}
		if len(warnings) != c.warnings {
			t.Errorf("%s: warnings %q, want %d", c.name, warnings, c.warnings)
		}
	}
	// The default path is read when it exists, and every malformed file
	// there gives one warning and the defaults.
	path := filepath.Join(dir, "lanes", "thresholds.json")
	if err := WriteThresholds(path, calibratedExample()); err != nil {
		t.Fatal(err)
	}
	if got := loadInstalled(env(nil), cfg, t.Fatalf); got.source != path || got.t.Device != "test GPU" {
		t.Errorf("default path: got %+v", got)
	}
	for _, c := range malformedFiles {
		if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		var warnings []string
		got := loadInstalled(env(nil), cfg, func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) })
		if len(warnings) != 1 || !strings.Contains(warnings[0], c.why) || got.t != DefaultThresholds() {
			t.Errorf("%s at the default path: warnings %q, thresholds %+v", c.name, warnings, got.t)
		}
	}
}

func TestWriteThresholds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "thresholds.json")
	want := calibratedExample()
	for range 2 { // creates, then replaces
		if err := WriteThresholds(path, want); err != nil {
			t.Fatal(err)
		}
		got, err := LoadThresholds(path)
		if err != nil || got != want {
			t.Fatalf("LoadThresholds = %+v, %v; want %+v", got, err, want)
		}
		want = CPUOnlyThresholds()
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("file mode: %v %v", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// TestThresholdsFileWarnsOnce starts the process-wide loading afresh with
// LANES_THRESHOLDS at a malformed file: placing work and printing the
// report many times must log exactly one warning and use the defaults.
func TestThresholdsFileWarnsOnce(t *testing.T) {
	if prev := SetPlacer(nil); prev != nil {
		defer SetPlacer(prev)
	}
	saved := currentThresholds() // loaded, so that the restore below leaves thresholds in force
	defer func() { current.Store(saved) }()
	var logged strings.Builder
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)

	bad := filepath.Join(t.TempDir(), "thresholds.json")
	if err := os.WriteFile(bad, []byte(`{"version": 1, "matmul": {"host": {"gpu": true, "min_flops": -1, "flops_per_byte": 0}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ThresholdsEnv, bad)
	current.Store(nil)
	loadCurrent = sync.Once{}
	var wg sync.WaitGroup
	for range 4 { // concurrent first calls: still one load, one warning
		wg.Add(1)
		go func() {
			defer wg.Done()
			PlaceOp(OpMatMul, false, 4096, 4096, 4096)
			PlaceOp(OpConv2D, true, 8, 64, 56, 56, 64, 3, 3, 1, 1)
		}()
	}
	wg.Wait()
	r := Report()
	got, src := ActiveThresholds()
	if n := strings.Count(logged.String(), "lanes: thresholds file"); n != 1 {
		t.Errorf("%d warnings logged, want 1:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), bad) || !strings.Contains(logged.String(), "matmul.host.min_flops = -1") {
		t.Errorf("the warning does not say which file and what is wrong:\n%s", logged.String())
	}
	if got != DefaultThresholds() || src != "built-in defaults ("+bad+" rejected: see the log)" {
		t.Errorf("ActiveThresholds = %+v, %q", got, src)
	}
	if !strings.Contains(r, "placement: thresholds from built-in defaults ("+bad+" rejected") ||
		!strings.Contains(r, "MatMul host "+DefaultThresholds().MatMul.Host.String()) {
		t.Errorf("Report:\n%s", r)
	}
	if PlaceOp(OpMatMul, false, 4096, 4096, 4096) != OnGPU || PlaceOp(OpMatMul, false, 1024, 1024, 1024) != OnCPU {
		t.Error("the defaults are not in force")
	}
}

func TestDefaultThresholdsPlace(t *testing.T) {
	def := DefaultThresholds()
	cpu := CPUOnlyThresholds()
	for _, c := range []struct {
		op       Op
		resident bool
		shape    []int
		want     Target
	}{
		{OpMatMul, false, []int{256, 256, 256}, OnCPU},
		{OpMatMul, false, []int{1024, 1024, 1024}, OnCPU},
		{OpMatMul, false, []int{4096, 4096, 4096}, OnGPU},
		{OpMatMul, false, []int{100000, 100000, 1}, OnCPU}, // an outer product: all copying, little work
		{OpMatMul, true, []int{512, 512, 512}, OnCPU},
		{OpMatMul, true, []int{1024, 1024, 1024}, OnGPU},
		{OpMatMul, true, []int{64, 64, 64, 64}, OnCPU},
		{OpConv2D, false, []int{8, 64, 56, 56, 64, 3, 3, 1, 1}, OnCPU},
		{OpConv2D, true, []int{8, 64, 56, 56, 64, 3, 3, 1, 1}, OnGPU},
		{OpConv2D, true, []int{1, 3, 32, 32, 16, 3, 3}, OnCPU},
		{OpConv2D, false, []int{256, 256, 56, 56, 256, 3, 3, 1, 1}, OnGPU},
	} {
		w := WorkOf(c.op, c.shape...)
		w.Resident = c.resident
		if got := def.Place(w); got != c.want {
			t.Errorf("defaults: %v resident=%v %v (%.3g FLOPs, %.3g bytes) -> %v, want %v", c.op, c.resident, c.shape, w.FLOPs, w.Bytes, got, c.want)
		}
		if got := cpu.Place(w); got != OnCPU {
			t.Errorf("CPU-only: %v %v -> %v", c.op, c.shape, got)
		}
	}
	if (&def).Place(Work{Op: Op(9), FLOPs: 1e20}) != OnCPU {
		t.Error("an unknown op was placed on the GPU")
	}
}

func TestPlaceFollowsThresholds(t *testing.T) {
	if prev := SetPlacer(nil); prev != nil {
		defer SetPlacer(prev)
	}
	prevT, prevSrc := SetThresholds(calibratedExample(), "test file")
	defer SetThresholds(prevT, prevSrc)
	if got, src := ActiveThresholds(); src != "test file" || got != calibratedExample() {
		t.Fatalf("ActiveThresholds = %+v, %q", got, src)
	}
	// MatMul host: 2.9e9 + 31.5·bytes; device: 6.2e7. Conv2D host: CPU.
	for _, c := range []struct {
		op       Op
		resident bool
		shape    []int
		want     Target
	}{
		{OpMatMul, false, []int{1024, 1024, 1024}, OnCPU}, // 2.1e9 FLOPs
		{OpMatMul, false, []int{1536, 1536, 1536}, OnGPU}, // 7.2e9 >= 2.9e9 + 31.5·2.8e7
		{OpMatMul, true, []int{256, 256, 256}, OnCPU},     // 3.4e7
		{OpMatMul, true, []int{384, 384, 384}, OnGPU},     // 1.1e8
		{OpConv2D, false, []int{256, 256, 56, 56, 256, 3, 3, 1, 1}, OnCPU},
		{OpConv2D, true, []int{8, 64, 56, 56, 64, 3, 3, 1, 1}, OnGPU},
	} {
		if got := PlaceOp(c.op, c.resident, c.shape...); got != c.want {
			t.Errorf("PlaceOp(%v, %v, %v) = %v, want %v", c.op, c.resident, c.shape, got, c.want)
		}
	}
	r := Report()
	for _, want := range []string{
		"placement: thresholds from test file (calibrated 2025-06-01 on test CPU, 2 threads, avx512, test GPU): ",
		"MatMul host gpu from 2.9e+09 FLOPs + 31.5/byte, device gpu from 6.2e+07 FLOPs; Conv2D host cpu, device gpu from 1.1e+08 FLOPs",
	} {
		if !strings.Contains(r, want) {
			t.Errorf("Report lacks %q:\n%s", want, r)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		_ = PlaceOp(OpConv2D, false, 8, 64, 56, 56, 64, 3, 3, 1, 1)
		_ = PlaceOp(OpMatMul, true, 512, 512, 512)
		_ = Place(Work{Op: OpMatMul, FLOPs: 1e9, Bytes: 1e6})
	}); n != 0 {
		t.Errorf("PlaceOp and Place allocate %v times", n)
	}
}

func TestWorkOf(t *testing.T) {
	for _, c := range []struct {
		op           Op
		shape        []int
		flops, bytes float64
	}{
		// The figures package tensor's tests see for the same calls.
		{OpMatMul, []int{32, 32, 32}, 2 * 32 * 32 * 32, 4 * 3 * 32 * 32},
		{OpConv2D, []int{1, 2, 16, 16, 3, 3, 3}, 2 * 3 * 196 * 18, 4 * (2*16*16 + 3*2*9 + 3*196)},
		{OpMatMul, []int{2, 3, 4, 5}, 2 * 5 * 2 * 3 * 4, 4 * 5 * (2*4 + 4*3 + 2*3)},
		{OpConv2D, []int{32, 3, 224, 224, 64, 7, 7, 2, 3}, 2 * 32 * 64 * 112 * 112 * 3 * 49, 4 * (32*3*224*224 + 64*3*49 + 32*64*112*112)},
	} {
		w := WorkOf(c.op, c.shape...)
		if w.Op != c.op || w.FLOPs != c.flops || w.Bytes != c.bytes || w.Resident {
			t.Errorf("WorkOf(%v, %v) = %+v, want %g FLOPs, %g bytes", c.op, c.shape, w, c.flops, c.bytes)
		}
	}
	for _, c := range []struct {
		op    Op
		shape []int
		panic string
	}{
		{OpMatMul, []int{2, 3}, "2 dimensions"},
		{OpMatMul, []int{2, 0, 3}, "dimension 1 is 0"},
		{OpConv2D, []int{1, 1, 4, 4, 1, 3}, "6 dimensions"},
		{OpConv2D, []int{1, 1, 4, 4, 1, 3, 3, 1, -1}, "dimension 8 is -1"},
		{OpConv2D, []int{1, 1, 2, 2, 1, 3, 3}, "larger than the padded input"},
		{Op(9), []int{1, 1, 1}, "not an operation"},
	} {
		func() {
			defer func() {
				if r := fmt.Sprint(recover()); !strings.Contains(r, c.panic) || !strings.HasPrefix(r, "dispatch: ") {
					t.Errorf("WorkOf(%v, %v) panicked with %q, want %q", c.op, c.shape, r, c.panic)
				}
			}()
			WorkOf(c.op, c.shape...)
		}()
	}
}

type testAccelerator struct{ name string }

func (a testAccelerator) Name() string { return a.name }
func (a testAccelerator) Prepare(Op, bool, ...int) (func() error, func(), error) {
	return func() error { return nil }, func() {}, nil
}

func TestSetAccelerator(t *testing.T) {
	orig := SetAccelerator(nil)
	defer SetAccelerator(orig)
	if RegisteredAccelerator() != nil {
		t.Fatal("an accelerator is registered after SetAccelerator(nil)")
	}
	if prev := SetAccelerator(testAccelerator{"one"}); prev != nil {
		t.Errorf("SetAccelerator returned %v, want nil", prev)
	}
	if prev := SetAccelerator(testAccelerator{"two"}); prev == nil || prev.Name() != "one" {
		t.Errorf("SetAccelerator returned %v, want the first", prev)
	}
	if a := RegisteredAccelerator(); a == nil || a.Name() != "two" {
		t.Errorf("RegisteredAccelerator() = %v", a)
	}
}

// FuzzParseThresholds: any input is an error or thresholds that write
// back to a file that reads the same, and whose strings print on one
// line of Report.
func FuzzParseThresholds(f *testing.F) {
	f.Add([]byte(validFile))
	f.Add([]byte(strings.Replace(validFile, `12:00:00Z`, `12:00:00.5+05:30`, 1)))
	for _, c := range malformedFiles {
		f.Add([]byte(c.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseThresholds(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "dispatch: thresholds: ") {
				t.Fatalf("error %q does not name the package", err)
			}
			return
		}
		out, err := MarshalThresholds(got)
		if err != nil {
			t.Fatalf("MarshalThresholds(%+v): %v", got, err)
		}
		back, err := ParseThresholds(out)
		if err != nil || !back.Calibrated.Equal(got.Calibrated) {
			t.Fatalf("the file written does not read back: %v\n%s", err, out)
		}
		back.Calibrated = got.Calibrated // same instant, maybe another zone
		if back != got {
			t.Fatalf("round trip: %+v, want %+v", back, got)
		}
	})
}
