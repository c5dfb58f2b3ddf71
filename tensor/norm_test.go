package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refNorm normalizes groups of x in float64: group(i) names each element's
// group, param(i) its gamma/beta index. It returns y and per-group mean
// and biased variance.
func refNorm(x []float64, groups int, group, param func(i int) int, gamma, beta []float64, eps float64) (y, mean, variance []float64) {
	mean, variance = make([]float64, groups), make([]float64, groups)
	count := make([]float64, groups)
	for i, v := range x {
		mean[group(i)] += v
		count[group(i)]++
	}
	for g := range mean {
		mean[g] /= count[g]
	}
	for i, v := range x {
		d := v - mean[group(i)]
		variance[group(i)] += d * d
	}
	for g := range variance {
		variance[g] /= count[g]
	}
	y = make([]float64, len(x))
	for i, v := range x {
		g, p := group(i), param(i)
		y[i] = (v-mean[g])/math.Sqrt(variance[g]+eps)*gamma[p] + beta[p]
	}
	return y, mean, variance
}

// numGrad returns dL/dx, dL/dgamma and dL/dbeta of L = Σ dy·f(x, gamma,
// beta) by central differences.
func numGrad(f func(x, gamma, beta []float64) []float64, x, gamma, beta, dy []float64) [3][]float64 {
	loss := func() float64 {
		var l float64
		for i, v := range f(x, gamma, beta) {
			l += v * dy[i]
		}
		return l
	}
	var out [3][]float64
	for k, v := range [][]float64{x, gamma, beta} {
		out[k] = make([]float64, len(v))
		for i := range v {
			h := 1e-6 * max(1, math.Abs(v[i]))
			old := v[i]
			v[i] = old + h
			lp := loss()
			v[i] = old - h
			lm := loss()
			v[i] = old
			out[k][i] = (lp - lm) / (2 * h)
		}
	}
	return out
}

func f64(t *Tensor) []float64 {
	out := make([]float64, 0, t.Len())
	for _, v := range t.Data() {
		out = append(out, float64(v))
	}
	return out
}

// near fails unless got is within tol of want, relative to scale.
func near(t *testing.T, what string, got *Tensor, want []float64, tol, scale float64) {
	t.Helper()
	g := got.Data()
	for i, w := range want {
		if math.Abs(float64(g[i])-w) > tol*(scale+math.Abs(w)) {
			t.Errorf("%s: element %d is %v, want %v", what, i, g[i], w)
			return
		}
	}
}

func TestBatchNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, shape := range [][]int{{4, 3}, {2, 3, 5}, {3, 2, 4, 3}, {1, 4, 7, 1}, {2, 1, 3, 3}} {
		for _, training := range []bool{true, false} {
			kind := layouts[r.IntN(3)] // not expanded: every element distinct
			t.Run(fmt.Sprintf("%v/training=%v/%s", shape, training, kind), func(t *testing.T) {
				c := shape[1]
				x := randLayout(r, kind, shape...)
				x = Add(Scale(x, 3), Scalar(5)) // mean far from 0
				gamma, beta := RandN(r, c), RandN(r, c)
				rm, rv := RandN(r, c), RandU(r, 0.5, 2, c)
				rm0, rv0 := f64(rm), f64(rv)
				p := BatchNormParams{Gamma: gamma, Beta: beta, RunningMean: rm, RunningVar: rv, Training: training, Momentum: 0.3, Eps: 1e-3}
				y, s := BatchNorm(x, p)
				xs := f64(x.Contiguous())
				inner := x.Len() / shape[0] / c
				group := func(i int) int { return i / inner % c }
				fwd := func(x, g, b []float64) []float64 {
					if training {
						y, _, _ := refNorm(x, c, group, group, g, b, 1e-3)
						return y
					}
					y := make([]float64, len(x))
					for i, v := range x {
						k := group(i)
						y[i] = (v-rm0[k])/math.Sqrt(rv0[k]+1e-3)*g[k] + b[k]
					}
					return y
				}
				near(t, "y", y, fwd(xs, f64(gamma), f64(beta)), 1e-5, 1)
				if training {
					_, mean, variance := refNorm(xs, c, group, group, f64(gamma), f64(beta), 1e-3)
					m := float64(x.Len() / c)
					wantRM, wantRV, wantInv := make([]float64, c), make([]float64, c), make([]float64, c)
					for k := range c {
						wantRM[k] = 0.7*rm0[k] + 0.3*mean[k]
						wantRV[k] = 0.7*rv0[k] + 0.3*variance[k]*m/(m-1)
						wantInv[k] = 1 / math.Sqrt(variance[k]+1e-3)
					}
					near(t, "mean", s.Mean, mean, 1e-6, 5)
					near(t, "invstd", s.InvStd, wantInv, 1e-6, 0)
					near(t, "running mean", rm, wantRM, 1e-6, 1)
					near(t, "running var", rv, wantRV, 1e-6, 1)
				} else {
					near(t, "running mean unchanged", rm, rm0, 0, 0)
				}
				dy := RandN(r, shape...)
				dx, dg, db := BatchNormBackward(dy, x, s, p)
				want := numGrad(fwd, xs, f64(gamma), f64(beta), f64(dy))
				near(t, "dx", dx, want[0], 1e-4, 1)
				near(t, "dgamma", dg, want[1], 1e-4, 1)
				near(t, "dbeta", db, want[2], 1e-4, 1)
				// In place.
				xc := x.Clone()
				BatchNormInto(xc, NormStats{New(c), New(c)}, xc, BatchNormParams{Gamma: gamma, Beta: beta, RunningMean: RandN(r, c), RunningVar: RandU(r, 0.5, 2, c), Training: true, Eps: 1e-3})
				if training {
					near(t, "y in place", xc, f64(y), 1e-5, 1)
				}
			})
		}
	}
}

func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct {
		shape []int
		dims  int
	}{{[]int{3, 5}, 1}, {[]int{2, 3, 4}, 2}, {[]int{7}, 1}, {[]int{2, 2, 3}, 3}, {[]int{4, 1}, 0}} {
		for _, affine := range []bool{true, false} {
			kind := layouts[r.IntN(3)]
			t.Run(fmt.Sprintf("%v/dims=%d/affine=%v/%s", c.shape, c.dims, affine, kind), func(t *testing.T) {
				x := Add(Scale(randLayout(r, kind, c.shape...), 2), Scalar(-3))
				d := max(c.dims, 1)
				trail := c.shape[len(c.shape)-d:]
				p := LayerNormParams{Dims: c.dims, Eps: 1e-3}
				n := New(trail...).Len()
				gamma, beta := Ones(trail...), Zeros(trail...)
				if affine {
					gamma, beta = RandN(r, trail...), RandN(r, trail...)
					p.Gamma, p.Beta = gamma, beta
				}
				rows := x.Len() / n
				fwd := func(x, g, b []float64) []float64 {
					y, _, _ := refNorm(x, rows, func(i int) int { return i / n }, func(i int) int { return i % n }, g, b, 1e-3)
					return y
				}
				xs := f64(x.Contiguous())
				y, s := LayerNorm(x, p)
				near(t, "y", y, fwd(xs, f64(gamma), f64(beta)), 1e-5, 1)
				if got := s.Mean.Shape(); len(got) != len(c.shape)-d {
					t.Errorf("stats shape %v", got)
				}
				dy := RandN(r, c.shape...)
				dx, dg, db := LayerNormBackward(dy, x, s, p)
				want := numGrad(fwd, xs, f64(gamma), f64(beta), f64(dy))
				near(t, "dx", dx, want[0], 1e-4, 1)
				near(t, "dgamma", dg, want[1], 1e-4, 1)
				near(t, "dbeta", db, want[2], 1e-4, 1)
			})
		}
	}
}

func TestNormPanicsAndAllocs(t *testing.T) {
	expectPanic(t, "tensor: BatchNorm: inference needs RunningMean and RunningVar", func() { BatchNorm(New(2, 3), BatchNormParams{}) })
	expectPanic(t, "tensor: BatchNorm: shape [1 3]: training needs more than one value per channel", func() { BatchNorm(New(1, 3), BatchNormParams{Training: true}) })
	expectPanic(t, "tensor: BatchNorm: gamma shape [2], want 3 elements", func() { BatchNorm(New(2, 3), BatchNormParams{Training: true, Gamma: New(2)}) })
	expectPanic(t, "tensor: LayerNorm: shapes [2 3] and [2]: gamma and beta must have the normalized shape [3]", func() { LayerNorm(New(2, 3), LayerNormParams{Gamma: New(2)}) })
	expectPanic(t, "tensor: LayerNorm: 3 normalized axes for shape [2 3]", func() { LayerNorm(New(2, 3), LayerNormParams{Dims: 3}) })

	r := rand.New(rand.NewPCG(25, 26))
	x, dy := RandN(r, 32, 16, 14, 14), RandN(r, 32, 16, 14, 14)
	y, dx := New(x.Shape()...), New(x.Shape()...)
	s := NormStats{New(16), New(16)}
	bp := BatchNormParams{Gamma: RandN(r, 16), Beta: RandN(r, 16), RunningMean: New(16), RunningVar: Ones(16), Training: true}
	dg, db := New(16), New(16)
	ls := NormStats{New(32, 16, 14), New(32, 16, 14)}
	lp := LayerNormParams{Gamma: RandN(r, 14), Beta: RandN(r, 14)}
	lg, lb := New(14), New(14)
	for name, f := range map[string]func(){
		"BatchNormInto":         func() { BatchNormInto(y, s, x, bp) },
		"BatchNormBackwardInto": func() { BatchNormBackwardInto(dx, dg, db, dy, x, s, bp) },
		"LayerNormInto":         func() { LayerNormInto(y, ls, x, lp) },
		"LayerNormBackwardInto": func() { LayerNormBackwardInto(dx, lg, lb, dy, x, ls, lp) },
	} {
		noAllocs(t, name, f)
	}
}

// TestNormAccuracy compares LayerNorm and BatchNorm (training) with the
// float64 formula on data that float32 statistics got wrong: a mean far
// above the spread, values near 2²⁴, values whose squares overflow float32
// (LayerNorm of [1e20, -1e20] was [0, 0]: the float32 sum of squares was
// +Inf), values near float32's limit, and plain normal data. Each output
// must be within 16·2⁻²⁴·(|y| + |gamma|) of the formula's (about 8 ulp of
// a normalized value of size 1).
func TestNormAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	gens := []struct {
		name string
		f    func() float32
	}{
		{"normal", func() float32 { return float32(r.NormFloat64()) }},
		{"offset 1e4", func() float32 { return float32(1e4 + 1e-2*r.NormFloat64()) }},
		{"offset 1e6", func() float32 { return float32(1e6 + r.NormFloat64()) }},
		{"near 2^24", func() float32 { return float32(1<<24 + 2*r.IntN(8)) }},
		{"1e20 signed", func() float32 { return float32(1e20 * float64(2*r.IntN(2)-1)) }},
		{"huge", func() float32 { return float32(3e38 * (2*r.Float64() - 1)) }},
		{"wide", func() float32 { return float32(math.Ldexp(r.NormFloat64(), r.IntN(40)-20)) }},
	}
	worst := 0.0
	check := func(what string, got *Tensor, want, gamma []float64, param func(int) int) {
		t.Helper()
		for i, v := range got.Data() {
			w := want[i]
			bound := 16 * 0x1p-24 * (math.Abs(w) + math.Abs(gamma[param(i)]))
			err := math.Abs(float64(v) - w)
			if !(err <= bound) {
				t.Errorf("%s: element %d is %v, float64 formula %v (off %.3g of the bound)", what, i, v, w, err/bound)
				return
			}
			worst = max(worst, err/bound*16)
		}
	}
	for _, g := range gens {
		for _, d := range []int{2, 3, 768, 1000} {
			x := New(4, d)
			xd := x.Data()
			for i := range xd {
				xd[i] = g.f()
			}
			if d == 2 && g.name == "1e20 signed" {
				copy(xd, []float32{1e20, -1e20})
			}
			gamma, beta := RandN(r, d), RandN(r, d)
			y, _ := LayerNorm(x, LayerNormParams{Gamma: gamma, Beta: beta})
			want, _, _ := refNorm(f64(x), 4, func(i int) int { return i / d }, func(i int) int { return i % d }, f64(gamma), f64(beta), 1e-5)
			check(fmt.Sprintf("LayerNorm %s d=%d", g.name, d), y, want, f64(gamma), func(i int) int { return i % d })
		}
		for _, s := range [][]int{{2, 3, 1, 1}, {4, 3, 5, 7}, {3, 2, 20, 20}} {
			x := New(s...)
			xd := x.Data()
			for i := range xd {
				xd[i] = g.f()
			}
			c, hw := s[1], s[2]*s[3]
			gamma, beta := RandN(r, c), RandN(r, c)
			y, _ := BatchNorm(x, BatchNormParams{Gamma: gamma, Beta: beta, Training: true})
			ch := func(i int) int { return i / hw % c }
			want, _, _ := refNorm(f64(x), c, ch, ch, f64(gamma), f64(beta), 1e-5)
			check(fmt.Sprintf("BatchNorm %s %v", g.name, s), y, want, f64(gamma), ch)
		}
	}
	t.Logf("worst error: %.3g·2⁻²⁴·(|y| + |gamma|)", worst)
	// The case, without gamma and beta: ±1.
	y, _ := LayerNorm(FromSlice([]float32{1e20, -1e20}, 1, 2), LayerNormParams{})
	if got := y.Data(); math.Abs(float64(got[0])-1) > 1e-6 || math.Abs(float64(got[1])+1) > 1e-6 {
		t.Errorf("LayerNorm of [1e20, -1e20] = %v, want [1 -1]", got)
	}
	y, _ = BatchNorm(FromSlice([]float32{1e20, -1e20}, 2, 1), BatchNormParams{Training: true})
	if got := y.Data(); math.Abs(float64(got[0])-1) > 1e-6 || math.Abs(float64(got[1])+1) > 1e-6 {
		t.Errorf("BatchNorm of [1e20, -1e20] = %v, want [1 -1]", got)
	}
}

// TestNormInPlace normalizes x into itself, on data whose statistics need
// the second pass over x (a mean far above the spread): the passes read x
// after y is written, so an x that is y is copied first (BatchNormInto(x,
// s, x) gave 0 for every element of this data, LayerNormInto -800 for
// about -2.2).
func TestNormInPlace(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, off := range []float32{0, 1e4, 1e6, 3e7} {
		x := AddScalar(RandN(r, 4, 3, 5, 5), off)
		want, _ := BatchNorm(x, BatchNormParams{Training: true})
		xc := x.Clone()
		BatchNormInto(xc, NormStats{New(3), New(3)}, xc, BatchNormParams{Training: true})
		assertEqual(t, fmt.Sprintf("BatchNormInto in place, offset %g", off), xc, want)
		want, _ = LayerNorm(x, LayerNormParams{Dims: 2})
		xc = x.Clone()
		LayerNormInto(xc, NormStats{New(4, 3), New(4, 3)}, xc, LayerNormParams{Dims: 2})
		assertEqual(t, fmt.Sprintf("LayerNormInto in place, offset %g", off), xc, want)
	}
}

func TestNormArgumentPanics(t *testing.T) {
	x := New(2, 3)
	s := NormStats{New(3), New(3)}
	for _, c := range []struct {
		msg string
		f   func()
	}{
		{"tensor: BatchNorm: give both running statistics or neither", func() { BatchNorm(x, BatchNormParams{Training: true, RunningMean: New(3)}) }},
		{"tensor: BatchNorm: running statistics must be contiguous, got strides [2]", func() {
			BatchNorm(x, BatchNormParams{RunningMean: New(6).Slice(0, 0, 6, 2), RunningVar: New(3)})
		}},
		{"tensor: BatchNorm: shape [3]: want [N, C, ...]", func() { BatchNorm(New(3), BatchNormParams{Training: true}) }},
		{"tensor: BatchNormInto: y shape [3 2] and x shape [2 3] differ", func() { BatchNormInto(New(3, 2), s, x, BatchNormParams{Training: true}) }},
		{"tensor: BatchNormInto: NormStats needs Mean and InvStd", func() { BatchNormInto(New(2, 3), NormStats{Mean: New(3)}, x, BatchNormParams{Training: true}) }},
		{"tensor: BatchNormInto: inverse std shape [2], want 3 elements", func() { BatchNormInto(New(2, 3), NormStats{New(3), New(2)}, x, BatchNormParams{Training: true}) }},
		{"tensor: BatchNormBackward: dy shape [3 2] and x shape [2 3] differ", func() { BatchNormBackward(New(3, 2), x, s, BatchNormParams{}) }},
		{"tensor: BatchNormBackwardInto: dgamma shape [2], want 3 elements", func() { BatchNormBackwardInto(New(2, 3), New(2), nil, x, x, s, BatchNormParams{}) }},
		{"tensor: BatchNormBackwardInto: dst of shape [3] has a broadcast (stride 0) dimension 0", func() {
			BatchNormBackwardInto(New(2, 3), nil, New(1).BroadcastTo(3), x, x, s, BatchNormParams{})
		}},
		{"tensor: LayerNormInto: mean shape [3], want 2 elements", func() { LayerNormInto(New(2, 3), s, x, LayerNormParams{}) }},
		{"tensor: LayerNormBackwardInto: dx shape [2 2] and x shape [2 3] differ", func() {
			LayerNormBackwardInto(New(2, 2), nil, nil, x, x, NormStats{New(2), New(2)}, LayerNormParams{})
		}},
		{"tensor: LayerNormBackward: nil tensor x", func() { LayerNormBackward(x, nil, s, LayerNormParams{}) }},
	} {
		expectPanic(t, c.msg, c.f)
	}
}
