package tensor

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Sort, ArgSort, TopK and Median return indices as float32 values, as
// ArgMax does: exact, since an axis of more than 2²⁴ elements, whose
// indices would round, makes them panic. They order elements as
// torch.sort does: ascending by value, -0 equal to +0, NaN greater than
// +Inf (and NaNs equal to each other); equal elements keep their order
// along the axis (a stable sort), in both directions. A 0-d x is sorted
// as a line of one element along axis 0 or -1, as PyTorch. They run on
// the device of x (its Sort family), with the host's results bit for
// bit; the results of the Into forms must be on that device too.

// asLine returns x viewed as [1] when it is 0-d and axis is 0 or -1,
// which PyTorch's sorts and scans accept for a 0-d tensor, and true; else
// x and false (any other axis of a 0-d x panics).
func asLine(op string, x *Tensor, axis int) (*Tensor, bool) {
	checkNil(op, "x", x)
	if len(x.shape) != 0 {
		return x, false
	}
	if axis != 0 && axis != -1 {
		panic(fmt.Sprintf("tensor: %s: axis %d out of range for shape []", op, axis))
	}
	return x.Reshape(1), true
}

// sortAxis checks x and axis for op and returns the axis resolved.
func sortAxis(op string, x *Tensor, axis int) int {
	checkNil(op, "x", x)
	axis = x.axis(op, axis)
	if x.shape[axis] > 1<<24 {
		panic(fmt.Sprintf("tensor: %s: axis %d of shape %v: indices past 2²⁴ would not be exact in float32", op, axis, x.shape))
	}
	return axis
}

// sortKey maps v to a uint32 whose unsigned order is the sorts' order of
// float32 values: -0 equal to +0, every NaN equal and above +Inf.
func sortKey(v float32) uint32 {
	if v != v {
		return math.MaxUint32
	}
	if v == 0 {
		v = 0 // -0 as +0
	}
	b := math.Float32bits(v)
	if b>>31 != 0 {
		return ^b
	}
	return b | 1<<31
}

// sortRows sorts each row of n elements of src (alongRows' layout) and
// calls f with the row and its permutation (perm[i] the position in the
// row of the i-th element in order), for each row r; rows are split over
// the workers, so f must write only row r's outputs. Each element is
// sorted as the key (sortKey, inverted for descending) << 32 | its
// position: distinct keys, so any sort is the stable one.
func sortRows(src []float32, n int, descending bool, f func(r int, row []float32, perm []int32)) {
	if n == 0 {
		return
	}
	work := len(src) * (1 + bits.Len(uint(n)))
	parallel(rowsJob(func(lo, hi int) {
		keys := make([]uint64, n)
		perm := make([]int32, n)
		for r := lo; r < hi; r++ {
			row := src[r*n : (r+1)*n]
			for i, v := range row {
				k := sortKey(v)
				if descending {
					k = ^k
				}
				keys[i] = uint64(k)<<32 | uint64(i)
			}
			slices.Sort(keys)
			for i, k := range keys {
				perm[i] = int32(uint32(k))
			}
			f(r, row, perm)
		}
	}), len(src)/n, work)
}

// Sort returns the elements of x sorted along axis (negative counts from
// the end), ascending or descending, and the indices along axis they came
// from, as torch.sort(x, dim=axis, descending=descending, stable=True):
// NaN sorts above +Inf (last ascending, first descending) and equal
// elements keep their order.
func Sort(x *Tensor, axis int, descending bool) (values, indices *Tensor) {
	return sortInto("Sort", nil, nil, x, axis, descending)
}

// SortInto sets values and indices, of x's shape on x's device (strided
// views allowed), to Sort(x, axis, descending) and returns them; an x
// overlapping either is copied first. It panics, naming itself and the
// shapes, on a dst of another shape.
func SortInto(values, indices, x *Tensor, axis int, descending bool) (*Tensor, *Tensor) {
	checkNil("SortInto", "values, indices", values, indices)
	return sortInto("SortInto", values, indices, x, axis, descending)
}

// sortInto is Sort (values and indices nil: new tensors) and SortInto.
func sortInto(op string, values, indices, x *Tensor, axis int, descending bool) (*Tensor, *Tensor) {
	if x1, ok := asLine(op, x, axis); ok {
		values, indices = lineDst(op, "values", values), lineDst(op, "indices", indices)
		v, i := sortInto(op, values, indices, x1, 0, descending)
		return v.Reshape(), i.Reshape()
	}
	axis = sortAxis(op, x, axis)
	return selectSorted(op, values, indices, x, axis, x.shape[axis], descending)
}

// lineDst returns dst, which must be 0-d, viewed as [1] for a 0-d x
// sorted as a line (nil stays nil).
func lineDst(op, name string, dst *Tensor) *Tensor {
	if dst == nil {
		return nil
	}
	checkShapeIs(op, name, dst)
	return dst.Reshape(1)
}

// ArgSort returns the indices of Sort(x, axis, descending), as
// torch.argsort(x, dim=axis, descending=descending, stable=True).
func ArgSort(x *Tensor, axis int, descending bool) *Tensor {
	_, idx := argSortInto("ArgSort", nil, x, axis, descending)
	return idx
}

// ArgSortInto sets dst, of x's shape on x's device, to ArgSort(x, axis,
// descending) and returns dst; an x overlapping dst is copied first.
func ArgSortInto(dst, x *Tensor, axis int, descending bool) *Tensor {
	checkNil("ArgSortInto", "dst", dst)
	_, idx := argSortInto("ArgSortInto", dst, x, axis, descending)
	return idx
}

func argSortInto(op string, dst, x *Tensor, axis int, descending bool) (*Tensor, *Tensor) {
	if x1, ok := asLine(op, x, axis); ok {
		_, i := argSortInto(op, lineDst(op, "dst", dst), x1, 0, descending)
		return nil, i.Reshape()
	}
	axis = sortAxis(op, x, axis)
	if dst == nil {
		dst = result(op, deviceOn(op, nil, x), x.shape, x)
	}
	return selectSorted(op, nil, dst, x, axis, x.shape[axis], descending)
}

// TopK returns the k largest (or, largest false, smallest) elements of x
// along axis and their indices, as torch.topk(x, k, dim=axis,
// largest=largest, sorted=sorted): the first k of Sort(x, axis, largest),
// so NaN counts as the largest value and among equal elements the earlier
// along the axis comes first (PyTorch leaves ties unspecified). The
// results have x's shape with k along axis, in sorted order whatever
// sorted says (an unsorted order is unspecified in PyTorch). k must be in
// 0..x's dimension along axis.
func TopK(x *Tensor, k, axis int, largest, sorted bool) (values, indices *Tensor) {
	return topKInto("TopK", nil, nil, x, k, axis, largest)
}

// TopKInto sets values and indices, of x's shape with k along axis, on
// x's device, to TopK(x, k, axis, largest, sorted) and returns them; an x
// overlapping either is copied first.
func TopKInto(values, indices, x *Tensor, k, axis int, largest, sorted bool) (*Tensor, *Tensor) {
	checkNil("TopKInto", "values, indices", values, indices)
	return topKInto("TopKInto", values, indices, x, k, axis, largest)
}

func topKInto(op string, values, indices, x *Tensor, k, axis int, largest bool) (*Tensor, *Tensor) {
	if x1, ok := asLine(op, x, axis); ok && k == 1 {
		values, indices = lineDst(op, "values", values), lineDst(op, "indices", indices)
		v, i := topKInto(op, values, indices, x1, k, 0, largest)
		return v.Reshape(), i.Reshape()
	}
	axis = sortAxis(op, x, axis)
	if k < 0 || k > x.shape[axis] {
		panic(fmt.Sprintf("tensor: %s: k = %d out of range for axis %d of shape %v", op, k, axis, x.shape))
	}
	return selectSorted(op, values, indices, x, axis, k, largest)
}

// selectSorted writes the first k elements of each row of x along axis,
// sorted, and their indices, into values and indices (x's shape with k
// along axis; nil: a new tensor on x's device, except values nil with
// indices given, which skips the values) and returns them. It runs on the
// device of the operands (the Sort family).
func selectSorted(op string, values, indices, x *Tensor, axis, k int, descending bool) (*Tensor, *Tensor) {
	dev := deviceOn(op, indices, values, x)
	if indices == nil {
		shape := slices.Clone(x.shape)
		shape[axis] = k
		values, indices = result(op, dev, shape, x), result(op, dev, shape, x)
	}
	checkRowsDst(op, "values", values, x, axis, k)
	checkRowsDst(op, "indices", indices, x, axis, k)
	if x.Len() == 0 || k == 0 {
		return values, indices
	}
	if dev == CPU {
		if values != nil {
			x = detach(values, x)
		}
		x = detach(indices, x)
	}
	ran(op, sortOn(op, dev, indices, values, x).Sort(values, indices, x, axis, k, descending), indices, values, x)
	return values, indices
}

// Sort implements SortKernels on the host (sortRows).
func (cpuKernels) Sort(values, indices, x *Tensor, axis, k int, descending bool) error {
	const op = "Sort"
	n := x.shape[axis]
	src := alongRows(op, x, axis)
	sortRows(src, n, descending, func(r int, row []float32, perm []int32) {
		ib, is := rowBase(indices, axis, r), indices.strides[axis]
		for i, p := range perm[:k] {
			indices.data[ib+i*is] = float32(p)
		}
		if values != nil {
			vb, vs := rowBase(values, axis, r), values.strides[axis]
			for i, p := range perm[:k] {
				values.data[vb+i*vs] = row[p]
			}
		}
	})
	return nil
}

// checkRowsDst panics unless dst (nil passes) is a writable tensor of
// x's shape with k along axis.
func checkRowsDst(op, name string, dst, x *Tensor, axis, k int) {
	if dst == nil {
		return
	}
	ok := len(dst.shape) == len(x.shape)
	for i := 0; ok && i < len(x.shape); i++ {
		ok = dst.shape[i] == x.shape[i] || i == axis && dst.shape[i] == k
	}
	if !ok {
		panic(fmt.Sprintf("tensor: %s: %s of shape %v for x of shape %v (want %d along axis %d, x's dimensions elsewhere)", op, name, dst.shape, x.shape, k, axis))
	}
	checkWritable(op, dst)
}

// rowBase returns the position in t's storage of the first element of
// row r of t in alongRows' layout (axis last, the other axes in order).
func rowBase(t *Tensor, axis, r int) int {
	off := t.offset
	for d := len(t.shape) - 1; d >= 0; d-- {
		if d == axis {
			continue
		}
		n := t.shape[d]
		off += r % n * t.strides[d]
		r /= n
	}
	return off
}

// Median returns the median of x along axis and its index, as
// torch.median(x, dim=axis, keepdim=keepdims): for an even count the
// lower of the two middle elements (no averaging), the element at
// position (n-1)/2 of the stable ascending Sort, and its index; a row
// holding NaN gives NaN and the index of its first NaN, as PyTorch. Among
// equal elements the index is the one the stable sort puts there (PyTorch
// leaves it unspecified). The median of all elements is Median of
// x.Reshape(-1) along 0. A zero-size axis panics (no identity).
func Median(x *Tensor, axis int, keepdims bool) (values, indices *Tensor) {
	return medianInto("Median", nil, nil, x, axis, keepdims)
}

// MedianInto sets values and indices, of Median's result shape on x's
// device, to Median(x, axis, keepdims) and returns them; an x overlapping
// either is copied first.
func MedianInto(values, indices, x *Tensor, axis int, keepdims bool) (*Tensor, *Tensor) {
	checkNil("MedianInto", "values, indices", values, indices)
	return medianInto("MedianInto", values, indices, x, axis, keepdims)
}

func medianInto(op string, values, indices, x *Tensor, axis int, keepdims bool) (*Tensor, *Tensor) {
	if x1, ok := asLine(op, x, axis); ok {
		return medianInto(op, values, indices, x1, 0, false)
	}
	axis = sortAxis(op, x, axis)
	n := x.shape[axis]
	if n == 0 {
		panic(fmt.Sprintf("tensor: %s: zero-size axis %d of shape %v (no identity)", op, axis, x.shape))
	}
	out := slices.Clone(x.shape)
	if keepdims {
		out[axis] = 1
	} else {
		out = slices.Delete(out, axis, axis+1)
	}
	dev := deviceOn(op, values, indices, x)
	if values == nil {
		values, indices = result(op, dev, out, x), result(op, dev, out, x)
	} else {
		checkShapeIs(op, "values", values, out...)
		checkShapeIs(op, "indices", indices, out...)
		checkWritable(op, values)
		checkWritable(op, indices)
	}
	vk, ik := values, indices
	if !keepdims {
		vk, ik = values.Unsqueeze(axis), indices.Unsqueeze(axis)
	}
	if x.Len() == 0 {
		return values, indices
	}
	if dev == CPU {
		x = detach(values, detach(indices, x))
	}
	ran(op, sortOn(op, dev, values, indices, x).Median(vk, ik, x, axis), values, indices, x)
	return values, indices
}

// Median implements SortKernels on the host (sortRows).
func (cpuKernels) Median(values, indices, x *Tensor, axis int) error {
	n := x.shape[axis]
	src := alongRows("Median", x, axis)
	sortRows(src, n, false, func(r int, row []float32, perm []int32) {
		m := perm[(n-1)/2]
		if last := row[perm[n-1]]; last != last {
			m = perm[slices.IndexFunc(perm, func(p int32) bool { return row[p] != row[p] })]
		}
		values.data[rowBase(values, axis, r)], indices.data[rowBase(indices, axis, r)] = row[m], float32(m)
	})
	return nil
}
