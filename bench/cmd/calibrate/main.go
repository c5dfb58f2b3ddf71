// Command calibrate measures, on this machine, from which size MatMul and
// Conv2D run faster on the accelerator than on the CPU, with operands in
// host memory (each call copies them in and the result back) and with
// operands already on the device, and writes the crossovers, plus a margin,
// to the thresholds file that dispatch.Place reads:
//
//	go -C bench run ./cmd/calibrate                 # writes os.UserConfigDir()/lanes/thresholds.json
//	go -C bench run ./cmd/calibrate -o t.json       # or $LANES_THRESHOLDS when set
//	go -C bench run -tags cuda ./cmd/calibrate      # with the CUDA plugin (after make cuda)
//
// The accelerator is whatever dispatch.Accelerator a linked plugin
// registered; a build without one says so and writes CPU-only thresholds
// (the CPU sweep is still timed and printed).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/lanesgo/lanes/bench/crossover"
	"github.com/lanesgo/lanes/bench/peers"
	"github.com/lanesgo/lanes/dispatch"
)

type config struct {
	out      string        // the thresholds file
	margin   float64       // added to each crossover
	round    time.Duration // one measuring round
	rounds   int           // rounds per cell (the median is kept)
	quick    bool          // tiny sweeps, for tests
	plots    string        // directory for the CPU-vs-GPU charts, "" for none
	progress io.Writer     // a line per measured shape
}

func main() {
	var c config
	flag.StringVar(&c.out, "o", "", "thresholds file to write (default: $"+dispatch.ThresholdsEnv+", else os.UserConfigDir()/lanes/thresholds.json)")
	flag.Float64Var(&c.margin, "margin", 0.1, "fraction added to each measured crossover")
	flag.DurationVar(&c.round, "round", 30*time.Millisecond, "time of one measuring round")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds per shape; the median is kept")
	flag.BoolVar(&c.quick, "quick", false, "tiny sweeps (a smoke test, not a calibration)")
	flag.StringVar(&c.plots, "plots", "", "also write the CPU-vs-GPU charts (PNG) into this directory")
	flag.Parse()
	c.progress = os.Stderr
	if _, err := run(os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "calibrate:", err)
		os.Exit(1)
	}
}

// run calibrates as c says, prints the tables to w and returns the
// thresholds written.
func run(w io.Writer, c config) (dispatch.Thresholds, error) {
	if c.out == "" {
		c.out = dispatch.ThresholdsPath()
		if c.out == "" {
			return dispatch.Thresholds{}, errors.New("no thresholds path (" + dispatch.ThresholdsEnv + "=default, or no config directory): give -o")
		}
	}
	if !(c.margin >= 0) || c.rounds < 1 {
		return dispatch.Thresholds{}, fmt.Errorf("bad -margin %v or -rounds %d", c.margin, c.rounds)
	}
	fmt.Fprint(w, dispatch.Report())
	acc := dispatch.RegisteredAccelerator()
	if acc == nil {
		fmt.Fprintln(w, "\naccelerator: none: no GPU in this build or on this machine (build with -tags cuda after `make cuda` on a machine with an NVIDIA GPU).")
		fmt.Fprintln(w, "The CPU is timed for the table; the thresholds written keep all work on the CPU.")
	} else {
		fmt.Fprintf(w, "\naccelerator: %s\n", acc.Name())
	}
	timer := func(f func()) float64 { return peers.Measure(f, c.round, c.rounds) }
	var sweeps []crossover.Sweep
	for _, op := range []dispatch.Op{dispatch.OpMatMul, dispatch.OpConv2D} {
		shapes := crossover.DefaultShapes(op, acc != nil)
		if c.quick {
			shapes = crossover.QuickShapes(op)
		}
		fmt.Fprintf(w, "\n### %v, ms per call (median of %d rounds of %v; * the GPU is faster)\n\n", op, c.rounds, c.round)
		s := crossover.Run(shapes, acc, timer, c.progress)
		crossover.WriteTable(w, s, c.margin)
		sweeps = append(sweeps, s)
		if c.plots != "" {
			if err := os.MkdirAll(c.plots, 0o755); err != nil {
				return dispatch.Thresholds{}, err
			}
			path := filepath.Join(c.plots, fmt.Sprintf("crossover_%s.png", op))
			if err := s.Chart(c.margin).SavePNG(path); err != nil {
				return dispatch.Thresholds{}, err
			}
			fmt.Fprintf(w, "\nchart: %s\n", path)
		}
	}
	cpu := fmt.Sprintf("%s, GOMAXPROCS %d, %v", cpuid.CPU.BrandName, runtime.GOMAXPROCS(0), dispatch.Active())
	t := crossover.Thresholds(sweeps[0], sweeps[1], c.margin, cpu)
	t.Calibrated = time.Now().UTC().Truncate(time.Second)
	if err := dispatch.WriteThresholds(c.out, t); err != nil {
		return dispatch.Thresholds{}, err
	}
	back, err := dispatch.LoadThresholds(c.out)
	if err != nil {
		return dispatch.Thresholds{}, fmt.Errorf("the file written does not load: %w", err)
	}
	data, err := os.ReadFile(c.out)
	if err != nil {
		return dispatch.Thresholds{}, err
	}
	fmt.Fprintf(w, "\n### Thresholds written to %s (%.0f%% margin)\n\n```json\n%s```\n\n", c.out, c.margin*100, data)
	fmt.Fprintf(w, "dispatch loads it: %s\n", back.Describe())
	if c.out != dispatch.ThresholdsPath() {
		fmt.Fprintf(w, "Place reads %q by default: set %s=%s to use this file.\n", dispatch.ThresholdsPath(), dispatch.ThresholdsEnv, c.out)
	} else {
		fmt.Fprintln(w, "Place reads it in every process started from now on.")
	}
	return back, nil
}
