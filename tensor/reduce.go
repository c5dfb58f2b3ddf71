package tensor

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/simd"
)

// Reductions take the axes to reduce (none: all of them; negative ones
// count from the end) and keepdims, which keeps each reduced axis with size
// 1 as NumPy does. They walk x in its memory order and fold each innermost
// run with the simd kernels: a run along a reduced axis with simd.Sum (or
// Max, Min), a run along kept axes with simd.Add (or Maximum, Minimum) into
// the output row. Sums therefore accumulate in float32 and are within
// n·2⁻²⁴·Σ|x| of the exact sum for n reduced elements. Max and Min give
// NaN when a reduced element is NaN.
//
// With x (or SumToInto's or SoftmaxInto's dst) on a device, a reduction
// runs on that device's Reduce family (ReduceKernels) and returns a tensor
// there; the operands must all be on that device. A device without the
// family, or an error of its implementation, makes the op panic naming
// it, the shapes and the devices; nothing is copied to the host behind
// the caller's back.

// ReduceOp names a reduction of the Reduce family (ReduceKernels).
type ReduceOp uint8

// The reductions of the Reduce family, each named after its tensor
// function.
const (
	ReduceSum ReduceOp = iota + 1
	ReduceMax
	ReduceMin
	ReduceMean
	ReduceVar // ddof
	ReduceStd // ddof
	ReduceLogSumExp
	// foldaxes.go's, folded in float64 (a device's in its own order):
	ReduceProd    // Prod: 1 for no element
	ReduceNorm1   // Norm with p = 1: Σ|x|
	ReduceNorm2   // Norm with p = 2: √Σx²
	ReduceNormInf // Norm with p = +Inf: max|x| (NaN if any is)
	ReduceAny     // Any: 1 or 0, NaN nonzero; 0 for no element
	ReduceAll     // All: 1 or 0, NaN nonzero; 1 for no element
	numReduceOps
)

var reduceNames = [numReduceOps]string{ReduceSum: "Sum", ReduceMax: "Max", ReduceMin: "Min",
	ReduceMean: "Mean", ReduceVar: "Var", ReduceStd: "Std", ReduceLogSumExp: "LogSumExp",
	ReduceProd: "Prod", ReduceNorm1: "Norm", ReduceNorm2: "Norm", ReduceNormInf: "Norm", ReduceAny: "Any", ReduceAll: "All"}

// ArgOp names an index reduction of the Reduce family (ArgReduce).
type ArgOp uint8

// The index reductions: ArgMax and ArgMin.
const (
	ArgOpMax ArgOp = iota + 1
	ArgOpMin
)

type reduction struct {
	name     string
	op       ReduceOp
	identity bool // a reduction of no elements gives init; else it panics, as NumPy's
	init     float32
	run      func(x []float32) float32
	combine  func(acc, v float32) float32
	combineV func(acc, x []float32)
}

var (
	sumRed = reduction{"Sum", ReduceSum, true, 0, simd.Sum, func(a, v float32) float32 { return a + v },
		func(acc, x []float32) { simd.Add(acc, acc, x) }}
	maxRed = reduction{"Max", ReduceMax, false, float32(math.Inf(-1)), simd.Max, func(a, v float32) float32 {
		if v > a || v != v {
			return v
		}
		return a
	}, func(acc, x []float32) { simd.Maximum(acc, acc, x) }}
	minRed = reduction{"Min", ReduceMin, false, float32(math.Inf(1)), simd.Min, func(a, v float32) float32 {
		if v < a || v != v {
			return v
		}
		return a
	}, func(acc, x []float32) { simd.Minimum(acc, acc, x) }}
)

// reduceAxes resolves axes (none: all) to a mask over x's dimensions.
func reduceAxes(op string, x *Tensor, axes []int) (mask [MaxDims]bool) {
	if len(axes) == 0 {
		for i := range x.shape {
			mask[i] = true
		}
		return mask
	}
	for _, a := range axes {
		a = x.axis(op, a)
		if mask[a] {
			panic(fmt.Sprintf("tensor: %s: repeated axis in %v for shape %v", op, axes, x.shape))
		}
		mask[a] = true
	}
	return mask
}

// reducedShapes returns the output shape with reduced axes kept as 1, the
// output shape as asked (keepdims or not), and the number of elements
// folded into each output.
func reducedShapes(x *Tensor, mask [MaxDims]bool, keepdims bool) (keep, out []int, count int) {
	keep, out, count = make([]int, len(x.shape)), []int{}, 1
	for i, d := range x.shape {
		keep[i] = d
		if mask[i] {
			keep[i] = 1
			count *= d
			if keepdims {
				out = append(out, 1)
			}
			continue
		}
		out = append(out, d)
	}
	return keep, out, count
}

func (red *reduction) apply(x *Tensor, axes []int, keepdims bool) *Tensor {
	checkNil(red.name, "x", x)
	mask := reduceAxes(red.name, x, axes)
	keep, out, count := reducedShapes(x, mask, keepdims)
	if count == 0 && !red.identity {
		panic(fmt.Sprintf("tensor: %s: zero-size reduction over axes %v of shape %v (no identity)", red.name, axes, x.shape))
	}
	return reduceOnDevice(red.name, red.op, x, mask, keep, out, 0)
}

// reduceOnDevice runs the reduction op of x over the axes in mask (keep
// and out as reducedShapes gives them) on the device of x, and returns
// its result shaped out.
func reduceOnDevice(name string, op ReduceOp, x *Tensor, mask [MaxDims]bool, keep, out []int, ddof int) *Tensor {
	return reduceOnDeviceBy(name, x, mask, keep, out, func(k ReduceKernels, dst *Tensor, axes []int) error {
		return k.Reduce(op, dst, x, axes, ddof)
	})
}

// reduceOnDeviceBy is reduceOnDevice with the Reduce family's method
// given by run (dst of the keep shape, the reduced axes).
func reduceOnDeviceBy(name string, x *Tensor, mask [MaxDims]bool, keep, out []int, run func(k ReduceKernels, dst *Tensor, axes []int) error) *Tensor {
	dev := deviceOn(name, nil, x)
	k := reduceOn(name, dev, nil, x)
	dst := result(name, dev, keep, x)
	ran(name, run(k, dst, axesOf(mask, len(x.shape))), dst, x)
	if len(out) == len(keep) {
		return dst // keepdims
	}
	return dst.view(out, contiguousStrides(out), 0)
}

// axisRange holds 0 ... MaxDims-1: a run of consecutive axes is a slice
// of it, so that the usual reductions (over all axes, or one, or the last
// few) hand the Reduce family their axes without allocating.
var axisRange = func() (r [MaxDims]int) {
	for i := range r {
		r[i] = i
	}
	return r
}()

// axesOf returns the axes set in mask, ascending, of a tensor of rank
// dims. The slice must not be written.
func axesOf(mask [MaxDims]bool, dims int) []int {
	lo, hi := 0, dims
	for lo < dims && !mask[lo] {
		lo++
	}
	for hi > lo && !mask[hi-1] {
		hi--
	}
	for i := lo; i < hi; i++ {
		if !mask[i] {
			axes := make([]int, 0, dims)
			for j := lo; j < hi; j++ {
				if mask[j] {
					axes = append(axes, j)
				}
			}
			return axes
		}
	}
	return axisRange[lo:hi:hi]
}

// Reduce is the CPU's reductions: x and dst on the host, dst of x's shape
// with size 1 along axes, not overlapping x.
func (cpuKernels) Reduce(op ReduceOp, dst, x *Tensor, axes []int, ddof int) error {
	if op == 0 || op >= numReduceOps {
		panic(fmt.Sprintf("tensor: Reduce: op %d is not a reduction", op))
	}
	name := reduceNames[op]
	var mask [MaxDims]bool
	for _, a := range axes {
		mask[a] = true
	}
	switch op {
	case ReduceSum, ReduceMax, ReduceMin:
		red := [...]*reduction{ReduceSum: &sumRed, ReduceMax: &maxRed, ReduceMin: &minRed}[op]
		fillHost(dst, red.init)
		red.into(name, dst, x)
	case ReduceMean:
		mean, _, _ := meanOf(name, x, mask)
		setFrom64(name, dst, mean, nil)
	case ReduceVar, ReduceStd:
		v, _ := varianceOf(name, x, ddof, mask)
		f := math.Sqrt
		if op == ReduceVar {
			f = nil
		}
		setFrom64(name, dst, v, f)
	case ReduceLogSumExp:
		logSumExp(dst, x, mask)
	default:
		foldInto(name, dst, x, mask, folds[op])
	}
	return nil
}

// logSumExp sets dst, x's shape with the axes in mask of size 1, to log Σ
// e^x over them: m + log Σ e^(x-m), m the maximum (0 where infinite).
func logSumExp(dst, x *Tensor, mask [MaxDims]bool) {
	if _, _, n := reducedShapes(x, mask, true); n == 0 {
		fillHost(dst, float32(math.Inf(-1)))
		return
	}
	m := Full(float32(math.Inf(-1)), dst.shape...)
	maxRed.into("LogSumExp", m, x)
	md := m.data
	for i, v := range md {
		if math.IsInf(float64(v), 0) {
			md[i] = 0
		}
	}
	e := Sub(x, m)
	ExpInto(e, e)
	fillHost(dst, 0)
	sumRed.into("LogSumExp", dst, e)
	LogInto(dst, dst)
	AddInto(dst, dst, m)
}

// setFrom64 sets the host tensor dst to f(v[i]) (v[i] for a nil f)
// rounded to float32, v laid out as dst contiguous.
func setFrom64(op string, dst *Tensor, v []float64, f func(float64) float64) {
	t := dst
	if !dst.IsContiguous() {
		t = alloc(op, dst.shape)
	}
	d := t.data[t.offset : t.offset+len(v)]
	for i, e := range v {
		if f != nil {
			e = f(e)
		}
		d[i] = float32(e)
	}
	if t != dst {
		cpuKernels{}.CopyInto(dst, t)
	}
}

// into folds x into dst, whose shape is x's with reduced axes set to 1; op
// names the operation in panics.
func (red *reduction) into(op string, dst, x *Tensor) {
	var l loop
	l.init(op, x.shape, dst, x)
	if l.empty {
		return
	}
	n, st := l.inner()
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	d, xs := dst.data, x.data
	l.each(0, l.runs(), &sc.off, &sc.idx, func(off *[maxOps]int) {
		for c := 0; c < n; c += chunk {
			m := min(chunk, n-c)
			run := stridedRun(xs, off[1]+c*st[1], m, st[1], sc.buf[1][:])
			od := off[0] + c*st[0]
			switch st[0] {
			case 0:
				d[od] = red.combine(d[od], red.run(run))
			case 1:
				red.combineV(d[od:od+m], run)
			default:
				acc := sc.buf[0][:m]
				for j := range acc {
					acc[j] = d[od+j*st[0]]
				}
				red.combineV(acc, run)
				for j, v := range acc {
					d[od+j*st[0]] = v
				}
			}
		}
	})
}

// Sum returns the sum over axes (all when none are given).
func Sum(x *Tensor, keepdims bool, axes ...int) *Tensor { return sumRed.apply(x, axes, keepdims) }

// Max returns the maximum over axes; a zero-size reduction panics.
func Max(x *Tensor, keepdims bool, axes ...int) *Tensor { return maxRed.apply(x, axes, keepdims) }

// Min returns the minimum over axes; a zero-size reduction panics.
func Min(x *Tensor, keepdims bool, axes ...int) *Tensor { return minRed.apply(x, axes, keepdims) }

// Mean returns the mean over axes (NaN for a zero-size reduction),
// accumulated in float64 from float32 sums of deviations from partial
// means (see moments.go): within half an ulp of the exact mean of the n
// elements plus 2⁻¹¹·mean|x - mean| + 2⁻¹⁹·max|x - mean| + (2⁻²⁶ +
// n·2⁻⁵³)·mean|x|, so within an ulp (Mean of 16777216, 16777218 and
// 16777220 is 16777218) while every element is within 2⁹ ulps of the
// mean and n is below 2²⁸. ±Inf and NaN elements give what they give in
// float64.
func Mean(x *Tensor, keepdims bool, axes ...int) *Tensor {
	const op = "Mean"
	checkNil(op, "x", x)
	mask := reduceAxes(op, x, axes)
	keep, out, _ := reducedShapes(x, mask, keepdims)
	return reduceOnDevice(op, ReduceMean, x, mask, keep, out, 0)
}

// Var returns the variance over axes with ddof delta degrees of freedom
// (divisor n-ddof; NaN when n-ddof <= 0), in two passes (see moments.go):
// Mean, then the deviations from it summed in float64 with the corrected
// two-pass formula. It is within half an ulp of the exact variance of the
// elements plus a relative (n+2)·2⁻⁵¹: Var of 16777216 and 16777218 is 1,
// of 1e20 and -1e20 1e40 (+Inf in float32).
func Var(x *Tensor, ddof int, keepdims bool, axes ...int) *Tensor {
	const op = "Var"
	checkNil(op, "x", x)
	mask := reduceAxes(op, x, axes)
	keep, out, _ := reducedShapes(x, mask, keepdims)
	return reduceOnDevice(op, ReduceVar, x, mask, keep, out, ddof)
}

// Std returns the square root of Var, taken in float64 before rounding
// (Std of 1e20 and -1e20 is 1e20): within half an ulp of the exact
// standard deviation plus a relative (n+2)·2⁻⁵².
func Std(x *Tensor, ddof int, keepdims bool, axes ...int) *Tensor {
	const op = "Std"
	checkNil(op, "x", x)
	mask := reduceAxes(op, x, axes)
	keep, out, _ := reducedShapes(x, mask, keepdims)
	return reduceOnDevice(op, ReduceStd, x, mask, keep, out, ddof)
}

// LogSumExp returns log Σ e^x over axes, computed as m + log Σ e^(x-m)
// with m the maximum (0 where m is infinite), so it neither overflows nor
// underflows needlessly. Over zero elements it is -Inf, the log of an
// empty sum, as simd.LogSumExp.
func LogSumExp(x *Tensor, keepdims bool, axes ...int) *Tensor {
	const op = "LogSumExp"
	checkNil(op, "x", x)
	mask := reduceAxes(op, x, axes)
	keep, out, _ := reducedShapes(x, mask, keepdims)
	return reduceOnDevice(op, ReduceLogSumExp, x, mask, keep, out, 0)
}

// ArgMax returns the index of the maximum along axis (the first one on
// ties, the first NaN if any) as float32 values, exact since an axis of
// more than 2²⁴ elements, whose indices would round, makes it panic.
func ArgMax(x *Tensor, axis int, keepdims bool) *Tensor {
	return argReduce("ArgMax", ArgOpMax, x, axis, keepdims)
}

// ArgMin returns the index of the minimum along axis, as ArgMax.
func ArgMin(x *Tensor, axis int, keepdims bool) *Tensor {
	return argReduce("ArgMin", ArgOpMin, x, axis, keepdims)
}

func argReduce(op string, a ArgOp, x *Tensor, axis int, keepdims bool) *Tensor {
	checkNil(op, "x", x)
	axis = x.axis(op, axis)
	if x.shape[axis] == 0 {
		panic(fmt.Sprintf("tensor: %s: zero-size axis %d of shape %v", op, axis, x.shape))
	}
	if x.shape[axis] > 1<<24 {
		panic(fmt.Sprintf("tensor: %s: axis %d of shape %v: indices past 2²⁴ would not be exact in float32", op, axis, x.shape))
	}
	dev := deviceOn(op, nil, x)
	k := reduceOn(op, dev, nil, x)
	keep := slices.Clone(x.shape)
	keep[axis] = 1
	dst := result(op, dev, keep, x)
	ran(op, k.ArgReduce(a, dst, x, axis), dst, x)
	if keepdims {
		return dst
	}
	// dst without its axis of size 1: the same layout, in one allocation.
	n := len(keep) - 1
	buf := make([]int, 2*n)
	out, st := buf[:n:n], buf[n:]
	copy(out, keep[:axis])
	copy(out[axis:], keep[axis+1:])
	copy(st, dst.strides[:axis])
	copy(st[axis:], dst.strides[axis+1:])
	return dst.view(out, st, dst.offset)
}

// ArgReduce is the CPU's ArgMax and ArgMin: x and dst on the host.
func (cpuKernels) ArgReduce(op ArgOp, dst, x *Tensor, axis int) error {
	f := simd.ArgMax
	switch op {
	case ArgOpMax:
	case ArgOpMin:
		f = simd.ArgMin
	default:
		panic(fmt.Sprintf("tensor: ArgReduce: op %d is not an index reduction", op))
	}
	name := [...]string{ArgOpMax: "ArgMax", ArgOpMin: "ArgMin"}[op]
	r := moveAxisLast(x, axis).Contiguous()
	n := x.shape[axis]
	src := r.hostData(name)
	out := dst
	if !dst.IsContiguous() {
		out = alloc(name, dst.shape)
	}
	d := out.data[out.offset : out.offset+dst.Len()]
	for i := range d {
		d[i] = float32(f(src[i*n : (i+1)*n]))
	}
	if out != dst {
		cpuKernels{}.CopyInto(dst, out)
	}
	return nil
}

// moveAxisLast returns the view of x with axis moved to the end.
func moveAxisLast(x *Tensor, axis int) *Tensor {
	perm := make([]int, 0, len(x.shape))
	for i := range x.shape {
		if i != axis {
			perm = append(perm, i)
		}
	}
	return x.Permute(append(perm, axis)...)
}

// Softmax returns e^x / Σ e^x along axis (simd.Softmax per row: max
// subtracted, so no overflow).
func Softmax(x *Tensor, axis int) *Tensor {
	checkNil("Softmax", "x", x)
	return softmax("Softmax", nil, x, axis, false)
}

// SoftmaxInto sets dst to the softmax of x along axis; dst has x's shape.
func SoftmaxInto(dst, x *Tensor, axis int) *Tensor {
	return softmax("SoftmaxInto", dst, x, axis, false)
}

// LogSoftmax returns x - log Σ e^x along axis (simd.LogSoftmax per row).
func LogSoftmax(x *Tensor, axis int) *Tensor {
	checkNil("LogSoftmax", "x", x)
	return softmax("LogSoftmax", nil, x, axis, true)
}

// LogSoftmaxInto sets dst to the log-softmax of x along axis.
func LogSoftmaxInto(dst, x *Tensor, axis int) *Tensor {
	return softmax("LogSoftmaxInto", dst, x, axis, true)
}

// rowJob runs a row kernel over rows of n contiguous elements.
type rowJob struct {
	f        func(dst, x []float32)
	dst, src []float32
	n        int
}

var rowJobs = sync.Pool{New: func() any { return new(rowJob) }}

// rows runs f over the rows of n elements of src into dst.
func rows(f func(dst, x []float32), dst, src []float32, n int) {
	j := rowJobs.Get().(*rowJob)
	*j = rowJob{f: f, dst: dst, src: src, n: n}
	parallel(j, len(src)/n, len(src))
	*j = rowJob{}
	rowJobs.Put(j)
}

func (j *rowJob) RunRange(lo, hi int) {
	for i := lo; i < hi; i++ {
		j.f(j.dst[i*j.n:(i+1)*j.n], j.src[i*j.n:(i+1)*j.n])
	}
}

// softmax is Softmax (log: LogSoftmax) of x along axis on the device of
// its operands, into dst (nil: a new tensor).
func softmax(op string, dst, x *Tensor, axis int, log bool) *Tensor {
	if dst == nil {
		axis = x.axis(op, axis)
		dev := deviceOn(op, nil, x)
		k := reduceOn(op, dev, nil, x)
		dst = result(op, dev, x.shape, x)
		ran(op, k.Softmax(dst, x, axis, log), dst, x)
		return dst
	}
	checkNil(op, "dst, x", dst, x)
	axis = x.axis(op, axis)
	if !slices.Equal(dst.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: dst shape %v and x shape %v differ", op, dst.shape, x.shape))
	}
	checkWritable(op, dst)
	dev := deviceOn(op, dst, x)
	k := reduceOn(op, dev, dst, x)
	if dev == CPU {
		x = unalias(dst, x)
	}
	ran(op, k.Softmax(dst, x, axis, log), dst, x)
	return dst
}

// Softmax is the CPU's Softmax and LogSoftmax: x and dst on the host, not
// overlapping. The fast path (axis last, both contiguous) allocates
// nothing; others go through contiguous copies.
func (cpuKernels) Softmax(dst, x *Tensor, axis int, log bool) error {
	op, f := "Softmax", simd.Softmax
	if log {
		op, f = "LogSoftmax", simd.LogSoftmax
	}
	n := x.shape[axis]
	total := x.Len()
	if total == 0 || n == 0 {
		return nil
	}
	if axis == len(x.shape)-1 && x.IsContiguous() && dst.IsContiguous() {
		rows(f, dst.hostData(op), x.hostData(op), n)
		return nil
	}
	tmp := moveAxisLast(x, axis).Clone()
	rows(f, tmp.data, tmp.data, n)
	cpuKernels{}.CopyInto(moveAxisLast(dst, axis), tmp)
	return nil
}

// SoftmaxBackward returns the gradient with respect to x of y =
// Softmax(x, axis), given y and the gradient dy of y (both of one shape):
// dx = y·(dy - Σ dy·y), the sum along axis (simd.Dot: float32 lanes,
// within n·2⁻²⁴·Σ|dy·y| ≤ n·2⁻²⁴·max|dy| of the exact sum for n elements
// along axis, then one rounding per operation).
func SoftmaxBackward(y, dy *Tensor, axis int) *Tensor {
	return softmaxBackward("SoftmaxBackward", nil, y, dy, axis, false)
}

// SoftmaxBackwardInto sets dx to SoftmaxBackward(y, dy, axis) and returns
// dx; dx may be dy or y (in place).
func SoftmaxBackwardInto(dx, y, dy *Tensor, axis int) *Tensor {
	return softmaxBackward("SoftmaxBackwardInto", dx, y, dy, axis, false)
}

// LogSoftmaxBackward returns the gradient with respect to x of y =
// LogSoftmax(x, axis), given y and dy: dx = dy - e^y·Σ dy along axis
// (simd.Sum and simd.Exp; the product and difference round once each, or
// once in all with Axpy's fused multiply-add).
func LogSoftmaxBackward(y, dy *Tensor, axis int) *Tensor {
	return softmaxBackward("LogSoftmaxBackward", nil, y, dy, axis, true)
}

// LogSoftmaxBackwardInto sets dx to LogSoftmaxBackward(y, dy, axis) and
// returns dx; dx may be dy or y (in place).
func LogSoftmaxBackwardInto(dx, y, dy *Tensor, axis int) *Tensor {
	return softmaxBackward("LogSoftmaxBackwardInto", dx, y, dy, axis, true)
}

// softmaxBackward is SoftmaxBackward (log: LogSoftmaxBackward) on the
// device of its operands, into dx (nil: a new tensor).
func softmaxBackward(op string, dx, y, dy *Tensor, axis int, log bool) *Tensor {
	if dx == nil {
		checkNil(op, "y, dy", y, dy)
	} else {
		checkNil(op, "dx, y, dy", dx, y, dy)
	}
	axis = y.axis(op, axis)
	if !slices.Equal(dy.shape, y.shape) || (dx != nil && !slices.Equal(dx.shape, y.shape)) {
		panic(fmt.Sprintf("tensor: %s: shapes %s differ", op, shapesOf([]*Tensor{dx, y, dy})))
	}
	if dx != nil {
		checkWritable(op, dx)
	}
	dev := deviceOn(op, dx, y, dy)
	k := reduceOn(op, dev, dx, y, dy)
	if dx == nil {
		dx = result(op, dev, y.shape, y, dy)
	} else if dev == CPU {
		// A row's sum is read before it is written, and dy's elements
		// before dx's; y is read after.
		y, dy = detach(dx, y), unalias(dx, dy)
	}
	ran(op, k.SoftmaxBackward(dx, y, dy, axis, log), dx, y, dy)
	return dx
}

// SoftmaxBackward is the CPU's SoftmaxBackward and LogSoftmaxBackward:
// host operands, dx not overlapping y and overlapping dy only exactly (in
// place). The fast path (axis last, all three contiguous) allocates
// nothing; others go through contiguous copies.
func (cpuKernels) SoftmaxBackward(dx, y, dy *Tensor, axis int, log bool) error {
	op := "SoftmaxBackward"
	if log {
		op = "LogSoftmaxBackward"
	}
	n := y.shape[axis]
	if y.Len() == 0 || n == 0 {
		return nil
	}
	j := softmaxGradJobs.Get().(*softmaxGradJob)
	defer func() {
		*j = softmaxGradJob{}
		softmaxGradJobs.Put(j)
	}()
	*j = softmaxGradJob{n: n, log: log}
	if axis == len(y.shape)-1 && y.IsContiguous() && dy.IsContiguous() && dx.IsContiguous() {
		j.dx, j.y, j.dy = dx.hostData(op), y.hostData(op), dy.hostData(op)
		parallel(j, y.Len()/n, 2*y.Len())
		return nil
	}
	yt, dyt := moveAxisLast(y, axis).Clone(), moveAxisLast(dy, axis).Clone()
	j.dx, j.y, j.dy = dyt.data, yt.data, dyt.data
	parallel(j, y.Len()/n, 2*y.Len())
	cpuKernels{}.CopyInto(moveAxisLast(dx, axis), dyt)
	return nil
}

// softmaxGradJob is SoftmaxBackward over rows of n contiguous elements.
type softmaxGradJob struct {
	dx, y, dy []float32
	n         int
	log       bool
}

var softmaxGradJobs = sync.Pool{New: func() any { return new(softmaxGradJob) }}

func (j *softmaxGradJob) RunRange(lo, hi int) {
	var t *gradTemp
	if j.log {
		t = gradTemps.Get().(*gradTemp)
		defer gradTemps.Put(t)
	}
	for r := lo; r < hi; r++ {
		dx, y, dy := j.dx[r*j.n:][:j.n], j.y[r*j.n:][:j.n], j.dy[r*j.n:][:j.n]
		if !j.log {
			// dx = y·(dy - Σ dy·y)
			s := simd.Dot(dy, y)
			simd.AddScalar(dx, dy, -s)
			simd.Mul(dx, dx, y)
			continue
		}
		// dx = dy - e^y·Σ dy, by pieces of e^y.
		s := simd.Sum(dy)
		for p := 0; p < j.n; p += chunk {
			q := min(p+chunk, j.n)
			e := t[0][:q-p]
			simd.Exp(e, y[p:q])
			copy(dx[p:q], dy[p:q])
			simd.Axpy(dx[p:q], -s, e)
		}
	}
}

// SumToInto adds to dst the sums of x over the axes along which dst
// broadcasts to x's shape, and returns dst: dst[j] += Σ x[i] over every i
// that dst[j] is broadcast to. It is the adjoint of broadcasting, the way a
// gradient flows back through a broadcast operand. dst's shape must
// broadcast to exactly x's shape; an x overlapping dst is copied first.
// Accuracy as Sum.
func SumToInto(dst, x *Tensor) *Tensor {
	checkNil("SumToInto", "dst, x", dst, x)
	checkWritable("SumToInto", dst)
	if out, ok := shape.Broadcast(dst.shape, x.shape); !ok || !slices.Equal(out, x.shape) {
		panic(fmt.Sprintf("tensor: SumToInto: dst of shape %v does not broadcast to x's shape %v", dst.shape, x.shape))
	}
	dev := deviceOn("SumToInto", dst, x)
	k := reduceOn("SumToInto", dev, dst, x)
	if dev == CPU {
		x = detach(dst, x)
	}
	ran("SumToInto", k.SumTo(dst, x), dst, x)
	return dst
}

// SumTo is the CPU's SumToInto: x and dst on the host, not overlapping.
func (cpuKernels) SumTo(dst, x *Tensor) error {
	d := dst
	if lead := len(x.shape) - len(dst.shape); lead > 0 {
		shape := append(make([]int, lead, len(x.shape)), dst.shape...)
		strides := append(make([]int, lead, len(x.shape)), dst.strides...)
		for i := range lead {
			shape[i] = 1
		}
		d = dst.view(shape, strides, dst.offset)
	}
	sumRed.into("SumToInto", d, x)
	return nil
}

// stridedRun returns the m elements of xs from o at stride st: xs itself
// when they are contiguous, else a copy gathered into buf (of at least m).
func stridedRun(xs []float32, o, m, st int, buf []float32) []float32 {
	if st == 1 {
		return xs[o : o+m]
	}
	run := buf[:m]
	for j := range run {
		run[j] = xs[o+j*st]
	}
	return run
}
