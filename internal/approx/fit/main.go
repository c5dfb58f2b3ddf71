// Command fit derives the polynomial coefficients in internal/approx that are
// not plain Taylor series: near-minimax fits of relative error, by Lawson's
// algorithm (iteratively reweighted least squares on a dense grid, solved by
// Householder QR in float64), with the coefficients rounded to float32 and the
// error measured again after rounding. Run it to reproduce approx.go's tables:
//
//	go run ./internal/approx/fit
package main

import (
	"fmt"
	"math"
)

// fit returns coefficients c[0..deg] of Σ c[k]·u^k ≈ f(x) with u = toU(x),
// over grid points of [lo, hi], minimizing max |poly - f|/|f|.
func fit(f func(float64) float64, toU func(float64) float64, lo, hi float64, deg int) ([]float64, float64) {
	return fitFixed(f, toU, lo, hi, deg, nil)
}

// fitFixed fits like fit with the first len(fixed) coefficients given.
func fitFixed(f func(float64) float64, toU func(float64) float64, lo, hi float64, deg int, fixed []float64) ([]float64, float64) {
	const m = 4000
	xs := make([]float64, m)
	for i := range xs {
		// Chebyshev-distributed grid.
		xs[i] = lo + (hi-lo)*(1-math.Cos(math.Pi*float64(i)/float64(m-1)))/2
	}
	w := make([]float64, m)
	for i := range w {
		w[i] = 1
	}
	var c []float64
	for iter := 0; iter < 60; iter++ {
		a := make([][]float64, m)
		b := make([]float64, m)
		for i, x := range xs {
			fx := f(x)
			sw := math.Sqrt(w[i]) / math.Abs(fx)
			row := make([]float64, deg+1-len(fixed))
			u := toU(x)
			p := 1.0
			rest := fx
			for k := range fixed {
				rest -= fixed[k] * p
				p *= u
			}
			for k := range row {
				row[k] = p * sw
				p *= u
			}
			a[i] = row
			b[i] = rest * sw
		}
		c = append(append([]float64(nil), fixed...), lstsq(a, b)...)
		// Lawson update: weight each point by its error.
		var sum float64
		for i, x := range xs {
			e := math.Abs(eval(c, toU(x))-f(x)) / math.Abs(f(x))
			w[i] *= e
			sum += w[i]
		}
		for i := range w {
			w[i] /= sum
		}
	}
	return c, maxErr(f, toU, lo, hi, c)
}

func eval(c []float64, u float64) float64 {
	p := 0.0
	for k := len(c) - 1; k >= 0; k-- {
		p = p*u + c[k]
	}
	return p
}

func maxErr(f, toU func(float64) float64, lo, hi float64, c []float64) float64 {
	worst := 0.0
	for i := 0; i <= 200000; i++ {
		x := lo + (hi-lo)*float64(i)/200000
		worst = math.Max(worst, math.Abs(eval(c, toU(x))-f(x))/math.Abs(f(x)))
	}
	return worst
}

// lstsq solves min |A c - b| by Householder QR.
func lstsq(a [][]float64, b []float64) []float64 {
	m, n := len(a), len(a[0])
	for k := 0; k < n; k++ {
		var norm float64
		for i := k; i < m; i++ {
			norm += a[i][k] * a[i][k]
		}
		norm = math.Sqrt(norm)
		if a[k][k] > 0 {
			norm = -norm
		}
		v := make([]float64, m)
		for i := k; i < m; i++ {
			v[i] = a[i][k]
		}
		v[k] -= norm
		var vv float64
		for i := k; i < m; i++ {
			vv += v[i] * v[i]
		}
		if vv == 0 {
			continue
		}
		for j := k; j < n; j++ {
			var d float64
			for i := k; i < m; i++ {
				d += v[i] * a[i][j]
			}
			d = 2 * d / vv
			for i := k; i < m; i++ {
				a[i][j] -= d * v[i]
			}
		}
		var d float64
		for i := k; i < m; i++ {
			d += v[i] * b[i]
		}
		d = 2 * d / vv
		for i := k; i < m; i++ {
			b[i] -= d * v[i]
		}
	}
	c := make([]float64, n)
	for k := n - 1; k >= 0; k-- {
		s := b[k]
		for j := k + 1; j < n; j++ {
			s -= a[k][j] * c[j]
		}
		c[k] = s / a[k][k]
	}
	return c
}

func report(name string, f, toU func(float64) float64, lo, hi float64, deg int) {
	_, e := fit(f, toU, lo, hi, deg)
	// Round one coefficient at a time to float32 and refit the rest, so
	// later coefficients absorb the rounding of earlier ones.
	var r []float64
	for k := 0; k <= deg; k++ {
		ck, _ := fitFixed(f, toU, lo, hi, deg, r)
		r = append(r, float64(float32(ck[k])))
	}
	e32 := maxErr(f, toU, lo, hi, r)
	fmt.Printf("// %s: degree %d, max relative error %.3g (%.3f ULP), %.3g (%.3f ULP) with float32 coefficients\n",
		name, deg, e, e/0x1p-24, e32, e32/0x1p-24)
	fmt.Printf("var %s = [...]float32{\n", name)
	for _, v := range r {
		fmt.Printf("\t%s,\n", fmt.Sprint(float32(v)))
	}
	fmt.Println("}")
}

func main() {
	// erf(x) = x·(2/√π + z·P(z)), z = x², for |x| <= 0.875: the leading
	// coefficient is applied as a float32 pair (ErfC0Hi + ErfC0Lo), so only
	// the correction term P is fitted (relative error of the correction).
	c0 := 2 / math.Sqrt(math.Pi)
	report("ErfPoly", func(z float64) float64 { x := math.Sqrt(z); return (math.Erf(x)/x - c0) / z },
		func(z float64) float64 { return z }, 1e-6, 0.875*0.875, 5)
	fmt.Printf("// ErfC0Hi, ErfC0Lo = %v, %v\n", float32(c0), float32(c0-float64(float32(c0))))
	// erfcx(a) = erfc(a)·e^(a²) = Q(u), u = 1/(1+a/2) - 2/3, for a in [0, 4.5].
	erfcx := func(a float64) float64 { return math.Erfc(a) * math.Exp(a*a) }
	// The centre 2/3 is taken as the float32 the kernels subtract.
	c := float64(float32(2.0 / 3))
	report("ErfcxPoly", func(u float64) float64 { t := u + c; return erfcx(2 * (1 - t) / t) },
		func(u float64) float64 { return u }, 1/(1+4.5/2)-c, 1-c, 10)
}
