package a64

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
)

// File collects the functions of one generated assembly file, its constant
// pool and the Go declarations of its functions.
type File struct {
	cmd    string // the generating command, for the header
	text   strings.Builder
	pool   [][2]uint64
	poolAt map[[2]uint64]int
	stubs  strings.Builder
}

// NewFile starts a file written by the command cmd (as go:generate runs it).
func NewFile(cmd string) *File {
	f := &File{cmd: cmd, poolAt: map[[2]uint64]int{}}
	return f
}

// Const returns the offset in the file's pool (symbol consts<>) of the 16
// bytes lo, hi, adding them if new.
func (f *File) Const(lo, hi uint64) int {
	k := [2]uint64{lo, hi}
	if off, ok := f.poolAt[k]; ok {
		return off
	}
	off := 16 * len(f.pool)
	f.pool = append(f.pool, k)
	f.poolAt[k] = off
	return off
}

// Bits is the pool offset of the 32-bit pattern u in all four lanes.
func (f *File) Bits(u uint32) int { w := uint64(u)<<32 | uint64(u); return f.Const(w, w) }

// F32 is the pool offset of x in all four lanes.
func (f *File) F32(x float32) int { return f.Bits(math.Float32bits(x)) }

// F64 is the pool offset of x in both float64 lanes.
func (f *File) F64(x float64) int { b := math.Float64bits(x); return f.Const(b, b) }

// Lanes is the pool offset of the four given lanes.
func (f *File) Lanes(a, b, c, d uint32) int {
	return f.Const(uint64(b)<<32|uint64(a), uint64(d)<<32|uint64(c))
}

// Func is one TEXT block being written.
type Func struct {
	f    *File
	args map[string]int // argument offsets by name (x_base, alpha, ret, ...)
}

// param is one parameter of a Go signature.
type param struct{ name, typ string }

// parseSig splits "func(dst, x []float32, alpha float32) float64" into its
// parameters and result type ("" for none).
func parseSig(sig string) (ps []param, result string) {
	s := strings.TrimPrefix(sig, "func(")
	i := strings.Index(s, ")")
	args, result := s[:i], strings.TrimSpace(s[i+1:])
	var names []string
	for _, part := range strings.Split(args, ",") {
		fs := strings.Fields(part)
		names = append(names, fs[0])
		if len(fs) == 2 {
			for _, n := range names {
				ps = append(ps, param{n, fs[1]})
			}
			names = nil
		}
	}
	return ps, result
}

// layout returns the FP offsets of the arguments (slices as name_base,
// name_len, name_cap), of the result ("ret"), and the argument size.
func layout(ps []param, result string) (map[string]int, int) {
	at := map[string]int{}
	off := 0
	align := func(n int) { off = (off + n - 1) / n * n }
	for _, p := range ps {
		switch p.typ {
		case "[]float32", "[]float64":
			align(8)
			at[p.name+"_base"], at[p.name+"_len"], at[p.name+"_cap"] = off, off+8, off+16
			off += 24
		case "float32":
			align(4)
			at[p.name] = off
			off += 4
		case "int", "float64":
			align(8)
			at[p.name] = off
			off += 8
		default:
			panic("a64: unsupported parameter type " + p.typ)
		}
	}
	switch result {
	case "":
	case "float32":
		align(8)
		at["ret"] = off
		off += 4
	case "float64", "int":
		align(8)
		at["ret"] = off
		off += 8
	default:
		panic("a64: unsupported result type " + result)
	}
	return at, off
}

// Func starts the function name with Go signature sig, the given local
// frame size in bytes, and doc as its declaration's comment lines.
func (f *File) Func(name, sig string, frame int, doc ...string) *Func {
	ps, result := parseSig(sig)
	at, size := layout(ps, result)
	fmt.Fprintf(&f.text, "\n// %s\nTEXT ·%s(SB), NOSPLIT, $%d-%d\n", strings.Replace(sig, "func", "func "+name, 1), name, frame, size)
	f.stubs.WriteString("\n")
	for _, d := range doc {
		if d == "" {
			f.stubs.WriteString("//\n")
		} else {
			f.stubs.WriteString("// " + d + "\n")
		}
	}
	if strings.Contains(sig, "[]") {
		f.stubs.WriteString("//\n//go:noescape\n")
	}
	f.stubs.WriteString(strings.Replace(sig, "func", "func "+name, 1) + "\n")
	return &Func{f: f, args: at}
}

// Arg returns the FP operand of an argument: "x_base", "alpha", "ret".
func (fn *Func) Arg(name string) string {
	off, ok := fn.args[name]
	if !ok {
		panic("a64: no argument " + name)
	}
	return fmt.Sprintf("%s+%d(FP)", name, off)
}

// I writes instructions.
func (fn *Func) I(is ...Inst) {
	for _, i := range is {
		fn.f.text.WriteString("\t" + i.Line() + "\n")
	}
}

// Asm writes one line of Go assembly (a mnemonic Go has: loads, stores,
// scalar and integer ops, branches).
func (fn *Func) Asm(format string, args ...any) {
	fmt.Fprintf(&fn.f.text, "\t"+format+"\n", args...)
}

// Label writes a label.
func (fn *Func) Label(l string) { fmt.Fprintf(&fn.f.text, "\n%s:\n", l) }

// Comment writes a comment line.
func (fn *Func) Comment(c string) { fmt.Fprintf(&fn.f.text, "\t// %s\n", c) }

// Pool loads the address of the constant pool into reg.
func (fn *Func) Pool(reg string) { fn.Asm("MOVD $consts<>(SB), %s", reg) }

// Decl adds Go source (declarations of package simd) to the declarations
// file, after the functions' stubs written so far.
func (f *File) Decl(src string) { f.stubs.WriteString(src) }

// Write writes the assembly to asmPath and the declarations to stubsPath
// (gofmt'ed), both marked as generated.
func (f *File) Write(asmPath, stubsPath, pkg string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by command: %s. DO NOT EDIT.\n\n//go:build !purego\n\n#include \"textflag.h\"\n", f.cmd)
	b.WriteString(f.text.String())
	if len(f.pool) > 0 {
		b.WriteString("\n")
		for i, c := range f.pool {
			fmt.Fprintf(&b, "DATA consts<>+%d(SB)/8, $0x%016x\n", 16*i, c[0])
			fmt.Fprintf(&b, "DATA consts<>+%d(SB)/8, $0x%016x\n", 16*i+8, c[1])
		}
		fmt.Fprintf(&b, "GLOBL consts<>(SB), RODATA|NOPTR, $%d\n", 16*len(f.pool))
	}
	if err := os.WriteFile(asmPath, []byte(b.String()), 0o644); err != nil {
		return err
	}
	stubs := fmt.Sprintf("// Code generated by command: %s. DO NOT EDIT.\n\n//go:build !purego\n\npackage %s\n%s", f.cmd, pkg, f.stubs.String())
	if err := os.WriteFile(stubsPath, []byte(stubs), 0o644); err != nil {
		return err
	}
	return exec.Command("gofmt", "-w", stubsPath).Run()
}
