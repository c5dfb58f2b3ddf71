// Command sgemm writes the amd64 SGEMM microkernels of package simd
// (simd/sgemm_amd64.s) and their Go declarations (simd/sgemm_stubs_amd64.go),
// plus the FMA peak kernels the benchmarks measure the machine with.
//
// A microkernel computes one MR×NR tile of C from packed panels: a holds MR
// floats per k step (a column of an MR-row slab of A), b holds NR floats per k
// step (a row of an NR-column slab of B). The MR×NR accumulators live in
// registers for the whole k loop; each step loads NR/lanes vectors of b,
// broadcasts each of the MR values of a once and issues MR·NR/lanes FMAs:
//
//	AVX-512 14×32: 28 accumulators, 2 b vectors, 1 broadcast = 31 of 32 zmm;
//	               16 loads for 28 FMAs, so the two FMA pipes set the pace.
//	AVX2     6×16: 12 accumulators, 2 b vectors, 1 broadcast = 15 of 16 ymm.
//
// The tile is then written as C = alpha·acc + beta·C, or C = alpha·acc when
// beta == 0 (C's old contents, NaN included, are not read).
package main

//go:generate go run . -out ../../../simd/sgemm_amd64.s -stubs ../../../simd/sgemm_stubs_amd64.go -pkg simd

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/x86"
)

// shape is one microkernel's register blocking.
type shape struct {
	s      x86.ISA
	mr, nr int
	unroll int // k steps per loop iteration
}

var shapes = []shape{
	{x86.AVX512, 14, 32, 4},
	{x86.AVX2, 6, 16, 4},
}

func main() {
	ConstraintExpr("!purego")
	for _, sh := range shapes {
		kernel(sh)
	}
	packT(14)
	packT(16)
	for _, s := range x86.Levels {
		peak(s)
	}
	Generate()
}

func requires(s x86.ISA) string {
	if s.Masked {
		return "AVX-512 F"
	}
	return "AVX2, FMA"
}

func kernel(sh shape) {
	s := sh.s
	vpr := sh.nr / s.Lanes // vectors per row of the tile
	name := fmt.Sprintf("sgemmKernel%dx%d%s", sh.mr, sh.nr, s.Name)
	TEXT(name, NOSPLIT, "func(k int, a, b, c []float32, ldc int, alpha, beta float32)")
	Pragma("noescape")
	Doc(name+fmt.Sprintf(" sets the %d×%d tile at c (row stride ldc) to", sh.mr, sh.nr),
		"alpha·Σ_p a[p·MR+i]·b[p·NR+j] + beta·c, or alpha·Σ... when beta == 0",
		"(c not read), for k >= 0 steps of the packed panels a and b.",
		"Requires: "+requires(s)+".")
	Load(Param("k"), RCX)
	Load(Param("a").Base(), RSI)
	Load(Param("b").Base(), RDX)
	Load(Param("c").Base(), RDI)
	Load(Param("ldc"), R8)
	SHLQ(U8(2), R8) // bytes per row of C

	// Prefetch the C tile: its rows are read (beta != 0) and written only
	// after the k loop, and a miss there would stall the whole kernel.
	MOVQ(RDI, R9)
	for i := 0; i < sh.mr; i++ {
		for off := 0; off < sh.nr*4; off += 64 {
			PREFETCHT0(x86.At(R9, off))
		}
		if i+1 < sh.mr {
			ADDQ(R8, R9)
		}
	}

	acc := func(i, j int) VecPhysical { return s.V(i*vpr + j) }
	nAcc := sh.mr * vpr
	bReg := func(j int) VecPhysical { return s.V(nAcc + j) }
	aReg := s.V(nAcc + vpr)
	for i := 0; i < nAcc; i++ {
		VXORPS(s.V(i), s.V(i), s.V(i))
	}
	step := func(off int) {
		for j := 0; j < vpr; j++ {
			VMOVUPS(x86.At(RDX, (off*sh.nr+j*s.Lanes)*4), bReg(j))
		}
		for i := 0; i < sh.mr; i++ {
			VBROADCASTSS(x86.At(RSI, (off*sh.mr+i)*4), aReg)
			for j := 0; j < vpr; j++ {
				VFMADD231PS(bReg(j), aReg, acc(i, j))
			}
		}
	}
	Label("blocks")
	CMPQ(RCX, U8(sh.unroll))
	JL(LabelRef("steps"))
	for u := 0; u < sh.unroll; u++ {
		step(u)
	}
	ADDQ(U32(sh.unroll*sh.mr*4), RSI)
	ADDQ(U32(sh.unroll*sh.nr*4), RDX)
	SUBQ(U8(sh.unroll), RCX)
	JMP(LabelRef("blocks"))
	Label("steps")
	TESTQ(RCX, RCX)
	JE(LabelRef("store"))
	step(0)
	ADDQ(U32(sh.mr*4), RSI)
	ADDQ(U32(sh.nr*4), RDX)
	DECQ(RCX)
	JMP(LabelRef("steps"))

	// C = alpha·acc (+ beta·C). The b and a registers are free now, and one
	// more: alpha and beta are broadcast into aReg and bReg(0), beta is kept as
	// a scalar in bReg(1) and compared with the zero in the spare register.
	Label("store")
	alpha, beta := aReg, bReg(0)
	betaS, zero := x86.X(nAcc+1), x86.X(nAcc+vpr+1)
	VBROADCASTSS(paramAddr("alpha"), alpha)
	VMOVSS(paramAddr("beta"), betaS)
	VBROADCASTSS(betaS, beta)
	for i := 0; i < nAcc; i++ {
		VMULPS(alpha, s.V(i), s.V(i))
	}
	VXORPS(zero, zero, zero)
	VUCOMISS(zero, betaS)
	JNE(LabelRef("withbeta"))
	JPS(LabelRef("withbeta")) // beta NaN: NaN·C, as BLAS does
	for i := 0; i < sh.mr; i++ {
		for j := 0; j < vpr; j++ {
			VMOVUPS(acc(i, j), x86.At(RDI, j*s.Bytes()))
		}
		ADDQ(R8, RDI)
	}
	VZEROUPPER()
	RET()
	Label("withbeta")
	for i := 0; i < sh.mr; i++ {
		for j := 0; j < vpr; j++ {
			VFMADD231PS(x86.At(RDI, j*s.Bytes()), beta, acc(i, j))
			VMOVUPS(acc(i, j), x86.At(RDI, j*s.Bytes()))
		}
		ADDQ(R8, RDI)
	}
	VZEROUPPER()
	RET()
}

// paramAddr is the stack address of a scalar parameter (for VEX/EVEX loads:
// avo's Load picks SSE's MOVSS, which cannot reach xmm16-31).
func paramAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// peak writes fmaPeak<level>(n int): n iterations of 24 (AVX-512) or 12
// (AVX2) independent vector FMAs, twice the FMA latency times the two FMA
// pipes, so nothing but FMA throughput limits it. The benchmark turns its
// time into the machine's FMA peak in GFLOP/s.
func peak(s x86.ISA) {
	chains := 12
	if s.Masked {
		chains = 24
	}
	name := "fmaPeak" + s.Name
	TEXT(name, NOSPLIT, "func(n int)")
	Doc(fmt.Sprintf("%s runs n iterations of %d independent %d-lane FMAs.", name, chains, s.Lanes),
		"Requires: "+requires(s)+".")
	Load(Param("n"), RCX)
	for i := 0; i < chains+2; i++ {
		VXORPS(s.V(i), s.V(i), s.V(i))
	}
	Label("loop")
	for i := 0; i < chains; i++ {
		VFMADD231PS(s.V(chains), s.V(chains+1), s.V(i))
	}
	DECQ(RCX)
	JNE(LabelRef("loop"))
	VZEROUPPER()
	RET()
}

// packT writes packT<rows>AVX512, the transposing pack of a fixed number of
// rows (14: a panel of A; 16: half a panel of a transposed B):
// dst[p·w+i] = src[i·ld+p] for i < rows, p < kc. Each block of 16 p loads
// 16 floats of every row, transposes the 16×16 block in registers (four
// rounds of 16 shuffles: unpck ps, unpck pd, then two of shuf f32x4) and
// stores the rows values of each p, masked, so nothing beyond them is
// written. The last kc mod 16 p load with a mask and store only their rows.
func packT(rows int) {
	name := fmt.Sprintf("packT%dAVX512", rows)
	TEXT(name, NOSPLIT, "func(dst, src []float32, ld, w, kc int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[p·w+i] = src[i·ld+p] for i < %d, p < kc.", name, rows),
		"Requires: AVX-512 F.")
	Load(Param("dst").Base(), RDI)
	Load(Param("src").Base(), RSI)
	Load(Param("ld"), R8)
	Load(Param("w"), RDX)
	Load(Param("kc"), RCX)
	SHLQ(U8(2), R8)                                 // bytes per row of src
	SHLQ(U8(2), RDX)                                // bytes per p of dst
	LEAQ(Mem{Base: R8, Index: R8, Scale: 2}, R9)    // 3 rows of src
	LEAQ(Mem{Base: RDX, Index: RDX, Scale: 2}, R10) // 3 p of dst
	// K2 stores the rows lanes; K1 is the load mask (all 16 p, then the tail).
	MOVL(U32(1<<rows-1), EAX)
	KMOVW(EAX, K2)
	MOVL(U32(0xffff), EAX)
	KMOVW(EAX, K1)
	z := func(i int) VecPhysical { return x86.AVX512.V(i) }

	block := func(tail bool) {
		// Rows in groups of four from R11, which steps 4 rows per group.
		MOVQ(RSI, R11)
		for g := 0; g < 4; g++ {
			if g > 0 {
				LEAQ(Mem{Base: R11, Index: R8, Scale: 4}, R11)
			}
			for j := 0; j < 4 && 4*g+j < rows; j++ {
				VMOVUPS_Z(stepAddr(R11, R8, R9, j), K1, z(4*g+j))
			}
		}
		// r (Z0-15) -> t (Z16-31): t[2i], t[2i+1] interleave rows 2i, 2i+1.
		for i := 0; i < 8; i++ {
			VUNPCKLPS(z(2*i+1), z(2*i), z(16+2*i))
			VUNPCKHPS(z(2*i+1), z(2*i), z(16+2*i+1))
		}
		// t -> u (Z0-15): u[4g+c] holds rows 4g..4g+3 of column 4L+c in lane L.
		for g := 0; g < 4; g++ {
			t := func(i int) VecPhysical { return z(16 + 4*g + i) }
			VUNPCKLPD(t(2), t(0), z(4*g))
			VUNPCKHPD(t(2), t(0), z(4*g+1))
			VUNPCKLPD(t(3), t(1), z(4*g+2))
			VUNPCKHPD(t(3), t(1), z(4*g+3))
		}
		// u -> x (Z16-31): x[c], x[4+c] from u[c], u[4+c] (lanes 0,2 and
		// 1,3); x[8+c], x[12+c] likewise from u[8+c], u[12+c].
		for c := 0; c < 4; c++ {
			VSHUFF32X4(U8(0x88), z(4+c), z(c), z(16+c))
			VSHUFF32X4(U8(0xdd), z(4+c), z(c), z(16+4+c))
			VSHUFF32X4(U8(0x88), z(12+c), z(8+c), z(16+8+c))
			VSHUFF32X4(U8(0xdd), z(12+c), z(8+c), z(16+12+c))
		}
		// x -> v (Z0-15): v[p] is column p, rows in lanes.
		for c := 0; c < 4; c++ {
			VSHUFF32X4(U8(0x88), z(16+8+c), z(16+c), z(c))
			VSHUFF32X4(U8(0xdd), z(16+8+c), z(16+c), z(8+c))
			VSHUFF32X4(U8(0x88), z(16+12+c), z(16+4+c), z(4+c))
			VSHUFF32X4(U8(0xdd), z(16+12+c), z(16+4+c), z(12+c))
		}
		for p := 0; p < 16; p++ {
			if p > 0 && p%4 == 0 {
				LEAQ(Mem{Base: RDI, Index: RDX, Scale: 4}, RDI)
			}
			if tail {
				CMPQ(RCX, U8(p))
				JE(LabelRef("done"))
			}
			m := stepAddr(RDI, RDX, R10, p%4)
			if rows == 16 {
				VMOVUPS(z(p), m)
			} else {
				VMOVUPS(z(p), K2, m)
			}
		}
		LEAQ(Mem{Base: RDI, Index: RDX, Scale: 4}, RDI)
		ADDQ(U8(64), RSI)
	}
	Label("blocks")
	CMPQ(RCX, U8(16))
	JB(LabelRef("tail"))
	block(false)
	SUBQ(U8(16), RCX)
	JMP(LabelRef("blocks"))
	Label("tail")
	TESTQ(RCX, RCX)
	JE(LabelRef("done"))
	// K1 = the low kc bits: 0 < kc < 16 p remain.
	MOVL(U32(1), EAX)
	SHLL(CL, EAX)
	DECL(EAX)
	KMOVW(EAX, K1)
	block(true)
	Label("done")
	VZEROUPPER()
	RET()
}

// stepAddr is the address base + j·step for j < 4, where the registers one
// and three hold step and 3·step.
func stepAddr(base, one, three Register, j int) Mem {
	switch j {
	case 1:
		return Mem{Base: base, Index: one, Scale: 1}
	case 2:
		return Mem{Base: base, Index: one, Scale: 2}
	case 3:
		return Mem{Base: base, Index: three, Scale: 1}
	}
	return Mem{Base: base}
}
