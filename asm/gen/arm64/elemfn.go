package main

import (
	. "github.com/lanesgo/lanes/asm/gen/internal/a64"
	"github.com/lanesgo/lanes/internal/approx"
)

// elemfn writes the NEON kernels of Sin, Cos, Tan, Log1p and Expm1
// (simd/elemfn.go), as asm/gen/transcend's elemfn: the float64 algorithm
// of simd/elemfn_generic.go on each widened half (FCVTL, FCVTL2), one
// rounding back (FCVTN, FCVTN2); the trigonometric kernels store x itself
// where |x| > TrigMax.
func elemfn(f *File) {
	unary := func(name, doc, ref string, body func(v, d *nv, x Val) Val) {
		elementwise(f, ew{
			name: name + "NEON", sig: "func(dst, x []float32)", dst: "dst", ins: []string{"x"},
			doc: []string{name + "NEON sets dst[i] = " + doc + " (see " + ref + " in elemfn_generic.go).", requires},
			body: func(b *B, in []Val, _ *Val) *Val {
				r := body(&nv{b: b}, &nv{b: b, w: F64}, in[0])
				return &r
			},
		})
	}
	for i, name := range []string{"sin", "cos", "tan"} {
		unary(name, name+"(x[i]) for |x[i]| <= TrigMax, else x[i]", name+"64r", func(v, d *nv, x Val) Val { return v.trig(d, x, i) })
	}
	tiny := func(v *nv, x, r Val) Val { return v.sel(v.lt(v.abs(x), v.f(approx.Expm1Tiny)), x, r) }
	unary("log1p", "log(1+x[i])", "log1p32", func(v, d *nv, x Val) Val {
		return tiny(v, x, v.wide(x, func(w Val) Val { return d.log64(d.add(w, d.d(1))) }))
	})
	unary("expm1", "e^x[i]-1", "expm132", func(v, d *nv, x Val) Val {
		return tiny(v, x, v.wide(x, func(w Val) Val {
			return d.expm1x64(d.min(d.max(w, d.d(approx.ELU64Min)), d.d(approx.Expm1Max)))
		}))
	})
}

// wide runs f on the float64 widening of each half of x and returns the
// results rounded to float32 in one vector.
func (v *nv) wide(x Val, f func(w Val) Val) Val {
	b := v.b
	lo := b.Op1(FCVTN, f(b.Op1(FCVTL, x)))
	return b.Tied1(FCVTN2, lo, f(b.Op1(FCVTL2, x)))
}

// trig is sin (fn 0), cos (1) or tan (2), as asm/gen/transcend's trig.
func (v *nv) trig(d *nv, x Val, fn int) Val {
	r := v.wide(x, func(w Val) Val {
		n := d.b.Op1(d.w.FRINTN, d.mul(w, d.d(approx.TwoOverPi)))
		red := d.fnma(n, d.d(approx.PiO2Hi), w)
		red = d.fnma(n, d.d(approx.PiO2Lo), red)
		if fn == 1 {
			n = d.add(n, d.d(1))
		}
		h := d.b.Op1(d.w.FRINTM, d.mul(n, d.d(0.5)))
		q := d.b.Op1(d.w.FRINTM, d.mul(n, d.d(0.25)))
		odd := d.eq(d.sub(n, d.add(h, h)), d.d(1))
		second := d.eq(d.sub(h, d.add(q, q)), d.d(1))
		z := d.mul(red, red)
		s := d.fma(d.mul(red, z), d.poly64(z, approx.SinPoly[:]), red)
		c := d.fma(z, d.poly64(z, approx.CosPoly[:]), d.d(1))
		if fn == 2 {
			t := d.div(d.sel(odd, c, s), d.sel(odd, s, c))
			return d.sel(odd, d.neg(t), t)
		}
		y := d.sel(odd, c, s)
		return d.sel(second, d.neg(y), y)
	})
	if fn != 1 {
		r = v.sel(v.lt(v.abs(x), v.f(approx.TrigTiny)), x, r)
	}
	return v.sel(v.gt(v.abs(x), v.f(approx.TrigMax)), x, r)
}
