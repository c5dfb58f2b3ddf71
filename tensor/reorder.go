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
	if x.Device() != CPU {
		return flipComposed(op, nil, x, axes)
	}
	return flipInto(op, alloc(op, x.shape), x, axes)
}

// FlipInto sets dst, of x's shape, to Flip(x, axes...) and returns dst;
// dst may overlap x (x is then copied first). On the host it is one
// strided copy; on a device, Flip's passes, the last writing dst.
func FlipInto(dst, x *Tensor, axes ...int) *Tensor {
	const op = "FlipInto"
	checkNil(op, "dst, x", dst, x)
	checkShapeIs(op, "dst", dst, x.shape...)
	if deviceOn(op, dst, x) != CPU {
		return flipComposed(op, dst, detach(dst, x), axes)
	}
	return flipInto(op, dst, x, axes)
}

// flipInto is FlipInto on the host: x viewed with the flipped axes'
// strides negated, copied into dst.
func flipInto(op string, dst, x *Tensor, axes []int) *Tensor {
	var flip [MaxDims]bool
	if len(x.shape) == 0 { // PyTorch accepts axis 0 (or -1) of a 0-d x
		for _, a := range axes {
			asLine(op, x, a)
		}
	} else {
		for _, a := range distinctAxes(op, x, axes) {
			flip[a] = true
		}
	}
	st, off := slices.Clone(x.strides), x.offset
	for i, d := range x.shape {
		if flip[i] && d > 1 {
			off += (d - 1) * st[i]
			st[i] = -st[i]
		}
	}
	if x.Len() == 0 {
		return dst
	}
	return copyInto(op, dst, x.view(slices.Clone(x.shape), st, off))
}

// flipComposed is Flip on x's device: IndexSelect, one pass per axis
// (selectPasses, into dst, or a new tensor when dst is nil).
func flipComposed(op string, dst, x *Tensor, axes []int) *Tensor {
	var resolved []int
	if len(x.shape) == 0 {
		for _, a := range axes {
			asLine(op, x, a)
		}
	} else {
		resolved = distinctAxes(op, x, axes)
	}
	return selectPasses(op, dst, x, resolved, func(a int) *Tensor {
		n := x.shape[a]
		return indexRange(op, x, n, func(i int) int { return n - 1 - i })
	})
}

// selectPasses is the composition of Flip, Roll and Pad on a device:
// x with IndexSelect(·, a, index(a)) applied along each of axes in turn,
// the last pass writing dst (a new tensor when dst is nil), or x copied
// when axes is empty. dst, when given, has the result's shape and does
// not overlap x.
func selectPasses(op string, dst, x *Tensor, axes []int, index func(a int) *Tensor) *Tensor {
	if len(axes) == 0 {
		if dst == nil {
			return x.Clone()
		}
		return copyInto(op, dst, x)
	}
	y := x
	for k, a := range axes {
		if k == len(axes)-1 && dst != nil {
			return IndexSelectInto(dst, y, a, index(a))
		}
		y = IndexSelect(y, a, index(a))
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
	if x.Device() != CPU {
		return rollComposed(op, nil, x, shifts, axes)
	}
	return rollInto(op, alloc(op, x.shape), x, shifts, axes)
}

// RollInto sets dst, of x's shape, to Roll(x, shifts, axes...) and
// returns dst; dst may overlap x (x is then copied first). On the host it
// is at most two strided copies per rolled axis; on a device, Roll's
// passes, the last writing dst (for a flat roll into a non-contiguous
// dst, Roll then CopyInto).
func RollInto(dst, x *Tensor, shifts []int, axes ...int) *Tensor {
	const op = "RollInto"
	checkNil(op, "dst, x", dst, x)
	checkShapeIs(op, "dst", dst, x.shape...)
	if deviceOn(op, dst, x) != CPU {
		return rollComposed(op, dst, detach(dst, x), shifts, axes)
	}
	return rollInto(op, dst, x, shifts, axes)
}

// rollShifts checks shifts and axes of x for op and returns the total
// shift of each axis, in [0, n) (no axes: x flattened, one shift, in
// shift[0] with flat true).
func rollShifts(op string, x *Tensor, shifts, axes []int) (shift [MaxDims]int, flat bool) {
	if len(axes) == 0 {
		if len(shifts) != 1 {
			panic(fmt.Sprintf("tensor: %s: shifts %v without axes (x of shape %v): want one shift", op, shifts, x.shape))
		}
		if n := x.Len(); n > 0 {
			shift[0] = (shifts[0]%n + n) % n
		}
		return shift, true
	}
	if len(shifts) != len(axes) {
		panic(fmt.Sprintf("tensor: %s: shifts %v and axes %v differ in length (x of shape %v)", op, shifts, axes, x.shape))
	}
	for j, a := range axes {
		a = x.axis(op, a)
		if n := x.shape[a]; n > 0 {
			shift[a] = ((shift[a]+shifts[j])%n + n) % n
		}
	}
	return shift, false
}

// rollInto is RollInto on the host.
func rollInto(op string, dst, x *Tensor, shifts, axes []int) *Tensor {
	shift, flat := rollShifts(op, x, shifts, axes)
	if x.Len() == 0 {
		return dst
	}
	x = detach(dst, x)
	if flat {
		if !dst.IsContiguous() {
			return copyInto(op, dst, rollInto(op, alloc(op, x.shape), x, shifts, axes))
		}
		n := x.Len()
		d := dst.view([]int{n}, []int{1}, dst.offset)
		rollPieces(op, d, x.Contiguous().Reshape(n), shift[:1])
		return dst
	}
	rollPieces(op, dst, x, shift[:len(x.shape)])
	return dst
}

// rollPieces copies src rolled by shift[a] along each axis a into dst:
// along the first axis with a shift s of n, src's first n-s elements to
// dst's last and src's last s to dst's first, each pair for the axes
// after.
func rollPieces(op string, dst, src *Tensor, shift []int) {
	a := slices.IndexFunc(shift, func(s int) bool { return s != 0 })
	if a < 0 {
		copyInto(op, dst, src)
		return
	}
	s, n := shift[a], dst.shape[a]
	rest := make([]int, len(shift))
	copy(rest[a+1:], shift[a+1:])
	rollPieces(op, dst.Slice(a, s, n, 1), src.Slice(a, 0, n-s, 1), rest)
	rollPieces(op, dst.Slice(a, 0, s, 1), src.Slice(a, n-s, n, 1), rest)
}

// rollComposed is Roll on x's device: IndexSelect, one pass per axis
// with a nonzero net shift (rollShifts'; selectPasses, into dst, or a new
// tensor when dst is nil).
func rollComposed(op string, dst, x *Tensor, shifts, axes []int) *Tensor {
	shift, flat := rollShifts(op, x, shifts, axes)
	y, d := x, dst
	if flat {
		y = x.Reshape(-1)
		if d != nil && d.IsContiguous() {
			d = d.Reshape(-1)
		} else {
			d = nil // no flat view of dst: a new tensor, copied at the end
		}
	}
	var moved []int
	for a, s := range shift[:len(y.shape)] {
		if s != 0 {
			moved = append(moved, a)
		}
	}
	out := selectPasses(op, d, y, moved, func(a int) *Tensor {
		n, s := y.shape[a], shift[a]
		return indexRange(op, y, n, func(i int) int { return (i - s + n) % n })
	})
	if flat {
		out = out.Reshape(x.shape...)
	}
	switch {
	case dst == nil:
		return out
	case d == nil:
		return copyInto(op, dst, out)
	}
	return dst
}

// Tile returns x repeated reps[i] times along dimension i, as
// torch.tile(x, reps): with fewer reps than x has dimensions, reps is
// padded with leading 1s; with more, x is viewed with leading dimensions
// of size 1. The result has dimension reps[i]·x.Dim(i) along i; a zero
// rep gives an empty tensor, a negative one panics.
func Tile(x *Tensor, reps ...int) *Tensor {
	const op = "Tile"
	checkNil(op, "x", x)
	out, dims := tileShape(op, x, reps)
	return tileInto(op, result(op, deviceOn(op, nil, x), out[:dims], x), x, reps)
}

// TileShape returns the shape of Tile(x, reps...) in its first dims
// elements, allocating nothing (for a caller that sizes the result), and
// panics as Tile does on negative reps or a result Tile cannot make.
func TileShape(x *Tensor, reps ...int) (shape [MaxDims]int, dims int) {
	const op = "Tile"
	checkNil(op, "x", x)
	return tileShape(op, x, reps)
}

// TileInto sets dst, of Tile's result shape, to Tile(x, reps...) and
// returns dst (one strided copy, on x's device); dst may overlap x (x is
// then copied first).
func TileInto(dst, x *Tensor, reps ...int) *Tensor {
	const op = "TileInto"
	checkNil(op, "dst, x", dst, x)
	out, dims := tileShape(op, x, reps)
	checkShapeIs(op, "dst", dst, out[:dims]...)
	return tileInto(op, dst, detach(dst, x), reps)
}

// tileDim returns, at dimension i of Tile's result for x of shape xs (of
// max(len(xs), len(reps)) dimensions: xs and reps aligned at their last,
// padded with leading 1s), x's dimension j there (-1 for a padding 1), its
// size d (1 there) and the rep r: the result's size there is r·d.
func tileDim(xs, reps []int, i int) (j, d, r int) {
	dims := max(len(xs), len(reps))
	j, d, r = i-(dims-len(xs)), 1, 1
	if j >= 0 {
		d = xs[j]
	} else {
		j = -1
	}
	if k := i - (dims - len(reps)); k >= 0 {
		r = reps[k]
	}
	return j, d, r
}

// tileShape checks reps for op and returns Tile's result shape, in its
// first dims elements.
func tileShape(op string, x *Tensor, reps []int) (out [MaxDims]int, dims int) {
	for _, r := range reps {
		if r < 0 {
			panic(fmt.Sprintf("tensor: %s: negative reps %v (x of shape %v)", op, reps, x.shape))
		}
	}
	dims = max(len(reps), len(x.shape))
	if dims > MaxDims {
		panic(fmt.Sprintf("tensor: %s: %d reps give %d dimensions (x of shape %v), more than %d", op, len(reps), dims, x.shape, MaxDims))
	}
	n := 0 // tileInto's dimensions: a pair where the rep is not 1
	for i := range dims {
		_, d, r := tileDim(x.shape, reps, i)
		if r != 1 {
			n++
		}
		n++
		out[i] = r * d
	}
	if n > MaxDims {
		panic(fmt.Sprintf("tensor: %s: reps %v of shape %v need %d dimensions internally, more than %d", op, reps, x.shape, n, MaxDims))
	}
	if _, ok := checkedSize(out[:dims]); !ok {
		panic(fmt.Sprintf("tensor: %s: reps %v of shape %v give %v, too many elements", op, reps, x.shape, slices.Clone(out[:dims])))
	}
	return out, dims
}

// tileInto copies x, viewed as [r0, d0, r1, d1, ...] (a pair only where
// r ≠ 1) with the reps broadcast (stride 0), into dst viewed alike (the
// pair's strides d·s and s for dst's stride s).
func tileInto(op string, dst, x *Tensor, reps []int) *Tensor {
	if dst.Len() == 0 {
		return dst
	}
	var vs, vst, dst2 []int
	for i, ds := range dst.strides {
		j, d, r := tileDim(x.shape, reps, i)
		xs := 0
		if j >= 0 {
			xs = x.strides[j]
		}
		if r != 1 {
			vs, vst, dst2 = append(vs, r), append(vst, 0), append(dst2, d*ds)
		}
		vs, vst, dst2 = append(vs, d), append(vst, xs), append(dst2, ds)
	}
	copyInto(op, dst.view(slices.Clone(vs), dst2, dst.offset), x.view(vs, vst, x.offset))
	return dst
}
