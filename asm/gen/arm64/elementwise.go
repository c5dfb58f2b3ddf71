package main

import (
	"fmt"
	"log"
	"sort"
	"strings"

	. "github.com/lanesgo/lanes/asm/gen/internal/a64"
)

// Registers of the elementwise skeleton: R0 dst, R1.. inputs, R3 the count
// left, R4 the tail flag, R5/R6 the saved dst and tail length, R7/R8
// scratch, R9 the constant pool. (R3 follows at most two inputs.)
const (
	rDst   = "R0"
	rCount = "R3"
	rPool  = "R9"
)

var rIn = []string{"R1", "R2"}

// ew is one elementwise kernel.
type ew struct {
	w         Float // element width: F32 (the zero value) or F64
	name, sig string
	dst       string   // dst parameter (its length is the count)
	ins       []string // input slice parameters, in load order
	doc       []string
	// body computes the outputs from the inputs (one Val per input) and
	// returns the value to store, or nil for none (sumExp). mask, when the
	// kernel asks for one, is all ones except in the tail, where only the
	// lanes holding data are set.
	body func(b *B, in []Val, mask *Val) *Val
	mask bool
	// end, if set, writes the code after the loops (a reduction's fold and
	// result) from the prologue's pinned values.
	end func(fn *Func, b *B)
}

// elementwise writes one kernel.
func elementwise(f *File, k ew) {
	var mask Val
	record := func() (*B, *Val) {
		b := NewB(f)
		if k.mask {
			mask = b.Pin(func(fn *Func, r V) { fn.I(ONES(r)) })
		}
		var in []Val
		for i := range k.ins {
			in = append(in, b.Load(rIn[i]))
		}
		var mp *Val
		if k.mask {
			mp = &mask
		}
		out := k.body(b, in, mp)
		if out != nil {
			b.Store(rDst, *out)
		}
		return b, out
	}
	lanes, sc := k.w.Lanes(), k.w.Scalar()
	// Four vectors an iteration where the registers allow, else two.
	b4, out := record()
	g := 4
	code4, err := b4.Expand(g, rPool, nil)
	if err != nil {
		g = 2
		if code4, err = b4.Expand(g, rPool, nil); err != nil {
			log.Fatalf("%s: two vectors: %v", k.name, err)
		}
	}
	b1, _ := record()
	code1, err := b1.Expand(1, rPool, code4.Hoisted)
	if err != nil {
		log.Fatalf("%s: one vector: %v", k.name, err)
	}
	for _, r := range []V{0, 1} {
		for _, h := range code4.Hoisted {
			if h == r {
				log.Fatalf("%s: the tail needs V0 and V1, but constants fill the registers", k.name)
			}
		}
	}

	frame := 16 * len(k.ins)
	fn := f.Func(k.name, k.sig, frame, k.doc...)
	buf := func(i int) string { return fmt.Sprintf("$buf%d-%d(SP)", i, 16*(i+1)) }
	fn.Asm("MOVD %s, %s", fn.Arg(k.dst+"_base"), rDst)
	fn.Asm("MOVD %s, %s", fn.Arg(k.dst+"_len"), rCount)
	for i, in := range k.ins {
		if in != k.dst {
			fn.Asm("MOVD %s, %s", fn.Arg(in+"_base"), rIn[i])
		} else {
			fn.Asm("MOVD %s, %s", rDst, rIn[i])
		}
	}
	if usesPool(code4, k.mask) {
		fn.Pool(rPool)
	}
	fn.Asm("MOVD ZR, R4")
	b4.Init(fn)
	var offs []int
	for off := range code4.Hoisted {
		offs = append(offs, off)
	}
	sort.Ints(offs)
	for _, off := range offs {
		fn.Asm("FMOVQ %d(%s), F%d", off, rPool, code4.Hoisted[off])
	}

	fn.Label("loop4")
	fn.Comment(fmt.Sprintf("%d vectors an iteration", g))
	fn.Asm("CMP $%d, %s", lanes*g, rCount)
	fn.Asm("BLT loop1")
	for _, l := range code4.Lines {
		fn.Asm("%s", l)
	}
	fn.Asm("SUB $%d, %s", lanes*g, rCount)
	fn.Asm("B loop4")

	fn.Label("loop1")
	fn.Asm("CMP $%d, %s", lanes, rCount)
	fn.Asm("BLT tail")
	fn.Label("one")
	for _, l := range code1.Lines {
		fn.Asm("%s", l)
	}
	fn.Asm("SUB $%d, %s", lanes, rCount)
	fn.Asm("B loop1")

	// The tail: copy the last 1..3 floats (one float64) of each input to a
	// buffer on the stack, run the one-vector body there once, copy the
	// results back.
	fn.Label("tail")
	fn.Asm("CBNZ R4, back")
	fn.Asm("CBZ %s, done", rCount)
	fn.Asm("MOVD %s, R5", rDst)
	fn.Asm("MOVD %s, R6", rCount)
	fn.Asm("MOVD $1, R4")
	for i := range k.ins {
		fn.Asm("MOVD %s, R7", buf(i))
		fn.Asm("MOVD %s, R8", rCount)
		fn.Label(fmt.Sprintf("in%d", i))
		fn.Asm("FMOV%s.P %d(%s), F0", sc, k.w.Size(), rIn[i])
		fn.Asm("FMOV%s.P F0, %d(R7)", sc, k.w.Size())
		fn.Asm("SUBS $1, R8")
		fn.Asm("BNE in%d", i)
		fn.Asm("MOVD %s, %s", buf(i), rIn[i])
	}
	fn.Asm("MOVD %s, %s", buf(0), rDst)
	if k.mask {
		// lane j: count > j, compared in 32-bit halves (float64 lane j
		// is the pair 2j, 2j+1, both compared with j).
		idx := f.Lanes(0, 1, 2, 3)
		if k.w.Double() {
			idx = f.Lanes(0, 0, 1, 1)
		}
		fn.Asm("FMOVQ %d(%s), F0", idx, rPool)
		fn.Asm("VDUP %s, V1.S4", rCount)
		fn.I(CMGT(b4.Reg(mask), 1, 0))
	}
	fn.Asm("MOVD $%d, %s", lanes, rCount)
	fn.Asm("B one")
	fn.Label("back")
	if out != nil {
		fn.Asm("MOVD %s, R7", buf(0))
		fn.Label("out")
		fn.Asm("FMOV%s.P %d(R7), F0", sc, k.w.Size())
		fn.Asm("FMOV%s.P F0, %d(R5)", sc, k.w.Size())
		fn.Asm("SUBS $1, R6")
		fn.Asm("BNE out")
	}
	fn.Label("done")
	if k.end != nil {
		k.end(fn, b4)
	}
	fn.Asm("RET")
}

// scalarPin broadcasts the float argument name (of width w) into a pinned
// register.
func scalarPin(b *B, w Float, name string) Val {
	return b.Pin(func(fn *Func, r V) {
		fn.Asm("FMOV%s %s, F%d", w.Scalar(), fn.Arg(name), r)
		fn.I(w.DUP(r, r))
	})
}

// usesPool reports whether a kernel reads the constant pool.
func usesPool(c Code, mask bool) bool {
	if mask || len(c.Hoisted) > 0 {
		return true
	}
	for _, l := range c.Lines {
		if strings.Contains(l, "("+rPool+")") {
			return true
		}
	}
	return false
}
