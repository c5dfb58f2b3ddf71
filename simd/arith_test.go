package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/lanesgo/lanes/dispatch"
)

// arithCase is one elementwise function at element type T: run calls the
// public API (Add or AddF64), ref gives the expected element from the inputs,
// computed in float64 and rounded once to T. For float32 operands that is
// exact for +, -, ×, ÷ and sqrt (53 >= 2·24+2); for float64 operands Go's
// scalar float64 operations are IEEE's correctly rounded results, the
// reference the vector instructions must match bit for bit, and Axpy's
// reference is math.FMA, the correctly rounded fused result.
type arithCase[T float] struct {
	name   string
	inputs int // 1 or 2 (besides dst)
	run    func(dst, a, b []T)
	ref    func(a, b T) T
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

var arithCases = arithCasesOf[float32]()

// arithCasesOf is the table of elementwise functions at element type T: the
// float32 functions for float32, their F64 forms for float64.
func arithCasesOf[T float]() []arithCase[T] {
	type binary = func(dst, a, b []T)
	type unary = func(dst, x []T)
	type withScalar = func(dst, a []T, s T)
	scalar := func(f32, f64 any, s float32) binary {
		f := either[withScalar](f32, f64)
		return func(d, a, _ []T) { f(d, a, T(s)) }
	}
	un := func(f32, f64 any) binary {
		f := either[unary](f32, f64)
		return func(d, a, _ []T) { f(d, a) }
	}
	axpy := either[func(y []T, alpha T, x []T)](Axpy, AxpyF64)
	clamp := either[func(dst, x []T, lo, hi T)](Clamp, ClampF64)
	return []arithCase[T]{
		{"Add", 2, either[binary](Add, AddF64), func(a, b T) T { return T(float64(a) + float64(b)) }, false},
		{"Sub", 2, either[binary](Sub, SubF64), func(a, b T) T { return T(float64(a) - float64(b)) }, false},
		{"Mul", 2, either[binary](Mul, MulF64), func(a, b T) T { return T(float64(a) * float64(b)) }, false},
		{"Div", 2, either[binary](Div, DivF64), func(a, b T) T { return T(float64(a) / float64(b)) }, false},
		{"Maximum", 2, either[binary](Maximum, MaximumF64), refMaximum[T], false},
		{"Minimum", 2, either[binary](Minimum, MinimumF64), refMinimum[T], false},
		{"AddScalar", 1, scalar(AddScalar, AddScalarF64, scalarS), func(a, _ T) T { return T(float64(a) + float64(scalarS)) }, false},
		{"Scale", 1, scalar(Scale, ScaleF64, scalarS), func(a, _ T) T { return T(float64(a) * float64(scalarS)) }, false},
		// Axpy's dst is y, which is also its first input; b plays x.
		{"Axpy", 2, func(d, a, b []T) { copy(d, a); axpy(d, T(alphaS), b) }, func(y, x T) T { return T(math.FMA(float64(alphaS), float64(x), float64(y))) }, true},
		{"Abs", 1, un(Abs, AbsF64), func(a, _ T) T { return fromBits[T](bitsOf(a) &^ signBit[T]()) }, false},
		{"Neg", 1, un(Neg, NegF64), func(a, _ T) T { return fromBits[T](bitsOf(a) ^ signBit[T]()) }, false},
		{"Sqrt", 1, un(Sqrt, SqrtF64), func(a, _ T) T { return T(math.Sqrt(float64(a))) }, false},
		{"ReLU", 1, un(ReLU, ReLUF64), func(a, _ T) T { return refMaximum(a, 0) }, false},
		{"Clamp", 1, func(d, a, _ []T) { clamp(d, a, T(loS), T(hiS)) }, func(a, _ T) T { return refMinimum(refMaximum(a, T(loS)), T(hiS)) }, false},
	}
}

// refMaximum restates the documented semantics independently of the kernels.
func refMaximum[T float](a, b T) T {
	switch {
	case isNaN(a):
		return a
	case isNaN(b):
		return b
	case float64(a) > float64(b):
		return a
	}
	return b
}

func refMinimum[T float](a, b T) T {
	switch {
	case isNaN(a):
		return a
	case isNaN(b):
		return b
	case float64(a) < float64(b):
		return a
	}
	return b
}

func (c arithCase[T]) check(t *testing.T, got []T, a, b []T, what string) {
	t.Helper()
	for i := range got {
		var bi T
		if c.inputs == 2 {
			bi = b[i]
		}
		want := c.ref(a[i], bi)
		if c.fused {
			if isNaN(want) || math.IsInf(float64(want), 0) {
				if !sameFloat(got[i], want) {
					t.Fatalf("%s: [%d] = %v, want %v (a=%v b=%v)", what, i, got[i], want, a[i], bi)
				}
				continue
			}
			bound := 2 * ulp(T(math.Max(math.Abs(float64(a[i])), math.Abs(float64(alphaS)*float64(bi)))))
			if d := math.Abs(float64(got[i]) - float64(want)); d > bound {
				t.Fatalf("%s: [%d] = %v, want %v within %g (a=%v b=%v)", what, i, got[i], want, bound, a[i], bi)
			}
			continue
		}
		if !sameFloat(got[i], want) {
			t.Fatalf("%s: [%d] = %v (%#x), want %v (%#x) (a=%v b=%v)", what, i,
				got[i], bitsOf(got[i]), want, bitsOf(want), a[i], bi)
		}
	}
}

// TestArith checks every elementwise function at every level for every length
// 0..257 and one large length, at unaligned starts, with special values, in
// place, and with canaries around dst; TestArithF64 the same for the float64
// forms.
func TestArith(t *testing.T)    { testArith[float32](t) }
func TestArithF64(t *testing.T) { testArith[float64](t) }

func testArith[T float](t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(1, uint64(l)))
		for _, c := range arithCasesOf[T]() {
			for _, n := range testLengths {
				off := n % 4 // 0..3 elements: starts not aligned to 16 bytes
				a, b := newGuardedOf[T](n, (off+1)%4), newGuardedOf[T](n, (off+2)%4)
				fill(r, a.s(), 100, 7)
				fill(r, b.s(), 100, 5)
				dst := newGuardedOf[T](n, off)
				what := fmt.Sprintf("%s n=%d", c.name, n)

				c.run(dst.s(), a.s(), b.s())
				c.check(t, dst.s(), a.s(), b.s(), what)
				dst.check(t, what)
				a.check(t, what+" (input a)")
				b.check(t, what+" (input b)")

				// In place: dst is the first input (Axpy is always in place).
				if c.name != "Axpy" {
					in := newGuardedOf[T](n, off)
					copy(in.s(), a.s())
					c.run(in.s(), in.s(), b.s())
					c.check(t, in.s(), a.s(), b.s(), what+" in place dst==a")
					in.check(t, what+" in place dst==a")
				}
				if c.inputs == 2 && !c.fused {
					in := newGuardedOf[T](n, off)
					copy(in.s(), b.s())
					c.run(in.s(), a.s(), in.s())
					c.check(t, in.s(), a.s(), b.s(), what+" in place dst==b")
					in.check(t, what+" in place dst==b")
				}
			}
		}
	})
}

// TestArithOffsets runs every elementwise function with dst at each offset
// from a 64-byte boundary (the AVX-512 kernels compute the elements before
// it with one masked vector: asm/gen/arith's maskedHead), inputs at the same
// and at other offsets, at lengths shorter than, equal to and longer than
// that head, with canaries around every slice.
func TestArithOffsets(t *testing.T)    { testArithOffsets[float32](t) }
func TestArithOffsetsF64(t *testing.T) { testArithOffsets[float64](t) }

func testArithOffsets[T float](t *testing.T) {
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(8, uint64(l)))
		for _, c := range arithCasesOf[T]() {
			for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33, 100, 1000} {
				for off := 0; off <= 16; off++ {
					for _, inOff := range []int{off, (off + 5) % 17} {
						a, b := newGuardedOf[T](n, inOff), newGuardedOf[T](n, 16-inOff)
						fill(r, a.s(), 100, 7)
						fill(r, b.s(), 100, 5)
						dst := newGuardedOf[T](n, off)
						what := fmt.Sprintf("%s n=%d dst offset %d, inputs %d", c.name, n, off, inOff)
						c.run(dst.s(), a.s(), b.s())
						c.check(t, dst.s(), a.s(), b.s(), what)
						dst.check(t, what)
						a.check(t, what+" (input a)")
						b.check(t, what+" (input b)")
					}
				}
			}
		}
	})
}

// TestArithStreaming covers the non-temporal path that long destinations take
// (asm/gen/arith: streamMin = 1<<20 elements), with every misalignment of dst
// that its aligning head must handle.
func TestArithStreaming(t *testing.T)    { testArithStreaming[float32](t) }
func TestArithStreamingF64(t *testing.T) { testArithStreaming[float64](t) }

func testArithStreaming[T float](t *testing.T) {
	if testing.Short() || raceEnabled {
		// Under -race its 10^8 checked elements take minutes, and the
		// kernels share no memory between calls: the plain runs cover it.
		t.Skip("long slices: not in -short or -race runs")
	}
	const n = 1<<20 + 37
	r := rand.New(rand.NewPCG(7, 7))
	a, b := newGuardedOf[T](n, 1), newGuardedOf[T](n, 2)
	fill(r, a.s(), 100, 101)
	fill(r, b.s(), 100, 103)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range arithCasesOf[T]() {
			for _, off := range []int{0, 3, 5, 15} {
				dst := newGuardedOf[T](n, off)
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
func TestArithSpecialPairs(t *testing.T)    { testArithSpecialPairs[float32](t) }
func TestArithSpecialPairsF64(t *testing.T) { testArithSpecialPairs[float64](t) }

func testArithSpecialPairs[T float](t *testing.T) {
	var a, b []T
	for _, x := range specialsOf[T]() {
		for _, y := range specialsOf[T]() {
			a, b = append(a, x), append(b, y)
		}
	}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		dst := make([]T, len(a))
		for _, c := range arithCasesOf[T]() {
			c.run(dst, a, b)
			c.check(t, dst, a, b, c.name+" specials")
		}
	})
}

// TestArithLevelsAgree checks that every level gives bit-identical results
// (Axpy excepted: see its doc).
func TestArithLevelsAgree(t *testing.T)    { testArithLevelsAgree[float32](t) }
func TestArithLevelsAgreeF64(t *testing.T) { testArithLevelsAgree[float64](t) }

func testArithLevelsAgree[T float](t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	n := 1031
	a, b := make([]T, n), make([]T, n)
	fill(r, a, 1e3, 11)
	fill(r, b, 1e-3, 13)
	want := map[string][]T{}
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range arithCasesOf[T]() {
			if c.fused {
				continue
			}
			got := make([]T, n)
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
func TestAxpySelf(t *testing.T)    { testAxpySelf[float32](t) }
func TestAxpySelfF64(t *testing.T) { testAxpySelf[float64](t) }

func testAxpySelf[T float](t *testing.T) {
	axpy := either[func(y []T, alpha T, x []T)](Axpy, AxpyF64)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(3, 3))
		for _, n := range testLengths {
			y := newGuardedOf[T](n, n%4)
			fill(r, y.s(), 10, 0)
			orig := append([]T(nil), y.s()...)
			axpy(y.s(), T(alphaS), y.s())
			for i, v := range y.s() {
				want := T(float64(orig[i]) * (1 + float64(alphaS)))
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

func TestArithPanicsF64(t *testing.T) {
	a, b := make([]float64, 4), make([]float64, 4)
	short := make([]float64, 3)
	expectPanic(t, "simd.AddF64: length mismatch: len(dst)=3 len(a)=4 len(b)=4", func() { AddF64(short, a, b) })
	expectPanic(t, "simd.MulF64: length mismatch: len(dst)=4 len(a)=4 len(b)=3", func() { MulF64(a, b, short) })
	expectPanic(t, "simd.ScaleF64: length mismatch: len(dst)=4 len(a)=3", func() { ScaleF64(a, short, 2) })
	expectPanic(t, "simd.AxpyF64: length mismatch: len(y)=3 len(x)=4", func() { AxpyF64(short, 2, a) })
	expectPanic(t, "simd.SqrtF64: length mismatch: len(dst)=4 len(x)=3", func() { SqrtF64(a, short) })
	expectPanic(t, "simd.ClampF64: need lo <= hi, got lo=2 hi=1", func() { ClampF64(a, b, 2, 1) })
	expectPanic(t, "simd.ClampF64: need lo <= hi, got lo=0.1 hi=NaN", func() { ClampF64(a, b, 0.1, math.NaN()) })
	buf := make([]float64, 8)
	expectPanic(t, "simd.AddF64: dst partially overlaps an input", func() { AddF64(buf[1:5], buf[0:4], b) })
	expectPanic(t, "simd.NegF64: dst and x partially overlap", func() { NegF64(buf[0:4], buf[3:7]) })
	// Exact aliasing and adjacent slices are fine.
	AddF64(buf[0:4], buf[0:4], buf[4:8])
	NegF64(buf[0:4], buf[0:4])
}

func TestArithNoAlloc(t *testing.T)    { testArithNoAlloc[float32](t) }
func TestArithNoAllocF64(t *testing.T) { testArithNoAlloc[float64](t) }

func testArithNoAlloc[T float](t *testing.T) {
	a, b, d := make([]T, 1000), make([]T, 1000), make([]T, 1000)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, c := range arithCasesOf[T]() {
			if n := testing.AllocsPerRun(20, func() { c.run(d, a, b) }); n != 0 {
				t.Errorf("%s: %v allocations per call", c.name, n)
			}
		}
	})
}

// TestArithTablesComplete checks that no level left a kernel unset.
func TestArithTablesComplete(t *testing.T) {
	checkArithTable(t, &arith)
	checkArithTable(t, &arithF64)
}

func checkArithTable[T float](t *testing.T, tab *table[arithKernels[T]]) {
	for l := range dispatch.NumLevels {
		k := tab.at(dispatch.Level(l))
		if k == nil {
			continue
		}
		if k.add == nil || k.sub == nil || k.mul == nil || k.div == nil || k.maximum == nil ||
			k.minimum == nil || k.addScalar == nil || k.scale == nil || k.axpy == nil || k.abs == nil ||
			k.neg == nil || k.sqrt == nil || k.relu == nil || k.clamp == nil {
			t.Errorf("level %v: %T table has a nil kernel: %+v", dispatch.Level(l), *k, *k)
		}
	}
}

// FuzzAdd compares every level with the generic kernel on arbitrary input
// bytes at arbitrary offsets; FuzzAddF64 the same for AddF64.
func FuzzAdd(f *testing.F)    { fuzzAdd(f, Add) }
func FuzzAddF64(f *testing.F) { fuzzAdd(f, AddF64) }

func fuzzAdd[T float](f *testing.F, add func(dst, a, b []T)) {
	f.Add([]byte("0123456789abcdef0123456789abcdef0123"), uint8(1))
	f.Add(make([]byte, 300), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, off uint8) {
		x := floatsOf[T](data)
		o := int(off) % 4
		if o > len(x) {
			o = len(x)
		}
		a := x[o:]
		b := make([]T, len(a))
		for i := range b {
			b[i] = x[len(x)-1-i]
		}
		want := make([]T, len(a))
		addGeneric(want, a, b)
		forEachLevel(t, func(t *testing.T, l dispatch.Level) {
			got := make([]T, len(a))
			add(got, a, b)
			for i := range got {
				if !sameFloat(got[i], want[i]) {
					t.Fatalf("[%d] = %v, generic %v", i, got[i], want[i])
				}
			}
		})
	})
}

func floatsFromBytes(data []byte) []float32 { return floatsOf[float32](data) }

// floatsOf reads little-endian Ts from data (a trailing partial one is dropped).
func floatsOf[T float](data []byte) []T {
	size := int(unsafe.Sizeof(T(0)))
	x := make([]T, len(data)/size)
	for i := range x {
		var u uint64
		for k := size - 1; k >= 0; k-- {
			u = u<<8 | uint64(data[size*i+k])
		}
		x[i] = fromBits[T](u)
	}
	return x
}
