package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/lanesgo/lanes/bench/chart"
	"github.com/lanesgo/lanes/bench/peers"
	"github.com/lanesgo/lanes/dispatch"
)

// sampler times cells: each sample is one peers.Measure round, so the
// benchstat file gets every sample and the tables their median.
type sampler struct {
	c    config
	stat *strings.Builder // Go benchmark format
}

// time returns the median ns per call of f and writes its samples as
// Benchmark<name>-<procs> lines with the metric unit/value of extra(ns).
func (s *sampler) time(name string, procs int, f func(), extra func(ns float64) (float64, string)) float64 {
	ns := make([]float64, s.c.rounds)
	for i := range ns {
		ns[i] = peers.Measure(f, s.c.round, 1)
		fmt.Fprintf(s.stat, "Benchmark%s-%d\t1\t%.2f ns/op", name, procs, ns[i])
		if extra != nil {
			v, unit := extra(ns[i])
			fmt.Fprintf(s.stat, "\t%.2f %s", v, unit)
		}
		s.stat.WriteByte('\n')
	}
	slices.Sort(ns)
	return ns[len(ns)/2]
}

// opResult is one elementwise or reduction op: ns per call by impl and size.
type opResult struct {
	op    peers.Op
	ns    map[string][]float64 // impl name → per size
	sizes []int
}

func (r opResult) gbps(impl string, i int) float64 {
	return float64(r.op.Bytes(r.sizes[i])) / r.ns[impl][i]
}

// best is lanes at the detected level (the one programs get by default).
func best() string { return "lanes-" + dispatch.Detected().String() }

func (s *sampler) runOps(ops []peers.Op) []opResult {
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	procs := runtime.GOMAXPROCS(0)
	var out []opResult
	for _, op := range ops {
		fmt.Fprintf(s.c.progress, "  %s\n", op.Name)
		r := opResult{op: op, ns: map[string][]float64{}, sizes: s.c.sizes}
		for _, im := range op.Impls {
			for _, n := range s.c.sizes {
				in := peers.Prepare(op, im, n)
				bytes := float64(op.Bytes(n))
				t := s.time(fmt.Sprintf("%s/%s/%d", op.Name, im.Name, n), procs, func() { im.Run(in) },
					func(ns float64) (float64, string) { return bytes / ns * 1e3, "MB/s" })
				r.ns[im.Name] = append(r.ns[im.Name], t)
			}
		}
		out = append(out, r)
	}
	return out
}

// fastestPeer returns the non-lanes impl with the least time at size i.
func (r opResult) fastestPeer(i int) (string, bool) {
	name, bestNs := "", 0.0
	for _, im := range r.op.Impls {
		if im.IsLanes {
			continue
		}
		if t := r.ns[im.Name][i]; name == "" || t < bestNs {
			name, bestNs = im.Name, t
		}
	}
	return name, name != ""
}

func (r opResult) hasLanes() bool {
	for _, im := range r.op.Impls {
		if im.IsLanes {
			return true
		}
	}
	return false
}

func (r opResult) chart() chart.Chart {
	c := chart.Chart{
		Title:  fmt.Sprintf("%s: throughput by length (GOMAXPROCS %d)", r.op.Name, runtime.GOMAXPROCS(0)),
		XLabel: "elements (log)", YLabel: "GB/s moved (log)", LogX: true, LogY: true,
	}
	xs := make([]float64, len(r.sizes))
	for i, n := range r.sizes {
		xs[i] = float64(n)
	}
	for _, im := range r.op.Impls {
		ys := make([]float64, len(r.sizes))
		for i := range ys {
			ys[i] = r.gbps(im.Name, i)
		}
		c.Series = append(c.Series, chart.Series{Name: im.Name, X: xs, Y: ys, Dashed: !im.IsLanes})
	}
	return c
}

// gemmResult is the Sgemm sweep: GFLOP/s by impl and n.
type gemmResult struct {
	impls []peers.GemmImpl
	ns    []int
	gf    map[string][]float64
}

func (s *sampler) runGemm() gemmResult {
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	r := gemmResult{impls: peers.GemmImpls(), ns: s.c.gemm, gf: map[string][]float64{}}
	for _, n := range r.ns {
		fmt.Fprintf(s.c.progress, "  Sgemm %d\n", n)
		in := peers.NewGemmInputs(n)
		flops := 2 * float64(n) * float64(n) * float64(n)
		for _, im := range r.impls {
			runtime.GOMAXPROCS(im.Threads)
			name := fmt.Sprintf("Sgemm/%s/%d", strings.ReplaceAll(im.Name, "/", "-"), n)
			t := s.time(name, im.Threads, func() { im.Run(in) },
				func(ns float64) (float64, string) { return flops / ns, "GFLOP/s" })
			r.gf[im.Name] = append(r.gf[im.Name], flops/t)
		}
		runtime.GOMAXPROCS(procs)
	}
	return r
}

// fmaPeak is simd's BenchmarkFMAPeak: GFLOP/s of one core by level.
type fmaPeak struct {
	gflops map[string]float64 // level name → median
	note   string             // why it is missing, when it is
}

// measurePeak runs `go test -bench BenchmarkFMAPeak ./simd/` in the lanes
// module (the generated fmaPeak kernels are unexported test support of
// package simd; running its benchmark keeps one method for the figure).
func measurePeak(c config) fmaPeak {
	p := fmaPeak{gflops: map[string]float64{}}
	if runtime.GOARCH != "amd64" {
		p.note = "BenchmarkFMAPeak exists on amd64 only"
		return p
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/lanesgo/lanes").Output()
	if err != nil {
		p.note = fmt.Sprintf("cannot find the lanes module (go list: %v)", err)
		return p
	}
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", "^BenchmarkFMAPeak$", "-benchtime", "200ms", "-count", "3", "./simd/")
	cmd.Dir = strings.TrimSpace(string(root))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		p.note = fmt.Sprintf("go test ./simd/ -bench FMAPeak failed: %v: %s", err, strings.TrimSpace(errOut.String()+out.String()))
		return p
	}
	p.gflops = parsePeak(out.String())
	if len(p.gflops) == 0 {
		p.note = "BenchmarkFMAPeak printed no GFLOP/s"
	}
	return p
}

// parsePeak reads BenchmarkFMAPeak/<level>-<procs> lines and returns the
// median GFLOP/s per level.
func parsePeak(out string) map[string]float64 {
	all := map[string][]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkFMAPeak/") {
			continue
		}
		level := strings.TrimPrefix(f[0], "BenchmarkFMAPeak/")
		if i := strings.LastIndexByte(level, '-'); i > 0 {
			level = level[:i]
		}
		for i := 1; i+1 < len(f); i++ {
			if f[i+1] == "GFLOP/s" {
				if v, err := strconv.ParseFloat(f[i], 64); err == nil {
					all[level] = append(all[level], v)
				}
			}
		}
	}
	med := map[string]float64{}
	for l, vs := range all {
		slices.Sort(vs)
		med[l] = vs[len(vs)/2]
	}
	return med
}

// recordedTorchMM is PyTorch 1.13.1's torch.mm on 2 threads, GFLOP/s by n,
// recorded in shared/ANCHORS.md (not timed in this run).
var recordedTorchMM = struct{ n, gflops []float64 }{
	[]float64{128, 256, 512, 1024, 2048}, []float64{155.3, 190.4, 204.9, 206.6, 202.2},
}

func (r gemmResult) chart(peak fmaPeak) chart.Chart {
	procs := runtime.GOMAXPROCS(0)
	c := chart.Chart{
		Title:  "Sgemm n×n×n, GFLOP/s by size (threads after /t)",
		XLabel: "n (log)", YLabel: "GFLOP/s", LogX: true,
	}
	xs := make([]float64, len(r.ns))
	for i, n := range r.ns {
		xs[i] = float64(n)
	}
	c.XTicks = xs
	for _, im := range r.impls {
		c.Series = append(c.Series, chart.Series{Name: im.Name, X: xs, Y: r.gf[im.Name], Dashed: !im.IsLanes})
	}
	// The recorded PyTorch points within the sweep's sizes.
	var tx, ty []float64
	for i, n := range recordedTorchMM.n {
		if len(xs) > 0 && n >= xs[0] && n <= xs[len(xs)-1] {
			tx, ty = append(tx, n), append(ty, recordedTorchMM.gflops[i])
		}
	}
	if len(tx) > 0 {
		c.Series = append(c.Series, chart.Series{Name: "PyTorch mm/t2 (recorded)", X: tx, Y: ty, Dashed: true})
	}
	lv := dispatch.Detected().String()
	if g, ok := peak.gflops[lv]; ok {
		c.HLines = append(c.HLines, chart.Ref{Name: fmt.Sprintf("FMA peak %s, 1 core", lv), V: g})
		if procs > 1 {
			c.HLines = append(c.HLines, chart.Ref{Name: fmt.Sprintf("FMA peak %s, %d cores", lv, procs), V: g * float64(procs)})
		}
	}
	return c
}
