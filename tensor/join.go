package tensor

import (
	"fmt"
	"slices"
)

// Concat returns the tensors joined along axis; their other dimensions
// must be equal. Each is copied into its slice of the result. The tensors
// must all be on one device, where the result is (its Copy family).
func Concat(axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic("tensor: Concat: no tensors")
	}
	checkNil("Concat", "ts", ts...)
	axis = ts[0].axis("Concat", axis)
	shape := slices.Clone(ts[0].shape)
	shape[axis] = 0
	for _, t := range ts {
		if len(t.shape) != len(shape) {
			panic(fmt.Sprintf("tensor: Concat: shapes %s differ in rank", shapesOf(ts)))
		}
		for i, d := range t.shape {
			if i != axis && d != shape[i] {
				panic(fmt.Sprintf("tensor: Concat: shapes %s differ outside axis %d", shapesOf(ts), axis))
			}
		}
		if shape[axis] > MaxElems-t.shape[axis] {
			panic(fmt.Sprintf("tensor: Concat: shapes %s give more than MaxElems = %d elements along axis %d", shapesOf(ts), MaxElems, axis))
		}
		shape[axis] += t.shape[axis]
	}
	dev := deviceOn("Concat", nil, ts...)
	k := copyOn("Concat", dev, nil, ts...)
	out := result("Concat", dev, shape, ts...)
	ran("Concat", k.Concat(out, axis, ts), out, ts...)
	return out
}

// Concat is the CPU's Concat: host operands of dst's shape but along
// axis, where their lengths add up to dst's.
func (cpuKernels) Concat(dst *Tensor, axis int, ts []*Tensor) error {
	at := 0
	for _, t := range ts {
		n := t.shape[axis]
		cpuKernels{}.CopyInto(dst.Slice(axis, at, at+n, 1), t)
		at += n
	}
	return nil
}

// Stack returns the tensors, all of one shape, joined along a new axis;
// they must all be on one device, where the result is.
func Stack(axis int, ts ...*Tensor) *Tensor {
	if len(ts) == 0 {
		panic("tensor: Stack: no tensors")
	}
	checkNil("Stack", "ts", ts...)
	if axis < 0 {
		axis += len(ts[0].shape) + 1
	}
	if axis < 0 || axis > len(ts[0].shape) {
		panic(fmt.Sprintf("tensor: Stack: axis out of range for shape %v", ts[0].shape))
	}
	for _, t := range ts {
		if !slices.Equal(t.shape, ts[0].shape) {
			panic(fmt.Sprintf("tensor: Stack: shapes %s differ", shapesOf(ts)))
		}
	}
	shape := slices.Insert(slices.Clone(ts[0].shape), axis, len(ts))
	dev := deviceOn("Stack", nil, ts...)
	k := copyOn("Stack", dev, nil, ts...)
	out := result("Stack", dev, shape, ts...)
	// The operands with the new axis of size 1 (t.Unsqueeze(axis)), in
	// four allocations whatever their number: they share one shape, and
	// their strides are one buffer.
	n := len(shape)
	one := slices.Clone(shape)
	one[axis] = 1
	views, us, strides := make([]Tensor, len(ts)), make([]*Tensor, len(ts)), make([]int, len(ts)*n)
	for i, t := range ts {
		st := strides[i*n : (i+1)*n : (i+1)*n]
		copy(st, t.strides[:axis])
		copy(st[axis+1:], t.strides[axis:])
		st[axis] = 1
		views[i] = Tensor{data: t.data, shape: one, strides: st, offset: t.offset, store: t.store}
		us[i] = &views[i]
	}
	ran("Stack", k.Concat(out, axis, us), out, ts...)
	return out
}

// Split returns views of t cut along axis into pieces of the given sizes,
// which must add up to the axis length. No data is copied.
func (t *Tensor) Split(axis int, sizes ...int) []*Tensor {
	t.need("Split")
	axis = t.axis("Split", axis)
	total := 0
	for _, s := range sizes {
		if s < 0 {
			panic(fmt.Sprintf("tensor: Split: negative size in %v", sizes))
		}
		total += s
	}
	if total != t.shape[axis] {
		panic(fmt.Sprintf("tensor: Split: sizes %v add up to %d, not dimension %d of shape %v", sizes, total, axis, t.shape))
	}
	out := make([]*Tensor, len(sizes))
	at := 0
	for i, s := range sizes {
		out[i] = t.Slice(axis, at, at+s, 1)
		at += s
	}
	return out
}

// Chunk splits t along axis into n views of equal size (the last smaller
// when the length does not divide), as PyTorch's chunk with n ≥ 1.
func (t *Tensor) Chunk(axis, n int) []*Tensor {
	t.need("Chunk")
	axis = t.axis("Chunk", axis)
	if n < 1 {
		panic(fmt.Sprintf("tensor: Chunk: %d chunks", n))
	}
	d := t.shape[axis]
	size := max(1, (d+n-1)/n)
	var sizes []int
	for at := 0; at < d; at += size {
		sizes = append(sizes, min(size, d-at))
	}
	return t.Split(axis, sizes...)
}
