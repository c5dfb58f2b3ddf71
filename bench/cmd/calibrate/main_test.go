package main

import (
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lanesgo/lanes/dispatch"
)

func quickConfig(t *testing.T) config {
	return config{out: filepath.Join(t.TempDir(), "lanes", "thresholds.json"), margin: 0.1,
		round: time.Millisecond, rounds: 1, quick: true, progress: io.Discard}
}

// Without an accelerator calibrate says so and writes CPU-only thresholds
// that dispatch loads.
func TestCalibrateCPUOnly(t *testing.T) {
	defer dispatch.SetAccelerator(dispatch.SetAccelerator(nil))
	c := quickConfig(t)
	var out strings.Builder
	got, err := run(&out, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"accelerator: none", "### MatMul", "### Conv2D", "| 64 |", "no accelerator measured",
		`"gpu": false`, "dispatch loads it: MatMul host cpu, device cpu; Conv2D host cpu, device cpu"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	loaded, err := dispatch.LoadThresholds(c.out)
	if err != nil {
		t.Fatal(err)
	}
	if loaded != got || loaded.Device != "" || loaded.Margin != 0.1 || loaded.Calibrated.IsZero() || !strings.Contains(loaded.CPU, "GOMAXPROCS") {
		t.Errorf("file holds %+v, run returned %+v", loaded, got)
	}
	for _, op := range []dispatch.Op{dispatch.OpMatMul, dispatch.OpConv2D} {
		for _, res := range []bool{false, true} {
			if r := loaded.Rule(op, res); r.GPU {
				t.Errorf("%v resident=%v: %v, want cpu", op, res, r)
			}
		}
	}
}

// spinAccelerator is a device that takes a fixed time per call.
type spinAccelerator struct{ per time.Duration }

func (spinAccelerator) Name() string { return "spin device" }
func (a spinAccelerator) Prepare(dispatch.Op, bool, ...int) (func() error, func(), error) {
	return func() error {
		for start := time.Now(); time.Since(start) < a.per; {
		}
		return nil
	}, func() {}, nil
}

// With an accelerator registered calibrate times it, records it in the
// file and writes the charts.
func TestCalibrateWithAccelerator(t *testing.T) {
	defer dispatch.SetAccelerator(dispatch.SetAccelerator(spinAccelerator{per: 20 * time.Microsecond}))
	c := quickConfig(t)
	c.plots = filepath.Join(t.TempDir(), "charts")
	var out strings.Builder
	got, err := run(&out, c)
	if err != nil {
		t.Fatal(err)
	}
	if got.Device != "spin device" || !strings.Contains(out.String(), "accelerator: spin device") ||
		!strings.Contains(out.String(), "host-resident") || !strings.Contains(out.String(), `"device": "spin device"`) {
		t.Errorf("output:\n%s", out.String())
	}
	for _, name := range []string{"crossover_MatMul.png", "crossover_Conv2D.png"} {
		f, err := os.Open(filepath.Join(c.plots, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 400 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCalibrateRefusesBadFlags(t *testing.T) {
	c := quickConfig(t)
	c.rounds = 0
	if _, err := run(io.Discard, c); err == nil {
		t.Error("-rounds 0 accepted")
	}
	t.Setenv(dispatch.ThresholdsEnv, "default")
	c = quickConfig(t)
	c.out = ""
	if _, err := run(io.Discard, c); err == nil || !strings.Contains(err.Error(), "give -o") {
		t.Errorf("no path: %v", err)
	}
}
