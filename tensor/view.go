package tensor

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/internal/shape"
)

// Reshape returns t with a new shape of the same number of elements; one
// dimension may be -1 and is then inferred. The result is a view when t's
// layout allows it (always for contiguous tensors), else a contiguous copy.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	t.need("Reshape")
	shape = slices.Clone(shape)
	infer := -1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			panic(fmt.Sprintf("tensor: Reshape: invalid shape %v for %v", shape, t.shape))
		}
	}
	total := t.Len()
	if infer >= 0 {
		shape[infer] = 1
		n, ok := checkedSize(shape)
		if !ok || n == 0 || total%n != 0 {
			shape[infer] = -1
			panic(fmt.Sprintf("tensor: Reshape: cannot infer -1 in %v for %v (%d elements)", shape, t.shape, total))
		}
		shape[infer] = total / n
	}
	if n, ok := checkedSize(shape); !ok || n != total {
		panic(fmt.Sprintf("tensor: Reshape: shape %v does not match %v (%d elements)", shape, t.shape, total))
	}
	checkShape("Reshape", shape)
	if st, ok := reshapeStrides(t.shape, t.strides, shape); ok {
		return t.view(shape, st, t.offset)
	}
	c := t.clone("Reshape")
	return c.view(shape, contiguousStrides(shape), 0)
}

// checkedSize is the number of elements of shape, and false when it is
// above MaxElems (or a dimension is negative).
func checkedSize(dims []int) (int, bool) { return shape.Size(dims, MaxElems) }

// reshapeStrides finds strides that give shape the same elements as
// (old, oldSt) in row-major order, if any (NumPy's _attempt_nocopy_reshape):
// groups of old dimensions that are contiguous among themselves map onto
// groups of new ones with the same product.
func reshapeStrides(old, oldSt, shape []int) ([]int, bool) {
	st := make([]int, len(shape))
	// Drop size-1 old dimensions: they carry no stride information.
	var od, os []int
	for i, d := range old {
		if d == 0 {
			return contiguousStrides(shape), true
		}
		if d != 1 {
			od, os = append(od, d), append(os, oldSt[i])
		}
	}
	oi, ni := 0, 0
	for ni < len(shape) || oi < len(od) {
		// Skip new size-1 dimensions.
		if ni < len(shape) && shape[ni] == 1 {
			st[ni] = 1
			ni++
			continue
		}
		if oi >= len(od) || ni >= len(shape) {
			return nil, false
		}
		// Grow both groups until their products match.
		op, np := od[oi], shape[ni]
		o0, n0 := oi, ni
		for op != np {
			if op < np {
				oi++
				op *= od[oi]
			} else {
				ni++
				np *= shape[ni]
			}
		}
		// The old group must be contiguous within itself.
		for k := o0; k < oi; k++ {
			if os[k] != os[k+1]*od[k+1] {
				return nil, false
			}
		}
		// New strides: the group's innermost stride, scaled outwards.
		s := os[oi]
		for k := ni; k >= n0; k-- {
			st[k] = s
			s *= shape[k]
		}
		oi++
		ni++
	}
	return st, true
}

// Flatten returns t as a 1-D tensor (a view when possible).
func (t *Tensor) Flatten() *Tensor {
	t.need("Flatten")
	return t.Reshape(-1)
}

// Permute returns a view with the dimensions reordered: dimension i of the
// result is dimension axes[i] of t.
func (t *Tensor) Permute(axes ...int) *Tensor {
	t.need("Permute")
	if len(axes) != len(t.shape) {
		panic(fmt.Sprintf("tensor: Permute: axes %v for shape %v", axes, t.shape))
	}
	seen := make([]bool, len(axes))
	shape, st := make([]int, len(axes)), make([]int, len(axes))
	for i, a := range axes {
		a = t.axis("Permute", a)
		if seen[a] {
			panic(fmt.Sprintf("tensor: Permute: repeated axis in %v for shape %v", axes, t.shape))
		}
		seen[a] = true
		shape[i], st[i] = t.shape[a], t.strides[a]
	}
	return t.view(shape, st, t.offset)
}

// Transpose returns a view with dimensions a and b swapped.
func (t *Tensor) Transpose(a, b int) *Tensor {
	t.need("Transpose")
	a, b = t.axis("Transpose", a), t.axis("Transpose", b)
	shape, st := slices.Clone(t.shape), slices.Clone(t.strides)
	shape[a], shape[b] = shape[b], shape[a]
	st[a], st[b] = st[b], st[a]
	return t.view(shape, st, t.offset)
}

// T returns the view with the last two dimensions swapped (a matrix's
// transpose); tensors with fewer than two dimensions are returned as is.
func (t *Tensor) T() *Tensor {
	t.need("T")
	if len(t.shape) < 2 {
		return t
	}
	return t.Transpose(-2, -1)
}

// Slice returns the view of indices start, start+step, ... (< end) along
// dim, with Python's rules (slice.indices): negative start and end count
// from the end and both are clamped to the dimension, so any int values
// are valid, math.MinInt and math.MaxInt included. step must be positive
// (as in PyTorch); a step beyond the dimension takes one element.
func (t *Tensor) Slice(dim, start, end, step int) *Tensor {
	t.need("Slice")
	dim = t.axis("Slice", dim)
	if step <= 0 {
		panic(fmt.Sprintf("tensor: Slice: step %d must be positive (shape %v)", step, t.shape))
	}
	d := t.shape[dim]
	clamp := func(x int) int {
		if x < 0 {
			x += d // cannot overflow: d >= 0
		}
		return min(max(x, 0), d)
	}
	start, end = clamp(start), clamp(end)
	n := 0
	if end > start {
		// ceil((end-start)/step) without forming end-start+step-1, which
		// overflows for a step near math.MaxInt.
		n = (end-start-1)/step + 1
	}
	shape, st := slices.Clone(t.shape), slices.Clone(t.strides)
	shape[dim] = n
	if n > 1 {
		// step·stride is at most the distance between two elements of
		// t, so it fits; with one element or none the stride is unused
		// and is kept, rather than multiplied by a step that may overflow.
		st[dim] *= step
	}
	off := t.offset
	if n > 0 {
		off += start * t.strides[dim]
	}
	return t.view(shape, st, off)
}

// Index returns the view of position i along dim, with that dimension removed.
func (t *Tensor) Index(dim, i int) *Tensor {
	t.need("Index")
	dim = t.axis("Index", dim)
	if i < 0 {
		i += t.shape[dim]
	}
	if i < 0 || i >= t.shape[dim] {
		panic(fmt.Sprintf("tensor: Index: index %d out of range for dimension %d of %v", i, dim, t.shape))
	}
	shape := slices.Delete(slices.Clone(t.shape), dim, dim+1)
	st := slices.Delete(slices.Clone(t.strides), dim, dim+1)
	return t.view(shape, st, t.offset+i*t.strides[dim])
}

// BroadcastTo returns a view of t with the given shape under NumPy's rules
// (dimensions of size 1, and missing leading ones, repeat with stride 0).
// The result must not be written through.
func (t *Tensor) BroadcastTo(shape ...int) *Tensor {
	t.need("BroadcastTo")
	checkShape("BroadcastTo", shape)
	if len(shape) < len(t.shape) {
		panic(fmt.Sprintf("tensor: BroadcastTo: cannot broadcast %v to %v", t.shape, shape))
	}
	st := make([]int, len(shape))
	for i := range shape {
		j := i - (len(shape) - len(t.shape))
		switch {
		case j < 0:
		case t.shape[j] == shape[i]:
			st[i] = t.strides[j]
		case t.shape[j] == 1:
		default:
			panic(fmt.Sprintf("tensor: BroadcastTo: cannot broadcast %v to %v", t.shape, shape))
		}
	}
	return t.view(slices.Clone(shape), st, t.offset)
}

// Expand is BroadcastTo, where -1 keeps t's size of that dimension.
func (t *Tensor) Expand(shape ...int) *Tensor {
	t.need("Expand")
	shape = slices.Clone(shape)
	for i, d := range shape {
		if j := i - (len(shape) - len(t.shape)); d == -1 && j >= 0 {
			shape[i] = t.shape[j]
		}
	}
	return t.BroadcastTo(shape...)
}

// Squeeze returns a view without the given dimensions, which must have size
// 1; with no axes, without every dimension of size 1.
func (t *Tensor) Squeeze(axes ...int) *Tensor {
	t.need("Squeeze")
	drop := make([]bool, len(t.shape))
	if len(axes) == 0 {
		for i, d := range t.shape {
			drop[i] = d == 1
		}
	}
	for _, a := range axes {
		a = t.axis("Squeeze", a)
		if t.shape[a] != 1 {
			panic(fmt.Sprintf("tensor: Squeeze: dimension %d of %v is not 1", a, t.shape))
		}
		drop[a] = true
	}
	var shape, st []int
	for i, d := range t.shape {
		if !drop[i] {
			shape, st = append(shape, d), append(st, t.strides[i])
		}
	}
	return t.view(shape, st, t.offset)
}

// Unsqueeze returns a view with a dimension of size 1 inserted at position
// axis of the result (negative counts from the end of the result).
func (t *Tensor) Unsqueeze(axis int) *Tensor {
	t.need("Unsqueeze")
	n := len(t.shape) + 1
	if axis < 0 {
		axis += n
	}
	if axis < 0 || axis >= n || n > MaxDims {
		panic(fmt.Sprintf("tensor: Unsqueeze: axis out of range for shape %v", t.shape))
	}
	s := 1
	if axis < len(t.shape) {
		s = t.strides[axis] * t.shape[axis]
	}
	shape := slices.Insert(slices.Clone(t.shape), axis, 1)
	st := slices.Insert(slices.Clone(t.strides), axis, s)
	return t.view(shape, st, t.offset)
}

// Contiguous returns t when it is contiguous, else a contiguous copy, on
// t's device (its Copy family, as Clone).
func (t *Tensor) Contiguous() *Tensor {
	t.need("Contiguous")
	if t.IsContiguous() {
		return t
	}
	return t.clone("Contiguous")
}

// Clone returns a contiguous copy with its own storage, on t's device: a
// device tensor is copied by the device's Copy family (CopyKernels), and
// a device without it makes Clone panic naming it.
func (t *Tensor) Clone() *Tensor {
	t.need("Clone")
	return t.clone("Clone")
}

func (t *Tensor) clone(op string) *Tensor {
	dev := t.Device()
	k := copyOn(op, dev, nil, t)
	c := result(op, dev, t.shape, t)
	ran(op, k.CopyInto(c, t), c, t)
	return c
}

// CopyInto copies src into dst, broadcasting src to dst's shape, and
// returns dst. Overlapping src and dst are handled as if src were copied
// first. With dst or src on a device, the copy runs on that device's Copy
// family; both must be on it (copy between the host and a device with To).
func CopyInto(dst, src *Tensor) *Tensor { return copyInto("CopyInto", dst, src) }

// copyInto is CopyInto for op, which it names in panics.
func copyInto(op string, dst, src *Tensor) *Tensor {
	checkNil(op, "dst, src", dst, src)
	checkBroadcastInto(op, dst, src)
	dev := deviceOn(op, dst, src)
	k := copyOn(op, dev, dst, src)
	if dev == CPU {
		src = unalias(dst, src)
	}
	ran(op, k.CopyInto(dst, src), dst, src)
	return dst
}

// CopyInto is the CPU's copy: host operands, src broadcasting to dst,
// not overlapping it.
func (cpuKernels) CopyInto(dst, src *Tensor) error {
	run("CopyInto", dst.shape, copyKernel, [2]float32{}, dst, src)
	return nil
}

func copyKernel(s [][]float32, _ *[2]float32) { copy(s[0], s[1]) }
