package tensor

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/lanesgo/lanes/internal/shape"
)

// maxOps is the most tensors one loop walks: Where's destination,
// condition and two inputs.
const maxOps = 4

// loop walks up to maxOps tensors over one shape in row-major order, one
// innermost run at a time. Operands are aligned to the shape with NumPy's
// rules (missing leading dimensions and dimensions of size 1 get stride 0),
// size-1 dimensions are dropped and dimensions that are contiguous in every
// operand are merged, so a contiguous operation is a single run.
type loop struct {
	nops, n int // operands, dimensions after merging
	shape   [MaxDims]int
	st      [maxOps][MaxDims]int
	off     [maxOps]int
	data    [maxOps][]float32
	empty   bool
}

// init aligns ops to shape; every op must broadcast to shape (checked by
// the caller). It is where the elementwise, copy and reduce operations
// take their operands' storage, so it is where a device tensor, whose
// elements the host cannot read, makes op panic.
func (l *loop) init(op string, shape []int, ops ...*Tensor) {
	for _, t := range ops {
		t.hostOnly(op)
	}
	l.nops, l.n, l.empty = len(ops), 0, false
	for _, d := range shape {
		if d == 0 {
			l.empty = true
			return
		}
	}
	for k, t := range ops {
		l.off[k], l.data[k] = t.offset, t.data
	}
	for i, d := range shape {
		if d == 1 {
			continue
		}
		j := l.n
		l.shape[j] = d
		for k, t := range ops {
			a := i - (len(shape) - len(t.shape))
			s := 0
			if a >= 0 && t.shape[a] != 1 {
				s = t.strides[a]
			}
			l.st[k][j] = s
		}
		// Merge with the previous dimension when every operand steps
		// through both as one.
		if j > 0 {
			merge := true
			for k := 0; k < l.nops; k++ {
				if l.st[k][j-1] != l.st[k][j]*d {
					merge = false
					break
				}
			}
			if merge {
				l.shape[j-1] *= d
				for k := 0; k < l.nops; k++ {
					l.st[k][j-1] = l.st[k][j]
				}
				continue
			}
		}
		l.n++
	}
}

// inner returns the length of the innermost run and each operand's stride in it.
func (l *loop) inner() (n int, st [maxOps]int) {
	if l.n == 0 {
		return 1, st
	}
	for k := 0; k < l.nops; k++ {
		st[k] = l.st[k][l.n-1]
	}
	return l.shape[l.n-1], st
}

// innerLen is the length of the innermost run.
func (l *loop) innerLen() int {
	n, _ := l.inner()
	return n
}

// clear drops the references to the operands' storage.
func (l *loop) clear() { clear(l.data[:]) }

// runs returns the number of innermost runs.
func (l *loop) runs() int {
	if l.empty {
		return 0
	}
	r := 1
	for i := 0; i < l.n-1; i++ {
		r *= l.shape[i]
	}
	return r
}

// each calls f with the start offset of every operand for runs lo..hi of
// the innermost dimension (in row-major order). off is f's argument, and
// idx the outer index; the caller provides both so that nothing escapes.
func (l *loop) each(lo, hi int, off *[maxOps]int, idx *[MaxDims]int, f func(off *[maxOps]int)) {
	if lo >= hi {
		return
	}
	outer := max(l.n-1, 0)
	// Decompose lo into the outer index.
	r := lo
	for i := outer - 1; i >= 0; i-- {
		idx[i] = r % l.shape[i]
		r /= l.shape[i]
	}
	for k := 0; k < l.nops; k++ {
		off[k] = l.off[k]
		for i := 0; i < outer; i++ {
			off[k] += idx[i] * l.st[k][i]
		}
	}
	for run := lo; ; {
		f(off)
		run++
		if run == hi {
			return
		}
		for i := outer - 1; i >= 0; i-- {
			idx[i]++
			for k := 0; k < l.nops; k++ {
				off[k] += l.st[k][i]
			}
			if idx[i] < l.shape[i] {
				break
			}
			for k := 0; k < l.nops; k++ {
				off[k] -= idx[i] * l.st[k][i]
			}
			idx[i] = 0
		}
	}
}

// chunk is the length of the scratch buffers strided or broadcast runs are
// copied through.
const chunk = 256

type scratch struct {
	buf [maxOps][chunk]float32
	off [maxOps]int
	idx [MaxDims]int
	sl  [maxOps][]float32 // the slices handed to a kernel (kept here: a kernel is a func value, so they would escape from the stack)
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// kernel computes s[0] from s[1:] elementwise: contiguous slices of one
// length. arg carries the op's scalar parameters (alpha, lo and hi, ...).
// Kernels are plain functions, never closures, so that a job holding one
// does not allocate.
type kernel func(s [][]float32, arg *[2]float32)

// apply runs k over the elements lo..hi of the loop (counted in row-major
// order over all runs): ops[0] is written, the others read. k gets
// contiguous slices; operands whose run is not contiguous (stride 0 or > 1)
// go through scratch buffers of chunk elements, so k may see a run in
// several pieces.
func (l *loop) apply(lo, hi int, k kernel, arg *[2]float32) {
	if l.empty || lo >= hi {
		return
	}
	n, st := l.inner()
	sc := scratchPool.Get().(*scratch)
	defer func() {
		clear(sc.sl[:]) // do not keep the tensors' storage alive from the pool
		scratchPool.Put(sc)
	}()
	s := sc.sl[:l.nops]
	contiguous := true
	for i := 0; i < l.nops; i++ {
		contiguous = contiguous && st[i] == 1
	}
	run := lo / n
	e0 := lo - run*n
	left := hi - lo
	l.each(run, (hi+n-1)/n, &sc.off, &sc.idx, func(off *[maxOps]int) {
		e1 := min(n, e0+left)
		left -= e1 - e0
		if contiguous {
			for i := range s {
				s[i] = l.data[i][off[i]+e0 : off[i]+e1]
			}
			k(s, arg)
			e0 = 0
			return
		}
		for c := e0; c < e1; c += chunk {
			m := min(chunk, e1-c)
			for i := range s {
				o := off[i] + c*st[i]
				switch {
				case st[i] == 1:
					s[i] = l.data[i][o : o+m]
				case i == 0:
					s[i] = sc.buf[i][:m]
				case st[i] == 0:
					b := sc.buf[i][:m]
					v := l.data[i][o]
					for j := range b {
						b[j] = v
					}
					s[i] = b
				default:
					b := sc.buf[i][:m]
					src := l.data[i]
					for j := range b {
						b[j] = src[o+j*st[i]]
					}
					s[i] = b
				}
			}
			k(s, arg)
			if st[0] != 1 {
				o, d := off[0]+c*st[0], l.data[0]
				for j, v := range s[0] {
					d[o+j*st[0]] = v
				}
			}
		}
		e0 = 0
	})
}

// broadcastShape returns the NumPy broadcast of the shapes of ts, or panics
// naming op and every shape.
func broadcastShape(op string, ts ...*Tensor) []int {
	var out []int
	for _, t := range ts {
		var ok bool
		if out, ok = shape.Broadcast(out, t.shape); !ok {
			panic(fmt.Sprintf("tensor: %s: shapes %s are not broadcastable", op, shapesOf(ts)))
		}
	}
	return out
}

// BroadcastShape returns the shape that tensors of shapes a and b
// broadcast to under NumPy's rules, and whether they broadcast at all.
func BroadcastShape(a, b []int) ([]int, bool) { return shape.Broadcast(a, b) }

// checkBroadcastInto panics unless every t in ts broadcasts to dst's shape
// and dst is writable element by element (no stride-0 dimension).
func checkBroadcastInto(op string, dst *Tensor, ts ...*Tensor) {
	checkWritable(op, dst)
	for _, t := range ts {
		if len(t.shape) > len(dst.shape) {
			panic(fmt.Sprintf("tensor: %s: dst shape %v and operand shapes %s: operands do not broadcast to dst", op, dst.shape, shapesOf(ts)))
		}
		for j, d := range t.shape {
			if o := dst.shape[j+len(dst.shape)-len(t.shape)]; d != o && d != 1 {
				panic(fmt.Sprintf("tensor: %s: dst shape %v and operand shapes %s: operands do not broadcast to dst", op, dst.shape, shapesOf(ts)))
			}
		}
	}
}

func checkWritable(op string, dst *Tensor) {
	for i, s := range dst.strides {
		if s == 0 && dst.shape[i] > 1 {
			panic(fmt.Sprintf("tensor: %s: dst of shape %v has a broadcast (stride 0) dimension %d", op, dst.shape, i))
		}
	}
}

// shapesOf describes the operands ts (nil ones skipped): "[2 3] and [3 4]".
func shapesOf(ts []*Tensor) string { return describe(ts, false) }

// describe joins the shapes of ts (nil ones skipped) with " and ", each
// followed by " on <device>" when where is set (see placesOf).
func describe(ts []*Tensor, where bool) string {
	s, n := "", 0
	for _, t := range ts {
		if t == nil {
			continue
		}
		if n > 0 {
			s += " and "
		}
		s += fmt.Sprint(t.shape)
		if where {
			s += fmt.Sprintf(" on %v", t.Device())
		}
		n++
	}
	return s
}

// span returns the address range [lo, hi) of the elements t can reach.
func (t *Tensor) span() (lo, hi uintptr) {
	if t.Len() == 0 || len(t.data) == 0 {
		return 0, 0
	}
	first, last := t.reach()
	base := uintptr(unsafe.Pointer(unsafe.SliceData(t.data)))
	return base + uintptr(first)*4, base + uintptr(last+1)*4
}

// reach returns the positions, in the memory t views, of the first and the
// last element t can reach: the offset moved by each dimension's extent
// with a negative stride, and by each with a positive one. t must have at
// least one element.
func (t *Tensor) reach() (first, last int) {
	first, last = t.offset, t.offset
	for i, d := range t.shape {
		if s := t.strides[i]; s > 0 {
			last += (d - 1) * s
		} else {
			first += (d - 1) * s
		}
	}
	return first, last
}

// sameLayout reports whether a and b are the same elements in the same order.
func sameLayout(a, b *Tensor) bool {
	if len(a.data) == 0 || len(b.data) == 0 || unsafe.SliceData(a.data) != unsafe.SliceData(b.data) || a.offset != b.offset || len(a.shape) != len(b.shape) {
		return false
	}
	for i := range a.shape {
		if a.shape[i] != b.shape[i] || (a.shape[i] > 1 && a.strides[i] != b.strides[i]) {
			return false
		}
	}
	return true
}

// unalias returns src, or a copy of it when writing dst element by element
// could change elements of src not yet read: the two overlap in memory
// without being the same elements in the same order (broadcast from the
// same leading elements included).
func unalias(dst, src *Tensor) *Tensor {
	if !overlaps(dst, src) {
		return src
	}
	if len(src.shape) == len(dst.shape) && sameLayout(dst, src) {
		return src
	}
	return src.Clone()
}

// detach returns src, or a copy of it when its storage overlaps dst's at
// all (overlaps, on any device): for operations that read other elements
// than the one they write, and for a composition of device kernels that
// writes dst before it has read all of src (device kernels get their
// operands as given).
func detach(dst, src *Tensor) *Tensor {
	if overlaps(dst, src) {
		return src.Clone()
	}
	return src
}

// overlaps reports whether a and b can reach a common element: on the
// host, whether their storage spans intersect; on a device, whether they
// view one allocation and the positions from the first to the last
// element each can reach (reach) intersect. A host and a device tensor,
// or tensors of two allocations, never overlap.
func overlaps(a, b *Tensor) bool {
	if a.store != nil || b.store != nil {
		if a.store != b.store || a.Len() == 0 || b.Len() == 0 {
			return false
		}
		af, al := a.reach()
		bf, bl := b.reach()
		return af <= bl && bf <= al
	}
	alo, ahi := a.span()
	blo, bhi := b.span()
	return alo < bhi && blo < ahi
}
