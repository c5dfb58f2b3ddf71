package elem

import (
	"fmt"
	"strings"
)

// GemmTailRows lists the row counts of the row-tail kernels of a GEMM
// microkernel whose tile has mr rows: every even count below mr. Both
// writers (asm/gen/sgemm, asm/gen/arm64) emit a tail for each, and their
// table (GemmTailTable) is how package simd finds them; a panel of an odd
// number of rows runs on the next even tail.
func GemmTailRows(mr int) []int {
	var rows []int
	for r := 2; r < mr; r += 2 {
		rows = append(rows, r)
	}
	return rows
}

// GemmTailTable returns the Go declaration of var table: the row tails of
// the microkernel full, of element type t and mr rows, indexed by the rows
// each computes (nil where there is none), kernel(r) naming the tail of r
// rows. Package simd's gemmKernels.tails takes it as it is.
func GemmTailTable(t Type, table, full string, mr int, kernel func(rows int) string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n// %s lists %s's row tails by the rows each computes.\n", table, full)
	fmt.Fprintf(&b, "var %s = []func(k int, a, b, c []%s, ldc int, alpha, beta %[2]s){\n", table, t.Name())
	for _, r := range GemmTailRows(mr) {
		fmt.Fprintf(&b, "\t%d: %s,\n", r, kernel(r))
	}
	b.WriteString("}\n")
	return b.String()
}
