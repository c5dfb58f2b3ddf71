// Command arm64 writes the NEON kernels of package simd: one assembly file
// and one declarations file per kernel family (simd/arith_arm64.s,
// reduce_arm64.s, transcend_arm64.s, sgemm_arm64.s and their
// *_stubs_arm64.go), in Go's arm64 assembler syntax, with the Advanced SIMD
// instructions Go has no mnemonic for written as WORDs by package a64.
//
// Elementwise kernels (arith, transcend) are described once, as straight-line
// code on values (a64.B); the loop skeleton (elementwise.go) runs it on four
// vectors per iteration, then on one, then on a tail of fewer than four
// floats copied through a buffer on the stack, so nothing outside the slices
// is read or written. Reductions and the SGEMM microkernel are written with
// fixed registers.
package main

//go:generate go run . -dir ../../../simd

import (
	"flag"
	"log"
	"path/filepath"

	"github.com/lanesgo/lanes/asm/gen/internal/a64"
)

func main() {
	dir := flag.String("dir", "../../../simd", "package simd's directory")
	flag.Parse()
	for _, fam := range []struct {
		name string
		gen  func(f *a64.File)
	}{
		{"arith", arith},
		{"reduce", reduce},
		{"transcend", transcend},
		{"sgemm", gemm},
	} {
		f := a64.NewFile("go run . -dir ../../../simd (in asm/gen/arm64)")
		fam.gen(f)
		if err := f.Write(filepath.Join(*dir, fam.name+"_arm64.s"), filepath.Join(*dir, fam.name+"_stubs_arm64.go"), "simd"); err != nil {
			log.Fatal(err)
		}
	}
}

const requires = "Requires: NEON (Advanced SIMD, part of every arm64 CPU)."

// widths are the element widths the elementwise and reduction families are
// generated for.
var widths = []a64.Float{a64.F32, a64.F64}
