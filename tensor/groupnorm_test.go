package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refGroupNorm is GroupNorm and its backward in float64, written from the
// definition: per (image, group), x̂ = (x - mean)/√(var + eps); y =
// x̂·gamma + beta; dx = invStd·(g - mean(g) - x̂·mean(g·x̂)) with g =
// dy·gamma; dgamma = Σ dy·x̂; dbeta = Σ dy.
func refGroupNorm(x, dy, gamma, beta []float64, shape []int, groups int, eps float64) (y, dx, dg, db []float64) {
	n, c := shape[0], shape[1]
	s := len(x) / max(n*c, 1)
	cg := c / groups
	y, dx = make([]float64, len(x)), make([]float64, len(x))
	dg, db = make([]float64, c), make([]float64, c)
	for i := range n {
		for g := range groups {
			lo, hi := (i*c+g*cg)*s, (i*c+(g+1)*cg)*s
			m := float64(hi - lo)
			var mean, v float64
			for _, e := range x[lo:hi] {
				mean += e
			}
			mean /= m
			for _, e := range x[lo:hi] {
				v += (e - mean) * (e - mean)
			}
			inv := 1 / math.Sqrt(v/m+eps)
			var mg, mgx float64
			for k := lo; k < hi; k++ {
				ch := k / s % c
				xh := (x[k] - mean) * inv
				y[k] = xh*gamma[ch] + beta[ch]
				gk := dy[k] * gamma[ch]
				mg += gk
				mgx += gk * xh
				dg[ch] += dy[k] * xh
				db[ch] += dy[k]
			}
			mg, mgx = mg/m, mgx/m
			for k := lo; k < hi; k++ {
				ch := k / s % c
				xh := (x[k] - mean) * inv
				dx[k] = inv * (dy[k]*gamma[ch] - mg - xh*mgx)
			}
		}
	}
	return y, dx, dg, db
}

func checkClose(t *testing.T, what string, got *Tensor, want []float64, tol float64) {
	t.Helper()
	for i, g := range got.Data() {
		if !closeTo(g, want[i], tol, 1+math.Abs(want[i])) {
			t.Errorf("%s[%d] = %v, want %v", what, i, g, want[i])
			return
		}
	}
}

// TestGroupNorm holds GroupNorm, InstanceNorm and their backwards to the
// float64 reference (1e-5 relative to 1 + |value|: LayerNorm's float32
// moments), over shapes, group counts, layouts and with or without the
// affine parameters.
func TestGroupNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	for _, tc := range []struct {
		shape  []int
		groups int
	}{{[]int{2, 6, 3, 4}, 3}, {[]int{1, 4, 5}, 2}, {[]int{3, 4, 2}, 4}, {[]int{2, 4, 7}, 1}, {[]int{0, 4, 2}, 2}, {[]int{2, 3, 1}, 3}} {
		for _, layout := range []string{"contiguous", "transposed", "strided"} {
			for _, aff := range []bool{false, true} {
				name := fmt.Sprintf("%v/G%d/%s/affine=%v", tc.shape, tc.groups, layout, aff)
				x := randLayout(r, layout, tc.shape...)
				if layout == "contiguous" {
					x = AddScalar(x, 3) // a mean off zero
				}
				dy := RandN(r, tc.shape...)
				c := tc.shape[1]
				p := GroupNormParams{Groups: tc.groups, Eps: 1e-3}
				gamma, beta := make([]float64, c), make([]float64, c)
				for i := range gamma {
					gamma[i] = 1
				}
				if aff {
					p.Gamma, p.Beta = RandN(r, c), RandN(r, c)
					gamma, beta = f64(p.Gamma), f64(p.Beta)
				}
				y, s := GroupNorm(x, p)
				wy, wdx, wdg, wdb := refGroupNorm(f64(x), f64(dy), gamma, beta, tc.shape, tc.groups, 1e-3)
				checkClose(t, name+" y", y, wy, 1e-5)
				if got := s.Mean.Shape(); len(got) != 2 || got[0] != tc.shape[0] || got[1] != tc.groups {
					t.Errorf("%s: statistics of shape %v", name, got)
				}
				dx, dg, db := GroupNormBackward(dy, x, s, p)
				checkClose(t, name+" dx", dx, wdx, 1e-4)
				if aff {
					checkClose(t, name+" dgamma", dg, wdg, 1e-4)
					checkClose(t, name+" dbeta", db, wdb, 1e-5)
				} else if dg != nil || db != nil {
					t.Errorf("%s: parameter gradients without parameters", name)
				}
				if tc.groups == c {
					iy, _ := InstanceNorm(x, InstanceNormParams{Gamma: p.Gamma, Beta: p.Beta, Eps: 1e-3})
					checkClose(t, name+" InstanceNorm", iy, wy, 1e-5)
				}
			}
		}
	}
	x := New(2, 6, 2)
	expectPanic(t, "tensor: GroupNorm: 4 groups for 6 channels (shape [2 6 2]): want a positive divisor of C", func() { GroupNorm(x, GroupNormParams{Groups: 4}) })
	expectPanic(t, "tensor: GroupNorm: gamma or beta of shape [3] for 6 channels", func() { GroupNorm(x, GroupNormParams{Groups: 3, Gamma: New(3)}) })
	expectPanic(t, "tensor: GroupNorm: shape [6]: want [N, C, ...]", func() { GroupNorm(New(6), GroupNormParams{Groups: 3}) })
}

// refRMSNorm is RMSNorm and its backward in float64.
func refRMSNorm(x, dy, gamma []float64, d int, eps float64) (y, dx, dg []float64) {
	y, dx, dg = make([]float64, len(x)), make([]float64, len(x)), make([]float64, d)
	for r := 0; r < len(x)/max(d, 1); r++ {
		row := x[r*d : (r+1)*d]
		var ss float64
		for _, v := range row {
			ss += v * v
		}
		inv := 1 / math.Sqrt(ss/float64(d)+eps)
		var m float64
		for i, v := range row {
			y[r*d+i] = v * inv * gamma[i]
			m += dy[r*d+i] * gamma[i] * v * inv
			dg[i] += dy[r*d+i] * v * inv
		}
		m /= float64(d)
		for i, v := range row {
			dx[r*d+i] = inv * (dy[r*d+i]*gamma[i] - v*inv*m)
		}
	}
	return y, dx, dg
}

// TestRMSNorm holds RMSNorm and its backward to the float64 reference,
// with the default eps (2⁻²³) and a given one, over one and two
// normalized axes and layouts.
func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 3))
	for _, tc := range []struct {
		shape []int
		dims  int
		eps   float32
	}{{[]int{3, 8}, 1, 0}, {[]int{2, 3, 4}, 2, 1e-5}, {[]int{5}, 1, 0}, {[]int{0, 4}, 1, 0}, {[]int{2, 1}, 1, 0.5}} {
		for _, layout := range []string{"contiguous", "transposed"} {
			for _, aff := range []bool{false, true} {
				name := fmt.Sprintf("%v/dims%d/%s/affine=%v", tc.shape, tc.dims, layout, aff)
				x := randLayout(r, layout, tc.shape...)
				dy := RandN(r, tc.shape...)
				trail := tc.shape[len(tc.shape)-tc.dims:]
				d := shapeLen(trail)
				gamma := make([]float64, d)
				for i := range gamma {
					gamma[i] = 1
				}
				p := RMSNormParams{Dims: tc.dims, Eps: tc.eps}
				if aff {
					p.Gamma = RandN(r, trail...)
					gamma = f64(p.Gamma)
				}
				eps := float64(tc.eps)
				if eps == 0 {
					eps = float64(math.Nextafter32(1, 2) - 1)
				}
				y, rr := RMSNorm(x, p)
				wy, wdx, wdg := refRMSNorm(f64(x), f64(dy), gamma, d, eps)
				checkClose(t, name+" y", y, wy, 4e-7)
				dx, dg := RMSNormBackward(dy, x, rr, p)
				checkClose(t, name+" dx", dx, wdx, 1e-6)
				if aff {
					checkClose(t, name+" dgamma", dg, wdg, 1e-6)
				}
				// The Into forms: into strided views of guarded buffers,
				// and in place (y = x, dx = dy).
				rows := rr.Len()
				ybuf, rbuf := Full(guardValue, append(slices.Clone(tc.shape), 2)...), Full(guardValue, rows, 2)
				yv, rv := ybuf.Index(-1, 1), rbuf.Index(1, 0)
				RMSNormInto(yv, rv, x, p)
				sameElems(t, name+" RMSNormInto y", yv, y)
				sameElems(t, name+" RMSNormInto rrms", rv, rr.Reshape(rows))
				checkGuards(t, name+" RMSNormInto", ybuf.Index(-1, 0), rbuf.Index(1, 1))
				xc := x.Clone()
				RMSNormInto(xc, New(rr.Shape()...), xc, p)
				sameElems(t, name+" RMSNormInto in place", xc, y)
				var dgv *Tensor
				if aff {
					dgv = Full(guardValue, d, 2).Index(1, 1)
				}
				dyc := dy.Clone()
				RMSNormBackwardInto(dyc, dgv, dyc, x, rr, p)
				sameElems(t, name+" RMSNormBackwardInto in place", dyc, dx)
				if aff {
					sameElems(t, name+" RMSNormBackwardInto dgamma", dgv, dg.Reshape(d))
				}
			}
		}
	}
	expectPanic(t, "tensor: RMSNorm: gamma of shape [3], want the normalized shape [4]", func() { RMSNorm(New(2, 4), RMSNormParams{Gamma: New(3)}) })
	expectPanic(t, "tensor: RMSNorm: eps -1 is negative", func() { RMSNorm(New(2, 4), RMSNormParams{Eps: -1}) })
	expectPanic(t, "tensor: RMSNormInto: rrms shape [3], want 2 elements", func() { RMSNormInto(New(2, 4), New(3), New(2, 4), RMSNormParams{}) })
	expectPanic(t, "tensor: RMSNormBackwardInto: dgamma of shape [4] without gamma", func() {
		RMSNormBackwardInto(New(2, 4), New(4), New(2, 4), New(2, 4), New(2), RMSNormParams{})
	})
}

// guardValue fills the buffers that the Into forms write views of.
const guardValue = 1234.5

// sameElems fails unless got holds want's elements exactly (NaN as NaN).
func sameElems(t *testing.T, name string, got, want *Tensor) {
	t.Helper()
	g, w := got.Contiguous().Data(), want.Contiguous().Data()
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", name, got.Shape(), want.Shape())
	}
	for i := range w {
		if g[i] != w[i] && !(g[i] != g[i] && w[i] != w[i]) {
			t.Errorf("%s: element %d = %v, want %v", name, i, g[i], w[i])
			return
		}
	}
}

// checkGuards fails unless every element of each t is guardValue.
func checkGuards(t *testing.T, name string, ts ...*Tensor) {
	t.Helper()
	for _, x := range ts {
		for i, v := range x.Contiguous().Data() {
			if v != guardValue {
				t.Errorf("%s: guard element %d overwritten with %v", name, i, v)
				return
			}
		}
	}
}
