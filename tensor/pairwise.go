package tensor

import (
	"fmt"

	"github.com/lanesgo/lanes/simd"
)

// PairwiseSqDist returns the [n, m] matrix of squared Euclidean distances
// D[i, j] = ‖x[i] - y[j]‖² between the rows of x [n, d] and of y [m, d]
// (PyTorch's torch.cdist(x, y)², scikit-learn's euclidean_distances
// squared), through the GEMM:
//
//	D[i, j] = max(0, ‖x̃[i]‖² + ‖ỹ[j]‖² - 2·x̃[i]·ỹ[j])
//
// where x̃ and ỹ are the rows less the mean c of all n + m rows (the
// distances do not change; the norms, and so the cancellation, shrink to
// the spread of the points instead of their distance from the origin).
// The norms and the sum are formed in float64 and the products by the
// float32 GEMM, so an entry's error is about d·2⁻²³·(‖x̃[i]‖² + ‖ỹ[j]‖²)
// at most: for points at distance δ within a cloud of radius R, relative
// error about d·2⁻²³·(R/δ)² (TestPairwiseSqDist: within 1e-5·d·(‖x̃[i]‖² +
// ‖ỹ[j]‖²) of the float64 distance); an entry the rounding makes negative
// is 0. When y is x (the same tensor) the matrix is symmetric, bit for
// bit, with an exact zero diagonal.
//
// x and y may be strided (transposed, sliced) views. On a device (x and
// y on one device) the same algorithm is composed of the device's
// families: the mean of the rows (Mean, in float32, weighted n/(n+m) and
// m/(n+m)), the centered rows (Sub), their squared norms (Mul, Sum along
// the rows, in float32), the GEMM (MatMul, summing in the device's own
// order), -2·G + ‖x̃[i]‖² + ‖ỹ[j]‖² in float32 (Scale, broadcast Add) and
// the clamp (ReLU); when y is x the matrix is made symmetric, bit for bit,
// as (D + Dᵀ)/2, and its diagonal exactly 0. The bound above holds there
// too, with the float32 norms adding about 3·2⁻²⁴·(‖x̃[i]‖² + ‖ỹ[j]‖²);
// the device's result is not the host's bit for bit
// (TestPairwiseOnDevice: within 1e-5·d·(‖x̃[i]‖² + ‖ỹ[j]‖²) of the host's).
// It panics, naming itself and the shapes, unless x and y are matrices
// with as many columns, and naming the devices when they are on two.
func PairwiseSqDist(x, y *Tensor) *Tensor {
	const op = "PairwiseSqDist"
	dev := checkPairwise(op, x, y)
	if dev != CPU {
		return pairwiseOnDevice(op, dev, result(op, dev, []int{x.shape[0], y.shape[0]}, x, y), x, y)
	}
	return pairwiseInto(op, New(x.shape[0], y.shape[0]), x, y)
}

// PairwiseSqDistInto sets dst, an [n, m] tensor on x's and y's device, to
// PairwiseSqDist(x, y) and returns dst; x or y overlapping dst is copied
// first (a strided dst is written through a contiguous temporary; on a
// device dst is written only once x and y have been read).
func PairwiseSqDistInto(dst, x, y *Tensor) *Tensor {
	return pairwiseDstInto("PairwiseSqDistInto", dst, x, y)
}

// pairwiseDstInto is PairwiseSqDistInto for op, which its panics name.
func pairwiseDstInto(op string, dst, x, y *Tensor) *Tensor {
	checkNil(op, "dst", dst)
	checkPairwise(op, x, y)
	checkShapeIs(op, "dst", dst, x.shape[0], y.shape[0])
	checkWritable(op, dst)
	if dev := deviceOn(op, dst, x, y); dev != CPU {
		return pairwiseOnDevice(op, dev, dst, x, y)
	}
	if !dst.IsContiguous() {
		return copyInto(op, dst, pairwiseInto(op, New(x.shape[0], y.shape[0]), x, y))
	}
	self := y == x
	x = detach(dst, x)
	if y = detach(dst, y); self {
		y = x
	}
	return pairwiseInto(op, dst, x, y)
}

// checkPairwise panics unless x and y are matrices with as many columns
// on one device, which it returns.
func checkPairwise(op string, x, y *Tensor) Device {
	checkNil(op, "x, y", x, y)
	if x.Dims() != 2 || y.Dims() != 2 || x.shape[1] != y.shape[1] {
		panic(fmt.Sprintf("tensor: %s: x of shape %v and y of shape %v (want [n d] and [m d])", op, x.shape, y.shape))
	}
	return sameDevice(op, nil, x, y)
}

// pairwiseOnDevice writes PairwiseSqDist(x, y) into dst, all three on
// dev, composing the device's families (PairwiseSqDist's comment). dst is
// written once x and y have been read, so it may overlap them.
func pairwiseOnDevice(op string, dev Device, dst, x, y *Tensor) *Tensor {
	self := y == x
	n, m := x.shape[0], y.shape[0]
	if n == 0 || m == 0 {
		return dst
	}
	c := Mean(x, true, 0) // [1 d]
	if !self {
		w := float32(n) / float32(n+m)
		c = AddInto(c, ScaleInto(c, c, w), Scale(Mean(y, true, 0), 1-w))
	}
	center := func(t *Tensor) (tc, norms *Tensor) {
		tc = Sub(t, c)
		return tc, Sum(Mul(tc, tc), true, 1) // [rows 1]
	}
	xc, nx := center(x)
	yc, ny := xc, nx
	if !self {
		yc, ny = center(y)
	}
	g := MatMul(xc, yc.T())
	ScaleInto(g, g, -2)
	AddInto(g, g, nx)
	AddInto(g, g, ny.Reshape(1, m))
	if !self {
		return ReLUInto(dst, g)
	}
	// (D + Dᵀ)/2 into the first n² elements of a buffer of n(n+1), whose
	// [n, n+1] view has the diagonal as its first column.
	buf := result(op, dev, []int{n * (n + 1)}, x, y)
	d := buf.Slice(0, 0, n*n, 1).Reshape(n, n)
	ReLUInto(g, g)
	ScaleInto(d, AddInto(d, g, g.T()), 0.5)
	Fill(buf.Reshape(n, n+1).Slice(1, 0, 1, 1), 0)
	return CopyInto(dst, d)
}

// pairwiseInto writes PairwiseSqDist(x, y) into out, a contiguous host
// [n, m] tensor not overlapping x or y.
func pairwiseInto(op string, out, x, y *Tensor) *Tensor {
	self := y == x
	n, m, d := x.shape[0], y.shape[0], x.shape[1]
	if n == 0 || m == 0 {
		return out
	}
	// The mean of all the rows, in float64.
	mean := make([]float64, d)
	rows := n + m
	addRows := func(t *Tensor) {
		c := t.Contiguous().Data()
		for i := range t.shape[0] {
			for k, v := range c[i*d : (i+1)*d] {
				mean[k] += float64(v)
			}
		}
	}
	addRows(x)
	if !self {
		addRows(y)
	} else {
		rows = n
	}
	c := make([]float32, d)
	for k := range mean {
		c[k] = float32(mean[k] / float64(rows))
	}
	center := func(t *Tensor) (*Tensor, []float64) {
		r := t.Clone()
		rd := r.Data()
		norms := make([]float64, t.shape[0])
		for i := range norms {
			row := rd[i*d : (i+1)*d]
			simd.Sub(row, row, c)
			var s float64
			for _, v := range row {
				s += float64(v) * float64(v)
			}
			norms[i] = s
		}
		return r, norms
	}
	xc, nx := center(x)
	yc, ny := xc, nx
	if !self {
		yc, ny = center(y)
	}
	MatMulInto(out, xc, yc.T())
	o := out.Data()
	for i := range n {
		row := o[i*m : (i+1)*m]
		if self {
			for j := range i {
				row[j] = o[j*m+i] // the upper triangle's, done
			}
			row[i] = 0
			for j := i + 1; j < m; j++ {
				row[j] = float32(max(0, nx[i]+ny[j]-2*float64(row[j])))
			}
			continue
		}
		for j := range row {
			row[j] = float32(max(0, nx[i]+ny[j]-2*float64(row[j])))
		}
	}
	return out
}

// PairwiseSqDistGrad returns the gradients of Σ g·D, D =
// PairwiseSqDist(x, y), to x and y:
//
//	dx[i] = 2(Σⱼ g[i, j]·x[i] - Σⱼ g[i, j]·y[j]) = 2(rowsum(g)·x - g·y)
//	dy[j] = 2(Σᵢ g[i, j]·y[j] - Σᵢ g[i, j]·x[i]) = 2(colsum(g)·y - gᵀ·x)
//
// the gradient of the exact distance (the clamp at 0 and the zero
// diagonal only undo rounding). When y is x, the whole gradient of x is
// dx + dy. On a device it composes MatMul, Sum, Mul, Scale and Add there,
// in float32 (within a few ulps of 2(|rowsum(g)|·|x| + |g|·|y|) of the
// host's, the GEMM summing in the device's order). It has
// PairwiseSqDist's panics and one for a g not of shape [n, m].
func PairwiseSqDistGrad(g, x, y *Tensor) (dx, dy *Tensor) {
	const op = "PairwiseSqDistGrad"
	dev := checkPairwiseGrad(op, g, x, y)
	return pairwiseGradInto(dev, result(op, dev, x.shape, g, x, y), result(op, dev, y.shape, g, x, y), g, x, y)
}

// PairwiseSqDistGradInto sets dx and dy, tensors of x's and y's shapes
// on their device (either may be nil: not computed), to PairwiseSqDistGrad(g, x,
// y) and returns them (a strided one through a contiguous temporary; the
// kernel's scratch is two vectors of sums). dx and dy must not overlap g,
// x, y or each other: that panics.
func PairwiseSqDistGradInto(dx, dy, g, x, y *Tensor) (*Tensor, *Tensor) {
	const op = "PairwiseSqDistGradInto"
	dev := checkPairwiseGrad(op, g, x, y)
	for _, c := range []struct {
		name        string
		d, t, other *Tensor
	}{{"dx", dx, x, dy}, {"dy", dy, y, dx}} {
		if c.d == nil {
			continue
		}
		checkSameShapeAs(op, c.name, c.d, c.t)
		if deviceOn(op, c.d, g, x, y) != dev {
			panic(mixed(op, dev, []*Tensor{c.d, g, x, y}))
		}
		checkWritable(op, c.d)
		for _, o := range []*Tensor{g, x, y, c.other} {
			if o != nil && overlaps(c.d, o) {
				panic(fmt.Sprintf("tensor: %s: %s of shape %v overlaps another operand", op, c.name, c.d.shape))
			}
		}
	}
	return pairwiseGradInto(dev, dx, dy, g, x, y)
}

// checkPairwiseGrad panics unless g, x and y are [n m], [n d] and [m d]
// on one device, which it returns.
func checkPairwiseGrad(op string, g, x, y *Tensor) Device {
	checkNil(op, "g", g)
	checkNil(op, "x", x)
	checkNil(op, "y", y)
	if x.Dims() != 2 || y.Dims() != 2 || x.shape[1] != y.shape[1] || g.Dims() != 2 || g.shape[0] != x.shape[0] || g.shape[1] != y.shape[0] {
		panic(fmt.Sprintf("tensor: %s: g of shape %v, x %v, y %v (want [n m], [n d], [m d])", op, g.shape, x.shape, y.shape))
	}
	return sameDevice(op, nil, g, x, y)
}

// pairwiseGradInto writes the gradients into dx and dy (nil: skipped),
// through contiguous temporaries where they are strided; on a device
// (dev) by its families.
func pairwiseGradInto(dev Device, dx, dy, g, x, y *Tensor) (*Tensor, *Tensor) {
	if dev != CPU {
		// 2(sums·a - gm·b) into d, sums [rows 1].
		grad := func(d, gm, a, b, sums *Tensor) {
			t := Mul(a, sums)
			ScaleInto(t, t, 2)
			MatMulInto(d, gm, b)
			AddInto(d, ScaleInto(d, d, -2), t)
		}
		if dx != nil {
			grad(dx, g, x, y, Sum(g, true, 1))
		}
		if dy != nil {
			grad(dy, g.T(), y, x, Sum(g, true, 0).T())
		}
		return dx, dy
	}
	// 2(sums[i]·a[i] - (gm·b)[i]), into d.
	grad := func(d, gm, a, b, sums *Tensor) {
		out := target(d)
		MatMulInto(out, gm, b)
		od, ad, sd := out.Data(), a.Contiguous().Data(), sums.Contiguous().Data()
		k := a.shape[1]
		for i, s := range sd {
			row := od[i*k : (i+1)*k]
			simd.Scale(row, row, -2)
			simd.Axpy(row, 2*s, ad[i*k:(i+1)*k])
		}
		finish(d, out)
	}
	if dx != nil {
		grad(dx, g, x, y, Sum(g, false, 1))
	}
	if dy != nil {
		grad(dy, g.T(), y, x, Sum(g, false, 0))
	}
	return dx, dy
}

// RBFKernel returns the Gaussian (RBF) kernel matrix K[i, j] =
// exp(-gamma·‖x[i] - y[j]‖²) between the rows of x [n, d] and y [m, d]
// (scikit-learn's rbf_kernel; gamma = 1/(2σ²)): PairwiseSqDist, then
// Scale and Exp in place, so y = x gives a symmetric matrix with
// an exact 1 on the diagonal. Its accuracy is PairwiseSqDist's error
// times gamma·K, plus simd.Exp's. PairwiseSqDist's panics apply.
func RBFKernel(x, y *Tensor, gamma float32) *Tensor {
	k := PairwiseSqDist(x, y)
	return ExpInto(k, ScaleInto(k, k, -gamma))
}

// RBFKernelInto sets dst, an [n, m] tensor on x's and y's device, to RBFKernel(x, y, gamma)
// and returns dst, with PairwiseSqDistInto's rules.
func RBFKernelInto(dst, x, y *Tensor, gamma float32) *Tensor {
	k := pairwiseDstInto("RBFKernelInto", dst, x, y)
	return ExpInto(k, ScaleInto(k, k, -gamma))
}
