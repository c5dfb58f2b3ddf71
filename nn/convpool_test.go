package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestConvPoolFused runs models whose Conv2D layers a MaxPool2D follows
// with Sequential's Conv2DMaxPool and with the separate operations, and
// compares the gradients of one step: the loss and every gradient bit for
// bit, but for the bias of a convolution without a ReLU (the same terms
// summed in another order: within float32 rounding). Then three Adam
// steps each: with ReLUs only, the parameters too. The fused runs must
// use Conv2DMaxPool exactly where tensor fuses (not for a 3×3 pooling or
// a 32-channel layer on the shifted path).
func TestConvPoolFused(t *testing.T) {
	same := tensor.ConvParams{Padding: [2]int{1, 1}}
	sameReLU := tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}
	pool := &MaxPool2D{P: tensor.PoolParams{Kernel: [2]int{2, 2}}}
	pool3 := &MaxPool2D{P: tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}}}
	models := []struct {
		name   string
		model  func(r *rand.Rand) *Sequential
		x      []int
		fused  int
		noReLU bool // a fused convolution has no ReLU: its bias gradient may differ in rounding
	}{
		{"fashion", FashionCNN, []int{16, 1, 28, 28}, 2, false},
		{"preset", func(r *rand.Rand) *Sequential {
			return NewSequential(NewConv2D(2, 4, 3, sameReLU, r), pool, Flatten{}, NewLinear(4*5*5, 10, r))
		}, []int{6, 2, 10, 11}, 1, false},
		{"twice-pooled", func(r *rand.Rand) *Sequential {
			return NewSequential(NewConv2D(2, 4, 3, same, r), NewReLU(), pool, pool, Flatten{}, NewLinear(4*2*2, 10, r))
		}, []int{6, 2, 9, 9}, 1, false},
		{"norelu", func(r *rand.Rand) *Sequential {
			return NewSequential(NewConv2D(2, 4, 3, same, r), pool, NewReLU(), NewConv2D(4, 3, 3, same, r), NewReLU(), pool, Flatten{}, NewLinear(3*2*2, 10, r))
		}, []int{6, 2, 9, 9}, 2, true},
		{"unfusable", func(r *rand.Rand) *Sequential {
			return NewSequential(NewConv2D(2, 4, 3, same, r), NewReLU(), pool3, NewConv2D(4, 32, 3, same, r), NewReLU(),
				NewConv2D(32, 4, 3, same, r), NewReLU(), pool, Flatten{}, NewLinear(4*11*11, 10, r))
		}, []int{2, 2, 46, 46}, 0, false},
	}
	defer func() { convPoolOn = true }()
	for _, c := range models {
		t.Run(c.name, func(t *testing.T) {
			var losses [2][]float32
			var grads, params [2][][]float32
			for run, on := range []bool{true, false} {
				convPoolOn = on
				r := rand.New(rand.NewPCG(5, 6))
				s := newTrainer(c.model(r), r, c.x...)
				tp := s.tp
				tp.Reset()
				loss := tp.CrossEntropy(s.m.Forward(tp, tp.Const(s.x)), s.y)
				s.opt.ZeroGrad()
				tp.Backward(loss)
				fused := 0
				for _, n := range tp.nodes {
					if backPC(n.back) == backPC(backConv2DMaxPool) {
						fused++
					}
				}
				if want := map[bool]int{true: c.fused, false: 0}[on]; fused != want {
					t.Fatalf("convPoolOn=%v: %d Conv2DMaxPool nodes, want %d", on, fused, want)
				}
				losses[run] = append(losses[run], loss.Value().Item())
				for _, p := range Params(s.m) {
					grads[run] = append(grads[run], p.Grad().Clone().Data())
				}
				s.opt.Step()
				for range 3 {
					losses[run] = append(losses[run], s.step())
				}
				for _, p := range Params(s.m) {
					params[run] = append(params[run], p.Value().Data())
				}
			}
			for i, g := range grads[0] {
				for k := range g {
					a, b := g[k], grads[1][i][k]
					if math.Float32bits(a) == math.Float32bits(b) {
						continue
					}
					if !c.noReLU || len(g) > 4 || math.Abs(float64(a-b)) > 1e-5*(1+math.Abs(float64(b))) {
						t.Fatalf("gradient %d element %d: %v fused, %v not", i, k, a, b)
					}
				}
			}
			if c.noReLU {
				return
			}
			for i := range losses[0] {
				if math.Float32bits(losses[0][i]) != math.Float32bits(losses[1][i]) {
					t.Fatalf("step %d: loss %v fused, %v not", i, losses[0][i], losses[1][i])
				}
			}
			for i, a := range params[0] {
				for k := range a {
					if math.Float32bits(a[k]) != math.Float32bits(params[1][i][k]) {
						t.Fatalf("parameter %d element %d: %v fused, %v not", i, k, a[k], params[1][i][k])
					}
				}
			}
		})
	}
}

// TestConvPoolSharedBias uses one bias (and one weight) in two ReLU
// convolutions, each max-pooled: fused and unfused, every gradient must be
// the same bits (the bias sums added as the unfused MaxPool2D adds them).
func TestConvPoolSharedBias(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	p, pool := tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}, tensor.PoolParams{Kernel: [2]int{2, 2}}
	x1, x2 := tensor.RandN(r, 3, 2, 8, 8), tensor.RandN(r, 3, 2, 8, 8)
	w, b := tensor.RandN(r, 4, 2, 3, 3), tensor.RandN(r, 4)
	var got [2][]*tensor.Tensor
	for run := range 2 {
		tp := NewTape()
		wv, bv, xv1, xv2 := NewParam(w), NewParam(b), NewParam(x1), NewParam(x2)
		f := func(x *Var) *Var { return tp.Conv2DMaxPool(x, wv, bv, p, pool) }
		if run == 1 {
			f = func(x *Var) *Var { return tp.MaxPool2D(tp.Conv2D(x, wv, bv, p), pool) }
		}
		tp.Backward(tp.Sum(tp.Add(tp.Mul(f(xv1), f(xv1)), f(xv2))))
		got[run] = []*tensor.Tensor{wv.Grad(), bv.Grad(), xv1.Grad(), xv2.Grad()}
	}
	for i, g := range got[0] {
		a, b := g.Data(), got[1][i].Data()
		for k := range a {
			if math.Float32bits(a[k]) != math.Float32bits(b[k]) {
				t.Fatalf("gradient %d element %d: %v fused, %v not", i, k, a[k], b[k])
			}
		}
	}
}

// TestConvPoolOnDevice runs Tape.Conv2DMaxPool and its backward on the
// stand-in device (tensor composes the device's Conv2D and pooling there):
// the value and every gradient stay on the device and are the host's bits.
func TestConvPoolOnDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(4, 8))
	hx, hw, hb := tensor.RandN(r, 3, 2, 8, 8), tensor.RandN(r, 4, 2, 3, 3), tensor.RandN(r, 4)
	p, pool := tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}, tensor.PoolParams{Kernel: [2]int{2, 2}}
	run := func(on tensor.Device) []*tensor.Tensor {
		to := func(h *tensor.Tensor) *Var {
			d, err := h.To(on)
			if err != nil {
				t.Fatal(err)
			}
			return NewParam(d)
		}
		x, w, b := to(hx), to(hw), to(hb)
		tp := NewTape()
		y := tp.Conv2DMaxPool(x, w, b, p, pool)
		if y.Value().Device() != on {
			t.Fatalf("result on %v, want %v", y.Value().Device(), on)
		}
		tp.Backward(tp.Sum(tp.Mul(y, y)))
		return []*tensor.Tensor{y.Value(), x.Grad(), w.Grad(), b.Grad()}
	}
	want, got := run(tensor.CPU), run(testDev)
	for i, what := range []string{"value", "x's gradient", "w's gradient", "b's gradient"} {
		g := hostOf(t, got[i])
		for k, v := range want[i].Data() {
			if math.Float32bits(g[k]) != math.Float32bits(v) {
				t.Fatalf("%s on the device: element %d is %v, want the host's %v", what, k, g[k], v)
			}
		}
	}
}
