package tensor

import (
	"fmt"

	"github.com/lanesgo/lanes/dispatch"
)

// Conv2DMaxPoolShape returns the shape of Conv2DMaxPoolInto's outputs:
// Pool2DShape of Conv2D(x, w, ·, p)'s output. It panics as Conv2D and
// MaxPool2D do when the shapes and parameters do not agree.
func Conv2DMaxPoolShape(x, w *Tensor, p ConvParams, pool PoolParams) [4]int {
	const op = "Conv2DMaxPoolShape"
	checkNil(op, "x, w", x, w)
	g := planConv(op, x.shape, w.shape, p)
	ys := g.outShape()
	return planPool(op, ys[:], pool).shape
}

// Conv2DMaxPoolInto sets dst to MaxPool2D(Conv2D(x, w, bias, p), pool)
// and indices (when not nil) to the pooling's indices, and returns them:
// bit for bit what Conv2DInto into a tensor y and then
// MaxPool2DInto(dst, indices, y, pool) give, p.ReLU included.
//
// Where Conv2DMaxPoolFuses reports true (on the host, 2×2 pooling at
// stride 2 of a convolution whose im2col path unrolls whole images), the
// convolution's output is never stored: each image's product is pooled
// while it is in cache, which saves writing the output to memory and
// reading it back (for FashionCNN's first layer, 6.4 MB each way a batch
// of 64). Otherwise, and on a device, it runs the two operations with an
// output of its own in between (allocated at each call).
//
// dst and indices must not overlap each other; an operand that overlaps
// either is copied first. It panics as Conv2DInto and MaxPool2DInto do.
func Conv2DMaxPoolInto(dst, indices, x, w, bias *Tensor, p ConvParams, pool PoolParams) (*Tensor, *Tensor) {
	const op = "Conv2DMaxPoolInto"
	checkNil(op, "dst, x, w", dst, x, w)
	g := planConv(op, x.shape, w.shape, p)
	checkBias(op, &g, bias)
	ys := g.outShape()
	pg := planPool(op, ys[:], pool)
	if indices != nil {
		pg.checkIndexable(op, ys[:])
		checkOut(op, indices, pg.shape, x, w)
		checkWritable(op, indices)
		if overlaps(dst, indices) {
			panic(fmt.Sprintf("tensor: %s: dst %v and indices %v overlap", op, dst.shape, indices.shape))
		}
	}
	checkOut(op, dst, pg.shape, x, w)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, x, w, bias)
	if indices != nil {
		deviceOn(op, indices, x, w, bias)
	}
	if !g.fuses(&pg, p, dev, x, w) {
		fs := ys // escapes in this branch alone
		y := result(op, dev, fs[:], x, w, bias)
		Conv2DInto(y, x, w, bias, p)
		return MaxPool2DInto(dst, indices, y, pool)
	}
	for _, t := range [2]*Tensor{dst, indices} {
		if t != nil {
			x, w = detach(t, x), detach(t, w)
			if bias != nil {
				bias = detach(t, bias)
			}
		}
	}
	j := newConvJob(&g, forwardIm2col)
	j.x, j.w = x.hostData(op), w.hostData(op)
	if bias != nil {
		j.bias = bias.hostData(op)
	}
	j.pooling, j.pool = true, pg
	var idx *Tensor
	if indices != nil {
		// The indices through a contiguous copy too, written back once
		// the pooled output has been.
		idx = target(indices)
		j.pidx = idx.hostData(op)
	}
	j.runInto(op, dst, &j.pooled)
	if indices != nil {
		finish(indices, idx)
	}
	return dst, indices
}

// Conv2DMaxPoolBackwardInto sets dx and dw (either may be nil to skip it)
// to the gradients of Conv2D(x, w, ·, p)'s input and weight when its
// output was max-pooled by pool with the given indices and dp is the
// gradient of the pooled output: bit for bit what
// Conv2DBackwardInputInto and Conv2DBackwardWeightInto give for dy =
// MaxPool2DBackward(dp, indices, ·, pool). To backpropagate through a
// ReLU before the pooling (p.ReLU), mask dp by pooled > 0 first: the
// ReLU passes no gradient where a window's maximum is 0. The bias
// gradient is the sum of (that masked) dp over every axis but 1.
//
// On the host, where Conv2DMaxPoolInto fuses the two, dy is never stored
// either: each item's dy is routed from dp as the products need it.
// Indices that name no element of their plane panic, naming the op
// (dx and dw may then be partly written). dx and dw must not overlap
// each other; an operand that overlaps either is copied first.
func Conv2DMaxPoolBackwardInto(dx, dw, dp, indices, x, w *Tensor, p ConvParams, pool PoolParams) {
	const op = "Conv2DMaxPoolBackward"
	checkNil(op, "dp, indices, x, w", dp, indices, x, w)
	g := planConv(op, x.shape, w.shape, p)
	ys := g.outShape()
	pg := checkPoolGradient(op, ys[:], pool, dp, indices)
	if dx != nil {
		checkOut(op, dx, [4]int(x.shape), dp, w)
		checkWritable(op, dx)
	}
	if dw != nil {
		checkOut(op, dw, [4]int(w.shape), dp, x)
		checkWritable(op, dw)
	}
	if dx != nil && dw != nil && overlaps(dx, dw) {
		panic(fmt.Sprintf("tensor: %s: dx %v and dw %v overlap", op, dx.shape, dw.shape))
	}
	dev := deviceOn(op, nil, dp, indices, x, w)
	for _, t := range [2]*Tensor{dx, dw} {
		if t != nil {
			deviceOn(op, t, dp, indices, x, w)
		}
	}
	if !g.fuses(&pg, p, dev, x, w) {
		fs := ys // escapes in this branch alone
		dy := result(op, dev, fs[:], dp, indices)
		MaxPool2DBackwardInto(dy, dp, indices, pool)
		if dx != nil {
			Conv2DBackwardInputInto(dx, dy, w, p)
		}
		if dw != nil {
			Conv2DBackwardWeightInto(dw, dy, x, p)
		}
		return
	}
	for _, t := range [2]*Tensor{dx, dw} {
		if t != nil {
			dp, indices, x, w = detach(t, dp), detach(t, indices), detach(t, x), detach(t, w)
		}
	}
	for _, d := range [2]*Tensor{dx, dw} {
		if d == nil {
			continue
		}
		j := newConvJob(&g, backwardWeight)
		j.x, j.w, j.pooled, j.pidx = x.hostData(op), w.hostData(op), dp.hostData(op), indices.hostData(op)
		j.pooling, j.pool = true, pg
		into := &j.dw
		if d == dx {
			j.phase, into = backwardInput, &j.x
		}
		if bad := j.runInto(op, d, into); bad != nil {
			panic("tensor: " + op + ": " + pg.indexErr(*bad).Error())
		}
	}
}

// Conv2DMaxPoolFuses reports whether Conv2DMaxPoolInto and
// Conv2DMaxPoolBackwardInto run fused for these operands, never storing
// the convolution's output or its gradient: on the host (with no offload
// device taking the convolution), for simd's 2×2 max pooling at stride 2
// of a convolution on the im2col path that unrolls whole images an item
// at a time. That is, with k = C/groups·kh·kw and p = OH·OW an image: k·p
// at most 32K (one channel 3×3: up to about 3,600 output pixels; 16
// channels: about 224), or at most 128K for p under 512 (images grouped
// side by side); zero padding (PadConstant), and not the paths of 1×1
// stride-1 unpadded or depthwise convolutions or of stride-1 ones with 32
// or more input channels a group whose images are not grouped (the
// shifted path). It panics as Conv2DMaxPoolShape does.
func Conv2DMaxPoolFuses(x, w *Tensor, p ConvParams, pool PoolParams) bool {
	const op = "Conv2DMaxPoolFuses"
	checkNil(op, "x, w", x, w)
	g := planConv(op, x.shape, w.shape, p)
	ys := g.outShape()
	pg := planPool(op, ys[:], pool)
	return g.fuses(&pg, p, deviceOn(op, nil, x, w), x, w)
}

// fuses is Conv2DMaxPoolFuses for operands on dev.
func (g *convGeom) fuses(pg *poolGeom, p ConvParams, dev Device, x, w *Tensor) bool {
	return dev == CPU && g.poolFused(pg, p) && offloadTo(g.work(x, w)) == nil
}

// poolFused reports whether the convolution's host path can run fused
// with the pooling pg of its output: simd's 2×2 max pooling, of whole
// images that the im2col path unrolls an item at a time, with zeros for
// padding.
func (g *convGeom) poolFused(pg *poolGeom, p ConvParams) bool {
	return pg.is2x2() && p.PaddingMode == PadConstant && !g.shifted && !g.pointwise && g.chunks == 1 && !g.isDepthwise()
}

// work is the convolution as the offload policy weighs it.
func (g *convGeom) work(x, w *Tensor) dispatch.Work {
	ys := g.outShape()
	return dispatch.Work{Op: dispatch.OpConv2D, FLOPs: 2 * float64(g.n) * float64(g.cout) * float64(g.p) * float64(g.k),
		Bytes: 4 * float64(x.Len()+w.Len()+ys[0]*ys[1]*ys[2]*ys[3])}
}

// Conv2DMaxPool returns MaxPool2D(Conv2D(x, w, bias, p), pool): the
// pooled output and its indices, as Conv2DMaxPoolInto computes them.
func Conv2DMaxPool(x, w, bias *Tensor, p ConvParams, pool PoolParams) (out, indices *Tensor) {
	const op = "Conv2DMaxPool"
	checkNil(op, "x, w", x, w)
	s := Conv2DMaxPoolShape(x, w, p, pool)
	dev := deviceOn(op, nil, x, w, bias)
	out, indices = result(op, dev, s[:], x, w, bias), result(op, dev, s[:], x, w, bias)
	return Conv2DMaxPoolInto(out, indices, x, w, bias, p, pool)
}
