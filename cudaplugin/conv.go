//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_conv_at(lanes_stream s, int cfg, LanesConv *c, uintptr_t x, uintptr_t w, uintptr_t bias, uintptr_t y, int gx, int gy, int gz) {
	c->x = (const float *)x;
	c->w = (const float *)w;
	c->bias = (const float *)bias;
	c->y = (float *)y;
	return lanes_conv2d(s, cfg, c, gx, gy, gz);
}

static int lanes_im2col_at(lanes_stream s, const LanesCols *c, uintptr_t x, uintptr_t col) {
	return lanes_im2col(s, c, (const float *)x, (float *)col);
}

static int lanes_col2im_at(lanes_stream s, const LanesCols *c, uintptr_t col, uintptr_t dx) {
	return lanes_col2im(s, c, (const float *)col, (float *)dx);
}
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/tensor"
)

// Conv2D implements tensor.ConvKernels: dst = tensor.Conv2D(x, w, bias,
// p), as MatMul for where it runs.
func (g *GPU) Conv2D(dst, x, w, bias *tensor.Tensor, p tensor.ConvParams) error {
	if !g.opened() {
		return errNilGPU
	}
	cs := planConv("Conv2D", x.Shape(), w.Shape(), p.Stride, p.Padding, p.Dilation, p.Groups)
	if want := []int{cs.n, cs.cout, cs.oh, cs.ow}; !slices.Equal(dst.Shape(), want) {
		panic(fmt.Sprintf("cudaplugin: Conv2D: shapes %v and %v give output %v, got %v", x.Shape(), w.Shape(), want, dst.Shape()))
	}
	if bias != nil && (bias.Dims() != 1 || bias.Dim(0) != cs.cout) {
		panic(fmt.Sprintf("cudaplugin: Conv2D: bias shape %v for %d output channels", bias.Shape(), cs.cout))
	}
	if !cs.fitsInt32() {
		return fmt.Errorf("cudaplugin: Conv2D: shapes %v and %v too large for the kernel's 32-bit counts", x.Shape(), w.Shape())
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if !anyDevice(dst, x, w, bias) {
		in := [][]float32{x.Data(), w.Data()}
		if bias != nil {
			in = append(in, bias.Data())
		}
		return g.offload(dst, in, func(st C.lanes_stream, ptrs []uintptr, out uintptr, scratch scratchFunc) error {
			var bp uintptr
			if bias != nil {
				bp = ptrs[2]
			}
			return g.conv(st, cs, p.ReLU, ptrs[0], ptrs[1], bp, out, scratch)
		})
	}
	c := &call{g: g}
	defer c.release()
	var ops []operand // x, w and bias unless nil
	for _, t := range []*tensor.Tensor{x, w, bias} {
		if t == nil {
			continue
		}
		o, err := c.input("Conv2D", t)
		if err == nil {
			o, err = c.contiguous(o)
		}
		if err != nil {
			return err
		}
		ops = append(ops, o)
	}
	out, err := c.output("Conv2D", dst, ops...)
	if err != nil {
		return err
	}
	var bp uintptr
	if bias != nil {
		bp = ops[2].ptr
	}
	if err := g.conv(g.stream, cs, p.ReLU, ops[0].ptr, ops[1].ptr, bp, out.ptr, c.scratch); err != nil {
		return err
	}
	return c.finish(out)
}

// Conv2DBackwardInput implements tensor.ConvKernels: dx = the gradient
// of Conv2D(x, w, ·, p) with respect to x, given dy. Per chunk of images
// (see convWorkspace) and group, the im2col-shaped gradient is one SGEMM,
// dcol = wᵀ·dy (dy transposed to channels × pixels first), and col2im
// sums each element of dx from it in tap order: no atomics, the same
// result every run (an image in chunks of rows: its rows that two chunks
// read get the second's sum added, in order). dy may be any view and dx
// any view (written through a temporary unless contiguous and apart from
// the operands); host operands are uploaded and a host dx downloaded
// (package tensor itself does not send host gradients here).
func (g *GPU) Conv2DBackwardInput(dx, dy, w *tensor.Tensor, p tensor.ConvParams) error {
	return g.convGradient("Conv2DBackwardInput", dx, dy, w, dx.Shape(), w.Shape(), p, func(c *call, cg convGrad, dyo, wo operand, out target) error {
		wo, err := c.contiguous(wo) // the SGEMM reads w as one matrix
		if err != nil {
			return err
		}
		cs := cg.cs
		opg, rows := cs.cout/cs.gr, cg.rows/cs.gr
		return cg.chunks(c, dyo, func(k chunk, dyT, col uintptr) error {
			l := k.cols(cs.ow)
			var gm C.LanesGemm
			gm.m, gm.n, gm.k = C.int(rows), C.int(l), C.int(opg)
			gm.alpha, gm.beta = 1, 0
			gm.lda, gm.ldb, gm.ldc = C.longlong(rows), C.longlong(l), C.longlong(l)
			gm.stride_a, gm.stride_b, gm.stride_c = C.longlong(opg*rows), C.longlong(opg*l), C.longlong(rows*l)
			gm.trans_a, gm.trans_b = 1, 0
			gm.vec_a = cbool(wo.aligned() && vectorizable(0, rows, opg*rows))
			gm.vec_b = cbool(dyT%16 == 0 && vectorizable(0, l, opg*l))
			if err := g.sgemm(g.stream, gm, wo.ptr, dyT, col, cs.gr, cg.partial); err != nil {
				return err
			}
			lc := cg.cols(k, nil)
			dx := out.ptr + uintptr(k.img0*cs.c*cs.h*cs.w)*4
			lc.iy0, lc.ihc = 0, C.int(cs.h)
			if k.ohc < cs.oh {
				// Rows of one image: the chunks add to the input rows that
				// their output rows read (neighbours' overlap when the kernel
				// is taller than the stride), the first zeroing the image.
				if k.oy0 == 0 {
					if err := check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(dx), C.size_t(4*cs.c*cs.h*cs.w), g.stream)); err != nil {
						return err
					}
				}
				lo := max(0, k.oy0*cs.sh-cs.ph)
				hi := min(cs.h, (k.oy0+k.ohc-1)*cs.sh-cs.ph+(cs.kh-1)*cs.dh+1)
				if hi <= lo {
					return nil // the chunk's windows lie in the padding
				}
				lc.iy0, lc.ihc, lc.acc = C.int(lo), C.int(hi-lo), 1
			}
			return check("lanes_col2im", C.lanes_col2im_at(g.stream, &lc, C.uintptr_t(col), C.uintptr_t(dx)))
		})
	})
}

// Conv2DBackwardWeight implements tensor.ConvKernels: dw = the gradient
// of Conv2D(x, w, ·, p) with respect to w, given dy. Per chunk of images
// (see convWorkspace), im2col stores the chunk's matrix (from any view of
// x) and one SGEMM per group adds dy·colᵀ to dw (dy transposed to
// channels × pixels first; the first chunk sets dw): the sum over the
// batch runs chunk after chunk, in order. A zero batch gives zeros.
// Operands and dw as for Conv2DBackwardInput.
func (g *GPU) Conv2DBackwardWeight(dw, dy, x *tensor.Tensor, p tensor.ConvParams) error {
	return g.convGradient("Conv2DBackwardWeight", dw, dy, x, x.Shape(), dw.Shape(), p, func(c *call, cg convGrad, dyo, xo operand, out target) error {
		cs := cg.cs
		if cs.n == 0 {
			return check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(out.ptr), C.size_t(4*dw.Len()), g.stream))
		}
		opg, rows := cs.cout/cs.gr, cg.rows/cs.gr
		return cg.chunks(c, dyo, func(k chunk, dyT, col uintptr) error {
			lc := cg.cols(k, xo.strides)
			if err := check("lanes_im2col", C.lanes_im2col_at(g.stream, &lc, C.uintptr_t(xo.ptr+uintptr(k.img0*xo.strides[0]*4)), C.uintptr_t(col))); err != nil {
				return err
			}
			l := k.cols(cs.ow)
			var gm C.LanesGemm
			gm.m, gm.n, gm.k = C.int(opg), C.int(rows), C.int(l)
			gm.alpha, gm.beta = 1, 0
			if k.img0 > 0 || k.oy0 > 0 {
				gm.beta = 1
			}
			gm.lda, gm.ldb, gm.ldc = C.longlong(l), C.longlong(l), C.longlong(rows)
			gm.stride_a, gm.stride_b, gm.stride_c = C.longlong(opg*l), C.longlong(rows*l), C.longlong(opg*rows)
			gm.trans_a, gm.trans_b = 0, 1
			gm.vec_a = cbool(dyT%16 == 0 && vectorizable(0, l, opg*l))
			gm.vec_b = cbool(col%16 == 0 && vectorizable(0, l, rows*l))
			return g.sgemm(g.stream, gm, dyT, col, out.ptr, cs.gr, cg.partial)
		})
	})
}

// convGradient runs a convolution gradient into dst (dx or dw) from dy
// and other (w or x), for input and weight shapes xs and ws: it plans
// it, uploads the operands and gives body the target, whose result it
// then delivers to dst.
func (g *GPU) convGradient(op string, dst, dy, other *tensor.Tensor, xs, ws []int, p tensor.ConvParams, body func(c *call, cg convGrad, dyo, oo operand, out target) error) error {
	if !g.opened() {
		return errNilGPU
	}
	cg, err := planGrad(op, xs, ws, dy, p)
	if err != nil {
		return err
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	c := &call{g: g}
	defer c.release()
	dyo, err := c.input(op, dy)
	if err != nil {
		return err
	}
	oo, err := c.input(op, other)
	if err != nil {
		return err
	}
	out, err := c.output(op, dst, dyo, oo)
	if err != nil {
		return err
	}
	if err := body(c, cg, dyo, oo, out); err != nil {
		return err
	}
	return c.finish(out)
}

// convWorkspace is the most floats of workspace a convolution gradient
// takes at a time for the im2col matrix and dy transposed (32 Mi floats,
// 128 MiB): the batch goes through in chunks of as many images as fit,
// and an image whose matrices alone are larger in chunks of its output
// rows (one row at least). A variable so that tests can make the chunks
// small.
var convWorkspace = 32 << 20

// convGrad is the plan of a convolution gradient.
type convGrad struct {
	cs      convShape
	rows    int         // rows of the im2col matrix: c·kh·kw
	imgs    int         // images per chunk
	ohc     int         // output rows per chunk: oh, or fewer with one image a chunk
	partial scratchFunc // split-K workspaces: one, reused chunk after chunk
}

// A chunk is images img0..img0+imgs-1, their output rows oy0..oy0+ohc-1.
type chunk struct{ img0, imgs, oy0, ohc int }

// cols returns the chunk's columns: its output pixels.
func (k chunk) cols(ow int) int { return k.imgs * k.ohc * ow }

// planGrad checks a gradient's shapes (xs the input's, ws the weight's,
// dy the output's gradient) and plans its chunks.
func planGrad(op string, xs, ws []int, dy *tensor.Tensor, p tensor.ConvParams) (convGrad, error) {
	cs := planConv(op, xs, ws, p.Stride, p.Padding, p.Dilation, p.Groups)
	if want := []int{cs.n, cs.cout, cs.oh, cs.ow}; !slices.Equal(dy.Shape(), want) {
		panic(fmt.Sprintf("cudaplugin: %s: shapes %v and %v give output %v, got dy %v", op, xs, ws, want, dy.Shape()))
	}
	cg := convGrad{cs: cs, rows: cs.c * cs.kh * cs.kw, ohc: cs.oh}
	perRow := (cg.rows + cs.cout) * cs.ow // floats per output row of an image
	cg.imgs = max(1, min(cs.n, convWorkspace/(perRow*cs.oh)))
	if perRow*cs.oh > convWorkspace {
		cg.ohc = max(1, convWorkspace/perRow)
	}
	if !fitsInt32(cg.rows, cs.cout, cg.imgs*cg.ohc*cs.ow, cs.c*cs.h*cs.w) {
		return cg, fmt.Errorf("cudaplugin: %s: shapes %v and %v too large for the kernels' 32-bit counts", op, xs, ws)
	}
	return cg, nil
}

// cols is the im2col geometry of chunk k of an input of strides xs.
func (cg *convGrad) cols(k chunk, xs []int) C.LanesCols {
	cs := cg.cs
	lc := C.LanesCols{imgs: C.int(k.imgs), c: C.int(cs.c), h: C.int(cs.h), w_: C.int(cs.w), kh: C.int(cs.kh), kw: C.int(cs.kw),
		sh: C.int(cs.sh), sw: C.int(cs.sw), ph: C.int(cs.ph), pw: C.int(cs.pw), dh: C.int(cs.dh), dw: C.int(cs.dw),
		oh: C.int(cs.oh), ow: C.int(cs.ow), oy0: C.int(k.oy0), ohc: C.int(k.ohc)}
	for i, s := range xs {
		lc.xs[i] = C.longlong(s)
	}
	return lc
}

// chunks calls f for each chunk in order (images, then rows within an
// image), with dy of the chunk transposed to [cout, its columns] (dyT)
// and a workspace of rows × its columns floats (col); the workspaces and
// the split-K workspace are the call's temporaries, reused by every chunk
// (their work runs in stream order).
func (cg *convGrad) chunks(c *call, dy operand, f func(k chunk, dyT, col uintptr) error) error {
	cs := cg.cs
	if cs.n == 0 {
		return nil
	}
	l := cg.imgs * cg.ohc * cs.ow
	dyT, err := c.scratch(cs.cout * l)
	if err != nil {
		return err
	}
	col, err := c.scratch(cg.rows * l)
	if err != nil {
		return err
	}
	var part uintptr
	var have int
	cg.partial = func(n int) (uintptr, error) {
		if n > have {
			if part, err = c.scratch(n); err != nil {
				return 0, err
			}
			have = n
		}
		return part, nil
	}
	st := dy.strides
	for img0 := 0; img0 < cs.n; img0 += cg.imgs {
		for oy0 := 0; oy0 < cs.oh; oy0 += cg.ohc {
			k := chunk{img0: img0, imgs: min(cg.imgs, cs.n-img0), oy0: oy0, ohc: min(cg.ohc, cs.oh-oy0)}
			src := operand{ptr: dy.ptr + uintptr((img0*st[0]+oy0*st[2])*4), shape: []int{cs.cout, k.imgs, k.ohc, cs.ow},
				strides: []int{st[1], st[0], st[2], st[3]}}
			if err := c.g.copyView(dense(dyT, src.shape), src); err != nil {
				return err
			}
			if err := f(k, dyT, col); err != nil {
				return err
			}
		}
	}
	return nil
}

// conv queues one implicit-GEMM convolution (bias may be 0: none).
func (g *GPU) conv(stream C.lanes_stream, cs convShape, relu bool, x, w, bias, y uintptr, scratch scratchFunc) error {
	m, n, k := cs.gemm()
	if m == 0 || n == 0 {
		return nil
	}
	plan, err := planTiles(m, n, k, cs.gr, g.info.Processors)
	if err != nil {
		return err
	}
	var splits C.int
	var partial *C.float
	if err := splitK(&splits, &partial, plan.splits, cs.cout*n, scratch); err != nil {
		return err
	}
	cv := C.LanesConv{n: C.int(cs.n), c: C.int(cs.c), h: C.int(cs.h), w_: C.int(cs.w), cout: C.int(cs.cout),
		kh: C.int(cs.kh), kw: C.int(cs.kw), sh: C.int(cs.sh), sw: C.int(cs.sw), ph: C.int(cs.ph), pw: C.int(cs.pw),
		dh: C.int(cs.dh), dw: C.int(cs.dw), groups: C.int(cs.gr), oh: C.int(cs.oh), ow: C.int(cs.ow),
		vec_w: cbool(w%16 == 0 && k%4 == 0), relu: cbool(relu), splits: splits, partial: partial}
	return check("lanes_conv2d", C.lanes_conv_at(stream, C.int(plan.cfg.id), &cv, C.uintptr_t(x), C.uintptr_t(w), C.uintptr_t(bias), C.uintptr_t(y),
		C.int(plan.gx), C.int(plan.gy), C.int(plan.gz)))
}
