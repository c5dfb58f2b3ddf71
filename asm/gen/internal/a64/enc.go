// Package a64 writes arm64 NEON kernels in Go's assembler syntax: an
// instruction encoder for the Advanced SIMD forms Go's assembler has no
// mnemonic for (emitted as WORD $0x... with the GNU syntax as a comment), a
// builder of straight-line vector code on virtual registers with a register
// allocator, and the file, frame and stub writing the generators share.
//
// Every Inst carries its 32-bit encoding, whether it is printed as a Go
// mnemonic or as a WORD, so enc_test.go can check all of them against the
// GNU assembler (aarch64-linux-gnu-as, when installed).
package a64

import "fmt"

// V is a vector register, V0..V31.
type V uint8

// Inst is one instruction: its encoding, its GNU spelling, and its Go
// spelling where Go's assembler has the mnemonic ("" means WORD).
type Inst struct {
	Word uint32
	GNU  string
	Go   string
}

// Line is the text of the instruction in a Go assembly file.
func (i Inst) Line() string {
	if i.Go != "" {
		return i.Go
	}
	return fmt.Sprintf("WORD $0x%08x // %s", i.Word, i.GNU)
}

// Arrangements the encoders use.
const (
	S4  = "4s"
	D2  = "2d"
	B16 = "16b"
)

var goArr = map[string]string{S4: "S4", D2: "D2", B16: "B16"}

func rd(d, n, m V) uint32 { return uint32(m)<<16 | uint32(n)<<5 | uint32(d) }

// three is a three-register op (GNU: op vd, vn, vm).
func three(base uint32, name, arr string, d, n, m V) Inst {
	return Inst{
		Word: base | rd(d, n, m),
		GNU:  fmt.Sprintf("%s v%d.%s, v%d.%s, v%d.%s", name, d, arr, n, arr, m, arr),
	}
}

// native adds Go's spelling of a three-register op (Go: OP Vm, Vn, Vd).
func native(i Inst, goName, arr string, d, n, m V) Inst {
	a := goArr[arr]
	i.Go = fmt.Sprintf("%s V%d.%s, V%d.%s, V%d.%s", goName, m, a, n, a, d, a)
	return i
}

// two is a two-register op (GNU: op vd, vn).
func two(base uint32, name, arrD, arrN string, d, n V) Inst {
	return Inst{
		Word: base | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("%s v%d.%s, v%d.%s", name, d, arrD, n, arrN),
	}
}

// Float arithmetic, 4 lanes of float32 or (the D forms) 2 of float64.

func FADD(d, n, m V) Inst  { return three(0x4E20D400, "fadd", S4, d, n, m) }
func FSUB(d, n, m V) Inst  { return three(0x4EA0D400, "fsub", S4, d, n, m) }
func FMUL(d, n, m V) Inst  { return three(0x6E20DC00, "fmul", S4, d, n, m) }
func FDIV(d, n, m V) Inst  { return three(0x6E20FC00, "fdiv", S4, d, n, m) }
func FMAX(d, n, m V) Inst  { return three(0x4E20F400, "fmax", S4, d, n, m) }
func FMIN(d, n, m V) Inst  { return three(0x4EA0F400, "fmin", S4, d, n, m) }
func FADDP(d, n, m V) Inst { return three(0x6E20D400, "faddp", S4, d, n, m) }

// FMLA is d += n·m (fused); Go has the mnemonic.
func FMLA(d, n, m V) Inst {
	return native(three(0x4E20CC00, "fmla", S4, d, n, m), "VFMLA", S4, d, n, m)
}

// FMLS is d -= n·m (fused); Go has the mnemonic.
func FMLS(d, n, m V) Inst {
	return native(three(0x4EA0CC00, "fmls", S4, d, n, m), "VFMLS", S4, d, n, m)
}

func FADDD(d, n, m V) Inst { return three(0x4E60D400, "fadd", D2, d, n, m) }
func FSUBD(d, n, m V) Inst { return three(0x4EE0D400, "fsub", D2, d, n, m) }
func FMULD(d, n, m V) Inst { return three(0x6E60DC00, "fmul", D2, d, n, m) }
func FMLAD(d, n, m V) Inst {
	return native(three(0x4E60CC00, "fmla", D2, d, n, m), "VFMLA", D2, d, n, m)
}

// FMLAE is d += n·m.s[i], the by-element form (SGEMM's broadcast of A).
func FMLAE(d, n, m V, i int) Inst {
	return Inst{
		Word: 0x4F801000 | uint32(i&1)<<21 | uint32(i>>1)<<11 | rd(d, n, m),
		GNU:  fmt.Sprintf("fmla v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i),
	}
}

// Comparisons set a lane to all ones where they hold, to zero elsewhere
// (false for NaN).

func FCMEQ(d, n, m V) Inst { return three(0x4E20E400, "fcmeq", S4, d, n, m) }
func FCMGE(d, n, m V) Inst { return three(0x6E20E400, "fcmge", S4, d, n, m) }
func FCMGT(d, n, m V) Inst { return three(0x6EA0E400, "fcmgt", S4, d, n, m) }

// Comparisons with zero.
func zero(base uint32, name string, d, n V) Inst {
	return Inst{
		Word: base | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("%s v%d.4s, v%d.4s, #0.0", name, d, n),
	}
}

func FCMGT0(d, n V) Inst { return zero(0x4EA0C800, "fcmgt", d, n) }
func FCMGE0(d, n V) Inst { return zero(0x6EA0C800, "fcmge", d, n) }
func FCMLT0(d, n V) Inst { return zero(0x4EA0E800, "fcmlt", d, n) }
func FCMEQ0(d, n V) Inst { return zero(0x4EA0D800, "fcmeq", d, n) }

// One-operand float ops and conversions.

func FABS(d, n V) Inst   { return two(0x4EA0F800, "fabs", S4, S4, d, n) }
func FNEG(d, n V) Inst   { return two(0x6EA0F800, "fneg", S4, S4, d, n) }
func FSQRT(d, n V) Inst  { return two(0x6EA1F800, "fsqrt", S4, S4, d, n) }
func FRINTN(d, n V) Inst { return two(0x4E218800, "frintn", S4, S4, d, n) }
func FCVTZS(d, n V) Inst { return two(0x4EA1B800, "fcvtzs", S4, S4, d, n) }
func SCVTF(d, n V) Inst  { return two(0x4E21D800, "scvtf", S4, S4, d, n) }

// FCVTL widens the low two float32 lanes of n to float64; FCVTL2 the high two.
func FCVTL(d, n V) Inst  { return two(0x0E617800, "fcvtl", D2, "2s", d, n) }
func FCVTL2(d, n V) Inst { return two(0x4E617800, "fcvtl2", D2, S4, d, n) }

// FCVTN rounds the float64 lanes of n into the low half of d (high half
// zeroed); FCVTN2 into the high half, keeping the low.
func FCVTN(d, n V) Inst  { return two(0x0E616800, "fcvtn", "2s", D2, d, n) }
func FCVTN2(d, n V) Inst { return two(0x4E616800, "fcvtn2", S4, D2, d, n) }

// Reductions across the lanes into the scalar register d.
func across(base uint32, name, scalar, arr string, d, n V) Inst {
	return Inst{
		Word: base | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("%s %s%d, v%d.%s", name, scalar, d, n, arr),
	}
}

func FMAXV(d, n V) Inst { return across(0x6E30F800, "fmaxv", "s", S4, d, n) }
func FMINV(d, n V) Inst { return across(0x6EB0F800, "fminv", "s", S4, d, n) }
func UMAXV(d, n V) Inst { return across(0x6EB0A800, "umaxv", "s", S4, d, n) }
func UMINV(d, n V) Inst { return across(0x6EB1A800, "uminv", "s", S4, d, n) }

// FADDPS adds the two low float32 lanes of n into the scalar d;
// FADDPD the two float64 lanes.
func FADDPS(d, n V) Inst { return across(0x7E30D800, "faddp", "s", "2s", d, n) }
func FADDPD(d, n V) Inst { return across(0x7E70D800, "faddp", "d", D2, d, n) }

// Integer lanes (32-bit).

func ADD(d, n, m V) Inst  { return native(three(0x4EA08400, "add", S4, d, n, m), "VADD", S4, d, n, m) }
func SUB(d, n, m V) Inst  { return native(three(0x6EA08400, "sub", S4, d, n, m), "VSUB", S4, d, n, m) }
func CMGT(d, n, m V) Inst { return three(0x4EA03400, "cmgt", S4, d, n, m) }

func shift(base uint32, name string, field uint32, s int, d, n V) Inst {
	return Inst{
		Word: base | field<<16 | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("%s v%d.4s, v%d.4s, #%d", name, d, n, s),
	}
}

// SSHR is an arithmetic right shift of each 32-bit lane by s (1..32).
func SSHR(d, n V, s int) Inst { return shift(0x4F000400, "sshr", uint32(64-s), s, d, n) }

// USHR is a logical right shift; Go has the mnemonic.
func USHR(d, n V, s int) Inst {
	i := shift(0x6F000400, "ushr", uint32(64-s), s, d, n)
	i.Go = fmt.Sprintf("VUSHR $%d, V%d.S4, V%d.S4", s, n, d)
	return i
}

// SHL is a left shift by s (0..31); Go has the mnemonic.
func SHL(d, n V, s int) Inst {
	i := shift(0x4F005400, "shl", uint32(32+s), s, d, n)
	i.Go = fmt.Sprintf("VSHL $%d, V%d.S4, V%d.S4", s, n, d)
	return i
}

// Bitwise ops on the whole register.

func AND(d, n, m V) Inst { return native(three(0x4E201C00, "and", B16, d, n, m), "VAND", B16, d, n, m) }
func ORR(d, n, m V) Inst { return native(three(0x4EA01C00, "orr", B16, d, n, m), "VORR", B16, d, n, m) }
func EOR(d, n, m V) Inst { return native(three(0x6E201C00, "eor", B16, d, n, m), "VEOR", B16, d, n, m) }
func BIC(d, n, m V) Inst { return three(0x4E601C00, "bic", B16, d, n, m) }
func ORN(d, n, m V) Inst { return three(0x4EE01C00, "orn", B16, d, n, m) }

// BSL: d = n where d is set, m elsewhere.
func BSL(d, n, m V) Inst { return native(three(0x6E601C00, "bsl", B16, d, n, m), "VBSL", B16, d, n, m) }

// BIT: d = n where m is set, d elsewhere.
func BIT(d, n, m V) Inst { return native(three(0x6EA01C00, "bit", B16, d, n, m), "VBIT", B16, d, n, m) }

// BIF: d = n where m is clear, d elsewhere.
func BIF(d, n, m V) Inst { return native(three(0x6EE01C00, "bif", B16, d, n, m), "VBIF", B16, d, n, m) }

// MOV copies n to d (an ORR of n with itself).
func MOV(d, n V) Inst {
	i := ORR(d, n, n)
	i.GNU = fmt.Sprintf("mov v%d.16b, v%d.16b", d, n)
	return i
}

// NOT inverts every bit.
func NOT(d, n V) Inst { return two(0x6E205800, "not", B16, B16, d, n) }

// ONES sets every bit of d (movi d.2d, #-1); Go has the mnemonic for the byte form.
func ONES(d V) Inst {
	return Inst{
		Word: 0x6F07E7E0 | uint32(d),
		GNU:  fmt.Sprintf("movi v%d.2d, #0xffffffffffffffff", d),
	}
}

// DUPS broadcasts lane 0 of n to the four float32 lanes of d; Go has the mnemonic.
func DUPS(d, n V) Inst {
	return Inst{
		Word: 0x4E040400 | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("dup v%d.4s, v%d.s[0]", d, n),
		Go:   fmt.Sprintf("VDUP V%d.S[0], V%d.S4", n, d),
	}
}
