package main

import (
	"strconv"

	. "github.com/lanesgo/lanes/asm/gen/internal/a64"
)

// arith writes the elementwise kernels of simd/arith.go, for each element
// width (addNEON for Add, addF64NEON for AddF64).
func arith(f *File) {
	for _, w := range widths {
		arithWidth(f, w)
	}
}

func arithWidth(f *File, w Float) {
	t, bits := w.Name(), strconv.Itoa(w.Bits())
	kernel := func(name, sig string, dst string, ins []string, doc string, body func(b *B, in []Val) Val) {
		name += w.Suffix() + "NEON"
		elementwise(f, ew{
			w: w, name: name, sig: sig, dst: dst, ins: ins,
			doc:  []string{name + " sets " + doc + ".", requires},
			body: func(b *B, in []Val, _ *Val) *Val { v := body(b, in); return &v },
		})
	}
	binary := func(name, doc string, op func(b *B, x, y Val) Val) {
		kernel(name, "func(dst, a, b []"+t+")", "dst", []string{"a", "b"}, "dst[i] = "+doc,
			func(b *B, in []Val) Val { return op(b, in[0], in[1]) })
	}
	unary := func(name, doc string, op func(b *B, x Val) Val) {
		kernel(name, "func(dst, x []"+t+")", "dst", []string{"x"}, "dst[i] = "+doc,
			func(b *B, in []Val) Val { return op(b, in[0]) })
	}
	withScalar := func(name, doc string, op func(b *B, x, s Val) Val) {
		kernel(name, "func(dst, a []"+t+", s "+t+")", "dst", []string{"a"}, "dst[i] = "+doc,
			func(b *B, in []Val) Val { return op(b, in[0], scalarPin(b, w, "s")) })
	}
	op2 := func(enc func(d, n, m V) Inst) func(b *B, x, y Val) Val {
		return func(b *B, x, y Val) Val { return b.Op2(enc, x, y) }
	}
	maximum, minimum := extremes(w)
	binary("add", "a[i] + b[i]", op2(w.FADD))
	binary("sub", "a[i] - b[i]", op2(w.FSUB))
	binary("mul", "a[i] * b[i]", op2(w.FMUL))
	binary("div", "a[i] / b[i]", op2(w.FDIV))
	binary("maximum", "maximum"+bits+"(a[i], b[i])", maximum)
	binary("minimum", "minimum"+bits+"(a[i], b[i])", minimum)
	withScalar("addScalar", "a[i] + s", op2(w.FADD))
	withScalar("scale", "a[i] * s", op2(w.FMUL))
	kernel("axpy", "func(y []"+t+", alpha "+t+", x []"+t+")", "y", []string{"y", "x"}, "y[i] += alpha * x[i], fused",
		func(b *B, in []Val) Val { return b.Tied2(w.FMLA, in[0], in[1], scalarPin(b, w, "alpha")) })
	unary("abs", "|x[i]| (sign bit cleared)", func(b *B, x Val) Val { return b.Op1(w.FABS, x) })
	unary("neg", "-x[i] (sign bit flipped)", func(b *B, x Val) Val { return b.Op1(w.FNEG, x) })
	unary("sqrt", "sqrt(x[i]), correctly rounded", func(b *B, x Val) Val { return b.Op1(w.FSQRT, x) })
	// FMAX(x, +0) is maximumN(x, 0) bit for bit: +0 for ±0, NaN for NaN.
	unary("relu", "maximum"+bits+"(x[i], 0)", func(b *B, x Val) Val { return b.Op2(w.FMAX, x, b.Bits(0)) })
	kernel("clamp", "func(dst, x []"+t+", lo, hi "+t+")", "dst", []string{"x"},
		"dst[i] = minimum"+bits+"(maximum"+bits+"(x[i], lo), hi)",
		func(b *B, in []Val) Val {
			lo, hi := scalarPin(b, w, "lo"), scalarPin(b, w, "hi")
			return minimum(b, maximum(b, in[0], lo), hi)
		})
}

// extremes returns maximumN and minimumN for width w: FMAX propagates NaN
// and orders the rest; where a == b they return b (FMAX would return +0 for
// +0, -0).
func extremes(w Float) (maximum, minimum func(b *B, x, y Val) Val) {
	pick := func(op func(d, n, m V) Inst) func(b *B, x, y Val) Val {
		return func(b *B, x, y Val) Val { return b.Sel(b.Op2(w.FCMEQ, x, y), y, b.Op2(op, x, y)) }
	}
	return pick(w.FMAX), pick(w.FMIN)
}
