package main

import (
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/elem"
	"github.com/lanesgo/lanes/internal/approx"
)

// elemfn writes the float32 kernels of Sin, Cos, Tan, Log1p and Expm1
// (simd/elemfn.go): each widens its vector to two of float64, runs the
// float64 algorithm of simd/elemfn_generic.go on them (a vm at float64
// beside v) and rounds once back to float32. The trigonometric kernels
// store x itself where |x| > TrigMax (the Go side computes those from the
// input in float64).
func elemfn(v *vm) {
	d := &vm{s: v.s.At(elem.F64)}
	const ref = " in elemfn_generic.go"
	unaryRef(v, "sin", "sin(x[i]) for |x[i]| <= TrigMax, else x[i]", "sin64r"+ref,
		func(x VecVirtual) VecVirtual { return v.trig(d, x, 0) })
	unaryRef(v, "cos", "cos(x[i]) for |x[i]| <= TrigMax, else x[i]", "cos64r"+ref,
		func(x VecVirtual) VecVirtual { return v.trig(d, x, 1) })
	unaryRef(v, "tan", "tan(x[i]) for |x[i]| <= TrigMax, else x[i]", "tan64r"+ref,
		func(x VecVirtual) VecVirtual { return v.trig(d, x, 2) })
	unaryRef(v, "log1p", "log(1+x[i])", "log1p32"+ref, func(x VecVirtual) VecVirtual {
		r := v.wide(d, x, func(w VecVirtual) VecVirtual { return d.log64(d.add(w, cd(1))) })
		return v.sel(v.cmp(cmpLT, v.abs(x), cf(approx.Expm1Tiny)), x, r)
	})
	unaryRef(v, "expm1", "e^x[i]-1", "expm132"+ref, func(x VecVirtual) VecVirtual {
		r := v.wide(d, x, func(w VecVirtual) VecVirtual {
			return d.expm1x64(d.clampMem(w, cd(approx.ELU64Min), cd(approx.Expm1Max)))
		})
		return v.sel(v.cmp(cmpLT, v.abs(x), cf(approx.Expm1Tiny)), x, r)
	})
}

func (v *vm) abs(x VecVirtual) VecVirtual { return v.and(x, c(1<<31-1)) }

// wide runs f on the float64 widening of each half of x and returns the
// results rounded to float32 in one vector.
func (v *vm) wide(d *vm, x VecVirtual, f func(w VecVirtual) VecVirtual) VecVirtual {
	lo, hi := v.widen(x)
	r := v.reg()
	v.narrow(f(lo), v.low(r))
	h := v.half()
	v.narrow(f(hi), h)
	v.insertHigh(h, r)
	return r
}

// trig is sin (fn 0), cos (1) or tan (2) of x: x = n·π/2 + r in float64
// (Cody-Waite, two-part π/2), the quadrant's bits from n (cos: n + 1) by
// exact float64 arithmetic, sin(r) and cos(r) by their Taylor polynomials;
// x itself below TrigTiny (sin, tan: keeps -0) and above TrigMax (left to
// the caller).
func (v *vm) trig(d *vm, x VecVirtual, fn int) VecVirtual {
	r := v.wide(d, x, func(w VecVirtual) VecVirtual {
		n := d.round(d.mul(w, cd(approx.TwoOverPi)))
		red := d.fnma(n, cd(approx.PiO2Hi), w)
		red = d.fnma(n, cd(approx.PiO2Lo), red)
		if fn == 1 {
			n = d.add(n, cd(1))
		}
		// odd = n - 2⌊n/2⌋, second = ⌊n/2⌋ - 2⌊n/4⌋: bits 0 and 1 of n
		// (exact for |n| < 2^52; NaN for NaN and ±Inf inputs, whose red is
		// NaN whatever the selection).
		h := d.roundMode(d.mul(n, cd(0.5)), 1)
		q := d.roundMode(d.mul(n, cd(0.25)), 1)
		odd := d.cmp(cmpEQ, d.sub(n, d.add(h, h)), cd(1))
		second := d.cmp(cmpEQ, d.sub(h, d.add(q, q)), cd(1))
		z := d.mul(red, red)
		s := d.fma(d.mul(red, z), d.poly64(z, approx.SinPoly[:]), red)
		c := d.fma(z, d.poly64(z, approx.CosPoly[:]), cd(1))
		if fn == 2 {
			num, den := d.sel(odd, c, s), d.sel(odd, s, c)
			t := d.div(num, den)
			return d.sel(odd, d.neg64(t), t)
		}
		y := d.sel(odd, c, s)
		return d.sel(second, d.neg64(y), y)
	})
	if fn != 1 {
		r = v.sel(v.cmp(cmpLT, v.abs(x), cf(approx.TrigTiny)), x, r)
	}
	return v.sel(v.cmp(cmpGT, v.abs(x), cf(approx.TrigMax)), x, r)
}
