package main

import . "github.com/lanesgo/lanes/asm/gen/internal/a64"

// arith writes the elementwise kernels of simd/arith.go.
func arith(f *File) {
	binary := func(name, doc string, op func(b *B, x, y Val) Val) {
		elementwise(f, ew{
			name: name + "NEON", sig: "func(dst, a, b []float32)", dst: "dst", ins: []string{"a", "b"},
			doc:  []string{name + "NEON sets dst[i] = " + doc + ".", requires},
			body: func(b *B, in []Val, _ *Val) *Val { v := op(b, in[0], in[1]); return &v },
		})
	}
	unary := func(name, doc string, op func(b *B, x Val) Val) {
		elementwise(f, ew{
			name: name + "NEON", sig: "func(dst, x []float32)", dst: "dst", ins: []string{"x"},
			doc:  []string{name + "NEON sets dst[i] = " + doc + ".", requires},
			body: func(b *B, in []Val, _ *Val) *Val { v := op(b, in[0]); return &v },
		})
	}
	withScalar := func(name, doc string, op func(b *B, x, s Val) Val) {
		elementwise(f, ew{
			name: name + "NEON", sig: "func(dst, a []float32, s float32)", dst: "dst", ins: []string{"a"},
			doc: []string{name + "NEON sets dst[i] = " + doc + ".", requires},
			body: func(b *B, in []Val, _ *Val) *Val {
				v := op(b, in[0], scalarPin(b, "s"))
				return &v
			},
		})
	}
	op2 := func(enc func(d, n, m V) Inst) func(b *B, x, y Val) Val {
		return func(b *B, x, y Val) Val { return b.Op2(enc, x, y) }
	}
	binary("add", "a[i] + b[i]", op2(FADD))
	binary("sub", "a[i] - b[i]", op2(FSUB))
	binary("mul", "a[i] * b[i]", op2(FMUL))
	binary("div", "a[i] / b[i]", op2(FDIV))
	binary("maximum", "maximum32(a[i], b[i])", maximum)
	binary("minimum", "minimum32(a[i], b[i])", minimum)
	withScalar("addScalar", "a[i] + s", op2(FADD))
	withScalar("scale", "a[i] * s", op2(FMUL))
	elementwise(f, ew{
		name: "axpyNEON", sig: "func(y []float32, alpha float32, x []float32)", dst: "y", ins: []string{"y", "x"},
		doc: []string{"axpyNEON sets y[i] += alpha * x[i], fused.", requires},
		body: func(b *B, in []Val, _ *Val) *Val {
			v := b.Tied2(FMLA, in[0], in[1], scalarPin(b, "alpha"))
			return &v
		},
	})
	unary("abs", "|x[i]| (sign bit cleared)", func(b *B, x Val) Val { return b.Op1(FABS, x) })
	unary("neg", "-x[i] (sign bit flipped)", func(b *B, x Val) Val { return b.Op1(FNEG, x) })
	unary("sqrt", "sqrt(x[i]), correctly rounded", func(b *B, x Val) Val { return b.Op1(FSQRT, x) })
	// FMAX(x, +0) is maximum32(x, 0) bit for bit: +0 for ±0, NaN for NaN.
	unary("relu", "maximum32(x[i], 0)", func(b *B, x Val) Val { return b.Op2(FMAX, x, b.Bits(0)) })
	elementwise(f, ew{
		name: "clampNEON", sig: "func(dst, x []float32, lo, hi float32)", dst: "dst", ins: []string{"x"},
		doc: []string{"clampNEON sets dst[i] = minimum32(maximum32(x[i], lo), hi).", requires},
		body: func(b *B, in []Val, _ *Val) *Val {
			lo, hi := scalarPin(b, "lo"), scalarPin(b, "hi")
			v := minimum(b, maximum(b, in[0], lo), hi)
			return &v
		},
	})
}

// maximum is maximum32: FMAX propagates NaN and orders the rest; where a ==
// b it returns b (FMAX would return +0 for +0, -0).
func maximum(b *B, x, y Val) Val {
	return b.Sel(b.Op2(FCMEQ, x, y), y, b.Op2(FMAX, x, y))
}

func minimum(b *B, x, y Val) Val {
	return b.Sel(b.Op2(FCMEQ, x, y), y, b.Op2(FMIN, x, y))
}
