// Package chart draws the line charts of the benchmark report with
// gonum.org/v1/plot: series against a (usually logarithmic) size axis,
// horizontal reference lines (a peak) and vertical markers (a crossover),
// with the legend beside the plot so that it never hides a line.
package chart

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Series is one line; points whose X or Y is not a positive finite number
// (on a log axis) or not finite are left out.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool // peers are dashed, lanes solid
}

// Ref is a reference line at V: horizontal in Chart.HLines, vertical in
// Chart.VLines.
type Ref struct {
	Name string
	V    float64
}

// Chart is one PNG.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	XTicks                []float64 // labelled x ticks in place of the default ones
	Series                []Series
	HLines, VLines        []Ref
}

// palette is Tableau's ten colours: distinguishable and in a fixed order,
// so that an implementation keeps its colour from chart to chart when the
// series come in the same order.
var palette = []color.Color{
	color.RGBA{31, 119, 180, 255}, color.RGBA{255, 127, 14, 255}, color.RGBA{44, 160, 44, 255},
	color.RGBA{214, 39, 40, 255}, color.RGBA{148, 103, 189, 255}, color.RGBA{140, 86, 75, 255},
	color.RGBA{227, 119, 194, 255}, color.RGBA{127, 127, 127, 255}, color.RGBA{188, 189, 34, 255},
	color.RGBA{23, 190, 207, 255},
}

// Width and Height are the size of every chart; the legend takes what its
// longest entry needs on the right.
const (
	Width  = 8 * vg.Inch
	Height = 4.5 * vg.Inch
)

// SavePNG draws c into a PNG file at path.
func (c Chart) SavePNG(path string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Add(plotter.NewGrid())
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if len(c.XTicks) > 0 {
		var ticks plot.ConstantTicks
		for _, x := range c.XTicks {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 4, 64)})
		}
		p.X.Tick.Marker = ticks
	}
	if c.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	var names []string
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	n := 0
	for i, s := range c.Series {
		var xys plotter.XYs
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if !c.usable(x, c.LogX) || !c.usable(y, c.LogY) {
				continue
			}
			xys = append(xys, plotter.XY{X: x, Y: y})
			xmin, xmax, ymin, ymax = min(xmin, x), max(xmax, x), min(ymin, y), max(ymax, y)
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("chart %q: %s: %w", c.Title, s.Name, err)
		}
		col := palette[i%len(palette)]
		l.Color, pts.Color = col, col
		l.Width = vg.Points(1.5)
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2.2)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l, pts)
		legend.Add(s.Name, l, pts)
		names = append(names, s.Name)
		n++
	}
	if n == 0 {
		return fmt.Errorf("chart %q: no points to draw", c.Title)
	}
	for _, r := range c.HLines {
		if c.usable(r.V, c.LogY) {
			ymin, ymax = min(ymin, r.V), max(ymax, r.V)
		}
	}
	for _, r := range c.VLines {
		if c.usable(r.V, c.LogX) {
			xmin, xmax = min(xmin, r.V), max(xmax, r.V)
		}
	}
	// Reference lines span the data; a little room above the highest one.
	if c.LogY {
		ymax *= 1.15
	} else {
		ymin, ymax = min(ymin, 0), ymax*1.08
	}
	p.Y.Min, p.Y.Max = ymin, ymax
	p.X.Min, p.X.Max = xmin, xmax
	for i, r := range c.HLines {
		if !c.usable(r.V, c.LogY) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: r.V}, {X: xmax, Y: r.V}})
		if err != nil {
			return err
		}
		l.Color = color.Black
		l.Width = vg.Points(1.2)
		l.Dashes = refDashes(i)
		p.Add(l)
		legend.Add(r.Name, l)
		names = append(names, r.Name)
	}
	for i, r := range c.VLines {
		if !c.usable(r.V, c.LogX) {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: r.V, Y: ymin}, {X: r.V, Y: ymax}})
		if err != nil {
			return err
		}
		l.Color = color.Gray{Y: 60}
		l.Width = vg.Points(1.5)
		l.Dashes = refDashes(i)
		p.Add(l)
		legend.Add(r.Name, l)
		names = append(names, r.Name)
	}
	legendWidth := vg.Length(0)
	for _, name := range names {
		legendWidth = max(legendWidth, legend.TextStyle.Width(name))
	}
	legendWidth += legend.ThumbnailWidth + vg.Points(18)

	img := vgimg.New(Width, Height)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, Width-legendWidth+vg.Points(6), 0, 0, -vg.Points(18)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (c Chart) usable(v float64, log bool) bool {
	if log {
		return v > 0 && !math.IsInf(v, 1)
	}
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

func refDashes(i int) []vg.Length {
	return [][]vg.Length{
		{vg.Points(6), vg.Points(3)},
		{vg.Points(2), vg.Points(2)},
		{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)},
	}[i%3]
}
