package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// transCase is one elementwise transcendental: run calls the API, ref is the
// float64 reference (math package), bound the documented max ULP.
type transCase struct {
	name  string
	run   func(dst, x []float32)
	ref   func(x float64) float64
	bound int64
}

var transCases = []transCase{
	{"Exp", Exp, math.Exp, 2},
	{"Log", Log, math.Log, 2},
	{"Sigmoid", Sigmoid, refSigmoid, 3},
	{"SiLU", SiLU, refSiLU, 3},
	{"Tanh", Tanh, math.Tanh, 3},
	{"Softplus", Softplus, refSoftplus, 3},
	{"ELU", func(d, x []float32) { ELU(d, x, 1) }, refELU, 2},
	{"Erf", Erf, math.Erf, 3},
	{"GELU", GELU, refGELU, 4},
	{"GELUTanh", GELUTanh, refGELUTanh, 4},
}

// absTiny marks the functions whose contract allows 1e-7 absolute error
// where the result is below 1e-6 in magnitude.
var absTiny = map[string]bool{"GELU": true, "GELUTanh": true}

func refGELU(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	return x * 0.5 * math.Erfc(-x/math.Sqrt2)
}

func refGELUTanh(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	if math.IsInf(x, 1) {
		return x
	}
	u := math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
	return x / (1 + math.Exp(-2*u))
}

// transErr is the error of got against the float64 reference in ULPs, or 0
// where the function's contract accepts an absolute error instead.
func transErr(name string, got float32, ref float64) int64 {
	want := float32(ref)
	d := ulpDiff(got, want)
	if absTiny[name] && math.Abs(ref) < 1e-6 && math.Abs(float64(got)-ref) <= 1e-7 {
		return 0
	}
	return d
}

func refSigmoid(x float64) float64 {
	if x < 0 {
		e := math.Exp(x)
		return e / (1 + e)
	}
	return 1 / (1 + math.Exp(-x))
}

func refSiLU(x float64) float64 {
	if math.IsInf(x, -1) {
		return math.Copysign(0, -1)
	}
	return x * refSigmoid(x)
}

func refSoftplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

func refELU(x float64) float64 {
	if x > 0 {
		return x
	}
	return math.Expm1(x)
}

// ulpDiff is the number of float32 values between a and b (0 if equal, both
// NaN counting as equal; MaxInt64 if only one is NaN).
func ulpDiff(a, b float32) int64 {
	if a != a || b != b {
		if a != a && b != b {
			return 0
		}
		return math.MaxInt64
	}
	ord := func(f float32) int64 {
		u := math.Float32bits(f)
		if u&(1<<31) != 0 {
			return -int64(u &^ (1 << 31))
		}
		return int64(u)
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return d
}

// sweepStride is the step through the 2^32 float32 bit patterns: about four
// million inputs per function and level, every exponent and sign included; a
// full sweep with LANES_EXHAUSTIVE=1.
func sweepStride() uint64 {
	switch {
	case os.Getenv("LANES_EXHAUSTIVE") == "1":
		return 1
	case raceEnabled || testing.Short():
		return 1<<12 + 3
	}
	return 1<<10 + 7
}

// TestTranscendULP sweeps float32 bit patterns with a fixed stride and checks
// every function at every level against the float64 reference (computed once
// per input), reporting the largest error seen per level.
func TestTranscendULP(t *testing.T) {
	stride := sweepStride()
	const chunk = 1 << 20
	requireLevel(t)
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	levels := dispatch.Levels()
	for _, c := range transCases {
		t.Run(c.name, func(t *testing.T) {
			x, got, ref := make([]float32, chunk), make([]float32, chunk), make([]float64, chunk)
			worst := make([]int64, len(levels))
			worstX := make([]float32, len(levels))
			n := 0
			for start := uint64(0); start < 1<<32; start += chunk * stride {
				m := 0
				for b := start; b < 1<<32 && m < chunk; b += stride {
					x[m] = math.Float32frombits(uint32(b))
					ref[m] = c.ref(float64(x[m]))
					m++
				}
				for li, l := range levels {
					dispatch.SetLevel(l)
					c.run(got[:m], x[:m])
					for i, v := range x[:m] {
						if d := transErr(c.name, got[i], ref[i]); d > worst[li] {
							worst[li], worstX[li] = d, v
						}
					}
				}
				n += m
			}
			for li, l := range levels {
				t.Logf("%s %v: %d inputs (stride %d), max error %d ULP (at x=%g)", c.name, l, n, stride, worst[li], worstX[li])
				if worst[li] > c.bound {
					dispatch.SetLevel(l)
					got1 := make([]float32, 1)
					c.run(got1, []float32{worstX[li]})
					t.Errorf("%s %v: %s(%g) = %g, want %g: %d ULP > %d", c.name, l, c.name, worstX[li], got1[0], float32(c.ref(float64(worstX[li]))), worst[li], c.bound)
				}
			}
		})
	}
}

// TestTranscendSpecial checks the special values the documentation promises.
func TestTranscendSpecial(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	cases := []struct {
		name string
		f    func(dst, x []float32)
		x    float32
		want float32
	}{
		{"Exp", Exp, -inf, 0}, {"Exp", Exp, inf, inf}, {"Exp", Exp, 88.73, inf}, {"Exp", Exp, 88.72, 3.3931806e+38},
		{"Exp", Exp, -103.9, float32(math.Exp(-103.9))}, {"Exp", Exp, -87.5, float32(math.Exp(-87.5))},
		{"Exp", Exp, -104, 0}, {"Exp", Exp, 0, 1}, {"Exp", Exp, negZero, 1},
		{"Log", Log, 0, -inf}, {"Log", Log, negZero, -inf}, {"Log", Log, -1, nan}, {"Log", Log, -inf, nan},
		{"Log", Log, inf, inf}, {"Log", Log, 1, 0}, {"Log", Log, math.SmallestNonzeroFloat32, float32(math.Log(math.SmallestNonzeroFloat32))},
		{"Tanh", Tanh, 20, 1}, {"Tanh", Tanh, -20, -1}, {"Tanh", Tanh, inf, 1}, {"Tanh", Tanh, -inf, -1}, {"Tanh", Tanh, negZero, negZero},
		{"Sigmoid", Sigmoid, -100, float32(refSigmoid(-100))}, {"Sigmoid", Sigmoid, -inf, 0}, {"Sigmoid", Sigmoid, inf, 1}, {"Sigmoid", Sigmoid, 0, 0.5},
		{"SiLU", SiLU, -inf, negZero}, {"SiLU", SiLU, inf, inf},
		{"Softplus", Softplus, 100, 100}, {"Softplus", Softplus, inf, inf}, {"Softplus", Softplus, -inf, 0},
		{"Softplus", Softplus, -100, float32(refSoftplus(-100))},
		{"ELU", func(d, x []float32) { ELU(d, x, 1.5) }, -inf, -1.5},
		{"LeakyReLU", func(d, x []float32) { LeakyReLU(d, x, 0.25) }, -4, -1},
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range cases {
			for _, n := range []int{1, 21} { // the tail path and a vector path
				x, dst := make([]float32, n), make([]float32, n)
				for i := range x {
					x[i] = c.x
				}
				c.f(dst, x)
				if !sameFloat(dst[n-1], c.want) {
					t.Errorf("%s(%g) = %g, want %g (n=%d)", c.name, c.x, dst[n-1], c.want, n)
				}
			}
		}
		// NaN in, NaN out, everywhere.
		all := []func(dst, x []float32){Exp, Log, Sigmoid, SiLU, Tanh, Softplus,
			func(d, x []float32) { ELU(d, x, 1) }, func(d, x []float32) { LeakyReLU(d, x, 0.1) }}
		for i, f := range all {
			dst := make([]float32, 19)
			x := make([]float32, 19)
			for j := range x {
				x[j] = nan
			}
			f(dst, x)
			for j, v := range dst {
				if v == v {
					t.Fatalf("function %d: NaN input gave %g at %d", i, v, j)
				}
			}
		}
	})
}

// TestTranscendLengths runs every function over lengths 0..257 and one large
// length, unaligned, in place and with canaries, inputs spread over the whole
// useful range plus special values.
func TestTranscendLengths(t *testing.T) {
	cases := append(transCases[:len(transCases):len(transCases)],
		transCase{"LeakyReLU", func(d, x []float32) { LeakyReLU(d, x, 0.125) },
			func(x float64) float64 {
				if x > 0 {
					return x
				}
				return 0.125 * x
			}, 0})
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(7, uint64(l)))
		for _, c := range cases {
			for _, n := range testLengths {
				a := newGuarded(n, (n+1)%4)
				fill(r, a.s(), 30, 7)
				x := append([]float32(nil), a.s()...)
				d := newGuarded(n, n%4)
				c.run(d.s(), a.s())
				d.check(t, c.name)
				a.check(t, c.name)
				for i, v := range x {
					if transErr(c.name, d.s()[i], c.ref(float64(v))) > c.bound {
						t.Fatalf("%s n=%d: x[%d]=%g got %g want %g", c.name, n, i, v, d.s()[i], c.ref(float64(v)))
					}
				}
				// In place gives the same.
				c.run(a.s(), a.s())
				for i := range x {
					if !sameFloat(a.s()[i], d.s()[i]) {
						t.Fatalf("%s n=%d in place: [%d] %g != %g", c.name, n, i, a.s()[i], d.s()[i])
					}
				}
			}
		}
	})
}

func refSoftmax(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	out := make([]float64, len(x))
	var s float64
	for i, v := range x {
		out[i] = math.Exp(float64(v) - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func TestSoftmax(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(9, uint64(l)))
		for _, n := range testLengths {
			for _, scale := range []float32{1, 20, 200} {
				x := newGuarded(n, n%3)
				fill(r, x.s(), scale, 0)
				want := refSoftmax(x.s())
				d := newGuarded(n, (n+2)%4)
				Softmax(d.s(), x.s())
				d.check(t, "Softmax")
				var sum float64
				for i, v := range d.s() {
					sum += float64(v)
					if e := ulpDiff(v, float32(want[i])); e > 4 {
						t.Fatalf("Softmax n=%d scale=%g: [%d] x=%g got %g want %g (%d ULP)", n, scale, i, x.s()[i], v, want[i], e)
					}
				}
				if n > 0 && math.Abs(sum-1) > 1e-6 {
					t.Fatalf("Softmax n=%d scale=%g: sums to %v", n, scale, sum)
				}
				// LogSoftmax and LogSumExp against the same reference.
				LogSoftmax(d.s(), x.s())
				d.check(t, "LogSoftmax")
				for i, v := range d.s() {
					w := math.Log(want[i])
					if ulpDiff(v, float32(w)) > 4 && math.Abs(float64(v)-w) > 1e-6 {
						t.Fatalf("LogSoftmax n=%d scale=%g: [%d] got %g want %g", n, scale, i, v, w)
					}
				}
				if n > 0 {
					m := math.Inf(-1)
					for _, v := range x.s() {
						m = math.Max(m, float64(v))
					}
					var s float64
					for _, v := range x.s() {
						s += math.Exp(float64(v) - m)
					}
					w := float32(m + math.Log(s))
					if got := LogSumExp(x.s()); ulpDiff(got, w) > 2 {
						t.Fatalf("LogSumExp n=%d: got %g want %g", n, got, w)
					}
				}
				// In place.
				y := append([]float32(nil), x.s()...)
				Softmax(y, y)
				Softmax(d.s(), x.s())
				for i := range y {
					if !sameFloat(y[i], d.s()[i]) {
						t.Fatalf("Softmax in place differs at %d", i)
					}
				}
			}
		}
	})
}

func TestSoftmaxSpecialRows(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	rows := map[string][]float32{
		"+Inf":    {1, inf, 2},
		"all-Inf": {-inf, -inf, -inf},
		"NaN":     {1, nan, 2},
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for name, x := range rows {
			d := make([]float32, len(x))
			for _, f := range []func(d, x []float32){Softmax, LogSoftmax} {
				f(d, x)
				for i, v := range d {
					if v == v {
						t.Fatalf("%s row: [%d] = %g, want NaN (NumPy's result)", name, i, v)
					}
				}
			}
		}
		if got := LogSumExp([]float32{-inf, -inf}); got != -inf {
			t.Fatalf("LogSumExp(all -Inf) = %g, want -Inf", got)
		}
		if got := LogSumExp(nil); got != -inf {
			t.Fatalf("LogSumExp(empty) = %g, want -Inf", got)
		}
		if got := LogSumExp([]float32{1, inf}); got != inf {
			t.Fatalf("LogSumExp(+Inf) = %g", got)
		}
		if got := LogSumExp([]float32{1, nan}); got == got {
			t.Fatalf("LogSumExp(NaN) = %g", got)
		}
		Softmax(nil, nil)
		LogSoftmax(nil, nil)
		// Extreme but finite rows stay exact: one dominant element.
		d := make([]float32, 3)
		Softmax(d, []float32{-1e30, 0, -1e30})
		if d[0] != 0 || d[1] != 1 || d[2] != 0 {
			t.Fatalf("Softmax(-1e30, 0, -1e30) = %v", d)
		}
	})
}

func TestTranscendAllocsAndPanics(t *testing.T) {
	x, d := make([]float32, 1000), make([]float32, 1000)
	for i := range x {
		x[i] = float32(i) / 100
	}
	fs := map[string]func(){
		"Exp": func() { Exp(d, x) }, "Log": func() { Log(d, x) }, "Sigmoid": func() { Sigmoid(d, x) },
		"SiLU": func() { SiLU(d, x) }, "Tanh": func() { Tanh(d, x) }, "Softplus": func() { Softplus(d, x) },
		"ELU": func() { ELU(d, x, 1) }, "LeakyReLU": func() { LeakyReLU(d, x, 0.1) },
		"Softmax": func() { Softmax(d, x) }, "LogSoftmax": func() { LogSoftmax(d, x) }, "LogSumExp": func() { LogSumExp(x) },
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for name, f := range fs {
			if a := testing.AllocsPerRun(10, f); a != 0 {
				t.Errorf("%s allocates %v times per call", name, a)
			}
		}
	})
	short := make([]float32, 3)
	for name, f := range map[string]func(){
		"Exp": func() { Exp(short, x) }, "Softmax": func() { Softmax(short, x) }, "ELU": func() { ELU(short, x, 1) },
	} {
		expectPanic(t, fmt.Sprintf("simd.%s: length mismatch: len(dst)=3 len(x)=1000", name), f)
	}
}
