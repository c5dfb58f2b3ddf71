//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static float *lanes_fptr(uintptr_t p) { return (float *)p; }
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/tensor"
)

// operand is a tensor's elements on the device: the address of the view's
// first element, its shape and strides.
type operand struct {
	ptr     uintptr
	shape   []int
	strides []int
}

// dense is the row-major contiguous operand of shape sh at ptr.
func dense(ptr uintptr, sh []int) operand {
	return operand{ptr: ptr, shape: sh, strides: shape.ContiguousStrides(sh)}
}

func (o operand) aligned() bool { return o.ptr%16 == 0 }

func (o operand) len() int {
	n := 1
	for _, d := range o.shape {
		n *= d
	}
	return n
}

// extent returns the bytes o's elements span, [lo, hi) (lo == hi when
// it has none).
func (o operand) extent() (lo, hi uintptr) {
	if o.len() == 0 {
		return o.ptr, o.ptr
	}
	var first, last int
	for i, d := range o.shape {
		if s := (d - 1) * o.strides[i]; s < 0 {
			first += s
		} else {
			last += s
		}
	}
	return o.ptr + uintptr(first)*4, o.ptr + uintptr(last+1)*4
}

// overlaps reports whether o and p share memory. With inPlace, the very
// same view does not count: a kernel that reads each element of p before
// it writes the same element of o (elementwise, row by row) may write
// over its input.
func overlaps(o, p operand, inPlace bool) bool {
	if inPlace && o.ptr == p.ptr && slices.Equal(o.shape, p.shape) && slices.Equal(o.strides, p.strides) {
		return false
	}
	olo, ohi := o.extent()
	plo, phi := p.extent()
	return olo < phi && plo < ohi
}

// broadcast returns o viewed at shape, to which it broadcasts under
// NumPy's rules (checked by the caller): a missing or size-1 dimension
// repeats with stride 0.
func (o operand) broadcast(shape []int) operand {
	b := operand{ptr: o.ptr, shape: shape, strides: make([]int, len(shape))}
	lead := len(shape) - len(o.shape)
	for i := range o.shape {
		if o.shape[i] != 1 {
			b.strides[lead+i] = o.strides[i]
		}
	}
	return b
}

func isContiguous(shape, strides []int) bool {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != s {
			return false
		}
		s *= shape[i]
	}
	return true
}

// strided is the iteration space of a kernel over views of one shape
// (kernels.h: LanesShape): the shape with its size-1 dimensions dropped
// and its neighbours merged where every operand steps across them as
// across one, and each operand's strides.
type strided struct {
	n       int
	shape   []int
	strides [][]int
}

// merge returns the iteration space of views of shape with the given
// strides (one slice per operand).
func merge(shape []int, strides ...[]int) strided {
	s := strided{n: 1, strides: make([][]int, len(strides))}
	for _, d := range shape {
		s.n *= d
	}
	if s.n == 0 {
		return s
	}
	for i, d := range shape {
		if d == 1 {
			continue
		}
		k := len(s.shape) - 1
		joins := k >= 0
		for j := range strides {
			joins = joins && s.strides[j][k] == strides[j][i]*d
		}
		if joins { // dimension k steps as d of dimension i: one dimension
			s.shape[k] *= d
			for j := range strides {
				s.strides[j][k] = strides[j][i]
			}
			continue
		}
		s.shape = append(s.shape, d)
		for j := range strides {
			s.strides[j] = append(s.strides[j], strides[j][i])
		}
	}
	return s
}

// maxDims is the most dimensions a kernel's descriptor holds.
const maxDims = C.LANES_MAX_DIMS

// split returns the number of leading dimensions of s that are looped
// over, one launch per index (those beyond maxDims: none, usually), and
// each launch's element offsets of the operands.
func (s strided) split() (outer int, offs [][]int) {
	if s.n == 0 {
		return 0, nil
	}
	outer = max(len(s.shape)-maxDims, 0)
	parts := 1
	for _, d := range s.shape[:outer] {
		parts *= d
	}
	offs = make([][]int, parts)
	for p := range offs {
		offs[p] = make([]int, len(s.strides))
		rest := p
		for k := outer - 1; k >= 0; k-- {
			i := rest % s.shape[k]
			rest /= s.shape[k]
			for j, st := range s.strides {
				offs[p][j] += i * st[k]
			}
		}
	}
	return outer, offs
}

// each calls launch once per kernel launch that covers s (split): with
// the descriptors of the innermost maxDims dimensions and each operand's
// element offset.
func (s strided) each(launch func(ls *C.LanesShape, ss []C.LanesStrides, offs []int) error) error {
	outer, offs := s.split()
	var ls C.LanesShape
	ss := make([]C.LanesStrides, len(s.strides))
	ls.dims = C.int(len(s.shape) - outer)
	ls.n = 1
	for k, d := range s.shape[outer:] {
		ls.shape[k] = C.longlong(d)
		ls.n *= C.longlong(d)
		for j, st := range s.strides {
			ss[j].s[k] = C.longlong(st[outer+k])
		}
	}
	for _, o := range offs {
		if err := launch(&ls, ss, o); err != nil {
			return err
		}
	}
	return nil
}

// call is one operation on the device stream: the temporaries it made and
// the tensors whose memory its work uses, kept reachable until the work is
// queued (a tensor collected before that would give its buffer back to the
// pool for other work while this work still reads or writes it).
type call struct {
	g     *GPU
	temps []*deviceMemory
	keep  []*tensor.Tensor
}

// release gives the temporaries back to the pool (the work queued on the
// stream that uses them runs before any later use, queued on the same
// stream) and lets the operands go.
// During a capture the graph keeps the operands instead (graph.go).
func (c *call) release() {
	for _, m := range c.temps {
		m.Release()
	}
	if cp := c.g.capturing.Load(); cp != nil {
		cp.hold(c.keep)
	}
	runtime.KeepAlive(c.keep)
}

// badFlag returns the two floats where an op's kernel reports a bad index
// or label value (common.cuh: reportBad): a temporary it clears, or
// during a capture the step's error word (graph.go), which the graph
// clears.
func (c *call) badFlag() (uintptr, error) {
	if cp := c.g.capturing.Load(); cp != nil {
		return cp.flag.ptr, nil
	}
	flag, err := c.scratch(2)
	if err != nil {
		return 0, err
	}
	return flag, check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(flag), 8, c.g.stream))
}

// badValue reads flag after the op's kernel (a synchronization): the
// value reported and whether there is one. During a capture it reads
// nothing (Graph.Err reads the step's word after the replay).
func (c *call) badValue(flag uintptr) (v float32, bad bool, err error) {
	if c.g.capturing.Load() != nil {
		return 0, false, nil
	}
	var f [2]float32
	if err := c.g.download(f[:], flag); err != nil {
		return 0, false, err
	}
	return f[1], math.Float32bits(f[0]) != 0, nil
}

func (c *call) temp(n int) (*deviceMemory, error) {
	m, err := c.g.alloc(n)
	if err == nil {
		c.temps = append(c.temps, m)
	}
	return m, err
}

// scratchFunc returns device memory of n floats for an op's own use, valid
// until the op's work on its stream is done.
type scratchFunc func(n int) (uintptr, error)

// scratch is a scratchFunc for ops on the device stream: a temporary,
// released with the call (later users of the memory queue on the same
// stream).
func (c *call) scratch(n int) (uintptr, error) {
	m, err := c.temp(n)
	if err != nil {
		return 0, err
	}
	return m.ptr(0), nil
}

// splitK sets a kernel's split-K fields: splits parts of per floats each
// in a workspace from scratch, or no split (0, nil) for splits 1.
func splitK(splits *C.int, partial **C.float, n, per int, scratch scratchFunc) error {
	if n <= 1 {
		*splits, *partial = 0, nil
		return nil
	}
	p, err := scratch(n * per)
	if err != nil {
		return err
	}
	*splits, *partial = C.int(n), C.lanes_fptr(C.uintptr_t(p))
	return nil
}

// view returns the view of a tensor on this GPU, or ok false for a host
// tensor; a tensor of another device is an error.
func (c *call) view(op, what string, t *tensor.Tensor) (o operand, ok bool, err error) {
	mem, off, ok := tensor.DeviceView(t)
	if !ok {
		return operand{}, false, nil
	}
	m, mine := mem.(*deviceMemory)
	if !mine || m.g != c.g {
		return operand{}, false, fmt.Errorf("cudaplugin: %s: %s on %v given to the GPU of %v", op, what, mem.Device(), c.g.dev)
	}
	c.keep = append(c.keep, t)
	return operand{ptr: m.ptr(off), shape: t.Shape(), strides: t.Strides()}, true, nil
}

// input returns t on the device: a device tensor of this GPU as it is, a
// host tensor uploaded (row-major) into a temporary.
func (c *call) input(op string, t *tensor.Tensor) (operand, error) {
	if o, ok, err := c.view(op, "a tensor", t); ok || err != nil {
		return o, err
	}
	data := t.Data()
	m, err := c.temp(len(data))
	if err != nil {
		return operand{}, err
	}
	if len(data) > 0 {
		if err := c.g.upload(m.ptr(0), data); err != nil {
			return operand{}, err
		}
	}
	return dense(m.ptr(0), t.Shape()), nil
}

// contiguous returns o itself when it is row-major contiguous, else a
// gathered copy in a temporary.
func (c *call) contiguous(o operand) (operand, error) {
	if isContiguous(o.shape, o.strides) {
		return o, nil
	}
	return c.copied(o)
}

// copied returns a row-major copy of o in a temporary.
func (c *call) copied(o operand) (operand, error) {
	m, err := c.temp(o.len())
	if err != nil {
		return operand{}, err
	}
	t := dense(m.ptr(0), o.shape)
	if err := c.g.copyView(t, o); err != nil {
		return operand{}, err
	}
	return t, nil
}

// aside replaces each of ins that overlaps dst (the zero operand is an
// absent one) by a row-major copy in a temporary, so that a kernel writing
// dst reads inputs it does not change. With inPlace the very same view
// stays (see overlaps).
func (c *call) aside(dst operand, inPlace bool, ins ...*operand) error {
	for _, o := range ins {
		if o.ptr == 0 || !overlaps(dst, *o, inPlace) {
			continue
		}
		t, err := c.copied(*o)
		if err != nil {
			return err
		}
		*o = t
	}
	return nil
}

// A target is where an op's kernels write its result, contiguous in
// row-major order (ptr), for finish to deliver into dst.
type target struct {
	ptr  uintptr
	dst  *tensor.Tensor
	view operand // the view of dst written, when dst is on this GPU
	temp bool    // ptr is a temporary: finish copies it into dst
}

// output returns where the result for dst goes: into for a dst on this
// GPU, else (a host dst) a temporary that finish downloads.
func (c *call) output(op string, dst *tensor.Tensor, inputs ...operand) (target, error) {
	v, on, err := c.view(op, "dst", dst)
	if err != nil {
		return target{}, err
	}
	if on {
		return c.into(dst, v, inputs...)
	}
	m, err := c.temp(dst.Len())
	if err != nil {
		return target{}, err
	}
	return target{ptr: m.ptr(0), dst: dst, temp: true}, nil
}

// into returns where the kernels write the elements of v, a view of dst
// on this GPU, in v's row-major order: v's own memory when it is
// contiguous and overlaps none of the inputs, which the kernels read
// while they write (overlaps: inPlace when they may write over the very
// same view), else a temporary that finish copies into v.
func (c *call) into(dst *tensor.Tensor, v operand, inputs ...operand) (target, error) {
	if isContiguous(v.shape, v.strides) && !slices.ContainsFunc(inputs, func(in operand) bool { return overlaps(v, in, false) }) {
		return target{ptr: v.ptr, dst: dst, view: v}, nil
	}
	m, err := c.temp(v.len())
	if err != nil {
		return target{}, err
	}
	return target{ptr: m.ptr(0), dst: dst, view: v, temp: true}, nil
}

// finish delivers the result: into a host dst (and so waits for it), or
// from a temporary into dst's view on the device; a result written in
// place is left to the stream.
func (c *call) finish(t target) error {
	if !t.temp || t.dst.Len() == 0 {
		return nil
	}
	if t.dst.Device() != tensor.CPU {
		return c.g.copyView(t.view, dense(t.ptr, t.view.shape))
	}
	if t.dst.IsContiguous() {
		return c.g.download(t.dst.Data(), t.ptr)
	}
	tmp := make([]float32, t.dst.Len())
	if err := c.g.download(tmp, t.ptr); err != nil {
		return err
	}
	tensor.CopyInto(t.dst, tensor.FromSlice(tmp, t.dst.Shape()...))
	return nil
}

func anyDevice(ts ...*tensor.Tensor) bool {
	for _, t := range ts {
		if t != nil && t.Device() != tensor.CPU {
			return true
		}
	}
	return false
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// on returns the view of operand i of a device-only op, t, which must be
// on this GPU (keeping it with the call); anything else is a programmer
// error.
func (c *call) on(op string, i int, t *tensor.Tensor) operand {
	mem, off, ok := tensor.DeviceView(t)
	m, mine := mem.(*deviceMemory)
	if !ok || !mine || m.g != c.g {
		panic(fmt.Sprintf("cudaplugin: %s: operand %d (shape %v) is on %v, want %v (use To)", op, i, t.Shape(), t.Device(), c.g.dev))
	}
	c.keep = append(c.keep, t)
	return operand{ptr: m.ptr(off), shape: t.Shape(), strides: t.Strides()}
}

// deviceOperands checks that the operands of a device-only op are
// contiguous tensors on this GPU (nil ones are skipped) and returns their
// addresses; anything else is a programmer error.
func (c *call) deviceOperands(op string, ts ...*tensor.Tensor) []uintptr {
	ptrs := make([]uintptr, len(ts))
	for i, t := range ts {
		if t == nil {
			continue
		}
		ptrs[i] = c.on(op, i, t).ptr
		if !t.IsContiguous() {
			panic(fmt.Sprintf("cudaplugin: %s: operand %d of shape %v and strides %v is not contiguous (use GPU.Contiguous)", op, i, t.Shape(), t.Strides()))
		}
	}
	return ptrs
}

func sameShape(op string, a, b *tensor.Tensor) {
	if !slices.Equal(a.Shape(), b.Shape()) {
		panic(fmt.Sprintf("cudaplugin: %s: shapes %v and %v differ", op, a.Shape(), b.Shape()))
	}
}
