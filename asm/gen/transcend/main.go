// Command transcend writes the amd64 transcendental kernels of package simd
// (simd/transcend_amd64.s) and their Go declarations
// (simd/transcend_stubs_amd64.go).
//
// Every kernel runs the algorithm of simd/transcend_generic.go, a vector at a
// time, with the constants of internal/approx. The levels differ only in how
// they scale by 2^n and split off the exponent: AVX-512 has VSCALEFPS,
// VGETEXPPS and VGETMANTPS; AVX2 builds 2^n from integer bits (in two halves,
// so denormal results round once) and prescales denormal inputs of Log. Tails
// are masked on both levels: k registers on AVX-512, VMASKMOVPS on AVX2.
//
// The kernels use avo's virtual registers; constants are 64-byte blocks in
// read-only data used as memory operands, so AVX2's sixteen registers suffice.
package main

//go:generate go run . -out ../../../simd/transcend_amd64.s -stubs ../../../simd/transcend_stubs_amd64.go -pkg simd

import (
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"regexp"
	"strings"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/elem"
	"github.com/lanesgo/lanes/asm/gen/internal/x86"
	"github.com/lanesgo/lanes/internal/approx"
)

func main() {
	ConstraintExpr("!purego")
	for _, s := range x86.Levels {
		v := &vm{s: s}
		unary(v, "exp", "e^x[i]", v.exp)
		unary(v, "log", "log(x[i])", v.log)
		unary(v, "sigmoid", "1/(1+e^-x[i])", v.sigmoid)
		unary(v, "silu", "x[i]/(1+e^-x[i])", v.silu)
		unary(v, "tanh", "tanh(x[i])", v.tanh)
		unary(v, "softplus", "log(1+e^x[i])", v.softplus)
		unary(v, "erf", "erf(x[i])", v.erf)
		unary(v, "gelu", "x[i]·Φ(x[i])", v.gelu)
		unary(v, "geluTanh", "x[i]/(1+e^(-2√(2/π)(x[i]+0.044715x[i]³)))", v.geluTanh)
		withAlpha(v, "leakyReLU", "x[i] if x[i] > 0, else alpha·x[i]", v.leakyReLU)
		withAlpha(v, "elu", "x[i] if x[i] > 0, else alpha·(e^x[i]-1)", v.elu)
		expSum(v, true)
		expSum(v, false)
		elemfn(v)
	}
	// The float64 forms, on the same helpers at float64.
	for _, s := range x86.Levels {
		v := &vm{s: s.At(elem.F64)}
		unary(v, "exp", "e^x[i]", v.exp64)
		unary(v, "log", "log(x[i])", v.log64)
		unary(v, "sigmoid", "1/(1+e^-x[i])", v.sigmoid64)
		unary(v, "tanh", "tanh(x[i])", v.tanh64)
		unary(v, "silu", "x[i]/(1+e^-x[i])", v.silu64)
		unary(v, "softplus", "log(1+e^x[i])", v.softplus64)
		unary(v, "erf", "erf(x[i])", v.erf64)
		unary(v, "gelu", "x[i]·Φ(x[i])", v.gelu64)
		unary(v, "geluTanh", "x[i]/(1+e^(-2√(2/π)(x[i]+0.044715x[i]³)))", v.geluTanh64)
		withAlpha(v, "leakyReLU", "x[i] if x[i] > 0, else alpha·x[i]", v.leakyReLU)
		withAlpha(v, "elu", "x[i] if x[i] > 0, else alpha·(e^x[i]-1)", v.elu64)
		expSum(v, true)
		expSum(v, false)
	}
	Generate()
	dropSelfMoves(flag.Lookup("out").Value.String())
}

// selfMove matches a register copy onto itself, which the register allocator
// leaves where a value's copy and the value share a register.
var selfMove = regexp.MustCompile(`^\s+VMOVAP[SD]\s+([XYZ]\d+), ([XYZ]\d+)$`)

// dropSelfMoves removes those no-op copies from the generated file (a
// peephole pass of this generator: they would cost front-end slots).
func dropSelfMoves(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if m := selfMove.FindStringSubmatch(line); m != nil && m[1] == m[2] {
			continue
		}
		out = append(out, line)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		log.Fatal(err)
	}
}

// vm emits vector arithmetic at one level on virtual registers.
type vm struct {
	s     x86.ISA
	alpha VecVirtual // the broadcast parameter of withAlpha kernels
}

var blocks = map[string]Mem{}

// block returns the 64-byte read-only block name, written by fill on first
// use (fill emits the DATA lines).
func block(name string, fill func()) Mem {
	if m, ok := blocks[name]; ok {
		return m
	}
	m := GLOBL(name, RODATA|NOPTR)
	fill()
	blocks[name] = m
	return m
}

// c returns a block holding the float32 bit pattern bits in every lane.
func c(bits uint32) Mem {
	return block(fmt.Sprintf("lanes_c%08x", bits), func() {
		for i := 0; i < 16; i++ {
			DATA(4*i, U32(bits))
		}
	})
}

func cf(f float32) Mem { return c(math.Float32bits(f)) }

// cd returns a block holding the float64 f in every lane.
func cd(f float64) Mem {
	bits := math.Float64bits(f)
	return block(fmt.Sprintf("lanes_d%016x", bits), func() {
		for i := 0; i < 8; i++ {
			DATA(8*i, U64(bits))
		}
	})
}

// iota is the block 0, 1, ..., 7 (lane indices for AVX2 tail masks);
// iota64 the same as 64-bit lanes 0..3.
func iota() Mem {
	return block("lanes_iota", func() {
		for i := 0; i < 8; i++ {
			DATA(4*i, U32(uint32(i)))
		}
	})
}

func iota64() Mem {
	return block("lanes_iota64", func() {
		for i := 0; i < 4; i++ {
			DATA(8*i, U64(uint64(i)))
		}
	})
}

// cq returns a block holding the 64-bit pattern bits in every lane.
func cq(bits uint64) Mem { return cd(math.Float64frombits(bits)) }

// op emits ins(b, a, d); on AVX-512 a constant operand b is read with an
// embedded broadcast (bcst) of its first 4 bytes: the linker aligns read-only
// data to 32 bytes only, so a 64-byte load of a constant would often split
// across two cache lines.
func (v *vm) op(ins, bcst func(...Op), b Op, rest ...Op) {
	if _, ok := b.(Mem); ok && v.s.Masked {
		bcst(append([]Op{b}, rest...)...)
		return
	}
	ins(append([]Op{b}, rest...)...)
}

func (v *vm) reg() VecVirtual {
	if v.s.Masked {
		return ZMM()
	}
	return YMM()
}

// load puts a constant in a register (for operands that must be registers).
func (v *vm) load(m Mem) VecVirtual {
	r := v.reg()
	if v.s.Masked {
		x86.P(v.s, VBROADCASTSS, VBROADCASTSD)(m, r)
	} else {
		x86.P(v.s, VMOVUPS, VMOVUPD)(m, r)
	}
	return r
}

// p picks the PS or PD form of an instruction and its embedded-broadcast
// form for the element width of v.
func (v *vm) p(ps, psb, pd, pdb func(...Op)) (func(...Op), func(...Op)) {
	return x86.P(v.s, ps, pd), x86.P(v.s, psb, pdb)
}

// movAP copies a register (VMOVAPS or VMOVAPD).
func (v *vm) movAP(a, d Op) { x86.P(v.s, VMOVAPS, VMOVAPD)(a, d) }

// bin returns ins(a, b) in a new register (b may be a constant block).
func (v *vm) bin(ins, bcst func(...Op), a VecVirtual, b Op) VecVirtual {
	d := v.reg()
	v.op(ins, bcst, b, a, d)
	return d
}

func (v *vm) add(a VecVirtual, b Op) VecVirtual {
	return v.bin2(v.p(VADDPS, VADDPS_BCST, VADDPD, VADDPD_BCST))(a, b)
}
func (v *vm) sub(a VecVirtual, b Op) VecVirtual {
	return v.bin2(v.p(VSUBPS, VSUBPS_BCST, VSUBPD, VSUBPD_BCST))(a, b)
}
func (v *vm) mul(a VecVirtual, b Op) VecVirtual {
	return v.bin2(v.p(VMULPS, VMULPS_BCST, VMULPD, VMULPD_BCST))(a, b)
}
func (v *vm) div(a VecVirtual, b Op) VecVirtual {
	return v.bin2(v.p(VDIVPS, VDIVPS_BCST, VDIVPD, VDIVPD_BCST))(a, b)
}
func (v *vm) and(a VecVirtual, b Op) VecVirtual {
	return v.bin2(v.p(VANDPS, VANDPS_BCST, VANDPD, VANDPD_BCST))(a, b)
}
func (v *vm) or(a VecVirtual, b Op) VecVirtual {
	return v.bin2(v.p(VORPS, VORPS_BCST, VORPD, VORPD_BCST))(a, b)
}
func (v *vm) xor(a VecVirtual, b Op) VecVirtual {
	return v.bin2(v.p(VXORPS, VXORPS_BCST, VXORPD, VXORPD_BCST))(a, b)
}

// bin2 is bin with the instruction pair given as p returns it.
func (v *vm) bin2(ins, bcst func(...Op)) func(a VecVirtual, b Op) VecVirtual {
	return func(a VecVirtual, b Op) VecVirtual { return v.bin(ins, bcst, a, b) }
}

// fma returns a·b + c with one rounding.
func (v *vm) fma(a VecVirtual, b, c Op) VecVirtual {
	d := v.reg()
	_, bMem := b.(Mem)
	_, cMem := c.(Mem)
	f213, f213b := v.p(VFMADD213PS, VFMADD213PS_BCST, VFMADD213PD, VFMADD213PD_BCST)
	f231, f231b := v.p(VFMADD231PS, VFMADD231PS_BCST, VFMADD231PD, VFMADD231PD_BCST)
	switch {
	case !bMem:
		v.movAP(a, d)
		v.op(f213, f213b, c, b, d) // d = b·d + c
	case !cMem:
		v.movAP(c, d)
		v.op(f231, f231b, b, a, d) // d = a·b + d
	default:
		v.movAP(a, d)
		v.op(f213, f213b, c, v.load(b.(Mem)), d)
	}
	return d
}

// fnma returns c - a·b with one rounding (b a constant, c a register).
func (v *vm) fnma(a VecVirtual, b Mem, c VecVirtual) VecVirtual {
	d := v.reg()
	v.movAP(c, d)
	ins, bcst := v.p(VFNMADD231PS, VFNMADD231PS_BCST, VFNMADD231PD, VFNMADD231PD_BCST)
	v.op(ins, bcst, b, a, d) // d = -(a·b) + d
	return d
}

// clamp limits x to [lo, hi]; NaN passes through (MAXPS/MINPS return their
// second source operand, x, when either is NaN).
func (v *vm) clamp(x VecVirtual, lo, hi float32) VecVirtual {
	return v.clampMem(x, cf(lo), cf(hi))
}

func (v *vm) clampMem(x VecVirtual, lo, hi Mem) VecVirtual {
	l, h, d, e := v.load(lo), v.load(hi), v.reg(), v.reg()
	x86.P(v.s, VMAXPS, VMAXPD)(x, l, d)
	x86.P(v.s, VMINPS, VMINPD)(d, h, e)
	return e
}

// round rounds to the nearest integer, ties to even (mode 0), or down (1).
func (v *vm) round(x VecVirtual) VecVirtual { return v.roundMode(x, 0) }

func (v *vm) roundMode(x VecVirtual, mode uint8) VecVirtual {
	d := v.reg()
	if v.s.Masked {
		x86.P(v.s, VRNDSCALEPS, VRNDSCALEPD)(U8(mode), x, d)
	} else {
		x86.P(v.s, VROUNDPS, VROUNDPD)(U8(mode), x, d)
	}
	return d
}

// mask is a comparison result: a k register (AVX-512) or a vector of all-ones
// lanes (AVX2).
type mask struct {
	k OpmaskVirtual
	v VecVirtual
}

// Comparison predicates of VCMPPS.
const (
	cmpEQ  = 0x00 // EQ_OQ
	cmpLT  = 0x01 // LT_OS
	cmpUNO = 0x03 // UNORD_Q
	cmpNLE = 0x06 // NLE_US: not(a <= b), true for NaN
	cmpGE  = 0x0d // GE_OS
	cmpGT  = 0x0e // GT_OS
)

func (v *vm) cmp(pred uint8, a VecVirtual, b Op) mask {
	vcmp, vcmpb := v.p(VCMPPS, VCMPPS_BCST, VCMPPD, VCMPPD_BCST)
	if v.s.Masked {
		k := K()
		if _, ok := b.(Mem); ok {
			vcmpb(U8(pred), b, a, k)
		} else {
			vcmp(U8(pred), b, a, k)
		}
		return mask{k: k}
	}
	m := v.reg()
	vcmp(U8(pred), b, a, m)
	return mask{v: m}
}

// sel returns t where m is set, f elsewhere.
func (v *vm) sel(m mask, t, f VecVirtual) VecVirtual {
	d := v.reg()
	switch {
	case v.s.Masked:
		// avo takes VBLENDMPx's destination as read (a merge-masked
		// write), which keeps d live from the kernel's entry: a zero idiom
		// (no execution unit) defines it first.
		VXORPS(d, d, d)
		x86.P(v.s, VBLENDMPS, VBLENDMPD)(t, f, m.k, d)
	case v.s.Double():
		VBLENDVPD(m.v, t, f, d)
	default:
		VBLENDVPS(m.v, t, f, d)
	}
	return d
}

// scale returns p·2^n (n integral) rounded once.
func (v *vm) scale(p, n VecVirtual) VecVirtual {
	d := v.reg()
	if v.s.Masked {
		VSCALEFPS(n, p, d)
		return d
	}
	// 2^n = 2^n1 · 2^n2 with n1 = n>>1, both halves normal for n in [-159, 128].
	ni, n1, n2 := v.reg(), v.reg(), v.reg()
	VCVTPS2DQ(n, ni)
	VPSRAD(U8(1), ni, n1)
	VPSUBD(n1, ni, n2)
	b1, b2 := v.pow2bits(n1), v.pow2bits(n2)
	t := v.reg()
	VMULPS(b1, p, t)
	VMULPS(b2, t, d)
	return d
}

// pow2bits turns integer lanes k (normal range) into the float32 2^k.
func (v *vm) pow2bits(k VecVirtual) VecVirtual {
	t, d := v.reg(), v.reg()
	VPADDD(c(127), k, t) // AVX2 only
	VPSLLD(U8(23), t, d)
	return d
}

// pow2 returns 2^n for integral n in [-29, 128].
func (v *vm) pow2(n VecVirtual) VecVirtual {
	if v.s.Masked {
		d := v.reg()
		VSCALEFPS(n, v.load(cf(1)), d)
		return d
	}
	ni := v.reg()
	VCVTPS2DQ(n, ni)
	return v.pow2bits(ni)
}

// expReduce returns n and q = expm1(r) for x + lo = n·ln2 + r (x clamped); lo
// may be nil.
func (v *vm) expReduce(x, lo VecVirtual) (n, q VecVirtual) {
	n = v.round(v.mul(x, cf(approx.Log2E)))
	r := v.fnma(n, cf(approx.Ln2Hi), x)
	r = v.fnma(n, cf(approx.Ln2Lo), r)
	if lo != nil {
		r = v.add(r, lo)
	}
	p := v.poly(r, approx.Expm1Poly[:])
	return n, v.fma(v.mul(r, r), p, r)
}

// expPair clamps x to the exp range and reduces x + lo, dropping lo where the
// clamp changed x (or lo is NaN), as expReducePair does.
func (v *vm) expPair(x, lo VecVirtual) (n, q VecVirtual) {
	xc := v.clamp(x, approx.ExpMin, approx.ExpMax)
	same := v.cmp(cmpEQ, xc, x)
	lo = v.sel(same, lo, v.zero())
	lo = v.sel(v.cmp(0x07, lo, lo), lo, v.zero()) // ORD_Q: NaN -> 0
	return v.expReduce(xc, lo)
}

// poly evaluates Σ c[k]·x^k by Horner's rule, as horner in
// transcend_generic.go.
func (v *vm) poly(x VecVirtual, c []float32) VecVirtual {
	p := v.load(cf(c[len(c)-1]))
	for i := len(c) - 2; i >= 0; i-- {
		p = v.fma(p, x, cf(c[i]))
	}
	return p
}

// erfcTail returns e^(-x²·s)·Q(u), u = 1/(1+h·|x|) - centre, with x² exact
// and the reciprocal compensated (see erfcTail in transcend_generic.go).
func (v *vm) erfcTail(x VecVirtual, s, h float32) VecVirtual {
	hi := v.mul(x, x)
	lo := v.fma(x, x, v.xor(hi, c(1<<31)))
	if s != 1 {
		hi = v.mul(hi, cf(s))
		lo = v.mul(lo, cf(s))
	}
	n, q := v.expReduce(v.xor(hi, c(1<<31)), v.xor(lo, c(1<<31))) // |x| <= 6.5: no clamp
	a := v.and(x, c(0x7fffffff))
	one := v.load(cf(1))
	d := v.fma(a, cf(h), one)
	dErr := v.fma(a, cf(h), v.sub(one, d))
	t := v.div(one, d)
	r := v.fma(v.xor(t, c(1<<31)), d, one)
	tLo := v.mul(t, v.sub(r, v.mul(t, dErr)))
	u := v.add(v.sub(t, cf(approx.ErfcxCentre)), tLo)
	p := v.erfcxPoly(u)
	return v.scale(v.fma(q, p, p), n)
}

// erfcxPoly evaluates ErfcxPoly at u as (c0 + c1·u) + u·(u·P2(u)), P2 by
// Horner's rule (see erfcTail in transcend_generic.go).
func (v *vm) erfcxPoly(u VecVirtual) VecVirtual {
	c := approx.ErfcxPoly[:]
	p2 := v.poly(u, c[2:])
	return v.fma(u, v.mul(u, p2), v.fma(u, cf(c[1]), cf(c[0])))
}

// erfSmall is erf(x) = x·(C0 + z·P(z)) for |x| < ErfSplit.
func (v *vm) erfSmall(x VecVirtual) VecVirtual {
	z := v.mul(x, x)
	p := v.poly(z, approx.ErfPoly[:])
	return v.fma(x, cf(approx.ErfC0Hi), v.mul(x, v.fma(z, p, cf(approx.ErfC0Lo))))
}

func (v *vm) erf(x VecVirtual) VecVirtual {
	a := v.and(x, c(0x7fffffff))
	small := v.cmp(cmpLT, a, cf(approx.ErfSplit))
	far := v.or(v.sub(v.load(cf(1)), v.erfcTail(v.clamp(a, 0, approx.ErfMax), 1, 0.5)), v.and(x, c(1<<31)))
	return v.sel(small, v.erfSmall(x), far)
}

func (v *vm) gelu(x VecVirtual) VecVirtual {
	big := v.cmp(cmpGT, x, cf(approx.GELUMax))
	tiny := v.cmp(cmpLT, x, cf(approx.GELUMin))
	xc := v.clamp(x, approx.GELUMin, approx.GELUMax)
	e := v.mul(v.erfcTail(xc, 0.5, 0.35355339), cf(0.5))
	neg := v.cmp(cmpLT, xc, v.zero())
	r := v.sel(neg, v.mul(xc, e), v.fma(v.xor(xc, c(1<<31)), e, xc))
	return v.sel(tiny, v.load(c(1<<31)), v.sel(big, x, r))
}

// geluTanh computes w = x·(C1 + C3·x²) in float64 a half vector at a time,
// splits it into float32 hi + lo, and returns x/(1+e^-(hi+lo)).
func (v *vm) geluTanh(x VecVirtual) VecVirtual {
	big := v.cmp(cmpGT, x, cf(approx.GELUTanhMax))
	xc := v.clamp(x, -approx.GELUTanhMax, approx.GELUTanhMax)
	c3 := v.reg()
	if v.s.Masked {
		VBROADCASTSD(cd(approx.TanhC3), c3)
	} else {
		VMOVUPD(cd(approx.TanhC3), c3)
	}
	// split turns the float64 lanes d into w = d·(C1 + C3·d²), rounded to
	// float32 into hDst, and the float32 rounding of w - hDst into lDst.
	split := func(d VecVirtual, hDst, lDst Op) {
		x2 := v.reg()
		VMULPD(d, d, x2)
		v.op(VFMADD213PD, VFMADD213PD_BCST, cd(approx.TanhC1), c3, x2) // x2 = C3·x² + C1
		w := v.reg()
		VMULPD(x2, d, w)
		v.narrow(w, hDst)
		hd := v.reg()
		VCVTPS2PD(hDst, hd)
		VSUBPD(hd, w, hd)
		v.narrow(hd, lDst)
	}
	d0, d1 := v.widen(xc)
	hi, lo := v.reg(), v.reg()
	split(d0, v.low(hi), v.low(lo))
	hh, lh := v.half(), v.half()
	split(d1, hh, lh)
	v.insertHigh(hh, hi)
	v.insertHigh(lh, lo)
	n, q := v.expPair(v.xor(hi, c(1<<31)), v.xor(lo, c(1<<31)))
	e := v.scale(v.add(q, cf(1)), n)
	r := v.div(xc, v.add(e, cf(1)))
	return v.sel(big, x, r)
}

func (v *vm) exp(x VecVirtual) VecVirtual {
	n, q := v.expReduce(v.clamp(x, approx.ExpMin, approx.ExpMax), nil)
	return v.scale(v.add(q, cf(1)), n)
}

func (v *vm) expm1(x VecVirtual) VecVirtual {
	n, q := v.expReduce(v.clamp(x, approx.Expm1Min, approx.ExpMax), nil)
	t := v.pow2(n)
	return v.fma(t, q, v.sub(t, cf(1)))
}

// atLeast returns max(x, lo), NaN passing through.
func (v *vm) atLeast(x VecVirtual, lo float32) VecVirtual {
	d := v.reg()
	VMAXPS(x, v.load(cf(lo)), d)
	return d
}

// negAbs returns -|x|.
func (v *vm) negAbs(x VecVirtual) VecVirtual { return v.or(x, c(1<<31)) }

// expNegAbs returns e^-|x| as p·2^n with p = 1 + q, and as e (see
// expNegAbs in transcend_generic.go): -|x| <= 0 needs only the lower clamp.
func (v *vm) expNegAbs(x VecVirtual) (q, p, n, e VecVirtual) {
	n, q = v.expReduce(v.atLeast(v.negAbs(x), approx.ExpMin), nil)
	p = v.add(q, cf(1))
	return q, p, n, v.scale(p, n)
}

func (v *vm) zero() VecVirtual { d := v.reg(); VXORPS(d, d, d); return d }

func (v *vm) sigmoid(x VecVirtual) VecVirtual {
	_, _, _, e := v.expNegAbs(x)
	neg := v.cmp(cmpLT, x, v.zero())
	num := v.sel(neg, e, v.load(cf(1)))
	return v.div(num, v.add(e, cf(1)))
}

func (v *vm) silu(x VecVirtual) VecVirtual {
	x = v.atLeast(x, approx.SiLUMin)
	q, _, n, e := v.expNegAbs(x)
	d := v.add(e, cf(1))
	neg := v.cmp(cmpLT, x, v.zero())
	num := v.sel(neg, v.scale(v.fma(x, q, x), n), x)
	return v.div(num, d)
}

func (v *vm) tanh(x VecVirtual) VecVirtual {
	y := v.clamp(v.and(x, c(0x7fffffff)), 0, approx.TanhMax)
	e := v.expm1(v.add(y, y))
	t := v.div(e, v.add(e, cf(2)))
	return v.or(t, v.and(x, c(1<<31)))
}

func (v *vm) softplus(x VecVirtual) VecVirtual {
	_, p, n, e := v.expNegAbs(x)
	d := v.add(e, cf(2))
	s := v.div(e, d)
	w := v.div(v.add(p, p), d)
	z := v.mul(s, s)
	l := v.scale(v.fma(w, v.mul(z, v.mul(v.poly(z, approx.AtanhPoly[:]), cf(0.5))), w), n)
	// max(x, 0) keeping NaN: MAXPS returns its second source, x, for NaN.
	m := v.reg()
	VMAXPS(x, v.zero(), m)
	return v.add(m, l)
}

func (v *vm) log(x VecVirtual) VecVirtual {
	var m, k VecVirtual
	if v.s.Masked {
		m, k = v.reg(), v.reg()
		e, em := v.reg(), v.reg()
		VGETMANTPS(U8(3), x, m) // [0.75, 1.5), sign kept (negatives are fixed below)
		VGETEXPPS(x, e)
		VGETEXPPS(m, em)
		VSUBPS(em, e, k) // x = m·2^k
	} else {
		// Denormals: scale by 2^25 first and take 25 off the exponent.
		den := v.cmp(cmpLT, x, cf(0x1p-126))
		xs := v.sel(den, v.mul(x, cf(0x1p25)), x)
		adj := v.sel(den, v.load(cf(25)), v.zero())
		bits := v.reg()
		VPSRLD(U8(23), xs, bits)
		ei := v.reg()
		VPSUBD(c(127), bits, ei) // AVX2 only
		ef := v.reg()
		VCVTDQ2PS(ei, ef)
		mant := v.or(v.and(xs, c(0x007fffff)), cf(1))
		big := v.cmp(0x02, v.load(cf(1.5)), mant) // LE_OS: 1.5 <= mant, as the generic m >= 1.5
		m = v.sel(big, v.mul(mant, cf(0.5)), mant)
		k = v.sub(v.add(ef, v.and(v.load(cf(1)), big.v)), adj)
	}
	s := v.div(v.sub(m, cf(1)), v.add(m, cf(1)))
	z := v.mul(s, s)
	p := v.poly(z, approx.AtanhPoly[:])
	lo := v.fma(v.mul(s, z), p, v.mul(k, cf(approx.Ln2Lo)))
	hi := v.add(v.add(s, s), lo)
	r := v.fma(k, cf(approx.Ln2Hi), hi)
	// Specials: +Inf -> +Inf, 0 -> -Inf, x < 0 or NaN -> NaN.
	r = v.sel(v.cmp(cmpEQ, x, cf(float32(math.Inf(1)))), x, r)
	r = v.sel(v.cmp(cmpEQ, x, v.zero()), v.load(cf(float32(math.Inf(-1)))), r)
	bad := v.cmp(cmpNLE, v.zero(), x) // not(0 <= x): x < 0 or NaN
	return v.sel(bad, v.load(c(0x7fc00000)), r)
}

// The float64 forms (v.s at float64): the algorithms of exp64 and log64 in
// transcend_generic.go, operation for operation.

// scale64 returns y·2^n (n integral, in [-1076, 1024]) rounded once.
// AVX2 has no float64-to-int64 conversion: 2^n1 and 2^n2, n1 = floor(n/2)
// and n2 = n - n1 (both normal), are built from n + 1023 + 1.5·2^52, whose
// low bits are the biased exponent, shifted into place; y·2^n1 is exact and
// the second product rounds once.
func (v *vm) scale64(y, n VecVirtual) VecVirtual {
	d := v.reg()
	if v.s.Masked {
		VSCALEFPD(n, y, d)
		return d
	}
	n1 := v.roundMode(v.mul(n, cd(0.5)), 1)
	n2 := v.sub(n, n1)
	pow := func(k VecVirtual) VecVirtual {
		b, e := v.add(k, cd(1023+0x1.8p52)), v.reg()
		VPSLLQ(U8(52), b, e)
		return e
	}
	return v.mul(v.mul(y, pow(n1)), pow(n2))
}

func (v *vm) poly64(x VecVirtual, c []float64) VecVirtual {
	p := v.load(cd(c[len(c)-1]))
	for i := len(c) - 2; i >= 0; i-- {
		p = v.fma(p, x, cd(c[i]))
	}
	return p
}

func (v *vm) exp64(x VecVirtual) VecVirtual {
	return v.scale64(v.exp64Parts(v.clampMem(x, cd(approx.Exp64Min), cd(approx.Exp64Max))))
}

// exp64Parts returns e^xc as p·2^n before the scaling (xc in [-1400, Exp64Max]).
func (v *vm) exp64Parts(xc VecVirtual) (VecVirtual, VecVirtual) {
	n := v.round(v.mul(xc, cd(approx.Log2E)))
	hi := v.fnma(n, cd(approx.Ln2Hi64), xc) // exact
	lo := v.mul(n, cd(approx.Ln2Lo64))
	r := v.sub(hi, lo)
	q := v.mul(v.mul(r, r), v.poly64(r, approx.Expm1Poly64[:]))
	s := v.add(hi, cd(1))
	e := v.add(v.sub(v.load(cd(1)), s), hi) // 1 + hi = s + e exactly
	return v.add(s, v.add(v.sub(e, lo), q)), n
}

// expm1x64 is expm1x64 of transcend_generic.go (x in [0, 2·Tanh64Max]).
func (v *vm) expm1x64(x VecVirtual) VecVirtual {
	n := v.round(v.mul(x, cd(approx.Log2E)))
	hi := v.fnma(n, cd(approx.Ln2Hi64), x) // exact
	lo := v.mul(n, cd(approx.Ln2Lo64))
	r := v.sub(hi, lo)
	q := v.mul(v.mul(r, r), v.poly64(r, approx.Expm1Poly64[:]))
	u := v.add(hi, v.sub(q, lo))
	t := v.scale64(v.load(cd(1)), n)
	return v.fma(t, u, v.sub(t, cd(1)))
}

func (v *vm) sigmoid64(x VecVirtual) VecVirtual {
	e := v.exp64(v.or(x, cq(1<<63)))
	neg := v.cmp(cmpLT, x, v.zero())
	num := v.sel(neg, e, v.load(cd(1)))
	return v.quoSum(num, nil, e, 1)
}

// quoSum is quoSum of transcend_generic.go: num/(e+c) with the sum's exact
// error (TwoSum) and the FMA remainder correcting num·(1/d).
// lo, the numerator's low part, may be nil (0).
func (v *vm) quoSum(num, lo, e VecVirtual, c float64) VecVirtual {
	d := v.add(e, cd(c))
	bb := v.sub(d, e)
	err := v.add(v.sub(e, v.sub(d, bb)), v.sub(v.load(cd(c)), bb))
	r := v.div(v.load(cd(1)), d)
	t := v.mul(num, r)
	nt := v.xor(t, cq(1<<63))
	res := v.fma(nt, d, num)
	corr := v.fma(nt, err, res)
	if lo != nil {
		corr = v.add(corr, lo)
	}
	return v.fma(corr, r, t)
}

func (v *vm) silu64(x VecVirtual) VecVirtual {
	xc := v.reg()
	VMAXPD(x, v.load(cd(-800)), xc) // NaN passes (MAXPD returns x)
	pp, n := v.exp64Parts(v.or(xc, cq(1<<63)))
	e := v.scale64(pp, n)
	neg := v.cmp(cmpLT, xc, v.zero())
	p := v.mul(xc, e)
	pe := v.fma(xc, e, v.xor(p, cq(1<<63)))
	num := v.sel(neg, p, xc)
	lo := v.sel(neg, pe, v.zero())
	t := v.or(v.quoSum(num, lo, e, 1), v.and(x, cq(1<<63)))
	t = v.sel(v.cmp(cmpLT, x, cd(-708)), v.scale64(v.mul(xc, pp), n), t)
	return v.sel(v.cmp(cmpGT, x, cd(40)), x, t)
}

func (v *vm) tanh64(x VecVirtual) VecVirtual {
	y := v.clampMem(v.and(x, cq(1<<63-1)), cd(0), cd(approx.Tanh64Max))
	e := v.expm1x64(v.add(y, y))
	t := v.quoSum(e, nil, e, 2)
	return v.or(t, v.and(x, cq(1<<63)))
}

// exp64Pair is exp64Pair of transcend_generic.go: e^(d + c), c carried
// into the reduction, dropped where the clamp changed d or c is NaN.
func (v *vm) exp64Pair(d, c VecVirtual) VecVirtual {
	xc := v.clampMem(d, cd(approx.Exp64Min), cd(approx.Exp64Max))
	c = v.sel(v.cmp(cmpEQ, xc, d), c, v.zero())
	c = v.sel(v.cmp(0x07, c, c), c, v.zero()) // ORD_Q: NaN -> 0
	return v.scale64(v.exp64PairParts(xc, c))
}

// exp64PairParts returns e^(d + c) as p·2^n before the scaling (d in
// [-1400, Exp64Max], c below d's ULP).
func (v *vm) exp64PairParts(d, c VecVirtual) (VecVirtual, VecVirtual) {
	n := v.round(v.mul(d, cd(approx.Log2E)))
	hi := v.fnma(n, cd(approx.Ln2Hi64), d) // exact
	lm := v.fnma(n, cd(approx.Ln2Lo64), c)
	r := v.add(hi, lm)
	q := v.mul(v.mul(r, r), v.poly64(r, approx.Expm1Poly64[:]))
	s := v.add(hi, cd(1))
	e := v.add(v.sub(v.load(cd(1)), s), hi) // 1 + hi = s + e exactly
	return v.add(s, v.add(v.add(e, lm), q)), n
}

// sign64 is the sign bit of float64 lanes; neg64 negates.
func (v *vm) sign64(x VecVirtual) VecVirtual { return v.and(x, cq(1<<63)) }
func (v *vm) neg64(x VecVirtual) VecVirtual  { return v.xor(x, cq(1<<63)) }

// max64 is max(x, c) with x passed through where it is NaN (MAXPD returns
// its second source, x, then), as maximumOf(x, c).
func (v *vm) max64(x VecVirtual, c float64) VecVirtual {
	d := v.reg()
	VMAXPD(x, v.load(cd(c)), d)
	return d
}

func (v *vm) softplus64(x VecVirtual) VecVirtual {
	e := v.exp64(v.or(x, cq(1<<63)))
	u := v.add(e, cd(1))
	c := v.sub(e, v.sub(u, cd(1))) // exact
	l := v.add(v.log64(u), v.div(c, u))
	return v.add(v.max64(x, 0), l)
}

// erfRatio64 is erfRatio64 of transcend_generic.go on every lane: both
// rational functions, the quotient of the selected pair; yl may be nil (0).
func (v *vm) erfRatio64(y, yl VecVirtual) VecVirtual {
	z := v.mul(y, y)
	s := v.sub(y, cd(1))
	if yl != nil {
		s = v.add(s, yl)
	}
	small := func() mask { return v.cmp(cmpLT, y, cd(approx.ErfSplit64)) }
	p := v.sel(small(), v.poly64(z, approx.ErfPP64[:]), v.poly64(s, approx.ErfPA64[:]))
	q := v.sel(small(), v.poly64(z, approx.ErfQQ64[:]), v.poly64(s, approx.ErfQA64[:]))
	return v.div(p, q)
}

// erfcExp64 is erfcExp64 of transcend_generic.go: e^(-k·(h + l) - (kHi +
// kLo) + R/S(s)).
func (v *vm) erfcExp64(h, l, s VecVirtual, k, kHi, kLo float64) VecVirtual {
	// The masks are taken where they are used (on AVX2 each holds a register).
	big := func() mask { return v.cmp(cmpGT, s, cd(approx.ErfTailSplit64)) }
	r := v.sel(big(), v.poly64(s, approx.ErfRA64[:]), v.poly64(s, approx.ErfRB64[:]))
	q := v.sel(big(), v.poly64(s, approx.ErfSA64[:]), v.poly64(s, approx.ErfSB64[:]))
	u := v.sub(v.div(r, q), cd(kHi))
	a := v.mul(h, cd(-k))
	d := v.add(a, u)
	bb := v.sub(d, a)
	e := v.add(v.sub(a, v.sub(d, bb)), v.sub(u, bb))
	if k != 1 {
		l = v.mul(l, cd(k))
	}
	c := v.sub(e, l)
	if kLo != 0 {
		c = v.sub(c, cd(kLo))
	}
	return v.exp64Pair(d, c)
}

// square returns t² as h + l exactly.
func (v *vm) square(t VecVirtual) (h, l VecVirtual) {
	h = v.mul(t, t)
	return h, v.fma(t, t, v.neg64(h))
}

func (v *vm) erf64(x VecVirtual) VecVirtual {
	abs := func() VecVirtual { return v.and(x, cq(1<<63-1)) } // taken again where needed
	a := abs()
	r := v.erfRatio64(a, nil)
	small := v.fma(x, r, x)
	mid := v.or(v.add(r, cd(approx.Erx64)), v.sign64(x))
	near := v.sel(v.cmp(cmpLT, a, cd(approx.ErfSplit64)), small, mid)
	t := v.clampMem(abs(), cd(approx.ErfNear64), cd(approx.Erf64Max))
	h, l := v.square(t)
	e := v.erfcExp64(h, l, v.div(v.load(cd(1)), h), 1, 0.5625, 0)
	far := v.or(v.sub(v.load(cd(1)), v.div(e, t)), v.sign64(x))
	return v.sel(v.cmp(cmpLT, abs(), cd(approx.ErfNear64)), near, far)
}

func (v *vm) gelu64(x VecVirtual) VecVirtual {
	// xc, |xc| and y are taken again where needed, and the tail comes first:
	// the register allocator fails on longer-lived values here.
	xcOf := func() VecVirtual { return v.clampMem(x, cd(approx.GELU64Min), cd(approx.GELU64Max)) }
	abs := func() VecVirtual { return v.and(xcOf(), cq(1<<63-1)) }
	yOf := func() VecVirtual { return v.mul(abs(), cd(approx.Sqrt1_2Hi)) }
	th, tl := v.square(v.max64(abs(), 1))
	gTail := v.erfcExp64(th, tl, v.div(v.load(cd(2)), th), 0.5, approx.GELUK64Hi, approx.GELUK64Lo)
	a, y := abs(), yOf()
	yl := v.add(v.fma(a, cd(approx.Sqrt1_2Hi), v.neg64(y)), v.mul(a, cd(approx.Sqrt1_2Lo)))
	r := v.erfRatio64(y, yl)
	small := func() mask { return v.cmp(cmpLT, y, cd(approx.ErfSplit64)) }
	hs := v.sub(v.load(cd(1)), y)
	es := v.sub(v.sub(v.load(cd(1)), hs), y)
	h := v.sel(small(), hs, v.load(cd(1-approx.Erx64)))
	e := v.sel(small(), es, v.zero())
	my := v.sel(small(), y, v.load(cd(1)))
	t := v.sel(small(), yl, v.zero())
	gNear := v.mul(v.sub(h, v.sub(v.fma(my, r, t), e)), cd(0.5))
	near := func() mask { return v.cmp(cmpLT, yOf(), cd(approx.ErfNear64)) }
	g := v.sel(near(), gNear, gTail)
	xc := xcOf()
	m := v.sel(near(), xc, v.or(v.load(cd(1)), v.sign64(xc)))
	neg := v.cmp(cmpLT, xc, v.zero())
	res := v.sel(neg, v.mul(m, g), v.or(v.fma(v.neg64(m), g, xc), v.sign64(xc)))
	return v.sel(v.cmp(cmpGT, x, cd(approx.GELU64Max)), x, res)
}

// geluTanhArg64 is geluTanhArg64 of transcend_generic.go: x·(C1 + C3·x²)
// as a pair.
func (v *vm) geluTanhArg64(x VecVirtual) (vh, vl VecVirtual) {
	x2, x2l := v.square(x)
	th := v.mul(x2, cd(approx.GELUTanhC3Hi))
	tl := v.fma(x2, cd(approx.GELUTanhC3Hi), v.neg64(th))
	kh := v.add(th, cd(approx.GELUTanhC1Hi))
	bb := v.sub(kh, cd(approx.GELUTanhC1Hi))
	ke := v.add(v.sub(v.load(cd(approx.GELUTanhC1Hi)), v.sub(kh, bb)), v.sub(th, bb))
	kl := v.add(ke, v.add(tl, v.add(v.mul(x2l, cd(approx.GELUTanhC3Hi)), v.add(v.mul(x2, cd(approx.GELUTanhC3Lo)), cd(approx.GELUTanhC1Lo)))))
	vh = v.mul(x, kh)
	vl = v.add(v.fma(x, kh, v.neg64(vh)), v.mul(x, kl))
	return vh, vl
}

func (v *vm) geluTanh64(x VecVirtual) VecVirtual {
	xc := v.clampMem(x, cd(approx.GELUTanh64Min), cd(approx.GELU64Max))
	vh, vl := v.geluTanhArg64(xc)
	neg := v.cmp(cmpLT, vh, v.zero())
	d := v.sel(neg, vh, v.neg64(vh))
	c := v.sel(neg, vl, v.neg64(vl))
	pp, n := v.exp64PairParts(d, c)
	e := v.scale64(pp, n)
	p := v.mul(xc, e)
	pe := v.fma(xc, e, v.neg64(p))
	num := v.sel(neg, p, xc)
	lo := v.sel(neg, pe, v.zero())
	t := v.or(v.quoSum(num, lo, e, 1), v.sign64(xc))
	t = v.sel(v.cmp(cmpLT, vh, cd(-708)), v.scale64(v.mul(xc, pp), n), t)
	return v.sel(v.cmp(cmpGT, x, cd(approx.GELU64Max)), x, t)
}

func (v *vm) elu64(x VecVirtual) VecVirtual {
	pos := v.cmp(cmpGT, x, v.zero())
	return v.sel(pos, x, v.mul(v.expm1x64(v.max64(x, approx.ELU64Min)), v.alpha))
}

func (v *vm) log64(x VecVirtual) VecVirtual {
	var m1, e1 VecVirtual // x = m1·2^e1, m1 in [1, 2)
	var adj VecVirtual    // what the denormal prescaling added to e1 (AVX2)
	if v.s.Masked {
		m1, e1 = v.reg(), v.reg()
		VGETMANTPD(U8(0), x, m1)
		VGETEXPPD(x, e1)
	} else {
		// Denormals: scale by 2^54 first and take 54 off the exponent.
		den := v.cmp(cmpLT, x, cd(0x1p-1022))
		xs := v.sel(den, v.mul(x, cd(0x1p54)), x)
		adj = v.sel(den, v.load(cd(54)), v.zero())
		b := v.reg()
		VPSRLQ(U8(52), xs, b)
		// 2^52 + b as a float64, less 2^52 + 1023: the unbiased exponent.
		e1 = v.sub(v.or(b, cq(0x4330000000000000)), cd(0x1p52+1023))
		m1 = v.or(v.and(xs, cq(0x000fffffffffffff)), cd(1))
	}
	big := v.cmp(cmpGE, m1, cd(math.Sqrt2))
	m := v.sel(big, v.mul(m1, cd(0.5)), m1)
	var k VecVirtual
	if v.s.Masked {
		k = v.sel(big, v.add(e1, cd(1)), e1)
	} else {
		k = v.sub(v.add(e1, v.and(v.load(cd(1)), big.v)), adj)
	}
	f := v.sub(m, cd(1)) // exact
	s := v.div(f, v.add(f, cd(2)))
	z := v.mul(s, s)
	r := v.mul(z, v.poly64(z, approx.Log1pPoly64[:]))
	h := v.mul(v.mul(f, cd(0.5)), f)
	t := v.fma(s, v.add(h, r), v.mul(k, cd(approx.Ln2Lo64)))
	res := v.fma(k, cd(approx.Ln2Hi64), v.sub(f, v.sub(h, t)))
	// Specials: +Inf -> +Inf, ±0 -> -Inf, x < 0 or NaN -> NaN.
	res = v.sel(v.cmp(cmpEQ, x, cd(math.Inf(1))), x, res)
	res = v.sel(v.cmp(cmpEQ, x, v.zero()), v.load(cd(math.Inf(-1))), res)
	bad := v.cmp(cmpNLE, v.zero(), x) // not(0 <= x)
	return v.sel(bad, v.load(cd(math.NaN())), res)
}

func (v *vm) leakyReLU(x VecVirtual) VecVirtual {
	pos := v.cmp(cmpGT, x, v.zero())
	return v.sel(pos, x, v.mul(x, v.alpha))
}

func (v *vm) elu(x VecVirtual) VecVirtual {
	pos := v.cmp(cmpGT, x, v.zero())
	return v.sel(pos, x, v.mul(v.expm1(x), v.alpha))
}

// unary writes f over dst, x (see loop).
func unary(v *vm, name, doc string, f func(VecVirtual) VecVirtual) {
	kernel(v, name, "func(dst, x []T)", doc, nil, f)
}

// unaryRef is unary for a kernel whose generic reference is ref (a
// function and its file) rather than name32 in transcend_generic.go.
func unaryRef(v *vm, name, doc, ref string, f func(VecVirtual) VecVirtual) {
	kernelRef(v, name, "func(dst, x []T)", doc, ref, nil, f)
}

func withAlpha(v *vm, name, doc string, f func(VecVirtual) VecVirtual) {
	kernel(v, name, "func(dst, x []T, alpha T)", doc, func() {
		x := XMM()
		Load(Param("alpha"), x)
		v.alpha = v.reg()
		x86.P(v.s, VBROADCASTSS, VBROADCASTSD)(x, v.alpha)
	}, f)
}

func requires(s x86.ISA) string {
	if s.Masked {
		return "AVX-512 F, DQ, VL"
	}
	return "AVX2, FMA"
}

func kernel(v *vm, name, sig, doc string, setup func(), f func(VecVirtual) VecVirtual) {
	kernelRef(v, name, sig, doc, name+fmt.Sprint(v.s.Bits())+" in transcend_generic.go", setup, f)
}

func kernelRef(v *vm, name, sig, doc, ref string, setup func(), f func(VecVirtual) VecVirtual) {
	s := v.s
	fn := name + s.Suffix() + s.Name
	TEXT(fn, NOSPLIT, s.Typed(sig))
	Pragma("noescape")
	Doc(fn+" sets dst[i] = "+doc+" (see "+ref+").", "Requires: "+requires(s)+".")
	Load(Param("dst").Base(), RDI)
	Load(Param("x").Base(), RSI)
	Load(Param("dst").Len(), RCX)
	if setup != nil {
		setup()
	}
	v.loop(true, func(x VecVirtual, _ *mask) VecVirtual { return f(x) })
	VZEROUPPER()
	RET()
}

// loop runs body over the CX floats at RSI, a vector an iteration (the
// out-of-order core overlaps iterations; the bodies are long), then once
// over the tail with masked loads; body gets the tail mask there (nil in the
// loop). With store, results go to RDI (masked in the tail).
func (v *vm) loop(store bool, body func(x VecVirtual, m *mask) VecVirtual) {
	s := v.s
	movu := x86.P(s, VMOVUPS, VMOVUPD)
	Label("loop")
	CMPQ(RCX, U32(s.Lanes))
	JB(LabelRef("tail"))
	x := v.reg()
	movu(Mem{Base: RSI}, x)
	y := body(x, nil)
	if store {
		movu(y, Mem{Base: RDI})
		ADDQ(U32(s.Bytes()), RDI)
	}
	ADDQ(U32(s.Bytes()), RSI)
	SUBQ(U32(s.Lanes), RCX)
	JMP(LabelRef("loop"))
	Label("tail")
	TESTQ(RCX, RCX)
	JE(LabelRef("done"))
	m := v.tailMask()
	yt := body(v.maskedLoad(m, Mem{Base: RSI}), &m)
	if store {
		v.maskedStore(m, yt, Mem{Base: RDI})
	}
	Label("done")
}

// tailMask returns a mask of the low CX lanes (CX < lanes); clobbers AX.
func (v *vm) tailMask() mask {
	if v.s.Masked {
		k := K()
		x86.TailMask(k)
		return mask{k: k}
	}
	x := XMM()
	n, m := v.reg(), v.reg()
	if v.s.Double() {
		VMOVQ(RCX, x)
		VPBROADCASTQ(x, n)
		VPCMPGTQ(iota64(), n, m) // n > lane index
		return mask{v: m}
	}
	MOVL(ECX, EAX)
	VMOVD(EAX, x)
	VPBROADCASTD(x, n)
	VPCMPGTD(iota(), n, m) // n > lane index
	return mask{v: m}
}

// maskedLoad loads the masked lanes (others 0) without touching memory
// outside them.
func (v *vm) maskedLoad(m mask, src Mem) VecVirtual {
	d := v.reg()
	if v.s.Masked {
		x86.P(v.s, VMOVUPS_Z, VMOVUPD_Z)(src, m.k, d)
	} else {
		x86.P(v.s, VMASKMOVPS, VMASKMOVPD)(src, m.v, d)
	}
	return d
}

func (v *vm) maskedStore(m mask, x VecVirtual, dst Mem) {
	if v.s.Masked {
		x86.P(v.s, VMOVUPS, VMOVUPD)(x, m.k, dst)
	} else {
		x86.P(v.s, VMASKMOVPS, VMASKMOVPD)(x, m.v, dst)
	}
}

// expSum writes expSum (store: dst[i] = e^(x[i]-shift)) or sumExp (only the
// sum): x[i]-shift is split into its rounded value and exact error (TwoSum,
// the error zeroed where it is NaN), and the results are summed in float64.
func expSum(v *vm, store bool) {
	s := v.s
	name, sig := "expSum", "func(dst, x []T, shift T) float64"
	if !store {
		name, sig = "sumExp", "func(x []T, shift T) float64"
	}
	name += s.Suffix() + s.Name
	generic := "expSumGeneric" + map[bool]string{false: "", true: "64"}[s.Double()]
	TEXT(name, NOSPLIT, s.Typed(sig))
	Pragma("noescape")
	if store {
		Doc(name+" sets dst[i] = e^(x[i]-shift) and returns Σ dst[i] in float64 (see "+generic+").", "Requires: "+requires(s)+".")
		Load(Param("dst").Base(), RDI)
	} else {
		Doc(name+" returns Σ e^(x[i]-shift) in float64 (see "+generic+").", "Requires: "+requires(s)+".")
	}
	Load(Param("x").Base(), RSI)
	Load(Param("x").Len(), RCX)
	xs := XMM()
	Load(Param("shift"), xs)
	negShift := v.reg()
	if s.Double() {
		VBROADCASTSD(xs, negShift)
		negShift = v.xor(negShift, cq(1<<63))
	} else {
		VBROADCASTSS(xs, negShift)
		negShift = v.xor(negShift, c(1<<31))
	}
	acc0, acc1 := v.reg(), v.reg()
	VXORPD(acc0, acc0, acc0)
	VXORPD(acc1, acc1, acc1)
	body := func(x VecVirtual, m *mask) VecVirtual {
		d := v.add(x, negShift)
		bb := v.sub(d, x)
		lo := v.add(v.sub(x, v.sub(d, bb)), v.sub(negShift, bb))
		var e VecVirtual
		if s.Double() {
			e = v.exp64Pair(d, lo)
		} else {
			n, q := v.expPair(d, lo)
			e = v.scale(v.add(q, cf(1)), n)
		}
		if m != nil {
			e = v.sel(*m, e, v.zero())
		}
		if s.Double() {
			VADDPD(e, acc0, acc0)
		} else {
			v.accumulate(e, acc0, acc1)
		}
		return e
	}
	v.loop(store, body)
	// Fold the two float64 accumulators into one scalar.
	VADDPD(acc1, acc0, acc0)
	h := VecVirtual(acc0)
	if s.Masked {
		h = v.highHalf(acc0)
		VADDPD(h, v.low(acc0), h)
	}
	x := XMM()
	VEXTRACTF128(U8(1), h, x)
	VADDPD(x, h.AsX(), x)
	y := XMM()
	VUNPCKHPD(x, x, y)
	VADDSD(y, x, x)
	VZEROUPPER()
	Store(x, ReturnIndex(0))
	RET()
}

// accumulate adds the float32 lanes of e, widened, to the float64
// accumulators acc0 (low half) and acc1 (high half).
func (v *vm) accumulate(e, acc0, acc1 VecVirtual) {
	lo, hi := v.widen(e)
	VADDPD(lo, acc0, acc0)
	VADDPD(hi, acc1, acc1)
}

// Half-vector helpers: a full vector of float32 holds as many bits as two
// of float64, half of it is a ymm (AVX-512) or an xmm (AVX2).

// half returns a new half-width register.
func (v *vm) half() VecVirtual {
	if v.s.Masked {
		return YMM()
	}
	return XMM()
}

// low is the low half of r.
func (v *vm) low(r VecVirtual) Register {
	if v.s.Masked {
		return r.AsY()
	}
	return r.AsX()
}

// highHalf returns the high half of r in a new half-width register.
func (v *vm) highHalf(r VecVirtual) VecVirtual {
	h := v.half()
	if v.s.Masked {
		VEXTRACTF64X4(U8(1), r, h)
	} else {
		VEXTRACTF128(U8(1), r, h)
	}
	return h
}

// insertHigh writes the half h into the high half of r.
func (v *vm) insertHigh(h, r VecVirtual) {
	if v.s.Masked {
		VINSERTF64X4(U8(1), h, r, r)
	} else {
		VINSERTF128(U8(1), h, r, r)
	}
}

// widen converts the float32 lanes of x into two vectors of float64.
func (v *vm) widen(x VecVirtual) (lo, hi VecVirtual) {
	h := v.highHalf(x)
	lo, hi = v.reg(), v.reg()
	VCVTPS2PD(v.low(x), lo)
	VCVTPS2PD(h, hi)
	return lo, hi
}

// narrow rounds the float64 lanes of w to float32 into the half dst.
func (v *vm) narrow(w VecVirtual, dst Op) {
	if v.s.Masked {
		VCVTPD2PS(w, dst)
	} else {
		VCVTPD2PSY(w, dst)
	}
}
