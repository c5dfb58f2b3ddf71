package tensor

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/simd"
)

// PoolParams configures MaxPool2D and AvgPool2D. The pairs are (height,
// width). A zero Stride means the kernel size, as in PyTorch.
type PoolParams struct {
	Kernel  [2]int
	Stride  [2]int
	Padding [2]int // at most half the kernel
	// CeilMode rounds the output size up, so that a partial window at the
	// end counts, as long as it starts inside the input or the left
	// padding (PyTorch's ceil_mode).
	CeilMode bool
	// ExcludePad divides each average by the number of input elements in
	// the window instead of the window size clipped to the padded input
	// (PyTorch's count_include_pad=False).
	ExcludePad bool
}

// poolGeom is a pooling after its shape checks.
type poolGeom struct {
	planes, h, w   int // planes: N·C
	kh, kw, sh, sw int
	ph, pw         int
	oh, ow         int
	excludePad     bool
	shape          [4]int // output shape
}

// poolOut is the output length of one axis.
func poolOut(in, k, s, p int, ceil bool) int {
	span := in + 2*p - k
	o := span/s + 1
	if ceil && span%s != 0 {
		o++
		if (o-1)*s >= in+p { // the last window would start in the right padding
			o--
		}
	}
	return o
}

func planPool(op string, xs []int, p PoolParams) poolGeom {
	if len(xs) != 4 {
		panic(fmt.Sprintf("tensor: %s: shape %v: want [N, C, H, W]", op, slices.Clone(xs)))
	}
	g := poolGeom{planes: xs[0] * xs[1], h: xs[2], w: xs[3], kh: p.Kernel[0], kw: p.Kernel[1],
		sh: p.Stride[0], sw: p.Stride[1], ph: p.Padding[0], pw: p.Padding[1], excludePad: p.ExcludePad}
	if g.sh == 0 {
		g.sh = g.kh
	}
	if g.sw == 0 {
		g.sw = g.kw
	}
	if g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.ph < 0 || g.pw < 0 || g.ph > g.kh/2 || g.pw > g.kw/2 {
		panic(fmt.Sprintf("tensor: %s: invalid parameters %+v (kernel ≥ 1, stride ≥ 1, 0 ≤ padding ≤ kernel/2)", op, p))
	}
	// The padded plane bounds every size and index below (see planConv).
	ph, okh := padded(g.h, g.ph)
	pw, okw := padded(g.w, g.pw)
	if _, ok := shape.Size([]int{ph, pw}, MaxElems); !okh || !okw || !ok {
		panic(fmt.Sprintf("tensor: %s: shape %v with padding %v: the padded input plane has more than MaxElems = %d elements", op, slices.Clone(xs), p.Padding, MaxElems))
	}
	if ph < g.kh || pw < g.kw {
		panic(fmt.Sprintf("tensor: %s: shape %v: kernel %v larger than the padded input", op, slices.Clone(xs), p.Kernel))
	}
	g.oh, g.ow = poolOut(g.h, g.kh, g.sh, g.ph, p.CeilMode), poolOut(g.w, g.kw, g.sw, g.pw, p.CeilMode)
	g.shape = [4]int{xs[0], xs[1], g.oh, g.ow}
	if _, ok := shape.Size(g.shape[:], MaxElems); !ok {
		panic(fmt.Sprintf("tensor: %s: shape %v with %+v gives an output of shape %v: more than MaxElems = %d elements", op, slices.Clone(xs), p, g.shape, MaxElems))
	}
	return g
}

// window returns output pixel (i, j)'s window clipped to the input,
// rows r0..r1 and columns c0..c1, and for averages its divisor.
func (g *poolGeom) window(i, j int) (r0, r1, c0, c1 int, div float32) {
	r0, c0 = i*g.sh-g.ph, j*g.sw-g.pw
	r1, c1 = min(r0+g.kh, g.h+g.ph), min(c0+g.kw, g.w+g.pw)
	size := (r1 - r0) * (c1 - c0) // at most kh·kw, within the padded plane
	r0, c0, r1, c1 = max(r0, 0), max(c0, 0), min(r1, g.h), min(c1, g.w)
	if g.excludePad {
		size = (r1 - r0) * (c1 - c0)
	}
	return r0, r1, c0, c1, float32(size)
}

// MaxPool2D returns the maximum of each kernel window of x [N, C, H, W]
// (padding never wins) and the index of each maximum within its input
// plane (row·W + column), as PyTorch's return_indices. Ties and NaN keep
// the first in row-major window order; a NaN in a window is its maximum.
//
// The indices are float32 values, exact because planes are held to
// MaxIndexPlane elements (4096×4096): for a larger plane, where an index
// would round and a gradient routed by it land on the wrong element,
// MaxPool2D panics naming the limit. MaxPool2DInto with nil indices pools
// planes of any size.
//
// The pooling ops run on the device of their operands, through its Pool
// family (PoolKernels), and return tensors there; the operands (the
// outputs of the Into forms included) must all be on that device. A
// device without the family, or an error of its implementation, makes the
// op panic naming it, the shapes and the devices; nothing is copied to
// the host behind the caller's back.
func MaxPool2D(x *Tensor, p PoolParams) (out, indices *Tensor) {
	const op = "MaxPool2D"
	checkNil(op, "x", x)
	g := planPool(op, x.shape, p)
	g.checkIndexable(op, x.shape)
	dev := deviceOn(op, nil, x)
	k := poolOn(op, dev, nil, x)
	out, indices = result(op, dev, g.shape[:], x), result(op, dev, g.shape[:], x)
	ran(op, k.MaxPool2D(out, indices, x, p), out, x)
	return out, indices
}

// MaxIndexPlane is the largest input plane (H·W elements) for which
// MaxPool2D and MaxPool2DInto return indices and MaxPool2DBackward takes
// them: every index below it is exact in float32. It is also the bound
// below which the index ops (IndexSelect, Gather, IndexAdd, ScatterAdd,
// OneHot) can name every position of an axis.
const MaxIndexPlane = 1 << 24

// checkIndexable panics, naming op and the shape xs, when the plane is too
// large for exact float32 indices.
func (g *poolGeom) checkIndexable(op string, xs []int) {
	if g.h*g.w > MaxIndexPlane {
		panic(fmt.Sprintf("tensor: %s: shape %v: indices into a plane of %d·%d elements would not be exact in float32 (MaxIndexPlane = 2²⁴); pool without indices (MaxPool2DInto with nil indices) or split the plane", op, slices.Clone(xs), g.h, g.w))
	}
}

// MaxPool2DInto writes MaxPool2D(x, p) into out and indices (either may be
// nil to skip it; with both nil it only checks its arguments) and returns
// them. With indices it panics as MaxPool2D for planes of more than
// MaxIndexPlane elements; without, any plane size is pooled.
func MaxPool2DInto(out, indices, x *Tensor, p PoolParams) (*Tensor, *Tensor) {
	const op = "MaxPool2DInto"
	checkNil(op, "x", x)
	g := planPool(op, x.shape, p)
	if indices != nil {
		g.checkIndexable(op, x.shape)
	}
	for _, t := range [2]*Tensor{out, indices} {
		if t != nil {
			checkOut(op, t, g.shape, x)
			checkWritable(op, t)
		}
	}
	dev := deviceOn(op, out, indices, x)
	k := poolOn(op, dev, out, indices, x)
	if out == nil && indices == nil {
		return nil, nil
	}
	if dev == CPU {
		for _, t := range [2]*Tensor{out, indices} {
			if t != nil {
				x = detach(t, x)
			}
		}
	}
	ran(op, k.MaxPool2D(out, indices, x, p), cmp.Or(out, indices), x)
	return out, indices
}

// AvgPool2D returns the mean of each kernel window of x [N, C, H, W]:
// zeros of the padding count unless p.ExcludePad. It runs where MaxPool2D
// does.
func AvgPool2D(x *Tensor, p PoolParams) *Tensor {
	const op = "AvgPool2D"
	checkNil(op, "x", x)
	g := planPool(op, x.shape, p)
	dev := deviceOn(op, nil, x)
	k := poolOn(op, dev, nil, x)
	out := result(op, dev, g.shape[:], x)
	ran(op, k.AvgPool2D(out, x, p), out, x)
	return out
}

// AvgPool2DInto writes AvgPool2D(x, p) into out and returns out.
func AvgPool2DInto(out, x *Tensor, p PoolParams) *Tensor {
	const op = "AvgPool2DInto"
	checkNil(op, "out, x", out, x)
	g := planPool(op, x.shape, p)
	checkOut(op, out, g.shape, x)
	checkWritable(op, out)
	dev := deviceOn(op, out, x)
	k := poolOn(op, dev, out, x)
	if dev == CPU {
		x = detach(out, x)
	}
	ran(op, k.AvgPool2D(out, x, p), out, x)
	return out
}

// MaxPool2DBackward returns the gradient of MaxPool2D with respect to its
// input of shape xShape: each dy element added at its index. It runs on
// the device of dy and indices, where the result is. Indices that name no
// element of their plane make it panic (on a device, through the error
// its implementation returns; MaxPool2DBackwardInto's dx may then be
// partly written), and so do planes of more than MaxIndexPlane elements,
// whose indices could not be exact.
func MaxPool2DBackward(dy, indices *Tensor, xShape []int, p PoolParams) *Tensor {
	const op = "MaxPool2DBackward"
	checkNil(op, "dy, indices", dy, indices)
	checkShape(op, xShape)
	checkPoolGradient(op, xShape, p, dy, indices)
	dev := deviceOn(op, nil, dy, indices)
	k := poolOn(op, dev, nil, dy, indices)
	dx := result(op, dev, xShape, dy, indices)
	ranIndex(op, k.MaxPool2DBackward(dx, dy, indices, p), dx, dy, indices)
	return dx
}

// MaxPool2DBackwardInto writes the gradient into dx and returns dx.
func MaxPool2DBackwardInto(dx, dy, indices *Tensor, p PoolParams) *Tensor {
	const op = "MaxPool2DBackward"
	checkNil(op, "dx, dy, indices", dx, dy, indices)
	checkPoolGradient(op, dx.shape, p, dy, indices)
	checkWritable(op, dx)
	dev := deviceOn(op, dx, dy, indices)
	k := poolOn(op, dev, dx, dy, indices)
	if dev == CPU {
		dy, indices = detach(dx, dy), detach(dx, indices)
	}
	ranIndex(op, k.MaxPool2DBackward(dx, dy, indices, p), dx, dy, indices)
	return dx
}

// AvgPool2DBackward returns the gradient of AvgPool2D with respect to its
// input of shape xShape: each dy element spread over its window. It runs
// on the device of dy, where the result is.
func AvgPool2DBackward(dy *Tensor, xShape []int, p PoolParams) *Tensor {
	const op = "AvgPool2DBackward"
	checkNil(op, "dy", dy)
	checkShape(op, xShape)
	checkPoolGradient(op, xShape, p, dy, nil)
	dev := deviceOn(op, nil, dy)
	k := poolOn(op, dev, nil, dy)
	dx := result(op, dev, xShape, dy)
	ran(op, k.AvgPool2DBackward(dx, dy, p), dx, dy)
	return dx
}

// AvgPool2DBackwardInto writes the gradient into dx and returns dx.
func AvgPool2DBackwardInto(dx, dy *Tensor, p PoolParams) *Tensor {
	const op = "AvgPool2DBackward"
	checkNil(op, "dx, dy", dx, dy)
	checkPoolGradient(op, dx.shape, p, dy, nil)
	checkWritable(op, dx)
	dev := deviceOn(op, dx, dy)
	k := poolOn(op, dev, dx, dy)
	if dev == CPU {
		dy = detach(dx, dy)
	}
	ran(op, k.AvgPool2DBackward(dx, dy, p), dx, dy)
	return dx
}

// checkPoolGradient panics unless dy (and indices, for the maximum's
// gradient) have the output shape of a pooling of an input of shape xs,
// and returns that pooling.
func checkPoolGradient(op string, xs []int, p PoolParams, dy, indices *Tensor) poolGeom {
	g := planPool(op, xs, p)
	if indices != nil {
		g.checkIndexable(op, xs)
	}
	for _, t := range [2]*Tensor{dy, indices} {
		if t != nil && !slices.Equal(t.shape, g.shape[:]) {
			panic(fmt.Sprintf("tensor: %s: shapes %v give output %v, got %v", op, slices.Clone(xs), g.shape, t.shape))
		}
	}
	return g
}

// MaxPool2D is the CPU's max pooling: host operands whose shapes the
// public function has checked, dst or indices nil to skip it,
// neither overlapping x.
func (cpuKernels) MaxPool2D(dst, indices, x *Tensor, p PoolParams) error {
	j := newPoolJob("MaxPool2D", maxPool, x.shape, p)
	j.outputs("MaxPool2D", dst, indices, x)
	return j.run()
}

// AvgPool2D is the CPU's average pooling, as MaxPool2D.
func (cpuKernels) AvgPool2D(dst, x *Tensor, p PoolParams) error {
	j := newPoolJob("AvgPool2D", avgPool, x.shape, p)
	j.outputs("AvgPool2D", dst, nil, x)
	return j.run()
}

// MaxPool2DBackward is the CPU's gradient of max pooling: host operands
// whose shapes the public function has checked, dx overlapping neither
// dy nor indices. An index that names no element of its plane is an
// indexError; dx may then be partly written.
func (cpuKernels) MaxPool2DBackward(dx, dy, indices *Tensor, p PoolParams) error {
	j := newPoolJob("MaxPool2DBackward", maxPoolBackward, dx.shape, p)
	if err := j.gradients("MaxPool2DBackward", dx, dy, indices); err != nil {
		j.release()
		return err
	}
	return j.run()
}

// AvgPool2DBackward is the CPU's gradient of average pooling, as
// MaxPool2DBackward.
func (cpuKernels) AvgPool2DBackward(dx, dy *Tensor, p PoolParams) error {
	j := newPoolJob("AvgPool2DBackward", avgPoolBackward, dx.shape, p)
	j.gradients("AvgPool2DBackward", dx, dy, nil)
	return j.run()
}

const (
	maxPool = iota
	avgPool
	maxPoolBackward
	avgPoolBackward
)

// poolJob is one pooling over the planes of its input.
type poolJob struct {
	g    poolGeom
	kind int
	// in and out are the planes read and written (x and out forward, dy
	// and dx backward); idx the indices.
	in, out, idx    []float32
	dsts            [2]*Tensor // the caller's outputs
	results         [2]*Tensor // contiguous outputs, copied into dsts when different
	inPlane, outPln int
	badIndex        firstBad // an invalid index met by a worker
}

var poolJobs = sync.Pool{New: func() any { return new(poolJob) }}

// newPoolJob checks p against the input shape xs and returns a job of the kind.
func newPoolJob(op string, kind int, xs []int, p PoolParams) *poolJob {
	g := planPool(op, xs, p)
	j := poolJobs.Get().(*poolJob)
	*j = poolJob{g: g, kind: kind}
	return j
}

// outputs prepares a forward pooling's outputs.
func (j *poolJob) outputs(op string, out, indices, x *Tensor) {
	for i, t := range [2]*Tensor{out, indices} {
		if t != nil {
			j.dsts[i], j.results[i] = t, target(t)
		}
	}
	j.in = x.hostData(op)
	if j.results[0] != nil {
		j.out = j.results[0].hostData(op)
	}
	if j.results[1] != nil {
		j.idx = j.results[1].hostData(op)
	}
	j.inPlane, j.outPln = j.g.h*j.g.w, j.g.oh*j.g.ow
}

// gradients prepares a backward pooling, returning the indexError of
// the first invalid index (checked here unless the 2×2 path checks them
// as it goes).
func (j *poolJob) gradients(op string, dx, dy, indices *Tensor) error {
	if indices != nil {
		j.idx = indices.hostData(op)
		// The 2×2 path checks each plane's indices against its windows
		// as it goes and falls back to validIndices then.
		if !j.g.is2x2() {
			if v, ok := j.g.validIndices(j.idx); !ok {
				return j.g.indexErr(v)
			}
		}
	}
	j.dsts[0], j.results[0] = dx, target(dx)
	j.in, j.out = dy.hostData(op), j.results[0].hostData(op)
	j.inPlane, j.outPln = j.g.oh*j.g.ow, j.g.h*j.g.w
	return nil
}

// run pools and releases the job, returning the indexError of an
// invalid index that a worker met.
func (j *poolJob) run() error {
	g := &j.g
	parallel(j, g.planes, satMul(satMul(g.planes, g.oh*g.ow), g.kh*g.kw)/4) // oh·ow, kh·kw: each at most MaxElems
	if v := j.badIndex.get(); v != nil {
		err := g.indexErr(*v)
		j.release()
		return err
	}
	for i, r := range j.results {
		finish(j.dsts[i], r)
	}
	j.release()
	return nil
}

// release returns the job to poolJobs.
func (j *poolJob) release() {
	*j = poolJob{}
	poolJobs.Put(j)
}

// indexErr is the error of an index v that names no element of a plane.
func (g *poolGeom) indexErr(v float32) error {
	return indexError(fmt.Sprintf("index %v is not an element of an input plane of %d", v, g.h*g.w))
}

func (j *poolJob) RunRange(lo, hi int) {
	g := &j.g
	for pl := lo; pl < hi; pl++ {
		in := j.in[pl*j.inPlane:][:j.inPlane]
		var out []float32
		if j.out != nil {
			out = j.out[pl*j.outPln:][:j.outPln]
		}
		var idx []float32
		if j.idx != nil {
			idx = j.idx[pl*g.oh*g.ow:][:g.oh*g.ow]
		}
		switch j.kind {
		case maxPool:
			g.maxPlane(out, idx, in)
		case avgPool:
			g.avgPlane(out, in)
		case maxPoolBackward:
			if v, ok := g.unpool(out, in, idx); !ok {
				j.badIndex.keep(v) // returned by run, on the caller's goroutine
			}
		case avgPoolBackward:
			clear(out)
			for i := 0; i < g.oh; i++ {
				for jj := 0; jj < g.ow; jj++ {
					r0, r1, c0, c1, div := g.window(i, jj)
					d := in[i*g.ow+jj] / div
					for r := r0; r < r1; r++ {
						row := out[r*g.w:]
						for c := c0; c < c1; c++ {
							row[c] += d
						}
					}
				}
			}
		}
	}
}

// firstBad keeps the first invalid index that a job's workers meet, for
// the job's caller to report on its own goroutine.
type firstBad struct{ p atomic.Pointer[float32] }

// keep records v unless an index was recorded before; it allocates (only
// then, on the invalid path).
func (f *firstBad) keep(v float32) { f.p.CompareAndSwap(nil, &v) }

// get returns the recorded index, nil when none.
func (f *firstBad) get() *float32 { return f.p.Load() }

// unpool sets the input plane dx to the gradient of one plane's max
// pooling: each of dy added at the element idx names, zero elsewhere. An
// index that names no element of the plane leaves dx partly written and
// is returned, with false.
func (g *poolGeom) unpool(dx, dy, idx []float32) (float32, bool) {
	if g.is2x2() && simd.MaxUnpool2x2(dx, dy, idx, g.h, g.w) {
		return 0, true
	}
	if v, ok := g.validIndices(idx); !ok {
		return v, false
	}
	clear(dx)
	for k, d := range dy {
		dx[int(idx[k])] += d
	}
	return 0, true
}

// is2x2 reports whether the pooling is simd's MaxPool2x2: 2×2 windows at
// stride 2, no padding, no ceil-mode partial window (the common CNN case),
// on a plane below the 2²⁴ elements the kernel takes.
func (g *poolGeom) is2x2() bool {
	return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && g.oh == g.h/2 && g.ow == g.w/2 &&
		g.h*g.w < 1<<24
}

// validIndices reports whether every index names an element of an input
// plane, and if not the first that does not.
func (g *poolGeom) validIndices(idx []float32) (float32, bool) {
	n := float32(g.h * g.w)
	for _, v := range idx {
		if !(v >= 0 && v < n) || v != float32(int(v)) {
			return v, false
		}
	}
	return 0, true
}

// maxPlane pools one plane; out or idx may be nil.
func (g *poolGeom) maxPlane(out, idx, in []float32) {
	if g.is2x2() {
		// simd's kernel keeps the same first-wins rule.
		simd.MaxPool2x2(out, idx, in, g.h, g.w)
		return
	}
	for i := range g.oh {
		for j := range g.ow {
			at := g.argmax(in, i, j)
			if out != nil {
				out[i*g.ow+j] = in[at]
			}
			if idx != nil {
				idx[i*g.ow+j] = float32(at)
			}
		}
	}
}

// argmax returns the plane index of the maximum of output pixel (i, j)'s
// window: the first in row-major order among ties, the first NaN if there
// is one. Padding never wins; every window holds an input element.
func (g *poolGeom) argmax(in []float32, i, j int) int {
	r0, r1, c0, c1, _ := g.window(i, j)
	at := r0*g.w + c0
	for r := r0; r < r1; r++ {
		for c := c0; c < c1; c++ {
			if in[at] != in[at] {
				return at
			}
			if v := in[r*g.w+c]; v > in[at] || v != v {
				at = r*g.w + c
			}
		}
	}
	return at
}

// avgPlane pools one plane.
func (g *poolGeom) avgPlane(out, in []float32) {
	for i := 0; i < g.oh; i++ {
		for jj := 0; jj < g.ow; jj++ {
			r0, r1, c0, c1, div := g.window(i, jj)
			var s float32
			for r := r0; r < r1; r++ {
				for _, v := range in[r*g.w+c0 : r*g.w+c1] {
					s += v
				}
			}
			out[i*g.ow+jj] = s / div
		}
	}
}

// Pool2DShape returns the output shape [N, C, OH, OW] of MaxPool2D(x, p)
// and AvgPool2D(x, p), panicking as they do on invalid parameters.
func Pool2DShape(x *Tensor, p PoolParams) [4]int {
	checkNil("Pool2DShape", "x", x)
	return planPool("Pool2DShape", x.shape, p).shape
}
