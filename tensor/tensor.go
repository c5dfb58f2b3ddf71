package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"

	"github.com/lanesgo/lanes/internal/shape"
)

// MaxDims is the largest number of dimensions a tensor may have.
const MaxDims = 32

// Device says where a tensor's elements live.
type Device int

// CPU is host memory; the only device without the CUDA plugin.
const CPU Device = 0

func (d Device) String() string {
	if d == CPU {
		return "cpu"
	}
	return fmt.Sprintf("device(%d)", int(d))
}

// Tensor is an n-dimensional array of float32: a view of a backing slice
// through a shape, strides (in elements, 0 along broadcast dimensions) and
// an offset. Views share the backing slice; writing through one is seen by
// every other view of it. A Tensor with no dimensions is a scalar (Len 1).
// A device tensor (see To) is a view of device memory instead, and host
// code does not read it (see the device section in device.go).
//
// A Tensor is not safe for concurrent writes; concurrent reads are.
type Tensor struct {
	data    []float32 // the host elements; nil on a device
	shape   []int
	strides []int
	offset  int
	store   *deviceStore // the device memory; nil on the host
}

// MaxElems is the most elements a tensor may have: a []float32 longer
// than that cannot be allocated (Go's heap has 48 address bits on the
// 64-bit ports, 2⁴⁸ bytes). Functions given a shape of more elements, or
// whose result would have more (OneHot, Concat, Conv2D with a huge
// padding, ...), panic naming themselves and the shape rather than fail
// in the runtime; an empty shape counts its nonzero dimensions, as
// NumPy's. Below the limit, an allocation the machine cannot back is the
// runtime's fatal out-of-memory error, as for any Go allocation.
const MaxElems = min(math.MaxInt, 1<<48) / 4

// New returns a zero-filled contiguous tensor of the given shape.
func New(shape ...int) *Tensor { return alloc("New", shape) }

// alloc is New for op, which its panics name.
func alloc(op string, shape []int) *Tensor {
	n := checkShape(op, shape)
	return &Tensor{data: make([]float32, n), shape: slices.Clone(shape), strides: contiguousStrides(shape)}
}

// Zeros is New.
func Zeros(shape ...int) *Tensor { return alloc("Zeros", shape) }

// Ones returns a contiguous tensor of the given shape filled with 1.
func Ones(shape ...int) *Tensor { return Fill(alloc("Ones", shape), 1) }

// Full returns a contiguous tensor of the given shape filled with v.
func Full(v float32, shape ...int) *Tensor {
	return Fill(alloc("Full", shape), v)
}

// FromSlice returns a contiguous tensor of the given shape that uses data as
// its storage (no copy). len(data) must equal the product of shape.
func FromSlice(data []float32, shape ...int) *Tensor {
	n := checkShape("FromSlice", shape)
	if len(data) != n {
		panic(fmt.Sprintf("tensor: FromSlice: len(data)=%d does not match shape %v (%d elements)", len(data), shape, n))
	}
	return &Tensor{data: data, shape: slices.Clone(shape), strides: contiguousStrides(shape)}
}

// Scalar returns a tensor with no dimensions holding v.
func Scalar(v float32) *Tensor { return &Tensor{data: []float32{v}} }

// Arange returns the 1-D tensor start, start+step, ... up to but excluding
// stop, as NumPy's arange: ceil((stop-start)/step) elements (at least one
// when start is before stop in step's direction), element i computed as
// start + i·step in float64. step must not be 0 and no argument NaN; a
// length that is infinite or above MaxElems (Arange(0, +Inf, 1)) panics.
func Arange(start, stop, step float64) *Tensor {
	if step == 0 || math.IsNaN(start) || math.IsNaN(stop) || math.IsNaN(step) {
		panic(fmt.Sprintf("tensor: Arange: invalid start=%v stop=%v step=%v", start, stop, step))
	}
	count := math.Ceil((stop - start) / step) // NaN for Inf-Inf
	if count == 0 && (stop > start) == (step > 0) && stop != start {
		count = 1 // the quotient underflowed, or step is infinite
	}
	if !(count <= MaxElems) {
		panic(fmt.Sprintf("tensor: Arange: start=%v stop=%v step=%v give %v elements, at most %d", start, stop, step, count, MaxElems))
	}
	t := alloc("Arange", []int{int(max(0, count))})
	for i := range t.data {
		v := start
		if i > 0 { // 0·Inf would be NaN
			v += float64(i) * step
		}
		t.data[i] = float32(v)
	}
	return t
}

// RandN returns a contiguous tensor of normally distributed values (mean 0,
// standard deviation 1) drawn from r.
func RandN(r *rand.Rand, shape ...int) *Tensor {
	checkRand("RandN", r)
	t := alloc("RandN", shape)
	for i := range t.data {
		t.data[i] = float32(r.NormFloat64())
	}
	return t
}

// checkRand panics, naming op, when r is nil.
func checkRand(op string, r *rand.Rand) {
	if r == nil {
		panic(fmt.Sprintf("tensor: %s: nil *rand.Rand", op))
	}
}

// RandU returns a contiguous tensor of values uniform in [lo, hi) drawn from r.
func RandU(r *rand.Rand, lo, hi float32, shape ...int) *Tensor {
	checkRand("RandU", r)
	t := alloc("RandU", shape)
	for i := range t.data {
		t.data[i] = lo + (hi-lo)*r.Float32()
	}
	return t
}

// checkShape panics on negative dimensions, too many of them or more
// than MaxElems elements, naming op and the shape, and returns the number
// of elements.
func checkShape(op string, dims []int) int {
	if len(dims) > MaxDims {
		panic(fmt.Sprintf("tensor: %s: %d dimensions, at most %d", op, len(dims), MaxDims))
	}
	n, ok := shape.Size(dims, MaxElems)
	if !ok {
		if slices.ContainsFunc(dims, func(d int) bool { return d < 0 }) {
			panic(fmt.Sprintf("tensor: %s: negative dimension in shape %v", op, dims))
		}
		panic(fmt.Sprintf("tensor: %s: shape %v has more elements than a tensor can hold (MaxElems = %d)", op, dims, MaxElems))
	}
	return n
}

// checkNil panics, naming op and the parameter, when one of ts is nil:
// "tensor: Add: nil tensor b". names lists the parameters' names in ts's
// order, separated by ", "; "ts" names a variadic list, whose elements
// are then ts[0], ts[1], ... Every exported function taking tensors
// calls it (or need, for its receiver) before touching them.
func checkNil(op, names string, ts ...*Tensor) {
	for i, t := range ts {
		if t == nil {
			panicNil(op, names, i)
		}
	}
}

// need is checkNil for a method's receiver t.
func (t *Tensor) need(op string) {
	if t == nil {
		panicNil(op, "t", 0)
	}
}

func panicNil(op, names string, i int) {
	name := fmt.Sprintf("ts[%d]", i)
	if names != "ts" {
		name = strings.Split(names, ", ")[i]
	}
	panic(fmt.Sprintf("tensor: %s: nil tensor %s", op, name))
}

// contiguousStrides is shape.ContiguousStrides, for the many functions
// here whose shape parameter hides the package.
func contiguousStrides(dims []int) []int { return shape.ContiguousStrides(dims) }

// Shape returns a copy of the dimensions.
func (t *Tensor) Shape() []int {
	t.need("Shape")
	return slices.Clone(t.shape)
}

// Strides returns a copy of the strides, in elements.
func (t *Tensor) Strides() []int {
	t.need("Strides")
	return slices.Clone(t.strides)
}

// Stride returns the stride of dimension i, in elements; negative i
// counts from the end. Unlike Strides it does not allocate.
func (t *Tensor) Stride(i int) int {
	t.need("Stride")
	return t.strides[t.axis("Stride", i)]
}

// Dims is the number of dimensions.
func (t *Tensor) Dims() int {
	t.need("Dims")
	return len(t.shape)
}

// Dim returns dimension i; negative i counts from the end.
func (t *Tensor) Dim(i int) int {
	t.need("Dim")
	return t.shape[t.axis("Dim", i)]
}

// Len is the number of elements.
func (t *Tensor) Len() int {
	t.need("Len")
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// Device reports where the elements live.
func (t *Tensor) Device() Device {
	t.need("Device")
	if t.store == nil {
		return CPU
	}
	return t.store.dev
}

// IsContiguous reports whether the elements are laid out row-major without
// gaps, so that Data returns a view.
func (t *Tensor) IsContiguous() bool {
	t.need("IsContiguous")
	if t.Len() == 0 {
		return true // nothing to lay out
	}
	s := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.strides[i] != s {
			return false
		}
		s *= t.shape[i]
	}
	return true
}

// Data returns the elements in row-major order: the backing slice itself
// (writes show in the tensor) when the tensor is contiguous, else a new
// copy. Use IsContiguous to tell which. For a device tensor it waits for
// the work queued on it and returns a host copy of its elements (writes
// do not show); it panics, naming the device's error, when the copy fails.
func (t *Tensor) Data() []float32 {
	t.need("Data")
	if t.store != nil {
		h, err := t.toHost()
		if err != nil {
			panic(fmt.Sprintf("tensor: Data: copying a tensor of shape %v from %v: %v", slices.Clone(t.shape), t.Device(), err))
		}
		return h.data
	}
	return t.hostData("Data")
}

// hostData is Data for the host code of an operation (op) that reads or
// writes the elements in place: it panics for a device tensor, where Data
// would hand out a copy whose writes are lost.
func (t *Tensor) hostData(op string) []float32 {
	t.hostOnly(op)
	n := t.Len()
	if t.IsContiguous() {
		return t.data[t.offset : t.offset+n : t.offset+n]
	}
	return t.Contiguous().data
}

// At returns the element at the given index (one per dimension; negative
// values count from the end). On a device tensor it copies that one
// element back, after the work queued on the tensor.
func (t *Tensor) At(idx ...int) float32 {
	t.need("At")
	i := t.index("At", idx)
	if t.store != nil {
		return t.deviceElem("At", i)
	}
	return t.data[i]
}

// Set stores v at the given index (on a device tensor, with a one-element
// copy to the device).
func (t *Tensor) Set(v float32, idx ...int) {
	t.need("Set")
	i := t.index("Set", idx)
	if t.store != nil {
		err := t.store.mem.CopyFromHost(i, []float32{v})
		runtime.KeepAlive(t) // t's store owns the memory until the copy is done
		if err != nil {
			panic(fmt.Sprintf("tensor: Set: writing an element of a tensor of shape %v on %v: %v", slices.Clone(t.shape), t.Device(), err))
		}
		return
	}
	t.data[i] = v
}

// Item returns the only element of a one-element tensor (copied back from
// a device tensor).
func (t *Tensor) Item() float32 {
	t.need("Item")
	if t.Len() != 1 {
		panic(fmt.Sprintf("tensor: Item: shape %v has %d elements, want 1", t.shape, t.Len()))
	}
	if t.store != nil {
		return t.deviceElem("Item", t.offset)
	}
	return t.data[t.offset]
}

// deviceElem copies element i of a device tensor's memory back (op names
// the caller in the panic of a failed copy).
func (t *Tensor) deviceElem(op string, i int) float32 {
	var v [1]float32
	err := t.store.mem.CopyToHost(v[:], i)
	runtime.KeepAlive(t) // t's store owns the memory until the copy is done
	if err != nil {
		panic(fmt.Sprintf("tensor: %s: reading an element of a tensor of shape %v on %v: %v", op, slices.Clone(t.shape), t.Device(), err))
	}
	return v[0]
}

// index returns the position in t's storage of the element at idx.
func (t *Tensor) index(op string, idx []int) int {
	if len(idx) != len(t.shape) {
		panic(fmt.Sprintf("tensor: %s: %d indices for shape %v", op, len(idx), t.shape))
	}
	off := t.offset
	for i, x := range idx {
		d := t.shape[i]
		if x < 0 {
			x += d
		}
		if x < 0 || x >= d {
			panic(fmt.Sprintf("tensor: %s: index %v out of range for shape %v", op, idx, t.shape))
		}
		off += x * t.strides[i]
	}
	return off
}

// axis resolves a possibly negative axis, panicking when out of range.
func (t *Tensor) axis(op string, a int) int {
	n := len(t.shape)
	if a < 0 {
		a += n
	}
	if a < 0 || a >= n {
		panic(fmt.Sprintf("tensor: %s: axis out of range for shape %v", op, t.shape))
	}
	return a
}

// view returns a tensor sharing t's storage (host slice or device memory)
// with the given layout. It is the one place where a tensor takes another
// one's storage: every view, reshape and reduction result goes through it.
func (t *Tensor) view(shape, strides []int, offset int) *Tensor {
	if slices.Contains(shape, 0) {
		offset = 0 // no elements: an offset past the storage's end would be sliced out of it
	}
	return &Tensor{data: t.data, shape: shape, strides: strides, offset: offset, store: t.store}
}

// hostOnly panics unless t's elements are in host memory. The paths by
// which host code reaches a tensor's elements call it first: hostData
// (norm, pool, the convolutions' CPU paths, the CPU's Softmax and
// ArgReduce, the index-based joins), loop.init (every elementwise, copy
// and reduce operation), and clone and the joins. A device tensor given to a host
// operation so fails with a message naming op rather than with an index
// error or a write lost in a copy.
func (t *Tensor) hostOnly(op string) {
	if t.store != nil {
		panicOnDevice(op, t)
	}
}

func panicOnDevice(op string, t *Tensor) {
	// The shape is cloned so that t does not escape through the message.
	panic(fmt.Sprintf("tensor: %s: tensor of shape %v is on %v: copy it with To(tensor.CPU) first", op, slices.Clone(t.shape), t.Device()))
}
