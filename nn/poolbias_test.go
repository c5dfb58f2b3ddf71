package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestPoolSumsConvBias checks the bias gradient of a Conv2D with a fused
// ReLU whose output only a MaxPool2D reads (the pooling then sums it from
// its own gradient) against float64 sums of the full-size gradient, and
// against the unfused path when the output has a second consumer, for
// 2×2 pooling, overlapping 3×3 windows at stride 2 and an odd plane.
func TestPoolSumsConvBias(t *testing.T) {
	cases := []struct {
		n, c, h, w int
		pool       tensor.PoolParams
	}{
		{3, 4, 8, 8, tensor.PoolParams{Kernel: [2]int{2, 2}}},
		{2, 3, 9, 7, tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}}},
		{2, 5, 7, 7, tensor.PoolParams{Kernel: [2]int{2, 2}}},
	}
	for _, c := range cases {
		r := rand.New(rand.NewPCG(25, 3))
		p := tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}
		x := tensor.RandN(r, c.n, 2, c.h, c.w)
		w, b := NewParam(tensor.RandN(r, c.c, 2, 3, 3)), NewParam(tensor.RandN(r, c.c))
		var grads [2][]float32
		var want []float64
		for i, second := range []bool{false, true} {
			b.ZeroGrad()
			tp := NewTape()
			y := tp.Conv2D(tp.Const(x), w, b, p)
			pooled := tp.MaxPool2D(y, c.pool)
			coef := tensor.RandN(rand.New(rand.NewPCG(1, 1)), pooled.Value().Shape()...)
			loss := tp.Sum(tp.Mul(pooled, tp.Const(coef)))
			if second { // a second consumer of y, of zero weight
				loss = tp.Add(loss, tp.Sum(tp.Mul(y, tp.Const(tensor.New(y.Value().Shape()...)))))
			}
			tp.Backward(loss)
			grads[i] = append([]float32(nil), b.Grad().Data()...)
			if i == 0 {
				// The full-size gradient of y's ReLU input, summed in float64.
				_, idx := tensor.MaxPool2D(y.Value(), c.pool)
				m := tensor.New(coef.Shape()...)
				for k, v := range coef.Data() {
					if pooled.Value().Data()[k] > 0 {
						m.Data()[k] = v
					}
				}
				g := tensor.MaxPool2DBackward(m, idx, y.Value().Shape(), c.pool)
				want = make([]float64, c.c)
				plane := c.h * c.w
				for k, v := range g.Data() {
					want[k/plane%c.c] += float64(v)
				}
			}
		}
		for ch := range c.c {
			for i, g := range grads {
				if math.Abs(float64(g[ch])-want[ch]) > 1e-5*(1+math.Abs(want[ch])) {
					t.Errorf("%+v: run %d: bias gradient %d = %v, want %v", c, i, ch, g[ch], want[ch])
				}
			}
		}
	}
}
