// Command optim writes the amd64 optimizer kernels of package simd
// (simd/optim_amd64.s) and their Go declarations (simd/optim_stubs_amd64.go).
//
// adamAVX512 and adamAVX2 are Adam's update of one block in a single pass:
// the moments, the denominator and the parameter, each element loaded and
// stored once. They round every operation where the separate kernels that
// compose the update do (Scale, then the fused Axpy; Mul; Sqrt, Scale,
// AddScalar, Div, the fused Axpy), so their results are those of the
// composition bit for bit: only the passes over memory go.
package main

//go:generate go run . -out ../../../simd/optim_amd64.s -stubs ../../../simd/optim_stubs_amd64.go -pkg simd

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/x86"
)

func main() {
	ConstraintExpr("!purego")
	for _, s := range x86.Levels {
		adam(s)
	}
	Generate()
}

// The constants' registers: 9..15, below 16 for AVX2.
const (
	cBeta1 = 9 + iota
	cA1
	cBeta2
	cA2
	cInvSqrtBC2
	cEps
	cNegStep
)

func adam(s x86.ISA) {
	name := "adam" + s.Name
	TEXT(name, NOSPLIT, "func(p, g, m, v []float32, beta1, a1, beta2, a2, invSqrtBC2, eps, negStep float32)")
	Pragma("noescape")
	Doc(name+" sets, for i < len(p), m[i] = fma(a1, g[i], m[i]·beta1),",
		"v[i] = fma(a2, g[i]·g[i], v[i]·beta2) and",
		"p[i] = fma(negStep, m[i] / (√v[i]·invSqrtBC2 + eps), p[i]), each operation rounded.",
		"Requires: "+requires(s)+".")
	Load(Param("p").Base(), RDI)
	Load(Param("p").Len(), RCX)
	Load(Param("g").Base(), RSI)
	Load(Param("m").Base(), RDX)
	Load(Param("v").Base(), R8)
	for i, name := range []string{"beta1", "a1", "beta2", "a2", "invSqrtBC2", "eps", "negStep"} {
		s.BroadcastParam(name, s.V(cBeta1+i))
	}

	// One vector (or one element, in AVX2's tail) at width w: g, m, v, p
	// and the scratch t in registers 0..4.
	update := func(w x86.Width, _ int) {
		g, m, v, p, t := w.R(0), w.R(1), w.R(2), w.R(3), w.R(4)
		c := func(i int) VecPhysical { return w.R(i) }
		// AVX2's tail runs the packed forms on the X registers that its
		// VMOVSS loads fill (the upper lanes zero, never stored), as the
		// elementwise kernels' tails do.
		mul, add, div, fma, sqrt := VMULPS, VADDPS, VDIVPS, VFMADD231PS, VSQRTPS
		load := func(base GPPhysical, r VecPhysical) { w.Load(x86.At(base, 0), r) }
		store := func(r VecPhysical, base GPPhysical) { w.Store(r, x86.At(base, 0)) }
		load(RSI, g)
		load(RDX, m)
		load(R8, v)
		load(RDI, p)
		mul(c(cBeta1), m, m) // Scale(m, m, beta1)
		fma(g, c(cA1), m)    // Axpy(m, a1, g)
		mul(g, g, t)         // Mul(t, g, g)
		mul(c(cBeta2), v, v) // Scale(v, v, beta2)
		fma(t, c(cA2), v)    // Axpy(v, a2, t)
		store(m, RDX)
		store(v, R8)
		sqrt(v, t)
		mul(c(cInvSqrtBC2), t, t) // Scale(t, t, invSqrtBC2)
		add(c(cEps), t, t)        // AddScalar(t, t, eps)
		div(t, m, t)              // Div(t, m, t): t = m / t
		fma(t, c(cNegStep), p)    // Axpy(p, negStep, t)
		store(p, RDI)
	}
	step := func(n int) {
		for _, r := range []GPPhysical{RDI, RSI, RDX, R8} {
			ADDQ(U32(n), r)
		}
	}
	s.Loop("", 1, update, step, func() { s.ElementTail("scalar", update, step) })
	VZEROUPPER()
	RET()
}

func requires(s x86.ISA) string {
	if s.Masked {
		return "AVX-512 F"
	}
	return "AVX2, FMA"
}
