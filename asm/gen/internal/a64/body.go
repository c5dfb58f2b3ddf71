package a64

import (
	"fmt"
	"sort"
)

// Val is a value of straight-line vector code recorded by a B: a vector per
// copy of the body (the loop processes G copies, independent vectors, per
// iteration), or one register shared by all copies (constants, parameters,
// accumulators).
type Val struct{ id int }

type valInfo struct {
	uniform bool
	pinned  bool // lives in a fixed register for the whole function
	reg     V    // pinned register
	konst   bool // a constant of the pool
	off     int  // its pool offset
}

type instKind int

const (
	kOp    instKind = iota
	kLoad           // one vector per copy from ptr, post-incremented
	kStore          // one vector per copy to ptr, post-incremented
)

// inst is one recorded operation.
type inst struct {
	kind instKind
	enc  func(d V, s []V) Inst
	dst  *Val
	src  []Val
	tied int  // index of the source that shares dst's register, or -1
	sel  bool // src = mask, t, f: BSL, BIT or BIF, whichever source dies
	ptr  string
}

// B records a body of vector code for register allocation.
type B struct {
	f      *File
	vals   []valInfo
	consts map[int]Val // by pool offset
	insts  []inst
	pinned []pin
}

type pin struct {
	v    Val
	init func(fn *Func, r V)
}

// NewB starts a body whose constants go to f's pool.
func NewB(f *File) *B { return &B{f: f, consts: map[int]Val{}} }

func (b *B) val(vi valInfo) Val {
	b.vals = append(b.vals, vi)
	return Val{len(b.vals) - 1}
}

// Pin declares a value that lives in its own register for the whole
// function; init writes the prologue code that sets register r.
// Pinned registers are handed out from V31 down, in declaration order.
func (b *B) Pin(init func(fn *Func, r V)) Val {
	r := V(31 - len(b.pinned))
	v := b.val(valInfo{uniform: true, pinned: true, reg: r})
	b.pinned = append(b.pinned, pin{v, init})
	return v
}

// Reg returns the register of a pinned value.
func (b *B) Reg(v Val) V { return b.vals[v.id].reg }

// Const is the 16-byte pool entry at off as a value.
func (b *B) Const(off int) Val {
	if v, ok := b.consts[off]; ok {
		return v
	}
	v := b.val(valInfo{uniform: true, konst: true, off: off})
	b.consts[off] = v
	return v
}

// F is the float32 x in every lane; Bits the pattern u; D the float64 x.
func (b *B) F(x float32) Val   { return b.Const(b.f.F32(x)) }
func (b *B) Bits(u uint32) Val { return b.Const(b.f.Bits(u)) }
func (b *B) D(x float64) Val   { return b.Const(b.f.F64(x)) }

// Load reads one vector per copy from ptr.
func (b *B) Load(ptr string) Val {
	v := b.val(valInfo{})
	b.insts = append(b.insts, inst{kind: kLoad, dst: &v, ptr: ptr, tied: -1})
	return v
}

// Store writes v (one vector per copy) to ptr.
func (b *B) Store(ptr string, v Val) {
	b.insts = append(b.insts, inst{kind: kStore, src: []Val{v}, ptr: ptr, tied: -1})
}

func (b *B) op(enc func(d V, s []V) Inst, tied int, src ...Val) Val {
	uni := true
	for _, s := range src {
		uni = uni && b.vals[s.id].uniform
	}
	v := b.val(valInfo{uniform: uni})
	b.insts = append(b.insts, inst{kind: kOp, enc: enc, dst: &v, src: src, tied: tied})
	return v
}

// Op2 is enc(d, a, c) into a new value.
func (b *B) Op2(enc func(d, n, m V) Inst, a, c Val) Val {
	return b.op(func(d V, s []V) Inst { return enc(d, s[0], s[1]) }, -1, a, c)
}

// Op1 is enc(d, a) into a new value.
func (b *B) Op1(enc func(d, n V) Inst, a Val) Val {
	return b.op(func(d V, s []V) Inst { return enc(d, s[0]) }, -1, a)
}

// Tied2 is enc(d, a, c) where d starts as acc and is updated (FMLA, FCVTN2).
func (b *B) Tied2(enc func(d, n, m V) Inst, acc, a, c Val) Val {
	return b.op(func(d V, s []V) Inst { return enc(d, s[1], s[2]) }, 0, acc, a, c)
}

// Tied1 is enc(d, a) where d starts as acc and keeps part of it (FCVTN2).
func (b *B) Tied1(enc func(d, n V) Inst, acc, a Val) Val {
	return b.op(func(d V, s []V) Inst { return enc(d, s[1]) }, 0, acc, a)
}

// Sel is t where the lanes of mask are set, f elsewhere.
func (b *B) Sel(mask, t, f Val) Val {
	v := b.op(nil, -1, mask, t, f)
	b.insts[len(b.insts)-1].sel = true
	return v
}

// Update applies acc = enc(acc, x) to the pinned value acc, in place.
func (b *B) Update(enc func(d, n, m V) Inst, acc, x Val) {
	if !b.vals[acc.id].pinned {
		panic("a64: Update of a value that is not pinned")
	}
	a := acc
	b.insts = append(b.insts, inst{kind: kOp, enc: func(d V, s []V) Inst { return enc(d, s[0], s[1]) }, dst: &a, src: []Val{acc, x}, tied: 0})
}

// Init writes the prologue code of the pinned values.
func (b *B) Init(fn *Func) {
	for _, p := range b.pinned {
		p.init(fn, b.vals[p.v.id].reg)
	}
}

// vreg is one register's worth of a value: copy j of v (0 if uniform).
type vreg struct{ v, j int }

// line is one instruction of the expanded body on vregs.
type line struct {
	dsts []vreg
	srcs []vreg
	tied int
	sel  bool
	emit func(d, s []V) []Inst // or asm text via text
	text func(d, s []V) string
}

// Code is an allocated body: its lines and the constants hoisted into
// registers (pool offset -> register), which the prologue must load.
type Code struct {
	Lines   []string
	Hoisted map[int]V
}

// Expand allocates registers for g copies of the body. Constants are
// hoisted into registers, most used first, as far as registers allow; the
// rest are loaded from the pool (base register pool) before each use.
// hoist, if not nil, fixes the hoisted set (so two expansions of one
// function share its prologue).
func (b *B) Expand(g int, pool string, hoist map[int]V) (Code, error) {
	if hoist != nil {
		return b.expand(g, pool, hoist)
	}
	// Constants by number of uses, most used first.
	uses := map[int]int{}
	for _, in := range b.insts {
		for _, s := range in.src {
			if vi := b.vals[s.id]; vi.konst {
				uses[vi.off]++
			}
		}
	}
	var offs []int
	for off := range uses {
		offs = append(offs, off)
	}
	sort.Slice(offs, func(i, j int) bool {
		if uses[offs[i]] != uses[offs[j]] {
			return uses[offs[i]] > uses[offs[j]]
		}
		return offs[i] < offs[j]
	})
	var lastErr error
	for n := min(len(offs), 32-len(b.pinned)); n >= 0; n-- {
		h := map[int]V{}
		for i, off := range offs[:n] {
			h[off] = V(31 - len(b.pinned) - i)
		}
		c, err := b.expand(g, pool, h)
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	return Code{}, lastErr
}

func (b *B) expand(g int, pool string, hoist map[int]V) (Code, error) {
	var lines []line
	ntmp := len(b.vals)
	copyOf := func(v Val, j int) vreg {
		if b.vals[v.id].uniform {
			return vreg{v.id, 0}
		}
		return vreg{v.id, j}
	}
	for _, in := range b.insts {
		// Constants that are not hoisted are loaded for this instruction.
		src := append([]Val(nil), in.src...)
		for i, s := range src {
			vi := b.vals[s.id]
			if !vi.konst {
				continue
			}
			if _, ok := hoist[vi.off]; ok {
				continue
			}
			t := vreg{ntmp, 0}
			ntmp++
			off := vi.off
			lines = append(lines, line{dsts: []vreg{t}, tied: -1, text: func(d, _ []V) string {
				return fmt.Sprintf("FMOVQ %d(%s), F%d", off, pool, d[0])
			}})
			src[i] = Val{-1 - t.v} // marks a temporary
		}
		srcReg := func(s Val, j int) vreg {
			if s.id < 0 {
				return vreg{-1 - s.id, 0}
			}
			return copyOf(s, j)
		}
		switch in.kind {
		case kLoad, kStore:
			for j := 0; j < g; j += 2 {
				n := min(2, g-j)
				var vs []vreg
				for k := 0; k < n; k++ {
					if in.kind == kLoad {
						vs = append(vs, vreg{in.dst.id, j + k})
					} else {
						vs = append(vs, srcReg(src[0], j+k))
					}
				}
				ptr, load := in.ptr, in.kind == kLoad
				ln := line{tied: -1, text: func(d, s []V) string {
					switch {
					case load && len(d) == 1:
						return fmt.Sprintf("FMOVQ.P 16(%s), F%d", ptr, d[0])
					case load:
						return fmt.Sprintf("FLDPQ.P 32(%s), (F%d, F%d)", ptr, d[0], d[1])
					case len(s) == 1:
						return fmt.Sprintf("FMOVQ.P F%d, 16(%s)", s[0], ptr)
					}
					return fmt.Sprintf("FSTPQ.P (F%d, F%d), 32(%s)", s[0], s[1], ptr)
				}}
				if load {
					ln.dsts = vs
				} else {
					ln.srcs = vs
				}
				lines = append(lines, ln)
			}
		case kOp:
			// One instruction per copy unless every source is shared
			// (an update of a pinned accumulator runs once per copy).
			copies := 1
			for _, s := range in.src {
				if !b.vals[s.id].uniform {
					copies = g
				}
			}
			for j := 0; j < copies; j++ {
				ln := line{dsts: []vreg{copyOf(*in.dst, j)}, tied: in.tied, sel: in.sel}
				for _, s := range src {
					ln.srcs = append(ln.srcs, srcReg(s, j))
				}
				enc := in.enc
				if !in.sel {
					ln.emit = func(d, s []V) []Inst { return []Inst{enc(d[0], s)} }
				}
				lines = append(lines, ln)
			}
		}
	}
	return b.allocate(lines, hoist)
}

// allocate assigns registers to the lines' vregs by a linear scan: a
// register is free again after the last line that reads its value.
func (b *B) allocate(lines []line, hoist map[int]V) (Code, error) {
	last := map[vreg]int{}
	for i, ln := range lines {
		for _, s := range ln.srcs {
			last[s] = i
		}
	}
	reg := map[vreg]V{}
	fixed := map[vreg]bool{}
	used := map[V]bool{}
	for id, vi := range b.vals {
		switch {
		case vi.pinned:
			reg[vreg{id, 0}], fixed[vreg{id, 0}] = vi.reg, true
			used[vi.reg] = true
		case vi.konst:
			if r, ok := hoist[vi.off]; ok {
				reg[vreg{id, 0}], fixed[vreg{id, 0}] = r, true
				used[r] = true
			}
		}
	}
	var free []V // lowest first
	for r := V(0); r < 32; r++ {
		if !used[r] {
			free = append(free, r)
		}
	}
	alloc := func() (V, error) {
		if len(free) == 0 {
			return 0, fmt.Errorf("out of vector registers")
		}
		sort.Slice(free, func(i, j int) bool { return free[i] < free[j] })
		r := free[0]
		free = free[1:]
		return r, nil
	}
	release := func(v vreg) {
		if !fixed[v] {
			free = append(free, reg[v])
		}
	}
	var out []string
	for i, ln := range lines {
		s := make([]V, len(ln.srcs))
		for k, v := range ln.srcs {
			r, ok := reg[v]
			if !ok {
				return Code{}, fmt.Errorf("line %d reads an undefined value", i)
			}
			s[k] = r
		}
		dying := func(k int) bool { v := ln.srcs[k]; return !fixed[v] && last[v] == i }
		var d []V
		var insts []Inst
		tied := -1
		if ln.sel {
			// BSL overwrites the mask, BIT the false value, BIF the true value.
			switch {
			case dying(0):
				tied = 0
				ln.emit = func(d, s []V) []Inst { return []Inst{BSL(d[0], s[1], s[2])} }
			case dying(2):
				tied = 2
				ln.emit = func(d, s []V) []Inst { return []Inst{BIT(d[0], s[1], s[0])} }
			case dying(1):
				tied = 1
				ln.emit = func(d, s []V) []Inst { return []Inst{BIF(d[0], s[2], s[0])} }
			default:
				tied = 0
				ln.emit = func(d, s []V) []Inst { return []Inst{BSL(d[0], s[1], s[2])} }
			}
		} else {
			tied = ln.tied
		}
		done := map[vreg]bool{}
		switch {
		case tied >= 0 && fixed[ln.dsts[0]]:
			// An in-place update of a pinned value.
			d = []V{reg[ln.dsts[0]]}
		case tied >= 0 && dying(tied):
			d = []V{s[tied]}
			done[ln.srcs[tied]] = true
		case tied >= 0:
			r, err := alloc()
			if err != nil {
				return Code{}, fmt.Errorf("line %d: %v", i, err)
			}
			insts = append(insts, MOV(r, s[tied]))
			d = []V{r}
		}
		// Free the other sources that die here, then give the new values
		// registers (an instruction reads all sources before it writes).
		for k, v := range ln.srcs {
			if dying(k) && !done[v] {
				done[v] = true
				release(v)
			}
		}
		if d == nil {
			for range ln.dsts {
				r, err := alloc()
				if err != nil {
					return Code{}, fmt.Errorf("line %d: %v", i, err)
				}
				d = append(d, r)
			}
		}
		for k, v := range ln.dsts {
			if !fixed[v] {
				reg[v] = d[k]
			}
		}
		for _, in := range insts {
			out = append(out, in.Line())
		}
		if ln.text != nil {
			out = append(out, ln.text(d, s))
		} else {
			for _, in := range ln.emit(d, s) {
				out = append(out, in.Line())
			}
		}
		for _, v := range ln.dsts {
			if _, read := last[v]; !read && !fixed[v] {
				release(v) // a value nothing reads
			}
		}
	}
	return Code{Lines: out, Hoisted: hoist}, nil
}
