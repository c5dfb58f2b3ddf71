package tensor

import (
	"fmt"
	"slices"
)

// Flip, Roll and Tile move elements without arithmetic and return new
// contiguous tensors. They compose the Index family (IndexSelect, one
// pass per axis) and the Copy family, so they run on the device of x too.

// Flip returns x with the order of its elements reversed along each of
// axes (negative ones count from the end), as torch.flip(x, dims=axes); a
// repeated axis panics. With no axes it returns a copy of x.
func Flip(x *Tensor, axes ...int) *Tensor {
	const op = "Flip"
	checkNil(op, "x", x)
	if len(x.shape) == 0 { // PyTorch accepts axis 0 (or -1) of a 0-d x
		for _, a := range axes {
			asLine(op, x, a)
		}
		return x.Clone()
	}
	resolved := distinctAxes(op, x, axes)
	y := x
	for _, a := range resolved {
		n := x.shape[a]
		y = IndexSelect(y, a, indexRange(op, x, n, func(i int) int { return n - 1 - i }))
	}
	if y == x {
		return x.Clone()
	}
	return y
}

// distinctAxes resolves axes of x for op, panicking on a repeat.
func distinctAxes(op string, x *Tensor, axes []int) []int {
	mask := reduceAxes(op, x, axes)
	out := make([]int, 0, len(axes))
	for i := range x.shape {
		if mask[i] && len(axes) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// indexRange returns the 1-D index [f(0), ..., f(n-1)] on x's device.
func indexRange(op string, x *Tensor, n int, f func(i int) int) *Tensor {
	if n > MaxIndexPlane {
		panic(fmt.Sprintf("tensor: %s: dimension %d of shape %v: indices past 2²⁴ would not be exact in float32", op, n, x.shape))
	}
	idx := make([]float32, n)
	for i := range idx {
		idx[i] = float32(f(i))
	}
	t := FromSlice(idx, n)
	if dev := x.Device(); dev != CPU {
		d, err := t.To(dev)
		if err != nil {
			panic(failure(op, nil, []*Tensor{x}, fmt.Errorf("copying an index of %d elements: %w", n, err)))
		}
		t = d
	}
	return t
}

// Roll returns x with its elements shifted along axes, as torch.roll(x,
// shifts, dims=axes): an element at position i along axes[j] moves to
// (i + shifts[j]) mod n, wrapping around; shifts may be negative or larger
// than the dimension, and an axis given twice is shifted twice. With no
// axes, x is rolled as if flattened (one shift) and restored to its shape.
// shifts and axes must have one length (shifts one element without axes).
func Roll(x *Tensor, shifts []int, axes ...int) *Tensor {
	const op = "Roll"
	checkNil(op, "x", x)
	if len(axes) == 0 {
		if len(shifts) != 1 {
			panic(fmt.Sprintf("tensor: %s: shifts %v without axes (x of shape %v): want one shift", op, shifts, x.shape))
		}
		return Roll(x.Reshape(-1), shifts, 0).Reshape(x.shape...)
	}
	if len(shifts) != len(axes) {
		panic(fmt.Sprintf("tensor: %s: shifts %v and axes %v differ in length (x of shape %v)", op, shifts, axes, x.shape))
	}
	y := x
	for j, a := range axes {
		a = x.axis(op, a)
		n := x.shape[a]
		if n == 0 {
			continue
		}
		s := shifts[j] % n
		y = IndexSelect(y, a, indexRange(op, x, n, func(i int) int { return ((i-s)%n + n) % n }))
	}
	if y == x {
		return x.Clone()
	}
	return y
}

// Tile returns x repeated reps[i] times along dimension i, as
// torch.tile(x, reps): with fewer reps than x has dimensions, reps is
// padded with leading 1s; with more, x is viewed with leading dimensions
// of size 1. The result has dimension reps[i]·x.Dim(i) along i; a zero
// rep gives an empty tensor, a negative one panics.
func Tile(x *Tensor, reps ...int) *Tensor {
	const op = "Tile"
	checkNil(op, "x", x)
	for _, r := range reps {
		if r < 0 {
			panic(fmt.Sprintf("tensor: %s: negative reps %v (x of shape %v)", op, reps, x.shape))
		}
	}
	dims := max(len(reps), len(x.shape))
	shape := make([]int, dims)  // x's, padded with leading 1s
	stride := make([]int, dims) // x's strides, with 0s for those
	r := make([]int, dims)      // reps, padded likewise
	for i := range dims {
		shape[i], r[i] = 1, 1
		if j := i - (dims - len(x.shape)); j >= 0 {
			shape[i], stride[i] = x.shape[j], x.strides[j]
		}
		if j := i - (dims - len(reps)); j >= 0 {
			r[i] = reps[j]
		}
	}
	out := make([]int, dims)
	// The source viewed as [r0, d0, r1, d1, ...] (a pair only where r ≠ 1),
	// the reps broadcast with stride 0.
	var vs, vst []int
	for i := range dims {
		out[i] = r[i] * shape[i]
		if r[i] != 1 {
			vs, vst = append(vs, r[i]), append(vst, 0)
		}
		vs, vst = append(vs, shape[i]), append(vst, stride[i])
	}
	if _, ok := checkedSize(out); !ok {
		panic(fmt.Sprintf("tensor: %s: reps %v of shape %v give %v, too many elements", op, reps, x.shape, out))
	}
	if len(vs) > MaxDims {
		panic(fmt.Sprintf("tensor: %s: reps %v of shape %v need %d dimensions internally, more than %d", op, reps, x.shape, len(vs), MaxDims))
	}
	dev := deviceOn(op, nil, x)
	dst := result(op, dev, out, x)
	if dst.Len() == 0 {
		return dst
	}
	src := x.view(vs, vst, x.offset)
	copyInto(op, dst.view(slices.Clone(vs), contiguousStrides(vs), dst.offset), src)
	return dst
}
