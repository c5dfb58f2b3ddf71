package main

import . "github.com/lanesgo/lanes/asm/gen/internal/a64"

// reduce writes the reductions of simd/reduce.go. Each folds eight vector
// accumulators (V24..V31, independent chains) over 32 floats (16 float64) an
// iteration, then single vectors into V24, folds the accumulators as a tree
// and the lanes pairwise, and finishes the last 0..3 floats (0..1 float64)
// with scalar instructions into lane 0. R0 (and R1) walk the inputs, R2
// counts. Every kernel is generated for each element width (sumNEON for Sum,
// sumF64NEON for SumF64); sumSquares, the norms' float64 sum of squares,
// widens float32 (sumSquaresNEON) and is a fold of FMLAs for float64.
func reduce(f *File) {
	for _, w := range widths {
		reduceWidth(f, w)
		if !w.Double() {
			sumSquaresWidened(f)
		}
		indexOf(f, w, "indexEq", "func(x []T, v T) int", "the first i with x[i] == v, or -1")
		indexOf(f, w, "indexNaN", "func(x []T) int", "the first i with x[i] NaN, or -1")
	}
}

func reduceWidth(f *File, w Float) {
	sc := w.Scalar()
	type fold struct {
		name, sig, doc string
		ins            int
		// init sets the accumulators V24..V31.
		init func(fn *Func)
		// step folds x (and y, the second input) into acc.
		step func(fn *Func, acc, x, y V)
		// combine folds accumulator n into d; lanes folds the lanes of V24
		// into S24; scalar folds F0 (and F8) into F24.
		combine func(d, n V) Inst
		lanes   func(fn *Func)
		scalar  func(fn *Func)
	}
	zeroAcc := func(fn *Func) { zero(fn, 24, 32) }
	firstAcc := func(fn *Func) { // every accumulator starts as x[0]
		fn.Asm("FMOV%s (R0), F24", sc)
		for r := V(24); r < 32; r++ {
			fn.I(w.DUP(r, 24))
		}
	}
	addLanes := func(fn *Func) {
		if w.Double() {
			fn.I(FADDPD(24, 24))
			return
		}
		fn.I(FADDP(24, 24, 24), FADDPS(24, 24))
	}
	for _, k := range []fold{
		{
			name: "sum", sig: "func(x []T) T", doc: "Σ x[i]", ins: 1, init: zeroAcc,
			step:    func(fn *Func, acc, x, _ V) { fn.I(w.FADD(acc, acc, x)) },
			combine: func(d, n V) Inst { return w.FADD(d, d, n) }, lanes: addLanes,
			scalar: func(fn *Func) { fn.Asm("FADD%s F0, F24", sc) },
		},
		{
			name: "sumAbs", sig: "func(x []T) T", doc: "Σ |x[i]|", ins: 1, init: zeroAcc,
			step:    func(fn *Func, acc, x, _ V) { fn.I(w.FABS(x, x), w.FADD(acc, acc, x)) },
			combine: func(d, n V) Inst { return w.FADD(d, d, n) }, lanes: addLanes,
			scalar: func(fn *Func) { fn.Asm("FABS%s F0, F0", sc); fn.Asm("FADD%s F0, F24", sc) },
		},
		{
			name: "dot", sig: "func(a, b []T) T", doc: "Σ a[i]·b[i] (fused steps)", ins: 2, init: zeroAcc,
			step:    func(fn *Func, acc, x, y V) { fn.I(w.FMLA(acc, x, y)) },
			combine: func(d, n V) Inst { return w.FADD(d, d, n) }, lanes: addLanes,
			scalar: func(fn *Func) { fn.Asm("FMADD%s F8, F24, F0, F24", sc) },
		},
		{
			name: "sumSquares", sig: "func(x []T) T", doc: "Σ x[i]² (fused steps)", ins: 1, init: zeroAcc,
			step:    func(fn *Func, acc, x, _ V) { fn.I(w.FMLA(acc, x, x)) },
			combine: func(d, n V) Inst { return w.FADD(d, d, n) }, lanes: addLanes,
			scalar: func(fn *Func) { fn.Asm("FMADD%s F0, F24, F0, F24", sc) },
		},
		{
			name: "max", sig: "func(x []T) T", doc: "the largest x[i], NaN if any is NaN (len(x) > 0)", ins: 1, init: firstAcc,
			step:    func(fn *Func, acc, x, _ V) { fn.I(w.FMAX(acc, acc, x)) },
			combine: func(d, n V) Inst { return w.FMAX(d, d, n) },
			lanes:   func(fn *Func) { fn.I(w.FMAXV(24, 24)) },
			scalar:  func(fn *Func) { fn.Asm("FMAX%s F0, F24", sc) },
		},
		{
			name: "min", sig: "func(x []T) T", doc: "the smallest x[i], NaN if any is NaN (len(x) > 0)", ins: 1, init: firstAcc,
			step:    func(fn *Func, acc, x, _ V) { fn.I(w.FMIN(acc, acc, x)) },
			combine: func(d, n V) Inst { return w.FMIN(d, d, n) },
			lanes:   func(fn *Func) { fn.I(w.FMINV(24, 24)) },
			scalar:  func(fn *Func) { fn.Asm("FMIN%s F0, F24", sc) },
		},
	} {
		if k.name == "sumSquares" && !w.Double() {
			continue // sumSquaresWidened
		}
		name := k.name + w.Suffix() + "NEON"
		fn := f.Func(name, w.Typed(k.sig), 0, name+" returns "+k.doc+".", requires)
		first := "x"
		if k.ins == 2 {
			first = "a"
			fn.Asm("MOVD %s, R1", fn.Arg("b_base"))
		}
		fn.Asm("MOVD %s, R0", fn.Arg(first+"_base"))
		fn.Asm("MOVD %s, R2", fn.Arg(first+"_len"))
		k.init(fn)
		fn.Label("loop8")
		fn.Asm("CMP $%d, R2", 8*w.Lanes())
		fn.Asm("BLT loop1")
		for i := 0; i < 8; i += 2 {
			fn.Asm("FLDPQ.P 32(R0), (F%d, F%d)", i, i+1)
			if k.ins == 2 {
				fn.Asm("FLDPQ.P 32(R1), (F%d, F%d)", 8+i, 9+i)
			}
		}
		for i := V(0); i < 8; i++ {
			k.step(fn, 24+i, i, 8+i)
		}
		fn.Asm("SUB $%d, R2", 8*w.Lanes())
		fn.Asm("B loop8")
		fn.Label("loop1")
		fn.Asm("CMP $%d, R2", w.Lanes())
		fn.Asm("BLT fold")
		fn.Asm("FMOVQ.P 16(R0), F0")
		if k.ins == 2 {
			fn.Asm("FMOVQ.P 16(R1), F8")
		}
		k.step(fn, 24, 0, 8)
		fn.Asm("SUB $%d, R2", w.Lanes())
		fn.Asm("B loop1")
		fn.Label("fold")
		tree(fn, k.combine)
		k.lanes(fn)
		fn.Label("tail")
		fn.Asm("CBZ R2, done")
		fn.Asm("FMOV%s.P %d(R0), F0", sc, w.Size())
		if k.ins == 2 {
			fn.Asm("FMOV%s.P %d(R1), F8", sc, w.Size())
		}
		k.scalar(fn)
		fn.Asm("SUB $1, R2")
		fn.Asm("B tail")
		fn.Label("done")
		fn.Asm("FMOV%s F24, %s", sc, fn.Arg("ret"))
		fn.Asm("RET")
	}
}

// sumSquaresWidened widens every float32 to float64 (FCVTL, FCVTL2) and
// folds its square into eight float64 accumulators.
func sumSquaresWidened(f *File) {
	name := "sumSquaresNEON"
	fn := f.Func(name, "func(x []float32) float64", 0, name+" returns Σ x[i]² accumulated in float64.", requires)
	fn.Asm("MOVD %s, R0", fn.Arg("x_base"))
	fn.Asm("MOVD %s, R2", fn.Arg("x_len"))
	zero(fn, 24, 32)
	fn.Label("loop4")
	fn.Asm("CMP $16, R2")
	fn.Asm("BLT loop1")
	fn.Asm("FLDPQ.P 32(R0), (F0, F1)")
	fn.Asm("FLDPQ.P 32(R0), (F2, F3)")
	for i := V(0); i < 4; i++ {
		fn.I(FCVTL(4+2*i, i), FCVTL2(5+2*i, i))
	}
	for i := V(0); i < 8; i++ {
		fn.I(FMLAD(24+i, 4+i, 4+i))
	}
	fn.Asm("SUB $16, R2")
	fn.Asm("B loop4")
	fn.Label("loop1")
	fn.Asm("CMP $4, R2")
	fn.Asm("BLT fold")
	fn.Asm("FMOVQ.P 16(R0), F0")
	fn.I(FCVTL(4, 0), FCVTL2(5, 0), FMLAD(24, 4, 4), FMLAD(25, 5, 5))
	fn.Asm("SUB $4, R2")
	fn.Asm("B loop1")
	fn.Label("fold")
	tree(fn, func(d, n V) Inst { return FADDD(d, d, n) })
	fn.I(FADDPD(24, 24))
	fn.Label("tail")
	fn.Asm("CBZ R2, done")
	fn.Asm("FMOVS.P 4(R0), F0")
	fn.Asm("FCVTSD F0, F0")
	fn.Asm("FMADDD F0, F24, F0, F24")
	fn.Asm("SUB $1, R2")
	fn.Asm("B tail")
	fn.Label("done")
	fn.Asm("FMOVD F24, %s", fn.Arg("ret"))
	fn.Asm("RET")
}

// indexOf writes indexEq (x[i] == v) or indexNaN: sixteen floats an
// iteration are compared and the lane masks merged into one test; on a hit
// (or for the last floats) a scalar scan finds the exact index.
func indexOf(f *File, w Float, base, sig, doc string) {
	name := base + w.Suffix() + "NEON"
	eq := base == "indexEq"
	sc, lanes := w.Scalar(), w.Lanes()
	fn := f.Func(name, w.Typed(sig), 0, name+" returns "+doc+".", requires)
	fn.Asm("MOVD %s, R0", fn.Arg("x_base"))
	fn.Asm("MOVD %s, R2", fn.Arg("x_len"))
	fn.Asm("MOVD R0, R3")
	if eq {
		fn.Asm("FMOV%s %s, F31", sc, fn.Arg("v"))
		fn.I(w.DUP(31, 31))
	}
	// hits compares vector r; merge folds two masks; test branches to hit
	// when the merged mask has a lane of interest.
	hits := func(r V) Inst {
		if eq {
			return w.FCMEQ(r, r, 31)
		}
		return w.FCMEQ(r, r, r) // ordered lanes set
	}
	merge := ORR // indexEq: any lane equal
	if !eq {
		merge = AND // indexNaN: any lane not ordered
	}
	test := func(fn *Func, hit string) {
		if eq {
			fn.I(UMAXV(0, 0))
			fn.Asm("FMOVS F0, R4")
			fn.Asm("CBNZ R4, %s", hit)
		} else {
			fn.I(UMINV(0, 0))
			fn.Asm("FMOVS F0, R4")
			fn.Asm("CBZ R4, %s", hit)
		}
	}
	// Labels name the elements a block holds at float32 (found16, found4).
	fn.Label("loop4")
	fn.Asm("CMP $%d, R2", 4*lanes)
	fn.Asm("BLT loop1")
	fn.Asm("FLDPQ.P 32(R0), (F0, F1)")
	fn.Asm("FLDPQ.P 32(R0), (F2, F3)")
	fn.I(hits(0), hits(1), hits(2), hits(3), merge(0, 0, 1), merge(2, 2, 3), merge(0, 0, 2))
	test(fn, "found16")
	fn.Asm("SUB $%d, R2", 4*lanes)
	fn.Asm("B loop4")
	fn.Label("found16")
	fn.Asm("SUB $64, R0")
	fn.Asm("MOVD $%d, R2", 4*lanes)
	fn.Asm("B scalar")
	fn.Label("loop1")
	fn.Asm("CMP $%d, R2", lanes)
	fn.Asm("BLT scalar")
	fn.Asm("FMOVQ.P 16(R0), F0")
	fn.I(hits(0))
	test(fn, "found4")
	fn.Asm("SUB $%d, R2", lanes)
	fn.Asm("B loop1")
	fn.Label("found4")
	fn.Asm("SUB $16, R0")
	fn.Asm("MOVD $%d, R2", lanes)
	fn.Label("scalar")
	fn.Asm("CBZ R2, none")
	fn.Asm("FMOV%s.P %d(R0), F0", sc, w.Size())
	if eq {
		fn.Asm("FCMP%s F31, F0", sc)
		fn.Asm("BEQ hit")
	} else {
		fn.Asm("FCMP%s F0, F0", sc)
		fn.Asm("BVS hit")
	}
	fn.Asm("SUB $1, R2")
	fn.Asm("B scalar")
	fn.Label("hit")
	fn.Asm("SUB R3, R0, R0")
	fn.Asm("LSR $%d, R0, R0", w.Shift())
	fn.Asm("SUB $1, R0, R0")
	fn.Asm("MOVD R0, %s", fn.Arg("ret"))
	fn.Asm("RET")
	fn.Label("none")
	fn.Asm("MOVD $-1, R0")
	fn.Asm("MOVD R0, %s", fn.Arg("ret"))
	fn.Asm("RET")
}

// zero clears the registers from..to-1.
func zero(fn *Func, from, to V) {
	for r := from; r < to; r++ {
		fn.I(EOR(r, r, r))
	}
}

// tree folds the eight accumulators V24..V31 into V24 pairwise, in three
// independent levels.
func tree(fn *Func, combine func(d, n V) Inst) {
	for w := V(1); w < 8; w *= 2 {
		for r := V(24); r < 32; r += 2 * w {
			fn.I(combine(r, r+w))
		}
	}
}
