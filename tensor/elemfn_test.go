package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

var (
	inf32  = float32(math.Inf(1))
	negZ32 = float32(math.Copysign(0, -1))
)

// elemfnUnary are the unary ops of elemfn.go with their float64
// references (rounded to float32 for the comparison) and bounds in ULPs.
var elemfnUnary = []struct {
	name string
	f    func(x *Tensor) *Tensor
	into func(dst, x *Tensor) *Tensor
	ref  func(x float64) float64
	ulp  float64
}{
	{"Sin", Sin, SinInto, math.Sin, 1},
	{"Cos", Cos, CosInto, math.Cos, 1},
	{"Tan", Tan, TanInto, math.Tan, 1},
	{"Log1p", Log1p, Log1pInto, math.Log1p, 1},
	{"Expm1", Expm1, Expm1Into, math.Expm1, 1},
	{"Floor", Floor, FloorInto, math.Floor, 0},
	{"Ceil", Ceil, CeilInto, math.Ceil, 0},
	{"Round", Round, RoundInto, math.RoundToEven, 0},
	{"Sign", Sign, SignInto, func(x float64) float64 {
		switch {
		case x == 0:
			return 0 // +0 for either zero
		case x != x:
			return x
		}
		return step(x > 0, 1, -1)
	}, 0},
	{"IsNaN", IsNaN, IsNaNInto, func(x float64) float64 { return b2f(x != x) }, 0},
	{"IsInf", IsInf, IsInfInto, func(x float64) float64 { return b2f(math.IsInf(x, 0)) }, 0},
	{"IsFinite", IsFinite, IsFiniteInto, func(x float64) float64 { return b2f(!math.IsInf(x, 0) && x == x) }, 0},
	{"LogicalNot", LogicalNot, LogicalNotInto, func(x float64) float64 { return b2f(x == 0) }, 0},
}

// specialVals are mixed into the inputs: zeros of both signs, ±Inf, NaN,
// halves (Round), integers, huge values (Sin beyond 2^24), -1 (Log1p).
var specialVals = []float32{0, negZ32, inf32, -inf32, nan32, 0.5, 1.5, 2.5, -0.5, -2.5, 3, -1, 1e30, -3e38, 1e-40, 88.8}

func TestElemfnUnary(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	for _, l := range dispatch.Levels() {
		prev, _ := dispatch.SetLevel(l)
		for _, op := range elemfnUnary {
			for trial := 0; trial < 30; trial++ {
				shape := randShape(r, 4, 7)
				x := randLayout(r, layouts[r.IntN(len(layouts))], shape...)
				if !x.IsContiguous() {
					x = x.Contiguous()
				}
				if d := x.Data(); len(d) > 0 {
					for i := range d {
						switch r.IntN(4) {
						case 0:
							d[i] = specialVals[r.IntN(len(specialVals))]
						case 1:
							d[i] *= 20
						}
					}
				}
				want := func(idx []int) float64 { return float64(float32(op.ref(float64(x.At(idx...))))) }
				tol := func(idx []int) (float64, float64) {
					return op.ulp * 0x1p-23, math.Abs(op.ref(float64(x.At(idx...))))
				}
				what := fmt.Sprintf("%v %s %v", l, op.name, shape)
				got := op.f(x)
				checkValues(t, what, got, shape, want, tol)
				dst := randLayout(r, "strided", shape...)
				if op.into(dst, x) != dst {
					t.Fatalf("%s: Into did not return dst", what)
				}
				checkValues(t, what+" Into", dst, shape, want, tol)
				xc := x.Clone()
				op.into(xc, xc)
				checkValues(t, what+" in place", xc, shape, want, tol)
			}
		}
		dispatch.SetLevel(prev)
	}
}

// checkValues is checkAgainst where NaN must meet NaN and ±0 must keep its
// sign where the reference has one.
func checkValues(t *testing.T, what string, got *Tensor, shape []int, want func(idx []int) float64, tol func(idx []int) (float64, float64)) {
	t.Helper()
	if !slices.Equal(got.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	bad := 0
	indices(shape, func(idx []int) {
		g, w := float64(got.At(idx...)), want(idx)
		ok := false
		switch {
		case w != w:
			ok = g != g
		case math.IsInf(w, 0) || w == 0:
			ok = g == w && math.Signbit(g) == math.Signbit(w)
		default:
			e, scale := tol(idx)
			ok = math.Abs(g-w) <= e*math.Abs(scale)+1e-45*b2f(e > 0)
		}
		if !ok && bad < 5 {
			bad++
			t.Errorf("%s: at %v got %v, want %v", what, idx, g, w)
		}
	})
}

func TestElemfnBinary(t *testing.T) {
	ops := []struct {
		name string
		f    func(a, b *Tensor) *Tensor
		into func(dst, a, b *Tensor) *Tensor
		ref  func(a, b float64) float64
	}{
		{"Mod", Mod, ModInto, func(a, b float64) float64 {
			r := math.Mod(a, b)
			if r != 0 && (r < 0) != (b < 0) {
				r += b
			}
			return r
		}},
		{"Fmod", Fmod, FmodInto, math.Mod},
		{"LogicalAnd", LogicalAnd, LogicalAndInto, func(a, b float64) float64 { return b2f(a != 0 && b != 0) }},
		{"LogicalOr", LogicalOr, LogicalOrInto, func(a, b float64) float64 { return b2f(a != 0 || b != 0) }},
		{"LogicalXor", LogicalXor, LogicalXorInto, func(a, b float64) float64 { return b2f((a != 0) != (b != 0)) }},
	}
	r := rand.New(rand.NewPCG(24, 2))
	for _, op := range ops {
		for trial := 0; trial < 60; trial++ {
			sa, sb := broadcastPair(r)
			a := randLayout(r, "contiguous", sa...)
			b := randLayout(r, "contiguous", sb...)
			for _, x := range []*Tensor{a, b} {
				d := x.Data()
				for i := range d {
					switch r.IntN(5) {
					case 0:
						d[i] = specialVals[r.IntN(len(specialVals))]
					case 1:
						d[i] = float32(math.Round(float64(d[i] * 4)))
					}
				}
			}
			if r.IntN(2) == 0 && a.Dims() >= 2 {
				a = a.Transpose(0, 1)
				sa = a.Shape()
				if _, err := tryBroadcast(sa, sb); err != nil {
					continue
				}
			}
			want := func(idx []int) float64 { return float64(float32(op.ref(bcastAt(a, idx), bcastAt(b, idx)))) }
			got := op.f(a, b)
			what := fmt.Sprintf("%s %v %v", op.name, sa, sb)
			checkValues(t, what, got, got.Shape(), want, exact)
			dst := New(got.Shape()...)
			if op.into(dst, a, b) != dst {
				t.Fatalf("%s: Into did not return dst", what)
			}
			checkValues(t, what+" Into", dst, got.Shape(), want, exact)
		}
	}
}

// tryBroadcast reports whether two shapes broadcast together.
func tryBroadcast(a, b []int) (out []int, err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("no")
		}
	}()
	return broadcastShape("test", New(a...), New(b...)), nil
}

// TestElemfnPyTorch checks values PyTorch 1.13 gives (torch.remainder,
// torch.fmod, torch.round, torch.floor/ceil, the logical ops and the sign
// of zero results), and NumPy's sign of NaN.
func TestElemfnPyTorch(t *testing.T) {
	v := func(xs ...float32) *Tensor { return FromSlice(xs, len(xs)) }
	cases := []struct {
		name      string
		got, want *Tensor
	}{
		{"remainder", Mod(v(-4, 4, -1, 1, -1, 5, inf32, 3, 5.5, -5.5), v(2, -2, inf32, -inf32, 0, negZ32, 2, nan32, 2, 2)),
			v(negZ32, 0, inf32, -inf32, nan32, nan32, nan32, nan32, 1.5, 0.5)},
		{"fmod", Fmod(v(-4, 4, -1, 1, -1, 5, inf32, 5.5, -5.5), v(2, -2, inf32, -inf32, 0, negZ32, 2, 2, 2)),
			v(negZ32, 0, -1, 1, nan32, nan32, nan32, 1.5, -1.5)},
		{"round", Round(v(0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 8388609)), v(0, 2, 2, negZ32, -2, 0, 8388609)},
		{"floor", Floor(v(-0.5, negZ32, 1e30)), v(-1, negZ32, 1e30)},
		{"ceil", Ceil(v(-0.5, 0.5)), v(negZ32, 1)},
		{"sign", Sign(v(negZ32, 0, nan32, -2, 3, -inf32)), v(0, 0, nan32, -1, 1, -1)},
		{"logical_and", LogicalAnd(v(nan32, 0, 1), v(1, 1, negZ32)), v(1, 0, 0)},
		{"logical_not", LogicalNot(v(nan32, 0, negZ32)), v(0, 1, 1)},
		{"isfinite", IsFinite(v(nan32, inf32, -inf32, 3e38, 1e-45)), v(0, 0, 0, 1, 1)},
		{"expm1 log1p sin tan of -0", Sin(v(negZ32)), v(negZ32)},
		{"expm1(-0)", Expm1(v(negZ32)), v(negZ32)},
		{"log1p(-0)", Log1p(v(negZ32)), v(negZ32)},
		{"tan(-0)", Tan(v(negZ32)), v(negZ32)},
	}
	for _, c := range cases {
		g, w := c.got.Data(), c.want.Data()
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) && !(g[i] != g[i] && w[i] != w[i]) {
				t.Errorf("%s: [%d] = %v, want %v", c.name, i, g[i], w[i])
			}
		}
	}
}

func TestElemfnPanics(t *testing.T) {
	a, b := New(2, 3), New(4)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { Mod(a, b) }, "tensor: Mod:"},
		{func() { LogicalXorInto(New(2, 3), a, b) }, "tensor: LogicalXorInto:"},
		{func() { SinInto(New(3), a) }, "tensor: SinInto:"},
		{func() { UnaryGrad(ElemIsNaN, a, a, nil, [2]float32{}) }, "has no gradient"},
	} {
		func() {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !containsStr(msg, c.want) {
					t.Errorf("panic %v, want it to contain %q", r, c.want)
				}
			}()
			c.f()
		}()
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// elemfnGradCases are the differentiable unary ops of elemfn.go, run by
// testUnaryGrad (analytic and central differences, strided, in place) at
// every level.
var elemfnGradCases = []gradCase{
	{name: "Sin", op: ElemSin, fwd: Sin, f: math.Sin, df: math.Cos, lo: -10, hi: 10, rel: 2 * ulp, abs: 2 * ulp},
	{name: "Cos", op: ElemCos, fwd: Cos, f: math.Cos, df: func(x float64) float64 { return -math.Sin(x) }, lo: -10, hi: 10, rel: 2 * ulp, abs: 2 * ulp},
	{name: "Tan", op: ElemTan, fwd: Tan, f: math.Tan, df: func(x float64) float64 { c := math.Cos(x); return 1 / (c * c) },
		dfy: func(y float64) float64 { return 1 + y*y }, lo: -1.4, hi: 1.4, rel: 8 * ulp},
	{name: "Log1p", op: ElemLog1p, fwd: Log1p, f: math.Log1p, df: func(x float64) float64 { return 1 / (1 + x) }, lo: -0.9, hi: 50, rel: 2 * ulp},
	{name: "Expm1", op: ElemExpm1, fwd: Expm1, f: math.Expm1, df: math.Exp, dfy: func(y float64) float64 { return y + 1 }, lo: -10, hi: 10, rel: 3 * ulp},
	{name: "Floor", op: ElemFloor, fwd: Floor, f: math.Floor, df: func(float64) float64 { return 0 }, lo: -5, hi: 5},
	{name: "Ceil", op: ElemCeil, fwd: Ceil, f: math.Ceil, df: func(float64) float64 { return 0 }, lo: -5, hi: 5},
	{name: "Round", op: ElemRound, fwd: Round, f: math.RoundToEven, df: func(float64) float64 { return 0 }, lo: -5, hi: 5},
	{name: "Sign", op: ElemSign, fwd: Sign, f: func(x float64) float64 { return step(x > 0, 1, -1) }, df: func(float64) float64 { return 0 }, lo: -5, hi: 5},
}

func TestElemfnGrad(t *testing.T) {
	for _, l := range dispatch.Levels() {
		t.Run(l.String(), func(t *testing.T) {
			prev, _ := dispatch.SetLevel(l)
			defer dispatch.SetLevel(prev)
			for _, c := range elemfnGradCases {
				t.Run(c.name, func(t *testing.T) { testUnaryGrad(t, &c) })
			}
		})
	}
	// The rounding ops' gradient is 0 for any dy, NaN included (PyTorch's
	// zeros_like).
	for _, op := range []ElemOp{ElemFloor, ElemCeil, ElemRound, ElemSign} {
		dx := UnaryGrad(op, FromSlice([]float32{nan32, inf32, 1}, 3), nil, nil, [2]float32{})
		for i, v := range dx.Data() {
			if math.Float32bits(v) != 0 {
				t.Errorf("op %d: dx[%d] = %v, want 0", op, i, v)
			}
		}
	}
}
