package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
)

// TestLayerNormZeroRows checks LayerNorm over no rows with gamma and beta
// (the row length came out 0 and did not match gamma's): the output and
// x's gradient are empty, gamma's and beta's gradients zeros, as PyTorch's.
func TestLayerNormZeroRows(t *testing.T) {
	for _, tc := range []struct {
		x    []int
		dims int
	}{{[]int{0, 4}, 1}, {[]int{0, 3, 4}, 2}, {[]int{2, 0, 4}, 1}} {
		t.Run(fmt.Sprintf("LayerNorm/%v/dims=%d", tc.x, tc.dims), func(t *testing.T) {
			trail := tc.x[len(tc.x)-tc.dims:]
			x := NewParam(tensor.New(tc.x...))
			g, b := NewParam(tensor.Ones(trail...)), NewParam(tensor.Ones(trail...))
			tp := NewTape()
			y := tp.LayerNorm(x, g, b, NormParams{Dims: tc.dims})
			if !slices.Equal(y.Shape(), tc.x) {
				t.Fatalf("shape %v, want %v", y.Shape(), tc.x)
			}
			tp.Backward(tp.Sum(y))
			for name, v := range map[string]*Var{"gamma": g, "beta": b} {
				gr := v.Grad()
				if gr == nil || !slices.Equal(gr.Shape(), trail) || slices.ContainsFunc(gr.Data(), func(v float32) bool { return v != 0 }) {
					t.Errorf("%s gradient %v, want zeros of shape %v", name, gr, trail)
				}
			}
			if gx := x.Grad(); gx == nil || !slices.Equal(gx.Shape(), tc.x) {
				t.Errorf("x gradient %v, want shape %v", gx, tc.x)
			}
		})
	}
	t.Run("LayerNorm module", func(t *testing.T) {
		tp := NewTape()
		if y := NewLayerNorm(4).Forward(tp, tp.Const(tensor.New(0, 4))); !slices.Equal(y.Shape(), []int{0, 4}) {
			t.Errorf("shape %v, want [0 4]", y.Shape())
		}
	})
}

// TestFlattenReshapeZeroSize checks Flatten and Reshape against PyTorch's
// shapes when a dimension is 0.
func TestFlattenReshapeZeroSize(t *testing.T) {
	tests := []struct {
		x       []int
		reshape []int // nil: Flatten
		want    []int
		refuse  string // the panic, for shapes PyTorch refuses
	}{
		{x: []int{0, 28, 28}, want: []int{0, 784}},
		{x: []int{0, 1, 28, 28}, want: []int{0, 784}},
		{x: []int{3, 0, 5}, want: []int{3, 0}},
		{x: []int{0}, want: []int{0, 1}},
		{x: []int{4, 2, 3}, want: []int{4, 6}},
		{x: []int{0, 28, 28}, reshape: []int{-1, 784}, want: []int{0, 784}},
		{x: []int{0, 28, 28}, reshape: []int{0, -1, 28}, refuse: "the -1 could be any size"},
		{x: []int{0, 28, 28}, reshape: []int{-1, 0}, refuse: "the -1 could be any size"},
		{x: []int{0, 28, 28}, reshape: []int{28, 0, 28}, want: []int{28, 0, 28}},
		{x: []int{2, 4}, reshape: []int{4, 1 << 62}, refuse: "overflows int"},
		{x: []int{8}, reshape: []int{4, 1<<62 + 2}, refuse: "overflows int"}, // the product wraps to 8
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%v", tc.x, tc.reshape), func(t *testing.T) {
			tp := NewTape()
			x := NewParam(tensor.New(tc.x...))
			f := func() *Var {
				if tc.reshape == nil {
					return tp.Flatten(x)
				}
				return tp.Reshape(x, tc.reshape...)
			}
			if tc.refuse != "" {
				wantPanic(t, func() { f() }, "nn: Reshape: ", tc.refuse)
				return
			}
			y := f()
			if !slices.Equal(y.Shape(), tc.want) {
				t.Fatalf("shape %v, want %v", y.Shape(), tc.want)
			}
			tp.Backward(tp.Sum(y))
			if !slices.Equal(x.Grad().Shape(), tc.x) {
				t.Errorf("gradient of shape %v, want %v", x.Grad().Shape(), tc.x)
			}
		})
	}
}

// TestEmptyMeans checks that the means over no element are NaN (as
// PyTorch's and tensor.Mean), a sum 0, and that their backward gives the
// empty gradient.
func TestEmptyMeans(t *testing.T) {
	tests := []struct {
		name  string
		shape []int
		sum   bool
		f     func(tp *Tape, x *Var) *Var
	}{
		{"CrossEntropy", []int{0, 10}, false, func(tp *Tape, x *Var) *Var { return tp.CrossEntropy(x, tensor.New(0)) }},
		{"MSE", []int{0, 3}, false, func(tp *Tape, x *Var) *Var { return tp.MSE(x, tensor.New(0, 3)) }},
		{"MSE/1d", []int{0}, false, func(tp *Tape, x *Var) *Var { return tp.MSE(x, tensor.New(0)) }},
		{"BCEWithLogits", []int{4, 0}, false, func(tp *Tape, x *Var) *Var { return tp.BCEWithLogits(x, tensor.New(4, 0)) }},
		{"Mean", []int{0, 3}, false, func(tp *Tape, x *Var) *Var { return tp.Mean(x) }},
		{"Sum", []int{0, 3}, true, func(tp *Tape, x *Var) *Var { return tp.Sum(x) }},
	}
	if !math.IsNaN(float64(tensor.Mean(tensor.New(0, 3), false).Item())) {
		t.Fatal("tensor.Mean of no element is not NaN")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tp := NewTape()
			x := NewParam(tensor.New(tc.shape...))
			loss := tc.f(tp, x)
			v := loss.Value().Item()
			if tc.sum && v != 0 || !tc.sum && !math.IsNaN(float64(v)) {
				t.Errorf("loss %v, want %v", v, map[bool]string{true: "0", false: "NaN"}[tc.sum])
			}
			tp.Backward(loss)
			if g := x.Grad(); g == nil || !slices.Equal(g.Shape(), tc.shape) {
				t.Errorf("gradient %v, want an empty one of shape %v", g, tc.shape)
			}
		})
	}
}

// TestEmptyBatch runs the forward and backward pass of a training step of
// the two Fashion models on a batch of no images: the loss is NaN and
// every parameter gradient zeros, as PyTorch's.
func TestEmptyBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range models {
		t.Run(c.name+"/empty batch", func(t *testing.T) {
			m := c.model(r)
			tp := NewTape()
			x := tensor.New(append([]int{0}, c.x[1:]...)...)
			loss := tp.CrossEntropy(m.Forward(tp, tp.Const(x)), tensor.New(0))
			if !math.IsNaN(float64(loss.Value().Item())) {
				t.Errorf("loss %v, want NaN", loss.Value().Item())
			}
			tp.Backward(loss)
			for i, p := range Params(m) {
				if g := p.Grad(); g == nil || slices.ContainsFunc(g.Data(), func(v float32) bool { return v != 0 }) {
					t.Errorf("parameter %d: gradient not all zeros", i)
				}
			}
		})
	}
}

// eachSIMDLevel runs f once at every SIMD level this CPU and build
// support, restoring the active level after.
func eachSIMDLevel(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, l := range dispatch.Levels() {
		if _, err := dispatch.SetLevel(l); err != nil {
			t.Fatal(err)
		}
		t.Run(l.String(), f)
	}
}

// TestZeroSizeMatMulLinear checks MatMul and Linear, forward and backward,
// against a float64 reference when any of the sizes is 0 (and one case
// without): the loss is Σ y·R for a fixed R, run twice with BackwardRetain
// so that the second gradients add to the first.
func TestZeroSizeMatMulLinear(t *testing.T) {
	shapes := [][3]int{{0, 3, 4}, {2, 0, 4}, {2, 3, 0}, {0, 0, 3}, {0, 0, 0}, {0, 3, 0}, {3, 0, 0}, {3, 2, 5}}
	eachSIMDLevel(t, func(t *testing.T) {
		for _, s := range shapes {
			rows, in, outs := s[0], s[1], s[2]
			for _, variant := range []string{"MatMul", "Linear", "Linear/nobias", "Linear/Sigmoid"} {
				t.Run(fmt.Sprintf("%s/%v", variant, s), func(t *testing.T) {
					r := rand.New(rand.NewPCG(uint64(rows), uint64(in*10+outs)))
					xt, wt, bt := tensor.RandN(r, rows, in), tensor.RandN(r, outs, in), tensor.RandN(r, outs)
					proj := tensor.RandN(r, rows, outs)
					act := Act{}
					if variant == "Linear/Sigmoid" {
						act = Act{Kind: ActSigmoid}
					}
					withBias := variant == "Linear" || variant == "Linear/Sigmoid"
					x, w, b := NewParam(xt), NewParam(wt), NewParam(bt)
					tp := NewTape()
					var y *Var
					if variant == "MatMul" {
						// x·wᵀ, with wᵀ [in, outs] as its own parameter.
						w = NewParam(wt.T().Contiguous())
						y = tp.MatMul(x, w)
					} else {
						bias := b
						if !withBias {
							bias = nil
						}
						y = tp.Linear(x, w, bias, act)
					}
					loss := tp.Sum(tp.Mul(y, tp.Const(proj)))
					tp.BackwardRetain(loss)
					tp.BackwardRetain(loss)

					// The reference, in float64: z = x·wᵀ + b, y = act(z),
					// dz = R·act'(z), dx = 2·dz·w, dw = 2·dzᵀ·x, db = 2·Σ dz.
					xd, wd, bd, pd := xt.Data(), wt.Data(), bt.Data(), proj.Data()
					wantY := make([]float64, rows*outs)
					dz := make([]float64, rows*outs)
					for i := range rows {
						for o := range outs {
							z := 0.0
							if withBias {
								z = float64(bd[o])
							}
							for k := range in {
								z += float64(xd[i*in+k]) * float64(wd[o*in+k])
							}
							d := 1.0
							if act.Kind == ActSigmoid {
								z = 1 / (1 + math.Exp(-z))
								d = z * (1 - z)
							}
							wantY[i*outs+o] = z
							dz[i*outs+o] = float64(pd[i*outs+o]) * d
						}
					}
					wantDx := make([]float64, rows*in)
					wantDw := make([]float64, outs*in)
					wantDb := make([]float64, outs)
					for i := range rows {
						for o := range outs {
							for k := range in {
								wantDx[i*in+k] += 2 * dz[i*outs+o] * float64(wd[o*in+k])
								wantDw[o*in+k] += 2 * dz[i*outs+o] * float64(xd[i*in+k])
							}
							wantDb[o] += 2 * dz[i*outs+o]
						}
					}
					if variant == "MatMul" {
						// w holds wᵀ: its gradient is dwᵀ.
						tr := make([]float64, in*outs)
						for o := range outs {
							for k := range in {
								tr[k*outs+o] = wantDw[o*in+k]
							}
						}
						wantDw = tr
					}
					near(t, "y", y.Value(), []int{rows, outs}, wantY)
					near(t, "dx", x.Grad(), x.Shape(), wantDx)
					near(t, "dw", w.Grad(), w.Shape(), wantDw)
					if withBias {
						near(t, "db", b.Grad(), b.Shape(), wantDb)
					}
				})
			}
		}
	})
}

// near fails t unless got has the given shape and is within 1e-4 +
// 1e-4·|want| of want.
func near(t *testing.T, name string, got *tensor.Tensor, shape []int, want []float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil, want shape %v", name, shape)
		return
	}
	if !slices.Equal(got.Shape(), shape) {
		t.Errorf("%s: shape %v, want %v", name, got.Shape(), shape)
		return
	}
	for i, g := range got.Data() {
		if math.Abs(float64(g)-want[i]) > 1e-4+1e-4*math.Abs(want[i]) {
			t.Errorf("%s[%d] = %v, want %v", name, i, g, want[i])
		}
	}
}

// TestZeroFanIn checks that Linear and Conv2D layers with no input
// features get a zero bias, as PyTorch's (1/√0 made it NaN), and that
// Linear's output is then zeros.
func TestZeroFanIn(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	t.Run("NewLinear/in=0", func(t *testing.T) {
		l := NewLinear(0, 3, r)
		tp := NewTape()
		y := l.Forward(tp, tp.Const(tensor.New(2, 0)))
		if !slices.Equal(y.Shape(), []int{2, 3}) || slices.ContainsFunc(y.Value().Data(), func(v float32) bool { return v != 0 }) {
			t.Errorf("output %v of shape %v, want zeros of shape [2 3]", y.Value().Data(), y.Shape())
		}
	})
	t.Run("NewConv2D/cin=0", func(t *testing.T) {
		c := NewConv2D(0, 3, 3, tensor.ConvParams{}, r)
		if d := c.B.Value().Data(); slices.ContainsFunc(d, func(v float32) bool { return v != 0 }) {
			t.Errorf("bias %v, want zeros", d)
		}
	})
}
