package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// refOpt is a float64 transcription of PyTorch's update rules (torch/optim
// sgd.py, adam.py, adamw.py, rmsprop.py, single-tensor paths).
type refOpt struct {
	kind               string
	lr, mom, damp, wd  float64
	nesterov, centered bool
	b1, b2, eps, alpha float64
	p, buf, m, v, gavg []float64
	t                  int
}

func (o *refOpt) step(g []float64) {
	o.t++
	for i := range o.p {
		gi := g[i]
		switch o.kind {
		case "sgd":
			gi += o.wd * o.p[i]
			if o.mom != 0 {
				if o.t == 1 {
					o.buf[i] = gi
				} else {
					o.buf[i] = o.mom*o.buf[i] + (1-o.damp)*gi
				}
				if o.nesterov {
					gi += o.mom * o.buf[i]
				} else {
					gi = o.buf[i]
				}
			}
			o.p[i] -= o.lr * gi
		case "adam", "adamw":
			if o.kind == "adamw" {
				o.p[i] *= 1 - o.lr*o.wd
			} else {
				gi += o.wd * o.p[i]
			}
			o.m[i] = o.b1*o.m[i] + (1-o.b1)*gi
			o.v[i] = o.b2*o.v[i] + (1-o.b2)*gi*gi
			bc1 := 1 - math.Pow(o.b1, float64(o.t))
			bc2 := 1 - math.Pow(o.b2, float64(o.t))
			o.p[i] -= o.lr / bc1 * o.m[i] / (math.Sqrt(o.v[i])/math.Sqrt(bc2) + o.eps)
		case "rmsprop":
			gi += o.wd * o.p[i]
			o.v[i] = o.alpha*o.v[i] + (1-o.alpha)*gi*gi
			avg := math.Sqrt(o.v[i])
			if o.centered {
				o.gavg[i] = o.alpha*o.gavg[i] + (1-o.alpha)*gi
				avg = math.Sqrt(o.v[i] - o.gavg[i]*o.gavg[i])
			}
			avg += o.eps
			if o.mom > 0 {
				o.buf[i] = o.mom*o.buf[i] + gi/avg
				o.p[i] -= o.lr * o.buf[i]
			} else {
				o.p[i] -= o.lr * gi / avg
			}
		}
	}
}

func TestOptimizersMatchReference(t *testing.T) {
	type tc struct {
		name string
		ref  refOpt
		make func(ps []*Var) Optimizer
	}
	cases := []tc{
		{"SGD", refOpt{kind: "sgd", lr: 0.1}, func(ps []*Var) Optimizer { return NewSGD(ps, 0.1) }},
		{"SGD/momentum+wd+dampening", refOpt{kind: "sgd", lr: 0.05, mom: 0.9, damp: 0.1, wd: 0.01}, func(ps []*Var) Optimizer {
			o := NewSGD(ps, 0.05)
			o.Momentum, o.Dampening, o.WeightDecay = 0.9, 0.1, 0.01
			return o
		}},
		{"SGD/nesterov", refOpt{kind: "sgd", lr: 0.05, mom: 0.9, nesterov: true}, func(ps []*Var) Optimizer {
			o := NewSGD(ps, 0.05)
			o.Momentum, o.Nesterov = 0.9, true
			return o
		}},
		{"Adam", refOpt{kind: "adam", lr: 1e-2, b1: 0.9, b2: 0.999, eps: 1e-8}, func(ps []*Var) Optimizer { return NewAdam(ps, 1e-2) }},
		{"Adam/wd", refOpt{kind: "adam", lr: 1e-2, b1: 0.8, b2: 0.99, eps: 1e-6, wd: 0.1}, func(ps []*Var) Optimizer {
			o := NewAdam(ps, 1e-2)
			o.Beta1, o.Beta2, o.Eps, o.WeightDecay = 0.8, 0.99, 1e-6, 0.1
			return o
		}},
		{"AdamW", refOpt{kind: "adamw", lr: 1e-2, b1: 0.9, b2: 0.999, eps: 1e-8, wd: 0.01}, func(ps []*Var) Optimizer { return NewAdamW(ps, 1e-2) }},
		{"RMSProp", refOpt{kind: "rmsprop", lr: 1e-2, alpha: 0.99, eps: 1e-8}, func(ps []*Var) Optimizer { return NewRMSProp(ps, 1e-2) }},
		{"RMSProp/centered+momentum+wd", refOpt{kind: "rmsprop", lr: 1e-2, alpha: 0.9, eps: 1e-6, mom: 0.5, wd: 0.05, centered: true}, func(ps []*Var) Optimizer {
			o := NewRMSProp(ps, 1e-2)
			o.Alpha, o.Eps, o.Momentum, o.WeightDecay, o.Centered = 0.9, 1e-6, 0.5, 0.05, true
			return o
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			// 2500 elements: two full optimizer blocks and a partial one.
			p := NewParam(tensor.RandN(r, 50, 50))
			skipped := NewParam(tensor.RandN(r, 3))
			before := skipped.value.Clone()
			opt := c.make([]*Var{p, skipped})
			ref := c.ref
			n := p.value.Len()
			ref.p = make([]float64, n)
			for i, v := range p.value.Data() {
				ref.p[i] = float64(v)
			}
			ref.buf, ref.m, ref.v, ref.gavg = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for range 5 {
				g := tensor.RandN(r, 50, 50)
				opt.ZeroGrad()
				p.grad, p.gradOK = g, true // as a backward pass leaves it
				g64 := make([]float64, n)
				for i, v := range g.Data() {
					g64[i] = float64(v)
				}
				opt.Step()
				ref.step(g64)
			}
			for i, v := range p.value.Data() {
				if d := math.Abs(float64(v) - ref.p[i]); d > 1e-5*math.Max(1, math.Abs(ref.p[i])) {
					t.Fatalf("element %d: %v, reference %v", i, v, ref.p[i])
				}
			}
			for i, v := range skipped.value.Data() {
				if v != before.Data()[i] {
					t.Fatalf("a parameter without gradient moved")
				}
			}
		})
	}
}

// TestAdamStepPerParameter checks that Adam and AdamW count steps per
// parameter, as PyTorch's state["step"]: a parameter that has no gradient
// in the first 3 of 8 steps gets, from its first gradient on, the bias
// correction of its own step 1, 2, ..., not of the optimizer's step 4, 5,
// ... (which made its first update, with the default betas, 0.58 of
// PyTorch's).
func TestAdamStepPerParameter(t *testing.T) {
	for _, c := range []struct {
		name string
		ref  refOpt
		make func(ps []*Var) *Adam
	}{
		{"Adam", refOpt{kind: "adam", lr: 1e-2, b1: 0.9, b2: 0.999, eps: 1e-8}, func(ps []*Var) *Adam { return NewAdam(ps, 1e-2) }},
		{"Adam/wd", refOpt{kind: "adam", lr: 1e-2, b1: 0.8, b2: 0.99, eps: 1e-6, wd: 0.1}, func(ps []*Var) *Adam {
			o := NewAdam(ps, 1e-2)
			o.Beta1, o.Beta2, o.Eps, o.WeightDecay = 0.8, 0.99, 1e-6, 0.1
			return o
		}},
		{"AdamW", refOpt{kind: "adamw", lr: 1e-2, b1: 0.9, b2: 0.999, eps: 1e-8, wd: 0.01}, func(ps []*Var) *Adam { return NewAdamW(ps, 1e-2) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, 8))
			// 1500 elements (a full block and a partial one), and 40.
			ps := []*Var{NewParam(tensor.RandN(r, 1500)), NewParam(tensor.RandN(r, 40))}
			opt := c.make(ps)
			refs := []refOpt{c.ref, c.ref}
			for k, p := range ps {
				n := p.value.Len()
				refs[k].p = make([]float64, n)
				for i, v := range p.value.Data() {
					refs[k].p[i] = float64(v)
				}
				refs[k].m, refs[k].v = make([]float64, n), make([]float64, n)
			}
			for step := range 8 {
				opt.ZeroGrad()
				for k, p := range ps {
					if k == 1 && step < 3 {
						continue // no gradient: PyTorch's grad is None
					}
					g := tensor.RandN(r, p.value.Len())
					p.grad, p.gradOK = g, true
					g64 := make([]float64, g.Len())
					for i, v := range g.Data() {
						g64[i] = float64(v)
					}
					refs[k].step(g64)
				}
				opt.Step()
			}
			for k, p := range ps {
				for i, v := range p.value.Data() {
					if want := refs[k].p[i]; math.Abs(float64(v)-want) > 1e-5*math.Max(1, math.Abs(want)) {
						t.Fatalf("parameter %d element %d: %v, reference %v", k, i, v, want)
					}
				}
			}
		})
	}
}

func TestSchedules(t *testing.T) {
	step := StepLR{Base: 0.1, Gamma: 0.5, Every: 3}
	for e, want := range []float32{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025} {
		if got := step.At(e); math.Abs(float64(got-want)) > 1e-7 {
			t.Errorf("StepLR.At(%d) = %v, want %v", e, got, want)
		}
	}
	cos := CosineLR{Base: 1, Min: 0.1, Epochs: 4}
	for e, want := range []float64{1, 0.1 + 0.9*(1+math.Cos(math.Pi/4))/2, 0.55, 0.1 + 0.9*(1+math.Cos(3*math.Pi/4))/2, 0.1, 0.1} {
		if got := cos.At(e); math.Abs(float64(got)-want) > 1e-6 {
			t.Errorf("CosineLR.At(%d) = %v, want %v", e, got, want)
		}
	}
}

func TestInitializers(t *testing.T) {
	const fanIn, fanOut = 400, 100
	cases := []struct {
		name     string
		fill     func(*tensor.Tensor, *rand.Rand)
		wantStd  float64
		boundMax float64 // 0: unbounded
	}{
		{"KaimingUniform", func(x *tensor.Tensor, r *rand.Rand) { KaimingUniform(x, fanIn, math.Sqrt2, r) }, math.Sqrt2 / 20, math.Sqrt2 * math.Sqrt(3.0/fanIn)},
		{"KaimingNormal", func(x *tensor.Tensor, r *rand.Rand) { KaimingNormal(x, fanIn, math.Sqrt2, r) }, math.Sqrt2 / 20, 0},
		{"XavierUniform", func(x *tensor.Tensor, r *rand.Rand) { XavierUniform(x, fanIn, fanOut, 1, r) }, math.Sqrt(2.0 / 500), math.Sqrt(6.0 / 500)},
		{"XavierNormal", func(x *tensor.Tensor, r *rand.Rand) { XavierNormal(x, fanIn, fanOut, 1, r) }, math.Sqrt(2.0 / 500), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := tensor.New(fanOut, fanIn), tensor.New(fanOut, fanIn)
			c.fill(a, rand.New(rand.NewPCG(9, 9)))
			c.fill(b, rand.New(rand.NewPCG(9, 9)))
			var s, ss float64
			for i, v := range a.Data() {
				if v != b.Data()[i] {
					t.Fatal("the same seed gave different values")
				}
				if c.boundMax > 0 && math.Abs(float64(v)) > c.boundMax {
					t.Fatalf("%v outside ±%v", v, c.boundMax)
				}
				s += float64(v)
				ss += float64(v) * float64(v)
			}
			n := float64(a.Len())
			mean, std := s/n, math.Sqrt(ss/n-(s/n)*(s/n))
			if math.Abs(mean) > 3*c.wantStd/math.Sqrt(n)*2 || math.Abs(std/c.wantStd-1) > 0.03 {
				t.Errorf("mean %v std %v, want 0 and %v", mean, std, c.wantStd)
			}
		})
	}
	if g := Gain(Act{Kind: ActLeakyReLU, Alpha: 0.2}); math.Abs(g-math.Sqrt(2/1.04)) > 1e-6 {
		t.Errorf("Gain(LeakyReLU 0.2) = %v", g)
	}
}

// TestSequentialFusion checks that the fused forward paths of Sequential
// give the layers' unfused results and gradients.
func TestSequentialFusion(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	model := cnnSmall(r)
	x := tensor.RandN(r, 2, 1, 8, 8)
	labels := tensor.FromSlice([]float32{1, 3}, 2)
	run := func(fused bool) (loss float32, grads []*tensor.Tensor) {
		for _, p := range Params(model) {
			p.ZeroGrad()
		}
		tp := NewTape()
		v := tp.Const(x)
		if fused {
			v = model.Forward(tp, v)
		} else {
			for _, l := range model.Layers {
				v = l.Forward(tp, v)
			}
		}
		out := tp.CrossEntropy(v, labels)
		tp.Backward(out)
		for _, p := range Params(model) {
			grads = append(grads, p.Grad().Clone())
		}
		return out.Value().Item(), grads
	}
	l1, g1 := run(true)
	l2, g2 := run(false)
	if math.Abs(float64(l1-l2)) > 1e-6 {
		t.Fatalf("fused loss %v, unfused %v", l1, l2)
	}
	for i := range g1 {
		for j, v := range g1[i].Data() {
			if w := g2[i].Data()[j]; math.Abs(float64(v-w)) > 1e-5*(1+math.Abs(float64(w))) {
				t.Fatalf("parameter %d element %d: fused gradient %v, unfused %v", i, j, v, w)
			}
		}
	}
}

func cnnSmall(r *rand.Rand) *Sequential {
	same := tensor.ConvParams{Padding: [2]int{1, 1}}
	return NewSequential(
		NewConv2D(1, 4, 3, same, r), NewReLU(), &MaxPool2D{P: tensor.PoolParams{Kernel: [2]int{2, 2}}},
		NewBatchNorm2D(4), NewDropout(0, r), Flatten{},
		NewLinear(64, 16, r), NewGELU(), NewLayerNorm(16),
		NewLinear(16, 8, r), NewTanh(), NewLinear(8, 5, r))
}

func TestSaveLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	a, b := cnnSmall(r), cnnSmall(r)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Save(path, a, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	meta, err := Load(path, b)
	if err != nil {
		t.Fatal(err)
	}
	if meta["k"] != "v" {
		t.Errorf("metadata %v", meta)
	}
	sa, sb := StateDict(a), StateDict(b)
	names := []string{}
	for i := range sa {
		names = append(names, sa[i].Name)
		for j, v := range sa[i].T.Data() {
			if sb[i].T.Data()[j] != v {
				t.Fatalf("%s differs after load", sa[i].Name)
			}
		}
	}
	want := "0.weight 0.bias 3.weight 3.bias 3.running_mean 3.running_var 6.weight 6.bias 8.weight 8.bias 9.weight 9.bias 11.weight 11.bias"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("state names\n%s\nwant (PyTorch's)\n%s", got, want)
	}

	errCases := []struct {
		name, want string
		edit       func([]Named) []Named
	}{
		{"missing", `missing "0.bias"`, func(ts []Named) []Named { return ts[:1] }},
		{"shape", `"0.weight" has shape [2]`, func(ts []Named) []Named {
			ts[0].T = tensor.New(2)
			return ts
		}},
		{"unexpected", `unexpected "extra"`, func(ts []Named) []Named { return append(ts, Named{Name: "extra", T: tensor.New(1)}) }},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			ts := StateDict(cnnSmall(r))
			before := fmt.Sprint(StateDict(b)[0].T.Data()[:3])
			err := LoadState(b, c.edit(ts))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if after := fmt.Sprint(StateDict(b)[0].T.Data()[:3]); after != before {
				t.Fatal("a failed LoadState changed the model")
			}
		})
	}
	ts := append(StateDict(a), Named{Name: "3.num_batches_tracked", T: tensor.Scalar(7)})
	if err := LoadState(b, ts); err != nil {
		t.Errorf("PyTorch's num_batches_tracked should be ignored: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none"), b); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// BenchmarkOptimizerStep times one Step of each optimizer over the
// parameters of the Fashion CNN (421K), every one with a gradient.
func BenchmarkOptimizerStep(b *testing.B) {
	for _, c := range []struct {
		name string
		make func(ps []*Var) Optimizer
	}{
		{"sgd-momentum", func(ps []*Var) Optimizer { o := NewSGD(ps, 0.01); o.Momentum = 0.9; return o }},
		{"adam", func(ps []*Var) Optimizer { return NewAdam(ps, 1e-3) }},
		{"rmsprop", func(ps []*Var) Optimizer { return NewRMSProp(ps, 1e-3) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			ps := Params(FashionCNN(r))
			opt := c.make(ps)
			for _, p := range ps {
				p.grad, p.gradOK = tensor.RandN(r, p.value.Shape()...), true
			}
			b.ReportAllocs()
			for b.Loop() {
				opt.Step()
			}
		})
	}
}

// splitByDims is DecayGroups' rule on a list of parameters: matrices and
// up decay, the others do not. It returns NewAdamWGroups' arguments with
// a learning rate of 1.
func splitByDims(ps []*Var) (decay, noDecay []*Var, lr float32) {
	for _, v := range ps {
		if v.value.Dims() >= 2 {
			decay = append(decay, v)
		} else {
			noDecay = append(noDecay, v)
		}
	}
	return decay, noDecay, 1
}

// TestWarmupCosine checks nanoGPT's get_lr at the ends and middles of its
// three parts, computed by hand.
func TestWarmupCosine(t *testing.T) {
	s := WarmupCosine{Base: 1e-3, Min: 1e-4, Warmup: 10, Decay: 100}
	for _, c := range []struct {
		it   int
		want float64
	}{
		{0, 1e-3 / 11}, {4, 1e-3 * 5 / 11}, {9, 1e-3 * 10 / 11},
		{10, 1e-3}, {55, 1e-4 + 0.9e-3/2}, {100, 1e-4}, {101, 1e-4}, {5000, 1e-4},
		{32, 1e-4 + 0.9e-3*(1+math.Cos(math.Pi*22/90))/2},
	} {
		if got := s.At(c.it); math.Abs(float64(got)-c.want) > 1e-7*c.want {
			t.Errorf("At(%d) = %v, want %v", c.it, got, c.want)
		}
	}
	// No warmup; and a decay that ends where the warmup does.
	if got := (WarmupCosine{Base: 2, Min: 1, Decay: 4}).At(2); got != 1.5 {
		t.Errorf("without warmup, At(2) = %v, want 1.5", got)
	}
	if got := (WarmupCosine{Base: 2, Min: 1, Warmup: 3, Decay: 3}).At(3); got != 2 {
		t.Errorf("Decay = Warmup: At(3) = %v, want 2", got)
	}
}

// TestClipGradNorm checks the norm and the scaled gradients against hand
// values: gradients (3, 4) and (12) have the norm 13.
func TestClipGradNorm(t *testing.T) {
	mk := func() []*Var {
		a, b, c := NewParam(tensor.New(2)), NewParam(tensor.New(1, 1)), NewParam(tensor.New(3))
		a.grad, a.gradOK = tensor.FromSlice([]float32{3, 4}, 2), true
		b.grad, b.gradOK = tensor.FromSlice([]float32{12}, 1, 1), true
		c.grad = tensor.FromSlice([]float32{100, 100, 100}, 3) // no current gradient: skipped
		return []*Var{a, b, c}
	}
	for _, c := range []struct {
		max  float32
		coef float64
	}{{6.5, 6.5 / (13 + 1e-6)}, {13, 13 / (13 + 1e-6)}, {100, 1}, {0, 0}} {
		ps := mk()
		if got := ClipGradNorm(ps, c.max); got != 13 {
			t.Errorf("max %v: norm %v, want 13", c.max, got)
		}
		want := []float64{3 * c.coef, 4 * c.coef, 12 * c.coef}
		got := append(slices.Clone(ps[0].grad.Data()), ps[1].grad.Data()...)
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-6*want[i] {
				t.Errorf("max %v: gradient %d is %v, want %v", c.max, i, got[i], want[i])
			}
		}
		if ps[2].grad.Data()[0] != 100 {
			t.Errorf("a parameter without a gradient was scaled")
		}
	}
	ps := mk()
	ps[1].grad.Data()[0] = float32(math.Inf(1))
	if got := ClipGradNorm(ps, 1); !math.IsInf(float64(got), 1) || !math.IsNaN(float64(ps[0].grad.Data()[0])) {
		t.Errorf("infinite norm: %v and gradient %v, want +Inf and NaN", got, ps[0].grad.Data()[0])
	}
	big := []*Var{NewParam(tensor.New(4096))}
	big[0].grad, big[0].gradOK = tensor.Ones(4096), true
	if n := testing.AllocsPerRun(10, func() { ClipGradNorm(big, 1) }); n != 0 {
		t.Errorf("ClipGradNorm allocates %v times on the host", n)
	}
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"nn: ClipGradNorm: maxNorm NaN", func() { ClipGradNorm(nil, float32(math.NaN())) }},
		{"nn: ClipGradNorm: maxNorm -1", func() { ClipGradNorm(nil, -1) }},
		{"nn: ClipGradNorm: parameter 0 of 1 is nil", func() { ClipGradNorm([]*Var{nil}, 1) }},
	} {
		if msg := panicMsg(c.f); !strings.HasPrefix(msg, c.want) {
			t.Errorf("panic %q, want %q", msg, c.want)
		}
	}
}

// TestAdamWGroups checks that the two groups step as two AdamWs, one with
// the weight decay and one without, and DecayGroups' split of a GPT.
func TestAdamWGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	mk := func() []*Var {
		r := rand.New(rand.NewPCG(3, 3))
		var ps []*Var
		for _, n := range []int{5, 7, 3} {
			p := NewParam(tensor.RandN(r, n))
			p.grad, p.gradOK = tensor.RandN(r, n), true
			ps = append(ps, p)
		}
		return ps
	}
	a, b := mk(), mk()
	g := NewAdamWGroups(a[:2], a[2:], 0.1)
	g.WeightDecay = 0.5
	d, nd := NewAdamW(b[:2], 0.1), NewAdamW(b[2:], 0.1)
	d.WeightDecay, nd.WeightDecay = 0.5, 0
	for range 3 {
		g.Step()
		d.Step()
		nd.Step()
	}
	for i := range a {
		if !slices.Equal(a[i].value.Data(), b[i].value.Data()) {
			t.Errorf("parameter %d: %v, separate optimizers %v", i, a[i].value.Data(), b[i].value.Data())
		}
	}
	m := NewGPT(smallGPT(false, false), r)
	decay, noDecay := DecayGroups(m)
	names := map[*Var]string{}
	m.State("", func(name string, v *Var) { names[v] = name })
	var dn, nn []string
	for _, v := range decay {
		dn = append(dn, names[v])
	}
	for _, v := range noDecay {
		nn = append(nn, names[v])
	}
	for _, n := range dn {
		if !strings.HasSuffix(n, "c_attn.weight") && !strings.HasSuffix(n, "c_proj.weight") && !strings.HasSuffix(n, "c_fc.weight") && n != "lm_head.weight" {
			t.Errorf("%s decays", n)
		}
	}
	if len(dn) != 4*2+1 || len(nn) != len(Params(m))-len(dn) {
		t.Errorf("decay %v, no decay %v", dn, nn)
	}
	tied := NewGPT(smallGPT(false, true), r)
	if decay, noDecay := DecayGroups(tied); len(decay) != 8 || !slices.Contains(noDecay, tied.Tok.W) {
		t.Errorf("tied: %d decayed, the tied weight decayed=%v", len(decay), slices.Contains(decay, tied.Tok.W))
	}
	if _, noDecay := DecayGroups(NewEmbedding(3, 4, r)); len(noDecay) != 1 {
		t.Errorf("an Embedding's weight decays")
	}
	// A checkpoint keeps the split; another split is an error.
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	if err := SaveCheckpoint(path, m, NewAdamWGroups(decay, noDecay, 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCheckpoint(path, m, NewAdamWGroups(decay, noDecay, 1), nil); err != nil {
		t.Errorf("same groups: %v", err)
	}
	_, err := LoadCheckpoint(path, m, NewAdamW(append(slices.Clone(decay), noDecay...), 1), nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the file's parameter groups have [%d %d] parameters, this one's [%d]", len(decay), len(noDecay), len(decay)+len(noDecay))) {
		t.Errorf("one group for the file's two: %v", err)
	}
}

// TestClipGradNormDevice checks ClipGradNorm on the stand-in device
// against the host: the same norm and scaled gradients, left on the
// device.
func TestClipGradNormDevice(t *testing.T) {
	tensortest.Register(t, testDev)
	r := rand.New(rand.NewPCG(4, 4))
	var host, dev []*Var
	for _, n := range []int{7, 300, 1} {
		g := tensor.RandN(r, n)
		h, d := NewParam(tensor.New(n)), NewParam(tensor.New(n))
		h.grad, h.gradOK = g.Clone(), true
		d.value, d.grad, d.gradOK = onDev(t, d.value, testDev), onDev(t, g, testDev), true
		host, dev = append(host, h), append(dev, d)
	}
	nh, nd := ClipGradNorm(host, 2), ClipGradNorm(dev, 2)
	if relErr([]float32{nd}, []float32{nh}) > 1e-6 || nh < 10 {
		t.Errorf("norm %v on the device, %v on the host", nd, nh)
	}
	for i := range host {
		if dev[i].grad.Device() != testDev {
			t.Errorf("gradient %d left the device", i)
		}
		if e := relErr(hostOf(t, dev[i].grad), host[i].grad.Data()); e > 1e-6 {
			t.Errorf("gradient %d: relative error %.3g", i, e)
		}
	}
}
