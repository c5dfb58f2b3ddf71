package nn

import (
	"fmt"
	"math"

	"github.com/lanesgo/lanes/tensor"
)

// This file holds the tape's products, norms, scans and sorts: Prod,
// Norm, CumSum, CumProd, Sort, TopK and Median. Their forwards are package
// tensor's functions of the same names, on the device of x; their
// backwards run in float64 where they divide or multiply (Prod and Norm
// on the host, CumProd through tensor.CumProdBackward on x's device), as
// a reversed CumSum (CumSum), and through tensor.ScatterAdd where the
// gradient goes to selected elements (Sort, TopK, Median).

// Prod returns the product of x over axes (every axis when none is given),
// keeping each reduced axis with size 1 when keepdims is set
// (tensor.Prod: float64 accumulation, 1 over no element). The gradient of
// an element is the output's gradient times the product of the other
// elements, computed without dividing by the element, so it is right with
// zeros: with one zero among the reduced elements only the zero gets a
// gradient (the product of the others), with two or more none does.
func (tp *Tape) Prod(x *Var, keepdims bool, axes ...int) *Var {
	const op = "Prod"
	tp.use(op, "x", x)
	keep, shape, _ := reduceShape(op, x, keepdims, axes)
	yk := tensor.Prod(x.value, true, axes...)
	out, nd := tp.result(tp.view(yk, shape...), backFold, x)
	if nd != nil {
		nd.axes, nd.saved[0] = keep, yk
		nd.dims = foldProd
	}
	return out
}

// Norm returns the vector p-norm of x over axes, as tensor.Norm
// (torch.linalg.vector_norm). Its gradient is g·sign(x)·(|x|/‖x‖)^(p-1)
// for finite p (x/‖x‖ for p = 2), taken as 0 where the norm is 0 (the
// subgradient PyTorch gives) and where x is 0 for p < 1; for p = ±Inf,
// g·sign(x) split evenly among the elements whose |x| is the norm (as
// PyTorch); 0 for p = 0. A NaN norm gives NaN gradients.
func (tp *Tape) Norm(x *Var, p float64, keepdims bool, axes ...int) *Var {
	const op = "Norm"
	tp.use(op, "x", x)
	keep, shape, _ := reduceShape(op, x, keepdims, axes)
	yk := tensor.Norm(x.value, p, true, axes...)
	out, nd := tp.result(tp.view(yk, shape...), backFold, x)
	if nd != nil {
		nd.axes, nd.saved[0] = keep, yk
		// p as the sum of two float32s (48 bits of it).
		nd.dims, nd.f[0] = foldNorm, float32(p)
		if !math.IsInf(p, 0) {
			nd.f[1] = float32(p - float64(nd.f[0]))
		}
	}
	return out
}

// The reductions backFold differentiates (node.dims).
const (
	foldProd = iota + 1
	foldNorm
)

// backFold is the backward of Prod and Norm: on the host, per output
// element, over the reduced elements moved last (the layout of
// tensor.Prod's rows), in float64.
func backFold(tp *Tape, n *node) {
	x := n.in[0]
	if n.dims == foldNorm && !onHost(x.value) {
		backNormOnDevice(tp, n)
		return
	}
	xs := x.value.Shape()
	var perm, pshape []int
	// An axis of size 1 may count as reduced or kept alike.
	for i, d := range n.axes {
		if d == xs[i] && d != 1 {
			perm, pshape = append(perm, i), append(pshape, d)
		}
	}
	m := 1
	for i, d := range n.axes {
		if d != xs[i] || d == 1 {
			perm, pshape = append(perm, i), append(pshape, xs[i])
			m *= xs[i]
		}
	}
	rows := x.value.Permute(perm...).Contiguous()
	if !onHost(rows) {
		backProdOnDevice(tp, n, rows, perm, pshape, m)
		return
	}
	xd := hostData(rows)
	g := hostData(n.out.grad.Contiguous())
	y := hostData(n.saved[0])
	d := make([]float32, len(xd))
	for r := range g {
		row, drow := xd[r*m:(r+1)*m], d[r*m:(r+1)*m]
		if n.dims == foldProd {
			prodGrad(drow, row, float64(g[r]))
		} else {
			normGrad(drow, row, float64(g[r]), float64(y[r]), float64(n.f[0])+float64(n.f[1]))
		}
	}
	dx, add := tp.gradFor(x)
	tensor.CopyInto(dx.Permute(perm...), tensor.FromSlice(d, pshape...))
	tp.flush(x, dx, add)
}

// backProdOnDevice is Prod's backward on a device: the gradient of the
// last element of each row's CumProd (tensor.CumProdBackward of a dy that
// is g at the row's end, 0 elsewhere), per row in float64 without dividing
// by a zero, as the host's prefix-times-suffix products; the two differ by
// at most an ulp or two (CumProdBackward divides the suffix sums by x_k
// before a row's first zero). rows are x's elements, reduced axes last.
func backProdOnDevice(tp *Tape, n *node, rows *tensor.Tensor, perm, pshape []int, m int) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	r := 0
	if m > 0 {
		r = rows.Len() / m
	}
	if r > 0 {
		rows2 := rows.Reshape(r, m)
		dy := tensor.Fill(tp.allocOn(rows.Device(), r, m), 0)
		tensor.CopyInto(dy.Slice(1, m-1, m, 1), n.out.grad.Contiguous().Reshape(r, 1))
		d := tensor.CumProdBackward(rows2, dy, 1)
		tensor.CopyInto(dx.Permute(perm...), d.Reshape(pshape...))
	} else {
		tensor.Fill(dx, 0)
	}
	tp.flush(x, dx, add)
}

// backNormOnDevice is Norm's backward on a device: normGrad's formula
// composed of the device's elementwise and reduce families, in float32
// (within a few ulps of the host's float64 one, Pow's error included).
func backNormOnDevice(tp *Tape, n *node) {
	x := n.in[0]
	p := float64(n.f[0]) + float64(n.f[1])
	xv, y := x.value, n.saved[0] // y of the keep shape
	g := n.out.grad.Contiguous().Reshape(n.axes...)
	zero := tensor.Scalar(0)
	var d *tensor.Tensor
	switch {
	case p == 0:
		d = tensor.Fill(tp.like(xv), 0)
	case math.IsInf(p, 0):
		// g·sign(x) split evenly among the elements whose |x| is y.
		var axes []int
		for i, k := range n.axes {
			if k == 1 && xv.Dim(i) != 1 {
				axes = append(axes, i)
			}
		}
		at := tensor.Equal(tensor.Abs(xv), y)
		count := tensor.Maximum(tensor.Sum(at, true, axes...), tensor.Scalar(1))
		d = tensor.Mul(tensor.Mul(tensor.Sign(xv), at), tensor.Div(g, count))
	default:
		d = tensor.Mul(tensor.Sign(xv), tensor.Pow(tensor.Div(tensor.Abs(xv), y), tensor.Scalar(float32(p-1))))
		d = tensor.Where(tensor.LogicalAnd(xv, y), tensor.Mul(d, g), zero)
	}
	d = tensor.Where(tensor.IsNaN(y), y, d) // a NaN norm: NaN
	dx, add := tp.gradFor(x)
	tensor.CopyInto(dx, d)
	tp.flush(x, dx, add)
}

// prodGrad sets d[k] to g·Π_{j≠k} row[j]: the product of the prefix
// before k and the suffix after it, in float64, so that no element is
// divided by (a zero among the others makes it 0; only a lone zero gets a
// nonzero gradient).
func prodGrad(d, row []float32, g float64) {
	suf := make([]float64, len(row)+1)
	suf[len(row)] = 1
	for j := len(row) - 1; j >= 0; j-- {
		suf[j] = suf[j+1] * float64(row[j])
	}
	pre := 1.0
	for k, v := range row {
		d[k] = float32(g * pre * suf[k+1])
		pre *= float64(v)
	}
}

// normGrad sets d to the gradient of the p-norm y of row times g (see
// Tape.Norm).
func normGrad(d, row []float32, g, y, p float64) {
	sign := func(v float64) float64 {
		switch {
		case v > 0:
			return 1
		case v < 0:
			return -1
		}
		return v // 0, or NaN
	}
	if math.IsInf(p, 0) {
		count := 0
		for _, v := range row {
			if math.Abs(float64(v)) == y {
				count++
			}
		}
		for k, v := range row {
			d[k] = 0
			if a := math.Abs(float64(v)); a == y || y != y {
				d[k] = float32(g * sign(float64(v)) / float64(max(count, 1)))
				if y != y {
					d[k] = float32(math.NaN())
				}
			}
		}
		return
	}
	for k, v := range row {
		x := float64(v)
		switch {
		case y != y:
			d[k] = float32(math.NaN())
		case p == 0 || y == 0 || x == 0:
			d[k] = 0
		case p == 1:
			d[k] = float32(g * sign(x))
		default:
			d[k] = float32(g * sign(x) * math.Pow(math.Abs(x)/y, p-1))
		}
	}
}

// CumSum returns the cumulative sums of x along axis (tensor.CumSum:
// float64 accumulation). The gradient is the reversed cumulative sum of
// the output's: dx_k = Σ_{i≥k} g_i.
func (tp *Tape) CumSum(x *Var, axis int) *Var {
	const op = "CumSum"
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	out, nd := tp.result(tensor.CumSum(x.value, axis), backCumSum, x)
	if nd != nil {
		nd.idx[0] = axis
	}
	return out
}

func backCumSum(tp *Tape, n *node) {
	a := n.idx[0]
	tp.addGrad(n.in[0], tensor.Flip(tensor.CumSum(tensor.Flip(n.out.grad, a), a), a))
}

// CumProd returns the cumulative products of x along axis
// (tensor.CumProd: float64 accumulation). The gradient dx_k = Σ_{i≥k}
// g_i·Π_{j≤i, j≠k} x_j is computed per line in float64 without dividing
// by a zero: before the line's first zero by dividing the suffix sums of
// g·y by x_k, at the first zero by a forward product of the others, and
// after it as 0 (each product holds the zero), as PyTorch.
func (tp *Tape) CumProd(x *Var, axis int) *Var {
	const op = "CumProd"
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	out, nd := tp.result(tensor.CumProd(x.value, axis), backCumProd, x)
	if nd != nil {
		nd.idx[0] = axis
	}
	return out
}

func backCumProd(tp *Tape, n *node) {
	tp.addGrad(n.in[0], tensor.CumProdBackward(n.in[0].value, n.out.grad, n.idx[0]))
}

// Sort returns x sorted along axis (tensor.Sort: stable, NaN above +Inf)
// and the indices the values came from, a constant of the tape's storage
// (valid until its Reset, as the values). The gradient of each value goes
// to the element it came from. It runs on x's device.
func (tp *Tape) Sort(x *Var, axis int, descending bool) (values *Var, indices *tensor.Tensor) {
	const op = "Sort"
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	v, idx := tp.like(x.value), tp.like(x.value)
	tensor.SortInto(v, idx, x.value, axis, descending)
	return tp.selected(v, idx, axis, x), idx
}

// TopK returns the k largest (or smallest) elements of x along axis and
// their indices, as tensor.TopK (ties: the earlier element first); the
// indices are a constant of the tape's storage. The gradient of each
// value goes to the element it came from. It runs on x's device.
func (tp *Tape) TopK(x *Var, k, axis int, largest, sorted bool) (values *Var, indices *tensor.Tensor) {
	const op = "TopK"
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	if k < 0 || k > x.value.Dim(axis) {
		panic(fmt.Sprintf("nn: %s: k = %d out of range for axis %d of x of shape %v", op, k, axis, x.value.Shape()))
	}
	dev := x.value.Device()
	v, idx := tp.allocOn(dev, dimsOf(x.value, axis, k)...), tp.allocOn(dev, dimsOf(x.value, axis, k)...)
	tensor.TopKInto(v, idx, x.value, k, axis, largest, sorted)
	return tp.selected(v, idx, axis, x), idx
}

// Median returns the lower median of x along axis and its index, as
// tensor.Median (torch.median with a dim); the index is a constant of the
// tape's storage. The gradient goes to the element at that index. It runs
// on x's device.
func (tp *Tape) Median(x *Var, axis int, keepdims bool) (values *Var, indices *tensor.Tensor) {
	const op = "Median"
	tp.use(op, "x", x)
	axis = axisOf(op, x, axis)
	if x.value.Dims() > 0 && x.value.Dim(axis) == 0 {
		panic(fmt.Sprintf("nn: %s: zero-size axis %d of x of shape %v (no identity)", op, axis, x.value.Shape()))
	}
	keep := dimsOf(x.value, axis, 1)
	vk, ik := tp.allocOn(x.value.Device(), keep...), tp.allocOn(x.value.Device(), keep...)
	v, idx := vk, ik
	if !keepdims && x.value.Dims() > 0 {
		var out [tensor.MaxDims]int
		n := copy(out[:], keep[:axis])
		n += copy(out[n:], keep[axis+1:])
		v, idx = tp.view(vk, out[:n]...), tp.view(ik, out[:n]...)
	}
	tensor.MedianInto(v, idx, x.value, axis, keepdims)
	return tp.selected(v, ik, axis, x), idx
}

// dimsOf returns t's shape with k along axis, in
// an array's slice that does not escape to the heap when the caller's
// use does not.
func dimsOf(t *tensor.Tensor, axis, k int) []int {
	var dims [tensor.MaxDims]int
	for i := range t.Dims() {
		dims[i] = t.Dim(i)
	}
	dims[axis] = k
	return dims[:t.Dims()]
}

// selected makes the Var of values v taken from x along axis at idx (of
// v's shape, x's rank), whose gradient scatters back to x.
func (tp *Tape) selected(v, idx *tensor.Tensor, axis int, x *Var) *Var {
	out, nd := tp.result(v, backSelected, x)
	if nd != nil {
		nd.saved[0], nd.idx[0] = idx, axis
	}
	return out
}

// backSelected adds the output's gradient to x's at the saved indices.
func backSelected(tp *Tape, n *node) {
	x, idx := n.in[0], n.saved[0]
	dx, beta := tp.gradAcc(x)
	zeroIfFirst(dx, beta)
	tensor.ScatterAdd(dx, n.idx[0], idx, tp.viewLike(n.out.grad, idx))
}
