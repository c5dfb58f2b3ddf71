package tensor

import (
	"fmt"
	"slices"
)

// Selections by a mask (nonzero elements, NaN included, select; the
// comparisons give masks of 0 and 1) and Scatter, the setting sibling of
// ScatterAdd.

// MaskedSelect returns the elements of x where mask is nonzero, as a new
// 1-D tensor in row-major order, as torch.masked_select: x and mask
// broadcast together (either may be the smaller). It runs on the CPU (its
// length depends on the mask's values); a device operand panics.
func MaskedSelect(x, mask *Tensor) *Tensor {
	const op = "MaskedSelect"
	checkNil(op, "x, mask", x, mask)
	return maskedSelectInto(op, New(maskedCount(op, x, mask)), x, mask)
}

// MaskedCount returns the number of elements MaskedSelect(x, mask)
// selects: the nonzero elements of mask broadcast with x (to size the
// dst of MaskedSelectInto).
func MaskedCount(x, mask *Tensor) int {
	const op = "MaskedCount"
	checkNil(op, "x, mask", x, mask)
	return maskedCount(op, x, mask)
}

func maskedCount(op string, x, mask *Tensor) int {
	x.hostOnly(op)
	mask.hostOnly(op)
	shape := broadcastShape(op, x, mask)
	n := 0
	for _, m := range mask.BroadcastTo(shape...).hostData(op) {
		if m != 0 {
			n++
		}
	}
	return n
}

// MaskedSelectInto sets dst, a 1-D host tensor of MaskedCount(x, mask)
// elements, to MaskedSelect(x, mask) and returns dst; an x overlapping
// dst is copied first.
func MaskedSelectInto(dst, x, mask *Tensor) *Tensor {
	const op = "MaskedSelectInto"
	checkNil(op, "dst, x, mask", dst, x, mask)
	return maskedSelectInto(op, dst, detach(dst, x), mask)
}

func maskedSelectInto(op string, dst, x, mask *Tensor) *Tensor {
	x.hostOnly(op)
	mask.hostOnly(op)
	dst.hostOnly(op)
	shape := broadcastShape(op, x, mask)
	xs := x.BroadcastTo(shape...).hostData(op)
	ms := mask.BroadcastTo(shape...).hostData(op)
	n := 0
	for _, m := range ms {
		if m != 0 {
			n++
		}
	}
	checkShapeIs(op, "dst", dst, n)
	checkWritable(op, dst)
	j, st := dst.offset, dst.strides[0]
	for i, m := range ms {
		if m != 0 {
			dst.data[j] = xs[i]
			j += st
		}
	}
	return dst
}

// MaskedFill returns x with value where mask is nonzero (NaN counts as
// nonzero), as torch.masked_fill: mask broadcasts to x's shape. It is
// Where(mask, value, x), so it runs on x's device (a host mask of shape []
// included).
func MaskedFill(x, mask *Tensor, value float32) *Tensor {
	const op = "MaskedFill"
	checkNil(op, "x, mask", x, mask)
	checkMaskOf(op, x, mask)
	return Where(mask, Scalar(value), x)
}

// MaskedFillInto sets dst, of x's shape, to MaskedFill(x, mask, value) and
// returns dst; dst may be x (in place, as torch's masked_fill_).
func MaskedFillInto(dst, x, mask *Tensor, value float32) *Tensor {
	const op = "MaskedFillInto"
	checkNil(op, "dst, x, mask", dst, x, mask)
	checkMaskOf(op, x, mask)
	if !slices.Equal(dst.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: dst shape %v and x shape %v differ", op, dst.shape, x.shape))
	}
	return WhereInto(dst, mask, Scalar(value), x)
}

// checkMaskOf panics unless mask broadcasts to x's shape.
func checkMaskOf(op string, x, mask *Tensor) {
	if s, ok := BroadcastShape(mask.shape, x.shape); !ok || !slices.Equal(s, x.shape) {
		panic(fmt.Sprintf("tensor: %s: mask of shape %v does not broadcast to x's shape %v", op, mask.shape, x.shape))
	}
}

// Scatter sets dst[p with p[axis] replaced by index[p]] to src[p] for each
// position p of index, as PyTorch's scatter_ (in place), and returns dst.
// index and src are as ScatterAdd's: index has src's shape and dst's
// rank, each of its dimensions other than axis at most dst's; indices are
// checked as Gather's (negative ones count from the end). When index names
// one target more than once, the last of src's elements in row-major order
// wins (PyTorch leaves it unspecified), on a device too (the Index family's
// Scatter: deterministic, no atomics). The elements of dst that no index
// names keep their values. An operand overlapping dst is copied first. On
// a device (all three operands there) a bad index value is found by the
// kernel: the op panics naming it, the good positions written.
func Scatter(dst *Tensor, axis int, index, src *Tensor) *Tensor {
	const op = "Scatter"
	checkNil(op, "dst, index, src", dst, index, src)
	axis = checkGather(op, dst, axis, index)
	checkSame(op, "src", src, index)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, index, src)
	k := indexOn(op, dev, dst, index, src)
	if dev == CPU {
		index, src = detach(dst, index), detach(dst, src)
	}
	ranIndex(op, k.Scatter(dst, axis, index, src), dst, index, src)
	return dst
}

// Scatter is the CPU's: the indices checked before dst is written.
func (cpuKernels) Scatter(dst *Tensor, axis int, index, src *Tensor) error {
	const op = "Scatter"
	dst.hostOnly(op)
	src.hostOnly(op)
	idx := index.hostData(op)
	if err := checkIndices(idx, dst.shape[axis]); err != nil {
		return err
	}
	dd, sd := dst.data, src.data
	eachIndexed(index.shape, axis, idx, dst, src, func(di, si int) { dd[di] = sd[si] })
	return nil
}
