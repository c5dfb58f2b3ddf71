// Command lanes is the main job of the lanes repository: it prints
// dispatch.Report() and a throughput table of the simd kernels at every level
// this CPU has, side by side with viterin/vek, gonum and a naive Go loop, all
// measured in this one process, and (when gcc is on PATH) the same loops in C
// built with gcc -O3 -march=native -ffast-math and timed in a child process
// whose rounds take their turns among the Go implementations' rounds,
// with the ratios that the project's bars are stated in. Each row ends with
// the best level's bytes per second and its share of the memory roofline at
// that working-set size (peers.Roofline: the measured read bandwidth for
// reductions, copy bandwidth for the rest), so a kernel that dips at one size
// shows there.
//
//	go run ./bench/cmd/lanes                     # everything, about two minutes
//	go run ./bench/cmd/lanes -ops Add,Dot -sizes 1000,10000
//	go run ./bench/cmd/lanes -benchstat out.txt  # also write benchstat input
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lanesgo/lanes/bench/peers"
	"github.com/lanesgo/lanes/dispatch"
)

func main() {
	var (
		opsFlag   = flag.String("ops", "", "comma-separated ops to run (default: all)")
		sizesFlag = flag.String("sizes", "1000,10000,100000,1000000,10000000", "comma-separated lengths")
		round     = flag.Duration("round", 20*time.Millisecond, "time of one measuring round")
		rounds    = flag.Int("rounds", 5, "rounds per cell, each implementation of a row once a round, interleaved; the median is reported")
		statOut   = flag.String("benchstat", "", "also write the figures in Go benchmark format to this file")
		gccFlag   = flag.Bool("gcc", true, "time the C loops built with gcc -O3 -march=native -ffast-math, when gcc is on PATH")
		gemmFlag  = flag.String("gemm", "128,512,1024", "comma-separated n of the n×n×n Sgemm table (\"\" skips it)")
		convFlag  = flag.Bool("conv", true, "print the Conv2D table (PyTorch timed in this run when python3 has torch)")
	)
	flag.Parse()
	sizes, err := peers.ParseSizes(*sizesFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lanes: -sizes:", err)
		os.Exit(2)
	}
	ops, err := peers.SelectOps(*opsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lanes:", err)
		os.Exit(2)
	}
	var stat io.Writer = io.Discard
	if *statOut != "" {
		f, err := os.Create(*statOut)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lanes:", err)
			os.Exit(1)
		}
		defer f.Close()
		stat = f
		fmt.Fprintf(f, "goos: %s\ngoarch: %s\npkg: github.com/lanesgo/lanes/bench/cmd/lanes\n", runtime.GOOS, runtime.GOARCH)
	}

	var gccOps map[string]bool
	if *gccFlag {
		var err error
		if gccOps, err = peers.GCC(); err != nil {
			fmt.Fprintln(os.Stderr, "lanes:", err)
		}
		defer peers.GCCCleanup()
	}

	fmt.Print(dispatch.Report())
	fmt.Printf("\nns per call, median of %d rounds of %v, the implementations of a row interleaved round by round (gcc's loops, in a child process, take their turns among them); ratios are peer time / lanes time at the best level (>1: lanes faster)\n", *rounds, *round)
	best := "lanes-" + dispatch.Detected().String()
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, op := range ops {
		runOp(op, sizes, best, gccOps[op.Name], *round, *rounds, stat)
	}
	if *gemmFlag != "" {
		ns, err := peers.ParseSizes(*gemmFlag)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lanes: -gemm:", err)
			os.Exit(2)
		}
		runGemm(ns, *round, *rounds, stat)
	}
	if *convFlag {
		runConv(*round, *rounds, stat)
	}
}

// runGemm prints GFLOP/s (2n³ per call) of every GEMM implementation, each
// on its thread count, and lanes' best level against vek (one thread each)
// and gonum (GOMAXPROCS threads each).
func runGemm(sizes []int, round time.Duration, rounds int, stat io.Writer) {
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	impls := peers.GemmImpls()
	best := "lanes-" + dispatch.Detected().String()
	fmt.Printf("\n### Sgemm n×n×n, GFLOP/s (threads after /t)\n\n")
	head := []string{"n"}
	for _, im := range impls {
		head = append(head, im.Name)
	}
	vekCol, gonumCol := fmt.Sprintf("%s/t1 ÷ vek/t1", best), fmt.Sprintf("%s/t%d ÷ gonum/t%d", best, procs, procs)
	head = append(head, vekCol, gonumCol)
	printHeader(head)
	for _, n := range sizes {
		in := peers.NewGemmInputs(n)
		flops := 2 * float64(n) * float64(n) * float64(n)
		gf := map[string]float64{}
		row := []string{strconv.Itoa(n)}
		for _, im := range impls {
			runtime.GOMAXPROCS(im.Threads)
			t := peers.Measure(func() { im.Run(in) }, round, rounds)
			gf[im.Name] = flops / t
			row = append(row, fmt.Sprintf("%.1f", gf[im.Name]))
			fmt.Fprintf(stat, "BenchmarkSgemm/%s/%d-%d\t%d\t%.2f ns/op\t%.2f GFLOP/s\n",
				strings.ReplaceAll(im.Name, "/", "-"), n, im.Threads, 1, t, gf[im.Name])
		}
		runtime.GOMAXPROCS(procs)
		row = append(row,
			fmt.Sprintf("%.2fx", gf[best+"/t1"]/gf["vek/t1"]),
			fmt.Sprintf("%.2fx", gf[fmt.Sprintf("%s/t%d", best, procs)]/gf[fmt.Sprintf("gonum/t%d", procs)]))
		printRow(row)
	}
	dispatch.SetLevel(dispatch.Detected())
}

// runOp prints op's table. With withGCC the C anchor is a column too.
func runOp(op peers.Op, sizes []int, best string, withGCC bool, round time.Duration, rounds int, stat io.Writer) {
	fmt.Printf("\n### %s\n\n", op.Name)
	head := []string{"n"}
	for _, im := range op.Impls {
		head = append(head, im.Name)
	}
	if withGCC {
		head = append(head, "gcc")
	}
	// Ratios are peer time over lanes' best level; an op without a lanes
	// implementation (Copy) has none, and its GB/s is its only impl's.
	refName := op.Impls[0].Name
	var ratioCols []string
	for _, im := range op.Impls {
		if im.IsLanes {
			refName = best
		}
	}
	for _, im := range op.Impls {
		if !im.IsLanes && refName == best {
			ratioCols = append(ratioCols, im.Name)
		}
	}
	if withGCC && refName == best {
		ratioCols = append(ratioCols, "gcc")
	}
	for _, c := range ratioCols {
		head = append(head, c+"/lanes")
	}
	head = append(head, "best GB/s", "roofline")
	printHeader(head)
	for _, n := range sizes {
		ns := map[string]float64{}
		row := []string{strconv.Itoa(n)}
		// All implementations on the same inputs, timed interleaved.
		in := peers.Prepare(op, op.Impls[0], n)
		fs := make([]func(), len(op.Impls))
		for i, im := range op.Impls {
			fs[i] = func() { im.Run(in) }
		}
		// The C loop's rounds, in its child process, take their turn among them.
		var remote func() (float64, error)
		var gcc *peers.GCCServer
		if withGCC {
			var err error
			if gcc, err = peers.StartGCC(op.Name, n, round); err != nil {
				fmt.Fprintln(os.Stderr, "lanes:", err)
			} else {
				remote = gcc.Round
			}
		}
		ts, gccNs, err := peers.MeasureAllRemote(fs, remote, func(i int) { peers.Activate(op.Impls[i]) }, round, rounds)
		if gcc != nil {
			gcc.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "lanes:", err)
			ts, gccNs = peers.MeasureAll(fs, func(i int) { peers.Activate(op.Impls[i]) }, round, rounds), 0
		}
		for i, im := range op.Impls {
			t := ts[i]
			ns[im.Name] = t
			row = append(row, peers.FormatNs(t))
			fmt.Fprintf(stat, "Benchmark%s/%s/%d-%d\t%d\t%.2f ns/op\t%.2f MB/s\n",
				op.Name, im.Name, n, runtime.GOMAXPROCS(0), 1, t, float64(op.Bytes(n))/t*1e3)
		}
		if withGCC {
			cell := "-"
			if t := gccNs; t > 0 {
				ns["gcc"], cell = t, peers.FormatNs(t)
				fmt.Fprintf(stat, "Benchmark%s/gcc/%d-%d\t%d\t%.2f ns/op\t%.2f MB/s\n",
					op.Name, n, runtime.GOMAXPROCS(0), 1, t, float64(op.Bytes(n))/t*1e3)
			}
			row = append(row, cell)
		}
		ref := ns[refName]
		for _, c := range ratioCols {
			if t, ok := ns[c]; ok {
				row = append(row, fmt.Sprintf("%.2fx", t/ref))
			} else {
				row = append(row, "-")
			}
		}
		gbs := float64(op.Bytes(n)) / ref
		row = append(row, fmt.Sprintf("%.1f", gbs), roofCell(op, n, gbs, round, rounds))
		printRow(row)
	}
}

// roofCell is the share of the memory roofline at op's working-set size that
// gbs reaches, or "-" where the roofline cannot be measured (reductions
// without gcc for the read probe).
func roofCell(op peers.Op, n int, gbs float64, round time.Duration, rounds int) string {
	bw, err := peers.Roofline(op, n, round, rounds)
	if err != nil {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*gbs/bw)
}

func printRow(cells []string) { fmt.Println("| " + strings.Join(cells, " | ") + " |") }

// printHeader prints a table's head row and its right-aligned separator.
func printHeader(head []string) {
	printRow(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = "---:"
	}
	printRow(sep)
}
