package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// arithCase is one elementwise function: run calls the public API, ref gives the
// expected element from the inputs (computed in float64 and rounded once, which
// is exact for +, -, ×, ÷ and sqrt of float32 operands), tol the allowed error.
type arithCase struct {
	name   string
	inputs int // 1 or 2 (besides dst)
	run    func(dst, a, b []float32)
	ref    func(a, b float32) float32
	// fused marks Axpy, whose SIMD levels round once: error up to 1 ULP of the
	// larger term instead of bit-exact.
	fused bool
}

const (
	scalarS = float32(1.75)
	alphaS  = float32(-0.625)
	loS     = float32(-0.5)
	hiS     = float32(0.75)
)

var arithCases = []arithCase{
	{"Add", 2, Add, func(a, b float32) float32 { return float32(float64(a) + float64(b)) }, false},
	{"Sub", 2, Sub, func(a, b float32) float32 { return float32(float64(a) - float64(b)) }, false},
	{"Mul", 2, Mul, func(a, b float32) float32 { return float32(float64(a) * float64(b)) }, false},
	{"Div", 2, Div, func(a, b float32) float32 { return float32(float64(a) / float64(b)) }, false},
	{"Maximum", 2, Maximum, refMaximum, false},
	{"Minimum", 2, Minimum, refMinimum, false},
	{"AddScalar", 1, func(d, a, _ []float32) { AddScalar(d, a, scalarS) }, func(a, _ float32) float32 { return float32(float64(a) + float64(scalarS)) }, false},
	{"Scale", 1, func(d, a, _ []float32) { Scale(d, a, scalarS) }, func(a, _ float32) float32 { return float32(float64(a) * float64(scalarS)) }, false},
	// Axpy's dst is y, which is also its first input; b plays x.
	{"Axpy", 2, func(d, a, b []float32) { copy(d, a); Axpy(d, alphaS, b) }, func(y, x float32) float32 { return float32(float64(y) + float64(alphaS)*float64(x)) }, true},
	{"Abs", 1, func(d, a, _ []float32) { Abs(d, a) }, func(a, _ float32) float32 { return math.Float32frombits(math.Float32bits(a) &^ (1 << 31)) }, false},
	{"Neg", 1, func(d, a, _ []float32) { Neg(d, a) }, func(a, _ float32) float32 { return math.Float32frombits(math.Float32bits(a) ^ (1 << 31)) }, false},
	{"Sqrt", 1, func(d, a, _ []float32) { Sqrt(d, a) }, func(a, _ float32) float32 { return float32(math.Sqrt(float64(a))) }, false},
	{"ReLU", 1, func(d, a, _ []float32) { ReLU(d, a) }, func(a, _ float32) float32 { return refMaximum(a, 0) }, false},
	{"Clamp", 1, func(d, a, _ []float32) { Clamp(d, a, loS, hiS) }, func(a, _ float32) float32 { return refMinimum(refMaximum(a, loS), hiS) }, false},
}

// refMaximum restates the documented semantics independently of the kernels.
func refMaximum(a, b float32) float32 {
	switch {
	case isNaN32(a):
		return a
	case isNaN32(b):
		return b
	case float64(a) > float64(b):
		return a
	}
	return b
}

func refMinimum(a, b float32) float32 {
	switch {
	case isNaN32(a):
		return a
	case isNaN32(b):
		return b
	case float64(a) < float64(b):
		return a
	}
	return b
}

func (c arithCase) check(t *testing.T, got []float32, a, b []float32, what string) {
	t.Helper()
	for i := range got {
		var bi float32
		if c.inputs == 2 {
			bi = b[i]
		}
		want := c.ref(a[i], bi)
		if c.fused {
			if isNaN32(want) || math.IsInf(float64(want), 0) {
				if !sameFloat(got[i], want) {
					t.Fatalf("%s: [%d] = %v, want %v (a=%v b=%v)", what, i, got[i], want, a[i], bi)
				}
				continue
			}
			bound := 2 * ulp(float32(math.Max(math.Abs(float64(a[i])), math.Abs(float64(alphaS)*float64(bi)))))
			if d := math.Abs(float64(got[i]) - float64(want)); d > bound {
				t.Fatalf("%s: [%d] = %v, want %v within %g (a=%v b=%v)", what, i, got[i], want, bound, a[i], bi)
			}
			continue
		}
		if !sameFloat(got[i], want) {
			t.Fatalf("%s: [%d] = %v (%#x), want %v (%#x) (a=%v b=%v)", what, i,
				got[i], math.Float32bits(got[i]), want, math.Float32bits(want), a[i], bi)
		}
	}
}

// TestArith checks every elementwise function at every level for every length
// 0..257 and one large length, at unaligned starts, with special values, in
// place, and with canaries around dst.
func TestArith(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(1, uint64(l)))
		for _, c := range arithCases {
			for _, n := range testLengths {
				off := n % 4 // 0..3 elements: starts not aligned to 16 bytes
				a, b := newGuarded(n, (off+1)%4), newGuarded(n, (off+2)%4)
				fill(r, a.s(), 100, 7)
				fill(r, b.s(), 100, 5)
				dst := newGuarded(n, off)
				what := fmt.Sprintf("%s n=%d", c.name, n)

				c.run(dst.s(), a.s(), b.s())
				c.check(t, dst.s(), a.s(), b.s(), what)
				dst.check(t, what)
				a.check(t, what+" (input a)")
				b.check(t, what+" (input b)")

				// In place: dst is the first input (Axpy is always in place).
				if c.name != "Axpy" {
					in := newGuarded(n, off)
					copy(in.s(), a.s())
					c.run(in.s(), in.s(), b.s())
					c.check(t, in.s(), a.s(), b.s(), what+" in place dst==a")
					in.check(t, what+" in place dst==a")
				}
				if c.inputs == 2 && !c.fused {
					in := newGuarded(n, off)
					copy(in.s(), b.s())
					c.run(in.s(), a.s(), in.s())
					c.check(t, in.s(), a.s(), b.s(), what+" in place dst==b")
					in.check(t, what+" in place dst==b")
				}
			}
		}
	})
}

// TestArithStreaming covers the non-temporal path that long destinations take
// (asm/gen/arith: streamMin = 1<<20 elements), with every misalignment of dst
// that its aligning head must handle.
func TestArithStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("long slices")
	}
	const n = 1<<20 + 37
	r := rand.New(rand.NewPCG(7, 7))
	a, b := newGuarded(n, 1), newGuarded(n, 2)
	fill(r, a.s(), 100, 101)
	fill(r, b.s(), 100, 103)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range arithCases {
			for _, off := range []int{0, 3, 5, 15} {
				dst := newGuarded(n, off)
				what := fmt.Sprintf("%s n=%d dst offset %d", c.name, n, off)
				c.run(dst.s(), a.s(), b.s())
				c.check(t, dst.s(), a.s(), b.s(), what)
				dst.check(t, what)
			}
		}
	})
}

// TestArithSpecialPairs crosses every special value with every other, so each
// pair appears in a vector lane and in a tail.
func TestArithSpecialPairs(t *testing.T) {
	var a, b []float32
	for _, x := range specials {
		for _, y := range specials {
			a, b = append(a, x), append(b, y)
		}
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		dst := make([]float32, len(a))
		for _, c := range arithCases {
			c.run(dst, a, b)
			c.check(t, dst, a, b, c.name+" specials")
		}
	})
}

// TestArithLevelsAgree checks that every level gives bit-identical results
// (Axpy excepted: see its doc).
func TestArithLevelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	n := 1031
	a, b := make([]float32, n), make([]float32, n)
	fill(r, a, 1e3, 11)
	fill(r, b, 1e-3, 13)
	want := map[string][]float32{}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range arithCases {
			if c.fused {
				continue
			}
			got := make([]float32, n)
			c.run(got, a, b)
			if w, ok := want[c.name]; ok {
				for i := range got {
					if !sameFloat(got[i], w[i]) {
						t.Fatalf("%s at %v: [%d] = %v, generic gave %v", c.name, l, i, got[i], w[i])
					}
				}
			} else {
				want[c.name] = got
			}
		}
	})
}

// TestAxpySelf checks Axpy with x and y the same slice: y += alpha*y.
func TestAxpySelf(t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(3, 3))
		for _, n := range testLengths {
			y := newGuarded(n, n%4)
			fill(r, y.s(), 10, 0)
			orig := append([]float32(nil), y.s()...)
			Axpy(y.s(), alphaS, y.s())
			for i, v := range y.s() {
				want := float32(float64(orig[i]) * (1 + float64(alphaS)))
				if d := math.Abs(float64(v) - float64(want)); d > 2*ulp(orig[i]) {
					t.Fatalf("n=%d [%d] = %v, want %v", n, i, v, want)
				}
			}
			y.check(t, "Axpy self")
		}
	})
}

func TestArithPanics(t *testing.T) {
	a, b := make([]float32, 4), make([]float32, 4)
	short := make([]float32, 3)
	expectPanic(t, "simd.Add: length mismatch: len(dst)=3 len(a)=4 len(b)=4", func() { Add(short, a, b) })
	expectPanic(t, "simd.Mul: length mismatch: len(dst)=4 len(a)=4 len(b)=3", func() { Mul(a, b, short) })
	expectPanic(t, "simd.Scale: length mismatch: len(dst)=4 len(a)=3", func() { Scale(a, short, 2) })
	expectPanic(t, "simd.Axpy: length mismatch: len(y)=3 len(x)=4", func() { Axpy(short, 2, a) })
	expectPanic(t, "simd.Sqrt: length mismatch: len(dst)=4 len(x)=3", func() { Sqrt(a, short) })
	expectPanic(t, "simd.Clamp: need lo <= hi, got lo=2 hi=1", func() { Clamp(a, b, 2, 1) })
	expectPanic(t, "simd.Clamp: need lo <= hi, got lo=NaN hi=1", func() { Clamp(a, b, float32(math.NaN()), 1) })
	buf := make([]float32, 8)
	expectPanic(t, "simd.Add: dst partially overlaps an input", func() { Add(buf[1:5], buf[0:4], b) })
	expectPanic(t, "simd.Neg: dst and x partially overlap", func() { Neg(buf[0:4], buf[3:7]) })
	// Exact aliasing and adjacent slices are fine.
	Add(buf[0:4], buf[0:4], buf[4:8])
	Neg(buf[0:4], buf[0:4])
}

func TestArithNoAlloc(t *testing.T) {
	a, b, d := make([]float32, 1000), make([]float32, 1000), make([]float32, 1000)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range arithCases {
			if n := testing.AllocsPerRun(20, func() { c.run(d, a, b) }); n != 0 {
				t.Errorf("%s: %v allocations per call", c.name, n)
			}
		}
	})
}

// TestArithTablesComplete checks that no level left a kernel unset.
func TestArithTablesComplete(t *testing.T) {
	for l := range dispatch.NumLevels {
		k := arith.at(dispatch.Level(l))
		if k == nil {
			continue
		}
		if k.add == nil || k.sub == nil || k.mul == nil || k.div == nil || k.maximum == nil ||
			k.minimum == nil || k.addScalar == nil || k.scale == nil || k.axpy == nil || k.abs == nil ||
			k.neg == nil || k.sqrt == nil || k.relu == nil || k.clamp == nil {
			t.Errorf("level %v: arith table has a nil kernel: %+v", dispatch.Level(l), *k)
		}
	}
}

// FuzzAdd compares every level with the generic kernel on arbitrary input
// bytes at arbitrary offsets.
func FuzzAdd(f *testing.F) {
	f.Add([]byte("0123456789abcdef0123456789abcdef0123"), uint8(1))
	f.Add(make([]byte, 300), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, off uint8) {
		x := floatsFromBytes(data)
		o := int(off) % 4
		if o > len(x) {
			o = len(x)
		}
		a := x[o:]
		b := make([]float32, len(a))
		for i := range b {
			b[i] = x[len(x)-1-i]
		}
		want := make([]float32, len(a))
		addGeneric(want, a, b)
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			got := make([]float32, len(a))
			Add(got, a, b)
			for i := range got {
				if !sameFloat(got[i], want[i]) {
					t.Fatalf("[%d] = %v, generic %v", i, got[i], want[i])
				}
			}
		})
	})
}

func floatsFromBytes(data []byte) []float32 {
	x := make([]float32, len(data)/4)
	for i := range x {
		x[i] = math.Float32frombits(uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24)
	}
	return x
}
