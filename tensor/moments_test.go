package tensor

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactMoments returns the exact mean and variance (divisor n-ddof) of
// float32 values, computed with rationals and rounded to float64 at the
// end, and mean|x|, mean|x - mean| and max|x - mean| for the error bounds.
func exactMoments(xs []float32, ddof int) (mean, variance, absMean, spread, maxDev float64) {
	n := int64(len(xs))
	var s, s2 big.Rat
	for _, v := range xs {
		var r big.Rat
		r.SetFloat64(float64(v))
		s.Add(&s, &r)
		s2.Add(&s2, r.Mul(&r, &r))
		absMean += math.Abs(float64(v))
	}
	var m, v big.Rat
	m.Quo(&s, big.NewRat(n, 1))
	// Σ(x - m)² = Σx² - n·m²
	v.Mul(&m, &m)
	v.Mul(&v, big.NewRat(n, 1))
	v.Sub(&s2, &v)
	v.Quo(&v, big.NewRat(n-int64(ddof), 1))
	mean, _ = m.Float64()
	variance, _ = v.Float64()
	for _, x := range xs {
		spread += math.Abs(float64(x) - mean)
		maxDev = max(maxDev, math.Abs(float64(x)-mean))
	}
	return mean, variance, absMean / float64(n), spread / float64(n), maxDev
}

// ulp32 is the spacing of float32 values at |v|.
func ulp32(v float64) float64 {
	f := float32(math.Abs(v))
	if f >= math.MaxFloat32 {
		return math.Inf(1)
	}
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

// TestMomentsAccuracy checks Mean, Var and Std against the exact moments
// of the elements (rationals), within the bounds their docs state, on
// data that float32 sums get wrong: a large offset with a small spread,
// values near 2²⁴, values whose squares or sums overflow float32, and
// plain normal data, over reductions along contiguous runs (one output
// per run) and across them (kept-axis runs), in every layout.
func TestMomentsAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	gens := map[string]func() float32{
		"normal":      func() float32 { return float32(r.NormFloat64()) },
		"offset 1e4":  func() float32 { return float32(1e4 + 1e-2*r.NormFloat64()) },
		"near 2^24":   func() float32 { return float32(1<<24 + 2*r.IntN(8)) },
		"huge":        func() float32 { return float32(3e38 * (2*r.Float64() - 1)) },
		"1e20 signed": func() float32 { return float32(1e20 * float64(2*r.IntN(2)-1)) },
		"wide":        func() float32 { return float32(math.Ldexp(r.NormFloat64(), r.IntN(60)-30)) },
		"one outlier": func() float32 {
			if r.IntN(500) == 0 {
				return math.Nextafter32(1e4, 2e4)
			}
			return 1e4
		},
		"binade edge": func() float32 { return float32(1<<24 - 2 + r.IntN(5)) }, // 2²⁴-2 .. 2²⁴+2, rounded to even above
		"outliers": func() float32 { // a few huge values among small ones: the shifts may be outliers
			if r.IntN(50) == 0 {
				return float32(1e30 * r.NormFloat64())
			}
			return float32(r.NormFloat64())
		},
	}
	var worstMean, worstVar, worstStd float64
	for name, gen := range gens {
		for _, c := range []struct {
			shape []int
			axes  []int
		}{
			{[]int{3}, nil}, {[]int{1000}, nil}, {[]int{7, 300}, []int{1}}, {[]int{300, 7}, []int{0}},
			{[]int{4, 5, 60}, []int{0, 2}}, {[]int{2, 600}, nil},
		} {
			for _, layout := range layouts {
				x := randLayout(r, layout, c.shape...)
				// randLayout fills from RandN; refill the same view.
				base := x.Clone()
				bd := base.Data()
				for i := range bd {
					bd[i] = gen()
				}
				if layout == "expanded" {
					x = base // the expanded layout repeats values: keep it simple
				} else {
					CopyInto(x, base)
				}
				mask := reduceAxes("test", x, c.axes)
				groups := map[string][]float32{}
				indices(x.Shape(), func(idx []int) {
					k := keyOf(idx, mask)
					groups[k] = append(groups[k], x.At(idx...))
				})
				for _, ddof := range []int{0, 1} {
					mean, vr, sd := Mean(x, true, c.axes...), Var(x, ddof, true, c.axes...), Std(x, ddof, true, c.axes...)
					_, keep, _ := reducedShapes(x, mask, true)
					indices(keep, func(idx []int) {
						xs := groups[keyOf(idx, mask)]
						em, ev, abs, spread, maxDev := exactMoments(xs, ddof)
						n := float64(len(xs))
						what := fmt.Sprintf("%s %v axes %v %s ddof %d at %v", name, c.shape, c.axes, layout, ddof, idx)
						bound := ulp32(em)/2 + 0x1p-11*spread + 0x1p-19*maxDev + (0x1p-26+n*0x1p-53)*abs
						if g := float64(mean.At(idx...)); !(math.Abs(g-em) <= bound) {
							t.Errorf("%s: Mean %v, exact %v (off %v, bound %v)", what, g, em, g-em, bound)
						} else if em != 0 {
							worstMean = max(worstMean, math.Abs(g-em)/ulp32(em))
						}
						for _, q := range []struct {
							what      string
							got, want float64
							rel       float64 // besides half an ulp
							worstp    *float64
						}{
							{"Var", float64(vr.At(idx...)), ev, (n + 2) * 0x1p-51, &worstVar},
							{"Std", float64(sd.At(idx...)), math.Sqrt(ev), (n + 2) * 0x1p-52, &worstStd},
						} {
							switch err := math.Abs(q.got - q.want); {
							case q.want > math.MaxFloat32:
								if !math.IsInf(q.got, 1) {
									t.Errorf("%s: %s %v, exact %v overflows float32", what, q.what, q.got, q.want)
								}
							case !(err <= ulp32(q.want)/2+q.rel*q.want):
								t.Errorf("%s: %s %v, exact %v (off %.3g ulp)", what, q.what, q.got, q.want, err/ulp32(q.want))
							case q.want > 0:
								*q.worstp = max(*q.worstp, err/ulp32(q.want))
							}
						}
					})
				}
			}
		}
	}
	t.Logf("worst errors in ulps: Mean %.3g, Var %.3g, Std %.3g", worstMean, worstVar, worstStd)
}

// TestMomentsExamples pins the cases float32 accumulation got wrong.
func TestMomentsExamples(t *testing.T) {
	for _, c := range []struct {
		what string
		got  *Tensor
		want float32
	}{
		{"Mean(16777216, 16777218, 16777220)", Mean(FromSlice([]float32{16777216, 16777218, 16777220}, 3), false), 16777218},
		{"Var(16777216, 16777218)", Var(FromSlice([]float32{16777216, 16777218}, 2), 0, false), 1},
		{"Var(16777216, 16777218, 16777220), ddof 1", Var(FromSlice([]float32{16777216, 16777218, 16777220}, 3), 1, false), 4},
		{"Mean(3e38, 3e38)", Mean(FromSlice([]float32{3e38, 3e38}, 2), false), 3e38},
		{"Std(1e20, -1e20)", Std(FromSlice([]float32{1e20, -1e20}, 2), 0, false), 1e20},
		{"Var(1e20, -1e20)", Var(FromSlice([]float32{1e20, -1e20}, 2), 0, false), float32(math.Inf(1))},
		{"Mean(Inf, 1)", Mean(FromSlice([]float32{float32(math.Inf(1)), 1}, 2), false), float32(math.Inf(1))},
		{"Var(Inf, 1)", Var(FromSlice([]float32{float32(math.Inf(1)), 1}, 2), 0, false), float32(math.NaN())},
		{"Mean(NaN, 1)", Mean(FromSlice([]float32{float32(math.NaN()), 1}, 2), false), float32(math.NaN())},
		{"Mean axis 0 of 16777216, 16777218, 16777220 as a column", Mean(FromSlice([]float32{16777216, 16777218, 16777220}, 3, 1), false, 0), 16777218},
		// Kept-axis runs go through float32 blocks: non-finite ones are
		// redone in float64.
		{"Mean axis 0 of a column 1, Inf", Mean(FromSlice([]float32{1, float32(math.Inf(1))}, 2, 1), false, 0), float32(math.Inf(1))},
		{"Mean axis 0 of a column 3e38, -3e38, 3e38, 3e38", Mean(FromSlice([]float32{3e38, -3e38, 3e38, 3e38}, 4, 1), false, 0), 1.5e38},
		{"Mean axis 0 of a column NaN, 1", Mean(FromSlice([]float32{float32(math.NaN()), 1}, 2, 1), false, 0), float32(math.NaN())},
		{"Var axis 0 of a column 1e20, -1e20", Var(FromSlice([]float32{1e20, -1e20}, 2, 1), 0, false, 0), float32(math.Inf(1))},
		{"Std axis 0 of a column 1e20, -1e20", Std(FromSlice([]float32{1e20, -1e20}, 2, 1), 0, false, 0), 1e20},
	} {
		g := c.got.Item()
		if !(g == c.want || g != g && c.want != c.want) {
			t.Errorf("%s = %v, want %v", c.what, g, c.want)
		}
	}
}
