package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// gradCase is one unary op's gradient: its float64 forward f and
// derivative df (of x), the derivative in terms of the output (dfy, for
// the ops whose gradient reads y), the range of x tested, and the
// analytic tolerance: |dx - dy·f'| <= |dy|·(rel·|f'| + abs), f' computed
// in float64 from the operand the kernel reads.
type gradCase struct {
	name     string
	op       ElemOp
	arg      [2]float32
	fwd      func(x *Tensor) *Tensor
	f, df    func(x float64) float64
	dfy      func(y float64) float64
	lo, hi   float64
	rel, abs float64
	readsX   bool // with dfy: the op may read x instead of y
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normPDF(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }

func geluTanh64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

// geluTanhDer64 is GELUTanh's derivative, 0.5·(1+t) + 0.5·x·(1-t²)·c·(1
// + 3a·x²) with t = tanh(u), in the form of sigmoids of ±2u, which does
// not cancel in the tails (1 + t does, even in float64, below x = -6).
func geluTanhDer64(x float64) float64 {
	c := math.Sqrt(2 / math.Pi)
	u2 := 2 * c * (x + 0.044715*x*x*x)
	s, sn := sigmoid64(u2), sigmoid64(-u2)
	return s * (1 + 2*c*x*(1+3*0.044715*x*x)*sn)
}

func step(c bool, a, b float64) float64 {
	if c {
		return a
	}
	return b
}

const ulp = 0x1p-24

var gradCases = []gradCase{
	{name: "Exp", op: ElemExp, fwd: Exp, f: math.Exp, df: math.Exp, dfy: func(y float64) float64 { return y }, lo: -20, hi: 20, rel: ulp},
	{name: "Log", op: ElemLog, fwd: Log, f: math.Log, df: func(x float64) float64 { return 1 / x }, lo: 1e-3, hi: 100, rel: ulp},
	{name: "Sigmoid", op: ElemSigmoid, fwd: Sigmoid, f: sigmoid64, df: func(x float64) float64 { s := sigmoid64(x); return s * (1 - s) },
		dfy: func(y float64) float64 { return y * (1 - y) }, lo: -20, hi: 20, rel: 3 * ulp},
	{name: "SiLU", op: ElemSiLU, fwd: SiLU, f: func(x float64) float64 { return x * sigmoid64(x) },
		df: func(x float64) float64 { s := sigmoid64(x); return s * (1 + x*(1-s)) }, lo: -20, hi: 20, rel: 8 * ulp, abs: 4 * ulp},
	{name: "Tanh", op: ElemTanh, fwd: Tanh, f: math.Tanh, df: func(x float64) float64 { t := math.Tanh(x); return 1 - t*t },
		dfy: func(y float64) float64 { return 1 - y*y }, lo: -10, hi: 10, rel: 3 * ulp},
	{name: "Softplus", op: ElemSoftplus, fwd: Softplus, f: func(x float64) float64 { return math.Log1p(math.Exp(x)) }, df: sigmoid64, lo: -20, hi: 20, rel: 5 * ulp},
	{name: "Erf", op: ElemErf, fwd: Erf, f: math.Erf, df: func(x float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) }, lo: -5, hi: 5, rel: 4 * ulp},
	{name: "GELU", op: ElemGELU, fwd: GELU, f: func(x float64) float64 { return x * normCDF(x) },
		df: func(x float64) float64 { return normCDF(x) + x*normPDF(x) }, lo: -10, hi: 10, rel: 0x1p-20, abs: 4 * ulp},
	{name: "GELUTanh", op: ElemGELUTanh, fwd: GELUTanh, f: geluTanh64, df: geluTanhDer64, lo: -10, hi: 10, rel: 48 * ulp, abs: 4 * ulp},
	{name: "Abs", op: ElemAbs, fwd: Abs, f: math.Abs, df: func(x float64) float64 { return step(x > 0, 1, -1) }, lo: -5, hi: 5},
	{name: "Neg", op: ElemNeg, fwd: Neg, f: func(x float64) float64 { return -x }, df: func(float64) float64 { return -1 }, lo: -5, hi: 5},
	{name: "Sqrt", op: ElemSqrt, fwd: Sqrt, f: math.Sqrt, df: func(x float64) float64 { return 0.5 / math.Sqrt(x) },
		dfy: func(y float64) float64 { return 0.5 / y }, lo: 1e-3, hi: 100, rel: ulp},
	{name: "ReLU", op: ElemReLU, fwd: ReLU, f: func(x float64) float64 { return math.Max(x, 0) },
		df: func(x float64) float64 { return step(x > 0, 1, 0) }, dfy: func(y float64) float64 { return step(y > 0, 1, 0) }, lo: -5, hi: 5, readsX: true},
	{name: "LeakyReLU", op: ElemLeakyReLU, arg: [2]float32{0.1}, fwd: func(x *Tensor) *Tensor { return LeakyReLU(x, 0.1) },
		f: func(x float64) float64 { return step(x > 0, x, float64(float32(0.1))*x) }, df: func(x float64) float64 { return step(x > 0, 1, float64(float32(0.1))) },
		dfy: func(y float64) float64 { return step(y > 0, 1, float64(float32(0.1))) }, lo: -5, hi: 5, rel: ulp, readsX: true},
	{name: "LeakyReLU(alpha<0)", op: ElemLeakyReLU, arg: [2]float32{-0.5}, fwd: func(x *Tensor) *Tensor { return LeakyReLU(x, -0.5) },
		f: func(x float64) float64 { return step(x > 0, x, -0.5*x) }, df: func(x float64) float64 { return step(x > 0, 1, -0.5) }, lo: -5, hi: 5},
	{name: "ELU", op: ElemELU, arg: [2]float32{1.5}, fwd: func(x *Tensor) *Tensor { return ELU(x, 1.5) },
		f: func(x float64) float64 { return step(x > 0, x, 1.5*math.Expm1(x)) }, df: func(x float64) float64 { return step(x > 0, 1, 1.5*math.Exp(x)) },
		dfy: func(y float64) float64 { return step(y > 0, 1, y+1.5) }, lo: -10, hi: 5, rel: 3 * ulp, abs: 2 * ulp, readsX: true},
	{name: "ELU(alpha<0)", op: ElemELU, arg: [2]float32{-0.3}, fwd: func(x *Tensor) *Tensor { return ELU(x, -0.3) },
		f: func(x float64) float64 { return step(x > 0, x, -0.3*math.Expm1(x)) }, df: func(x float64) float64 { return step(x > 0, 1, float64(float32(-0.3))*math.Exp(x)) },
		lo: -10, hi: 5, rel: 3 * ulp},
	{name: "Clamp", op: ElemClamp, arg: [2]float32{-0.5, 1}, fwd: func(x *Tensor) *Tensor { return Clamp(x, -0.5, 1) },
		f: func(x float64) float64 { return math.Min(math.Max(x, -0.5), 1) }, df: func(x float64) float64 { return step(x >= -0.5 && x <= 1, 1, 0) }, lo: -3, hi: 3},
	{name: "Scale", op: ElemScale, arg: [2]float32{-3}, fwd: func(x *Tensor) *Tensor { return Scale(x, -3) },
		f: func(x float64) float64 { return -3 * x }, df: func(float64) float64 { return -3 }, lo: -5, hi: 5, rel: ulp},
	{name: "AddScalar", op: ElemAddScalar, arg: [2]float32{2}, fwd: func(x *Tensor) *Tensor { return AddScalar(x, 2) },
		f: func(x float64) float64 { return x + 2 }, df: func(float64) float64 { return 1 }, lo: -5, hi: 5},
}

// variants lists the operands c's gradient is tested with: y (fromY)
// where it reads y, x where it reads x (or neither).
func (c *gradCase) variants() []bool {
	var v []bool
	if c.dfy != nil {
		v = append(v, true)
	}
	if c.dfy == nil || c.readsX {
		v = append(v, false)
	}
	return v
}

// kink reports whether x is within d of a point where c's derivative
// jumps (finite differences are not taken there).
func (c *gradCase) kink(x, d float64) bool {
	switch c.op {
	case ElemAbs, ElemReLU, ElemLeakyReLU, ElemELU:
		return math.Abs(x) < d
	case ElemClamp:
		return math.Abs(x+0.5) < d || math.Abs(x-1) < d
	case ElemFloor, ElemCeil, ElemSign:
		return math.Abs(x-math.Round(x)) < d
	case ElemRound:
		return math.Abs(x-math.Floor(x)-0.5) < d
	}
	return false
}

// randIn returns a value in [lo, hi], log-uniform for a positive range.
func randIn(r *rand.Rand, lo, hi float64) float32 {
	if lo > 0 {
		return float32(lo * math.Pow(hi/lo, r.Float64()))
	}
	return float32(lo + (hi-lo)*r.Float64())
}

// filled returns a tensor of the given shape laid out as kind (not
// expanded) holding the values of v.
func filled(r *rand.Rand, kind string, v *Tensor) *Tensor {
	t := randLayout(r, kind, v.Shape()...)
	CopyInto(t, v)
	return t
}

// TestUnaryGrad checks every op's gradient, at every SIMD level, against
// the float64 derivative of the operand it reads and against central
// differences of the float64 forward, over random shapes and layouts (dy
// also broadcast), the Into form (in place, and into a strided dx), and
// both operands where an op reads either.
func TestUnaryGrad(t *testing.T) {
	for _, l := range dispatch.Levels() {
		t.Run(l.String(), func(t *testing.T) {
			prev, err := dispatch.SetLevel(l)
			if err != nil {
				t.Fatal(err)
			}
			defer dispatch.SetLevel(prev)
			for _, c := range gradCases {
				t.Run(c.name, func(t *testing.T) { testUnaryGrad(t, &c) })
			}
		})
	}
}

func testUnaryGrad(t *testing.T, c *gradCase) {
	r := rand.New(rand.NewPCG(61, uint64(c.op)))
	worst := [2]float64{}
	for trial := range 40 {
		shape := randShape(r, 3, 9)
		if trial == 0 {
			shape = []int{4096} // several pieces of chunk elements
		}
		xv := New(shape...)
		xd := xv.Data()
		for i := range xd {
			xd[i] = randIn(r, c.lo, c.hi)
		}
		kinds := []string{"contiguous", "transposed", "strided"}
		x := filled(r, kinds[r.IntN(3)], xv)
		y := filled(r, kinds[r.IntN(3)], c.fwd(x))
		dy := randLayout(r, layouts[r.IntN(len(layouts))], shape...)
		for _, fromY := range c.variants() {
			gx, gy := x, (*Tensor)(nil)
			if fromY {
				gx, gy = nil, y
			}
			if fromY && c.readsX && trial%2 == 0 {
				gx = x // both given: y is read
			}
			what := fmt.Sprintf("%s %v fromY=%v", c.name, shape, fromY)
			dx := UnaryGrad(c.op, dy, gx, gy, c.arg)
			checkGrad(t, what, c, dx, dy, x, y, fromY, &worst)
			// Into: a strided dx, then in place over a copy of dy.
			sdx := randLayout(r, "strided", shape...)
			if got := UnaryGradInto(sdx, c.op, dy, gx, gy, c.arg); got != sdx {
				t.Fatalf("%s: UnaryGradInto did not return dx", what)
			}
			assertEqual(t, what+" Into strided", sdx.Contiguous(), dx)
			dyc := dy.Clone()
			UnaryGradInto(dyc, c.op, dyc, gx, gy, c.arg)
			assertEqual(t, what+" Into in place", dyc, dx)
			if !fromY {
				xc := x.Clone()
				UnaryGradInto(xc, c.op, dy, xc, nil, c.arg)
				assertEqual(t, what+" Into over x", xc, dx)
			}
		}
	}
	t.Logf("worst: %.3g·rel, %.3g·abs of the tolerance", worst[0], worst[1])
}

// checkGrad compares dx with dy·f' analytically (f' from the operand the
// kernel read) and by central differences of the float64 forward.
func checkGrad(t *testing.T, what string, c *gradCase, dx, dy, x, y *Tensor, fromY bool, worst *[2]float64) {
	t.Helper()
	bad := 0
	indices(dx.Shape(), func(idx []int) {
		g, d := float64(dx.At(idx...)), float64(dy.At(idx...))
		xv := float64(x.At(idx...))
		der := c.df(xv)
		if fromY {
			der = c.dfy(float64(y.At(idx...)))
		}
		want := d * der
		tol := math.Abs(d) * (c.rel*math.Abs(der) + c.abs)
		if e := math.Abs(g - want); e > tol+0x1p-149 && bad < 5 {
			bad++
			t.Errorf("%s: at %v (x %v, dy %v) dx = %v, want %v (off %.3g of the tolerance)", what, idx, xv, d, g, want, e/tol)
		} else if tol > 0 {
			worst[0] = max(worst[0], e/tol)
		}
		if c.kink(xv, 1e-3) {
			return
		}
		h := 1e-6 * max(1, math.Abs(xv))
		fd := (c.f(xv+h) - c.f(xv-h)) / (2 * h)
		// The formula's error plus what the rounding of y (a few ulp)
		// and the differences leave.
		if e := math.Abs(g - d*fd); e > math.Abs(d)*(0x1p-16*math.Abs(fd)+0x1p-20) && bad < 5 {
			bad++
			t.Errorf("%s: at %v (x %v, dy %v) dx = %v, central differences give %v", what, idx, xv, d, g, d*fd)
		}
	})
}

// TestUnaryGradSpecial checks the gradients at 0, -0, ±Inf, NaN, the
// smallest and largest values, with dy = 1 and -2 (and dy = NaN: it
// propagates, but where a mask zeroes it).
func TestUnaryGradSpecial(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	xs := []float32{0, float32(math.Copysign(0, -1)), float32(inf), float32(-inf), float32(nan), -float32(nan), 1e-45, -1e-45, math.MaxFloat32, -math.MaxFloat32, 1, -1}
	// want returns f'(x) for the x given, the PyTorch conventions and
	// the limits at ±Inf included (the y of the ops reading it is the
	// forward's output at x).
	want := map[string]func(x float64) float64{
		"Exp":     math.Exp,
		"Log":     func(x float64) float64 { return 1 / x },
		"Sigmoid": func(x float64) float64 { s := sigmoid64(x); return s * (1 - s) },
		"SiLU": func(x float64) float64 {
			if math.IsInf(x, 0) {
				return step(x > 0, 1, 0)
			}
			s := sigmoid64(x)
			return s * (1 + x*(1-s))
		},
		"Tanh":     func(x float64) float64 { t := math.Tanh(x); return 1 - t*t },
		"Softplus": sigmoid64,
		"Erf":      func(x float64) float64 { return 2 / math.SqrtPi * math.Exp(-x*x) },
		"GELU": func(x float64) float64 {
			if math.IsInf(x, 0) {
				return step(x > 0, 1, 0)
			}
			return normCDF(x) + x*normPDF(x)
		},
		"GELUTanh": func(x float64) float64 {
			if math.IsInf(x, 0) || math.Abs(x) > 20 {
				return step(x > 0, 1, 0)
			}
			return geluTanhDer64(x)
		},
		"Abs": func(x float64) float64 {
			if x == 0 || x != x {
				return x * 0 // 0, NaN
			}
			return step(x > 0, 1, -1)
		},
		"Neg":                func(float64) float64 { return -1 },
		"Sqrt":               func(x float64) float64 { return 0.5 / float64(float32(math.Sqrt(x))) },
		"ReLU":               func(x float64) float64 { return step(x <= 0, 0, 1) },
		"LeakyReLU":          func(x float64) float64 { return step(x > 0, 1, float64(float32(0.1))) },
		"LeakyReLU(alpha<0)": func(x float64) float64 { return step(x > 0, 1, -0.5) },
		"ELU": func(x float64) float64 {
			return step(x <= 0, 1.5*math.Exp(x), 1)
		},
		"ELU(alpha<0)": func(x float64) float64 { return step(x <= 0, float64(float32(-0.3))*math.Exp(x), 1) },
		"Clamp":        func(x float64) float64 { return step(x >= -0.5 && x <= 1, 1, 0) },
		"Scale":        func(float64) float64 { return -3 },
		"AddScalar":    func(float64) float64 { return 1 },
	}
	for _, c := range gradCases {
		w := want[c.name]
		x := FromSlice(slices.Clone(xs), len(xs))
		y := c.fwd(x)
		for _, d := range []float32{1, -2, float32(nan)} {
			dy := Full(d, len(xs))
			for _, fromY := range c.variants() {
				gx, gy := x, (*Tensor)(nil)
				if fromY {
					gx, gy = nil, y
				}
				dx := UnaryGrad(c.op, dy, gx, gy, c.arg)
				for i, v := range xs {
					e := float64(float32(float64(d) * w(float64(v))))
					if c.name == "ReLU" && d != d {
						e = step(v <= 0, 0, float64(d)) // the mask zeroes NaN
					}
					if c.name == "Clamp" && d != d {
						e = step(v >= -0.5 && v <= 1, float64(d), 0)
					}
					got := float64(dx.Data()[i])
					if !closeTo(dx.Data()[i], e, 32*ulp, math.Abs(e)) && !(e == 0 && math.Abs(got) < 1e-37) {
						t.Errorf("%s fromY=%v: x = %v, dy = %v: dx = %v, want %v", c.name, fromY, v, d, got, e)
					}
				}
			}
		}
	}
}

func TestUnaryGradPanics(t *testing.T) {
	x := New(2, 3)
	for _, c := range []struct {
		f   func()
		msg string
	}{
		{func() { UnaryGrad(ElemFill, x, x, nil, [2]float32{}) }, "tensor: UnaryGrad: op 46 has no gradient (the unary ops ElemExp ... ElemAddScalar have)"},
		{func() { UnaryGrad(ElemAdd, x, x, nil, [2]float32{}) }, "tensor: UnaryGrad: op 1 has no gradient (the unary ops ElemExp ... ElemAddScalar have)"},
		{func() { UnaryGrad(ElemSigmoid, x, x, nil, [2]float32{}) }, "tensor: UnaryGrad: the gradient of Sigmoid(arg [0 0]) needs y, the op's output"},
		{func() { UnaryGrad(ElemGELU, x, nil, x, [2]float32{}) }, "tensor: UnaryGrad: the gradient of GELU(arg [0 0]) needs x, the op's input"},
		{func() { UnaryGrad(ElemReLU, x, nil, nil, [2]float32{}) }, "tensor: UnaryGrad: the gradient of ReLU(arg [0 0]) needs x or y, the op's input or output"},
		{func() { UnaryGrad(ElemELU, x, nil, x, [2]float32{-1}) }, "tensor: UnaryGrad: the gradient of ELU(arg [-1 0]) needs x, the op's input"},
		{func() { UnaryGrad(ElemLeakyReLU, x, nil, nil, [2]float32{0.1}) }, "tensor: UnaryGrad: the gradient of LeakyReLU(arg [0.1 0]) needs x or y, the op's input or output"},
		{func() { UnaryGrad(ElemExp, x, nil, New(3, 2), [2]float32{}) }, "tensor: UnaryGrad: shapes [3 2]: x and y must have dy's shape [2 3]"},
		{func() { UnaryGrad(ElemExp, x, New(3), x, [2]float32{}) }, "tensor: UnaryGrad: shapes [3] and [2 3]: x and y must have dy's shape [2 3]"},
		{func() { UnaryGradInto(New(3, 2), ElemNeg, x, nil, nil, [2]float32{}) }, "tensor: UnaryGradInto: dy shape [2 3] and dx shape [3 2] differ"},
		{func() { UnaryGradInto(New(1, 3).BroadcastTo(2, 3), ElemNeg, x, nil, nil, [2]float32{}) }, "tensor: UnaryGradInto: dst of shape [2 3] has a broadcast (stride 0) dimension 0"},
		{func() { UnaryGrad(ElemNeg, nil, nil, nil, [2]float32{}) }, "tensor: UnaryGrad: nil tensor dy"},
	} {
		expectPanic(t, c.msg, c.f)
	}
	// The ops that read neither take none.
	if got := UnaryGrad(ElemScale, Full(2, 3), nil, nil, [2]float32{4}); !slices.Equal(got.Data(), []float32{8, 8, 8}) {
		t.Errorf("UnaryGrad(Scale 4) of 2 = %v", got.Data())
	}
}

func TestUnaryGradAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	x, dy, dx := RandN(r, 64, 128), RandN(r, 64, 128), New(64, 128)
	big, bigDy, bigDx := RandN(r, 512, 1024), RandN(r, 512, 1024), New(512, 1024) // parallel path
	xt := RandN(r, 128, 64).T()
	for name, f := range map[string]func(){
		"ReLU":             func() { UnaryGradInto(dx, ElemReLU, dy, nil, x, [2]float32{}) },
		"GELU transposed":  func() { UnaryGradInto(dx, ElemGELU, dy, xt, nil, [2]float32{}) },
		"SiLU parallel":    func() { UnaryGradInto(bigDx, ElemSiLU, bigDy, big, nil, [2]float32{}) },
		"Sigmoid in place": func() { UnaryGradInto(dy, ElemSigmoid, dy, nil, x, [2]float32{}) },
	} {
		f()
		noAllocs(t, name, f)
	}
}
