package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sqDist64 is the float64 reference: D[i, j] = Σ (x[i,k] - y[j,k])².
func sqDist64(x, y *Tensor) []float64 {
	n, m, d := x.Dim(0), y.Dim(0), x.Dim(1)
	out := make([]float64, n*m)
	for i := range n {
		for j := range m {
			var s float64
			for k := range d {
				v := float64(x.At(i, k)) - float64(y.At(j, k))
				s += v * v
			}
			out[i*m+j] = s
		}
	}
	return out
}

// pairwiseBound is PairwiseSqDist's stated error bound for entry (i, j):
// 1e-5·d·(‖x̃[i]‖² + ‖ỹ[j]‖²), the norms of the rows less the mean of all.
func pairwiseBound(x, y *Tensor, self bool) func(i, j int) float64 {
	n, m, d := x.Dim(0), y.Dim(0), x.Dim(1)
	mean := make([]float64, d)
	rows := n + m
	for k := range d {
		for i := range n {
			mean[k] += float64(x.At(i, k))
		}
		if !self {
			for j := range m {
				mean[k] += float64(y.At(j, k))
			}
		}
	}
	if self {
		rows = n
	}
	norm := func(t *Tensor, i int) float64 {
		var s float64
		for k := range d {
			v := float64(t.At(i, k)) - mean[k]/float64(rows)
			s += v * v
		}
		return s
	}
	return func(i, j int) float64 { return 1e-5 * float64(max(d, 1)) * (norm(x, i) + norm(y, j)) }
}

// TestPairwiseSqDist checks PairwiseSqDist at every level against the
// float64 distances within its stated bound: random and zero-size shapes,
// transposed and sliced operands, x against itself (symmetric bit for
// bit, zero diagonal, nothing negative), and a cloud of nearby points far
// from the origin (offset 1000, spread 1e-2), where the centering keeps
// the relative error of every distance under 1e-3.
func TestPairwiseSqDist(t *testing.T) {
	atEveryLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(81, 82))
		far := func(n, d int) *Tensor {
			x := RandN(r, n, d)
			for i, v := range x.Data() {
				x.Data()[i] = 1000 + 1e-2*v
			}
			return x
		}
		sx, fx := RandN(r, 30, 17), far(20, 16)
		cases := []struct {
			name string
			x, y *Tensor
			rel  float64 // > 0: also every entry within rel of the reference
		}{
			{"5x3 vs 7x3", RandN(r, 5, 3), RandN(r, 7, 3), 0},
			{"1x1 vs 1x1", RandN(r, 1, 1), RandN(r, 1, 1), 0},
			{"0x4 vs 3x4", New(0, 4), RandN(r, 3, 4), 0},
			{"3x4 vs 0x4", RandN(r, 3, 4), New(0, 4), 0},
			{"3x0 vs 2x0", New(3, 0), New(2, 0), 0},
			{"40x65 vs 33x65", RandN(r, 40, 65), RandN(r, 33, 65), 0},
			{"transposed x", RandN(r, 6, 9).T(), RandN(r, 4, 6), 0},
			{"sliced y", RandN(r, 5, 8), RandN(r, 10, 8).Slice(0, 2, 10, 2), 0},
			{"self 30x17", sx, sx, 0},
			{"nearby far from 0", far(20, 16), far(25, 16), 1e-3},
			{"nearby self", fx, fx, 1e-3},
		}
		for _, c := range cases {
			self, y := c.y == c.x, c.y
			got := PairwiseSqDist(c.x, c.y)
			n, m := c.x.Dim(0), y.Dim(0)
			if !slices.Equal(got.Shape(), []int{n, m}) {
				t.Fatalf("%s: shape %v, want [%d %d]", c.name, got.Shape(), n, m)
			}
			want := sqDist64(c.x, y)
			bound := pairwiseBound(c.x, y, self)
			for i := range n {
				for j := range m {
					g, w := float64(got.At(i, j)), want[i*m+j]
					if !(math.Abs(g-w) <= bound(i, j)) || g < 0 || (c.rel > 0 && math.Abs(g-w) > c.rel*w) {
						t.Fatalf("%s: D[%d, %d] = %v, float64 %v (bound %v)", c.name, i, j, g, w, bound(i, j))
					}
					if self && (got.At(i, j) != got.At(j, i) || (i == j && g != 0)) {
						t.Fatalf("%s: D[%d, %d] = %v, D[%d, %d] = %v: not symmetric with a zero diagonal", c.name, i, j, g, j, i, got.At(j, i))
					}
				}
			}
		}
	})
}

// TestPairwiseSqDistGrad checks PairwiseSqDistGrad against the float64
// gradient of Σ g·D, for strided operands too.
func TestPairwiseSqDistGrad(t *testing.T) {
	atEveryLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(83, 84))
		for _, c := range []struct{ x, y *Tensor }{
			{RandN(r, 4, 3), RandN(r, 6, 3)},
			{RandN(r, 5, 7).T(), RandN(r, 2, 5)},
			{RandN(r, 0, 3), RandN(r, 2, 3)},
		} {
			n, m, d := c.x.Dim(0), c.y.Dim(0), c.x.Dim(1)
			g := RandN(r, n, m)
			dx, dy := PairwiseSqDistGrad(g, c.x, c.y)
			for i := range n {
				for k := range d {
					var w float64
					for j := range m {
						w += 2 * float64(g.At(i, j)) * (float64(c.x.At(i, k)) - float64(c.y.At(j, k)))
					}
					if got := float64(dx.At(i, k)); math.Abs(got-w) > 1e-5*(1+math.Abs(w))*float64(m) {
						t.Fatalf("x %v: dx[%d, %d] = %v, want %v", c.x.Shape(), i, k, got, w)
					}
				}
			}
			for j := range m {
				for k := range d {
					var w float64
					for i := range n {
						w -= 2 * float64(g.At(i, j)) * (float64(c.x.At(i, k)) - float64(c.y.At(j, k)))
					}
					if got := float64(dy.At(j, k)); math.Abs(got-w) > 1e-5*(1+math.Abs(w))*float64(max(n, 1)) {
						t.Fatalf("x %v: dy[%d, %d] = %v, want %v", c.x.Shape(), j, k, got, w)
					}
				}
			}
		}
	})
}

// TestPairwiseSqDistPanics checks the shape panics.
func TestPairwiseSqDistPanics(t *testing.T) {
	expectPanic(t, "tensor: PairwiseSqDist: x of shape [3 2] and y of shape [3 4] (want [n d] and [m d])", func() { PairwiseSqDist(New(3, 2), New(3, 4)) })
	x3 := New(3)
	expectPanic(t, "tensor: PairwiseSqDist: x of shape [3] and y of shape [3] (want [n d] and [m d])", func() { PairwiseSqDist(x3, x3) })
	expectPanic(t, "tensor: PairwiseSqDistGrad: g of shape [2 2], x [3 2], y [2 2] (want [n m], [n d], [m d])", func() { PairwiseSqDistGrad(New(2, 2), New(3, 2), New(2, 2)) })
}

// TestRBFKernel checks RBFKernel against exp(-γ·D) of the float64
// distances, and the exact 1 on the diagonal of x against itself.
func TestRBFKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(85, 86))
	x, y := RandN(r, 6, 4), RandN(r, 5, 4)
	k, want := RBFKernel(x, y, 0.3), sqDist64(x, y)
	for i := range 6 {
		for j := range 5 {
			if w := math.Exp(-0.3 * want[i*5+j]); math.Abs(float64(k.At(i, j))-w) > 1e-6 {
				t.Fatalf("K[%d, %d] = %v, want %v", i, j, k.At(i, j), w)
			}
		}
	}
	s := RBFKernel(x, x, 2)
	for i := range 6 {
		if s.At(i, i) != 1 {
			t.Fatalf("K[%d, %d] = %v of x with itself, want 1", i, i, s.At(i, i))
		}
	}
}

// BenchmarkPairwiseSqDist computes the distances of n points of 64
// dimensions to themselves.
func BenchmarkPairwiseSqDist(b *testing.B) {
	for _, n := range []int{256, 2048} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x := RandN(rand.New(rand.NewPCG(1, 2)), n, 64)
			for range b.N {
				PairwiseSqDist(x, x)
			}
		})
	}
}
