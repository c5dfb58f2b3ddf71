package tensor

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/simd"
)

// Lookups by index and their gradients: IndexSelect (Embedding's lookup)
// and its adjoint IndexAdd work on whole slices along an axis, Gather and
// its adjoint ScatterAdd element by element, OneHot encodes labels.
// Indices are float32 tensors holding integers, exact below MaxIndexPlane
// (2²⁴; past it not every integer is a float32, so some positions of a
// longer axis have no index). Along an axis of length n, -n..n-1 name its
// positions, negative ones counting from the end; any other value (out of
// range, not an integer, NaN or infinite) makes the op panic naming
// itself and the value, before it writes into a tensor of the caller's.
//
// The ops run on the device of their operands, through its Index family
// (IndexKernels), and return tensors there; the operands, the indices
// included, must all be on that device. A device's implementation checks
// the indices as it reads them and reports an invalid one as an error,
// which makes the op panic naming it, the shapes, the devices and the
// error; so does a device without the family. Nothing is copied to the
// host behind the caller's back.
//
// On the CPU the sums of IndexAdd and ScatterAdd are deterministic: each
// element of dst adds its contributions in the order of the index (IndexAdd)
// or of src's elements in row-major order (ScatterAdd), each in float32.
// A device may add them in any order.

// IndexSelect returns the entries of t at the given indices along axis,
// in their order (repeats allowed), as a new tensor of t's shape with
// index's length along axis: out.Index(axis, i) = t.Index(axis, index[i]).
// index is 1-D.
func IndexSelect(t *Tensor, axis int, index *Tensor) *Tensor {
	const op = "IndexSelect"
	checkNil(op, "t, index", t, index)
	axis = t.axis(op, axis)
	n := checkIndex1D(op, index)
	shape := slices.Clone(t.shape)
	shape[axis] = n
	dev := deviceOn(op, nil, t, index)
	k := indexOn(op, dev, nil, t, index)
	dst := result(op, dev, shape, t, index)
	ranIndex(op, k.IndexSelect(dst, t, axis, index), dst, t, index)
	return dst
}

// IndexSelectInto sets dst to IndexSelect(t, axis, index) and returns dst.
// With contiguous operands (slices along axis of fewer than 2¹⁶
// elements) it allocates nothing; an operand overlapping dst is copied
// first.
func IndexSelectInto(dst, t *Tensor, axis int, index *Tensor) *Tensor {
	const op = "IndexSelectInto"
	checkNil(op, "dst, t, index", dst, t, index)
	axis = t.axis(op, axis)
	checkAlong(op, "dst", dst, t, axis, checkIndex1D(op, index))
	checkWritable(op, dst)
	dev := deviceOn(op, dst, t, index)
	k := indexOn(op, dev, dst, t, index)
	if dev == CPU {
		t, index = detach(dst, t), detach(dst, index)
	}
	ranIndex(op, k.IndexSelect(dst, t, axis, index), dst, t, index)
	return dst
}

// IndexAdd adds src.Index(axis, i) to dst.Index(axis, index[i]) for each
// i of the 1-D index, as PyTorch's index_add_, and returns dst: repeated
// indices accumulate. src has dst's shape but index's length along axis.
// It is the adjoint of IndexSelect (the gradient of an embedding lookup):
// ⟨IndexSelect(x, axis, index), y⟩ = ⟨x, IndexAdd(zeros, axis, index, y)⟩.
// An operand overlapping dst is copied first.
func IndexAdd(dst *Tensor, axis int, index, src *Tensor) *Tensor {
	const op = "IndexAdd"
	checkNil(op, "dst, index, src", dst, index, src)
	axis = dst.axis(op, axis)
	checkAlong(op, "src", src, dst, axis, checkIndex1D(op, index))
	checkWritable(op, dst)
	dev := deviceOn(op, dst, index, src)
	k := indexOn(op, dev, dst, index, src)
	if dev == CPU {
		index, src = detach(dst, index), detach(dst, src)
	}
	ranIndex(op, k.IndexAdd(dst, axis, index, src), dst, index, src)
	return dst
}

// checkIndex1D panics unless index is 1-D, and returns its length.
func checkIndex1D(op string, index *Tensor) int {
	if len(index.shape) != 1 {
		panic(fmt.Sprintf("tensor: %s: index shape %v, want 1-D", op, index.shape))
	}
	return index.shape[0]
}

// checkAlong panics unless u (named what) has t's shape but n along axis.
func checkAlong(op, what string, u, t *Tensor, axis, n int) {
	ok := len(u.shape) == len(t.shape)
	for i := 0; ok && i < len(u.shape); i++ {
		ok = u.shape[i] == t.shape[i] || i == axis && u.shape[i] == n
	}
	if !ok || u.shape[axis] != n {
		want := slices.Clone(t.shape)
		want[axis] = n
		panic(fmt.Sprintf("tensor: %s: %s shape %v, want %v (shape %v with the index's length %d along axis %d)", op, what, u.shape, want, t.shape, n, axis))
	}
}

// Gather returns out with out[i][j][k] = t[index[i][j][k]][j][k] for axis
// 0 (likewise for other axes), as PyTorch's gather: index has t's rank and
// each of its dimensions other than axis is at most t's; out has index's
// shape.
func Gather(t *Tensor, axis int, index *Tensor) *Tensor {
	const op = "Gather"
	checkNil(op, "t, index", t, index)
	axis = checkGather(op, t, axis, index)
	dev := deviceOn(op, nil, t, index)
	k := indexOn(op, dev, nil, t, index)
	dst := result(op, dev, index.shape, t, index)
	ranIndex(op, k.Gather(dst, t, axis, index), dst, t, index)
	return dst
}

// GatherInto sets dst, of index's shape, to Gather(t, axis, index) and
// returns dst. It allocates nothing for a contiguous index; an operand
// overlapping dst is copied first.
func GatherInto(dst, t *Tensor, axis int, index *Tensor) *Tensor {
	const op = "GatherInto"
	checkNil(op, "dst, t, index", dst, t, index)
	axis = checkGather(op, t, axis, index)
	checkSame(op, "dst", dst, index)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, t, index)
	k := indexOn(op, dev, dst, t, index)
	if dev == CPU {
		t, index = detach(dst, t), detach(dst, index)
	}
	ranIndex(op, k.Gather(dst, t, axis, index), dst, t, index)
	return dst
}

// ScatterAdd adds each element src[p] to dst[p with p[axis] replaced by
// index[p]], as PyTorch's scatter_add_, and returns dst: targets named
// more than once accumulate. index has src's shape and dst's rank, each
// of its dimensions other than axis at most dst's. It is the adjoint of
// Gather: ⟨Gather(x, axis, index), y⟩ = ⟨x, ScatterAdd(zeros, axis,
// index, y)⟩. An operand overlapping dst is copied first.
func ScatterAdd(dst *Tensor, axis int, index, src *Tensor) *Tensor {
	const op = "ScatterAdd"
	checkNil(op, "dst, index, src", dst, index, src)
	axis = checkGather(op, dst, axis, index)
	checkSame(op, "src", src, index)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, index, src)
	k := indexOn(op, dev, dst, index, src)
	if dev == CPU {
		index, src = detach(dst, index), detach(dst, src)
	}
	ranIndex(op, k.ScatterAdd(dst, axis, index, src), dst, index, src)
	return dst
}

// checkGather checks Gather's (or ScatterAdd's) t, axis and index and
// returns the axis, resolved.
func checkGather(op string, t *Tensor, axis int, index *Tensor) int {
	axis = t.axis(op, axis)
	if len(index.shape) != len(t.shape) {
		panic(fmt.Sprintf("tensor: %s: shapes %v and index %v differ in rank", op, t.shape, index.shape))
	}
	for i, d := range index.shape {
		if i != axis && d > t.shape[i] {
			panic(fmt.Sprintf("tensor: %s: index shape %v exceeds shape %v outside axis %d", op, index.shape, t.shape, axis))
		}
	}
	return axis
}

// checkSame panics unless u (named what) has index's shape.
func checkSame(op, what string, u, index *Tensor) {
	if !slices.Equal(u.shape, index.shape) {
		panic(fmt.Sprintf("tensor: %s: %s shape %v, want the index's %v", op, what, u.shape, index.shape))
	}
}

// OneHot returns labels (float32 integers in 0..classes-1) encoded as rows
// of classes elements: the result has labels' shape plus a last dimension
// of classes, 1 at each label and 0 elsewhere. Any other label makes it
// panic naming the label.
func OneHot(labels *Tensor, classes int) *Tensor {
	const op = "OneHot"
	checkNil(op, "labels", labels)
	if classes < 1 {
		panic(fmt.Sprintf("tensor: %s: %d classes", op, classes))
	}
	dev := deviceOn(op, nil, labels)
	k := indexOn(op, dev, nil, labels)
	dst := result(op, dev, append(slices.Clone(labels.shape), classes), labels)
	ranIndex(op, k.OneHot(dst, labels), dst, labels)
	return dst
}

// An indexError is an invalid index (or label) that the CPU's
// implementation of a family found: a programmer error, which the public
// function panics with, naming itself (ranIndex). A device's
// implementation returns errors of its own, which panic as any device
// error does (ran).
type indexError string

func (e indexError) Error() string { return string(e) }

// ranIndex is ran for the ops whose CPU implementation may return an
// indexError: that panics as "tensor: op: " and the error.
func ranIndex(op string, err error, dst *Tensor, ts ...*Tensor) {
	if e, ok := err.(indexError); ok {
		panic("tensor: " + op + ": " + string(e))
	}
	ran(op, err, dst, ts...)
}

// integerIn reports whether v is an integer in lo..hi-1.
func integerIn(v float32, lo, hi int) bool {
	f := float64(v)
	return f >= float64(lo) && f < float64(hi) && f == float64(int(f))
}

// checkIndices returns the indexError of the first of idx that names no
// position of an axis of length n.
func checkIndices(idx []float32, n int) error {
	for _, v := range idx {
		if !integerIn(v, -n, n) {
			return indexError(fmt.Sprintf("index %v is not an integer in %d..%d", v, -n, n-1))
		}
	}
	return nil
}

// position resolves a checked index v of an axis of length n.
func position(v float32, n int) int {
	k := int(v)
	if k < 0 {
		k += n
	}
	return k
}

// IndexSelect is the CPU's IndexSelect: host operands whose shapes the
// public function has checked, dst overlapping neither.
func (cpuKernels) IndexSelect(dst, t *Tensor, axis int, index *Tensor) error {
	dst.hostOnly("IndexSelect")
	t.hostOnly("IndexSelect")
	idx := index.hostData("IndexSelect")
	if err := checkIndices(idx, t.shape[axis]); err != nil {
		return err
	}
	alongAxis(dst, t, axis, idx, false)
	return nil
}

// IndexAdd is the CPU's IndexAdd, as IndexSelect: the slices are added in
// the order of the index.
func (cpuKernels) IndexAdd(dst *Tensor, axis int, index, src *Tensor) error {
	dst.hostOnly("IndexAdd")
	src.hostOnly("IndexAdd")
	idx := index.hostData("IndexAdd")
	if err := checkIndices(idx, dst.shape[axis]); err != nil {
		return err
	}
	alongAxis(dst, src, axis, idx, true)
	return nil
}

// alongAxis copies (IndexSelect) src's slice idx[i] along axis into dst's
// slice i, or adds (IndexAdd) src's slice i to dst's slice idx[i], for
// each i in order; the indices are checked. Slices that are contiguous
// and below the parallel threshold are one copy or simd.Add each (no
// allocation); others are views without axis, moved along it, that go
// through the CPU's Copy and Elementwise kernels.
func alongAxis(dst, src *Tensor, axis int, idx []float32, add bool) {
	n, m := src.shape[axis], 1
	if add {
		n = dst.shape[axis]
	}
	for i, d := range dst.shape {
		if i != axis {
			m *= d
		}
	}
	if m == 0 {
		return
	}
	// at returns the offsets of the slices of step i, index v.
	at := func(i int, v float32) (int, int) {
		di, si := i, position(v, n)
		if add {
			di, si = si, i
		}
		return dst.offset + di*dst.strides[axis], src.offset + si*src.strides[axis]
	}
	if m < 1<<16 && contiguousWithout(dst, axis) && contiguousWithout(src, axis) {
		for i, v := range idx {
			do, so := at(i, v)
			if dd, sd := dst.data[do:do+m], src.data[so:so+m]; add {
				simd.Add(dd, dd, sd)
			} else {
				copy(dd, sd)
			}
		}
		return
	}
	d, s := slice(dst, axis), slice(src, axis)
	for i, v := range idx {
		d.offset, s.offset = at(i, v)
		if add {
			cpuKernels{}.Binary(ElemAdd, d, d, s)
		} else {
			cpuKernels{}.CopyInto(d, s)
		}
	}
}

// contiguousWithout reports whether t's slices along axis (t without that
// dimension) are contiguous.
func contiguousWithout(t *Tensor, axis int) bool {
	s := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if i != axis && t.shape[i] != 1 {
			if t.strides[i] != s {
				return false
			}
			s *= t.shape[i]
		}
	}
	return true
}

// slice returns the view of t without axis, at t's offset.
func slice(t *Tensor, axis int) *Tensor {
	return &Tensor{data: t.data, shape: slices.Delete(slices.Clone(t.shape), axis, axis+1),
		strides: slices.Delete(slices.Clone(t.strides), axis, axis+1), offset: t.offset}
}

// Gather is the CPU's Gather: host operands whose shapes the public
// function has checked, dst overlapping neither.
func (cpuKernels) Gather(dst, t *Tensor, axis int, index *Tensor) error {
	dst.hostOnly("Gather")
	t.hostOnly("Gather")
	idx := index.hostData("Gather")
	if err := checkIndices(idx, t.shape[axis]); err != nil {
		return err
	}
	dd, td := dst.data, t.data
	eachIndexed(index.shape, axis, idx, t, dst, func(ti, di int) { dd[di] = td[ti] })
	return nil
}

// ScatterAdd is the CPU's ScatterAdd, as Gather: src's elements are added
// in row-major order.
func (cpuKernels) ScatterAdd(dst *Tensor, axis int, index, src *Tensor) error {
	dst.hostOnly("ScatterAdd")
	src.hostOnly("ScatterAdd")
	idx := index.hostData("ScatterAdd")
	if err := checkIndices(idx, dst.shape[axis]); err != nil {
		return err
	}
	dd, sd := dst.data, src.data
	eachIndexed(index.shape, axis, idx, dst, src, func(di, si int) { dd[di] += sd[si] })
	return nil
}

// eachIndexed calls f(ai, bi) for each position p of shape (index's) in
// row-major order, ai being a's storage position of p with p[axis]
// replaced by the checked index idx[i] of p (its row-major number i), bi
// b's storage position of p.
func eachIndexed(shape []int, axis int, idx []float32, a, b *Tensor, f func(ai, bi int)) {
	n := a.shape[axis]
	var pos [MaxDims]int
	ao, bo := a.offset, b.offset // ao without axis's term
	for _, v := range idx {
		f(ao+position(v, n)*a.strides[axis], bo)
		for d := len(shape) - 1; d >= 0; d-- {
			as := a.strides[d]
			if d == axis {
				as = 0
			}
			pos[d]++
			ao, bo = ao+as, bo+b.strides[d]
			if pos[d] < shape[d] {
				break
			}
			ao, bo = ao-shape[d]*as, bo-shape[d]*b.strides[d]
			pos[d] = 0
		}
	}
}

// OneHot is the CPU's OneHot: host operands, dst new (contiguous and
// zero-filled) of labels' shape plus a last dimension of classes, which
// the public function drops when a label is invalid.
func (cpuKernels) OneHot(dst, labels *Tensor) error {
	od, classes := dst.hostData("OneHot"), dst.shape[len(dst.shape)-1]
	for i, v := range labels.hostData("OneHot") {
		if !integerIn(v, 0, classes) {
			return indexError(fmt.Sprintf("label %v not in 0..%d", v, classes-1))
		}
		od[i*classes+int(v)] = 1
	}
	return nil
}
