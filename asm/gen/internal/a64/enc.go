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

import (
	"fmt"

	"github.com/lanesgo/lanes/asm/gen/internal/elem"
)

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

// Float is the element width of float ops: F32 (arrangement 4s, four
// float32 lanes) or F64 (2d, two float64 lanes). The encodings differ in one
// bit (sz, bit 22), so every float op is written once as a method and the
// generators pick the width; the package-level FADD, FMUL, ... are the F32
// forms (FADDD, FMULD, FMLAD the F64 forms the float32 kernels use for
// widened sums).
type Float struct{ elem.Type }

var (
	F32 = Float{elem.F32}
	F64 = Float{elem.F64}
)

// Arr is the arrangement: 4s or 2d.
func (w Float) Arr() string {
	if w.Double() {
		return D2
	}
	return S4
}

// Lanes is the number of elements in a vector register: 4 or 2.
func (w Float) Lanes() int { return 16 / w.Size() }

// Scalar is the suffix of Go's scalar float mnemonics at this width
// (FADDS, FADDD): "S" or "D".
func (w Float) Scalar() string {
	if w.Double() {
		return "D"
	}
	return "S"
}

// sz sets the size bit of a float op's encoding for F64.
func (w Float) sz(base uint32) uint32 {
	if w.Double() {
		return base | 1<<22
	}
	return base
}

func (w Float) three(base uint32, name string, d, n, m V) Inst {
	return three(w.sz(base), name, w.Arr(), d, n, m)
}

func (w Float) two(base uint32, name string, d, n V) Inst {
	return two(w.sz(base), name, w.Arr(), w.Arr(), d, n)
}

// Float arithmetic.

func (w Float) FADD(d, n, m V) Inst  { return w.three(0x4E20D400, "fadd", d, n, m) }
func (w Float) FSUB(d, n, m V) Inst  { return w.three(0x4EA0D400, "fsub", d, n, m) }
func (w Float) FMUL(d, n, m V) Inst  { return w.three(0x6E20DC00, "fmul", d, n, m) }
func (w Float) FDIV(d, n, m V) Inst  { return w.three(0x6E20FC00, "fdiv", d, n, m) }
func (w Float) FMAX(d, n, m V) Inst  { return w.three(0x4E20F400, "fmax", d, n, m) }
func (w Float) FMIN(d, n, m V) Inst  { return w.three(0x4EA0F400, "fmin", d, n, m) }
func (w Float) FADDP(d, n, m V) Inst { return w.three(0x6E20D400, "faddp", d, n, m) }

// FMLA is d += n·m (fused); Go has the mnemonic.
func (w Float) FMLA(d, n, m V) Inst {
	return native(w.three(0x4E20CC00, "fmla", d, n, m), "VFMLA", w.Arr(), d, n, m)
}

// FMLS is d -= n·m (fused); Go has the mnemonic.
func (w Float) FMLS(d, n, m V) Inst {
	return native(w.three(0x4EA0CC00, "fmls", d, n, m), "VFMLS", w.Arr(), d, n, m)
}

// Comparisons set a lane to all ones where they hold, to zero elsewhere
// (false for NaN).

func (w Float) FCMEQ(d, n, m V) Inst { return w.three(0x4E20E400, "fcmeq", d, n, m) }
func (w Float) FCMGE(d, n, m V) Inst { return w.three(0x6E20E400, "fcmge", d, n, m) }
func (w Float) FCMGT(d, n, m V) Inst { return w.three(0x6EA0E400, "fcmgt", d, n, m) }

// Comparisons with zero.
func (w Float) zero(base uint32, name string, d, n V) Inst {
	return Inst{
		Word: w.sz(base) | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("%s v%d.%s, v%d.%s, #0.0", name, d, w.Arr(), n, w.Arr()),
	}
}

func (w Float) FCMGT0(d, n V) Inst { return w.zero(0x4EA0C800, "fcmgt", d, n) }
func (w Float) FCMGE0(d, n V) Inst { return w.zero(0x6EA0C800, "fcmge", d, n) }
func (w Float) FCMLT0(d, n V) Inst { return w.zero(0x4EA0E800, "fcmlt", d, n) }
func (w Float) FCMEQ0(d, n V) Inst { return w.zero(0x4EA0D800, "fcmeq", d, n) }

// One-operand float ops and conversions.

func (w Float) FABS(d, n V) Inst   { return w.two(0x4EA0F800, "fabs", d, n) }
func (w Float) FNEG(d, n V) Inst   { return w.two(0x6EA0F800, "fneg", d, n) }
func (w Float) FSQRT(d, n V) Inst  { return w.two(0x6EA1F800, "fsqrt", d, n) }
func (w Float) FRINTN(d, n V) Inst { return w.two(0x4E218800, "frintn", d, n) }
func (w Float) FCVTZS(d, n V) Inst { return w.two(0x4EA1B800, "fcvtzs", d, n) }
func (w Float) SCVTF(d, n V) Inst  { return w.two(0x4E21D800, "scvtf", d, n) }

// FRINTM rounds each lane toward -Inf (floor).
func (w Float) FRINTM(d, n V) Inst { return w.two(0x4E219800, "frintm", d, n) }

// FMAXV, FMINV fold the lanes of n into the scalar d; for F64 (two lanes)
// they are the pairwise FMAXP, FMINP (scalar), as FMAXV has no 2d form.
func (w Float) FMAXV(d, n V) Inst {
	if w.Double() {
		return across(0x7E70F800, "fmaxp", "d", D2, d, n)
	}
	return across(0x6E30F800, "fmaxv", "s", S4, d, n)
}

func (w Float) FMINV(d, n V) Inst {
	if w.Double() {
		return across(0x7EF0F800, "fminp", "d", D2, d, n)
	}
	return across(0x6EB0F800, "fminv", "s", S4, d, n)
}

// DUP broadcasts lane 0 of n to every lane of d; Go has the mnemonic.
func (w Float) DUP(d, n V) Inst {
	if w.Double() {
		return Inst{
			Word: 0x4E080400 | uint32(n)<<5 | uint32(d),
			GNU:  fmt.Sprintf("dup v%d.2d, v%d.d[0]", d, n),
			Go:   fmt.Sprintf("VDUP V%d.D[0], V%d.D2", n, d),
		}
	}
	return Inst{
		Word: 0x4E040400 | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("dup v%d.4s, v%d.s[0]", d, n),
		Go:   fmt.Sprintf("VDUP V%d.S[0], V%d.S4", n, d),
	}
}

// The float32 forms, and the float64 forms the float32 kernels use.
var (
	FADD, FSUB, FMUL, FDIV = F32.FADD, F32.FSUB, F32.FMUL, F32.FDIV
	FMAX, FMIN, FADDP      = F32.FMAX, F32.FMIN, F32.FADDP
	FMLA, FMLS             = F32.FMLA, F32.FMLS
	FCMEQ, FCMGE, FCMGT    = F32.FCMEQ, F32.FCMGE, F32.FCMGT
	FCMGT0, FCMGE0         = F32.FCMGT0, F32.FCMGE0
	FCMLT0, FCMEQ0         = F32.FCMLT0, F32.FCMEQ0
	FABS, FNEG, FSQRT      = F32.FABS, F32.FNEG, F32.FSQRT
	FRINTN, FCVTZS, SCVTF  = F32.FRINTN, F32.FCVTZS, F32.SCVTF
	FMAXV, FMINV           = F32.FMAXV, F32.FMINV
	DUPS                   = F32.DUP

	FADDD, FSUBD, FMULD, FMLAD = F64.FADD, F64.FSUB, F64.FMUL, F64.FMLA
)

// FMLAE is d += n·m.s[i] (F64: m.d[i]), the by-element form (GEMM's
// broadcast of A); i < Lanes.
func (w Float) FMLAE(d, n, m V, i int) Inst {
	if w.Double() {
		return Inst{
			Word: 0x4FC01000 | uint32(i&1)<<11 | rd(d, n, m),
			GNU:  fmt.Sprintf("fmla v%d.2d, v%d.2d, v%d.d[%d]", d, n, m, i),
		}
	}
	return Inst{
		Word: 0x4F801000 | uint32(i&1)<<21 | uint32(i>>1)<<11 | rd(d, n, m),
		GNU:  fmt.Sprintf("fmla v%d.4s, v%d.4s, v%d.s[%d]", d, n, m, i),
	}
}

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

// SHLD and USHRD are SHL and USHR on 64-bit lanes (2d): the float64
// kernels build 2^n and split exponents with them.
func SHLD(d, n V, s int) Inst {
	return Inst{
		Word: 0x4F005400 | uint32(64+s)<<16 | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("shl v%d.2d, v%d.2d, #%d", d, n, s),
	}
}

func USHRD(d, n V, s int) Inst {
	return Inst{
		Word: 0x6F000400 | uint32(128-s)<<16 | uint32(n)<<5 | uint32(d),
		GNU:  fmt.Sprintf("ushr v%d.2d, v%d.2d, #%d", d, n, s),
	}
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
