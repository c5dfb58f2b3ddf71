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
// as a line of one element along axis 0 or -1, as PyTorch.

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
	const op = "Sort"
	if x1, ok := asLine(op, x, axis); ok {
		v, i := Sort(x1, 0, descending)
		return v.Reshape(), i.Reshape()
	}
	axis = sortAxis(op, x, axis)
	return selectSorted(op, x, axis, x.shape[axis], descending)
}

// ArgSort returns the indices of Sort(x, axis, descending), as
// torch.argsort(x, dim=axis, descending=descending, stable=True).
func ArgSort(x *Tensor, axis int, descending bool) *Tensor {
	const op = "ArgSort"
	if x1, ok := asLine(op, x, axis); ok {
		return ArgSort(x1, 0, descending).Reshape()
	}
	axis = sortAxis(op, x, axis)
	_, idx := selectSorted(op, x, axis, x.shape[axis], descending)
	return idx
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
	const op = "TopK"
	if x1, ok := asLine(op, x, axis); ok && k == 1 {
		v, i := TopK(x1, k, 0, largest, sorted)
		return v.Reshape(), i.Reshape()
	}
	axis = sortAxis(op, x, axis)
	if k < 0 || k > x.shape[axis] {
		panic(fmt.Sprintf("tensor: %s: k = %d out of range for axis %d of shape %v", op, k, axis, x.shape))
	}
	return selectSorted(op, x, axis, k, largest)
}

// selectSorted returns the first k elements of each row of x along axis,
// sorted, and their indices.
func selectSorted(op string, x *Tensor, axis, k int, descending bool) (values, indices *Tensor) {
	shape := slices.Clone(x.shape)
	shape[axis] = k
	if x.Len() == 0 || k == 0 {
		return alloc(op, shape), alloc(op, shape)
	}
	n := x.shape[axis]
	src := alongRows(op, x, axis)
	rows := len(src) / n
	vals, idx := make([]float32, rows*k), make([]float32, rows*k)
	sortRows(src, n, descending, func(r int, row []float32, perm []int32) {
		for i, p := range perm[:k] {
			vals[r*k+i], idx[r*k+i] = row[p], float32(p)
		}
	})
	return fromRows(op, vals, shape, axis), fromRows(op, idx, shape, axis)
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
	const op = "Median"
	if x1, ok := asLine(op, x, axis); ok {
		return Median(x1, 0, false)
	}
	axis = sortAxis(op, x, axis)
	n := x.shape[axis]
	if n == 0 {
		panic(fmt.Sprintf("tensor: %s: zero-size axis %d of shape %v (no identity)", op, axis, x.shape))
	}
	keep := slices.Clone(x.shape)
	keep[axis] = 1
	out := keep
	if !keepdims {
		out = slices.Delete(slices.Clone(x.shape), axis, axis+1)
	}
	vals, idx := alloc(op, out), alloc(op, out)
	if x.Len() == 0 {
		return vals, idx
	}
	src := alongRows(op, x, axis)
	sortRows(src, n, false, func(r int, row []float32, perm []int32) {
		m := perm[(n-1)/2]
		if last := row[perm[n-1]]; last != last {
			m = perm[slices.IndexFunc(perm, func(p int32) bool { return row[p] != row[p] })]
		}
		vals.data[r], idx.data[r] = row[m], float32(m)
	})
	return vals, idx
}
