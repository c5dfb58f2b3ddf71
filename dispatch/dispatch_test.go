package dispatch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseLevelRoundTrip(t *testing.T) {
	for l := Generic; int(l) < NumLevels; l++ {
		got, err := ParseLevel(strings.ToUpper(l.String()))
		if err != nil || got != l {
			t.Errorf("ParseLevel(%q) = %v, %v", l.String(), got, err)
		}
	}
	if _, err := ParseLevel("sse9"); err == nil {
		t.Error("ParseLevel accepted sse9")
	}
	if s := Level(42).String(); s != "Level(42)" {
		t.Errorf("Level(42).String() = %q", s)
	}
}

func TestLevels(t *testing.T) {
	ls := Levels()
	if len(ls) == 0 || ls[0] != Generic {
		t.Fatalf("Levels() = %v, want Generic first", ls)
	}
	if ls[len(ls)-1] != Detected() {
		t.Fatalf("Levels() = %v, want Detected()=%v last", ls, Detected())
	}
	for l := Generic; int(l) < NumLevels; l++ {
		in := false
		for _, x := range ls {
			in = in || x == l
		}
		if in != Supports(l) {
			t.Errorf("Supports(%v) = %v but Levels() = %v", l, Supports(l), ls)
		}
	}
}

func TestSetLevel(t *testing.T) {
	orig := Active()
	defer SetLevel(orig)
	for _, l := range Levels() {
		if _, err := SetLevel(l); err != nil {
			t.Fatalf("SetLevel(%v): %v", l, err)
		}
		if Active() != l {
			t.Fatalf("Active() = %v after SetLevel(%v)", Active(), l)
		}
		if !strings.Contains(Report(), "active:    "+l.String()) {
			t.Fatalf("Report does not show active level %v:\n%s", l, Report())
		}
	}
	before := Active()
	for l := Generic; int(l) < NumLevels; l++ {
		if Supports(l) {
			continue
		}
		prev, err := SetLevel(l)
		if err == nil {
			t.Fatalf("SetLevel(%v) accepted a level the CPU lacks", l)
		}
		if prev != before || Active() != before {
			t.Fatalf("refused SetLevel(%v) changed the level to %v", l, Active())
		}
	}
}

func TestEnvOverride(t *testing.T) {
	orig := Active()
	defer func() { active.Store(int32(orig)); envNote = "" }()
	long := strings.Repeat("x", 10000)
	cases := []struct {
		env      string
		want     Level
		note     string
		warnings int
	}{
		{"generic", Generic, "LANES_SIMD=generic", 0},
		{"bogus", Detected(), `LANES_SIMD="bogus" not understood; using ` + Detected().String() + ", the best level detected", 1},
		{"avx2\nactive:    neon", Detected(), `LANES_SIMD="avx2\nactive:    neon" not understood`, 1},
		{long, Detected(), `LANES_SIMD="` + long[:maxReportString] + `"... (10000 bytes) not understood`, 1},
		{" Generic\n", Generic, `LANES_SIMD=" Generic\n"`, 0},
		{"avx512", clamp(AVX512), "", 0},
		{"neon", clamp(NEON), "", 0},
		{"avx2", clamp(AVX2), "", 0},
	}
	for _, c := range cases {
		active.Store(int32(orig))
		var warnings []string
		applyEnv(c.env, func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) })
		name := quoted(c.env, maxReportString)
		if Active() != c.want {
			t.Errorf("LANES_SIMD=%s: active %v, want %v", name, Active(), c.want)
		}
		if !strings.Contains(envNote, c.note) {
			t.Errorf("LANES_SIMD=%s: note %q, want it to contain %q", name, envNote, c.note)
		}
		if want, _ := ParseLevel(c.env); c.note == "" && want != c.want && !strings.Contains(envNote, "clamped to "+c.want.String()) {
			t.Errorf("LANES_SIMD=%s: clamp not explained: %q", name, envNote)
		}
		r := Report()
		if !strings.Contains(r, "active:    "+c.want.String()+" ("+envNote+")\n") {
			t.Errorf("Report does not explain LANES_SIMD=%s:\n%s", name, r)
		}
		if len(warnings) != c.warnings || c.warnings > 0 && (!strings.Contains(warnings[0], "is not a level name") || strings.Contains(warnings[0], "\n")) {
			t.Errorf("LANES_SIMD=%s: warnings %q, want %d", name, warnings, c.warnings)
		}
		if len(r) > 4000 {
			t.Errorf("LANES_SIMD=%s: Report is %d bytes long", name, len(r))
		}
	}
}

// TestEnvGarbageChild starts the test binary with LANES_SIMD=garbage: one
// warning at start-up, the detected level, and Report says why.
func TestEnvGarbageChild(t *testing.T) {
	if os.Getenv("LANES_SIMD_CHILD") == "1" {
		for range 3 {
			Place(Work{Op: OpMatMul})
			fmt.Print(Report())
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvGarbageChild$")
	cmd.Env = append(os.Environ(), "LANES_SIMD_CHILD=1", "LANES_SIMD=garbage", ThresholdsEnv+"=default")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, syscall.ENOEXEC) {
		// Under qemu-user (GOARCH=arm64 go test -exec qemu-aarch64-static)
		// the binary cannot start itself: TestEnvOverride covers the same
		// parsing in process.
		t.Skipf("cannot re-execute the test binary here: %v", err)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s%s", err, out, stderr.String())
	}
	if n := strings.Count(stderr.String(), `lanes: LANES_SIMD="garbage" is not a level name`); n != 1 {
		t.Errorf("%d warnings on stderr, want 1:\n%s", n, stderr.String())
	}
	want := fmt.Sprintf("active:    %v (LANES_SIMD=\"garbage\" not understood; using %[1]v, the best level detected)\n", Detected())
	if n := strings.Count(string(out), want); n != 3 {
		t.Errorf("%d reports contain %q, want 3:\n%s", n, want, out)
	}
}

func TestClamp(t *testing.T) {
	for l := Generic; int(l) < NumLevels; l++ {
		got := clamp(l)
		if !Supports(got) {
			t.Errorf("clamp(%v) = %v, unsupported", l, got)
		}
		if Supports(l) && got != l {
			t.Errorf("clamp(%v) = %v, want itself", l, got)
		}
	}
	if Supports(AVX2) && clamp(AVX512) == Generic {
		t.Error("clamp(AVX512) skipped AVX2")
	}
}

// TestConcurrentSetLevel is for -race: switching levels while others read it.
func TestConcurrentSetLevel(t *testing.T) {
	orig := Active()
	defer SetLevel(orig)
	ls := Levels()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				if g%2 == 0 {
					SetLevel(ls[i%len(ls)])
				} else if l := Active(); !Supports(l) {
					t.Errorf("Active() = %v, unsupported", l)
				}
			}
		}()
	}
	wg.Wait()
}

func TestReportFields(t *testing.T) {
	r := Report()
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(r), "\n") {
		k, _, _ := strings.Cut(line, ":")
		if k == "caches" || k == "features" || k == "missing" {
			continue // depend on the machine
		}
		keys = append(keys, k)
	}
	if diff := cmp.Diff([]string{"cpu", "build", "levels", "active", "workers", "placement", "devices"}, keys); diff != "" {
		t.Errorf("Report lines (-want +got):\n%s\n%s", diff, r)
	}
}

func TestNoAllocActive(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Active() }); n != 0 {
		t.Errorf("Active allocates %v", n)
	}
}

type thresholdPlacer struct{ flops float64 }

func (p thresholdPlacer) Place(w Work) Target {
	if w.Resident || w.FLOPs >= p.flops {
		return OnGPU
	}
	return OnCPU
}

func (p thresholdPlacer) Describe() string {
	return fmt.Sprintf("test placer: GPU from %g FLOPs", p.flops)
}

func TestPlace(t *testing.T) {
	defer SetThresholds(SetThresholds(CPUOnlyThresholds(), "test"))
	if got := Place(Work{Op: OpMatMul, FLOPs: 1e15}); got != OnCPU {
		t.Errorf("Place with CPU-only thresholds = %v, want cpu", got)
	}
	if prev := SetPlacer(thresholdPlacer{1e9}); prev != nil {
		t.Fatalf("a placer was installed before the test: %v", prev)
	}
	defer SetPlacer(nil)
	for _, c := range []struct {
		w    Work
		want Target
	}{
		{Work{Op: OpMatMul, FLOPs: 1e6}, OnCPU},
		{Work{Op: OpConv2D, FLOPs: 2e9}, OnGPU},
		{Work{Op: OpMatMul, FLOPs: 1, Resident: true}, OnGPU},
	} {
		if got := Place(c.w); got != c.want {
			t.Errorf("Place(%+v) = %v, want %v", c.w, got, c.want)
		}
	}
	if r := Report(); !strings.Contains(r, "placement: test placer: GPU from 1e+09 FLOPs") {
		t.Errorf("Report does not describe the placer:\n%s", r)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Place(Work{Op: OpMatMul, FLOPs: 5}) }); n != 0 {
		t.Errorf("Place allocates %v", n)
	}
	if prev := SetPlacer(nil); prev == nil {
		t.Error("SetPlacer(nil) did not return the installed placer")
	}
	if OpConv2D.String() != "Conv2D" || OnGPU.String() != "gpu" {
		t.Error("names")
	}
}

func TestPrintable(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes: the cut falls inside a rune
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)", "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)"},
		{"Intel(R) Xeon(R) Processor, GOMAXPROCS 16, avx512", "Intel(R) Xeon(R) Processor, GOMAXPROCS 16, avx512"},
		{"Ünïcödé GPU", "Ünïcödé GPU"},
		{"a\nb", `"a\nb"`},
		{"tab\there", `"tab\there"`},
		{"\x1b[2Jclear", `"\x1b[2Jclear"`},
		{"abc\u202etxt.exe", `"abc\u202etxt.exe"`},
		{"bad \xff utf-8", `"bad \xff utf-8"`},
		{`a "quoted" \ name`, `a "quoted" \ name`},
		{long, `"` + strings.Repeat("é", 100) + `"... (600 bytes)`},
	} {
		if got := printable(c.in, maxReportString); got != c.want {
			t.Errorf("printable(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// reportLines returns Report's lines after checking that it has exactly
// one of each (TestReportFields' keys) and no other.
func reportLines(t *testing.T, r string) {
	t.Helper()
	var keys []string
	for _, line := range strings.Split(strings.TrimSuffix(r, "\n"), "\n") {
		k, _, _ := strings.Cut(line, ":")
		if k != "caches" && k != "features" && k != "missing" {
			keys = append(keys, k)
		}
	}
	if diff := cmp.Diff([]string{"cpu", "build", "levels", "active", "workers", "placement", "devices"}, keys); diff != "" {
		t.Errorf("Report lines (-want +got):\n%s\n%s", diff, r)
	}
}

// TestReportQuotesFileStrings gives Report thresholds whose "cpu",
// "device" and path hold newlines, escape sequences and megabytes: each
// stays on its line, quoted, cut to maxReportString bytes.
func TestReportQuotesFileStrings(t *testing.T) {
	if prev := SetPlacer(nil); prev != nil {
		defer SetPlacer(prev)
	}
	defer SetThresholds(ActiveThresholds())
	dir := filepath.Join(t.TempDir(), "a\nplacement: b")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	th := DefaultThresholds()
	th.Calibrated = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	th.CPU = "evil CPU\nactive:    generic (forced)"
	th.Device = "GPU\x1b[2J" + strings.Repeat("x", 100000)
	path := filepath.Join(dir, "thresholds.json")
	if err := WriteThresholds(path, th); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	got := loadInstalled(env(map[string]string{ThresholdsEnv: path}), nil, func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) })
	if len(warnings) != 0 || got.t != th {
		t.Fatalf("the file does not load: %q", warnings)
	}
	if want := strconv.Quote(path); got.source != want {
		t.Errorf("source %s, want %s", got.source, want)
	}
	SetThresholds(got.t, got.source)
	r := Report()
	reportLines(t, r)
	for _, want := range []string{
		"placement: thresholds from " + strconv.Quote(path) + " (calibrated 2025-06-01 on ",
		`on "evil CPU\nactive:    generic (forced)", "GPU\x1b[2J` + strings.Repeat("x", maxReportString-7) + `"... (100007 bytes)): MatMul host`,
	} {
		if !strings.Contains(r, want) {
			t.Errorf("Report lacks %q:\n%.2000s", want, r)
		}
	}
	if len(r) > 8000 {
		t.Errorf("Report is %d bytes long", len(r))
	}

	// A file that is rejected: the warning is one line too.
	missing := filepath.Join(dir, "none\n.json")
	got = loadInstalled(env(map[string]string{ThresholdsEnv: missing}), nil, func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) })
	if len(warnings) != 1 || strings.Contains(warnings[0], "\n") || !strings.Contains(warnings[0], strconv.Quote(missing)) {
		t.Errorf("warnings %q", warnings)
	}
	SetThresholds(got.t, got.source)
	reportLines(t, Report())
}
