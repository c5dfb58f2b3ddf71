package tensor

import "fmt"

// Conv1DParams configures a 1-D convolution; zero values mean stride 1,
// no padding, dilation 1, one group, zeros padding.
type Conv1DParams struct {
	Stride, Padding, Dilation, Groups int
	PaddingMode                       PadMode // as ConvParams.PaddingMode
}

// conv2D returns the parameters of the 2-D convolution of height 1 that
// computes the 1-D one.
func (p Conv1DParams) conv2D() ConvParams {
	return ConvParams{Stride: [2]int{1, p.Stride}, Padding: [2]int{0, p.Padding}, Dilation: [2]int{1, p.Dilation},
		Groups: p.Groups, PaddingMode: p.PaddingMode}
}

// plan1D checks a 1-D convolution's x [N, C, L] and w [Cout, C/groups, k]
// shapes (as Conv2D checks them, with op's name) and returns the output
// shape [N, Cout, OL].
func plan1D(op string, xs, ws []int, p Conv1DParams) [3]int {
	if len(xs) != 3 || len(ws) != 3 {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: want input [N, C, L] and weight [Cout, C/groups, k]", op, xs, ws))
	}
	g := planConv(op, []int{xs[0], xs[1], 1, xs[2]}, []int{ws[0], ws[1], 1, ws[2]}, p.conv2D())
	return [3]int{g.n, g.cout, g.ow}
}

// Conv1D returns the cross-correlation of x [N, C, L] with w [Cout,
// C/groups, k], plus bias [Cout] when bias is not nil, as PyTorch's
// conv1d: out[n, o, j] = bias[o] + Σ_{c,v} x[n, g·C/groups + c, j·s - pad +
// v·d] · w[o, c, v], a result [N, Cout, OL] with OL = (L + 2·pad - d·(k-1)
// - 1)/s + 1. It is Conv2D of height 1 on views of its operands (the
// depthwise path included), and runs and panics as Conv2D does.
func Conv1D(x, w, bias *Tensor, p Conv1DParams) *Tensor {
	checkNil("Conv1D", "x, w", x, w)
	plan1D("Conv1D", x.shape, w.shape, p)
	return Conv2D(x.Unsqueeze(2), w.Unsqueeze(2), bias, p.conv2D()).Squeeze(2)
}

// Conv1DInto sets dst to Conv1D(x, w, bias, p) and returns dst.
func Conv1DInto(dst, x, w, bias *Tensor, p Conv1DParams) *Tensor {
	checkNil("Conv1DInto", "dst, x, w", dst, x, w)
	if s := plan1D("Conv1DInto", x.shape, w.shape, p); dst.Dims() != 3 || dst.shape[0] != s[0] || dst.shape[1] != s[1] || dst.shape[2] != s[2] {
		panic(fmt.Sprintf("tensor: Conv1DInto: shapes %v and %v give output %v, got %v", x.shape, w.shape, s, dst.shape))
	}
	Conv2DInto(dst.Unsqueeze(2), x.Unsqueeze(2), w.Unsqueeze(2), bias, p.conv2D())
	return dst
}

// Conv1DShape returns the output shape [N, Cout, OL] of Conv1D(x, w, ·, p).
func Conv1DShape(x, w *Tensor, p Conv1DParams) [3]int {
	checkNil("Conv1DShape", "x, w", x, w)
	return plan1D("Conv1DShape", x.shape, w.shape, p)
}

// Conv1DBackwardInput returns the gradient of Conv1D(x, w, ·, p) with
// respect to x, of shape xShape [N, C, L], given dy (Conv2DBackwardInput
// of height 1).
func Conv1DBackwardInput(dy, w *Tensor, xShape []int, p Conv1DParams) *Tensor {
	checkNil("Conv1DBackwardInput", "dy, w", dy, w)
	plan1D("Conv1DBackwardInput", xShape, w.shape, p)
	return Conv1DBackwardInputInto(result("Conv1DBackwardInput", deviceOn("Conv1DBackwardInput", nil, dy, w), xShape, dy, w), dy, w, p)
}

// Conv1DBackwardInputInto sets dx to the input gradient (see
// Conv1DBackwardInput) and returns dx.
func Conv1DBackwardInputInto(dx, dy, w *Tensor, p Conv1DParams) *Tensor {
	checkNil("Conv1DBackwardInput", "dx, dy, w", dx, dy, w)
	check1DOut("Conv1DBackwardInput", dy, plan1D("Conv1DBackwardInput", dx.shape, w.shape, p))
	Conv2DBackwardInputInto(dx.Unsqueeze(2), dy.Unsqueeze(2), w.Unsqueeze(2), p.conv2D())
	return dx
}

// Conv1DBackwardWeight returns the gradient of Conv1D(x, w, ·, p) with
// respect to w, of shape wShape [Cout, C/groups, k], given x and dy. The
// bias gradient is Sum(dy, false, 0, 2).
func Conv1DBackwardWeight(dy, x *Tensor, wShape []int, p Conv1DParams) *Tensor {
	checkNil("Conv1DBackwardWeight", "dy, x", dy, x)
	plan1D("Conv1DBackwardWeight", x.shape, wShape, p)
	return Conv1DBackwardWeightInto(result("Conv1DBackwardWeight", deviceOn("Conv1DBackwardWeight", nil, dy, x), wShape, dy, x), dy, x, p)
}

// Conv1DBackwardWeightInto sets dw to the weight gradient (see
// Conv1DBackwardWeight) and returns dw.
func Conv1DBackwardWeightInto(dw, dy, x *Tensor, p Conv1DParams) *Tensor {
	checkNil("Conv1DBackwardWeight", "dw, dy, x", dw, dy, x)
	check1DOut("Conv1DBackwardWeight", dy, plan1D("Conv1DBackwardWeight", x.shape, dw.shape, p))
	Conv2DBackwardWeightInto(dw.Unsqueeze(2), dy.Unsqueeze(2), x.Unsqueeze(2), p.conv2D())
	return dw
}

func check1DOut(op string, dy *Tensor, want [3]int) {
	checkShapeIs(op, "dy", dy, want[:]...)
}
