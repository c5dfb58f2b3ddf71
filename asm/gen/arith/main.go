// Command arith writes the amd64 elementwise kernels of package simd
// (simd/arith_amd64.s) and their Go declarations (simd/arith_stubs_amd64.go).
//
// Every kernel is one loop shape (x86.ISA.Loop): blocks of four vectors, then
// single vectors, then a tail of fewer than one vector (x86.ISA.ElementTail),
// which AVX-512 handles with a k-masked load, operation and store and AVX2
// with scalar VEX instructions. Inputs are loaded before dst is stored, so dst may be an input.
//
// Each kernel is written once and generated for both element widths: float32
// (addAVX512) and float64 (addF64AVX512, for AddF64); the width picks the
// PS or PD form of each instruction (x86.ISA.P).
package main

//go:generate go run . -out ../../../simd/arith_amd64.s -stubs ../../../simd/arith_stubs_amd64.go -pkg simd

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/elem"
	"github.com/lanesgo/lanes/asm/gen/internal/x86"
)

// op computes one vector: a and b are the inputs (b unused by unary ops), out is
// where the result should go and tmp is scratch that may alias b. It returns the
// register holding the result. Constants live in registers 12..15.
type op func(w x86.Width, a, b, out, tmp VecPhysical) VecPhysical

// kernel describes one elementwise kernel.
type kernel struct {
	name   string          // Go name prefix: add -> addAVX512, addAVX2, addF64AVX512
	sig    string          // Go signature, with T for the element type
	inputs int             // 1 or 2 slices besides dst (dst is the first parameter)
	doc    string          // with N for the width: maximumN is maximum32 or maximum64
	setup  func(s x86.ISA) // loads constants into registers 12..15
	op     op
}

const binary = "func(dst, a, b []T)"

// kernels is the family, in the order of simd/arith.go.
var kernels = []kernel{
	{name: "add", sig: binary, inputs: 2, doc: "dst[i] = a[i] + b[i]", op: vec3(VADDPS, VADDPD)},
	{name: "sub", sig: binary, inputs: 2, doc: "dst[i] = a[i] - b[i]", op: vec3(VSUBPS, VSUBPD)},
	{name: "mul", sig: binary, inputs: 2, doc: "dst[i] = a[i] * b[i]", op: vec3(VMULPS, VMULPD)},
	{name: "div", sig: binary, inputs: 2, doc: "dst[i] = a[i] / b[i]", op: vec3(VDIVPS, VDIVPD)},
	{name: "maximum", sig: binary, inputs: 2, doc: "dst[i] = maximumN(a[i], b[i])", op: nanAware(VMAXPS, VMAXPD)},
	{name: "minimum", sig: binary, inputs: 2, doc: "dst[i] = minimumN(a[i], b[i])", op: nanAware(VMINPS, VMINPD)},
	{
		name: "addScalar", sig: "func(dst, a []T, s T)", inputs: 1, doc: "dst[i] = a[i] + s",
		setup: func(s x86.ISA) { s.BroadcastParam("s", s.V(15)) },
		op:    withConst(VADDPS, VADDPD, 15),
	},
	{
		name: "scale", sig: "func(dst, a []T, s T)", inputs: 1, doc: "dst[i] = a[i] * s",
		setup: func(s x86.ISA) { s.BroadcastParam("s", s.V(15)) },
		op:    withConst(VMULPS, VMULPD, 15),
	},
	{
		name: "axpy", sig: "func(y []T, alpha T, x []T)", inputs: 2, doc: "y[i] += alpha * x[i], fused",
		setup: func(s x86.ISA) { s.BroadcastParam("alpha", s.V(15)) },
		op: func(w x86.Width, y, x, out, tmp VecPhysical) VecPhysical {
			x86.P(w.ISA, VFMADD231PS, VFMADD231PD)(x, w.R(15), y)
			return y
		},
	},
	{
		name: "abs", sig: "func(dst, x []T)", inputs: 1, doc: "dst[i] = |x[i]| (sign bit cleared)",
		setup: func(s x86.ISA) { s.BroadcastBits(s.SignBit()-1, s.V(15)) },
		op:    withConst(VANDPS, VANDPD, 15),
	},
	{
		name: "neg", sig: "func(dst, x []T)", inputs: 1, doc: "dst[i] = -x[i] (sign bit flipped)",
		setup: func(s x86.ISA) { s.BroadcastBits(s.SignBit(), s.V(15)) },
		op:    withConst(VXORPS, VXORPD, 15),
	},
	{
		name: "sqrt", sig: "func(dst, x []T)", inputs: 1, doc: "dst[i] = sqrt(x[i]), correctly rounded",
		op: func(w x86.Width, a, b, out, tmp VecPhysical) VecPhysical {
			x86.P(w.ISA, VSQRTPS, VSQRTPD)(a, a)
			return a
		},
	},
	{
		name: "relu", sig: "func(dst, x []T)", inputs: 1, doc: "dst[i] = maximumN(x[i], +0)",
		setup: func(s x86.ISA) { VXORPS(s.V(15), s.V(15), s.V(15)) },
		op: func(w x86.Width, a, b, out, tmp VecPhysical) VecPhysical {
			x86.P(w.ISA, VMAXPS, VMAXPD)(w.R(15), a, out)
			w.BlendNaN(a, out, tmp)
			return out
		},
	},
	{
		name: "clamp", sig: "func(dst, x []T, lo, hi T)", inputs: 1,
		doc: "dst[i] = minimumN(maximumN(x[i], lo), hi)",
		setup: func(s x86.ISA) {
			s.BroadcastParam("lo", s.V(14))
			s.BroadcastParam("hi", s.V(15))
		},
		op: func(w x86.Width, a, b, out, tmp VecPhysical) VecPhysical {
			x86.P(w.ISA, VMAXPS, VMAXPD)(w.R(14), a, out) // a > lo ? a : lo
			x86.P(w.ISA, VMINPS, VMINPD)(w.R(15), out, out)
			w.BlendNaN(a, out, tmp) // only a NaN x gives a NaN result
			return out
		},
	},
}

func main() {
	ConstraintExpr("!purego")
	for _, t := range elem.Types {
		for _, k := range kernels {
			for _, s := range x86.Levels {
				generate(k, s.At(t))
			}
		}
	}
	Generate()
}

// vec3 is a plain two-input vector instruction: out = a OP b.
func vec3(single, double func(...Op)) op {
	return func(w x86.Width, a, b, out, tmp VecPhysical) VecPhysical {
		x86.P(w.ISA, single, double)(b, a, a)
		return a
	}
}

// withConst is out = a OP constant register c.
func withConst(single, double func(...Op), c int) op {
	return func(w x86.Width, a, b, out, tmp VecPhysical) VecPhysical {
		x86.P(w.ISA, single, double)(w.R(c), a, a)
		return a
	}
}

// nanAware is Maximum/Minimum: the x86 MAXPS/MINPS a,b returns b when either is
// NaN, so lanes where a is NaN are blended back to a. With Intel's operand order
// MAXPS(src1=a, src2=b) = a > b ? a : b, exactly maximum32 except for a NaN a.
func nanAware(single, double func(...Op)) op {
	return func(w x86.Width, a, b, out, tmp VecPhysical) VecPhysical {
		x86.P(w.ISA, single, double)(b, a, out)
		w.BlendNaN(a, out, tmp)
		return out
	}
}

func generate(k kernel, s x86.ISA) {
	name := k.name + s.Suffix() + s.Name
	TEXT(name, NOSPLIT, s.Typed(k.sig))
	Pragma("noescape")
	Doc(name+" sets "+s.Typed(k.doc)+".", "Requires: "+requires(s)+".")

	dst, a, b := RDI, RSI, RDX
	first := ParamIndex(0)
	Load(first.Base(), dst)
	Load(first.Len(), RCX)
	switch {
	case k.name == "axpy": // (y, alpha, x): y is both dst and the first input
		Load(first.Base(), a)
		Load(Param("x").Base(), b)
	default:
		Load(ParamIndex(1).Base(), a)
		if k.inputs == 2 {
			Load(ParamIndex(2).Base(), b)
		}
	}
	if k.setup != nil {
		k.setup(s)
	}

	// Vector i of a block at width w: input a in registers 0..3, input b in
	// 4..7, results in 8..11 (scratch aliases b), constants in 12..15.
	compute := func(w x86.Width, i int) VecPhysical {
		ra, rb := w.R(i), w.R(4+i)
		w.Load(x86.At(a, i*s.Bytes()), ra)
		if k.inputs == 2 {
			w.Load(x86.At(b, i*s.Bytes()), rb)
		}
		return k.op(w, ra, rb, w.R(8+i), w.R(4+i))
	}
	// body computes vector i of a block and stores it.
	body := func(w x86.Width, i int) { w.Store(compute(w, i), x86.At(dst, i*s.Bytes())) }
	step := func(n int) {
		ADDQ(U32(n), dst)
		ADDQ(U32(n), a)
		if k.inputs == 2 {
			ADDQ(U32(n), b)
		}
	}

	advance := func(r GPPhysical) {
		sc := uint8(s.Size())
		LEAQ(Mem{Base: dst, Index: r, Scale: sc}, dst)
		LEAQ(Mem{Base: a, Index: r, Scale: sc}, a)
		if k.inputs == 2 {
			LEAQ(Mem{Base: b, Index: r, Scale: sc}, b)
		}
	}
	streaming(s, dst, compute, body, step, advance)
	if s.Masked {
		// The head's jumps go to the block loop's own label: see x86.Align.
		maskedHead(s, dst, "blocks", body, advance)
	}
	s.Loop("", 4, body, step, func() { s.ElementTail("scalar", body, step) })
	VZEROUPPER()
	RET()
}

// streamMin is the length from which results bypass the caches with
// non-temporal stores, like the runtime's memmove from 1 MiB on: a destination
// of 4 MiB or more would only evict the inputs, and skipping the read for
// ownership of dst saves a quarter of the memory traffic of a binary op.
const streamMin = 1 << 20

// streaming emits, for n >= streamMin, a head that aligns dst to the vector
// size, then blocks of four vectors stored with VMOVNTPS, then SFENCE; the
// ordinary loop that follows finishes the rest. advance(r) moves every pointer
// by r elements; compute(w, i) is vector i of a block, body(w, i) computes
// and stores it.
func streaming(s x86.ISA, dst GPPhysical, compute func(x86.Width, int) VecPhysical, body func(x86.Width, int), step func(int), advance func(GPPhysical)) {
	// Without a masked head, shorter lengths go straight to the block
	// loop's label: a jump to its alignment padding is what x86.Align
	// forbids.
	cached := "blocks"
	if s.Masked {
		cached = "cached"
	}
	CMPQ(RCX, U32(streamMin))
	JB(LabelRef(cached))
	if s.Masked {
		maskedHead(s, dst, "aligned", body, advance)
		Label("aligned")
	} else {
		// R9 = elements before dst is aligned (dst is aligned to its element size).
		MOVQ(dst, R9)
		NEGQ(R9)
		ANDQ(U32(s.Bytes()-1), R9)
		SHRQ(U8(s.Shift()), R9)
		JE(LabelRef("aligned"))
		SUBQ(R9, RCX)
		s.Elements("head", R9, body, step)
		Label("aligned")
	}
	Label("stream")
	CMPQ(RCX, U32(4*s.Lanes))
	JB(LabelRef("streamed"))
	for i := 0; i < 4; i++ {
		x86.P(s, VMOVNTPS, VMOVNTPD)(compute(s.Full(x86.KReg(2+i)), i), x86.At(dst, i*s.Bytes()))
	}
	step(4 * s.Bytes())
	SUBQ(U32(4*s.Lanes), RCX)
	JMP(LabelRef("stream"))
	Label("streamed")
	SFENCE()
	if s.Masked {
		Label("cached")
	}
}

// maskedHead (AVX-512) computes the elements before dst's next 64-byte
// boundary with one k-masked vector (K1 holds their lanes) and advances RCX
// and the pointers past them, then falls through. The streaming
// loop needs it for VMOVNTPS; the cached loop, so that its stores and (for
// inputs that share dst's offset) its loads never straddle two cache lines,
// which on L1-resident data had cost up to half the speed (the reductions'
// alignHead in asm/gen/reduce measures it). Lengths shorter than the head,
// and an aligned dst, skip it by jumping to label, which the caller places
// after the head. body(w, 0) computes and stores the vector at width w.
// Clobbers AX and R9.
func maskedHead(s x86.ISA, dst GPPhysical, label string, body func(x86.Width, int), advance func(GPPhysical)) {
	MOVQ(dst, R9)
	NEGQ(R9)
	ANDQ(U8(63), R9)
	SHRQ(U8(s.Shift()), R9) // elements before the boundary: 0..lanes-1
	JE(LabelRef(label))
	CMPQ(RCX, R9)
	JB(LabelRef(label))
	MOVL(U32(0xffffffff), EAX)
	BZHIL(R9L, EAX, EAX) // the low R9 bits
	KMOVW(EAX, x86.KReg(1))
	body(s.Partial(x86.KReg(1), x86.KReg(2)), 0)
	SUBQ(R9, RCX)
	advance(R9)
}

func requires(s x86.ISA) string {
	if s.Masked {
		return "AVX-512 F, DQ, VL"
	}
	return "AVX2, FMA"
}
