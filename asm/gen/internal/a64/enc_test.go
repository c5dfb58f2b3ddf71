package a64

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// every returns each encoder applied to a few register choices (the high
// bits of every field set somewhere).
func every() []Inst {
	var is []Inst
	regs := [][3]V{{0, 1, 2}, {31, 17, 9}, {5, 30, 16}}
	for _, r := range regs {
		d, n, m := r[0], r[1], r[2]
		for _, f := range []func(d, n, m V) Inst{
			ADD, SUB, CMGT, AND, ORR, EOR, BIC, ORN, BSL, BIT, BIF,
		} {
			is = append(is, f(d, n, m))
		}
		for _, f := range []func(d, n V) Inst{
			FCVTL, FCVTL2, FCVTN, FCVTN2, UMAXV, UMINV, FADDPS, FADDPD, MOV, NOT,
		} {
			is = append(is, f(d, n))
		}
		for _, w := range []Float{F32, F64} {
			for _, f := range []func(d, n, m V) Inst{
				w.FADD, w.FSUB, w.FMUL, w.FDIV, w.FMAX, w.FMIN, w.FADDP, w.FMLA, w.FMLS,
				w.FCMEQ, w.FCMGE, w.FCMGT,
			} {
				is = append(is, f(d, n, m))
			}
			for _, f := range []func(d, n V) Inst{
				w.FCMGT0, w.FCMGE0, w.FCMLT0, w.FCMEQ0, w.FABS, w.FNEG, w.FSQRT, w.FRINTN,
				w.FCVTZS, w.SCVTF, w.FRINTM, w.FMAXV, w.FMINV, w.DUP,
			} {
				is = append(is, f(d, n))
			}
		}
		for _, s := range []int{1, 23, 31} {
			is = append(is, SSHR(d, n, s), USHR(d, n, s), SHL(d, n, s))
		}
		is = append(is, SSHR(d, n, 32), ONES(d))
		for _, s := range []int{1, 52, 63} {
			is = append(is, SHLD(d, n, s), USHRD(d, n, s))
		}
		is = append(is, USHRD(d, n, 64))
		for _, w := range []Float{F32, F64} {
			for i := 0; i < w.Lanes(); i++ {
				is = append(is, w.FMLAE(d, n, m, i))
			}
		}
	}
	return is
}

// TestEncodings assembles the GNU spelling of every instruction with the GNU
// assembler and compares the words. It needs binutils-aarch64-linux-gnu
// (CI installs it); without it the test is skipped.
func TestEncodings(t *testing.T) {
	as := gnuAs(t)
	words := assemble(t, as, every())
	for i, in := range every() {
		if words[i] != in.Word {
			t.Errorf("%s: encoded %#08x, GNU as says %#08x", in.GNU, in.Word, words[i])
		}
	}
}

// gnuAs returns the path of GNU's arm64 assembler; without it the test is
// skipped, or fails under CI (which installs it).
func gnuAs(t *testing.T) string {
	t.Helper()
	as, err := exec.LookPath("aarch64-linux-gnu-as")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("aarch64-linux-gnu-as not found (install binutils-aarch64-linux-gnu)")
		}
		t.Skip("aarch64-linux-gnu-as not found (install binutils-aarch64-linux-gnu)")
	}
	return as
}

// assemble returns the words GNU as produces for the instructions' GNU text.
func assemble(t *testing.T, as string, is []Inst) []uint32 {
	t.Helper()
	dir := t.TempDir()
	var src strings.Builder
	for _, in := range is {
		src.WriteString(in.GNU + "\n")
	}
	s, o, bin := filepath.Join(dir, "x.s"), filepath.Join(dir, "x.o"), filepath.Join(dir, "x.bin")
	if err := os.WriteFile(s, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	objcopy := strings.TrimSuffix(as, "as") + "objcopy"
	if out, err := exec.Command(objcopy, "-O", "binary", "-j", ".text", o, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4*len(is) {
		t.Fatalf("GNU as produced %d bytes for %d instructions", len(b), len(is))
	}
	w := make([]uint32, len(is))
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}

// TestGeneratedWords checks every WORD in the committed arm64 assembly of
// package simd against the GNU assembler's encoding of its comment.
func TestGeneratedWords(t *testing.T) {
	as := gnuAs(t)
	files, err := filepath.Glob("../../../../simd/*_arm64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no arm64 assembly found (%v)", err)
	}
	word := regexp.MustCompile(`^\s*WORD \$0x([0-9a-f]{8}) // (.*)$`)
	var is []Inst
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			m := word.FindStringSubmatch(l)
			if m == nil || seen[l] {
				continue
			}
			seen[l] = true
			w, _ := strconv.ParseUint(m[1], 16, 32)
			is = append(is, Inst{Word: uint32(w), GNU: m[2]})
		}
	}
	words := assemble(t, as, is)
	for i, in := range is {
		if words[i] != in.Word {
			t.Errorf("%s: file has %#08x, GNU as says %#08x", in.GNU, in.Word, words[i])
		}
	}
	t.Logf("%d distinct WORD lines checked", len(is))
}
