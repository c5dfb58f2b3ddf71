package main

import (
	"bufio"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lanesgo/lanes/bench/crossover"
	"github.com/lanesgo/lanes/dispatch"
)

// spinAccelerator is a device that takes a fixed time per call.
type spinAccelerator struct{}

func (spinAccelerator) Name() string { return "spin device" }
func (spinAccelerator) Prepare(dispatch.Op, bool, ...int) (func() error, func(), error) {
	return func() error {
		for start := time.Now(); time.Since(start) < 10*time.Microsecond; {
		}
		return nil
	}, func() {}, nil
}

// TestReportSmall runs the report on a few small cells (the full run is
// `make report`, minutes long) and checks what it wrote: the sections, a
// decodable PNG for every chart report.md links, and bench.txt in Go
// benchmark format with one line per sample.
func TestReportSmall(t *testing.T) {
	for _, withDevice := range []bool{false, true} {
		var acc dispatch.Accelerator
		if withDevice {
			acc = spinAccelerator{}
		}
		prev := dispatch.SetAccelerator(acc)
		dir := t.TempDir()
		c := config{dir: dir, ops: "Add,Dot,Copy", sizes: []int{1000, 4000}, gemm: []int{16, 32}, round: time.Millisecond, rounds: 2,
			train: !testing.Short(), crossover: true, progress: io.Discard,
			sweep: func(op dispatch.Op) []crossover.Shape { return crossover.QuickShapes(op) }}
		err := run(c)
		dispatch.SetAccelerator(prev)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		md := string(data)
		want := []string{"# lanes benchmark report", "## Machine", "placement: thresholds", "### Summary",
			"| Dot | ", "### Copy", "## Sgemm", "FMA peak", "(recorded)", "## CPU vs GPU"}
		if withDevice {
			want = append(want, "Accelerator: spin device", "crossover_MatMul.png", "crossover_Conv2D.png")
		} else {
			want = append(want, "No accelerator is registered")
		}
		if !testing.Short() {
			want = append(want, "## Training against PyTorch (recorded)", "| MLP 784-256-128-10 |")
		}
		for _, w := range want {
			if !strings.Contains(md, w) {
				t.Errorf("report.md lacks %q:\n%s", w, md)
			}
		}
		linked := 0
		for _, line := range strings.Split(md, "\n") {
			_, name, ok := strings.Cut(line, "](")
			if !ok || !strings.HasPrefix(line, "![") {
				continue
			}
			name = strings.TrimSuffix(name, ")")
			f, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(f)
			f.Close()
			if err != nil || img.Bounds().Dx() < 400 || img.Bounds().Dy() < 200 {
				t.Errorf("%s: %v", name, err)
			}
			linked++
		}
		if want := 3 + 1 + map[bool]int{false: 0, true: 2}[withDevice]; linked != want {
			t.Errorf("report.md links %d charts, want %d", linked, want)
		}
		checkBenchFile(t, filepath.Join(dir, "bench.txt"), c)
	}
}

// checkBenchFile checks that every line after the header is a benchmark
// result that benchstat reads, with c.rounds samples per name.
func checkBenchFile(t *testing.T, path string, c config) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	samples := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, _, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "Benchmark") {
			if k != "goos" && k != "goarch" && k != "pkg" && k != "cpu" {
				t.Errorf("unexpected header line %q", line)
			}
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 3 || !strings.HasPrefix(fields[0], "Benchmark") || fields[1] != "1" || !strings.HasSuffix(fields[2], " ns/op") {
			t.Errorf("not a benchmark line: %q", line)
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSuffix(fields[2], " ns/op"), 64); err != nil || !(v > 0) {
			t.Errorf("bad ns/op in %q", line)
		}
		samples[fields[0]]++
	}
	for _, name := range []string{"BenchmarkAdd/lanes-generic/1000-", "BenchmarkDot/vek/4000-", "BenchmarkSgemm/gonum-t"} {
		found := false
		for k, n := range samples {
			if strings.HasPrefix(k, name) {
				found = true
				if n != c.rounds {
					t.Errorf("%s: %d samples, want %d", k, n, c.rounds)
				}
			}
		}
		if !found {
			t.Errorf("bench.txt has no %s", name)
		}
	}
}

func TestParsePeak(t *testing.T) {
	out := `goos: linux
BenchmarkFMAPeak/avx512-2         	     967	    227452 ns/op	       221.3 GFLOP/s
BenchmarkFMAPeak/avx512-2         	    1057	    225435 ns/op	       223.3 GFLOP/s
BenchmarkFMAPeak/avx512-2         	     860	    239078 ns/op	       210.5 GFLOP/s
BenchmarkFMAPeak/avx2-2           	    2091	    114398 ns/op	       110.0 GFLOP/s
BenchmarkFMAPeak/avx2             	    2005	    115277 ns/op	       109.2 GFLOP/s
BenchmarkSgemm/avx2-2           	    2005	    115277 ns/op	       9.2 GFLOP/s
PASS
`
	got := parsePeak(out)
	if len(got) != 2 || got["avx512"] != 221.3 || got["avx2"] != 110.0 {
		t.Errorf("parsePeak = %v", got)
	}
}

// TestReportChartSubset draws only the charts asked for and links only
// those.
func TestReportChartSubset(t *testing.T) {
	dir := t.TempDir()
	c := config{dir: dir, ops: "Add,Sum", sizes: []int{1000}, gemm: []int{16}, round: time.Millisecond, rounds: 1,
		progress: io.Discard, charts: map[string]bool{"gemm": true, "sum": true}}
	if err := run(c); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "bench.txt gemm.png report.md throughput_Sum.png" {
		t.Errorf("files written: %v", names)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if n := strings.Count(string(md), "\n!["); n != 2 || strings.Contains(string(md), "throughput_Add.png") {
		t.Errorf("report.md has %d chart links:\n%s", n, md)
	}
}
