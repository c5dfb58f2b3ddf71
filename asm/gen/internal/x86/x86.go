// Package x86 holds what the amd64 generators share: the vector levels, their
// register files and the loop shapes every elementwise and reduction kernel uses.
package x86

import (
	"fmt"

	"github.com/lanesgo/lanes/asm/gen/internal/elem"
	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	. "github.com/mmcloughlin/avo/reg"
)

// ISA is one amd64 vector level at one element width.
type ISA struct {
	Name      string // kernel name suffix, as dispatch names the level in Go: AVX512, AVX2
	Lanes     int    // elements per vector: float32 lanes, or float64 lanes after F64
	Masked    bool   // AVX-512: tails and blends use k mask registers
	elem.Type        // the element type: float32 unless F64
}

var (
	AVX512 = ISA{Name: "AVX512", Lanes: 16, Masked: true}
	AVX2   = ISA{Name: "AVX2", Lanes: 8}
	// Levels lists the levels every family is generated for.
	Levels = []ISA{AVX512, AVX2}
)

// Registers is the number of vector registers: 32 with AVX-512, 16 with AVX2.
func (s ISA) Registers() int {
	if s.Masked {
		return 32
	}
	return 16
}

// F64 is the level with float64 elements: half the lanes, the same vectors.
// Families generate each kernel for both widths; instructions that depend on
// the width are picked with P.
func (s ISA) F64() ISA {
	s.Lanes /= 2
	s.Type = elem.F64
	return s
}

// At returns the level with elements of type t.
func (s ISA) At(t elem.Type) ISA {
	if t.Double() && !s.Double() {
		return s.F64()
	}
	return s
}

// Bytes is the vector size in bytes.
func (s ISA) Bytes() int { return s.Size() * s.Lanes }

// P picks the single or the double form of an instruction for the element
// width of s: P(s, VADDPS, VADDPD), P(s, VMOVSS, VMOVSD).
func P[F any](s ISA, single, double F) F {
	if s.Double() {
		return double
	}
	return single
}

// V returns vector register i at the level's full width.
func (s ISA) V(i int) reg.VecPhysical {
	if s.Masked {
		return zmm[i]
	}
	return ymm[i]
}

// X returns the 128-bit register i (scalar tails of AVX2 kernels use it).
func X(i int) reg.VecPhysical { return xmm[i] }

// Y returns the 256-bit register i.
func Y(i int) reg.VecPhysical { return ymm[i] }

// KReg returns mask register i.
func KReg(i int) reg.OpmaskPhysical { return kregs[i] }

var (
	xmm   = []reg.VecPhysical{reg.X0, reg.X1, reg.X2, reg.X3, reg.X4, reg.X5, reg.X6, reg.X7, reg.X8, reg.X9, reg.X10, reg.X11, reg.X12, reg.X13, reg.X14, reg.X15, reg.X16, reg.X17, reg.X18, reg.X19, reg.X20, reg.X21, reg.X22, reg.X23, reg.X24, reg.X25, reg.X26, reg.X27, reg.X28, reg.X29, reg.X30, reg.X31}
	ymm   = []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7, reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15, reg.Y16, reg.Y17, reg.Y18, reg.Y19, reg.Y20, reg.Y21, reg.Y22, reg.Y23, reg.Y24, reg.Y25, reg.Y26, reg.Y27, reg.Y28, reg.Y29, reg.Y30, reg.Y31}
	zmm   = []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7, reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15, reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23, reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31}
	kregs = []reg.OpmaskPhysical{reg.K0, reg.K1, reg.K2, reg.K3, reg.K4, reg.K5, reg.K6, reg.K7}
)

// Width is a register file at the width a piece of code works at: the full
// vector in main loops, XMM in the scalar tails of AVX2 kernels.
type Width struct {
	ISA
	R      func(i int) reg.VecPhysical
	Scalar bool // one element per register (AVX2 tails)
	Mask   reg.OpmaskPhysical
	Part   reg.OpmaskPhysical // AVX-512 tails and heads: the lanes Load and Store touch; nil for whole vectors
}

// Full returns the full-width register file; mask is the k register blends may use.
func (s ISA) Full(mask reg.OpmaskPhysical) Width { return Width{ISA: s, R: s.V, Mask: mask} }

// Partial returns the full-width register file of the lanes of k register
// part (AVX-512 tails and heads); mask is the k register blends may use.
func (s ISA) Partial(part, mask reg.OpmaskPhysical) Width {
	w := s.Full(mask)
	w.Part = part
	return w
}

// Tail returns the scalar register file of AVX2 tails.
func (s ISA) Tail() Width { return Width{ISA: s, R: X, Scalar: true} }

// Load fills r from m at width w: a vector, one element (Scalar) or the
// lanes of Part; the other lanes are zeroed (Scalar, Part).
func (w Width) Load(m Mem, r reg.VecPhysical) {
	switch {
	case w.Part != nil:
		P(w.ISA, VMOVUPS_Z, VMOVUPD_Z)(m, w.Part, r)
	case w.Scalar:
		P(w.ISA, VMOVSS, VMOVSD)(m, r)
	default:
		P(w.ISA, VMOVUPS, VMOVUPD)(m, r)
	}
}

// Store writes r to m at width w: a vector, one element (Scalar) or the
// lanes of Part, nothing of m beyond them.
func (w Width) Store(r reg.VecPhysical, m Mem) {
	switch {
	case w.Part != nil:
		P(w.ISA, VMOVUPS, VMOVUPD)(r, w.Part, m)
	case w.Scalar:
		P(w.ISA, VMOVSS, VMOVSD)(r, m)
	default:
		P(w.ISA, VMOVUPS, VMOVUPD)(r, m)
	}
}

// ElementTail emits the tail of an elementwise Loop (its tail argument): the
// n < lanes elements left (n in CX, n > 0) go through body, Loop's body, as
// vector 0 of a block, so body must load and store with w.Load and w.Store.
// AVX-512 runs it once, at s.Partial(K1, K2) with K1 the low n lanes
// (clobbering AX); AVX2 on each element, in s.Elements with label and CX.
func (s ISA) ElementTail(label string, body func(w Width, i int), step func(bytes int)) {
	if s.Masked {
		TailMask(KReg(1))
		body(s.Partial(KReg(1), KReg(2)), 0)
		return
	}
	s.Elements(label, RCX, body, step)
}

// Elements emits a loop, labelled label, over the count (> 0) elements that
// the register count holds, counting it down to 0: body(s.Tail(), 0)
// handles one element, then step(bytes) advances the pointers past it.
func (s ISA) Elements(label string, count reg.GPPhysical, body func(w Width, i int), step func(bytes int)) {
	Label(label)
	body(s.Tail(), 0)
	step(s.Size())
	DECQ(count)
	JNE(LabelRef(label))
}

// BroadcastBits fills register dst with the pattern bits (32 or 64 bits,
// the element width) in every lane.
func (s ISA) BroadcastBits(bits uint64, dst reg.VecPhysical) {
	x := X(regIndex(dst))
	if s.Double() {
		MOVQ(U64(bits), RAX)
		VMOVQ(RAX, x)
		VBROADCASTSD(x, dst)
		return
	}
	MOVL(U32(uint32(bits)), EAX)
	VMOVD(EAX, x)
	VBROADCASTSS(x, dst)
}

// BroadcastParam fills dst with the float parameter name in every lane.
func (s ISA) BroadcastParam(name string, dst reg.VecPhysical) {
	x := X(regIndex(dst))
	Load(Param(name), x)
	P(s, VBROADCASTSS, VBROADCASTSD)(x, dst)
}

func regIndex(r reg.VecPhysical) int {
	var i int
	if _, err := fmt.Sscanf(r.Asm()[1:], "%d", &i); err != nil {
		panic(err)
	}
	return i
}

// TailMask sets the mask register k (physical, or virtual for avo's
// allocator) to the low n bits (n ≤ lanes, n in CX); clobbers AX.
func TailMask(k reg.Register) {
	MOVL(U32(1), EAX)
	SHLL(CL, EAX)
	DECL(EAX)
	KMOVW(EAX, k)
}

// BlendNaN sets dst = src in every lane where src is NaN; tmp is scratch (AVX2).
func (w Width) BlendNaN(src, dst, tmp reg.VecPhysical) {
	cmp := P(w.ISA, VCMPPS, VCMPPD)
	if w.Masked {
		cmp(U8(3), src, src, w.Mask) // UNORD_Q
		P(w.ISA, VMOVAPS, VMOVAPD)(src, w.Mask, dst)
		return
	}
	cmp(U8(3), src, src, tmp)
	if w.Double() {
		VBLENDVPD(tmp, src, dst, dst)
		return
	}
	VBLENDVPS(tmp, src, dst, dst)
}

// At returns the memory operand base+off.
func At(base reg.Register, off int) Mem { return Mem{Base: base, Disp: off} }

// LoopAlign is the alignment, in bytes, of the first instruction of a hot
// loop. The Go assembler places code without regard to loops, so a loop body
// of 60-100 bytes started wherever the code before it ended: in two or three
// 64-byte fetch windows, by the accident of the link. Two copies of the same
// sum kernel, one loop starting 26 bytes into a window and one 58, differed by
// 5-11% (SumAVX512 at 10^4-10^6, thread CPU time interleaved, under load).
const LoopAlign = 64

// Align pads with NOPs (Go's PCALIGN, which avo has no instruction for) so
// that the next instruction starts at a multiple of LoopAlign bytes; the
// function's own alignment is raised to match. Only the entry into the loop
// runs the padding. No label may be placed right before Align: the label
// would name the padding, and a jump to a PCALIGN keeps Go 1.26's assembler
// resizing branches forever; jump to the label after it instead (Loop's
// p+"blocks").
func Align() {
	Instruction(&ir.Instruction{Opcode: "PCALIGN", Operands: []Op{Imm(LoopAlign)}})
}

// Loop emits the standard counted loop over n (in CX) elements: blocks of
// unroll vectors while at least that many remain, then at most one part each of
// unroll/2, unroll/4, ... 1 vectors (unroll is a power of two), then the
// tail of fewer than one vector. body(w, i) handles vector i of a block at width w
// and must not advance pointers; step(bytes) advances them by bytes; tail handles
// the last n<lanes elements (n in CX, n > 0). All labels get the prefix p.
func (s ISA) Loop(p string, unroll int, body func(w Width, i int), step func(bytes int), tail func()) {
	Align()
	Label(p + "blocks")
	CMPQ(RCX, U32(unroll*s.Lanes))
	JB(LabelRef(p + "vectors"))
	for i := 0; i < unroll; i++ {
		body(s.Full(KReg(2+i%4)), i)
	}
	step(unroll * s.Bytes())
	SUBQ(U32(unroll*s.Lanes), RCX)
	JMP(LabelRef(p + "blocks"))

	// Fewer than unroll vectors remain: take half a block, a quarter, ... one
	// vector, each at most once. Vector i of every such part goes to register
	// set i again, so a reduction's accumulator chains stay log2(unroll) deep
	// instead of growing by one per leftover vector.
	Label(p + "vectors")
	for k := unroll / 2; k >= 1; k /= 2 {
		next := fmt.Sprintf("%sleft%d", p, k/2)
		if k == 1 {
			next = p + "tail"
		}
		CMPQ(RCX, U32(k*s.Lanes))
		JB(LabelRef(next))
		for i := 0; i < k; i++ {
			body(s.Full(KReg(2+i%4)), i)
		}
		step(k * s.Bytes())
		SUBQ(U32(k*s.Lanes), RCX)
		if k > 1 {
			Label(next)
		}
	}

	Label(p + "tail")
	TESTQ(RCX, RCX)
	JE(LabelRef(p + "done"))
	tail()
	Label(p + "done")
}
