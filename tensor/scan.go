package tensor

import (
	"fmt"
	"slices"
)

// The scans and the sorts work along one axis on the CPU. The scans walk
// x in its row-major order (a contiguous copy when x is not contiguous),
// carrying a float64 accumulator per position across the axis; the sorts
// view x with the axis last (again a contiguous copy when that view is
// not contiguous), sort each row on its own, and write the result back in
// x's shape. On a device they run on its Sort family (SortKernels),
// which gives the same numbers.

// rowsJob runs a function over a range of rows: the ops of this file,
// sort.go and foldaxes.go split their independent rows over the workers
// with it (parallel: from par.SplitFrom elements of work).
type rowsJob func(lo, hi int)

func (f rowsJob) RunRange(lo, hi int) { f(lo, hi) }

// alongRows returns x's elements with axis moved last, as contiguous rows
// of x.shape[axis] elements. The slice may be x's storage: it must not be
// written.
func alongRows(op string, x *Tensor, axis int) []float32 {
	x.hostOnly(op)
	return moveAxisLast(x, axis).hostData(op)
}

// storeRows copies rows, laid out as alongRows gives them (axis last),
// into dst (any strides).
func storeRows(dst *Tensor, rows []float32, axis int) {
	shape := make([]int, 0, len(dst.shape))
	for i, d := range dst.shape {
		if i != axis {
			shape = append(shape, d)
		}
	}
	cpuKernels{}.CopyInto(moveAxisLast(dst, axis), FromSlice(rows, append(shape, dst.shape[axis])...))
}

// CumSum returns the cumulative sums of x along axis (negative counts
// from the end), as torch.cumsum: y[..., i, ...] = Σ_{j ≤ i} x[..., j, ...].
// Each prefix is accumulated in float64 and rounded once, so every output
// is within half an ulp of the exact prefix sum plus i·2⁻⁵³·Σ_{j≤i}|x_j|
// however long the axis (a float32 running sum would drift by up to
// i·2⁻²⁴ of it). NaN and Inf propagate as in IEEE arithmetic. A 0-d x is
// a line of one element along axis 0 or -1, as PyTorch. It runs on x's
// device, with the host's result bit for bit.
func CumSum(x *Tensor, axis int) *Tensor { return scan("CumSum", nil, x, axis, false) }

// CumSumInto sets dst, of x's shape on x's device (any strides), to
// CumSum(x, axis) and returns dst; an x overlapping dst is copied first.
func CumSumInto(dst, x *Tensor, axis int) *Tensor {
	checkNil("CumSumInto", "dst", dst)
	return scan("CumSumInto", dst, x, axis, false)
}

// CumProd returns the cumulative products of x along axis, as
// torch.cumprod: y[..., i, ...] = Π_{j ≤ i} x[..., j, ...], accumulated
// in float64 and rounded once (within half an ulp of the exact prefix
// product plus a relative i·2⁻⁵³). It runs on x's device, with the host's
// result bit for bit.
func CumProd(x *Tensor, axis int) *Tensor { return scan("CumProd", nil, x, axis, true) }

// CumProdInto sets dst, of x's shape on x's device (any strides), to
// CumProd(x, axis) and returns dst; an x overlapping dst is copied first.
func CumProdInto(dst, x *Tensor, axis int) *Tensor {
	checkNil("CumProdInto", "dst", dst)
	return scan("CumProdInto", dst, x, axis, true)
}

// scanBlock is the number of columns a scan along an inner axis carries
// at once (one float64 accumulator each).
const scanBlock = 256

// scan is CumSum (prod: CumProd) of x along axis into dst (nil: a new
// tensor on x's device), on the device of the operands.
func scan(op string, dst, x *Tensor, axis int, prod bool) *Tensor {
	if x1, ok := asLine(op, x, axis); ok {
		return scan(op, lineDst(op, "dst", dst), x1, 0, prod).Reshape()
	}
	axis = x.axis(op, axis)
	dev := deviceOn(op, dst, x)
	if dst == nil {
		dst = result(op, dev, x.shape, x)
	}
	if !slices.Equal(dst.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: dst shape %v, want %v", op, dst.shape, x.shape))
	}
	checkWritable(op, dst)
	if x.Len() == 0 {
		return dst
	}
	if dev == CPU {
		x = detach(dst, x)
	}
	ran(op, sortOn(op, dev, dst, x).Scan(dst, x, axis, prod), dst, x)
	return dst
}

// Scan implements SortKernels on the host: x as [outer, n, inner] (n
// along axis), each column of inner elements accumulated down the n rows,
// in blocks of scanBlock columns split over the workers (rows of n
// elements when inner is 1), into dst's storage when it is contiguous.
func (cpuKernels) Scan(dst, x *Tensor, axis int, prod bool) error {
	src := x.hostData("Scan")
	n, inner := x.shape[axis], 1
	for _, d := range x.shape[axis+1:] {
		inner *= d
	}
	outer := len(src) / (n * inner)
	start := 0.0
	if prod {
		start = 1
	}
	var out []float32
	if dst.IsContiguous() {
		out = dst.data[dst.offset : dst.offset+len(src)]
	} else {
		out = make([]float32, len(src))
		defer cpuKernels{}.CopyInto(dst, FromSlice(out, x.shape...))
	}
	if inner == 1 {
		parallel(rowsJob(func(lo, hi int) {
			for r := lo * n; r < hi*n; r += n {
				acc := start
				for i, v := range src[r : r+n] {
					if prod {
						acc *= float64(v)
					} else {
						acc += float64(v)
					}
					out[r+i] = float32(acc)
				}
			}
		}), outer, len(src))
		return nil
	}
	blocks := (inner + scanBlock - 1) / scanBlock
	parallel(rowsJob(func(lo, hi int) {
		var acc [scanBlock]float64
		for j := lo; j < hi; j++ {
			o, c0 := j/blocks, j%blocks*scanBlock
			a := acc[:min(scanBlock, inner-c0)]
			for c := range a {
				a[c] = start
			}
			for i := range n {
				base := (o*n+i)*inner + c0
				xs, ys := src[base:base+len(a)], out[base:base+len(a)]
				for c, v := range xs {
					if prod {
						a[c] *= float64(v)
					} else {
						a[c] += float64(v)
					}
					ys[c] = float32(a[c])
				}
			}
		}
	}), outer*blocks, len(src))
	return nil
}

// CumProdBackward returns the gradient with respect to x of CumProd(x,
// axis) given the gradient dy of its output (x's shape): dx_k = Σ_{i≥k}
// dy_i·Π_{j≤i, j≠k} x_j, computed per line in float64 without dividing by
// a zero, as PyTorch: before the line's first zero by dividing the suffix
// sums of dy·y by x_k, at the first zero by a forward product of the
// others, and after it as 0 (each product holds the zero). It runs on the
// device of x and dy, with the host's result bit for bit.
func CumProdBackward(x, dy *Tensor, axis int) *Tensor {
	const op = "CumProdBackward"
	checkNil(op, "x, dy", x, dy)
	if !slices.Equal(x.shape, dy.shape) {
		panic(fmt.Sprintf("tensor: %s: dy of shape %v for x of shape %v", op, dy.shape, x.shape))
	}
	if x1, ok := asLine(op, x, axis); ok {
		return CumProdBackward(x1, dy.Reshape(1), 0).Reshape()
	}
	axis = x.axis(op, axis)
	dev := deviceOn(op, nil, x, dy)
	dx := result(op, dev, x.shape, x, dy)
	if x.Len() == 0 {
		return dx
	}
	ran(op, sortOn(op, dev, dx, x, dy).CumProdBackward(dx, x, dy, axis), dx, x, dy)
	return dx
}

// CumProdBackward implements SortKernels on the host: cumProdGrad per
// line, the lines split over the workers.
func (cpuKernels) CumProdBackward(dx, x, dy *Tensor, axis int) error {
	const op = "CumProdBackward"
	xd, gd := alongRows(op, x, axis), alongRows(op, dy, axis)
	n := x.shape[axis]
	d := make([]float32, len(xd))
	parallel(rowsJob(func(lo, hi int) {
		y := make([]float64, n)
		for r := lo * n; r < hi*n; r += n {
			cumProdGrad(d[r:r+n], xd[r:r+n], gd[r:r+n], y)
		}
	}), len(xd)/n, 4*len(xd))
	storeRows(dx, d, axis)
	return nil
}

// cumProdGrad sets d to the gradient of a cumulative product of x given
// the output's gradient g (one line), y scratch of len(x).
func cumProdGrad(d, x, g []float32, y []float64) {
	n := len(x)
	z := n
	for i, v := range x {
		if v == 0 {
			z = i
			break
		}
	}
	// Before z: dx_k = (Σ_{k≤i<z} g_i·y_i) / x_k.
	p := 1.0
	for i := range z {
		p *= float64(x[i])
		y[i] = p
	}
	s := 0.0
	for k := z - 1; k >= 0; k-- {
		s += float64(float64(g[k]) * y[k]) // rounded: never fused (arm64), as the device
		d[k] = float32(s / float64(x[k]))
	}
	if z == n {
		return
	}
	// At z: Σ_{i≥z} g_i·Π_{j<z} x_j·Π_{z<j≤i} x_j.
	q := 1.0
	if z > 0 {
		q = y[z-1]
	}
	acc := 0.0
	for i := z; i < n; i++ {
		if i > z {
			q *= float64(x[i])
		}
		acc += float64(float64(g[i]) * q)
	}
	d[z] = float32(acc)
	for k := z + 1; k < n; k++ {
		d[k] = 0
	}
}
