// Package shape holds the shape arithmetic that package tensor and the CUDA
// plugin both need, so that the two read shapes and strides the same way:
// NumPy broadcasting, row-major strides, how a strided matrix is handed to
// a GEMM, the shapes of a matrix product under NumPy's matmul rules, and
// the operands that dispatch.WorkOf's Conv2D convention describes.
//
// It works on plain []int shapes and strides (in elements), allocates only
// the slices it returns, and never panics on well-formed input; callers
// name their operation in their own panics and errors.
package shape

import (
	"errors"
	"fmt"
)

// Broadcast returns the shape that shapes a and b broadcast to under
// NumPy's rules (aligned at their last dimension; a dimension of size 1
// repeats to match the other), and false when they conflict.
func Broadcast(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range out {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// Size returns the number of elements of a tensor of shape dims (the
// product of its dimensions) and true; or 0 and false when a dimension is
// negative or the product of the nonzero dimensions exceeds limit. An
// empty tensor is so held to the limit too, as NumPy holds it, since its
// strides (see ContiguousStrides) multiply every dimension but the zeros.
// The product is computed without overflow for any limit >= 0.
func Size(dims []int, limit int) (int, bool) {
	n, empty := 1, false
	for _, d := range dims {
		switch {
		case d < 0:
			return 0, false
		case d == 0:
			empty = true
		case n > limit/d:
			return 0, false
		default:
			n *= d
		}
	}
	if empty {
		return 0, true
	}
	return n, true
}

// ContiguousStrides returns the strides of a row-major tensor of the given
// shape without gaps. A dimension of size 0 counts as 1, so that the
// strides of an empty tensor are still valid (and distinct) positions.
func ContiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= max(shape[i], 1)
	}
	return st
}

// MatrixLayout returns how a BLAS-style GEMM reads a rows×cols matrix with
// row stride rs and column stride cs (in elements): row-major (trans
// false, leading dimension rs) or column-major (trans true, leading
// dimension cs). ok is false when neither dimension has unit stride, and
// the matrix must be copied first. The stride of a dimension of size 1 is
// never used, so a single row or column reads as row-major.
func MatrixLayout(rows, cols, rs, cs int) (trans bool, ld int, ok bool) {
	if cols == 1 {
		cs = 1
	}
	if rows == 1 {
		rs = max(cols, 1)
	}
	switch {
	case cs == 1 && rs >= max(cols, 1):
		return false, rs, true
	case rs == 1 && cs >= max(rows, 1):
		return true, cs, true
	}
	return false, 0, false
}

// MatMul is the shape of a matrix product under NumPy's matmul rules: each
// operand is a stack of matrices in its last two dimensions, a 1-D a a
// 1×k row and a 1-D b a k×1 column, and the leading (batch) dimensions
// broadcast.
type MatMul struct {
	M, N, K int   // each product is M×K by K×N
	Batch   []int // the broadcast batch shape (empty: one product)
	Out     []int // the result's shape: Batch, M, N without the dimensions added for 1-D operands
}

// PlanMatMul returns the matrix product of operands of shapes a and b, or
// an error, naming neither shape, when they have none: a scalar operand,
// inner dimensions that differ, or batch dimensions that do not broadcast.
func PlanMatMul(a, b []int) (MatMul, error) {
	p, err := MatMulDims(a, b)
	if err != nil {
		return p, err
	}
	p.Out = append(append(make([]int, 0, len(p.Batch)+2), p.Batch...), p.M, p.N)
	switch aVec, bVec := len(a) == 1, len(b) == 1; {
	case aVec && bVec:
		p.Out = p.Out[:len(p.Out)-2]
	case aVec:
		p.Out = append(p.Out[:len(p.Out)-2], p.N)
	case bVec:
		p.Out = p.Out[:len(p.Out)-1]
	}
	return p, nil
}

// MatMulDims is PlanMatMul without Out: for operands of shapes a and b
// without batch dimensions it allocates nothing.
func MatMulDims(a, b []int) (MatMul, error) {
	if len(a) == 0 || len(b) == 0 {
		return MatMul{}, errors.New("scalars have no matrix product")
	}
	var p MatMul
	var aBatch, bBatch []int
	var kb int
	if ra := len(a); ra == 1 {
		p.M, p.K = 1, a[0]
	} else {
		p.M, p.K, aBatch = a[ra-2], a[ra-1], a[:ra-2]
	}
	if rb := len(b); rb == 1 {
		kb, p.N = b[0], 1
	} else {
		kb, p.N, bBatch = b[rb-2], b[rb-1], b[:rb-2]
	}
	if kb != p.K {
		return MatMul{}, fmt.Errorf("inner dimensions %d and %d differ", p.K, kb)
	}
	var ok bool
	if p.Batch, ok = Broadcast(aBatch, bBatch); !ok {
		return MatMul{}, errors.New("batch dimensions do not broadcast")
	}
	return p, nil
}

// ConvWork returns the operands of the Conv2D that dims describes in
// dispatch.WorkOf's convention (n, c, h, w, cout, kh, kw [, stride [,
// pad]]): the NCHW input's shape, the weight's [cout, c, kh, kw], and the
// stride and padding used on both axes (1 and 0 when left out). dims must
// have 7 to 9 elements; ConvWork checks nothing else.
func ConvWork(dims []int) (x, w [4]int, stride, pad int) {
	x = [4]int{dims[0], dims[1], dims[2], dims[3]}
	w = [4]int{dims[4], dims[1], dims[5], dims[6]}
	stride, pad = 1, 0
	if len(dims) > 7 {
		stride = dims[7]
	}
	if len(dims) > 8 {
		pad = dims[8]
	}
	return x, w, stride, pad
}
