package tensor

import (
	"sync"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/simd"
)

// The depthwise path: Conv2D with as many groups as input channels (one
// input channel per group, Cout/Cin output channels per input channel:
// the channel multiplier), the MobileNet case. The general path would run
// one Sgemm of a single row per group; this one works plane by plane,
// parallel over (image, input channel):
//
//   - forward, stride 1 along the width: the input plane is copied into a
//     zero-padded buffer of width wp = W + 2·pw, and each kernel tap adds
//     weight·(the buffer shifted by the tap) to an accumulator of the same
//     width with one simd.Axpy over all the output rows at once (stride 1
//     along the height; one Axpy per row otherwise). The accumulator's
//     columns past OW read real input or zeros and are dropped when the
//     result is placed; only they wrap to the next row. A wider stride
//     takes a scalar loop over the padded buffer.
//   - input gradient, stride 1: the forward path on dy with the kernel
//     flipped and the padding dilation·(k-1) - padding (negative: a crop),
//     summed over the channel multiplier; other strides scatter dy through
//     the kernel into a padded buffer (simd.Axpy per row for stride 1 along
//     the width) and crop it.
//   - weight gradient, "same" width and stride 1 (weightFlat): for each
//     tap a sum over images, in float64, of one simd.Dot of the whole dy
//     plane with a column-masked copy of the input plane shifted by the
//     tap; parallel over (input channel, block of output channels).
//     Otherwise a sum over images and output rows of simd.Dot of a dy row
//     with the padded input row the tap reads, in float64 between rows;
//     parallel over input channels.
//
// Accuracy: each output is a sum of kh·kw products (forward), of
// Cout/Cin·kh·kw (input gradient), accumulated in float32 in tap order;
// the weight gradient's float32 dots have OH·OW terms each on the flat
// path, OW otherwise. The padded
// buffer is the extra copy of each plane, one plane per worker at a time.

// isDepthwise reports whether g takes the depthwise path.
func (g *convGeom) isDepthwise() bool { return depthwiseOn && g.groups > 1 && g.groups == g.cin }

// depthwiseOn is a variable so that BenchmarkDepthwiseConv2D can time the
// general path too.
var depthwiseOn = true

// flat reports whether the depthwise path runs on the planes themselves
// (flatTaps): stride 1 and an output as wide as the input ("same"
// padding along the width).
func (g *convGeom) flat() bool { return g.sh == 1 && g.sw == 1 && g.ow == g.w }

// depthwiseBuf is one worker's scratch: a padded plane and an accumulator.
type depthwiseBuf struct {
	pad, acc []float32
	sums     []float64 // the weight gradient's sums
}

var depthwiseBufs freelist.Stack[depthwiseBuf]

// Phases of a depthwise convolution.
const (
	depthwiseForward = iota
	depthwiseInput
	depthwiseWeight
)

// depthwiseJob is one depthwise convolution, a parallel loop over items:
// (image, input channel) pairs for the forward and input gradient, input
// channels for the weight gradient (pairs of input channel and block of
// output channels on its flat path).
type depthwiseJob struct {
	g     convGeom
	phase int
	flat  bool      // the phase's flat path: g.flat(), or g.flatWeight() for the weight gradient
	x     []float32 // input (forward, weight gradient) or dx
	w     []float32 // weight [cout, 1, kh, kw], or dw
	out   []float32 // output, or dy
	bias  []float32
}

var depthwiseJobs = sync.Pool{New: func() any { return new(depthwiseJob) }}

// runDepthwise runs a phase, its path (flat or not) decided once for all
// its items.
func runDepthwise(phase int, g *convGeom, x, w, out, bias []float32) {
	flat := g.flat()
	if phase == depthwiseWeight {
		flat = g.flatWeight()
	}
	j := depthwiseJobs.Get().(*depthwiseJob)
	*j = depthwiseJob{g: *g, phase: phase, flat: flat, x: x, w: w, out: out, bias: bias}
	taps := g.kh * g.kw
	switch {
	case phase != depthwiseWeight:
		parallelProducts(j, g.n*g.cin, g.opg*taps*g.p, 0)
	case flat:
		parallelProducts(j, g.cin*g.weightBlocks(), g.n*min(g.opg, weightBlock)*taps*g.p, 0)
	default:
		parallelProducts(j, g.cin, g.n*g.opg*taps*g.p, 0)
	}
	*j = depthwiseJob{}
	depthwiseJobs.Put(j)
}

func (j *depthwiseJob) RunRange(lo, hi int) {
	buf := depthwiseBufs.Get()
	cin := j.g.cin
	switch {
	case j.phase == depthwiseForward:
		for item := lo; item < hi; item++ {
			j.forward(buf, item/cin, item%cin)
		}
	case j.phase == depthwiseInput:
		for item := lo; item < hi; item++ {
			j.input(buf, item/cin, item%cin)
		}
	case j.flat:
		nb := j.g.weightBlocks()
		for item := lo; item < hi; item++ {
			b := item % nb
			j.weightFlat(buf, item/nb, b*weightBlock, min(j.g.opg, (b+1)*weightBlock))
		}
	default:
		for item := lo; item < hi; item++ {
			j.weight(buf, item)
		}
	}
	depthwiseBufs.Put(buf)
}

// padPlane copies the h×w plane src into dst, hp×wp, at row ph and column
// pw (either may be negative: src is then cropped), zeros elsewhere.
func padPlane(dst, src []float32, h, w, hp, wp, ph, pw int) {
	c0, c1 := max(pw, 0), min(wp, pw+w) // dst columns that src covers
	for i := range hp {
		row := dst[i*wp:][:wp]
		r := i - ph
		if r < 0 || r >= h || c0 >= c1 {
			clear(row)
			continue
		}
		clear(row[:c0])
		copy(row[c0:c1], src[r*w+c0-pw:])
		clear(row[c1:])
	}
}

// correlate adds to acc (oh rows of stride wp) the cross-correlation of
// the padded plane pad (hp×wp) with the kernel k [kh·kw] (flipped when
// flip is set) at the strides and dilations of g, for oh×ow outputs.
func (g *convGeom) correlate(acc, pad, k []float32, wp, oh, ow int, flip bool) {
	taps := g.kh * g.kw
	for t := range taps {
		u, v := t/g.kw, t%g.kw
		wt := k[t]
		if flip {
			wt = k[taps-1-t]
		}
		off := u*g.dh*wp + v*g.dw
		switch {
		case g.sw == 1 && g.sh == 1:
			n := (oh-1)*wp + ow
			simd.Axpy(acc[:n], wt, pad[off:][:n])
		case g.sw == 1:
			for i := range oh {
				simd.Axpy(acc[i*wp:][:ow], wt, pad[i*g.sh*wp+off:][:ow])
			}
		default:
			for i := range oh {
				a, p := acc[i*wp:][:ow], pad[i*g.sh*wp+off:]
				for jj := range a {
					a[jj] += wt * p[jj*g.sw]
				}
			}
		}
	}
}

// flatTaps sets (overwrite) or adds to dst, ho rows of width w, the
// stride-1 cross-correlation of src, hs rows of the same width w, with
// the kernel k (flipped when flip is set), src placed at row ph and column
// pw of a zero-padded plane. With equal widths each tap is one simd.Axpy
// over the rows it reaches, taken as one flat run; the elements of the run
// whose read wraps into a neighbouring row (the first or last |dv| columns
// of a row, which read padding) are saved in save before and restored
// after, so that they are exactly untouched.
func (g *convGeom) flatTaps(dst, src, k []float32, hs, ho, w, ph, pw int, flip, overwrite bool, save []float32) {
	if overwrite {
		clear(dst[:ho*w])
	}
	taps := g.kh * g.kw
	for t := range taps {
		u, v := t/g.kw, t%g.kw
		wt := k[t]
		if flip {
			wt = k[taps-1-t]
		}
		du, dv := u*g.dh-ph, v*g.dw-pw // src row and column offsets of the tap
		if dv >= w || -dv >= w {
			continue
		}
		i0, i1 := max(0, -du), min(ho, hs-du)
		if i0 >= i1 {
			continue
		}
		lo, hi := i0*w+max(0, -dv), (i1-1)*w+w-max(0, dv)
		// The wrapping elements: columns < -dv of rows i0+1.. (dv < 0),
		// columns >= w-dv of rows ..i1-2 (dv > 0).
		r0, r1, c0, c1 := i0+1, i1, 0, -dv
		if dv > 0 {
			r0, r1, c0, c1 = i0, i1-1, w-dv, w
		}
		n := 0
		for i := r0; i < r1 && dv != 0; i++ {
			for _, d := range dst[i*w+c0 : i*w+c1] { // a few elements: no memmove call
				save[n] = d
				n++
			}
		}
		simd.Axpy(dst[lo:hi], wt, src[lo+du*w+dv:hi+du*w+dv])
		n = 0
		for i := r0; i < r1 && dv != 0; i++ {
			row := dst[i*w+c0 : i*w+c1]
			for c := range row {
				row[c] = save[n]
				n++
			}
		}
	}
}

// forward computes the output planes of image img made from input channel c.
func (j *depthwiseJob) forward(buf *depthwiseBuf, img, c int) {
	g := &j.g
	taps := g.kh * g.kw
	if j.flat {
		src := j.x[(img*g.cin+c)*g.h*g.w:][:g.h*g.w]
		buf.acc = growF(buf.acc, g.p)
		for m := range g.opg {
			o := c*g.opg + m
			dst := j.out[(img*g.cout+o)*g.p:][:g.p]
			g.flatTaps(dst, src, j.w[o*taps:][:taps], g.h, g.oh, g.w, g.ph, g.pw, false, true, buf.acc)
			if j.bias != nil {
				simd.AddScalar(dst, dst, j.bias[o])
			}
			if g.relu {
				simd.ReLU(dst, dst)
			}
		}
		return
	}
	hp, wp := g.h+2*g.ph, g.w+2*g.pw
	buf.pad = growF(buf.pad, hp*wp)
	buf.acc = growF(buf.acc, g.oh*wp)
	padPlane(buf.pad, j.x[(img*g.cin+c)*g.h*g.w:], g.h, g.w, hp, wp, g.ph, g.pw)
	for m := range g.opg {
		o := c*g.opg + m
		var b float32
		if j.bias != nil {
			b = j.bias[o]
		}
		for i := range buf.acc {
			buf.acc[i] = b
		}
		g.correlate(buf.acc, buf.pad, j.w[o*taps:][:taps], wp, g.oh, g.ow, false)
		dst := j.out[(img*g.cout+o)*g.p:][:g.p]
		for i := range g.oh {
			if g.relu {
				simd.ReLU(dst[i*g.ow:][:g.ow], buf.acc[i*wp:][:g.ow])
			} else {
				copy(dst[i*g.ow:][:g.ow], buf.acc[i*wp:][:g.ow])
			}
		}
	}
}

// input computes the input gradient plane of image img, channel c.
func (j *depthwiseJob) input(buf *depthwiseBuf, img, c int) {
	g := &j.g
	taps := g.kh * g.kw
	dx := j.x[(img*g.cin+c)*g.h*g.w:][:g.h*g.w]
	eh, ew := g.dh*(g.kh-1), g.dw*(g.kw-1)
	if j.flat {
		// As below, on the planes themselves: dy has dx's width.
		buf.acc = growF(buf.acc, g.h*g.w)
		for m := range g.opg {
			o := c*g.opg + m
			g.flatTaps(dx, j.out[(img*g.cout+o)*g.p:][:g.p], j.w[o*taps:][:taps], g.oh, g.h, g.w, eh-g.ph, ew-g.pw, true, m == 0, buf.acc)
		}
		return
	}
	if g.sh == 1 && g.sw == 1 {
		// dx is the forward pass of dy with the kernel flipped and the
		// complementary padding: an output of g.h×g.w.
		ph, pw := eh-g.ph, ew-g.pw
		hp, wp := g.oh+2*ph, g.ow+2*pw
		buf.pad = growF(buf.pad, hp*wp)
		buf.acc = growF(buf.acc, g.h*wp)
		clear(buf.acc)
		for m := range g.opg {
			o := c*g.opg + m
			padPlane(buf.pad, j.out[(img*g.cout+o)*g.p:], g.oh, g.ow, hp, wp, ph, pw)
			g.correlate(buf.acc, buf.pad, j.w[o*taps:][:taps], wp, g.h, g.w, true)
		}
		for i := range g.h {
			copy(dx[i*g.w:][:g.w], buf.acc[i*wp:][:g.w])
		}
		return
	}
	// Scatter dy through the kernel into the padded input plane.
	hp, wp := g.h+2*g.ph, g.w+2*g.pw
	buf.acc = growF(buf.acc, hp*wp)
	clear(buf.acc)
	for m := range g.opg {
		o := c*g.opg + m
		dy, k := j.out[(img*g.cout+o)*g.p:][:g.p], j.w[o*taps:][:taps]
		for t, wt := range k {
			off := t/g.kw*g.dh*wp + t%g.kw*g.dw
			for i := range g.oh {
				row, a := dy[i*g.ow:][:g.ow], buf.acc[i*g.sh*wp+off:]
				if g.sw == 1 {
					simd.Axpy(a[:g.ow], wt, row)
					continue
				}
				for jj, d := range row {
					a[jj*g.sw] += wt * d
				}
			}
		}
	}
	for i := range g.h {
		copy(dx[i*g.w:][:g.w], buf.acc[(i+g.ph)*wp+g.pw:])
	}
}

// weight computes the weight gradients of the output channels made from
// input channel c, summed over the images in float64.
func (j *depthwiseJob) weight(buf *depthwiseBuf, c int) {
	g := &j.g
	taps := g.kh * g.kw
	hp, wp := g.h+2*g.ph, g.w+2*g.pw
	buf.pad = growF(buf.pad, hp*wp)
	if cap(buf.sums) < g.opg*taps {
		buf.sums = make([]float64, g.opg*taps)
	}
	acc := buf.sums[:g.opg*taps]
	clear(acc)
	for img := range g.n {
		padPlane(buf.pad, j.x[(img*g.cin+c)*g.h*g.w:], g.h, g.w, hp, wp, g.ph, g.pw)
		for m := range g.opg {
			dy := j.out[(img*g.cout+c*g.opg+m)*g.p:][:g.p]
			for t := range taps {
				off := t/g.kw*g.dh*wp + t%g.kw*g.dw
				s := 0.0
				for i := range g.oh {
					row, p := dy[i*g.ow:][:g.ow], buf.pad[i*g.sh*wp+off:]
					if g.sw == 1 {
						s += float64(simd.Dot(row, p[:g.ow]))
						continue
					}
					var r float32
					for jj, d := range row {
						r += d * p[jj*g.sw]
					}
					s += float64(r)
				}
				acc[m*taps+t] += s
			}
		}
	}
	dw := j.w[c*g.opg*taps:][:g.opg*taps]
	for i, s := range acc {
		dw[i] = float32(s)
	}
}

// depthwise runs a phase of the depthwise path on host tensors: dst is the
// output, dx or dw; a and b are x and w, dy and w, or dy and x.
func depthwise(op string, phase int, g *convGeom, dst, a, b, bias *Tensor) {
	out := target(dst)
	if out.Len() == 0 {
		return
	}
	var bd []float32
	if bias != nil {
		bd = bias.hostData(op)
	}
	o, ad, bdata := out.hostData(op), a.hostData(op), b.hostData(op)
	switch phase {
	case depthwiseForward:
		runDepthwise(phase, g, ad, bdata, o, bd)
	case depthwiseInput:
		runDepthwise(phase, g, o, bdata, ad, nil)
	case depthwiseWeight:
		runDepthwise(phase, g, bdata, o, ad, nil)
	}
	finish(dst, out)
}

// weightBlock is the number of output channels (of one input channel)
// whose weight gradients one item of weightFlat computes: a large channel
// multiplier is split over several items, and each item pads every image
// kw times for up to 8 channels' kh·kw dots.
const weightBlock = 8

// flatWeightOn is a variable so that tests can time the row-by-row path.
var flatWeightOn = true

func (g *convGeom) weightBlocks() int { return (g.opg + weightBlock - 1) / weightBlock }

// flatWeight reports whether the weight gradient takes weightFlat: a flat
// convolution (see flat) whose kw column-masked planes (flatPlane
// elements each) stay a small buffer.
func (g *convGeom) flatWeight() bool {
	return flatWeightOn && g.flat() && satMul(g.kw, g.flatPlane()) <= 1<<22
}

// flatPlane is the length of one of weightFlat's masked planes: the input
// plane with ph zero rows above and below and pw zeros before and after.
func (g *convGeom) flatPlane() int { return satAdd(satMul(g.h+2*g.ph, g.w), 2*g.pw) }

// weightFlat computes the weight gradients of output channels m0..m1 (of
// the channel multiplier) of input channel c, summed over the images in
// float64, for a flat convolution: each tap's gradient is one simd.Dot of
// a whole dy plane with the input plane shifted by the tap. The shift of a
// column offset dv (dv = v·dw - pw) wraps into the neighbouring row for
// the first or last |dv| columns of each output row; those read padding,
// so the plane of that dv (one of kw, built per image) has the columns
// that the wrap reaches set to zero, and ph zero rows above and below for
// the rows that read the padding. Each float32 dot has OH·OW terms; the
// result does not depend on the number of threads (each channel's sum
// runs over the images in order, in one item).
func (j *depthwiseJob) weightFlat(buf *depthwiseBuf, c, m0, m1 int) {
	g := &j.g
	taps, fp := g.kh*g.kw, g.flatPlane()
	buf.pad = growF(buf.pad, g.kw*fp)
	nm := m1 - m0
	if cap(buf.sums) < nm*taps {
		buf.sums = make([]float64, nm*taps)
	}
	acc := buf.sums[:nm*taps]
	clear(acc)
	// The zeros around each plane's body: the images rewrite only bodies.
	for v := range g.kw {
		pl := buf.pad[v*fp:][:fp]
		clear(pl[:g.pw+g.ph*g.w])
		clear(pl[g.pw+(g.ph+g.h)*g.w:])
	}
	for img := range g.n {
		src := j.x[(img*g.cin+c)*g.h*g.w:][:g.h*g.w]
		for v := range g.kw {
			pl := buf.pad[v*fp:][:fp]
			dv := v*g.dw - g.pw
			if dv >= g.w || -dv >= g.w {
				continue // every read of the column offset is padding
			}
			body := pl[g.pw+g.ph*g.w:][:g.h*g.w]
			copy(body, src)
			// Zero the columns that the wrap of dv reaches.
			c0, c1 := 0, max(dv, 0)
			if dv < 0 {
				c0, c1 = g.w+dv, g.w
			}
			for r := range g.h {
				clear(body[r*g.w+c0 : r*g.w+c1])
			}
		}
		for m := m0; m < m1; m++ {
			dy := j.out[(img*g.cout+c*g.opg+m)*g.p:][:g.p]
			for t := range taps {
				u, v := t/g.kw, t%g.kw
				if dv := v*g.dw - g.pw; dv >= g.w || -dv >= g.w {
					continue
				}
				// Output q reads the masked plane of v at q + off.
				off := g.pw + u*g.dh*g.w + v*g.dw - g.pw
				acc[(m-m0)*taps+t] += float64(simd.Dot(dy, buf.pad[v*fp+off:][:g.p]))
			}
		}
	}
	dw := j.w[(c*g.opg+m0)*taps:][:nm*taps]
	for i, s := range acc {
		dw[i] = float32(s)
	}
}
