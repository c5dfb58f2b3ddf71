package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/lanesgo/lanes/internal/shape"
)

// ConvTransposeParams configures a 2-D transposed convolution, as
// PyTorch's conv_transpose2d. The pairs are (height, width); zero values
// mean the defaults: stride 1, no padding, no output padding, dilation 1,
// one group. Padding crops that many rows and columns from each side of
// the full result (see ConvTranspose2D for the output size); OutputPadding
// adds rows and columns at the bottom and right, and must be smaller than
// the stride or the dilation of its axis (PyTorch's rule).
type ConvTransposeParams struct {
	Stride        [2]int
	Padding       [2]int
	OutputPadding [2]int
	Dilation      [2]int
	Groups        int
}

// conv returns the parameters of the convolution whose input gradient
// this transposed convolution is.
func (p ConvTransposeParams) conv() ConvParams {
	return ConvParams{Stride: p.Stride, Padding: p.Padding, Dilation: p.Dilation, Groups: p.Groups}
}

// convTransposeGeom is a transposed convolution after its shape checks:
// its output shape, and how many rows and columns (ext) the convolution
// it is the input gradient of has beyond x's, which happens when the
// output padding is at least the stride (then x is extended with zeros).
type convTransposeGeom struct {
	out  [4]int
	ext  [2]int
	conv ConvParams
}

func planConvTranspose(op string, xs, ws []int, p ConvTransposeParams) convTransposeGeom {
	if len(xs) != 4 || len(ws) != 4 {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: want input [N, Cin, H, W] and weight [Cin, Cout/groups, kh, kw]", op, xs, ws))
	}
	def := func(v int) int {
		if v == 0 {
			return 1
		}
		return v
	}
	s := [2]int{def(p.Stride[0]), def(p.Stride[1])}
	d := [2]int{def(p.Dilation[0]), def(p.Dilation[1])}
	groups := def(p.Groups)
	bad := groups < 1
	for a := range 2 {
		bad = bad || s[a] < 1 || d[a] < 1 || p.Padding[a] < 0 || p.OutputPadding[a] < 0 ||
			p.OutputPadding[a] >= max(s[a], d[a])
	}
	if bad {
		panic(fmt.Sprintf("tensor: %s: invalid parameters %+v (output padding must be smaller than the stride or the dilation)", op, p))
	}
	if xs[1] != ws[0] || ws[0]%groups != 0 {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: %d input channels, %d groups and weight [Cin, Cout/groups, kh, kw] do not agree", op, xs, ws, xs[1], groups))
	}
	if ws[2] < 1 || ws[3] < 1 {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: empty kernel", op, xs, ws))
	}
	g := convTransposeGeom{conv: p.conv()}
	g.out[0], g.out[1] = xs[0], satMul(ws[1], groups)
	for a := range 2 {
		// (in-1)·s - 2·pad + d·(k-1) + outpad + 1, saturating: a size
		// that saturates fails the MaxElems check below.
		in, k := xs[2+a], ws[2+a]
		ext, ok := kernelExtent(k, d[a])
		if !ok || in < 1 {
			panic(fmt.Sprintf("tensor: %s: shapes %v and %v with %+v: an empty input plane or a kernel extent that overflows int", op, xs, ws, p))
		}
		o := satAdd(satAdd(satMul(in-1, s[a]), ext-1), p.OutputPadding[a]+1) - 2*min(p.Padding[a], math.MaxInt/4)
		if o < 1 {
			panic(fmt.Sprintf("tensor: %s: shapes %v and %v with %+v give an output size %d < 1", op, xs, ws, p, o))
		}
		g.out[2+a] = o
	}
	if _, ok := shape.Size(g.out[:], MaxElems); !ok {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v with %+v give an output of shape %v: more than MaxElems = %d elements", op, xs, ws, p, g.out, MaxElems))
	}
	cg := planConv(op, g.out[:], ws, g.conv)
	g.ext = [2]int{cg.oh - xs[2], cg.ow - xs[3]}
	return g
}

// ConvTranspose2DShape returns the output shape [N, Cout, OH, OW] of
// ConvTranspose2D(x, w, ·, p), panicking as ConvTranspose2D does when x,
// w and p do not agree.
func ConvTranspose2DShape(x, w *Tensor, p ConvTransposeParams) [4]int {
	checkNil("ConvTranspose2DShape", "x, w", x, w)
	return planConvTranspose("ConvTranspose2DShape", x.shape, w.shape, p).out
}

// ConvTranspose2D returns the transposed convolution of x [N, Cin, H, W]
// with w [Cin, Cout/groups, kh, kw], plus bias [Cout] when bias is not
// nil, as PyTorch's conv_transpose2d: out[n, o, i·sh - ph + u·dh, j·sw -
// pw + v·dw] += x[n, c, i, j] · w[c, o mod (Cout/groups), u, v] for every
// input channel c of o's group, the positions outside the output dropped.
// The result is [N, Cout, OH, OW] with OH = (H-1)·sh - 2·ph + dh·(kh-1) +
// oph + 1 (likewise OW).
//
// It is the input gradient of Conv2D with the same stride, padding,
// dilation and groups (Conv2DBackwardInput with dy = x and the weight read
// as Conv2D's [Cout, C/groups, kh, kw]), so it runs where that does, with
// its error bound: each output is a sum of Sgemm dot products of length
// Cin/groups over the taps that reach it. When an output padding is at
// least the stride, x is first copied into a zero-extended tensor. The
// bias is added by AddInto.
func ConvTranspose2D(x, w, bias *Tensor, p ConvTransposeParams) *Tensor {
	const op = "ConvTranspose2D"
	checkNil(op, "x, w", x, w)
	g := planConvTranspose(op, x.shape, w.shape, p)
	dev := deviceOn(op, nil, x, w, bias)
	convOn(op, dev, nil, x, w, bias)
	dst := result(op, dev, g.out[:], x, w, bias)
	return convTransposeInto(op, &g, dst, x, w, bias)
}

// ConvTranspose2DInto sets dst to ConvTranspose2D(x, w, bias, p) and
// returns dst; operands overlapping dst are copied first.
func ConvTranspose2DInto(dst, x, w, bias *Tensor, p ConvTransposeParams) *Tensor {
	const op = "ConvTranspose2DInto"
	checkNil(op, "dst, x, w", dst, x, w)
	g := planConvTranspose(op, x.shape, w.shape, p)
	checkOut(op, dst, g.out, x, w)
	checkWritable(op, dst)
	if bias != nil {
		bias = detach(dst, bias)
	}
	return convTransposeInto(op, &g, dst, x, w, bias)
}

func convTransposeInto(op string, g *convTransposeGeom, dst, x, w, bias *Tensor) *Tensor {
	if bias != nil && !slices.Equal(bias.shape, []int{g.out[1]}) {
		panic(fmt.Sprintf("tensor: %s: bias shape %v, want [%d]", op, bias.shape, g.out[1]))
	}
	deviceOn(op, dst, x, w, bias)
	Conv2DBackwardInputInto(dst, g.extend(op, x), w, g.conv)
	if bias != nil {
		AddInto(dst, dst, bias.Reshape(g.out[1], 1, 1))
	}
	return dst
}

// extend returns x, or x copied into zeros of ext more rows and columns.
func (g *convTransposeGeom) extend(op string, x *Tensor) *Tensor {
	if g.ext == [2]int{} {
		return x
	}
	s := x.shape
	z := Fill(result(op, x.Device(), []int{s[0], s[1], s[2] + g.ext[0], s[3] + g.ext[1]}, x), 0)
	CopyInto(z.Slice(2, 0, s[2], 1).Slice(3, 0, s[3], 1), x)
	return z
}

// ConvTranspose2DBackwardInput returns the gradient of ConvTranspose2D(x,
// w, ·, p) with respect to x, for an input of shape xShape, given dy: the
// Conv2D of dy with w (cropped to xShape when an output padding is at
// least the stride), with Conv2D's error bound.
func ConvTranspose2DBackwardInput(dy, w *Tensor, xShape []int, p ConvTransposeParams) *Tensor {
	const op = "ConvTranspose2DBackwardInput"
	checkNil(op, "dy, w", dy, w)
	dev := deviceOn(op, nil, dy, w)
	convOn(op, dev, nil, dy, w)
	planConvTranspose(op, xShape, w.shape, p)
	return ConvTranspose2DBackwardInputInto(result(op, dev, xShape, dy, w), dy, w, p)
}

// ConvTranspose2DBackwardInputInto sets dx (x's shape) to the gradient
// with respect to the input (see ConvTranspose2DBackwardInput) and
// returns dx.
func ConvTranspose2DBackwardInputInto(dx, dy, w *Tensor, p ConvTransposeParams) *Tensor {
	const op = "ConvTranspose2DBackwardInput"
	checkNil(op, "dx, dy, w", dx, dy, w)
	g := planConvTranspose(op, dx.shape, w.shape, p)
	checkOut(op, dy, g.out, dx, w)
	checkWritable(op, dx)
	if g.ext == [2]int{} {
		return Conv2DInto(dx, dy, w, nil, g.conv)
	}
	full := Conv2D(dy, w, nil, g.conv)
	CopyInto(dx, full.Slice(2, 0, dx.shape[2], 1).Slice(3, 0, dx.shape[3], 1))
	return dx
}

// ConvTranspose2DBackwardWeight returns the gradient of ConvTranspose2D(x,
// w, ·, p) with respect to w, for a weight of shape wShape, given x and
// dy: Conv2DBackwardWeight with x as the output gradient and dy as the
// input, so each element is a Sgemm dot product of length N·H·W. The bias
// gradient is Sum(dy, false, 0, 2, 3).
func ConvTranspose2DBackwardWeight(dy, x *Tensor, wShape []int, p ConvTransposeParams) *Tensor {
	const op = "ConvTranspose2DBackwardWeight"
	checkNil(op, "dy, x", dy, x)
	dev := deviceOn(op, nil, dy, x)
	convOn(op, dev, nil, dy, x)
	planConvTranspose(op, x.shape, wShape, p)
	return ConvTranspose2DBackwardWeightInto(result(op, dev, wShape, dy, x), dy, x, p)
}

// ConvTranspose2DBackwardWeightInto sets dw to the gradient with respect
// to the weight (see ConvTranspose2DBackwardWeight) and returns dw.
func ConvTranspose2DBackwardWeightInto(dw, dy, x *Tensor, p ConvTransposeParams) *Tensor {
	const op = "ConvTranspose2DBackwardWeight"
	checkNil(op, "dw, dy, x", dw, dy, x)
	g := planConvTranspose(op, x.shape, dw.shape, p)
	checkOut(op, dy, g.out, x, dw)
	checkWritable(op, dw)
	return Conv2DBackwardWeightInto(dw, g.extend(op, x), dy, g.conv)
}
