package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestSortOpsOnDevice runs the tape's Sort, TopK, Median, CumSum and
// CumProd on the stand-in device, whose values, indices and gradients
// must be the host's bit for bit.
func TestSortOpsOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	checkSortOpsOn(t, testDev)
}

// checkSortOpsOn checks that each tape op of the Sort family runs on dev
// with x there, leaves its value, indices and x's gradient there, and
// gives the host's exactly (ties, NaN, a zero in CumProd's lines, a
// transposed x).
func checkSortOpsOn(t *testing.T, dev tensor.Device) {
	r := rand.New(rand.NewPCG(25, 3))
	h := tensor.RandN(r, 4, 6, 5)
	d := h.Data()
	d[3], d[7], d[11] = d[2], float32(math.NaN()), 0 // a tie, a NaN row, a zero in a CumProd line
	smooth := tensor.RandN(r, 4, 6, 5)
	smooth.Data()[9] = 0
	for _, c := range []struct {
		name string
		x    *tensor.Tensor
		f    func(tp *Tape, x *Var) (*Var, *tensor.Tensor)
	}{
		{"Sort", h, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.Sort(x, 1, false) }},
		{"Sort descending transposed", h, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) {
			return tp.Sort(tp.Transpose(x, 0, 2), -1, true)
		}},
		{"TopK", h, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.TopK(x, 3, 2, true, true) }},
		{"TopK smallest", h, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.TopK(x, 2, 0, false, true) }},
		{"Median", h, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.Median(x, 1, false) }},
		{"Median keepdims", h, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.Median(x, 2, true) }},
		{"CumSum", smooth, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.CumSum(x, 1), nil }},
		{"CumProd", smooth, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.CumProd(x, 2), nil }},
		{"CumProd axis 0", smooth, func(tp *Tape, x *Var) (*Var, *tensor.Tensor) { return tp.CumProd(x, 0), nil }},
	} {
		var vals, idxs, grads [2][]float32
		for i, on := range []tensor.Device{tensor.CPU, dev} {
			x := NewParam(onDev(t, c.x, on))
			tp := NewTape()
			y, idx := c.f(tp, x)
			if y.Value().Device() != on || idx != nil && idx.Device() != on {
				t.Fatalf("%s: value or indices not on %v", c.name, on)
			}
			proj := onDev(t, tensor.RandN(rand.New(rand.NewPCG(1, 1)), y.Value().Shape()...), on)
			tp.Backward(tp.Sum(tp.Mul(y, tp.Const(proj))))
			if x.Grad().Device() != on {
				t.Fatalf("%s: gradient on %v, want %v", c.name, x.Grad().Device(), on)
			}
			vals[i], grads[i] = hostOf(t, y.Value()), hostOf(t, x.Grad())
			if idx != nil {
				idxs[i] = hostOf(t, idx)
			}
		}
		same := func(a, b []float32) bool {
			return slices.EqualFunc(a, b, func(p, q float32) bool { return math.Float32bits(p) == math.Float32bits(q) || p != p && q != q })
		}
		if !same(vals[0], vals[1]) || !slices.Equal(idxs[0], idxs[1]) || !same(grads[0], grads[1]) {
			t.Errorf("%s on %v: value %v indices %v gradient %v, the host's %v %v %v", c.name, dev,
				vals[1], idxs[1], grads[1], vals[0], idxs[0], grads[0])
		}
	}
}
