package tensor

import (
	"fmt"
	"math"
	"slices"
)

// Adaptive pooling, as PyTorch's adaptive_avg_pool2d and
// adaptive_max_pool2d: the last two axes of x (any number of leading
// axes, at least none) are pooled to a given output size, window i along
// an axis of input size in and output size out covering the input
// indices floor(i·in/out) ≤ k < ceil((i+1)·in/out). Windows may overlap
// and differ in size by one.

// adaptiveGeom is an adaptive pooling after its checks.
type adaptiveGeom struct {
	planes, h, w, oh, ow int
	out                  []int
}

func planAdaptive(op string, xs []int, out [2]int) adaptiveGeom {
	nd := len(xs)
	if nd < 2 || out[0] < 0 || out[1] < 0 {
		panic(fmt.Sprintf("tensor: %s: input of shape %v and output size %v: want [..., H, W] and sizes >= 0", op, xs, out))
	}
	g := adaptiveGeom{h: xs[nd-2], w: xs[nd-1], oh: out[0], ow: out[1], planes: 1}
	if (g.h == 0 && g.oh > 0) || (g.w == 0 && g.ow > 0) {
		panic(fmt.Sprintf("tensor: %s: input of shape %v has an empty axis to pool to %v", op, xs, out))
	}
	for _, d := range xs[:nd-2] {
		g.planes *= d
	}
	g.out = append(slices.Clone(xs[:nd-2]), g.oh, g.ow)
	if _, ok := checkedSize(g.out); !ok {
		panic(fmt.Sprintf("tensor: %s: output of shape %v: more than MaxElems = %d elements", op, g.out, MaxElems))
	}
	return g
}

// adaptiveWindow returns the input range [lo, hi) of window i of out over in.
func adaptiveWindow(i, in, out int) (lo, hi int) {
	return i * in / out, ((i+1)*in + out - 1) / out
}

// each calls f for every output element of plane-local index o and the
// window [i0, i1) × [j0, j1) it covers.
func (g *adaptiveGeom) each(f func(o, i0, i1, j0, j1 int)) {
	for i := range g.oh {
		i0, i1 := adaptiveWindow(i, g.h, g.oh)
		for j := range g.ow {
			j0, j1 := adaptiveWindow(j, g.w, g.ow)
			f(i*g.ow+j, i0, i1, j0, j1)
		}
	}
}

// AdaptiveAvgPool2D returns the means of x [..., H, W] over the adaptive
// windows of output size out [OH, OW], a tensor [..., OH, OW] on x's
// device. Each mean is summed in float64 and rounded once (on a device
// too, in its own order of the window's elements).
func AdaptiveAvgPool2D(x *Tensor, out [2]int) *Tensor {
	const op = "AdaptiveAvgPool2D"
	checkNil(op, "x", x)
	g := planAdaptive(op, x.shape, out)
	dev := deviceOn(op, nil, x)
	k := poolOn(op, dev, nil, x)
	dst := result(op, dev, g.out, x)
	ran(op, k.AdaptiveAvgPool2D(dst, x), dst, x)
	return dst
}

// AdaptiveAvgPool2DInto sets dst [..., OH, OW] to AdaptiveAvgPool2D(x,
// [OH, OW]) and returns dst.
func AdaptiveAvgPool2DInto(dst, x *Tensor) *Tensor {
	const op = "AdaptiveAvgPool2DInto"
	checkNil(op, "dst, x", dst, x)
	if dst.Dims() < 2 {
		panic(fmt.Sprintf("tensor: %s: dst of shape %v: want [..., OH, OW]", op, dst.shape))
	}
	g := planAdaptive(op, x.shape, [2]int{dst.shape[dst.Dims()-2], dst.shape[dst.Dims()-1]})
	checkShapeIs(op, "dst", dst, g.out...)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, x)
	k := poolOn(op, dev, dst, x)
	if dev == CPU {
		x = detach(dst, x)
	}
	ran(op, k.AdaptiveAvgPool2D(dst, x), dst, x)
	return dst
}

// AdaptiveAvgPool2D is the CPU's AdaptiveAvgPool2D: host operands, dst
// overlapping no input.
func (cpuKernels) AdaptiveAvgPool2D(dst, x *Tensor) error {
	const op = "AdaptiveAvgPool2D"
	g := planAdaptive(op, x.shape, [2]int{dst.shape[dst.Dims()-2], dst.shape[dst.Dims()-1]})
	o := target(dst)
	od, xd := o.hostData(op), x.hostData(op)
	for p := range g.planes {
		src, y := xd[p*g.h*g.w:], od[p*g.oh*g.ow:]
		g.each(func(k, i0, i1, j0, j1 int) {
			s := 0.0
			for i := i0; i < i1; i++ {
				for _, v := range src[i*g.w+j0 : i*g.w+j1] {
					s += float64(v)
				}
			}
			y[k] = float32(s / float64((i1-i0)*(j1-j0)))
		})
	}
	finish(dst, o)
	return nil
}

// AdaptiveAvgPool2DBackward returns the gradient of AdaptiveAvgPool2D
// with respect to x, of shape xShape, given dy [..., OH, OW]: each dy
// element divided by its window's size (in float32) and added over the
// window, the windows in row-major order. It runs on dy's device, where
// the result is.
func AdaptiveAvgPool2DBackward(dy *Tensor, xShape []int) *Tensor {
	const op = "AdaptiveAvgPool2DBackward"
	checkNil(op, "dy", dy)
	checkShape(op, xShape)
	dev := deviceOn(op, nil, dy)
	dx := result(op, dev, xShape, dy)
	adaptiveFrom(op, dx, dy)
	ran(op, poolOn(op, dev, nil, dy).AdaptiveAvgPool2DBackward(dx, dy), dx, dy)
	return dx
}

// AdaptiveAvgPool2DBackwardInto sets dx to the gradient (see
// AdaptiveAvgPool2DBackward) and returns dx.
func AdaptiveAvgPool2DBackwardInto(dx, dy *Tensor) *Tensor {
	const op = "AdaptiveAvgPool2DBackward"
	checkNil(op, "dx, dy", dx, dy)
	adaptiveFrom(op, dx, dy)
	dev := deviceOn(op, dx, dy)
	k := poolOn(op, dev, dx, dy)
	if dev == CPU {
		dy = detach(dx, dy)
	}
	ran(op, k.AdaptiveAvgPool2DBackward(dx, dy), dx, dy)
	return dx
}

// AdaptiveAvgPool2DBackward is the CPU's AdaptiveAvgPool2DBackward: host
// operands, dx overlapping no input.
func (cpuKernels) AdaptiveAvgPool2DBackward(dx, dy *Tensor) error {
	const op = "AdaptiveAvgPool2DBackward"
	g := adaptiveFrom(op, dx, dy)
	o := target(dx)
	od, yd := o.hostData(op), dy.hostData(op)
	clear(od)
	for p := range g.planes {
		d, y := od[p*g.h*g.w:], yd[p*g.oh*g.ow:]
		g.each(func(k, i0, i1, j0, j1 int) {
			v := y[k] / float32((i1-i0)*(j1-j0))
			for i := i0; i < i1; i++ {
				row := d[i*g.w+j0 : i*g.w+j1]
				for j := range row {
					row[j] += v
				}
			}
		})
	}
	finish(dx, o)
	return nil
}

// adaptiveFrom checks a backward's dx and dy and returns their geometry.
func adaptiveFrom(op string, dx, dy *Tensor) adaptiveGeom {
	if dy.Dims() < 2 {
		panic(fmt.Sprintf("tensor: %s: dy of shape %v: want [..., OH, OW]", op, dy.shape))
	}
	g := planAdaptive(op, dx.shape, [2]int{dy.shape[dy.Dims()-2], dy.shape[dy.Dims()-1]})
	checkShapeIs(op, "dy", dy, g.out...)
	checkWritable(op, dx)
	return g
}

// AdaptiveMaxPool2D returns the maxima of x [..., H, W] over the adaptive
// windows of output size out, and the index of each within its input
// plane (row·W + column, as float32, PyTorch's return_indices), both
// [..., OH, OW] on x's device. A NaN is a maximum (the last NaN of a
// window, read row by row, is taken); among equal maxima the first is.
func AdaptiveMaxPool2D(x *Tensor, out [2]int) (y, indices *Tensor) {
	const op = "AdaptiveMaxPool2D"
	checkNil(op, "x", x)
	g := planAdaptive(op, x.shape, out)
	dev := deviceOn(op, nil, x)
	k := poolOn(op, dev, nil, x)
	y, indices = result(op, dev, g.out, x), result(op, dev, g.out, x)
	ran(op, k.AdaptiveMaxPool2D(y, indices, x), y, x)
	return y, indices
}

// AdaptiveMaxPool2DInto sets dst and indices (which may be nil) to
// AdaptiveMaxPool2D(x, [OH, OW]) and returns dst.
func AdaptiveMaxPool2DInto(dst, indices, x *Tensor) *Tensor {
	const op = "AdaptiveMaxPool2DInto"
	checkNil(op, "dst, x", dst, x)
	if dst.Dims() < 2 {
		panic(fmt.Sprintf("tensor: %s: dst of shape %v: want [..., OH, OW]", op, dst.shape))
	}
	g := planAdaptive(op, x.shape, [2]int{dst.shape[dst.Dims()-2], dst.shape[dst.Dims()-1]})
	checkShapeIs(op, "dst", dst, g.out...)
	checkWritable(op, dst)
	if indices != nil {
		checkShapeIs(op, "indices", indices, g.out...)
		checkWritable(op, indices)
	}
	dev := deviceOn(op, dst, x, indices)
	k := poolOn(op, dev, dst, x, indices)
	if dev == CPU {
		x = detach(dst, x)
		if indices != nil {
			x = detach(indices, x)
		}
	}
	ran(op, k.AdaptiveMaxPool2D(dst, indices, x), dst, x)
	return dst
}

// AdaptiveMaxPool2D is the CPU's AdaptiveMaxPool2D: host operands, dst
// and indices (may be nil) overlapping no input.
func (cpuKernels) AdaptiveMaxPool2D(dst, indices, x *Tensor) error {
	const op = "AdaptiveMaxPool2D"
	g := planAdaptive(op, x.shape, [2]int{dst.shape[dst.Dims()-2], dst.shape[dst.Dims()-1]})
	o := target(dst)
	od, xd := o.hostData(op), x.hostData(op)
	var id []float32
	var io *Tensor
	if indices != nil {
		io = target(indices)
		id = io.hostData(op)
	}
	for p := range g.planes {
		src, y := xd[p*g.h*g.w:], od[p*g.oh*g.ow:]
		g.each(func(k, i0, i1, j0, j1 int) {
			best, at := float32(math.Inf(-1)), i0*g.w+j0
			for i := i0; i < i1; i++ {
				for j := j0; j < j1; j++ {
					if v := src[i*g.w+j]; v > best || v != v {
						best, at = v, i*g.w+j
					}
				}
			}
			y[k] = best
			if id != nil {
				id[p*g.oh*g.ow+k] = float32(at)
			}
		})
	}
	finish(dst, o)
	if indices != nil {
		finish(indices, io)
	}
	return nil
}

// AdaptiveMaxPool2DBackward returns the gradient of AdaptiveMaxPool2D with
// respect to x, of shape xShape, given dy and the indices it returned:
// each dy element added at its index in its plane (on a device in any
// order). It runs on the device of dy and indices, where the result is.
// An index that is not an integer in [0, H·W) makes it panic, as
// MaxPool2DBackward (on a device through the error its implementation
// returns; AdaptiveMaxPool2DBackwardInto's dx may then be partly
// written).
func AdaptiveMaxPool2DBackward(dy, indices *Tensor, xShape []int) *Tensor {
	const op = "AdaptiveMaxPool2DBackward"
	checkNil(op, "dy, indices", dy, indices)
	checkShape(op, xShape)
	dev := deviceOn(op, nil, dy, indices)
	dx := result(op, dev, xShape, dy, indices)
	g := adaptiveFrom(op, dx, dy)
	checkShapeIs(op, "indices", indices, g.out...)
	ranIndex(op, poolOn(op, dev, nil, dy, indices).AdaptiveMaxPool2DBackward(dx, dy, indices), dx, dy, indices)
	return dx
}

// AdaptiveMaxPool2DBackwardInto sets dx to the gradient (see
// AdaptiveMaxPool2DBackward) and returns dx.
func AdaptiveMaxPool2DBackwardInto(dx, dy, indices *Tensor) *Tensor {
	const op = "AdaptiveMaxPool2DBackward"
	checkNil(op, "dx, dy, indices", dx, dy, indices)
	g := adaptiveFrom(op, dx, dy)
	checkShapeIs(op, "indices", indices, g.out...)
	dev := deviceOn(op, dx, dy, indices)
	k := poolOn(op, dev, dx, dy, indices)
	if dev == CPU {
		dy, indices = detach(dx, dy), detach(dx, indices)
	}
	ranIndex(op, k.AdaptiveMaxPool2DBackward(dx, dy, indices), dx, dy, indices)
	return dx
}

// AdaptiveMaxPool2DBackward is the CPU's AdaptiveMaxPool2DBackward: host
// operands, dx overlapping no input. A bad index is an indexError,
// returned before dx is written.
func (cpuKernels) AdaptiveMaxPool2DBackward(dx, dy, indices *Tensor) error {
	const op = "AdaptiveMaxPool2DBackward"
	g := adaptiveFrom(op, dx, dy)
	yd, id := dy.hostData(op), indices.hostData(op)
	for _, v := range id {
		if !integerIn(v, 0, g.h*g.w) {
			return indexError(fmt.Sprintf("index %v is not an integer in 0..%d", v, g.h*g.w-1))
		}
	}
	o := target(dx)
	od := o.hostData(op)
	clear(od)
	for p := range g.planes {
		d := od[p*g.h*g.w:]
		for k := range g.oh * g.ow {
			d[int(id[p*g.oh*g.ow+k])] += yd[p*g.oh*g.ow+k]
		}
	}
	finish(dx, o)
	return nil
}
