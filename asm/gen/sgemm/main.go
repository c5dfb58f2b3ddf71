// Command sgemm writes the amd64 GEMM microkernels of package simd
// (simd/sgemm_amd64.s) and their Go declarations (simd/sgemm_stubs_amd64.go),
// plus the FMA peak kernels the benchmarks measure the machine with. Every
// kernel is written once and emitted per element width (the level's
// elem.Type: float32 for Sgemm, float64 for Dgemm); the width picks the PS or
// PD instruction (x86.P), the element size in addresses and the kernel's
// name.
//
// A microkernel computes one MR×NR tile of C from packed panels: a holds MR
// elements per k step (a column of an MR-row slab of A), b holds NR elements
// per k step (a row of an NR-column slab of B). The MR×NR accumulators live in
// registers for the whole k loop; each step loads NR/lanes vectors of b,
// broadcasts each of the MR values of a once and issues MR·NR/lanes FMAs:
//
//	float32 AVX-512 14×32: 28 accumulators, 2 b vectors, 1 broadcast = 31 of
//	                       32 zmm; 16 loads for 28 FMAs, so the two FMA
//	                       pipes set the pace.
//	float32 AVX2     6×16: 12 accumulators, 2 b vectors, 1 broadcast = 15 of
//	                       16 ymm.
//	float64 AVX-512  8×16: 16 accumulators, 2 b vectors, 1 broadcast; 10
//	                       loads for 16 FMAs (why not 14×16: simd/dgemm.go).
//	float64 AVX2      6×8: as float32's 6×16 at half the lanes.
//
// The tile is then written as C = alpha·acc + beta·C, or C = alpha·acc when
// beta == 0 (C's old contents, NaN included, are not read).
//
// Each shape also has row-tail kernels (sgemmKernel8of14x32AVX512: the
// first 8 rows of a 14×32 tile) for every even row count below MR: the
// last row panel of a product whose M is not a multiple of MR. They read
// the same packed MR-row panels of A (a[p·MR+i], i < rows) and write only
// their rows of C, so that the driver neither computes the panel's zero
// rows nor goes through a scratch tile for them: a 64-row product (a
// batch of 64, or 64 output channels) is 4×14 + 8 rows, not 5×14.
package main

//go:generate go run . -out ../../../simd/sgemm_amd64.s -stubs ../../../simd/sgemm_stubs_amd64.go -pkg simd

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/lanesgo/lanes/asm/gen/internal/x86"
)

// shape is one microkernel's register blocking. Its level carries the
// element width: x86.AVX512 for float32, x86.AVX512.F64() for float64.
type shape struct {
	s      x86.ISA
	mr, nr int
	unroll int // k steps per loop iteration
}

var shapes = []shape{
	{x86.AVX512, 14, 32, 4},
	{x86.AVX2, 6, 16, 4},
	{x86.AVX512.F64(), 8, 16, 4},
	{x86.AVX2.F64(), 6, 8, 4},
}

// cPrefetch is how many k steps before the end of its loop a microkernel
// prefetches its C tile. Prefetched at the start, as before, the tile's
// rows were evicted again by the panels streaming through L1 over the
// kc = 384 steps (with a row stride that is a multiple of 4 KiB, all 14
// rows share one set of the 12-way L1). Measured on the quiet Zen 5
// (TestGemmCPUTime's microkernel into C rows 1024 apart, three runs of
// 24, 64 and 160 against the start): 24 steps 92-95% of the peak against
// 88-93%; BenchmarkSgemmPeak, one thread, 512-2048, three interleaved
// runs: 85-91% against 83-90%; Dgemm within the noise (81-90% either way).
const cPrefetch = 24

// blas is the BLAS letter of the GEMM kernels' names: s (float32) or d.
func blas(s x86.ISA) string {
	if s.Double() {
		return "d"
	}
	return "s"
}

func main() {
	ConstraintExpr("!purego")
	for _, sh := range shapes {
		kernel(sh, sh.mr)
		for rows := 2; rows < sh.mr; rows += 2 {
			kernel(sh, rows)
		}
	}
	// The transposing packs of full panels of A (mr rows) and of a
	// transposed B (16 columns at a time) at AVX-512.
	packT(x86.AVX512, 14)
	packT(x86.AVX512, 16)
	packT(x86.AVX512.F64(), 8)
	packT(x86.AVX512.F64(), 16)
	// The copying packs of B's panels (nr columns each).
	for _, sh := range shapes {
		packN(sh.s, sh.nr)
	}
	for _, s := range x86.Levels {
		peak(s)
	}
	for _, s := range x86.Levels {
		peak(s.F64())
	}
	Generate()
}

func requires(s x86.ISA) string {
	if s.Masked {
		return "AVX-512 F"
	}
	return "AVX2, FMA"
}

// kernelName is the name of shape sh's kernel for its first rows rows.
func kernelName(sh shape, rows int) string {
	if rows == sh.mr {
		return fmt.Sprintf("%sgemmKernel%dx%d%s", blas(sh.s), sh.mr, sh.nr, sh.s.Name)
	}
	return fmt.Sprintf("%sgemmKernel%dof%dx%d%s", blas(sh.s), rows, sh.mr, sh.nr, sh.s.Name)
}

// kernel writes shape sh's microkernel for the first rows rows (≤ mr) of
// its tile.
func kernel(sh shape, rows int) {
	s := sh.s
	lanes, size := s.Lanes, s.Size()
	vpr := sh.nr / lanes // vectors per row of the tile
	name := kernelName(sh, rows)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(k int, a, b, c []%s, ldc int, alpha, beta %[1]s)", s.Type.Name()))
	Pragma("noescape")
	if rows == sh.mr {
		Doc(name+fmt.Sprintf(" sets the %d×%d tile at c (row stride ldc) to", sh.mr, sh.nr),
			"alpha·Σ_p a[p·MR+i]·b[p·NR+j] + beta·c, or alpha·Σ... when beta == 0",
			"(c not read), for k >= 0 steps of the packed panels a and b.",
			"Requires: "+requires(s)+".")
	} else {
		Doc(name+fmt.Sprintf(" is %s for the first %d rows", kernelName(sh, sh.mr), rows),
			fmt.Sprintf("of the tile (i < %d; a's panel still holds MR = %d values per step):", rows, sh.mr),
			"it writes no other row of c.",
			"Requires: "+requires(s)+".")
	}
	Load(Param("k"), RCX)
	Load(Param("a").Base(), RSI)
	Load(Param("b").Base(), RDX)
	Load(Param("c").Base(), RDI)
	Load(Param("ldc"), R8)
	SHLQ(U8(s.Shift()), R8) // bytes per row of C

	acc := func(i, j int) VecPhysical { return s.V(i*vpr + j) }
	nAcc := rows * vpr
	bReg := func(j int) VecPhysical { return s.V(nAcc + j) }
	aReg := s.V(nAcc + vpr)
	for i := 0; i < nAcc; i++ {
		VXORPS(s.V(i), s.V(i), s.V(i))
	}
	mov, broadcast := x86.P(s, VMOVUPS, VMOVUPD), x86.P(s, VBROADCASTSS, VBROADCASTSD)
	fma := x86.P(s, VFMADD231PS, VFMADD231PD)
	step := func(off int) {
		for j := 0; j < vpr; j++ {
			mov(x86.At(RDX, (off*sh.nr+j*lanes)*size), bReg(j))
		}
		for i := 0; i < rows; i++ {
			broadcast(x86.At(RSI, (off*sh.mr+i)*size), aReg)
			for j := 0; j < vpr; j++ {
				fma(bReg(j), aReg, acc(i, j))
			}
		}
	}
	block := func(loop string) {
		for u := 0; u < sh.unroll; u++ {
			step(u)
		}
		ADDQ(U32(sh.unroll*sh.mr*size), RSI)
		ADDQ(U32(sh.unroll*sh.nr*size), RDX)
		SUBQ(U8(sh.unroll), RCX)
		JMP(LabelRef(loop))
	}
	// The C tile is read (beta != 0) and written only after the k loop,
	// and a miss there stalls the kernel: its rows are prefetched
	// cPrefetch steps before the loop ends (at once when k is shorter).
	Label("early")
	CMPQ(RCX, U32(cPrefetch+sh.unroll))
	JL(LabelRef("late"))
	block("early")
	Label("late")
	MOVQ(RDI, R9)
	for i := 0; i < rows; i++ {
		for off := 0; off < sh.nr*size; off += 64 {
			PREFETCHT0(x86.At(R9, off))
		}
		if i+1 < rows {
			ADDQ(R8, R9)
		}
	}
	Label("blocks")
	CMPQ(RCX, U8(sh.unroll))
	JL(LabelRef("steps"))
	block("blocks")
	Label("steps")
	TESTQ(RCX, RCX)
	JE(LabelRef("store"))
	step(0)
	ADDQ(U32(sh.mr*size), RSI)
	ADDQ(U32(sh.nr*size), RDX)
	DECQ(RCX)
	JMP(LabelRef("steps"))

	// C = alpha·acc (+ beta·C). The b and a registers are free now, and one
	// more: alpha and beta are broadcast into aReg and bReg(0), beta is kept as
	// a scalar in bReg(1) and compared with the zero in the spare register.
	Label("store")
	alpha, beta := aReg, bReg(0)
	betaS, zero := x86.X(nAcc+1), x86.X(nAcc+vpr+1)
	broadcast(paramAddr("alpha"), alpha)
	x86.P(s, VMOVSS, VMOVSD)(paramAddr("beta"), betaS)
	broadcast(betaS, beta)
	for i := 0; i < nAcc; i++ {
		x86.P(s, VMULPS, VMULPD)(alpha, s.V(i), s.V(i))
	}
	VXORPS(zero, zero, zero)
	x86.P(s, VUCOMISS, VUCOMISD)(zero, betaS)
	JNE(LabelRef("withbeta"))
	JPS(LabelRef("withbeta")) // beta NaN: NaN·C, as BLAS does
	for i := 0; i < rows; i++ {
		for j := 0; j < vpr; j++ {
			mov(acc(i, j), x86.At(RDI, j*s.Bytes()))
		}
		ADDQ(R8, RDI)
	}
	VZEROUPPER()
	RET()
	Label("withbeta")
	for i := 0; i < rows; i++ {
		for j := 0; j < vpr; j++ {
			fma(x86.At(RDI, j*s.Bytes()), beta, acc(i, j))
			mov(acc(i, j), x86.At(RDI, j*s.Bytes()))
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

// peak writes fmaPeak<width><level>(n int): n iterations of 24 (AVX-512) or
// 12 (AVX2) independent vector FMAs, twice the FMA latency times the two FMA
// pipes, so nothing but FMA throughput limits it. The benchmark turns its
// time into the machine's FMA peak in GFLOP/s (for float64, half as many
// lanes per vector: half the float32 peak if the FMA pipes are as fast).
func peak(s x86.ISA) {
	chains := 12
	if s.Masked {
		chains = 24
	}
	name := "fmaPeak" + s.Suffix() + s.Name
	TEXT(name, NOSPLIT, "func(n int)")
	Doc(fmt.Sprintf("%s runs n iterations of %d independent %d-lane FMAs.", name, chains, s.Lanes),
		"Requires: "+requires(s)+".")
	Load(Param("n"), RCX)
	for i := 0; i < chains+2; i++ {
		VXORPS(s.V(i), s.V(i), s.V(i))
	}
	Label("loop")
	for i := 0; i < chains; i++ {
		x86.P(s, VFMADD231PS, VFMADD231PD)(s.V(chains), s.V(chains+1), s.V(i))
	}
	DECQ(RCX)
	JNE(LabelRef("loop"))
	VZEROUPPER()
	RET()
}

// packT writes packT<rows><width>AVX512, the transposing pack of a fixed
// number of rows (14: a panel of A; 16: a panel of a transposed B, or half
// of one for float32): dst[p·w+i] = src[i·ld+p] for i < rows, p < kc. Each
// block of one vector of p (16 float32 or 8 float64, 64 bytes of each row)
// loads that vector of every row, transposes it in registers and stores the
// rows values of each p, masked, so nothing beyond them is written. The
// last kc mod lanes p load with a mask and store only their rows.
//
// float32: one 16×16 transpose, four rounds of 16 shuffles (unpck ps, unpck
// pd, then two of shuf f32x4); the 16 rows of p are one vector.
// float64: one 8×8 transpose per group of 8 rows, three rounds of 8 shuffles
// each (unpck pd, then two of shuf f64x2); the rows of p are one vector per
// group, the second (rows 8..) 64 bytes after the first.
func packT(s x86.ISA, rows int) {
	lanes := s.Lanes
	name := fmt.Sprintf("packT%d%sAVX512", rows, s.Suffix())
	TEXT(name, NOSPLIT, fmt.Sprintf("func(dst, src []%s, ld, w, kc int)", s.Type.Name()))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[p·w+i] = src[i·ld+p] for i < %d, p < kc.", name, rows),
		"Requires: AVX-512 F.")
	Load(Param("dst").Base(), RDI)
	Load(Param("src").Base(), RSI)
	Load(Param("ld"), R8)
	Load(Param("w"), RDX)
	Load(Param("kc"), RCX)
	SHLQ(U8(s.Shift()), R8)                         // bytes per row of src
	SHLQ(U8(s.Shift()), RDX)                        // bytes per p of dst
	LEAQ(Mem{Base: R8, Index: R8, Scale: 2}, R9)    // 3 rows of src
	LEAQ(Mem{Base: RDX, Index: RDX, Scale: 2}, R10) // 3 p of dst
	// K2 (and K3 for the second group of float64 rows) store the rows
	// lanes of a group that is not full; K1 is the load mask (all lanes p,
	// then the tail).
	groups := (rows + lanes - 1) / lanes
	masks := []OpmaskPhysical{K2, K3}
	for g := 0; g < groups; g++ {
		MOVL(U32(1<<min(lanes, rows-g*lanes)-1), EAX)
		KMOVW(EAX, masks[g])
	}
	MOVL(U32(0xffff), EAX)
	KMOVW(EAX, K1)
	z := func(i int) VecPhysical { return x86.AVX512.V(i) }
	mov := x86.P(s, VMOVUPS, VMOVUPD)

	block := func(tail bool) {
		// Rows in groups of four from R11, which steps 4 rows per group.
		MOVQ(RSI, R11)
		for g := 0; g < 4; g++ {
			if g > 0 {
				LEAQ(Mem{Base: R11, Index: R8, Scale: 4}, R11)
			}
			for j := 0; j < 4 && 4*g+j < rows; j++ {
				x86.P(s, VMOVUPS_Z, VMOVUPD_Z)(stepAddr(R11, R8, R9, j), K1, z(4*g+j))
			}
		}
		// out(g, p) is the vector of rows g·lanes.. of column p.
		transpose := transpose16x16F32
		if s.Double() {
			transpose = transpose8x8F64
		}
		out := transpose(groups)
		for p := 0; p < lanes; p++ {
			if p > 0 && p%4 == 0 {
				LEAQ(Mem{Base: RDI, Index: RDX, Scale: 4}, RDI)
			}
			if tail {
				CMPQ(RCX, U8(p))
				JE(LabelRef("done"))
			}
			m := stepAddr(RDI, RDX, R10, p%4)
			for g := 0; g < groups; g++ {
				m.Disp = 64 * g
				if min(lanes, rows-g*lanes) == lanes {
					mov(out(g, p), m)
				} else {
					mov(out(g, p), masks[g], m)
				}
			}
		}
		LEAQ(Mem{Base: RDI, Index: RDX, Scale: 4}, RDI)
		ADDQ(U8(64), RSI)
	}
	Label("blocks")
	CMPQ(RCX, U8(lanes))
	JB(LabelRef("tail"))
	block(false)
	SUBQ(U8(lanes), RCX)
	JMP(LabelRef("blocks"))
	Label("tail")
	TESTQ(RCX, RCX)
	JE(LabelRef("done"))
	// K1 = the low kc bits: 0 < kc < lanes p remain.
	x86.TailMask(K1)
	block(true)
	Label("done")
	VZEROUPPER()
	RET()
}

// packN writes packN<nr><width><level>, the copying pack of a block of B
// (kc rows of cols columns, row stride ld) into panels of nr columns:
// dst[q·nr·kc + p·nr + j] = src[p·ld + q·nr + j] for the cols/nr full
// panels q, and for the last, partial panel (cols mod nr columns) the same
// with zeros in columns j ≥ cols mod nr. Nothing of src past the cols
// columns is read and nothing of dst past the panels is written: the
// partial panel's rows load with a zeroing mask (AVX-512), or are zeroed
// by vector stores and then copied value by value (AVX2). It walks B row
// by row, so src is read in order, one row of the block per p (as the Go
// loop it replaces, which paid a memmove call per nr values).
func packN(s x86.ISA, nr int) {
	lanes, size := s.Lanes, s.Size()
	vpr := nr / lanes
	name := fmt.Sprintf("packN%d%s%s", nr, s.Suffix(), s.Name)
	TEXT(name, NOSPLIT, fmt.Sprintf("func(dst, src []%s, ld, kc, cols int)", s.Type.Name()))
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets dst[q·%d·kc + p·%[2]d + j] = src[p·ld + q·%[2]d + j] for p < kc and", name, nr),
		fmt.Sprintf("q·%d + j < cols, and to 0 for the other j < %[1]d of the last panel.", nr),
		"Requires: "+requires(s)+".")
	Load(Param("dst").Base(), RDI)
	Load(Param("src").Base(), RSI)
	Load(Param("ld"), R8)
	Load(Param("cols"), R11)
	SHLQ(U8(s.Shift()), R8) // bytes per row of src
	// R10: full panels; R11: columns of the partial one.
	MOVQ(R11, R10)
	SHRQ(U8(log2(nr)), R10)
	ANDQ(U32(nr-1), R11)
	masks := []OpmaskPhysical{K1, K2, K3, K4}
	if s.Masked {
		// K1.. (one per vector of a panel's row): the partial panel's
		// lanes, clamp(R11 - j·lanes, 0, lanes) of them, counted in CX
		// for x86.TailMask before CX takes kc.
		for j := 0; j < vpr; j++ {
			MOVQ(R11, RCX)
			if j > 0 {
				SUBQ(U8(j*lanes), RCX)
			}
			XORL(EDX, EDX)
			CMPQ(RCX, RDX)
			CMOVQLT(RDX, RCX)
			MOVL(U32(lanes), EDX)
			CMPQ(RCX, RDX)
			CMOVQGT(RDX, RCX)
			x86.TailMask(masks[j])
		}
	}
	Load(Param("kc"), RCX)
	// R9: bytes per panel.
	MOVQ(RCX, R9)
	SHLQ(U8(log2(nr*size)), R9)
	v := s.V
	mov := x86.P(s, VMOVUPS, VMOVUPD)
	zero := v(vpr)
	VXORPS(zero, zero, zero)
	TESTQ(RCX, RCX)
	JE(LabelRef("done"))
	Label("rows")
	MOVQ(RSI, R12)
	MOVQ(RDI, R13)
	MOVQ(R10, RBX)
	Label("panels")
	TESTQ(RBX, RBX)
	JE(LabelRef("partial"))
	for j := 0; j < vpr; j++ {
		mov(x86.At(R12, j*s.Bytes()), v(j))
	}
	for j := 0; j < vpr; j++ {
		mov(v(j), x86.At(R13, j*s.Bytes()))
	}
	ADDQ(U32(nr*size), R12)
	ADDQ(R9, R13)
	DECQ(RBX)
	JMP(LabelRef("panels"))
	Label("partial")
	TESTQ(R11, R11)
	JE(LabelRef("next"))
	if s.Masked {
		for j := 0; j < vpr; j++ {
			x86.P(s, VMOVUPS_Z, VMOVUPD_Z)(x86.At(R12, j*s.Bytes()), masks[j], v(j))
		}
		for j := 0; j < vpr; j++ {
			mov(v(j), x86.At(R13, j*s.Bytes()))
		}
	} else {
		for j := 0; j < vpr; j++ {
			mov(zero, x86.At(R13, j*s.Bytes()))
		}
		XORQ(RBX, RBX)
		Label("values")
		x86.P(s, VMOVSS, VMOVSD)(Mem{Base: R12, Index: RBX, Scale: uint8(size)}, x86.X(0))
		x86.P(s, VMOVSS, VMOVSD)(x86.X(0), Mem{Base: R13, Index: RBX, Scale: uint8(size)})
		INCQ(RBX)
		CMPQ(RBX, R11)
		JB(LabelRef("values"))
	}
	Label("next")
	ADDQ(R8, RSI)
	ADDQ(U32(nr*size), RDI)
	DECQ(RCX)
	JNE(LabelRef("rows"))
	Label("done")
	VZEROUPPER()
	RET()
}

// log2 is the exponent of the power of two n.
func log2(n int) int {
	e := 0
	for n > 1 {
		n >>= 1
		e++
	}
	return e
}

// transpose16x16F32 transposes the float32 rows in Z0..Z15 (row i in Zi,
// 16 values of p) and returns where column p is: Zp, rows in lanes (one
// group of 16 rows).
func transpose16x16F32(int) func(g, p int) VecPhysical {
	z := func(i int) VecPhysical { return x86.AVX512.V(i) }
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
	return func(_, p int) VecPhysical { return z(p) }
}

// transpose8x8F64 transposes each group of 8 float64 rows (group g in
// Z8g..Z8g+7, 8 values of p) and returns where column p of group g is:
// Z16+8g+p, rows 8g.. in lanes.
func transpose8x8F64(groups int) func(g, p int) VecPhysical {
	z := func(i int) VecPhysical { return x86.AVX512.V(i) }
	for g := 0; g < groups; g++ {
		r := func(i int) VecPhysical { return z(8*g + i) }
		t := func(i int) VecPhysical { return z(16 + 8*g + i) }
		// r -> t: t[2i+s] holds, in 128-bit lane q, rows 2i and 2i+1 of
		// column 2q+s.
		for i := 0; i < 4; i++ {
			VUNPCKLPD(r(2*i+1), r(2*i), t(2*i))
			VUNPCKHPD(r(2*i+1), r(2*i), t(2*i+1))
		}
		// t -> x (back in r's registers): for each s, x[s], x[2+s] hold
		// lanes 0,2 and 1,3 of t[s], t[2+s]; x[4+s], x[6+s] those of t[4+s],
		// t[6+s].
		for s := 0; s < 2; s++ {
			VSHUFF64X2(U8(0x88), t(2+s), t(s), r(s))
			VSHUFF64X2(U8(0xdd), t(2+s), t(s), r(2+s))
			VSHUFF64X2(U8(0x88), t(6+s), t(4+s), r(4+s))
			VSHUFF64X2(U8(0xdd), t(6+s), t(4+s), r(6+s))
		}
		// x -> v (t's registers): v[p] is column p, rows in lanes; columns
		// 2q+s come from lane q of x[s] and x[4+s] (q = 0, 2) or of x[2+s]
		// and x[6+s] (q = 1, 3).
		for s := 0; s < 2; s++ {
			VSHUFF64X2(U8(0x88), r(4+s), r(s), t(s))
			VSHUFF64X2(U8(0xdd), r(4+s), r(s), t(4+s))
			VSHUFF64X2(U8(0x88), r(6+s), r(2+s), t(2+s))
			VSHUFF64X2(U8(0xdd), r(6+s), r(2+s), t(6+s))
		}
	}
	return func(g, p int) VecPhysical { return z(16 + 8*g + p) }
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
