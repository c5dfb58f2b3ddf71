package chart

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestSavePNG(t *testing.T) {
	dir := t.TempDir()
	c := Chart{
		Title: "test", XLabel: "n", YLabel: "GB/s", LogX: true, LogY: true, XTicks: []float64{10, 100, 1000},
		Series: []Series{
			{Name: "a", X: []float64{10, 100, 1000}, Y: []float64{1, 10, 5}},
			// Points a log axis cannot show are left out, not a panic.
			{Name: "b", X: []float64{0, 100, 1000}, Y: []float64{3, math.NaN(), 2}, Dashed: true},
		},
		HLines: []Ref{{"peak", 20}},
		VLines: []Ref{{"crossover", 300}, {"off the axis", -1}},
	}
	path := filepath.Join(dir, "c.png")
	if err := c.SavePNG(path); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != int(Width.Dots(96)) || b.Dy() != int(Height.Dots(96)) {
		t.Errorf("image is %v", b)
	}
	empty := Chart{Title: "empty", LogY: true, Series: []Series{{Name: "zeros", X: []float64{1, 2}, Y: []float64{0, 0}}}}
	if err := empty.SavePNG(filepath.Join(dir, "e.png")); err == nil {
		t.Error("a chart with no drawable point was saved")
	}
}
