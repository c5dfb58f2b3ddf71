package gonummat

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/lanesgo/lanes/bench/chart"
)

// subject is the index of Config.Subject in Impls, or -1.
func (r *Result) subject() int {
	return slices.IndexFunc(r.Config.Impls, func(im Impl) bool { return im.Name == r.Config.Subject })
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()*1e3) }

// Markdown writes the tables: per case the median time of each
// implementation, the subject's speed-up over each other one (the other's
// time over the subject's), and for
// Dense.Mul the GFLOP/s of each and their share of the measured peak.
func (r *Result) Markdown(w io.Writer) error {
	impls := r.Config.Impls
	sub := r.subject()
	var err error
	p := func(format string, a ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, a...)
		}
	}
	header := func(first string, gflops bool) {
		p("| %s |", first)
		for _, im := range impls {
			p(" %s ms |", im.Name)
		}
		for i, im := range impls {
			if i != sub && sub >= 0 {
				p(" %s speed-up vs %s |", impls[sub].Name, im.Name)
			}
		}
		if gflops {
			for _, im := range impls {
				p(" %s GFLOP/s |", im.Name)
			}
			if r.Peak > 0 {
				for _, im := range impls {
					p(" %s %% peak |", im.Name)
				}
			}
		}
		p("\n|---|")
		n := len(impls) + max(len(impls)-1, 0)
		if gflops {
			n += len(impls)
			if r.Peak > 0 {
				n += len(impls)
			}
		}
		for range n {
			p("--:|")
		}
		p("\n")
	}
	row := func(label string, c Case, gflops bool) {
		p("| %s |", label)
		for _, t := range c.Times {
			p(" %s |", ms(t))
		}
		for i, t := range c.Times {
			if i != sub && sub >= 0 {
				p(" %.2fx |", t.Seconds()/c.Times[sub].Seconds())
			}
		}
		if gflops {
			for _, t := range c.Times {
				p(" %.1f |", c.Flops/t.Seconds()/1e9)
			}
			if r.Peak > 0 {
				for _, t := range c.Times {
					p(" %.0f |", 100*c.Flops/t.Seconds()/1e9/r.Peak)
				}
			}
		}
		p("\n")
	}
	var mul, other []Case
	for _, c := range r.Cases {
		if c.Name == "Dense.Mul" {
			mul = append(mul, c)
		} else {
			other = append(other, c)
		}
	}
	if len(mul) > 0 {
		p("### mat.Dense.Mul (n×n times n×n: Dgemm)\n\n")
		if r.Peak > 0 {
			p("float64 FMA peak measured in this run: %.1f GFLOP/s.\n\n", r.Peak)
		}
		header("n", true)
		for _, c := range mul {
			row(fmt.Sprint(c.N), c, true)
		}
		p("\n")
	}
	if len(other) > 0 {
		p("### Factorizations (mat.Cholesky.Factorize, mat.LU.Factorize, mat.SVD.Factorize with SVDThin)\n\n")
		header("case", false)
		for _, c := range other {
			row(fmt.Sprintf("%s n=%d", c.Name, c.N), c, false)
		}
		p("\n")
	}
	return err
}

// MulChart is the Dense.Mul GFLOP/s by n of every implementation, with the
// measured peak as a reference line.
func (r *Result) MulChart() chart.Chart {
	c := chart.Chart{
		Title:  "mat.Dense.Mul, float64",
		XLabel: "n (n×n times n×n)", YLabel: "GFLOP/s", LogX: true,
	}
	for i, im := range r.Config.Impls {
		s := chart.Series{Name: im.Name, Dashed: im.Name != r.Config.Subject}
		for _, cs := range r.Cases {
			if cs.Name == "Dense.Mul" {
				s.X = append(s.X, float64(cs.N))
				s.Y = append(s.Y, cs.Flops/cs.Times[i].Seconds()/1e9)
				if i == 0 {
					c.XTicks = append(c.XTicks, float64(cs.N))
				}
			}
		}
		c.Series = append(c.Series, s)
	}
	if r.Peak > 0 {
		c.HLines = []chart.Ref{{Name: "FMA peak", V: r.Peak}}
	}
	return c
}

// SaveMulChart writes MulChart to dir/dense-mul.png.
func (r *Result) SaveMulChart(dir string) error {
	return r.MulChart().SavePNG(filepath.Join(dir, "dense-mul.png"))
}
