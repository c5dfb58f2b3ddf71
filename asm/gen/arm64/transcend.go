package main

import (
	"math"

	. "github.com/lanesgo/lanes/asm/gen/internal/a64"
	"github.com/lanesgo/lanes/internal/approx"
)

// transcend writes the kernels of simd/transcend.go. Each runs the
// algorithm of simd/transcend_generic.go on four lanes, with the constants
// of internal/approx and the operations in the same order as the amd64
// generator (asm/gen/transcend) at its AVX2 level: 2^n is built from
// integer bits in two halves so denormal results round once, and Log
// prescales denormal inputs.
func transcend(f *File) {
	unary := func(name, doc string, body func(v *nv, x Val) Val) {
		elementwise(f, ew{
			name: name + "NEON", sig: "func(dst, x []float32)", dst: "dst", ins: []string{"x"},
			doc: []string{name + "NEON sets dst[i] = " + doc + " (see " + name + "32 in transcend_generic.go).", requires},
			body: func(b *B, in []Val, _ *Val) *Val {
				r := body(&nv{b: b}, in[0])
				return &r
			},
		})
	}
	withAlpha := func(name, doc string, body func(v *nv, x, alpha Val) Val) {
		elementwise(f, ew{
			name: name + "NEON", sig: "func(dst, x []float32, alpha float32)", dst: "dst", ins: []string{"x"},
			doc: []string{name + "NEON sets dst[i] = " + doc + ".", requires},
			body: func(b *B, in []Val, _ *Val) *Val {
				r := body(&nv{b: b}, in[0], scalarPin(b, F32, "alpha"))
				return &r
			},
		})
	}
	unary("exp", "e^x[i]", (*nv).exp)
	unary("log", "log(x[i])", (*nv).log)
	unary("sigmoid", "1/(1+e^-x[i])", (*nv).sigmoid)
	unary("silu", "x[i]/(1+e^-x[i])", (*nv).silu)
	unary("tanh", "tanh(x[i])", (*nv).tanh)
	unary("softplus", "log(1+e^x[i])", (*nv).softplus)
	unary("erf", "erf(x[i])", (*nv).erf)
	unary("gelu", "x[i]·Φ(x[i])", (*nv).gelu)
	unary("geluTanh", "x[i]/(1+e^(-2√(2/π)(x[i]+0.044715x[i]³)))", (*nv).geluTanh)
	withAlpha("leakyReLU", "x[i] if x[i] > 0, else alpha·x[i]", (*nv).leakyReLU)
	withAlpha("elu", "x[i] if x[i] > 0, else alpha·(e^x[i]-1)", (*nv).elu)
	expSum(f, true)
	expSum(f, false)
	elemfn(f)
	// The float64 forms.
	unary64 := func(name, doc string, body func(v *nv, x Val) Val) {
		elementwise(f, ew{
			w: F64, name: name + "F64NEON", sig: "func(dst, x []float64)", dst: "dst", ins: []string{"x"},
			doc: []string{name + "F64NEON sets dst[i] = " + doc + " (see " + name + "64 in transcend_generic.go).", requires},
			body: func(b *B, in []Val, _ *Val) *Val {
				r := body(&nv{b: b, w: F64}, in[0])
				return &r
			},
		})
	}
	unary64("exp", "e^x[i]", (*nv).exp64)
	unary64("log", "log(x[i])", (*nv).log64)
	unary64("sigmoid", "1/(1+e^-x[i])", (*nv).sigmoid64)
	unary64("tanh", "tanh(x[i])", (*nv).tanh64)
	unary64("silu", "x[i]/(1+e^-x[i])", (*nv).silu64)
	unary64("softplus", "log(1+e^x[i])", (*nv).softplus64)
	unary64("erf", "erf(x[i])", (*nv).erf64)
	unary64("gelu", "x[i]·Φ(x[i])", (*nv).gelu64)
	unary64("geluTanh", "x[i]/(1+e^(-2√(2/π)(x[i]+0.044715x[i]³)))", (*nv).geluTanh64)
	withAlpha64 := func(name, doc string, body func(v *nv, x, alpha Val) Val) {
		elementwise(f, ew{
			w: F64, name: name + "F64NEON", sig: "func(dst, x []float64, alpha float64)", dst: "dst", ins: []string{"x"},
			doc: []string{name + "F64NEON sets dst[i] = " + doc + ".", requires},
			body: func(b *B, in []Val, _ *Val) *Val {
				r := body(&nv{b: b, w: F64}, in[0], scalarPin(b, F64, "alpha"))
				return &r
			},
		})
	}
	withAlpha64("leakyReLU", "x[i] if x[i] > 0, else alpha·x[i]", (*nv).leakyReLU)
	withAlpha64("elu", "x[i] if x[i] > 0, else alpha·(e^x[i]-1)", (*nv).elu64)
	expSum64(f, true)
	expSum64(f, false)
}

// expSum64 is expSum for float64: expSumF64NEON (store) or sumExpF64NEON,
// e^(x[i]-shift) by exp64Pair with x[i]-shift split exactly (TwoSum), summed
// in one pinned accumulator.
func expSum64(f *File, store bool) {
	name, sig := "expSumF64NEON", "func(dst, x []float64, shift float64) float64"
	doc := name + " sets dst[i] = e^(x[i]-shift) and returns Σ dst[i] (see expSumGeneric64)."
	dst := "dst"
	if !store {
		name, sig = "sumExpF64NEON", "func(x []float64, shift float64) float64"
		doc = name + " returns Σ e^(x[i]-shift) (see expSumGeneric64)."
		dst = "x"
	}
	var acc V
	elementwise(f, ew{
		w: F64, name: name, sig: sig, dst: dst, ins: []string{"x"}, doc: []string{doc, requires}, mask: true,
		body: func(b *B, in []Val, mask *Val) *Val {
			v := &nv{b: b, w: F64}
			negShift := v.neg(scalarPin(b, F64, "shift"))
			a := b.Pin(func(fn *Func, r V) { fn.I(EOR(r, r, r)) })
			acc = b.Reg(a)
			x := in[0]
			d := v.add(x, negShift)
			bb := v.sub(d, x)
			lo := v.add(v.sub(x, v.sub(d, bb)), v.sub(negShift, bb))
			e := v.and(v.exp64Pair(d, lo), *mask)
			b.Update(FADDD, a, e)
			if !store {
				return nil
			}
			return &e
		},
		end: func(fn *Func, _ *B) {
			fn.I(FADDPD(acc, acc))
			fn.Asm("FMOVD F%d, %s", acc, fn.Arg("ret"))
		},
	})
}

// expm1x64 is expm1x64 of transcend_generic.go (x in [0, 2·Tanh64Max]).
func (v *nv) expm1x64(x Val) Val {
	n := v.b.Op1(v.w.FRINTN, v.mul(x, v.d(approx.Log2E)))
	hi := v.fnma(n, v.d(approx.Ln2Hi64), x) // exact
	lo := v.mul(n, v.d(approx.Ln2Lo64))
	r := v.sub(hi, lo)
	q := v.mul(v.mul(r, r), v.poly64(r, approx.Expm1Poly64[:]))
	u := v.add(hi, v.sub(q, lo))
	t := v.scale64(v.d(1), n)
	return v.fma(t, u, v.sub(t, v.d(1)))
}

func (v *nv) sigmoid64(x Val) Val {
	e := v.exp64(v.neg(v.abs(x)))
	num := v.sel(v.lt(x, v.zero()), e, v.d(1))
	return v.quoSum(num, nil, e, 1)
}

// quoSum is quoSum of transcend_generic.go: num/(e+c) with the sum's exact
// error (TwoSum) and the FMA remainder correcting num·(1/d).
// lo, the numerator's low part, may be nil (0).
func (v *nv) quoSum(num Val, lo *Val, e Val, c float64) Val {
	d := v.add(e, v.d(c))
	bb := v.sub(d, e)
	err := v.add(v.sub(e, v.sub(d, bb)), v.sub(v.d(c), bb))
	r := v.div(v.d(1), d)
	t := v.mul(num, r)
	res := v.fnma(t, d, num)
	corr := v.fnma(t, err, res)
	if lo != nil {
		corr = v.add(corr, *lo)
	}
	return v.fma(corr, r, t)
}

func (v *nv) silu64(x Val) Val {
	xc := v.max(x, v.d(-800))
	pp, n := v.exp64Parts(v.neg(v.abs(xc)))
	e := v.scale64(pp, n)
	neg := v.lt(xc, v.zero())
	p := v.mul(xc, e)
	pe := v.fma(xc, e, v.neg(p))
	num := v.sel(neg, p, xc)
	lo := v.and(neg, pe)
	t := v.or(v.quoSum(num, &lo, e, 1), v.and(x, v.bits(1<<63)))
	t = v.sel(v.lt(x, v.d(-708)), v.scale64(v.mul(xc, pp), n), t)
	return v.sel(v.gt(x, v.d(40)), x, t)
}

func (v *nv) tanh64(x Val) Val {
	y := v.min(v.max(v.abs(x), v.zero()), v.d(approx.Tanh64Max))
	e := v.expm1x64(v.add(y, y))
	t := v.quoSum(e, nil, e, 2)
	return v.or(t, v.and(x, v.bits(1<<63)))
}

// exp64Pair is exp64Pair of transcend_generic.go: e^(d + c), c carried into
// the reduction, dropped where the clamp changed d or c is NaN.
func (v *nv) exp64Pair(d, c Val) Val {
	xc := v.min(v.max(d, v.d(approx.Exp64Min)), v.d(approx.Exp64Max))
	c = v.and(c, v.eq(xc, d))
	c = v.and(c, v.eq(c, c))
	return v.scale64(v.exp64PairParts(xc, c))
}

// exp64PairParts returns e^(d + c) as p·2^n before the scaling (d in
// [-1400, Exp64Max], c below d's ULP).
func (v *nv) exp64PairParts(d, c Val) (Val, Val) {
	n := v.b.Op1(v.w.FRINTN, v.mul(d, v.d(approx.Log2E)))
	hi := v.fnma(n, v.d(approx.Ln2Hi64), d) // exact
	lm := v.fnma(n, v.d(approx.Ln2Lo64), c)
	r := v.add(hi, lm)
	q := v.mul(v.mul(r, r), v.poly64(r, approx.Expm1Poly64[:]))
	s := v.add(hi, v.d(1))
	e := v.add(v.sub(v.d(1), s), hi) // 1 + hi = s + e exactly
	return v.add(s, v.add(v.add(e, lm), q)), n
}

// sign64 is the sign bit of float64 lanes.
func (v *nv) sign64(x Val) Val { return v.and(x, v.bits(1<<63)) }

func (v *nv) softplus64(x Val) Val {
	e := v.exp64(v.neg(v.abs(x)))
	u := v.add(e, v.d(1))
	c := v.sub(e, v.sub(u, v.d(1))) // exact
	l := v.add(v.log64(u), v.div(c, u))
	return v.add(v.max(x, v.zero()), l)
}

// erfRatio64 is erfRatio64 of transcend_generic.go on every lane: both
// rational functions, the quotient of the selected pair; yl may be nil (0).
func (v *nv) erfRatio64(y Val, yl *Val) Val {
	z := v.mul(y, y)
	s := v.sub(y, v.d(1))
	if yl != nil {
		s = v.add(s, *yl)
	}
	small := v.lt(y, v.d(approx.ErfSplit64))
	p := v.sel(small, v.poly64(z, approx.ErfPP64[:]), v.poly64(s, approx.ErfPA64[:]))
	q := v.sel(small, v.poly64(z, approx.ErfQQ64[:]), v.poly64(s, approx.ErfQA64[:]))
	return v.div(p, q)
}

// erfcExp64 is erfcExp64 of transcend_generic.go: e^(-k·(h + l) - (kHi +
// kLo) + R/S(s)).
func (v *nv) erfcExp64(h, l, s Val, k, kHi, kLo float64) Val {
	big := v.gt(s, v.d(approx.ErfTailSplit64))
	r := v.sel(big, v.poly64(s, approx.ErfRA64[:]), v.poly64(s, approx.ErfRB64[:]))
	q := v.sel(big, v.poly64(s, approx.ErfSA64[:]), v.poly64(s, approx.ErfSB64[:]))
	u := v.sub(v.div(r, q), v.d(kHi))
	a := v.mul(h, v.d(-k))
	d := v.add(a, u)
	bb := v.sub(d, a)
	e := v.add(v.sub(a, v.sub(d, bb)), v.sub(u, bb))
	if k != 1 {
		l = v.mul(l, v.d(k))
	}
	c := v.sub(e, l)
	if kLo != 0 {
		c = v.sub(c, v.d(kLo))
	}
	return v.exp64Pair(d, c)
}

// square returns t² as h + l exactly.
func (v *nv) square(t Val) (h, l Val) {
	h = v.mul(t, t)
	return h, v.fma(t, t, v.neg(h))
}

func (v *nv) erf64(x Val) Val {
	a := v.abs(x)
	r := v.erfRatio64(a, nil)
	small := v.fma(x, r, x)
	mid := v.or(v.add(r, v.d(approx.Erx64)), v.sign64(x))
	near := v.sel(v.lt(a, v.d(approx.ErfSplit64)), small, mid)
	t := v.min(v.max(a, v.d(approx.ErfNear64)), v.d(approx.Erf64Max))
	h, l := v.square(t)
	e := v.erfcExp64(h, l, v.div(v.d(1), h), 1, 0.5625, 0)
	far := v.or(v.sub(v.d(1), v.div(e, t)), v.sign64(x))
	return v.sel(v.lt(v.abs(x), v.d(approx.ErfNear64)), near, far)
}

func (v *nv) gelu64(x Val) Val {
	xc := v.min(v.max(x, v.d(approx.GELU64Min)), v.d(approx.GELU64Max))
	a := v.abs(xc)
	th, tl := v.square(v.max(a, v.d(1)))
	gTail := v.erfcExp64(th, tl, v.div(v.d(2), th), 0.5, approx.GELUK64Hi, approx.GELUK64Lo)
	y := v.mul(a, v.d(approx.Sqrt1_2Hi))
	yl := v.add(v.fma(a, v.d(approx.Sqrt1_2Hi), v.neg(y)), v.mul(a, v.d(approx.Sqrt1_2Lo)))
	r := v.erfRatio64(y, &yl)
	small := v.lt(y, v.d(approx.ErfSplit64))
	hs := v.sub(v.d(1), y)
	es := v.sub(v.sub(v.d(1), hs), y)
	h := v.sel(small, hs, v.d(1-approx.Erx64))
	e := v.and(small, es)
	my := v.sel(small, y, v.d(1))
	t := v.and(small, yl)
	gNear := v.mul(v.sub(h, v.sub(v.fma(my, r, t), e)), v.d(0.5))
	near := v.lt(y, v.d(approx.ErfNear64))
	g := v.sel(near, gNear, gTail)
	m := v.sel(near, xc, v.or(v.d(1), v.sign64(xc)))
	res := v.sel(v.lt(xc, v.zero()), v.mul(m, g), v.or(v.fma(v.neg(m), g, xc), v.sign64(xc)))
	return v.sel(v.gt(x, v.d(approx.GELU64Max)), x, res)
}

// geluTanhArg64 is geluTanhArg64 of transcend_generic.go: x·(C1 + C3·x²)
// as a pair.
func (v *nv) geluTanhArg64(x Val) (vh, vl Val) {
	x2, x2l := v.square(x)
	th := v.mul(x2, v.d(approx.GELUTanhC3Hi))
	tl := v.fma(x2, v.d(approx.GELUTanhC3Hi), v.neg(th))
	kh := v.add(th, v.d(approx.GELUTanhC1Hi))
	bb := v.sub(kh, v.d(approx.GELUTanhC1Hi))
	ke := v.add(v.sub(v.d(approx.GELUTanhC1Hi), v.sub(kh, bb)), v.sub(th, bb))
	kl := v.add(ke, v.add(tl, v.add(v.mul(x2l, v.d(approx.GELUTanhC3Hi)), v.add(v.mul(x2, v.d(approx.GELUTanhC3Lo)), v.d(approx.GELUTanhC1Lo)))))
	vh = v.mul(x, kh)
	vl = v.add(v.fma(x, kh, v.neg(vh)), v.mul(x, kl))
	return vh, vl
}

func (v *nv) geluTanh64(x Val) Val {
	xc := v.min(v.max(x, v.d(approx.GELUTanh64Min)), v.d(approx.GELU64Max))
	vh, vl := v.geluTanhArg64(xc)
	neg := v.lt(vh, v.zero())
	d := v.sel(neg, vh, v.neg(vh))
	c := v.sel(neg, vl, v.neg(vl))
	pp, n := v.exp64PairParts(d, c)
	e := v.scale64(pp, n)
	p := v.mul(xc, e)
	pe := v.fma(xc, e, v.neg(p))
	num := v.sel(neg, p, xc)
	lo := v.and(neg, pe)
	t := v.or(v.quoSum(num, &lo, e, 1), v.sign64(xc))
	t = v.sel(v.lt(vh, v.d(-708)), v.scale64(v.mul(xc, pp), n), t)
	return v.sel(v.gt(x, v.d(approx.GELU64Max)), x, t)
}

func (v *nv) elu64(x, alpha Val) Val {
	return v.sel(v.b.Op1(v.w.FCMGT0, x), x, v.mul(v.expm1x64(v.max(x, v.d(approx.ELU64Min))), alpha))
}

// bits is the 64-bit pattern u in both lanes (float64 kernels).
func (v *nv) bits(u uint64) Val { return v.d(math.Float64frombits(u)) }

// poly64 evaluates Σ c[k]·x^k by Horner's rule (float64).
func (v *nv) poly64(x Val, c []float64) Val {
	p := v.d(c[len(c)-1])
	for i := len(c) - 2; i >= 0; i-- {
		p = v.fma(p, x, v.d(c[i]))
	}
	return p
}

// scale64 returns y·2^n (n integral in [-1076, 1024]) rounded once, as the
// amd64 generator's AVX2 level: 2^n1·2^n2 with n1 = floor(n/2), each built
// from the bits of n + 1023 + 1.5·2^52 shifted into the exponent.
func (v *nv) scale64(y, n Val) Val {
	n1 := v.b.Op1(v.w.FRINTM, v.mul(n, v.d(0.5)))
	n2 := v.sub(n, n1)
	pow := func(k Val) Val { return v.imm(SHLD, 52, v.add(k, v.d(1023+0x1.8p52))) }
	return v.mul(v.mul(y, pow(n1)), pow(n2))
}

// exp64 is exp64 of transcend_generic.go, operation for operation.
func (v *nv) exp64(x Val) Val {
	return v.scale64(v.exp64Parts(v.min(v.max(x, v.d(approx.Exp64Min)), v.d(approx.Exp64Max))))
}

// exp64Parts returns e^xc as p·2^n before the scaling (xc in [-1400, Exp64Max]).
func (v *nv) exp64Parts(xc Val) (Val, Val) {
	n := v.b.Op1(v.w.FRINTN, v.mul(xc, v.d(approx.Log2E)))
	hi := v.fnma(n, v.d(approx.Ln2Hi64), xc) // exact
	lo := v.mul(n, v.d(approx.Ln2Lo64))
	r := v.sub(hi, lo)
	q := v.mul(v.mul(r, r), v.poly64(r, approx.Expm1Poly64[:]))
	s := v.add(hi, v.d(1))
	e := v.add(v.sub(v.d(1), s), hi) // 1 + hi = s + e exactly
	return v.add(s, v.add(v.sub(e, lo), q)), n
}

// log64 is log64 of transcend_generic.go: the exponent and mantissa from the
// bits (denormals prescaled by 2^54), m in [√2/2, √2).
func (v *nv) log64(x Val) Val {
	den := v.lt(x, v.d(0x1p-1022))
	xs := v.sel(den, v.mul(x, v.d(0x1p54)), x)
	adj := v.and(den, v.d(54))
	e1 := v.sub(v.or(v.imm(USHRD, 52, xs), v.bits(0x4330000000000000)), v.d(0x1p52+1023))
	m1 := v.or(v.and(xs, v.bits(0x000fffffffffffff)), v.d(1))
	big := v.ge(m1, v.d(math.Sqrt2))
	m := v.sel(big, v.mul(m1, v.d(0.5)), m1)
	k := v.sub(v.add(e1, v.and(big, v.d(1))), adj)
	f := v.sub(m, v.d(1)) // exact
	s := v.div(f, v.add(f, v.d(2)))
	z := v.mul(s, s)
	r := v.mul(z, v.poly64(z, approx.Log1pPoly64[:]))
	h := v.mul(v.mul(f, v.d(0.5)), f)
	t := v.fma(s, v.add(h, r), v.mul(k, v.d(approx.Ln2Lo64)))
	res := v.fma(k, v.d(approx.Ln2Hi64), v.sub(f, v.sub(h, t)))
	// Specials: +Inf -> +Inf, ±0 -> -Inf, x < 0 or NaN -> NaN.
	res = v.sel(v.eq(x, v.d(math.Inf(1))), x, res)
	res = v.sel(v.b.Op1(v.w.FCMEQ0, x), v.d(math.Inf(-1)), res)
	return v.sel(v.b.Op1(v.w.FCMGE0, x), res, v.bits(0x7ff8000000000000))
}

// nv spells the vector operations of the algorithms on a64 values, at the
// element width w (the zero value: float32).
type nv struct {
	b *B
	w Float
}

func (v *nv) f(x float32) Val     { return v.b.F(x) }
func (v *nv) d(x float64) Val     { return v.b.D(x) }
func (v *nv) add(a, c Val) Val    { return v.b.Op2(v.w.FADD, a, c) }
func (v *nv) sub(a, c Val) Val    { return v.b.Op2(v.w.FSUB, a, c) }
func (v *nv) mul(a, c Val) Val    { return v.b.Op2(v.w.FMUL, a, c) }
func (v *nv) div(a, c Val) Val    { return v.b.Op2(v.w.FDIV, a, c) }
func (v *nv) and(a, c Val) Val    { return v.b.Op2(AND, a, c) }
func (v *nv) or(a, c Val) Val     { return v.b.Op2(ORR, a, c) }
func (v *nv) max(a, c Val) Val    { return v.b.Op2(v.w.FMAX, a, c) }
func (v *nv) min(a, c Val) Val    { return v.b.Op2(v.w.FMIN, a, c) }
func (v *nv) neg(a Val) Val       { return v.b.Op1(v.w.FNEG, a) }
func (v *nv) abs(a Val) Val       { return v.b.Op1(v.w.FABS, a) }
func (v *nv) sel(m, t, e Val) Val { return v.b.Sel(m, t, e) }
func (v *nv) zero() Val           { return v.b.Bits(0) }

// fma is a·c + d, fnma d - a·c, each rounded once.
func (v *nv) fma(a, c, d Val) Val  { return v.b.Tied2(v.w.FMLA, d, a, c) }
func (v *nv) fnma(a, c, d Val) Val { return v.b.Tied2(v.w.FMLS, d, a, c) }

// Comparisons: lanes set where they hold (never for NaN).
func (v *nv) eq(a, c Val) Val { return v.b.Op2(v.w.FCMEQ, a, c) }
func (v *nv) lt(a, c Val) Val { return v.b.Op2(v.w.FCMGT, c, a) }
func (v *nv) gt(a, c Val) Val { return v.b.Op2(v.w.FCMGT, a, c) }
func (v *nv) ge(a, c Val) Val { return v.b.Op2(v.w.FCMGE, a, c) }

// clamp limits x to [lo, hi]; FMAX and FMIN propagate NaN.
func (v *nv) clamp(x Val, lo, hi float32) Val { return v.min(v.max(x, v.f(lo)), v.f(hi)) }

func (v *nv) imm(enc func(d, n V, s int) Inst, s int, a Val) Val {
	return v.b.Op1(func(d, n V) Inst { return enc(d, n, s) }, a)
}

// pow2bits turns integer lanes k (normal range) into the float32 2^k.
func (v *nv) pow2bits(k Val) Val { return v.imm(SHL, 23, v.b.Op2(ADD, k, v.b.Bits(127))) }

// scale returns p·2^n (n integral in [-159, 128]) rounded once: 2^n is
// 2^n1·2^n2 with n1 = n>>1, both halves normal.
func (v *nv) scale(p, n Val) Val {
	ni := v.b.Op1(FCVTZS, n)
	n1 := v.imm(SSHR, 1, ni)
	n2 := v.b.Op2(SUB, ni, n1)
	return v.mul(v.mul(p, v.pow2bits(n1)), v.pow2bits(n2))
}

// pow2 returns 2^n for integral n in [-29, 128].
func (v *nv) pow2(n Val) Val { return v.pow2bits(v.b.Op1(FCVTZS, n)) }

// poly evaluates Σ c[k]·x^k by Horner's rule.
func (v *nv) poly(x Val, c []float32) Val {
	p := v.f(c[len(c)-1])
	for i := len(c) - 2; i >= 0; i-- {
		p = v.fma(p, x, v.f(c[i]))
	}
	return p
}

// expReduce returns n and q = expm1(r) for x + lo = n·ln2 + r (x clamped);
// lo may be nil.
func (v *nv) expReduce(x Val, lo *Val) (n, q Val) {
	n = v.b.Op1(FRINTN, v.mul(x, v.f(approx.Log2E)))
	r := v.fnma(n, v.f(approx.Ln2Hi), x)
	r = v.fnma(n, v.f(approx.Ln2Lo), r)
	if lo != nil {
		r = v.add(r, *lo)
	}
	p := v.poly(r, approx.Expm1Poly[:])
	return n, v.fma(v.mul(r, r), p, r)
}

// expPair clamps x to the exp range and reduces x + lo, dropping lo where
// the clamp changed x or lo is NaN.
func (v *nv) expPair(x, lo Val) (n, q Val) {
	xc := v.clamp(x, approx.ExpMin, approx.ExpMax)
	lo = v.and(lo, v.eq(xc, x))
	lo = v.and(lo, v.eq(lo, lo))
	return v.expReduce(xc, &lo)
}

func (v *nv) exp(x Val) Val {
	n, q := v.expReduce(v.clamp(x, approx.ExpMin, approx.ExpMax), nil)
	return v.scale(v.add(q, v.f(1)), n)
}

func (v *nv) expm1(x Val) Val {
	n, q := v.expReduce(v.clamp(x, approx.Expm1Min, approx.ExpMax), nil)
	t := v.pow2(n)
	return v.fma(t, q, v.sub(t, v.f(1)))
}

// expNegAbs returns e^-|x| as p·2^n with p = 1 + q, and as e.
func (v *nv) expNegAbs(x Val) (q, p, n, e Val) {
	n, q = v.expReduce(v.max(v.neg(v.abs(x)), v.f(approx.ExpMin)), nil)
	p = v.add(q, v.f(1))
	return q, p, n, v.scale(p, n)
}

func (v *nv) sigmoid(x Val) Val {
	_, _, _, e := v.expNegAbs(x)
	num := v.sel(v.lt(x, v.zero()), e, v.f(1))
	return v.div(num, v.add(e, v.f(1)))
}

func (v *nv) silu(x Val) Val {
	x = v.max(x, v.f(approx.SiLUMin))
	q, _, n, e := v.expNegAbs(x)
	d := v.add(e, v.f(1))
	num := v.sel(v.lt(x, v.zero()), v.scale(v.fma(x, q, x), n), x)
	return v.div(num, d)
}

func (v *nv) tanh(x Val) Val {
	y := v.clamp(v.abs(x), 0, approx.TanhMax)
	e := v.expm1(v.add(y, y))
	t := v.div(e, v.add(e, v.f(2)))
	return v.or(t, v.and(x, v.b.Bits(1<<31)))
}

func (v *nv) softplus(x Val) Val {
	_, p, n, e := v.expNegAbs(x)
	d := v.add(e, v.f(2))
	s := v.div(e, d)
	w := v.div(v.add(p, p), d)
	z := v.mul(s, s)
	l := v.fma(w, v.mul(z, v.mul(v.poly(z, approx.AtanhPoly[:]), v.f(0.5))), w)
	return v.add(v.max(x, v.zero()), v.scale(l, n))
}

func (v *nv) log(x Val) Val {
	// Denormals: scale by 2^25 first and take 25 off the exponent.
	den := v.lt(x, v.f(0x1p-126))
	xs := v.sel(den, v.mul(x, v.f(0x1p25)), x)
	adj := v.and(den, v.f(25))
	ei := v.b.Op2(SUB, v.imm(USHR, 23, xs), v.b.Bits(127))
	ef := v.b.Op1(SCVTF, ei)
	mant := v.or(v.and(xs, v.b.Bits(0x007fffff)), v.f(1))
	big := v.ge(mant, v.f(1.5))
	m := v.sel(big, v.mul(mant, v.f(0.5)), mant)
	k := v.sub(v.add(ef, v.and(big, v.f(1))), adj)
	s := v.div(v.sub(m, v.f(1)), v.add(m, v.f(1)))
	z := v.mul(s, s)
	p := v.poly(z, approx.AtanhPoly[:])
	lo := v.fma(v.mul(s, z), p, v.mul(k, v.f(approx.Ln2Lo)))
	hi := v.add(v.add(s, s), lo)
	r := v.fma(k, v.f(approx.Ln2Hi), hi)
	// Specials: +Inf -> +Inf, 0 -> -Inf, x < 0 or NaN -> NaN.
	r = v.sel(v.eq(x, v.f(float32(math.Inf(1)))), x, r)
	r = v.sel(v.b.Op1(FCMEQ0, x), v.f(float32(math.Inf(-1))), r)
	return v.sel(v.b.Op1(FCMGE0, x), r, v.b.Bits(0x7fc00000))
}

// erfcTail returns e^(-x²·s)·Q(u), u = 1/(1+h·|x|) - centre, with x² exact
// and the reciprocal compensated (see erfcTail in transcend_generic.go).
func (v *nv) erfcTail(x Val, s, h float32) Val {
	hi := v.mul(x, x)
	lo := v.fma(x, x, v.neg(hi))
	if s != 1 {
		hi = v.mul(hi, v.f(s))
		lo = v.mul(lo, v.f(s))
	}
	nlo := v.neg(lo)
	n, q := v.expReduce(v.neg(hi), &nlo) // |x| <= 6.5: no clamp
	a := v.abs(x)
	one := v.f(1)
	d := v.fma(a, v.f(h), one)
	dErr := v.fma(a, v.f(h), v.sub(one, d))
	t := v.div(one, d)
	r := v.fma(v.neg(t), d, one)
	tLo := v.mul(t, v.sub(r, v.mul(t, dErr)))
	u := v.add(v.sub(t, v.f(approx.ErfcxCentre)), tLo)
	p := v.erfcxPoly(u)
	return v.scale(v.fma(q, p, p), n)
}

// erfcxPoly evaluates ErfcxPoly at u as (c0 + c1·u) + u·(u·P2(u)), P2 by
// Horner's rule.
func (v *nv) erfcxPoly(u Val) Val {
	c := approx.ErfcxPoly[:]
	p2 := v.poly(u, c[2:])
	return v.fma(u, v.mul(u, p2), v.fma(u, v.f(c[1]), v.f(c[0])))
}

// erfSmall is erf(x) = x·(C0 + z·P(z)) for |x| < ErfSplit.
func (v *nv) erfSmall(x Val) Val {
	z := v.mul(x, x)
	p := v.poly(z, approx.ErfPoly[:])
	return v.fma(x, v.f(approx.ErfC0Hi), v.mul(x, v.fma(z, p, v.f(approx.ErfC0Lo))))
}

func (v *nv) erf(x Val) Val {
	a := v.abs(x)
	far := v.or(v.sub(v.f(1), v.erfcTail(v.clamp(a, 0, approx.ErfMax), 1, 0.5)), v.and(x, v.b.Bits(1<<31)))
	near := v.erfSmall(x)
	return v.sel(v.lt(v.abs(x), v.f(approx.ErfSplit)), near, far)
}

func (v *nv) gelu(x Val) Val {
	xc := v.clamp(x, approx.GELUMin, approx.GELUMax)
	e := v.mul(v.erfcTail(xc, 0.5, 0.35355339), v.f(0.5))
	r := v.sel(v.lt(xc, v.zero()), v.mul(xc, e), v.fma(v.neg(xc), e, xc))
	// The masks are taken last: x is live to the end anyway, they are not.
	r = v.sel(v.gt(x, v.f(approx.GELUMax)), x, r)
	return v.sel(v.lt(x, v.f(approx.GELUMin)), v.b.Bits(1<<31), r)
}

// geluTanh computes w = x·(C1 + C3·x²) in float64 a half vector at a time,
// splits it into float32 hi + lo, and returns x/(1+e^-(hi+lo)).
func (v *nv) geluTanh(x Val) Val {
	b := v.b
	xc := v.clamp(x, -approx.GELUTanhMax, approx.GELUTanhMax)
	w := func(d Val) Val {
		x2 := b.Op2(FMULD, d, d)
		x2 = b.Tied2(FMLAD, b.D(approx.TanhC1), x2, b.D(approx.TanhC3)) // C3·x² + C1
		return b.Op2(FMULD, x2, d)
	}
	w0, w1 := w(b.Op1(FCVTL, xc)), w(b.Op1(FCVTL2, xc))
	h0 := b.Op1(FCVTN, w0)
	l0 := b.Op1(FCVTN, b.Op2(FSUBD, w0, b.Op1(FCVTL, h0)))
	hi := b.Tied1(FCVTN2, h0, w1)
	lo := b.Tied1(FCVTN2, l0, b.Op2(FSUBD, w1, b.Op1(FCVTL2, hi)))
	n, q := v.expPair(v.neg(hi), v.neg(lo))
	e := v.scale(v.add(q, v.f(1)), n)
	return v.sel(v.gt(x, v.f(approx.GELUTanhMax)), x, v.div(xc, v.add(e, v.f(1))))
}

func (v *nv) leakyReLU(x, alpha Val) Val {
	return v.sel(v.b.Op1(v.w.FCMGT0, x), x, v.mul(x, alpha))
}

func (v *nv) elu(x, alpha Val) Val {
	return v.sel(v.b.Op1(FCMGT0, x), x, v.mul(v.expm1(x), alpha))
}

// expSum writes expSum (store: dst[i] = e^(x[i]-shift)) or sumExp (only
// the sum): x[i]-shift is split into its rounded value and exact error
// (TwoSum, the error zeroed where it is NaN), and the results are summed
// in float64 (two float64 accumulators, pinned).
func expSum(f *File, store bool) {
	name, sig := "expSumNEON", "func(dst, x []float32, shift float32) float64"
	doc := name + " sets dst[i] = e^(x[i]-shift) and returns Σ dst[i] in float64 (see expSumGeneric)."
	dst, ins := "dst", []string{"x"}
	if !store {
		name, sig = "sumExpNEON", "func(x []float32, shift float32) float64"
		doc = name + " returns Σ e^(x[i]-shift) in float64 (see expSumGeneric)."
		dst = "x"
	}
	var acc0, acc1 V
	elementwise(f, ew{
		name: name, sig: sig, dst: dst, ins: ins, doc: []string{doc, requires}, mask: true,
		body: func(b *B, in []Val, mask *Val) *Val {
			v := &nv{b: b}
			negShift := b.Pin(func(fn *Func, r V) {
				fn.Asm("FMOVS %s, F%d", fn.Arg("shift"), r)
				fn.I(DUPS(r, r), FNEG(r, r))
			})
			zero := func(fn *Func, r V) { fn.I(EOR(r, r, r)) }
			a0, a1 := b.Pin(zero), b.Pin(zero)
			acc0, acc1 = b.Reg(a0), b.Reg(a1)
			x := in[0]
			d := v.add(x, negShift)
			bb := v.sub(d, x)
			lo := v.add(v.sub(x, v.sub(d, bb)), v.sub(negShift, bb))
			n, q := v.expPair(d, lo)
			e := v.and(v.scale(v.add(q, v.f(1)), n), *mask)
			b.Update(FADDD, a0, b.Op1(FCVTL, e))
			b.Update(FADDD, a1, b.Op1(FCVTL2, e))
			if !store {
				return nil
			}
			return &e
		},
		end: func(fn *Func, _ *B) {
			fn.I(FADDD(acc0, acc0, acc1), FADDPD(acc0, acc0))
			fn.Asm("FMOVD F%d, %s", acc0, fn.Arg("ret"))
		},
	})
}
