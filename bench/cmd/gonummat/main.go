//go:build openblas

// Command gonummat times gonum's mat package with three blas64
// implementations in one process (package gonummat): gonum's own pure Go,
// lanes (lanesblas.Implementation) and OpenBLAS (Debian's libopenblas-dev
// through gonum's cgo wrapper gonum.org/v1/netlib/blas/netlib), on
// mat.Dense.Mul n = 256, 512, 1024, 2048, mat.Cholesky and mat.LU n = 1024
// and mat.SVD n = 512, with the float64 FMA peak of the cores in use
// measured in the same run (bench/openblas's C loop). It needs cgo and
// libopenblas-dev:
//
//	cd bench && go run -tags openblas ./cmd/gonummat -o results/gonum-mat
//
// and writes DIR/report.md (the tables, the machine and the settings) and
// DIR/dense-mul.png. Threads: GOMAXPROCS for gonum and lanes, as many for
// OpenBLAS (GOMAXPROCS=1 for one thread); OPENBLAS_CORETYPE selects
// OpenBLAS's kernels (Debian's build picks Haswell's AVX2 ones on Zen 5;
// SkylakeX gives its AVX-512 ones).
//
// The SVD's time is nearly all gonum's LAPACK, not BLAS: a profile of
// mat.SVD.Factorize (SVDThin, n = 512) with lanes installed put 94% of it
// in lapack/gonum's Dlasr (the plane rotations of Dbdsqr, pure Go), so no
// blas64 implementation changes it much.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/cpuid/v2"
	"github.com/lanesgo/lanes/bench/gonummat"
	"github.com/lanesgo/lanes/bench/openblas"
	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/lanesblas"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/netlib/blas/netlib"
)

func main() {
	dir := flag.String("o", "", "directory to write report.md and dense-mul.png into (required)")
	sizes := flag.String("sizes", "256,512,1024,2048", "comma-separated n of the Dense.Mul cases")
	factor := flag.Int("factor", 1024, "n of Cholesky and LU (0 skips them)")
	svd := flag.Int("svd", 512, "n of the SVD (0 skips it)")
	rounds := flag.Int("rounds", 3, "samples per cell; tables show the median")
	minTime := flag.Duration("min", 300*time.Millisecond, "least time of one timed block")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "gonummat: -o DIR is required")
		flag.Usage()
		os.Exit(2)
	}
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "gonummat: -sizes: bad size %q\n", f)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	threads := runtime.GOMAXPROCS(0)
	openblas.SetThreads(threads)
	c := gonummat.Config{
		Impls: []gonummat.Impl{
			{Name: "gonum", BLAS: gonum.Implementation{}},
			{Name: "lanes", BLAS: lanesblas.Implementation{}},
			{Name: "openblas", BLAS: netlib.Implementation{}},
		},
		Subject:  "lanes",
		MulSizes: ns, FactorN: *factor, SVDN: *svd,
		Rounds: *rounds, MinTime: *minTime,
		// Longer than lanes' worker spin (2 ms) and OpenBLAS's (about 2²⁸
		// cycles), so that neither's idle threads run during the other's
		// block.
		Pause: 150 * time.Millisecond,
		// One core's peak times the cores: a second goroutine of the peak
		// loop is not always running on a shared machine (see
		// results/dgemm-openblas.md), so the cores' peak is measured on one.
		Peak:     func() float64 { return float64(threads) * openblas.PeakGFLOPs(1, 50*time.Millisecond) },
		Progress: os.Stderr,
	}
	load0 := loadavg()
	start := time.Now()
	res, err := gonummat.Run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# gonum's mat with gonum, lanes and OpenBLAS as blas64\n\n")
	fmt.Fprintf(&b, "`cd bench && go run -tags openblas ./cmd/gonummat %s`, %s, %s.\n\n",
		strings.Join(os.Args[1:], " "), start.UTC().Format("2006-01-02 15:04 UTC"), time.Since(start).Round(time.Second))
	fmt.Fprintf(&b, "- CPU: %s, %s/%s, GOMAXPROCS %d (lanes' and gonum's threads; OpenBLAS set to as many).\n", cpuid.CPU.BrandName, runtime.GOOS, runtime.GOARCH, threads)
	fmt.Fprintf(&b, "- lanes level: %v. OpenBLAS: %s (through gonum.org/v1/netlib/blas/netlib).\n", dispatch.Active(), openblas.Config())
	load1 := loadavg()
	fmt.Fprintf(&b, "- Load average before and after the run: %s; %s.\n", load0, load1)
	if busy(load0, threads) || busy(load1, threads) {
		fmt.Fprintf(&b, "- **The machine was shared** (a one-minute load average above its %d threads): other processes took CPU time from every implementation alike, but the figures are not a quiet machine's.\n", threads)
	}
	fmt.Fprintf(&b, "- Medians of %d rounds; each round installs each implementation (rotating the order), pauses %v, warms up with one call and times calls for at least %v. Every implementation's result was checked against gonum's first.\n", c.Rounds, c.Pause, c.MinTime)
	fmt.Fprintf(&b, "- The peak is %d × one core's: bench/openblas's C loop of independent AVX-512 FMAs on one goroutine, once a round of every Dense.Mul case (median).\n\n", threads)
	if err := res.Markdown(&b); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b.WriteString("![Dense.Mul GFLOP/s](dense-mul.png)\n")
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(*dir, "report.md"), b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := res.SaveMulChart(*dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(b.Bytes())
}

// busy reports whether the one-minute load average in load exceeds
// threads.
func busy(load string, threads int) bool {
	f := strings.Fields(load)
	if len(f) == 0 {
		return false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return err == nil && v > float64(threads)
}

// loadavg is the first three fields of /proc/loadavg, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
