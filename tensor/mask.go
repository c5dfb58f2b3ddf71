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
// broadcast together (either may be the smaller). On a device (x and mask
// there) its length is MaskedCount's, which waits for the device once
// (its one synchronization); the elements are then written by the Index
// family's MaskedSelect, a deterministic compaction in the same order:
// the host's result bit for bit.
func MaskedSelect(x, mask *Tensor) *Tensor {
	const op = "MaskedSelect"
	checkNil(op, "x, mask", x, mask)
	dev := deviceOn(op, nil, x, mask)
	return maskedSelectInto(op, dev, result(op, dev, []int{maskedCount(op, dev, x, mask)}, x, mask), x, mask)
}

// MaskedCount returns the number of elements MaskedSelect(x, mask)
// selects: the nonzero elements of mask broadcast with x (to size the
// dst of MaskedSelectInto). On a device the count is folded there (Norm
// of order 0 per row of at most 2²⁴ elements, exact) and copied to the
// host: a synchronization, one for masks of up to 2²⁴ elements per last
// axis (more rows' counts then come back at once).
func MaskedCount(x, mask *Tensor) int {
	const op = "MaskedCount"
	checkNil(op, "x, mask", x, mask)
	return maskedCount(op, deviceOn(op, nil, x, mask), x, mask)
}

func maskedCount(op string, dev Device, x, mask *Tensor) int {
	shape := broadcastShape(op, x, mask)
	m := mask.BroadcastTo(shape...)
	n := 0
	if dev != CPU {
		if m.Len() == 0 {
			return 0
		}
		if len(shape) == 0 {
			m = m.Reshape(1)
		}
		last := len(m.shape) - 1
		const most = 1 << 24 // a float32 count is exact up to here
		for lo := 0; lo < m.shape[last]; lo += most {
			part := m.Slice(last, lo, min(lo+most, m.shape[last]), 1)
			counts := Norm(part, 0, false, last)
			h, err := counts.To(CPU)
			if err != nil {
				panic(failure(op, nil, []*Tensor{x, mask}, fmt.Errorf("copying the counts to the host: %w", err)))
			}
			for _, c := range h.Contiguous().Data() {
				n += int(c)
			}
		}
		return n
	}
	for _, v := range m.hostData(op) {
		if v != 0 {
			n++
		}
	}
	return n
}

// MaskedSelectInto sets dst, a 1-D tensor of MaskedCount(x, mask)
// elements on x's and mask's device, to MaskedSelect(x, mask) and
// returns dst; an x overlapping dst is copied first. On a device checking
// dst's length takes MaskedCount's synchronization.
func MaskedSelectInto(dst, x, mask *Tensor) *Tensor {
	const op = "MaskedSelectInto"
	checkNil(op, "dst, x, mask", dst, x, mask)
	dev := deviceOn(op, dst, x, mask)
	checkShapeIs(op, "dst", dst, maskedCount(op, dev, x, mask))
	checkWritable(op, dst)
	return maskedSelectInto(op, dev, dst, detach(dst, x), detach(dst, mask))
}

// maskedSelectInto runs the Index family's MaskedSelect on dev into dst,
// of the checked length, not overlapping x or mask.
func maskedSelectInto(op string, dev Device, dst, x, mask *Tensor) *Tensor {
	shape := broadcastShape(op, x, mask)
	k := indexOn(op, dev, dst, x, mask)
	ranIndex(op, k.MaskedSelect(dst, x.BroadcastTo(shape...), mask.BroadcastTo(shape...)), dst, x, mask)
	return dst
}

// MaskedSelect is the CPU's.
func (cpuKernels) MaskedSelect(dst, x, mask *Tensor) error {
	const op = "MaskedSelect"
	xs, ms := x.hostData(op), mask.hostData(op)
	dst.hostOnly(op)
	j, st := dst.offset, dst.strides[0]
	for i, m := range ms {
		if m != 0 {
			dst.data[j] = xs[i]
			j += st
		}
	}
	return nil
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
