// Command pool writes the amd64 pooling kernel of package simd
// (simd/pool_amd64.s) and its Go declaration (simd/pool_stubs_amd64.go).
//
// maxPool2x2AVX512 pools 2×2 windows at stride 2, 16 outputs a step: it
// loads 32 values of the window's top and bottom rows (k-masked at the end
// of a row), splits each pair of vectors into even and odd columns with
// VPERMT2PS, and picks each window's maximum and its position with masked
// compares and moves instead of branches. The compare is "not less or
// equal, unordered" (a candidate wins when it is greater or NaN), masked by
// "the best so far is ordered", so ties and -0/+0 keep the first value in
// row-major window order and the first NaN wins, as the Go kernel does.
package main

//go:generate go run . -out ../../../simd/pool_amd64.s -stubs ../../../simd/pool_stubs_amd64.go -pkg simd

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/x86"
)

func main() {
	ConstraintExpr("!purego")

	// Permutation indices of the even and odd columns of two vectors (also
	// the even column numbers 0, 2, ..., 30 of a step).
	even := GLOBL("poolEven", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(uint32(2*i)))
	}
	odd := GLOBL("poolOdd", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		DATA(4*i, U32(uint32(2*i+1)))
	}

	TEXT("maxPool2x2AVX512", NOSPLIT, "func(dst, idx, x []float32, w, oh, ow int)")
	Pragma("noescape")
	Doc("maxPool2x2AVX512 sets dst[i·ow+j] to the maximum of x[2i·w+2j],",
		"x[2i·w+2j+1], x[(2i+1)·w+2j] and x[(2i+1)·w+2j+1] (the first among",
		"ties, the first NaN if any) and idx[i·ow+j] to its index in x as a",
		"float32, for i < oh, j < ow. dst or idx may be empty: it is not written.",
		"Requires: AVX-512 F, BMI2.")
	z := func(i int) VecPhysical { return x86.AVX512.V(i) }
	Load(Param("dst").Base(), RDI)
	Load(Param("idx").Base(), RDX)
	Load(Param("x").Base(), R13) // top row of the current output row
	Load(Param("w"), R8)
	Load(Param("oh"), R9)
	Load(Param("ow"), R10)

	// Constants: Z31 even and Z30 odd permutations, Z29 = 1, Z28 = w,
	// Z27 = w+1, Z26 = 32 (int32 lanes).
	VMOVDQU32(even, z(31))
	VMOVDQU32(odd, z(30))
	MOVL(U32(1), EAX)
	VPBROADCASTD(EAX, z(29))
	VPBROADCASTD(R8L, z(28))
	VPADDD(z(29), z(28), z(27))
	MOVL(U32(32), EAX)
	VPBROADCASTD(EAX, z(26))
	XORQ(R12, R12)  // 2i·w: index in x of the output row's first window
	SHLQ(U8(2), R8) // bytes per row of x

	Label("row")
	TESTQ(R9, R9)
	JE(LabelRef("done"))
	MOVQ(R13, RSI)
	MOVQ(R10, R11) // outputs left in the row
	VPBROADCASTD(R12L, z(24))
	VPADDD(z(31), z(24), z(24)) // index of each lane's first window element

	Label("step")
	TESTQ(R11, R11)
	JE(LabelRef("rowdone"))
	// CX = min(16, left); K3: the CX outputs; K1, K2: the 2·CX inputs of
	// each row, in two vectors.
	MOVQ(R11, RCX)
	CMPQ(RCX, U8(16))
	JBE(LabelRef("masks"))
	MOVQ(U32(16), RCX)
	Label("masks")
	MOVL(U32(0xffffffff), EBX)
	LEAL(Mem{Base: ECX, Index: ECX, Scale: 1}, EAX)
	BZHIL(EAX, EBX, EAX)
	KMOVW(EAX, K1)
	SHRL(U8(16), EAX)
	KMOVW(EAX, K2)
	BZHIL(ECX, EBX, EAX)
	KMOVW(EAX, K3)

	VMOVUPS_Z(Mem{Base: RSI}, K1, z(0))
	VMOVUPS_Z(Mem{Base: RSI, Disp: 64}, K2, z(1))
	VMOVUPS_Z(Mem{Base: RSI, Index: R8, Scale: 1}, K1, z(2))
	VMOVUPS_Z(Mem{Base: RSI, Index: R8, Scale: 1, Disp: 64}, K2, z(3))
	VMOVAPS(z(0), z(4))
	VPERMT2PS(z(1), z(31), z(4)) // a: top, even columns (the best so far)
	VPERMT2PS(z(1), z(30), z(0)) // b: top, odd
	VMOVAPS(z(2), z(5))
	VPERMT2PS(z(3), z(31), z(5)) // d: bottom, even
	VPERMT2PS(z(3), z(30), z(2)) // e: bottom, odd
	VPXORD(z(6), z(6), z(6))     // the best's offset in its window
	for _, c := range []struct{ v, off VecPhysical }{{z(0), z(29)}, {z(5), z(28)}, {z(2), z(27)}} {
		VCMPPS(U8(7), z(4), z(4), K4)    // ORD_Q: the best is not NaN
		VCMPPS(U8(6), z(4), c.v, K4, K5) // NLE_UQ: c > best, or c NaN
		VMOVAPS(c.v, K5, z(4))
		VMOVDQA32(c.off, K5, z(6))
	}

	CMPQ(lenAddr("dst"), U8(0)) // an empty dst or idx is not written
	JE(LabelRef("novalues"))
	VMOVUPS(z(4), K3, Mem{Base: RDI})
	LEAQ(Mem{Base: RDI, Index: RCX, Scale: 4}, RDI)
	Label("novalues")
	CMPQ(lenAddr("idx"), U8(0))
	JE(LabelRef("noindices"))
	VPADDD(z(6), z(24), z(7))
	VCVTDQ2PS(z(7), z(7))
	VMOVUPS(z(7), K3, Mem{Base: RDX})
	LEAQ(Mem{Base: RDX, Index: RCX, Scale: 4}, RDX)
	Label("noindices")
	VPADDD(z(26), z(24), z(24))
	ADDQ(U8(128), RSI)
	SUBQ(RCX, R11)
	JMP(LabelRef("step"))

	Label("rowdone")
	LEAQ(Mem{Base: R13, Index: R8, Scale: 2}, R13)
	MOVQ(R8, RAX)
	SHRQ(U8(1), RAX) // 2w: R8 holds 4w bytes
	ADDQ(RAX, R12)
	DECQ(R9)
	JMP(LabelRef("row"))

	Label("done")
	VZEROUPPER()
	RET()

	Generate()
}

// lenAddr is the stack address of a slice parameter's length (read in the
// loop, so that no register is spent on it).
func lenAddr(name string) Mem {
	b, err := Param(name).Len().Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}
