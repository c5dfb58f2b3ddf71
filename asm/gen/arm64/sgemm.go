package main

import (
	"fmt"

	. "github.com/lanesgo/lanes/asm/gen/internal/a64"
)

// The NEON SGEMM microkernel's tile: 8 rows of A (two vectors) by 12
// columns of B (three vectors) in 24 accumulators V8..V31; A in V0, V1 and
// B in V2..V4 leave three registers for alpha and beta.
const (
	gemmMR = 8
	gemmNR = 12
)

func acc(i, j int) V { return V(8 + 3*i + j) }

// sgemm writes the microkernel: per step p of k, two loads of A, three of
// B and 24 FMLAs by element (each broadcasts one a[p·MR+i] from its lane).
func sgemm(f *File) {
	name := fmt.Sprintf("sgemmKernel%dx%dNEON", gemmMR, gemmNR)
	fn := f.Func(name, "func(k int, a []float32, b []float32, c []float32, ldc int, alpha float32, beta float32)", 0,
		fmt.Sprintf("%s sets the %d×%d tile at c (row stride ldc) to", name, gemmMR, gemmNR),
		"alpha·Σ_p a[p·MR+i]·b[p·NR+j] + beta·c, or alpha·Σ... when beta == 0",
		"(c not read), for k >= 0 steps of the packed panels a and b.",
		requires)
	fn.Asm("MOVD %s, R0", fn.Arg("k"))
	fn.Asm("MOVD %s, R1", fn.Arg("a_base"))
	fn.Asm("MOVD %s, R2", fn.Arg("b_base"))
	fn.Asm("MOVD %s, R3", fn.Arg("c_base"))
	fn.Asm("MOVD %s, R4", fn.Arg("ldc"))
	fn.Asm("LSL $2, R4, R4")
	zero(fn, 8, 32)
	fn.Asm("CBZ R0, store")
	fn.Label("loop")
	fn.Asm("FLDPQ.P 32(R1), (F0, F1)")
	fn.Asm("FLDPQ.P 32(R2), (F2, F3)")
	fn.Asm("FMOVQ.P 16(R2), F4")
	for i := 0; i < gemmMR; i++ {
		for j := 0; j < 3; j++ {
			fn.I(FMLAE(acc(i, j), V(2+j), V(i/4), i%4))
		}
	}
	fn.Asm("SUBS $1, R0")
	fn.Asm("BNE loop")
	fn.Label("store")
	fn.Asm("FMOVS %s, F5", fn.Arg("alpha"))
	fn.Asm("FMOVS %s, F6", fn.Arg("beta"))
	fn.I(DUPS(5, 5))
	fn.Asm("FCMPS $(0.0), F6")
	fn.Asm("BEQ nobeta")
	fn.I(DUPS(6, 6))
	for i := 0; i < gemmMR; i++ {
		// c = beta·c, then c += alpha·acc (fused).
		fn.Asm("FLDPQ (R3), (F0, F1)")
		fn.Asm("FMOVQ 32(R3), F2")
		for j := V(0); j < 3; j++ {
			fn.I(FMUL(j, j, 6), FMLA(j, acc(i, int(j)), 5))
		}
		fn.Asm("FSTPQ (F0, F1), (R3)")
		fn.Asm("FMOVQ F2, 32(R3)")
		fn.Asm("ADD R4, R3, R3")
	}
	fn.Asm("RET")
	fn.Label("nobeta")
	for i := 0; i < gemmMR; i++ {
		for j := V(0); j < 3; j++ {
			fn.I(FMUL(j, acc(i, int(j)), 5))
		}
		fn.Asm("FSTPQ (F0, F1), (R3)")
		fn.Asm("FMOVQ F2, 32(R3)")
		fn.Asm("ADD R4, R3, R3")
	}
	fn.Asm("RET")
}
