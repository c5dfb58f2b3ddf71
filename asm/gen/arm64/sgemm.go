package main

import (
	"fmt"

	. "github.com/lanesgo/lanes/asm/gen/internal/a64"
	"github.com/lanesgo/lanes/asm/gen/internal/elem"
)

// gemmShape is one width of the NEON GEMM microkernel. Both widths keep the
// same register plan: the tile is 8 rows of A by three vectors of B, in 24
// accumulators V8..V31 (row i in V8+3i..V10+3i); A's 8 values of a step sit
// in the first 8/lanes registers from V0, B's three vectors right after
// them, and the store uses V0..V2 for a row of C and V5, V6 for alpha and
// beta (free once the k loop is done).
//
//	float32 8×12: A in V0, V1, B in V2..V4; 2 + 3 loads for 24 FMLAs.
//	float64 8×6:  A in V0..V3, B in V4..V6; 4 + 3 loads for 24 FMLAs.
type gemmShape struct {
	w      Float // F32 or F64
	mr, nr int
}

var gemmShapes = []gemmShape{{F32, 8, 12}, {F64, 8, 6}}

func acc(i, j int) V { return V(8 + 3*i + j) }

// gemm writes the GEMM microkernels of every width: per step p of k,
// 8/lanes loads of A, three of B and 24 FMLAs by element (each broadcasts
// one a[p·MR+i] from its lane); and each one's row tails, the kernels for
// its first 2, 4 and 6 rows (see the amd64 generator, asm/gen/sgemm),
// which load the same panels and skip the other rows' FMLAs and stores.
func gemm(f *File) {
	for _, sh := range gemmShapes {
		gemmKernel(f, sh, sh.mr)
		for _, rows := range elem.GemmTailRows(sh.mr) {
			gemmKernel(f, sh, rows)
		}
		f.Decl(elem.GemmTailTable(sh.w.Type, fmt.Sprintf("%sgemmTails%dx%dNEON", sh.prefix(), sh.mr, sh.nr), sh.name(sh.mr), sh.mr, sh.name))
	}
}

// prefix is the BLAS letter of the shape's kernels' names.
func (sh gemmShape) prefix() string {
	if sh.w.Double() {
		return "d"
	}
	return "s"
}

// name is the name of the shape's kernel for its first rows rows.
func (sh gemmShape) name(rows int) string {
	if rows == sh.mr {
		return fmt.Sprintf("%sgemmKernel%dx%dNEON", sh.prefix(), sh.mr, sh.nr)
	}
	return fmt.Sprintf("%sgemmKernel%dof%dx%dNEON", sh.prefix(), rows, sh.mr, sh.nr)
}

// gemmKernel writes shape sh's kernel for the first rows rows of its tile.
func gemmKernel(f *File, sh gemmShape, rows int) {
	w := sh.w
	aVecs := sh.mr / w.Lanes() // A's registers V0..; B's follow
	full := sh.name(sh.mr)
	name, doc := full, []string{
		fmt.Sprintf("%s sets the %d×%d tile at c (row stride ldc) to", full, sh.mr, sh.nr),
		"alpha·Σ_p a[p·MR+i]·b[p·NR+j] + beta·c, or alpha·Σ... when beta == 0",
		"(c not read), for k >= 0 steps of the packed panels a and b.",
	}
	if rows < sh.mr {
		name = sh.name(rows)
		doc = []string{
			fmt.Sprintf("%s is %s for the first %d rows", name, full, rows),
			fmt.Sprintf("of the tile (i < %d; a's panel still holds MR = %d values per step):", rows, sh.mr),
			"it writes no other row of c.",
		}
	}
	fn := f.Func(name, fmt.Sprintf("func(k int, a []%s, b []%[1]s, c []%[1]s, ldc int, alpha %[1]s, beta %[1]s)", w.Name()), 0,
		append(doc, requires)...)
	fn.Asm("MOVD %s, R0", fn.Arg("k"))
	fn.Asm("MOVD %s, R1", fn.Arg("a_base"))
	fn.Asm("MOVD %s, R2", fn.Arg("b_base"))
	fn.Asm("MOVD %s, R3", fn.Arg("c_base"))
	fn.Asm("MOVD %s, R4", fn.Arg("ldc"))
	fn.Asm("LSL $%d, R4, R4", w.Shift())
	zero(fn, 8, acc(rows, 0))
	fn.Asm("CBZ R0, store")
	fn.Label("loop")
	for v := 0; v < aVecs; v += 2 {
		fn.Asm("FLDPQ.P 32(R1), (F%d, F%d)", v, v+1)
	}
	fn.Asm("FLDPQ.P 32(R2), (F%d, F%d)", aVecs, aVecs+1)
	fn.Asm("FMOVQ.P 16(R2), F%d", aVecs+2)
	for i := 0; i < rows; i++ {
		for j := 0; j < 3; j++ {
			fn.I(w.FMLAE(acc(i, j), V(aVecs+j), V(i/w.Lanes()), i%w.Lanes()))
		}
	}
	fn.Asm("SUBS $1, R0")
	fn.Asm("BNE loop")
	fn.Label("store")
	fn.Asm("FMOV%s %s, F5", w.Scalar(), fn.Arg("alpha"))
	fn.Asm("FMOV%s %s, F6", w.Scalar(), fn.Arg("beta"))
	fn.I(w.DUP(5, 5))
	fn.Asm("FCMP%s $(0.0), F6", w.Scalar())
	fn.Asm("BEQ nobeta")
	fn.I(w.DUP(6, 6))
	// A row of C is three vectors (48 bytes) at both widths.
	for i := 0; i < rows; i++ {
		// c = beta·c, then c += alpha·acc (fused).
		fn.Asm("FLDPQ (R3), (F0, F1)")
		fn.Asm("FMOVQ 32(R3), F2")
		for j := V(0); j < 3; j++ {
			fn.I(w.FMUL(j, j, 6), w.FMLA(j, acc(i, int(j)), 5))
		}
		fn.Asm("FSTPQ (F0, F1), (R3)")
		fn.Asm("FMOVQ F2, 32(R3)")
		fn.Asm("ADD R4, R3, R3")
	}
	fn.Asm("RET")
	fn.Label("nobeta")
	for i := 0; i < rows; i++ {
		for j := V(0); j < 3; j++ {
			fn.I(w.FMUL(j, acc(i, int(j)), 5))
		}
		fn.Asm("FSTPQ (F0, F1), (R3)")
		fn.Asm("FMOVQ F2, 32(R3)")
		fn.Asm("ADD R4, R3, R3")
	}
	fn.Asm("RET")
}
