// Package elem names the element types the elementwise and reduction
// families are generated for: every kernel is written once and emitted for
// float32 and for float64, and the x86 and a64 writers take their width from
// here.
package elem

import (
	"regexp"
	"strconv"
	"strings"
)

// Type is float32 (the zero value) or float64.
type Type struct{ double bool }

var (
	F32 = Type{}
	F64 = Type{double: true}
	// Types lists both, in the order the generators write them.
	Types = []Type{F32, F64}
)

// Double reports whether the elements are float64.
func (t Type) Double() bool { return t.double }

// Size is the element size in bytes: 4 or 8.
func (t Type) Size() int { return 4 << t.bit() }

// Shift is log2 of Size (pointer to index).
func (t Type) Shift() int { return 2 + t.bit() }

// Bits is the element size in bits: 32 or 64.
func (t Type) Bits() int { return 8 * t.Size() }

func (t Type) bit() int {
	if t.double {
		return 1
	}
	return 0
}

// Name is the Go type: float32 or float64.
func (t Type) Name() string { return "float" + strconv.Itoa(t.Bits()) }

// Suffix is the kernel name's width part: "" for float32, "F64" for float64
// (addAVX512 for Add, addF64AVX512 for AddF64), as in the public API.
func (t Type) Suffix() string {
	if t.double {
		return "F64"
	}
	return ""
}

// SignBit is the sign bit of an element; Inf the bits of +Inf.
func (t Type) SignBit() uint64 { return 1 << (t.Bits() - 1) }

func (t Type) Inf() uint64 {
	if t.double {
		return 0x7ff0000000000000
	}
	return 0x7f800000
}

var typeParam = regexp.MustCompile(`\bT\b`)

// Typed writes a signature or doc for the element type: the type parameter
// T becomes float32 or float64, and a function name ending in N before its
// "(" (maximumN(a, b)) ends in 32 or 64.
func (t Type) Typed(text string) string {
	text = typeParam.ReplaceAllString(text, t.Name())
	return strings.ReplaceAll(text, "N(", strconv.Itoa(t.Bits())+"(")
}
