// Command report runs lanes' comparative benchmark suite in one process and
// writes a Markdown report with PNG charts and the same figures in
// benchstat format:
//
//	go -C bench run ./cmd/report -o results/tmp/report   # about three minutes on 2 cores
//	go -C bench run ./cmd/report -o DIR -ops Add,Exp -sizes 1000,100000 -gemm 256 -train=false
//
// DIR/report.md holds, all measured in this run unless labelled recorded:
//
//   - the elementwise and reduction kernels at every level this CPU has,
//     beside viterin/vek, gonum and a naive Go loop (bench/peers), with a
//     throughput chart per operation (throughput_<Op>.png);
//   - Sgemm GFLOP/s by size at every level on 1 and GOMAXPROCS threads,
//     beside vek and gonum, against this core's FMA peak measured by simd's
//     BenchmarkFMAPeak (gemm.png; PyTorch's recorded mm figures as a dashed
//     line);
//   - Conv2D and a training step of nn's Fashion-MNIST MLP and CNN against
//     the PyTorch figures recorded in shared/ANCHORS.md (not timed here);
//   - with an accelerator registered (a -tags cuda build on a GPU machine),
//     CPU-versus-GPU time by size with the crossovers marked
//     (crossover_MatMul.png, crossover_Conv2D.png).
//
// DIR/bench.txt has every sample in Go benchmark format, for
// `benchstat old.txt DIR/bench.txt` (see `make bench-save` and
// `make bench-compare`).
package main

import (
	"github.com/lanesgo/lanes/bench/peers"

	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lanesgo/lanes/bench/crossover"
	"github.com/lanesgo/lanes/dispatch"
)

type config struct {
	dir       string
	ops       string        // comma-separated op names, "" for all
	sizes     []int         // vector lengths
	gemm      []int         // n of the n×n×n products, empty: no GEMM section
	round     time.Duration // one measuring round
	rounds    int           // samples per cell; tables show the median
	conv      bool
	train     bool
	peak      bool // run simd's BenchmarkFMAPeak (compiles simd's tests)
	crossover bool // the CPU-vs-GPU sweep when an accelerator is registered
	// sweep returns the shapes of the CPU-vs-GPU sweep (tests make it
	// small); nil means crossover.DefaultShapes.
	sweep    func(dispatch.Op) []crossover.Shape
	charts   map[string]bool // lower-case chart keys to draw; nil: all
	args     string
	progress io.Writer
}

func main() {
	var c config
	var sizes, gemm, charts string
	flag.StringVar(&c.dir, "o", "", "directory to write report.md, the PNG charts and bench.txt into (required)")
	flag.StringVar(&c.ops, "ops", "", "comma-separated elementwise/reduction ops (default: all)")
	flag.StringVar(&sizes, "sizes", "1000,10000,100000,1000000,10000000", "comma-separated vector lengths")
	flag.StringVar(&gemm, "gemm", "64,128,256,512,1024", "comma-separated n of the n×n×n Sgemm sweep (\"\" skips it)")
	flag.DurationVar(&c.round, "round", 10*time.Millisecond, "time of one measuring round")
	flag.IntVar(&c.rounds, "rounds", 6, "samples per cell (each one round; benchstat needs 6 for a confidence interval); tables show the median")
	flag.BoolVar(&c.conv, "conv", true, "time Conv2D against the recorded PyTorch figures")
	flag.BoolVar(&c.train, "train", true, "time training steps against the recorded PyTorch figures")
	flag.BoolVar(&c.peak, "peak", true, "measure the FMA peak with simd's BenchmarkFMAPeak (go test)")
	flag.BoolVar(&c.crossover, "crossover", true, "sweep CPU vs GPU when an accelerator is registered")
	flag.StringVar(&charts, "charts", "all", "comma-separated charts to draw: op names, gemm, crossover (\"all\" or \"none\")")
	flag.Parse()
	if c.dir == "" {
		fmt.Fprintln(os.Stderr, "report: -o DIR is required")
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if c.sizes, err = peers.ParseSizes(sizes); err != nil || len(c.sizes) == 0 {
		fmt.Fprintf(os.Stderr, "report: -sizes: %v\n", err)
		os.Exit(2)
	}
	if gemm != "" {
		if c.gemm, err = peers.ParseSizes(gemm); err != nil {
			fmt.Fprintf(os.Stderr, "report: -gemm: %v\n", err)
			os.Exit(2)
		}
	}
	switch charts {
	case "all":
	case "none":
		c.charts = map[string]bool{}
	default:
		c.charts = map[string]bool{}
		for _, k := range strings.Split(charts, ",") {
			c.charts[strings.ToLower(strings.TrimSpace(k))] = true
		}
	}
	c.args = strings.Join(os.Args[1:], " ")
	c.progress = os.Stderr
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}
