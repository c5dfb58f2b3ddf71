package simd

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// The elementary functions join the transcendental table, so the sweeps
// (TestTranscendULP), the hard inputs, the lengths/canary/in-place test and
// the reference check cover them at every level. Sin, Cos and Tan are
// measured against float64 math.Sin/Cos/Tan (within 1 float64 ULP, 2^-29
// float32 ULP, with Payne-Hanek reduction for large x), Log1p and Expm1
// against math/big.
func init() {
	transCases = append(transCases,
		transCase{"Sin", Sin, math.Sin, math.Sin, 1},
		transCase{"Cos", Cos, math.Cos, math.Cos, 1},
		transCase{"Tan", Tan, math.Tan, math.Tan, 1},
		transCase{"Log1p", Log1p, refLog1pExact, math.Log1p, 1},
		transCase{"Expm1", Expm1, refExpm1Exact, math.Expm1, 1},
	)
	// Near multiples of π/2 (the worst reductions of float32 below 2^24),
	// around the slow-path bound, and the large inputs.
	hardInputs["Sin"] = []float32{3.1415927, 6.2831855, 1.5707964, 16777216, 16777218, -16777218, 1e30, 8.1e37, 102940.4}
	hardInputs["Cos"] = hardInputs["Sin"]
	hardInputs["Tan"] = append([]float32{252.89821, 1.5707963, -1.5707964, 4.712389, 1e10}, hardInputs["Sin"]...)
	hardInputs["Log1p"] = []float32{0.0071415044, -0.29289323, 1e-4, -1e-4, 0.41421357, 2.9802322e-08, 1e30}
	hardInputs["Expm1"] = []float32{0.35439143, -0.3510569, 0.3465736, 1e-4, 20, 20.000002, 88.72}
}

func refLog1pExact(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < -1:
		return math.NaN()
	case x == -1:
		return math.Inf(-1)
	case math.IsInf(x, 1) || x == 0:
		return x
	case x >= -0.5 && x <= 1:
		return f64(bigLog1p(bf(x, refPrec)))
	}
	y := new(big.Float).SetPrec(refPrec+200).Add(bf(1, refPrec+200), bf(x, refPrec+200))
	return f64(bigLog(y))
}

func refExpm1Exact(x float64) float64 {
	switch {
	case math.IsNaN(x) || x == 0:
		return x
	case x > 1000:
		return math.Inf(1)
	case x < -1000:
		return -1
	}
	return f64(bigExpm1(bf(x, refPrec)))
}

// TestElemfnSpecial checks the special values the documentation promises,
// at a vector position and in the tail, at every level.
func TestElemfnSpecial(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	cases := []struct {
		name string
		f    func(dst, x []float32)
		x    float32
		want float32
	}{
		{"Sin", Sin, 0, 0}, {"Sin", Sin, negZero, negZero}, {"Sin", Sin, inf, nan}, {"Sin", Sin, -inf, nan}, {"Sin", Sin, nan, nan},
		{"Sin", Sin, 1e-30, 1e-30}, {"Sin", Sin, 3e38, float32(math.Sin(float64(float32(3e38))))},
		{"Cos", Cos, 0, 1}, {"Cos", Cos, negZero, 1}, {"Cos", Cos, inf, nan}, {"Cos", Cos, -inf, nan}, {"Cos", Cos, nan, nan},
		{"Cos", Cos, -3e38, float32(math.Cos(float64(float32(-3e38))))},
		{"Tan", Tan, 0, 0}, {"Tan", Tan, negZero, negZero}, {"Tan", Tan, inf, nan}, {"Tan", Tan, nan, nan},
		{"Tan", Tan, 1e20, float32(math.Tan(float64(float32(1e20))))},
		{"Log1p", Log1p, -1, -inf}, {"Log1p", Log1p, -2, nan}, {"Log1p", Log1p, -inf, nan}, {"Log1p", Log1p, inf, inf},
		{"Log1p", Log1p, 0, 0}, {"Log1p", Log1p, negZero, negZero}, {"Log1p", Log1p, nan, nan}, {"Log1p", Log1p, 1e-40, 1e-40},
		{"Log1p", Log1p, math.MaxFloat32, float32(math.Log(math.MaxFloat32))},
		{"Expm1", Expm1, -inf, -1}, {"Expm1", Expm1, inf, inf}, {"Expm1", Expm1, 89, inf}, {"Expm1", Expm1, -30, -1},
		{"Expm1", Expm1, 0, 0}, {"Expm1", Expm1, negZero, negZero}, {"Expm1", Expm1, nan, nan}, {"Expm1", Expm1, 1e-40, 1e-40},
		{"Expm1", Expm1, 88.72, 3.3931806e+38},
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range cases {
			for _, n := range []int{1, 21, 37} {
				x, dst := make([]float32, n), make([]float32, n)
				for i := range x {
					x[i] = c.x
				}
				c.f(dst, x)
				for _, i := range []int{0, n - 1} {
					if !sameFloat(dst[i], c.want) && !(isNaN32(c.want) && isNaN32(dst[i])) {
						t.Errorf("%s(%g) = %g, want %g (n=%d, index %d)", c.name, c.x, dst[i], c.want, n, i)
					}
				}
			}
		}
	})
}

// TestTrigSlowPath mixes inputs beyond the reduction bound (2^24) with
// ordinary ones, in place and not, so that the float64 fix-up finds exactly
// the elements the kernels left, at every position of a vector and tail.
func TestTrigSlowPath(t *testing.T) {
	fns := []struct {
		name string
		f    func(dst, x []float32)
		ref  func(float64) float64
	}{{"Sin", Sin, math.Sin}, {"Cos", Cos, math.Cos}, {"Tan", Tan, math.Tan}}
	specialX := []float32{252.89821, -252.89821, 1.5707964, 16777216}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(11, uint64(l)))
		for _, fn := range fns {
			for _, n := range []int{1, 7, 16, 33, 100, 600} {
				x := make([]float32, n)
				for i := range x {
					switch r.IntN(4) {
					case 0:
						x[i] = float32(math.Ldexp(1+r.Float64(), 24+r.IntN(104))) // beyond 2^24
					case 1:
						x[i] = float32(math.NaN())
					default:
						x[i] = float32(r.NormFloat64() * 100)
					}
					if r.IntN(2) == 0 {
						x[i] = -x[i]
					}
					if r.IntN(8) == 0 {
						x[i] = specialX[r.IntN(len(specialX))]
					}
				}
				d := newGuarded(n, n%3)
				fn.f(d.s(), x)
				d.check(t, fn.name)
				in := append([]float32(nil), x...)
				fn.f(in, in)
				for i, v := range x {
					want := fn.ref(float64(v))
					if e := ulpErr(d.s()[i], want); e > 1 {
						t.Fatalf("%s(%g) = %g, want %g (%.3g ULP, n=%d i=%d)", fn.name, v, d.s()[i], want, e, n, i)
					}
					if !sameFloat(in[i], d.s()[i]) && !(isNaN32(in[i]) && isNaN32(d.s()[i])) {
						t.Fatalf("%s(%g) in place %g, apart %g", fn.name, v, in[i], d.s()[i])
					}
				}
			}
		}
	})
}

func TestElemfnPanics(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(dst, x []float32)
	}{{"Sin", Sin}, {"Cos", Cos}, {"Tan", Tan}, {"Log1p", Log1p}, {"Expm1", Expm1}} {
		expectPanic(t, "simd."+c.name+": length mismatch", func() { c.f(make([]float32, 3), make([]float32, 4)) })
		x, dst := []float32{1, 1e30, -2, 0.5, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, make([]float32, 17)
		if a := testing.AllocsPerRun(10, func() { c.f(dst, x) }); a != 0 {
			t.Errorf("%s allocates %v times per call", c.name, a)
		}
	}
}

func BenchmarkSin(b *testing.B)   { benchTrans(b, Sin, false) }
func BenchmarkCos(b *testing.B)   { benchTrans(b, Cos, false) }
func BenchmarkTan(b *testing.B)   { benchTrans(b, Tan, false) }
func BenchmarkLog1p(b *testing.B) { benchTrans(b, Log1p, true) }
func BenchmarkExpm1(b *testing.B) { benchTrans(b, Expm1, false) }

// BenchmarkMathLoop is the baseline of the elementary functions: a Go loop
// of float32(math.F(float64(x))) over the same inputs (named
// BenchmarkMathLoop/<F>/<n>).
func BenchmarkMathLoop(b *testing.B) {
	for _, f := range []struct {
		name string
		f    func(float64) float64
		pos  bool
	}{{"Sin", math.Sin, false}, {"Cos", math.Cos, false}, {"Tan", math.Tan, false}, {"Log1p", math.Log1p, true}, {"Expm1", math.Expm1, false}} {
		for _, n := range benchSizesFor(b)[:3] {
			b.Run(fmt.Sprintf("%s/%d", f.name, n), func(b *testing.B) {
				dst, x := benchSpread(n, f.pos)
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					for i, v := range x {
						dst[i] = float32(f.f(float64(v)))
					}
				}
			})
		}
	}
}
