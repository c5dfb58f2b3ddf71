// Command reduce writes the amd64 reduction kernels of package simd
// (simd/reduce_amd64.s) and their Go declarations (simd/reduce_stubs_amd64.go).
//
// Sums, dot products and extrema keep independent vector accumulators (eight
// on AVX-512, four on AVX2: unroll) so the add/FMA latency chain never limits
// a block; the accumulators are combined pairwise at the end. Inputs past L2
// run a loop that prefetches ahead (farBlocks), and dot and sumAbs on L2-sized
// inputs one of YMM vectors (l2Blocks); the length alone picks the path, so a
// result never depends on the input's address.
// AVX-512 folds the tail into the accumulators with a k-masked load; AVX2 adds
// the tail to the horizontal result with scalar VEX instructions. Max and Min
// track NaNs beside the extremum: AVX-512 in four k-register AND chains of
// "ordered" compares (one instruction a vector), AVX2 in four OR-accumulated
// "unordered" compare masks.
//
// Each kernel is written once and generated for both element widths, float32
// (sumAVX512) and float64 (sumF64AVX512, for SumF64); the width picks the PS
// or PD form of each instruction (x86.P).
package main

//go:generate go run . -out ../../../simd/reduce_amd64.s -stubs ../../../simd/reduce_stubs_amd64.go -pkg simd

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/elem"
	"github.com/lanesgo/lanes/asm/gen/internal/x86"
)

// unroll is the number of independent accumulators (and vectors per loop
// block) of sums and extrema: eight 512-bit registers cover the 4-cycle FMA
// latency at two per cycle; AVX2 has only sixteen registers for accumulators,
// NaN trackers and loads, so four.
func unroll(s x86.ISA) int {
	if s.Masked {
		return 8
	}
	return 4
}

// indexUnroll is the block of the index scans: one mask register per vector.
const indexUnroll = 4

func main() {
	ConstraintExpr("!purego")
	for _, t := range elem.Types {
		for _, s := range x86.Levels {
			s = s.At(t)
			sum(s, "sum", "Σ x[i]", plainSum)
			sum(s, "sumAbs", "Σ |x[i]|", absSum)
			dot(s)
			extremum(s, "max", x86.P(s, VMAXPS, VMAXPD), x86.P(s, VMAXSS, VMAXSD), false)
			extremum(s, "min", x86.P(s, VMINPS, VMINPD), x86.P(s, VMINSS, VMINSD), false)
			if s.Masked {
				extremum(s, "max", x86.P(s, VMAXPS, VMAXPD), x86.P(s, VMAXSS, VMAXSD), true)
				extremum(s, "min", x86.P(s, VMINPS, VMINPD), x86.P(s, VMINSS, VMINSD), true)
			}
			// Norm's and NormF64's sum of squares, in float64.
			if s.Double() {
				sum(s, "sumSquares", "Σ x[i]²", squaresSum)
			} else {
				sumSquaresWidened(s)
			}
			index(s, "indexEq", "func(x []T, v T) int", "the first i with x[i] == v, or -1")
			index(s, "indexNaN", "func(x []T) int", "the first i with x[i] NaN, or -1")
		}
	}
	Generate()
}

func header(name string, s x86.ISA, sig, doc string) {
	name += s.Suffix() + s.Name
	TEXT(name, NOSPLIT, s.Typed(sig))
	Pragma("noescape")
	Doc(name+" returns "+doc+".", "Requires: "+requires(s)+".")
}

func requires(s x86.ISA) string {
	if s.Masked {
		return "AVX-512 F, DQ, VL"
	}
	return "AVX2, FMA"
}

// zero clears registers 0..n-1 (of either width: XORPS clears every bit).
func zero(s x86.ISA, n int) {
	for i := 0; i < n; i++ {
		VXORPS(s.V(i), s.V(i), s.V(i))
	}
}

// combine folds accumulators 0..n-1 into 0 with ins, pairwise.
func combine(s x86.ISA, n int, ins func(...Op)) {
	for step := 1; step < n; step *= 2 {
		for i := 0; i+step < n; i += 2 * step {
			ins(s.V(i+step), s.V(i), s.V(i))
		}
	}
}

// horizontal folds the lanes of register 0 into lane 0 of X0 with ins (packed).
func horizontal(s x86.ISA, ins func(...Op)) {
	if s.Masked {
		VEXTRACTF64X4(U8(1), Z0, Y1)
		ins(Y1, Y0, Y0)
	}
	VEXTRACTF128(U8(1), Y0, X1)
	ins(X1, X0, X0)
	VMOVHLPS(X0, X0, X1)
	ins(X1, X0, X0)
	if !s.Double() {
		VMOVSHDUP(X0, X1)
		ins(X1, X0, X0)
	}
}

// sumKind is what sum adds up: the elements, their magnitudes or their
// squares (fused: one rounding a term).
type sumKind int

const (
	plainSum sumKind = iota
	absSum
	squaresSum
)

// sum writes sum, sumAbs and (for float64) sumSquares: u accumulators of
// vector adds or FMAs.
func sum(s x86.ISA, name, doc string, kind sumKind) {
	u := unroll(s)
	header(name, s, "func(x []T) T", doc+" in "+fmt.Sprint(u)+" vector accumulators")
	Load(Param("x").Base(), RSI)
	Load(Param("x").Len(), RCX)
	zero(s, u)
	mask := s.V(s.Registers() - 1)
	if kind == absSum {
		s.BroadcastBits(s.SignBit()-1, mask)
	}
	vand, vadd := x86.P(s, VANDPS, VANDPD), x86.P(s, VADDPS, VADDPD)
	add := func(src Op, i int) {
		switch kind {
		case absSum:
			vand(src, mask, s.V(u+i))
			vadd(s.V(u+i), s.V(i), s.V(i))
		case squaresSum:
			x, ok := src.(VecPhysical)
			if !ok {
				x = s.V(u + i)
				x86.P(s, VMOVUPS, VMOVUPD)(src, x)
			}
			x86.P(s, VFMADD231PS, VFMADD231PD)(x, x, s.V(i))
		default:
			vadd(src, s.V(i), s.V(i))
		}
	}
	far := farBlocks(s, 1, u, "blocks", func(at func(base GPPhysical, i int) Mem) {
		for i := 0; i < u; i++ {
			add(at(RSI, i), i)
		}
	})
	if s.Masked && kind == absSum {
		l2Blocks(s, 1, "", func(at func(base GPPhysical, i int) Mem) {
			for i := 0; i < 4; i++ {
				vand(at(RSI, i), x86.Y(s.Registers()-1), x86.Y(u+i))
				vadd(x86.Y(u+i), x86.Y(i), x86.Y(i))
			}
		})
	}
	s.Loop("", u, func(w x86.Width, i int) {
		add(x86.At(RSI, i*s.Bytes()), i)
	}, func(n int) { ADDQ(U32(n), RSI) }, func() {
		if s.Masked {
			x86.TailMask(K1)
			x86.P(s, VMOVUPS_Z, VMOVUPD_Z)(x86.At(RSI, 0), K1, Z16)
			add(Z16, 0)
		}
	})
	combine(s, u, vadd)
	horizontal(s, vadd)
	if !s.Masked {
		scalarTail(s, "scalar", func() {
			x86.P(s, VMOVSS, VMOVSD)(x86.At(RSI, 0), X8)
			switch kind {
			case absSum:
				vand(X15, X8, X8)
			case squaresSum:
				x86.P(s, VFMADD231SS, VFMADD231SD)(X8, X8, X0)
				return
			}
			x86.P(s, VADDSS, VADDSD)(X8, X0, X0)
		})
	}
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
	far()
}

// scalarTail emits a loop over the CX remaining elements at RSI (and RDX),
// none or more: body handles one.
func scalarTail(s x86.ISA, label string, body func()) {
	TESTQ(RCX, RCX)
	JE(LabelRef(label + "end"))
	s.Elements(label, RCX, func(x86.Width, int) { body() }, func(n int) {
		ADDQ(U8(n), RSI)
		ADDQ(U8(n), RDX)
	})
	Label(label + "end")
}

func dot(s x86.ISA) {
	u := unroll(s)
	header("dot", s, "func(a, b []T) T", "Σ a[i]·b[i] in "+fmt.Sprint(u)+" vector FMA accumulators")
	Load(Param("a").Base(), RSI)
	Load(Param("a").Len(), RCX)
	Load(Param("b").Base(), RDX)
	zero(s, u)
	fma, movuZ := x86.P(s, VFMADD231PS, VFMADD231PD), x86.P(s, VMOVUPS_Z, VMOVUPD_Z)
	// On AVX-512, inputs of farMax bytes and more (spilling to memory) take
	// l2Blocks' loop too, which is vek's: at DotF64 10^6 (16 MB) the eight-ZMM
	// blocks took 1.04-1.08x vek's time (thread CPU time, interleaved, under
	// load).
	beyond := "blocks"
	if s.Masked {
		beyond = "l2entry"
	}
	far := farBlocks(s, 2, u, beyond, func(at func(base GPPhysical, i int) Mem) {
		for i := 0; i < u; i++ {
			x86.P(s, VMOVUPS, VMOVUPD)(at(RSI, i), s.V(u+i))
			fma(at(RDX, i), s.V(u+i), s.V(i))
		}
	})
	if s.Masked {
		l2Blocks(s, 2, "l2entry", func(at func(base GPPhysical, i int) Mem) {
			for i := 0; i < 4; i++ {
				x86.P(s, VMOVUPS, VMOVUPD)(at(RSI, i), x86.Y(8+i))
			}
			for i := 0; i < 4; i++ {
				fma(at(RDX, i), x86.Y(8+i), x86.Y(i))
			}
		})
	}
	s.Loop("", u, func(w x86.Width, i int) {
		x86.P(s, VMOVUPS, VMOVUPD)(x86.At(RSI, i*s.Bytes()), s.V(u+i))
		fma(x86.At(RDX, i*s.Bytes()), s.V(u+i), s.V(i))
	}, func(n int) {
		ADDQ(U32(n), RSI)
		ADDQ(U32(n), RDX)
	}, func() {
		if s.Masked {
			x86.TailMask(K1)
			movuZ(x86.At(RSI, 0), K1, Z8)
			movuZ(x86.At(RDX, 0), K1, Z9)
			fma(Z9, Z8, Z0)
		}
	})
	vadd := x86.P(s, VADDPS, VADDPD)
	combine(s, u, vadd)
	horizontal(s, vadd)
	if !s.Masked {
		scalarTail(s, "scalar", func() {
			x86.P(s, VMOVSS, VMOVSD)(x86.At(RSI, 0), X8)
			x86.P(s, VFMADD231SS, VFMADD231SD)(x86.At(RDX, 0), X8, X0)
		})
	}
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
	far()
}

// Inputs of l2Min to l2Max bytes together (all input slices) are read from
// L2 on the development machine (Zen 5: 48 KiB L1, 1 MiB L2). There AVX-512's
// blocks of eight 64-byte vectors ran 15-20% slower than blocks of four
// 32-byte ones (DotF64 at n = 10240: 934 against 798 ns, best of 61 rounds,
// alternating; at 1024 and from 40960 on the wide blocks won), and sumAbs
// ran 1.18-1.22x as fast on inputs of 400-480 KiB (SumAbsF64 at 6·10^4,
// SumAbs at 10^5), 1.0-1.2x (from run to run) at SumAbsF64 3·10^4 and as
// fast at 10^4 (thread CPU time, interleaved, under load). So dot and sumAbs run such inputs in
// blocks of four YMM vectors, into the low halves of their first four
// accumulators (a write to a YMM register clears its upper half: they start
// at zero), and take the rest through the usual parts. The plain sum gained
// nothing that way (within 4% either way), and max and min lost 15-25%: with
// their NaN tracking they are bound by vector instructions, not by L2. The
// path depends on the length only, so a sum stays the same for any address
// of its input.
const (
	l2Min = 64 << 10
	l2Max = 512 << 10
)

// l2Blocks emits that loop over the slices at RSI (and RDX when inputs is
// 2), with label entry (unless "") past its length checks: block emits one block of four YMM vectors, at(base, i) being vector
// i's memory operand, keeping to the low halves of registers. The order
// within a block is the caller's: dot's four loads before its four FMAs
// (each load beside its FMA took 1.13x as long at DotF64 10^4), sumAbs's
// AND and add a vector at a time (grouped, its gain at 3·10^4-10^5 went);
// interleaved thread CPU time, under load.
func l2Blocks(s x86.ISA, inputs int, entry string, block func(at func(base GPPhysical, i int) Mem)) {
	y := x86.AVX2.At(s.Type)
	CMPQ(RCX, U32(l2Min/(inputs*s.Size())))
	JB(LabelRef("blocks"))
	CMPQ(RCX, U32(l2Max/(inputs*s.Size())))
	JAE(LabelRef("blocks"))
	if entry != "" {
		Label(entry) // for other lengths that take this loop (dot's past farMax)
	}
	// One add and one fused branch an iteration, as the vek loop that
	// this one must keep up with.
	indexWalk(y, inputs, 4, "l2blocks", block)
}

// indexWalk emits a loop over the whole blocks of unroll vectors of v
// (RCX elements, left with the rest) that walks R8 over their bytes from
// -len up to 0 past the advanced input pointers RSI (and RDX when inputs
// is 2): one add and one fused branch a block. block emits one block,
// at(base, i) being vector i's memory operand (R8 indexes it). The loop
// is aligned (x86.Align) and ends with a jump to the main loop's
// "vectors" for the leftover.
func indexWalk(v x86.ISA, inputs, unroll int, label string, block func(at func(base GPPhysical, i int) Mem)) {
	MOVQ(RCX, R8)
	ANDQ(I32(-unroll*v.Lanes), R8)
	SUBQ(R8, RCX)
	SHLQ(U8(v.Shift()), R8)
	ADDQ(R8, RSI)
	if inputs == 2 {
		ADDQ(R8, RDX)
	}
	NEGQ(R8)
	x86.Align()
	Label(label)
	block(func(base GPPhysical, i int) Mem { return Mem{Base: base, Index: R8, Scale: 1, Disp: i * v.Bytes()} })
	ADDQ(U32(unroll*v.Bytes()), R8)
	JNE(LabelRef(label))
	JMP(LabelRef("vectors"))
}

// Inputs of farMin up to farMax bytes together (all input slices) outgrow
// L2 on the development machine (Zen 5: 1 MiB L2, an L3 shared with other
// tenants) and stream from
// L3 in 4 KiB pages (Go's heap gets no huge pages where transparent huge
// pages are "madvise", this machine's setting), and the hardware prefetchers
// stop at each page boundary. There a software prefetch farAhead bytes ahead
// of every 64-byte line of every input, in a loop that walks one index
// register up to zero (one add and one fused branch a block), took SumF64 at
// 10^6 from 104-105 µs to 85 µs (2 KiB ahead; 512 bytes: 87-88, 4 KiB: 85,
// the index walk alone: 96); the generated kernels took 1.05-1.40x less time
// than before for SumF64, SumAbsF64, DotF64, MaxF64 and MinF64 at 10^6 and
// 1.1-1.2x for Sum at 10^6. On L2-resident inputs (8·10^5 bytes) the same
// loop lost 4-11%, and on inputs that spill to memory 10-24% (DotF64 at 10^6,
// 16 MB, in one run of two; at 2·10^6 and more, MaxF64 and Dot at 4·10^6 and
// more): one prefetch a load competes with the loads there. At 8 MB (DotF64
// at 5.12·10^5) it still gained 1-3% (thread CPU time, interleaved, under
// load). farBlocks emits
// that path for sums, dot products and extrema at every x86 level.
const (
	farMin   = 1 << 20
	farMax   = 8 << 20
	farAhead = 2048
)

// farBlocks emits, at the current position, the branch to the far path
// over the slices at RSI (and RDX when inputs is 2) of unroll vectors a block
// (block emits one, at(base, i) being vector i's memory operand, the same
// instructions into the same accumulators as the kernel's main loop, so the
// result does not depend on the path), and returns the function that emits
// the path itself, out of line after the kernel's RET: longer inputs jump to
// label beyond, and the path ends with a jump to the main loop's "vectors"
// for the leftover of less than a block.
func farBlocks(s x86.ISA, inputs, unroll int, beyond string, block func(at func(base GPPhysical, i int) Mem)) func() {
	CMPQ(RCX, U32(farMin/(inputs*s.Size())))
	JAE(LabelRef("far"))
	return func() {
		Label("far")
		CMPQ(RCX, U32(farMax/(inputs*s.Size())))
		JAE(LabelRef(beyond))
		indexWalk(s, inputs, unroll, "farblocks", func(at func(base GPPhysical, i int) Mem) {
			for _, base := range []GPPhysical{RSI, RDX}[:inputs] {
				for off := 0; off < unroll*s.Bytes(); off += 64 {
					m := at(base, 0)
					m.Disp = farAhead + off
					PREFETCHT0(m)
				}
			}
			block(at)
		})
	}
}

// extremum writes max/min. With Intel's operand order MAXPS(src1=x, src2=acc)
// returns acc when either is NaN, so NaNs never enter the accumulators. They
// are caught on the side with integer instructions, which run on the vector
// ports that MAXPS leaves idle: |x| as an integer is above +Inf's bits exactly
// for NaNs, so u more accumulators keep the unsigned maximum of the bits with
// the sign cleared. AVX2 has no unsigned 64-bit maximum: its float64 kernels
// OR "unordered" compare masks instead. x must be non-empty: the accumulators
// start at x[0].
//
// With screen (AVX-512 only: it needs 3u registers), the kernel is
// name+"Screened": its u side accumulators sum x·0 instead (one FMA a
// vector where the exact tracking takes two instructions), which is NaN
// exactly when some element is NaN or infinite; then it jumps to the exact
// kernel (same arguments, same frame), so such inputs are read twice. On
// L2-resident inputs, where max and min are bound by vector instructions,
// MaxF64 at 10240 took 0.95x the time of the exact kernel (vek's Max, which
// tracks no NaN, 0.94x; at 102400 0.96x and 1.11x; thread CPU time,
// interleaved, under load).
func extremum(s x86.ISA, name string, packed, scalar func(...Op), screen bool) {
	u := unroll(s)
	exact := name + s.Suffix() + s.Name
	doc := "the " + name + "imum of x, or NaN if any element is NaN; len(x) > 0"
	if screen {
		doc += " (" + exact + " where an element is NaN or ±Inf)"
		name += "Screened"
	}
	header(name, s, "func(x []T) T", doc)
	Load(Param("x").Base(), RSI)
	Load(Param("x").Len(), RCX)
	x86.P(s, VBROADCASTSS, VBROADCASTSD)(x86.At(RSI, 0), s.V(0))
	vmova := x86.P(s, VMOVAPS, VMOVAPD)
	for i := 1; i < u; i++ {
		vmova(s.V(0), s.V(i))
	}
	zeroFrom(s, u, u)
	abs := s.V(s.Registers() - 1)
	if !screen {
		s.BroadcastBits(s.SignBit()-1, abs)
	}
	// side folds x into NaN tracker i; fold folds tracker n into d.
	side := func(x VecPhysical, i int) {
		VPAND(x, abs, x)
		VPMAXUD(x, s.V(u+i), s.V(u+i))
	}
	fold := func(n, d VecPhysical) { VPMAXUD(n, d, d) }
	vzero := s.V(s.Registers() - 2)
	switch {
	case screen:
		// abs is unused; vzero holds +0 for x·0.
		VXORPS(vzero, vzero, vzero)
		fma, add := x86.P(s, VFMADD231PS, VFMADD231PD), x86.P(s, VADDPS, VADDPD)
		side = func(x VecPhysical, i int) { fma(vzero, x, s.V(u+i)) }
		fold = func(n, d VecPhysical) { add(n, d, d) }
	case s.Masked:
		and, umax := x86.P(s, VPANDD, VPANDQ), x86.P(s, VPMAXUD, VPMAXUQ)
		side = func(x VecPhysical, i int) {
			and(x, abs, x)
			umax(x, s.V(u+i), s.V(u+i))
		}
		fold = func(n, d VecPhysical) { umax(n, d, d) }
	case s.Double():
		side = func(x VecPhysical, i int) {
			VCMPPD(U8(3), x, x, x) // UNORD_Q
			VORPD(x, s.V(u+i), s.V(u+i))
		}
		fold = func(n, d VecPhysical) { VORPD(n, d, d) }
	}
	vector := func(src Mem, i int) {
		x := s.V(2*u + i)
		x86.P(s, VMOVUPS, VMOVUPD)(src, x)
		packed(s.V(i), x, s.V(i))
		side(x, i)
	}
	far := farBlocks(s, 1, u, "blocks", func(at func(base GPPhysical, i int) Mem) {
		for i := 0; i < u; i++ {
			vector(at(RSI, i), i)
		}
	})
	s.Loop("", u, func(w x86.Width, i int) {
		vector(x86.At(RSI, i*s.Bytes()), i)
	}, func(n int) { ADDQ(U32(n), RSI) }, func() {
		if s.Masked {
			// Lanes past the end take the accumulator's own values (and 0 bits).
			x86.TailMask(K1)
			x86.P(s, VMOVUPS_Z, VMOVUPD_Z)(x86.At(RSI, 0), K1, Z16)
			vmova(Z0, Z17)
			vmova(Z16, K1, Z17)
			packed(Z0, Z17, Z0)
			side(Z16, 0)
		}
	})
	combine(s, u, packed)
	horizontal(s, packed)
	for step := 1; step < u; step *= 2 {
		for i := 0; i+step < u; i += 2 * step {
			fold(s.V(u+i+step), s.V(u+i))
		}
	}
	// Any lane with bits above +Inf's means a NaN.
	inf := s.V(s.Registers() - 2)
	switch {
	case screen: // a NaN lane of the side sum: let the exact kernel decide
		x86.P(s, VCMPPS, VCMPPD)(U8(3), s.V(u), s.V(u), K1) // UNORD_Q
		KORTESTW(K1, K1)
		JNE(LabelRef("exact"))
	case s.Masked:
		s.BroadcastBits(s.Inf(), inf)
		x86.P(s, VPCMPUD, VPCMPUQ)(U8(6), inf, s.V(u), K1) // NLE: lane > inf
		KORTESTW(K1, K1)
		JNE(LabelRef("nan"))
	case s.Double(): // the tracker is a mask already
		VMOVMSKPD(s.V(u), EAX)
		TESTL(EAX, EAX)
		JNE(LabelRef("nan"))
	default:
		s.BroadcastBits(s.Inf(), inf)
		VPCMPGTD(inf, s.V(u), s.V(u)) // values are below 2^31: signed compare is exact
		VMOVMSKPS(s.V(u), EAX)
		TESTL(EAX, EAX)
		JNE(LabelRef("nan"))
	}
	if !s.Masked {
		scalarTail(s, "scalar", func() {
			x86.P(s, VMOVSS, VMOVSD)(x86.At(RSI, 0), X8)
			x86.P(s, VUCOMISS, VUCOMISD)(X8, X8)
			JPS(LabelRef("nan"))
			scalar(X0, X8, X0)
		})
	}
	if screen {
		VZEROUPPER()
		Store(X0, ReturnIndex(0))
		RET()
		Label("exact")
		VZEROUPPER()
		// A tail call: avo's JMP takes labels only.
		Instruction(&ir.Instruction{Opcode: "JMP", Operands: []Op{NewDataAddr(Symbol{Name: "·" + exact}, 0)}, IsTerminal: true})
		far()
		return
	}
	Label("ret")
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()

	Label("nan")
	if s.Double() {
		MOVQ(U64(0x7ff8000000000000), RAX)
		VMOVQ(RAX, X0)
	} else {
		MOVL(U32(0x7fc00000), EAX)
		VMOVD(EAX, X0)
	}
	JMP(LabelRef("ret"))
	far()
}

// zeroFrom clears registers from..from+n-1.
func zeroFrom(s x86.ISA, from, n int) {
	for i := from; i < from+n; i++ {
		VXORPS(s.V(i), s.V(i), s.V(i))
	}
}

// sumSquaresWidened writes Norm's float64 sum of squares of float32: each
// float32 is widened exactly, so squares neither overflow nor underflow.
func sumSquaresWidened(s x86.ISA) {
	const unroll = 4
	header("sumSquares", s, "func(x []float32) float64", "Σ x[i]² accumulated in float64, in "+fmt.Sprint(2*unroll)+" vector accumulators")
	Load(Param("x").Base(), RSI)
	Load(Param("x").Len(), RCX)
	zero(s, 2*unroll)
	half := s.Bytes() / 2 // bytes of float32 that widen to one vector of float64
	s.Loop("", unroll, func(w x86.Width, i int) {
		for h := 0; h < 2; h++ {
			t := s.V(8 + 2*i + h)
			VCVTPS2PD(x86.At(RSI, i*s.Bytes()+h*half), t)
			VFMADD231PD(t, t, s.V(2*i+h))
		}
	}, func(n int) { ADDQ(U32(n), RSI) }, func() {
		if s.Masked {
			x86.TailMask(K1)
			VMOVUPS_Z(x86.At(RSI, 0), K1, Z8)
			VCVTPS2PD(Y8, Z9)
			VEXTRACTF64X4(U8(1), Z8, Y10)
			VCVTPS2PD(Y10, Z10)
			VFMADD231PD(Z9, Z9, Z0)
			VFMADD231PD(Z10, Z10, Z1)
		}
	})
	combine(s, 2*unroll, VADDPD)
	if s.Masked {
		VEXTRACTF64X4(U8(1), Z0, Y1)
		VADDPD(Y1, Y0, Y0)
	}
	VEXTRACTF128(U8(1), Y0, X1)
	VADDPD(X1, X0, X0)
	VMOVHLPS(X0, X0, X1)
	VADDSD(X1, X0, X0)
	if !s.Masked {
		scalarTail(s, "scalar", func() {
			VCVTSS2SD(x86.At(RSI, 0), X8, X8)
			VFMADD231SD(X8, X8, X0)
		})
	}
	VZEROUPPER()
	Store(X0, ReturnIndex(0))
	RET()
}

// index writes indexEq / indexNaN: compare a vector at a time, branch out on
// the first vector with a hit, and take the lowest set bit of its mask.
func index(s x86.ISA, name, sig, doc string) {
	header(name, s, sig, doc)
	nan := name == "indexNaN"
	Load(Param("x").Base(), RSI)
	Load(Param("x").Len(), RCX)
	MOVQ(RSI, RBX) // start, to turn the pointer back into an index
	if !nan {
		s.BroadcastParam("v", s.V(15))
	}
	found := 0
	// hit branches to a block that computes the index of the first set lane of
	// the mask (in k or as a vector) plus off elements past RSI.
	var exits []func()
	hit := func(x VecPhysical, k OpmaskPhysical, off int) {
		label := fmt.Sprintf("found%d", found)
		found++
		if s.Masked {
			KORTESTW(k, k)
			JNE(LabelRef(label))
		} else {
			x86.P(s, VMOVMSKPS, VMOVMSKPD)(x, EAX)
			TESTL(EAX, EAX)
			JNE(LabelRef(label))
		}
		exits = append(exits, func() {
			Label(label)
			if s.Masked {
				KMOVW(k, EAX)
			}
			BSFL(EAX, EAX)
			ADDQ(U32(off), RAX)
			JMP(LabelRef("ret"))
		})
	}
	vcmp := x86.P(s, VCMPPS, VCMPPD)
	compare := func(src Op, x VecPhysical, k OpmaskPhysical) {
		dst := Op(x)
		if s.Masked {
			dst = k
		}
		if nan {
			x86.P(s, VMOVUPS, VMOVUPD)(src, x)
			vcmp(U8(3), x, x, dst) // UNORD_Q
		} else {
			vcmp(U8(0), src, s.V(15), dst) // EQ_OQ
		}
	}
	// On AVX-512 the blocks of four vectors (the first indexUnroll bodies
	// that Loop emits) OR their four masks and branch once; blockhit then
	// finds the first vector with a hit. With one mask test a vector, a full
	// scan had taken 1.13-1.25x as long (IndexEqF64 over 1000 to 100000
	// elements, interleaved runs under load).
	blockBodies := 0
	s.Loop("", indexUnroll, func(w x86.Width, i int) {
		compare(x86.At(RSI, i*s.Bytes()), s.V(8+i), x86.KReg(4+i))
		if s.Masked && blockBodies < indexUnroll {
			blockBodies++
			if i == indexUnroll-1 {
				KORW(K4, K5, K1)
				KORW(K6, K7, K2)
				KORTESTW(K1, K2)
				JNE(LabelRef("blockhit"))
			}
			return
		}
		hit(s.V(8+i), x86.KReg(4+i), i*s.Lanes)
	}, func(n int) { ADDQ(U32(n), RSI) }, func() {
		if s.Masked {
			x86.TailMask(K1)
			x86.P(s, VMOVUPS_Z, VMOVUPD_Z)(x86.At(RSI, 0), K1, Z8)
			if nan {
				vcmp(U8(3), Z8, Z8, K1, K4)
			} else {
				vcmp(U8(0), Z8, Z15, K1, K4)
			}
			hit(Z8, K4, 0)
		}
	})
	if !s.Masked {
		TESTQ(RCX, RCX)
		JE(LabelRef("none"))
		s.Elements("scalar", RCX, func(x86.Width, int) {
			x86.P(s, VMOVSS, VMOVSD)(x86.At(RSI, 0), X8)
			ucomi := x86.P(s, VUCOMISS, VUCOMISD)
			if nan {
				ucomi(X8, X8)
				JPS(LabelRef("scalarhit"))
			} else {
				ucomi(X15, X8)
				JPS(LabelRef("scalarnext"))
				JEQ(LabelRef("scalarhit"))
			}
			Label("scalarnext")
		}, func(n int) { ADDQ(U8(n), RSI) })
	}
	Label("none")
	VZEROUPPER()
	MOVQ(I32(-1), RAX)
	Store(RAX, ReturnIndex(0))
	RET()
	if !s.Masked {
		Label("scalarhit")
		XORL(EAX, EAX)
		JMP(LabelRef("ret"))
	}
	if s.Masked {
		// A block of four had a hit: the first of its masks that is not
		// zero (one is, so the last hit never falls through).
		Label("blockhit")
		for i := 0; i < indexUnroll; i++ {
			hit(s.V(8+i), x86.KReg(4+i), i*s.Lanes)
		}
	}
	for _, e := range exits {
		e()
	}
	// RAX holds the lane index relative to RSI; add RSI's element offset.
	Label("ret")
	VZEROUPPER()
	SUBQ(RBX, RSI)
	SHRQ(U8(s.Shift()), RSI)
	ADDQ(RSI, RAX)
	Store(RAX, ReturnIndex(0))
	RET()
}
