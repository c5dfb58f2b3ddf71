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

	step("")

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

	unpool(even)
	Generate()
}

// unpool writes maxUnpool2x2AVX512, the gradient of the pooling: for 16
// windows a step it compares each index with the window's four positions
// (as float32, exact below 2²⁴), keeps dy where they match (zero-masked
// moves), interleaves the even and odd columns back with VPERMT2PS and
// stores the two rows. An index that matches none of its window's
// positions ends the kernel with false.
func unpool(even Mem) {
	lo := GLOBL("unpoolLo", RODATA|NOPTR) // a0 b0 a1 b1 ... a7 b7
	for i := 0; i < 8; i++ {
		DATA(8*i, U32(uint32(i)))
		DATA(8*i+4, U32(uint32(16+i)))
	}
	hi := GLOBL("unpoolHi", RODATA|NOPTR) // a8 b8 ... a15 b15
	for i := 0; i < 8; i++ {
		DATA(8*i, U32(uint32(8+i)))
		DATA(8*i+4, U32(uint32(24+i)))
	}

	TEXT("maxUnpool2x2AVX512", NOSPLIT, "func(dx, dy, idx []float32, w, oh, ow int) bool")
	Pragma("noescape")
	Doc("maxUnpool2x2AVX512 sets the 2×2 window of dy[i·ow+j] in dx (rows 2i,",
		"2i+1, columns 2j, 2j+1, row stride w) to dy[i·ow+j] at the element",
		"idx[i·ow+j] names and to zero elsewhere, for i < oh, j < ow. It returns",
		"false, with dx partly written, when an index names no element of its window.",
		"Requires: AVX-512 F, BMI2.")
	z := func(i int) VecPhysical { return x86.AVX512.V(i) }
	Load(Param("dx").Base(), RDI) // top row of the current windows
	Load(Param("dy").Base(), RSI)
	Load(Param("idx").Base(), RDX)
	Load(Param("w"), R8)
	Load(Param("oh"), R9)
	Load(Param("ow"), R10)

	// Z31 even column numbers, Z30/Z24 the interleaving permutations,
	// Z28 = 1.0, Z27 = w, Z26 = w+1 (float32), Z25 = 32 (int32).
	VMOVDQU32(even, z(31))
	VMOVDQU32(lo, z(30))
	VMOVDQU32(hi, z(24))
	MOVL(U32(1), EAX)
	VPBROADCASTD(EAX, z(25))
	VCVTDQ2PS(z(25), z(28))
	VPBROADCASTD(R8L, z(27))
	VPADDD(z(25), z(27), z(26))
	VCVTDQ2PS(z(27), z(27))
	VCVTDQ2PS(z(26), z(26))
	MOVL(U32(32), EAX)
	VPBROADCASTD(EAX, z(25))
	XORQ(R12, R12) // 2i·w
	SHLQ(U8(2), R8)

	Label("urow")
	TESTQ(R9, R9)
	JE(LabelRef("uok"))
	MOVQ(RDI, R13)
	MOVQ(R10, R11)
	VPBROADCASTD(R12L, z(23))
	VPADDD(z(31), z(23), z(23)) // each lane's window position, int32

	step("u")

	VMOVUPS_Z(Mem{Base: RSI}, K3, z(0)) // dy
	VMOVUPS_Z(Mem{Base: RDX}, K3, z(1)) // idx
	VCVTDQ2PS(z(23), z(2))              // positions of a, b, d, e
	VADDPS(z(28), z(2), z(3))
	VADDPS(z(27), z(2), z(4))
	VADDPS(z(26), z(2), z(5))
	for i, k := range []OpmaskPhysical{K4, K5, K6, K7} {
		VCMPPS(U8(0), z(2+i), z(1), K3, k) // EQ_OQ
		VMOVAPS_Z(z(0), k, z(6+i))
	}
	KORW(K5, K4, K4)
	KORW(K7, K6, K6)
	KORW(K6, K4, K4)
	KXORW(K3, K4, K4)
	KORTESTW(K4, K4)
	JNE(LabelRef("ufail"))

	VMOVAPS(z(6), z(10))
	VPERMT2PS(z(7), z(30), z(10))
	VPERMT2PS(z(7), z(24), z(6))
	VMOVAPS(z(8), z(11))
	VPERMT2PS(z(9), z(30), z(11))
	VPERMT2PS(z(9), z(24), z(8))
	VMOVUPS(z(10), K1, Mem{Base: R13})
	VMOVUPS(z(6), K2, Mem{Base: R13, Disp: 64})
	VMOVUPS(z(11), K1, Mem{Base: R13, Index: R8, Scale: 1})
	VMOVUPS(z(8), K2, Mem{Base: R13, Index: R8, Scale: 1, Disp: 64})

	VPADDD(z(25), z(23), z(23))
	ADDQ(U8(128), R13)
	LEAQ(Mem{Base: RSI, Index: RCX, Scale: 4}, RSI)
	LEAQ(Mem{Base: RDX, Index: RCX, Scale: 4}, RDX)
	SUBQ(RCX, R11)
	JMP(LabelRef("ustep"))

	Label("urowdone")
	LEAQ(Mem{Base: RDI, Index: R8, Scale: 2}, RDI)
	MOVQ(R8, RAX)
	SHRQ(U8(1), RAX)
	ADDQ(RAX, R12)
	DECQ(R9)
	JMP(LabelRef("urow"))

	Label("uok")
	MOVB(U8(1), AL)
	Store(AL, ReturnIndex(0))
	VZEROUPPER()
	RET()
	Label("ufail")
	MOVB(U8(0), AL)
	Store(AL, ReturnIndex(0))
	VZEROUPPER()
	RET()
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

// step starts a step of 16 windows (labels prefixed p): when no outputs
// are left in the row (R11) it jumps to p+"rowdone"; else CX = min(16,
// left), K3 = the CX outputs and K1, K2 = the 2·CX elements of each input
// row, in two vectors. Clobbers AX and BX.
func step(p string) {
	Label(p + "step")
	TESTQ(R11, R11)
	JE(LabelRef(p + "rowdone"))
	MOVQ(R11, RCX)
	CMPQ(RCX, U8(16))
	JBE(LabelRef(p + "masks"))
	MOVQ(U32(16), RCX)
	Label(p + "masks")
	MOVL(U32(0xffffffff), EBX)
	LEAL(Mem{Base: ECX, Index: ECX, Scale: 1}, EAX)
	BZHIL(EAX, EBX, EAX)
	KMOVW(EAX, K1)
	SHRL(U8(16), EAX)
	KMOVW(EAX, K2)
	BZHIL(ECX, EBX, EAX)
	KMOVW(EAX, K3)
}
