package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// broadcastPair returns two shapes that broadcast together: a random shape
// with some dimensions set to 1 in one or the other and leading ones dropped.
func broadcastPair(r *rand.Rand) (a, b []int) {
	out := randShape(r, 4, 6)
	a, b = append([]int(nil), out...), append([]int(nil), out...)
	for i := range out {
		switch r.IntN(4) {
		case 0:
			a[i] = 1
		case 1:
			b[i] = 1
		}
	}
	if len(a) > 0 && r.IntN(3) == 0 {
		a = a[r.IntN(len(a)+1):]
	}
	if len(b) > 0 && r.IntN(3) == 0 {
		b = b[r.IntN(len(b)+1):]
	}
	return a, b
}

// bcastAt reads x at the broadcast index idx of a result of rank n.
func bcastAt(x *Tensor, idx []int) float64 {
	j := make([]int, x.Dims())
	off := len(idx) - x.Dims()
	for i := range j {
		if x.Dim(i) != 1 {
			j[i] = idx[off+i]
		}
	}
	return float64(x.At(j...))
}

func TestBinaryBroadcast(t *testing.T) {
	ops := []struct {
		name string
		f    func(a, b *Tensor) *Tensor
		into func(dst, a, b *Tensor) *Tensor
		ref  func(a, b float64) float64
	}{
		{"Add", Add, AddInto, func(a, b float64) float64 { return a + b }},
		{"Sub", Sub, SubInto, func(a, b float64) float64 { return a - b }},
		{"Mul", Mul, MulInto, func(a, b float64) float64 { return a * b }},
		{"Div", Div, DivInto, func(a, b float64) float64 { return a / b }},
		{"Maximum", Maximum, MaximumInto, math.Max},
		{"Minimum", Minimum, MinimumInto, math.Min},
		{"Pow", Pow, PowInto, func(a, b float64) float64 { return math.Pow(a, b) }},
		{"Greater", Greater, GreaterInto, func(a, b float64) float64 { return b2f(a > b) }},
		{"GreaterEqual", GreaterEqual, GreaterEqualInto, func(a, b float64) float64 { return b2f(a >= b) }},
		{"Less", Less, LessInto, func(a, b float64) float64 { return b2f(a < b) }},
		{"LessEqual", LessEqual, LessEqualInto, func(a, b float64) float64 { return b2f(a <= b) }},
		{"Equal", Equal, EqualInto, func(a, b float64) float64 { return b2f(a == b) }},
		{"NotEqual", NotEqual, NotEqualInto, func(a, b float64) float64 { return b2f(a != b) }},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, op := range ops {
		for trial := 0; trial < 60; trial++ {
			sa, sb := broadcastPair(r)
			a := randLayout(r, layouts[r.IntN(len(layouts))], sa...)
			b := randLayout(r, layouts[r.IntN(len(layouts))], sb...)
			if op.name == "Equal" || op.name == "NotEqual" {
				// Make equal elements likely.
				b = Clamp(b, -0.5, 0.5)
				a = Clamp(a, -0.5, 0.5)
			}
			what := fmt.Sprintf("%s %v %v", op.name, sa, sb)
			got := op.f(a, b)
			shape := got.Shape()
			want := func(idx []int) float64 {
				// float32 rounding of the exact result (the kernels are exact).
				return float64(float32(op.ref(bcastAt(a, idx), bcastAt(b, idx))))
			}
			tol := exact
			if op.name == "Pow" {
				tol = func(idx []int) (float64, float64) { return 0x1p-23, math.Abs(want(idx)) }
			}
			checkAgainst(t, what, got, shape, want, tol)
			dst := New(shape...)
			if r := op.into(dst, a, b); r != dst {
				t.Fatalf("%s: Into did not return dst", what)
			}
			checkAgainst(t, what+" Into", dst, shape, want, tol)
		}
	}
}

func b2f(c bool) float64 {
	if c {
		return 1
	}
	return 0
}

func TestUnary(t *testing.T) {
	ops := []struct {
		name string
		f    func(x *Tensor) *Tensor
		ref  func(x float64) float64
		ulp  float64
	}{
		{"Exp", Exp, math.Exp, 2},
		{"Log", func(x *Tensor) *Tensor { return Log(Abs(x)) }, func(x float64) float64 { return math.Log(math.Abs(x)) }, 2},
		{"Tanh", Tanh, math.Tanh, 3},
		{"Sigmoid", Sigmoid, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, 3},
		{"Abs", Abs, math.Abs, 0},
		{"Neg", Neg, func(x float64) float64 { return -x }, 0},
		{"ReLU", ReLU, func(x float64) float64 { return math.Max(x, 0) }, 0},
		{"Sqrt", func(x *Tensor) *Tensor { return Sqrt(Abs(x)) }, func(x float64) float64 { return math.Sqrt(math.Abs(x)) }, 0},
		{"Scale", func(x *Tensor) *Tensor { return Scale(x, 3) }, func(x float64) float64 { return 3 * x }, 0},
		{"AddScalar", func(x *Tensor) *Tensor { return AddScalar(x, -0.5) }, func(x float64) float64 { return x - 0.5 }, 0},
		{"Clamp", func(x *Tensor) *Tensor { return Clamp(x, -0.25, 0.5) }, func(x float64) float64 { return math.Min(math.Max(x, -0.25), 0.5) }, 0},
		{"LeakyReLU", func(x *Tensor) *Tensor { return LeakyReLU(x, 0.125) }, func(x float64) float64 {
			if x < 0 {
				return 0.125 * x
			}
			return x
		}, 0},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, op := range ops {
		for trial := 0; trial < 30; trial++ {
			shape := randShape(r, 4, 7)
			x := randLayout(r, layouts[r.IntN(len(layouts))], shape...)
			got := op.f(x)
			checkAgainst(t, fmt.Sprintf("%s %v", op.name, shape), got, shape,
				func(idx []int) float64 { return float64(float32(op.ref(float64(x.At(idx...))))) },
				func(idx []int) (float64, float64) {
					return op.ulp * 0x1p-23, math.Abs(op.ref(float64(x.At(idx...))))
				})
		}
	}
}

// TestIntoAliasing writes results over an operand: the same layout
// (in place), a transposed view of the operand itself, and a shifted
// overlapping view, all of which must give the result of a fresh dst.
func TestIntoAliasing(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	// In place.
	a, b := RandN(r, 5, 7), RandN(r, 7)
	want := Add(a, b)
	AddInto(a, a, b)
	assertEqual(t, "AddInto in place", a, want)
	// dst is the transpose of the operand.
	sq := RandN(r, 6, 6)
	want = Add(sq.T(), Ones(6))
	AddInto(sq, sq.T(), Ones(6))
	assertEqual(t, "AddInto transposed self", sq, want)
	// dst overlaps the operand shifted by one element.
	buf := RandN(r, 50)
	x := buf.Slice(0, 0, 40, 1)
	d := buf.Slice(0, 1, 41, 1)
	want = Exp(x)
	ExpInto(d, x)
	assertEqual(t, "ExpInto shifted", d, want)
}

func assertEqual(t *testing.T, what string, got, want *Tensor) {
	t.Helper()
	if !slices.Equal(got.Shape(), want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := got.Data(), want.Data()
	for i := range w {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) && !(g[i] != g[i] && w[i] != w[i]) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g[i], w[i])
		}
	}
}

func TestBroadcastPanics(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"Add", func() { Add(New(3, 4), New(5)) }, "tensor: Add: shapes [3 4] and [5] are not broadcastable"},
		{"AddInto", func() { AddInto(New(3), New(3, 4), New(4)) }, "tensor: AddInto: dst shape [3] and operand shapes [3 4] and [4]: operands do not broadcast to dst"},
		{"AddInto broadcast dst", func() { AddInto(New(1, 4).BroadcastTo(3, 4), New(3, 4), New(4)) }, "tensor: AddInto: dst of shape [3 4] has a broadcast (stride 0) dimension 0"},
	} {
		func() {
			defer func() {
				if got := recover(); got != c.msg {
					t.Errorf("%s: panic %q, want %q", c.name, got, c.msg)
				}
			}()
			c.f()
		}()
	}
}

func TestIntoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	a, b, dst := RandN(r, 64, 128), RandN(r, 128), New(64, 128)
	at := RandN(r, 128, 64).T()
	big, bigB, bigDst := RandN(r, 512, 1024), RandN(r, 1024), New(512, 1024) // parallel path
	for name, f := range map[string]func(){
		"AddInto":            func() { AddInto(dst, a, b) },
		"AddInto transposed": func() { AddInto(dst, at, b) },
		"ExpInto":            func() { ExpInto(dst, at) },
		"ClampInto":          func() { ClampInto(dst, a, -1, 1) },
		"AddInto parallel":   func() { AddInto(bigDst, big, bigB) },
	} {
		f()
		noAllocs(t, name, f)
	}
}

// TestLessPanicNamesShapesInOrder: Less is computed as Greater with the
// operands swapped, but its message names them as the caller gave them.
func TestLessPanicNamesShapesInOrder(t *testing.T) {
	defer func() {
		if got, want := recover(), "tensor: Less: shapes [2] and [3] are not broadcastable"; got != want {
			t.Errorf("panic %q, want %q", got, want)
		}
	}()
	Less(New(2), New(3))
}
