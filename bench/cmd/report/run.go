package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/lanesgo/lanes/bench/chart"
	"github.com/lanesgo/lanes/bench/crossover"
	"github.com/lanesgo/lanes/bench/peers"
	"github.com/lanesgo/lanes/dispatch"
)

// run measures everything c asks for and writes c.dir/report.md, the
// charts and c.dir/bench.txt.
func run(c config) error {
	if c.rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", c.rounds)
	}
	ops, err := peers.SelectOps(c.ops)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	procs := runtime.GOMAXPROCS(0)
	s := &sampler{c: c, stat: &strings.Builder{}}
	fmt.Fprintf(s.stat, "goos: %s\ngoarch: %s\npkg: github.com/lanesgo/lanes/bench/cmd/report\ncpu: %s\n",
		runtime.GOOS, runtime.GOARCH, cpuid.CPU.BrandName)

	var md strings.Builder
	var charts []string
	save := func(key, name string, ch chart.Chart) {
		if err == nil && c.wantChart(key) {
			err = ch.SavePNG(filepath.Join(c.dir, name))
			charts = append(charts, name)
		}
	}

	fmt.Fprintln(c.progress, "report: elementwise and reduction kernels")
	opResults := s.runOps(ops)
	writeOps(&md, opResults, c)
	for _, r := range opResults {
		save(r.op.Name, "throughput_"+r.op.Name+".png", r.chart())
	}

	if len(c.gemm) > 0 {
		peak := fmaPeak{note: "not measured (-peak=false)"}
		if c.peak {
			fmt.Fprintln(c.progress, "report: FMA peak (go test -bench FMAPeak ./simd/)")
			peak = measurePeak(c)
		}
		fmt.Fprintln(c.progress, "report: Sgemm")
		g := s.runGemm()
		writeGemm(&md, g, peak, c)
		save("gemm", "gemm.png", g.chart(peak))
	}
	if c.conv {
		fmt.Fprintln(c.progress, "report: Conv2D")
		writeConv(&md, s.runConv())
	}
	if c.train {
		fmt.Fprintln(c.progress, "report: training steps")
		writeTrain(&md, s.runTrain())
	}

	fmt.Fprintf(&md, "\n## CPU vs GPU\n\n")
	acc := dispatch.RegisteredAccelerator()
	switch {
	case acc == nil:
		fmt.Fprintln(&md, "No accelerator is registered in this build (no GPU, or not built with `-tags cuda`): no CPU-vs-GPU "+
			"sweep and no crossover chart. Placement follows the thresholds in the machine section; "+
			"`go -C bench run ./cmd/calibrate` measures them where a GPU is present.")
	case !c.crossover:
		fmt.Fprintf(&md, "Accelerator %s registered; the sweep was skipped (-crossover=false).\n", acc.Name())
	default:
		fmt.Fprintf(&md, "Accelerator: %s. Times per call, median of %d rounds of %v; * the GPU is faster. "+
			"Host operands: every call copies them in and the result back; device operands: no transfer.\n",
			acc.Name(), c.rounds, c.round)
		for _, op := range []dispatch.Op{dispatch.OpMatMul, dispatch.OpConv2D} {
			fmt.Fprintf(c.progress, "report: CPU vs GPU, %v\n", op)
			shapes := crossover.DefaultShapes(op, true)
			if c.sweep != nil {
				shapes = c.sweep(op)
			}
			sw := crossover.Run(shapes, acc,
				func(f func()) float64 { return peers.Measure(f, c.round, c.rounds) }, c.progress)
			fmt.Fprintf(&md, "\n### %v\n\n", op)
			crossover.WriteTable(&md, sw, 0.1)
			name := fmt.Sprintf("crossover_%v.png", op)
			save("crossover", name, sw.Chart(0.1))
			c.chartLink(&md, "crossover", fmt.Sprintf("%v: CPU vs GPU", op), name)
		}
	}
	if err != nil {
		return err
	}

	elapsed := time.Since(start)
	var head strings.Builder
	fmt.Fprintf(&head, "# lanes benchmark report\n\n")
	fmt.Fprintf(&head, "Written %s by `go -C bench run ./cmd/report %s` in %s (GOMAXPROCS %d, %s). "+
		"Every figure was measured in this run, in one process, except those labelled *recorded* "+
		"(PyTorch, from shared/ANCHORS.md). Times are medians of %d samples of %v rounds "+
		"(peers.Measure); every sample is in bench.txt for benchstat.\n\n",
		time.Now().UTC().Format(time.RFC3339), c.args, elapsed.Round(time.Second), procs, runtime.Version(), c.rounds, c.round)
	fmt.Fprintf(&head, "## Machine\n\n```\n%s```\n", dispatch.Report())
	report := head.String() + md.String()
	if err := os.WriteFile(filepath.Join(c.dir, "report.md"), []byte(report), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dir, "bench.txt"), []byte(s.stat.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.progress, "report: wrote %s, bench.txt and %d charts in %s (%s)\n",
		filepath.Join(c.dir, "report.md"), len(charts), c.dir, elapsed.Round(time.Second))
	return nil
}

// wantChart reports whether the chart named key (an op name, "gemm" or
// "crossover") is to be drawn.
func (c config) wantChart(key string) bool { return c.charts == nil || c.charts[strings.ToLower(key)] }

// chartLink links the chart file from the report when it is drawn.
func (c config) chartLink(b *strings.Builder, key, alt, file string) {
	if c.wantChart(key) {
		fmt.Fprintf(b, "\n![%s](%s)\n", alt, file)
	}
}

func row(b *strings.Builder, cells ...string) { fmt.Fprintln(b, "| "+strings.Join(cells, " | ")+" |") }

func header(b *strings.Builder, cells ...string) {
	row(b, cells...)
	sep := make([]string, len(cells))
	for i := range sep {
		sep[i] = "---:"
	}
	sep[0] = ":---"
	row(b, sep...)
}

func writeOps(b *strings.Builder, rs []opResult, c config) {
	fmt.Fprintf(b, "\n## Elementwise and reduction kernels\n\n")
	fmt.Fprintf(b, "lanes at every level this CPU has (lanes-<level>) beside viterin/vek, gonum and a naive Go loop "+
		"(and SLEEF with -tags sleef). GB/s counts the bytes read and written per call; ratios are the "+
		"fastest peer's time over lanes' at its detected level, %s (> 1: lanes faster).\n\n", best())
	fmt.Fprintf(b, "### Summary: %s against the fastest peer\n\n", best())
	head := []string{"op"}
	for _, n := range c.sizes {
		head = append(head, fmt.Sprintf("n=%d", n))
	}
	header(b, head...)
	for _, r := range rs {
		if !r.hasLanes() {
			continue
		}
		cells := []string{r.op.Name}
		for i := range r.sizes {
			p, ok := r.fastestPeer(i)
			if !ok {
				cells = append(cells, "no peer")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.2fx (%s)", r.ns[p][i]/r.ns[best()][i], p))
		}
		row(b, cells...)
	}
	for _, r := range rs {
		fmt.Fprintf(b, "\n### %s\n\nns per call; the last column is GB/s of the fastest implementation.\n\n", r.op.Name)
		head := []string{"n"}
		for _, im := range r.op.Impls {
			head = append(head, im.Name)
		}
		header(b, append(head, "best GB/s")...)
		for i, n := range r.sizes {
			cells := []string{fmt.Sprint(n)}
			top := 0.0
			for _, im := range r.op.Impls {
				cells = append(cells, peers.FormatNs(r.ns[im.Name][i]))
				top = max(top, r.gbps(im.Name, i))
			}
			row(b, append(cells, fmt.Sprintf("%.1f", top))...)
		}
		c.chartLink(b, r.op.Name, r.op.Name+" throughput", "throughput_"+r.op.Name+".png")
	}
}

func writeGemm(b *strings.Builder, g gemmResult, peak fmaPeak, c config) {
	procs := runtime.GOMAXPROCS(0)
	fmt.Fprintf(b, "\n## Sgemm\n\n")
	fmt.Fprintf(b, "### FMA peak, one core (simd's BenchmarkFMAPeak, this run)\n\n")
	if peak.note != "" {
		fmt.Fprintf(b, "Not measured: %s.\n", peak.note)
	} else {
		header(b, "level", "GFLOP/s, 1 core", fmt.Sprintf("× %d cores", procs))
		for _, l := range dispatch.Levels() {
			if v, ok := peak.gflops[l.String()]; ok {
				row(b, l.String(), fmt.Sprintf("%.1f", v), fmt.Sprintf("%.1f", v*float64(procs)))
			}
		}
	}
	fmt.Fprintf(b, "\n### n×n×n, GFLOP/s (threads after /t)\n\n")
	head := []string{"n"}
	for _, im := range g.impls {
		head = append(head, im.Name)
	}
	lv := dispatch.Detected().String()
	p, hasPeak := peak.gflops[lv]
	bestT := fmt.Sprintf("%s/t%d", best(), procs)
	if hasPeak {
		head = append(head, fmt.Sprintf("%s of %d-core peak", bestT, procs))
	}
	header(b, head...)
	for i, n := range g.ns {
		cells := []string{fmt.Sprint(n)}
		for _, im := range g.impls {
			cells = append(cells, fmt.Sprintf("%.1f", g.gf[im.Name][i]))
		}
		if hasPeak {
			cells = append(cells, fmt.Sprintf("%.0f%%", 100*g.gf[bestT][i]/(p*float64(procs))))
		}
		row(b, cells...)
	}
	fmt.Fprintf(b, "\nPyTorch 1.13.1 torch.mm on 2 threads, *recorded*: ")
	for i, n := range recordedTorchMM.n {
		fmt.Fprintf(b, "n=%.0f %.1f", n, recordedTorchMM.gflops[i])
		if i+1 < len(recordedTorchMM.n) {
			b.WriteString(", ")
		}
	}
	fmt.Fprintf(b, " GFLOP/s (the dashed PyTorch line in the chart).\n")
	c.chartLink(b, "gemm", "Sgemm GFLOP/s", "gemm.png")
}

func writeConv(b *strings.Builder, rs []convResult) {
	procs := runtime.GOMAXPROCS(0)
	fmt.Fprintf(b, "\n## Conv2D against PyTorch (recorded)\n\n")
	fmt.Fprintf(b, "lanes' tensor.Conv2D with bias, NCHW float32, %d threads, timed here; PyTorch 1.13.1 "+
		"torch.nn.functional.conv2d on 2 threads, *recorded* in ANCHORS.md on the development machine, not timed in this run.\n\n", procs)
	header(b, "shape", "lanes ms", "lanes GFLOP/s", "PyTorch ms (recorded)", "PyTorch GFLOP/s (recorded)", "PyTorch ÷ lanes time")
	for _, r := range rs {
		row(b, r.c.name, fmt.Sprintf("%.2f", r.ms), fmt.Sprintf("%.1f", r.gflops),
			fmt.Sprintf("%.2f", r.c.torchMs), fmt.Sprintf("%.1f", r.c.torchGFLOPsRec), fmt.Sprintf("%.2fx", r.c.torchMs/r.ms))
	}
}

func writeTrain(b *strings.Builder, rs []trainResult) {
	fmt.Fprintf(b, "\n## Training against PyTorch (recorded)\n\n")
	fmt.Fprintf(b, "One step of nn's Fashion-MNIST models (forward, cross-entropy, backward, Adam; batch 64, random data), "+
		"timed here; an epoch is %d such steps. PyTorch 1.13.1's epoch times on the same models are *recorded* in "+
		"ANCHORS.md (2 threads, whole epochs with data loading), not timed in this run.\n\n", stepsPerEpoch)
	header(b, "model", "lanes ms per step", "lanes s per epoch (steps only)", "PyTorch s per epoch (recorded)", "PyTorch ÷ lanes")
	for _, r := range rs {
		e := r.epochS()
		row(b, r.c.name, fmt.Sprintf("%.2f", r.stepMs), fmt.Sprintf("%.2f", e),
			fmt.Sprintf("%.1f–%.1f", r.c.torchLo, r.c.torchHi), fmt.Sprintf("%.2f–%.2fx", r.c.torchLo/e, r.c.torchHi/e))
	}
}
