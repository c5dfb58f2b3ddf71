package crossover

import (
	"fmt"

	"github.com/lanesgo/lanes/bench/chart"
	"github.com/lanesgo/lanes/dispatch"
)

// Chart returns the CPU-versus-device chart of s: milliseconds per call
// against the sweep's size, both axes logarithmic, with the crossovers Fit
// finds marked.
func (s Sweep) Chart(margin float64) chart.Chart {
	c := chart.Chart{
		Title:  fmt.Sprintf("%v: CPU vs %s, ms per call", s.Op, s.Device),
		XLabel: s.SizeName(), YLabel: "ms per call (log)", LogX: true, LogY: true,
	}
	if !s.HasDevice() {
		c.Title = fmt.Sprintf("%v: CPU, ms per call (no accelerator measured)", s.Op)
	}
	var xs, cpu, host, dev []float64
	for _, p := range s.Points {
		xs = append(xs, p.Size)
		cpu = append(cpu, p.CPU/1e6)
		host = append(host, p.GPUHost/1e6)
		dev = append(dev, p.GPUDevice/1e6)
	}
	if s.Op == dispatch.OpMatMul {
		c.XTicks = xs
	}
	c.Series = append(c.Series, chart.Series{Name: "CPU (lanes)", X: xs, Y: cpu})
	if !s.HasDevice() {
		return c
	}
	c.Series = append(c.Series,
		chart.Series{Name: "GPU, host operands", X: xs, Y: host, Dashed: true},
		chart.Series{Name: "GPU, device operands", X: xs, Y: dev, Dashed: true})
	h, d := Fit(s, margin)
	for _, x := range []struct {
		name string
		c    Crossover
	}{{"crossover, host", h}, {"crossover, device", d}} {
		if x.c.Found {
			c.VLines = append(c.VLines, chart.Ref{Name: fmt.Sprintf("%s ≈ %.3g", x.name, x.c.Size), V: x.c.Size})
		}
	}
	return c
}
