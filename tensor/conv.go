package tensor

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/simd"
)

// ConvParams configures a 2-D convolution. The pairs are (height, width).
// Zero values mean the defaults: stride 1, no padding, dilation 1, one
// group.
type ConvParams struct {
	Stride   [2]int
	Padding  [2]int // zeros added on each side
	Dilation [2]int // spacing between kernel taps
	Groups   int    // input and output channels split into this many groups
	// ReLU applies max(0, ·) after the bias in Conv2D (fused into the pass
	// that adds the bias). The backward functions ignore it: they are the
	// gradients of the convolution alone, so mask dy by the output first.
	ReLU bool
	// PaddingMode is what Padding adds, as nn.Conv2d's padding_mode:
	// PadConstant (the zero value) zeros, or PadReflect, PadReplicate,
	// PadCircular, which pad a copy of the input first (see convpad.go).
	PaddingMode PadMode
}

// convGeom is a convolution after its shape checks.
type convGeom struct {
	n, cin, h, w   int // input
	cout, kh, kw   int // weight [cout, cin/groups, kh, kw]
	sh, sw, ph, pw int
	dh, dw, groups int
	oh, ow         int
	cpg, opg       int // input and output channels per group
	k              int // cpg·kh·kw: rows of the im2col matrix
	p              int // oh·ow: output pixels per image
	relu           bool
	wT             bool // the weight gradient is computed transposed (see planConv)
	pointwise      bool // 1×1, stride 1, no padding: the input is its own im2col
	cols, chunks   int  // im2col path: output pixels per chunk; chunks per image
	imgs, spans    int  // images unrolled side by side per item; items of images
	shifted        bool // the shifted path (see planConv)
	wp, ext        int  // shifted path: padded input width; extra input rows per block
	rows, blocks   int  // shifted path: output rows per block; blocks per image
	plane          int  // shifted path: elements per channel of a padded block
}

func planConv(op string, xs, ws []int, prm ConvParams) convGeom {
	if len(xs) != 4 || len(ws) != 4 {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: want input [N, C, H, W] and weight [Cout, C/groups, kh, kw]", op, xs, ws))
	}
	g := convGeom{n: xs[0], cin: xs[1], h: xs[2], w: xs[3], cout: ws[0], kh: ws[2], kw: ws[3], relu: prm.ReLU}
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	g.sh, g.sw = def(prm.Stride[0], 1), def(prm.Stride[1], 1)
	g.dh, g.dw = def(prm.Dilation[0], 1), def(prm.Dilation[1], 1)
	g.ph, g.pw = prm.Padding[0], prm.Padding[1]
	g.groups = def(prm.Groups, 1)
	checkPadMode(op, prm)
	if g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0 || g.groups < 1 {
		panic(fmt.Sprintf("tensor: %s: invalid parameters %+v", op, prm))
	}
	if g.cin%g.groups != 0 || g.cout%g.groups != 0 || ws[1] != g.cin/g.groups {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: %d input channels, %d groups and weight channels %d do not agree", op, xs, ws, g.cin, g.groups, ws[1]))
	}
	if g.kh < 1 || g.kw < 1 {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: empty kernel", op, xs, ws))
	}
	// Every size below is computed without overflow: the padded input
	// must fit in int, a kernel extent that does not is larger than it,
	// and the output must have at most MaxElems elements.
	ph, okh := padded(g.h, g.ph)
	pw, okw := padded(g.w, g.pw)
	if _, ok := shape.Size([]int{ph, pw}, MaxElems); !okh || !okw || !ok {
		// Bounding the padded plane bounds every index computed in it.
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v with padding %v: the padded input plane has more than MaxElems = %d elements", op, xs, ws, prm.Padding, MaxElems))
	}
	eh, okh := kernelExtent(g.kh, g.dh)
	ew, okw := kernelExtent(g.kw, g.dw)
	if !okh || !okw {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v with dilation %v: the kernel extent overflows int", op, xs, ws, [2]int{g.dh, g.dw}))
	}
	if ph < eh || pw < ew {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: kernel extent %dx%d larger than the padded input %dx%d", op, xs, ws, eh, ew, ph, pw))
	}
	g.oh, g.ow = (ph-eh)/g.sh+1, (pw-ew)/g.sw+1
	if _, ok := shape.Size([]int{g.n, g.cout, g.oh, g.ow}, MaxElems); !ok {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v with %+v give an output of shape %v: more than MaxElems = %d elements", op, xs, ws, prm, []int{g.n, g.cout, g.oh, g.ow}, MaxElems))
	}
	g.cpg, g.opg = g.cin/g.groups, g.cout/g.groups
	g.k, g.p = g.cpg*g.kh*g.kw, g.oh*g.ow // a weight's and an output plane's elements: at most MaxElems
	// With fewer rows k than output channels (a first layer: C·kh·kw = 9
	// for 3×3 on one channel), the weight gradient dW [opg, k] is computed
	// as dWᵀ = cols·dyᵀ, whose tiles Sgemm fills better: for 32 channels
	// and k = 9 (64×1×28×28, one thread) 2.0 ms became 0.76.
	g.wT = g.k < g.opg
	g.pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0
	// The im2col path unrolls chunks of cols output pixels: a k×cols
	// matrix of about convChunk elements (L2-resident), at least 32 columns.
	// The chunks of an image are of equal size, so that none is a sliver.
	g.cols = min(g.p, max(32, convChunk/max(g.k, 1)/32*32))
	g.chunks = (g.p + g.cols - 1) / g.cols
	g.cols = (g.p + g.chunks - 1) / g.chunks
	// Small images go several to an item, side by side in the im2col
	// matrix (and dy gathered likewise), so that the products are wider;
	// an image of at least convWide output pixels is wide enough alone.
	g.imgs = 1
	if kp := satMul(g.k, g.p); !g.pointwise && kp > 0 && kp <= convGroup/2 && g.p < convWide {
		g.imgs = max(1, min(g.n, convGroup/(g.k*g.p)))
		g.cols, g.chunks = g.p, 1
	}
	g.spans = (g.n + g.imgs - 1) / g.imgs
	// The shifted path (stride 1, enough channels per group, images too
	// large to group) pads blocks of rows output rows of the input and
	// multiplies each kernel tap's weights with a shifted view of them.
	// Its padded block must stay a buffer (see shiftedMaxBlock).
	g.wp, g.ext = pw, eh-1
	g.rows = min(g.oh, max(1, convChunk/max(1, satMul(g.wp, g.cpg+g.opg))))
	g.blocks = (g.oh + g.rows - 1) / g.rows
	g.plane = satAdd(satMul(satAdd(g.rows, g.ext), g.wp), ew-1)
	g.shifted = g.sh == 1 && g.sw == 1 && !g.pointwise && g.cpg >= shiftedMinChannels && g.imgs == 1 &&
		satMul(g.plane, g.cpg) <= shiftedMaxBlock
	return g
}

// shiftedMaxBlock is the largest padded block, in elements, that the
// shifted path allocates per worker (16 MiB). Real layers are far below
// it (8×64×56×56 3×3: 22K; a 1024-wide image with 32 channels: 98K); a
// huge padding or dilation, whose every block would be mostly zeros,
// goes to the im2col path instead, which allocates by output chunk.
const shiftedMaxBlock = 4 << 20

// padded returns n + 2·pad (n, pad >= 0) and whether it fits in int.
func padded(n, pad int) (int, bool) {
	if pad > (math.MaxInt-n)/2 {
		return 0, false
	}
	return n + 2*pad, true
}

// kernelExtent returns d·(k-1)+1, the extent of k taps at dilation d (k,
// d >= 1), and whether it fits in int.
func kernelExtent(k, d int) (int, bool) {
	if k > 1 && d > (math.MaxInt-1)/(k-1) {
		return 0, false
	}
	return d*(k-1) + 1, true
}

// convChunk is the size in elements of the unrolled (or padded) input and
// the product a worker keeps at a time (128 KiB: both in L2 with Sgemm's
// packed panels). Measured on Zen 5, 2 threads (ms for 8×64×56×56 k3 p1 on
// the shifted path, 32×3×224×224 k7 s2 p3 on the im2col path): 16K
// elements 9.7 and 77, 32K 8.8 and 51, 64K 9.5 and 59, 128K 16.4 and -;
// whole images on the im2col path 14.3 and 79.
const convChunk = 32 << 10

// convGroup is the size in elements of the im2col matrix of the images an
// item unrolls side by side, when one image's is at most half of it (1
// MiB: Sgemm blocks it for L2 itself). Measured on Zen 5, one thread, CPU
// ms for the CNN's 64×32×14×14→64 3×3 layer (k·p = 56K) at 1 image an
// item, 64K, 128K, 256K and 512K: input gradient 4.09, 4.12, 3.79, 3.55,
// 3.58; weight gradient 4.52, 4.34, 3.70, 3.69, 4.45. Its forward pass
// then beats the shifted path: 4.3 against 5.3 ms; so does 64×64×14×14
// (2 images an item, 10.4 against 11.7), while the shifted path stays
// ahead for 32×128×14×14→128 and 8×64×56×56→64, which do not group.
const convGroup = 256 << 10

// convWide is the number of output pixels from which an image is an item
// of its own on the im2col path rather than grouped (convGroup): its
// products are then as wide as grouping would make them worth, and
// grouping would only add the copy that gathers dy for the backward
// passes and leave too few items for the threads (FashionCNN's first
// layer, 64×1×28×28 → 32 3×3: 37 images an item, two items). Measured on
// Zen 5 for that layer (p = 784), grouped against one image an item
// (BenchmarkCNNPhases): forward 0.47 against 0.40 ms on one thread, 0.29
// against 0.24 on two; weight gradient 0.76 against 0.68, 0.99 against
// 0.42; a whole FashionCNN step (steps of either alternating, 200 each)
// 3% less time on one thread and 6-11% on two. The second layer (p =
// 196) stays grouped: one image an item there is 10-25% slower.
const convWide = 512

// shiftedMinChannels is the number of input channels per group from which
// stride-1 convolutions take the shifted path: each kernel tap is then a
// product with that many terms. BenchmarkConv2DPath on Zen 5 (3×3 pad 1,
// 2 threads, GFLOP/s shifted vs im2col): C=1 16 vs 78, C=4 65 vs 111,
// C=8 104 vs 214, C=16 151 vs 218, C=32 (14×14) 167 vs 134, C=64 (56×56)
// 218 vs 150. A variable so that the benchmark can force either path.
var shiftedMinChannels = 32

func (g *convGeom) outShape() [4]int { return [4]int{g.n, g.cout, g.oh, g.ow} }

// Conv2D returns the cross-correlation of x [N, C, H, W] with w [Cout,
// C/groups, kh, kw], plus bias [Cout] when bias is not nil, as PyTorch's
// conv2d: out[n, o, i, j] = bias[o] + Σ_{c,u,v} x[n, g·C/groups + c,
// i·sh - ph + u·dh, j·sw - pw + v·dw] · w[o, c, u, v] with g = o's group
// and x zero outside the input. The result is [N, Cout, OH, OW] with OH =
// (H + 2·ph - dh·(kh-1) - 1)/sh + 1 (likewise OW).
//
// Each output is a simd.Sgemm dot product of length C/groups·kh·kw, with
// its error bound: the input is unrolled into an im2col matrix (the
// input itself for 1×1 kernels with stride 1 and no padding) and the
// weight of each group multiplies it; the bias and ReLU are applied in the
// pass that places the result.
//
// Where it runs, and when it panics instead of returning an error, is as
// for MatMul: with x, w and bias (if any) on a device that device's
// Backend computes the result, on that device, and an error there panics
// (the plugin's own (*cudaplugin.GPU).Conv2D returns it instead); host
// and device operands mixed panic.
func Conv2D(x, w, bias *Tensor, p ConvParams) *Tensor {
	checkNil("Conv2D", "x, w", x, w)
	g := planConv("Conv2D", x.shape, w.shape, p)
	checkBias("Conv2D", &g, bias)
	if xp, q, ok := modePadded("Conv2D", x, p); ok {
		return Conv2D(xp, w, bias, q)
	}
	dev := deviceOn("Conv2D", nil, x, w, bias)
	k := convOn("Conv2D", dev, nil, x, w, bias)
	out := g.outShape()
	dst := result("Conv2D", dev, out[:], x, w, bias)
	if dev != CPU || !g.offload(dst, x, w, bias, p) {
		ran("Conv2D", k.Conv2D(dst, x, w, bias, p), dst, x, w, bias)
	}
	return dst
}

// Conv2DInto sets dst to Conv2D(x, w, bias, p) and returns dst. With
// contiguous operands it allocates nothing in steady state (the im2col
// buffers are pooled); an operand overlapping dst is copied first. Where
// it runs and when it panics is as for MatMulInto.
func Conv2DInto(dst, x, w, bias *Tensor, p ConvParams) *Tensor {
	checkNil("Conv2DInto", "dst, x, w", dst, x, w)
	g := planConv("Conv2DInto", x.shape, w.shape, p)
	checkOut("Conv2DInto", dst, g.outShape(), x, w)
	checkWritable("Conv2DInto", dst)
	checkBias("Conv2DInto", &g, bias)
	if xp, q, ok := modePadded("Conv2DInto", x, p); ok {
		return Conv2DInto(dst, xp, w, bias, q)
	}
	dev := deviceOn("Conv2DInto", dst, x, w, bias)
	k := convOn("Conv2DInto", dev, dst, x, w, bias)
	if dev == CPU {
		if g.offload(dst, x, w, bias, p) {
			return dst
		}
		x, w = detach(dst, x), detach(dst, w)
		if bias != nil {
			bias = detach(dst, bias)
		}
	}
	ran("Conv2DInto", k.Conv2D(dst, x, w, bias, p), dst, x, w, bias)
	return dst
}

// Conv2DBackwardInput returns the gradient of Conv2D(x, w, ·, p) with
// respect to x, for an input of shape xShape, given dy, the gradient with
// respect to the output. Each element is a sum of Sgemm dot products of
// length Cout/groups over the kernel taps that read it. It runs where
// Conv2D does, on the device of dy and w (the result is there); nothing
// is offloaded from the host.
func Conv2DBackwardInput(dy, w *Tensor, xShape []int, p ConvParams) *Tensor {
	const op = "Conv2DBackwardInput"
	checkNil(op, "dy, w", dy, w)
	dev := deviceOn(op, nil, dy, w)
	convOn(op, dev, nil, dy, w) // a lacking family panics before the result is allocated
	dx := result(op, dev, xShape, dy, w)
	return Conv2DBackwardInputInto(dx, dy, w, p)
}

// Conv2DBackwardInputInto sets dx to the gradient with respect to the
// input (see Conv2DBackwardInput) and returns dx; dx's shape is the input's.
func Conv2DBackwardInputInto(dx, dy, w *Tensor, p ConvParams) *Tensor {
	const op = "Conv2DBackwardInput"
	checkNil(op, "dx, dy, w", dx, dy, w)
	g := planConv(op, dx.shape, w.shape, p)
	checkOut(op, dy, g.outShape(), dx, w)
	checkWritable(op, dx)
	if modeBackwardInput(dx, dy, w, p) {
		return dx
	}
	dev := deviceOn(op, dx, dy, w)
	k := convOn(op, dev, dx, dy, w)
	if dev == CPU {
		dy, w = detach(dx, dy), detach(dx, w)
	}
	ran(op, k.Conv2DBackwardInput(dx, dy, w, p), dx, dy, w)
	return dx
}

// Conv2DBackwardWeight returns the gradient of Conv2D(x, w, ·, p) with
// respect to w, for a weight of shape wShape, given the input x and dy.
// Each element is a Sgemm dot product of length N·OH·OW. The bias gradient
// is Sum(dy, false, 0, 2, 3). It runs as Conv2DBackwardInput does.
func Conv2DBackwardWeight(dy, x *Tensor, wShape []int, p ConvParams) *Tensor {
	const op = "Conv2DBackwardWeight"
	checkNil(op, "dy, x", dy, x)
	dev := deviceOn(op, nil, dy, x)
	convOn(op, dev, nil, dy, x)
	dw := result(op, dev, wShape, dy, x)
	return Conv2DBackwardWeightInto(dw, dy, x, p)
}

// Conv2DBackwardWeightInto sets dw to the gradient with respect to the
// weight (see Conv2DBackwardWeight) and returns dw.
func Conv2DBackwardWeightInto(dw, dy, x *Tensor, p ConvParams) *Tensor {
	const op = "Conv2DBackwardWeight"
	checkNil(op, "dw, dy, x", dw, dy, x)
	g := planConv(op, x.shape, dw.shape, p)
	checkOut(op, dy, g.outShape(), x, dw)
	checkWritable(op, dw)
	if xp, q, ok := modePadded(op, x, p); ok {
		return Conv2DBackwardWeightInto(dw, dy, xp, q)
	}
	dev := deviceOn(op, dw, dy, x)
	k := convOn(op, dev, dw, dy, x)
	if dev == CPU {
		dy, x = detach(dw, dy), detach(dw, x)
	}
	ran(op, k.Conv2DBackwardWeight(dw, dy, x, p), dw, dy, x)
	return dw
}

// offload offers the convolution of host operands to the offload device
// (see SetOffload) and reports whether it did it.
func (g *convGeom) offload(dst, x, w, bias *Tensor, p ConvParams) bool {
	be := offloadTo(g.work(x, w))
	return be != nil && be.Conv != nil && be.Conv.Conv2D(dst, x, w, bias, p) == nil
}

// checkBias panics unless bias is nil or [Cout].
func checkBias(op string, g *convGeom, bias *Tensor) {
	if bias != nil && !slices.Equal(bias.shape, []int{g.cout}) {
		panic(fmt.Sprintf("tensor: %s: bias shape %v, want [%d]", op, bias.shape, g.cout))
	}
}

// Conv2D is the CPU's convolution: host operands whose shapes the public
// function has checked, dst not overlapping them.
func (cpuKernels) Conv2D(dst, x, w, bias *Tensor, p ConvParams) error {
	g := planConv("Conv2D", x.shape, w.shape, p)
	if g.isDepthwise() {
		depthwise("Conv2D", depthwiseForward, &g, dst, x, w, bias)
		return nil
	}
	convForward("Conv2D", &g, dst, x, w, bias)
	return nil
}

// Conv2DBackwardInput is the CPU's input gradient, as Conv2D.
func (cpuKernels) Conv2DBackwardInput(dx, dy, w *Tensor, p ConvParams) error {
	g := planConv("Conv2DBackwardInput", dx.shape, w.shape, p)
	if g.isDepthwise() {
		depthwise("Conv2DBackwardInput", depthwiseInput, &g, dx, dy, w, nil)
		return nil
	}
	convBackwardInput("Conv2DBackwardInput", &g, dx, dy, w)
	return nil
}

// Conv2DBackwardWeight is the CPU's weight gradient, as Conv2D.
func (cpuKernels) Conv2DBackwardWeight(dw, dy, x *Tensor, p ConvParams) error {
	g := planConv("Conv2DBackwardWeight", x.shape, dw.shape, p)
	if g.isDepthwise() {
		depthwise("Conv2DBackwardWeight", depthwiseWeight, &g, dw, dy, x, nil)
		return nil
	}
	convBackwardWeight("Conv2DBackwardWeight", &g, dw, dy, x)
	return nil
}

// checkOut panics unless t (an output or its gradient) has the shape want
// that the operands give.
func checkOut(op string, t *Tensor, want [4]int, operands ...*Tensor) {
	if !slices.Equal(t.shape, want[:]) {
		panic(fmt.Sprintf("tensor: %s: shapes %s give output %v, got %v", op, shapesOf(operands), want, t.shape))
	}
}

// workBuf is one worker's scratch: an im2col chunk or padded block, a
// product before it is placed, and a weight gradient being accumulated.
type workBuf struct{ col, prod, dw []float32 }

// workBufs holds the scratch of the goroutines running convolutions and
// norms (a free list, not a sync.Pool: see freelist.Stack).
var workBufs freelist.Stack[workBuf]

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Phases of a convolution, each a parallel loop over items.
const (
	forwardIm2col  = iota // item: a chunk of cols output pixels of an image
	forwardShifted        // item: a block of rows output rows of an image
	backwardInput         // item: an image
	backwardWeight        // item: a chunk of an image, as forwardIm2col
)

// convJob is one convolution, run as a parallel loop over items.
type convJob struct {
	g     convGeom
	phase int
	x     []float32 // input, or dx for backwardInput
	w     []float32 // weight [cout, k], or for forwardShifted [groups, kh·kw, opg, cpg]
	out   []float32 // output, or dy for the backward phases
	bias  []float32
	dw    []float32 // backwardWeight: the sum of the parts' gradients
	parts partials  // backwardWeight: each part's gradient, summed into dw in item order
	// A convolution fused with the max pooling of its output (see
	// Conv2DMaxPoolInto; pooling set): pool is that pooling, out is nil,
	// and pooled and pidx are the pooled output and its indices (forward;
	// pidx may be nil) or the pooled output's gradient and the indices
	// (backward, which unpools each item's dy itself, see unpooled).
	pooling      bool
	pool         poolGeom
	pooled, pidx []float32
	badIndex     firstBad // an invalid index met by a worker
}

var convJobs = sync.Pool{New: func() any { return new(convJob) }}

func (j *convJob) RunRange(lo, hi int) {
	g := &j.g
	buf := workBufs.Get()
	if j.phase == backwardWeight {
		buf.dw = growF(buf.dw, len(j.dw))
		clear(buf.dw)
	}
	for item := lo; item < hi; item++ {
		for grp := 0; grp < g.groups; grp++ {
			switch j.phase {
			case forwardIm2col:
				s, c := item/g.chunks, item%g.chunks
				j.forwardChunk(buf, g.span(s), grp, c*g.cols, min(g.p, (c+1)*g.cols))
			case forwardShifted:
				img, b := item/g.blocks, item%g.blocks
				j.forwardBlock(buf, img, grp, b*g.rows, min(g.oh, (b+1)*g.rows))
			case backwardInput:
				j.backwardImages(buf, g.span(item), grp)
			case backwardWeight:
				s, c := item/g.chunks, item%g.chunks
				j.weightChunk(buf, g.span(s), grp, c*g.cols, min(g.p, (c+1)*g.cols))
			}
		}
	}
	if j.phase == backwardWeight {
		j.parts.keep(lo, buf) // added to j.dw by addPart, in item order
		return
	}
	workBufs.Put(buf)
}

// addPart adds a part's weight gradient (buf.dw) to j.dw.
func (j *convJob) addPart(buf *workBuf) {
	g := &j.g
	if !g.wT {
		simd.Add(j.dw, j.dw, buf.dw)
		return
	}
	// buf.dw holds each group's gradient transposed, [k, opg].
	for grp := 0; grp < g.groups; grp++ {
		src, dst := buf.dw[grp*g.opg*g.k:], j.dw[grp*g.opg*g.k:]
		for o := 0; o < g.opg; o++ {
			row := dst[o*g.k:][:g.k]
			for kk := range row {
				row[kk] += src[kk*g.opg+o]
			}
		}
	}
}

// channels returns the input channels of group grp of image img (each a
// plane of h·w elements) from x laid out [n, cin, h, w].
func (g *convGeom) channels(x []float32, img, grp int) []float32 {
	return x[(img*g.cin+grp*g.cpg)*g.h*g.w:][:g.cpg*g.h*g.w]
}

// outRows returns output (or dy) rows of group grp of image img, from
// pixel p0 on: a matrix [opg, p-p0] with row stride p.
func (g *convGeom) outRows(out []float32, img, grp, p0 int) []float32 {
	return out[(img*g.cout+grp*g.opg)*g.p+p0:]
}

// span is a run of images i0..i1 that an item unrolls side by side.
type span struct{ i0, i1 int }

func (g *convGeom) span(s int) span { return span{s * g.imgs, min(g.n, (s+1)*g.imgs)} }

// unrolled returns the im2col matrix [k, m·(p1-p0)] (in buf, row stride
// m·(p1-p0)) of pixels p0..p1 of the group's channels of the span's m
// images side by side, or for a pointwise convolution (one image) the
// input itself (row stride p).
func (j *convJob) unrolled(buf *workBuf, sp span, grp, p0, p1 int) (b []float32, ldb int) {
	g := &j.g
	if g.pointwise {
		return g.channels(j.x, sp.i0, grp)[p0:], g.p
	}
	n := p1 - p0
	ld := (sp.i1 - sp.i0) * n
	buf.col = growF(buf.col, g.k*ld)
	for img := sp.i0; img < sp.i1; img++ {
		in := g.channels(j.x, img, grp)
		for c := 0; c < g.cpg; c++ {
			g.im2col(buf.col[c*g.kh*g.kw*ld+(img-sp.i0)*n:], ld, in[c*g.h*g.w:][:g.h*g.w], p0, p1)
		}
	}
	return buf.col, ld
}

// gathered returns dy's rows [opg, p0..p1) of the group for the span's
// images side by side: for one image dy itself (row stride p), else a
// copy in buf.prod.
func (j *convJob) gathered(buf *workBuf, sp span, grp, p0, p1 int) (a []float32, lda int) {
	g := &j.g
	if j.pooling {
		return j.unpooled(buf, sp, grp)
	}
	if sp.i1-sp.i0 == 1 {
		return g.outRows(j.out, sp.i0, grp, p0), g.p
	}
	n := p1 - p0
	ld := (sp.i1 - sp.i0) * n
	buf.prod = growF(buf.prod, g.opg*ld)
	for img := sp.i0; img < sp.i1; img++ {
		rows := g.outRows(j.out, img, grp, p0)
		for o := 0; o < g.opg; o++ {
			copy(buf.prod[o*ld+(img-sp.i0)*n:][:n], rows[o*g.p:][:n])
		}
	}
	return buf.prod, ld
}

// unpooled is gathered for a convolution fused with a max pooling (whole
// images, p0 = 0 and p1 = p): each output plane's dy is the pooling's
// gradient, routed from the pooled gradient j.pooled by the indices j.pidx,
// written into buf.prod where gathered would copy it (row stride p for
// one image, as dy itself). An invalid index is kept in j.badIndex and its
// plane left partly written.
func (j *convJob) unpooled(buf *workBuf, sp span, grp int) (a []float32, lda int) {
	g, pg := &j.g, &j.pool
	ld := (sp.i1 - sp.i0) * g.p
	buf.prod = growF(buf.prod, g.opg*ld)
	q := pg.oh * pg.ow
	for img := sp.i0; img < sp.i1; img++ {
		for o := 0; o < g.opg; o++ {
			pl := (img*g.cout + grp*g.opg + o) * q
			if v, ok := pg.unpool(buf.prod[o*ld+(img-sp.i0)*g.p:][:g.p], j.pooled[pl:][:q], j.pidx[pl:][:q]); !ok {
				j.badIndex.keep(v)
			}
		}
	}
	return buf.prod, ld
}

// biasOf returns the bias of output channel o of group grp, 0 without one.
func (j *convJob) biasOf(grp, o int) float32 {
	if j.bias == nil {
		return 0
	}
	return j.bias[grp*j.g.opg+o]
}

// place writes output rows [opg, p0..p1) of a group of image img: src (row
// stride ld) plus the bias, then the ReLU. With src nil the rows already
// hold the product and get the bias and ReLU in place.
func (j *convJob) place(img, grp, p0, p1 int, src []float32, ld int) {
	g := &j.g
	if src == nil && j.bias == nil && !g.relu {
		return
	}
	rows := g.outRows(j.out, img, grp, p0)
	for o := 0; o < g.opg; o++ {
		var s []float32
		if src != nil {
			s = src[o*ld:][:p1-p0]
		}
		j.epilogue(rows[o*g.p:][:p1-p0], s, grp, o)
	}
}

// epilogue sets d, a row of output channel o of group grp, to src plus
// the channel's bias (src nil: d itself, plus the bias if there is one),
// then applies the ReLU.
func (j *convJob) epilogue(d, src []float32, grp, o int) {
	switch {
	case src != nil:
		simd.AddScalar(d, src, j.biasOf(grp, o))
	case j.bias != nil:
		simd.AddScalar(d, d, j.biasOf(grp, o))
	}
	if j.g.relu {
		simd.ReLU(d, d)
	}
}

// placePooled is place for a convolution fused with a max pooling: the
// product of the span's images for group grp (src, each channel's row
// holding the images' planes side by side, row stride ld) gets the bias
// and ReLU in place, a channel's row at a time, as place would give them
// to the output (the same elementwise operations, so the same bits;
// inPlace says the product was computed where place would have found it,
// in the output: one image), and each plane is then pooled into j.pooled
// and j.pidx.
func (j *convJob) placePooled(sp span, grp int, src []float32, ld int, inPlace bool) {
	g, pg := &j.g, &j.pool
	q := pg.oh * pg.ow
	for o := 0; o < g.opg; o++ {
		row := src[o*ld:][:(sp.i1-sp.i0)*g.p]
		if inPlace {
			j.epilogue(row, nil, grp, o)
		} else {
			j.epilogue(row, row, grp, o)
		}
		for img := sp.i0; img < sp.i1; img++ {
			pl := (img*g.cout + grp*g.opg + o) * q
			var idx []float32
			if j.pidx != nil {
				idx = j.pidx[pl:][:q]
			}
			simd.MaxPool2x2(j.pooled[pl:][:q], idx, row[(img-sp.i0)*g.p:][:g.p], g.oh, g.ow)
		}
	}
}

func (j *convJob) forwardChunk(buf *workBuf, sp span, grp, p0, p1 int) {
	g := &j.g
	b, ldb := j.unrolled(buf, sp, grp, p0, p1)
	a := j.w[grp*g.opg*g.k:]
	one := sp.i1-sp.i0 == 1
	if one && !j.pooling {
		simd.Sgemm(false, false, g.opg, p1-p0, g.k, 1, a, max(g.k, 1), b, ldb, 0, g.outRows(j.out, sp.i0, grp, p0), g.p)
		j.place(sp.i0, grp, p0, p1, nil, 0)
		return
	}
	// Several whole images, or pooled ones: the product goes to buf.prod,
	// then to each image's rows with the bias and ReLU (or pooled from
	// there: one image's rows then have the output's row stride p).
	buf.prod = growF(buf.prod, g.opg*ldb)
	simd.Sgemm(false, false, g.opg, ldb, g.k, 1, a, max(g.k, 1), b, ldb, 0, buf.prod, ldb)
	if j.pooling {
		j.placePooled(sp, grp, buf.prod, ldb, one)
		return
	}
	for img := sp.i0; img < sp.i1; img++ {
		j.place(img, grp, 0, g.p, buf.prod[(img-sp.i0)*g.p:], ldb)
	}
}

// forwardBlock computes output rows i0..i1 of a group of image img on the
// shifted path: it pads the input rows they read into buf.col, one plane
// of g.plane elements per channel with rows of wp, so that kernel tap (u,
// v) of output (i, j) reads element (i + u·dh)·wp + j + v·dw of each plane.
// The product of tap (u, v) is then the tap's weights [opg, cpg] times the
// planes read from that offset, [cpg, rows·wp] with row stride g.plane,
// summed over the taps in buf.prod; columns j ≥ ow of each row are
// computed and dropped.
func (j *convJob) forwardBlock(buf *workBuf, img, grp, i0, i1 int) {
	g := &j.g
	rows := i1 - i0
	buf.col = growF(buf.col, g.cpg*g.plane)
	in := g.channels(j.x, img, grp)
	for c := 0; c < g.cpg; c++ {
		plane := buf.col[c*g.plane:][:g.plane]
		src := in[c*g.h*g.w:][:g.h*g.w]
		for r := 0; r < rows+g.ext; r++ {
			d := plane[r*g.wp:][:g.wp]
			ih := i0 + r - g.ph
			if ih < 0 || ih >= g.h {
				clear(d)
				continue
			}
			clear(d[:g.pw])
			copy(d[g.pw:g.pw+g.w], src[ih*g.w:])
			clear(d[g.pw+g.w:])
		}
		clear(plane[(rows+g.ext)*g.wp:])
	}
	n := rows * g.wp
	buf.prod = growF(buf.prod, g.opg*n)
	taps := g.kh * g.kw
	for t := 0; t < taps; t++ {
		u, v := t/g.kw, t%g.kw
		var beta float32 = 1
		if t == 0 {
			beta = 0
		}
		a := j.w[(grp*taps+t)*g.opg*g.cpg:]
		simd.Sgemm(false, false, g.opg, n, g.cpg, 1, a, g.cpg, buf.col[u*g.dh*g.wp+v*g.dw:], g.plane, beta, buf.prod, n)
	}
	out := g.outRows(j.out, img, grp, i0*g.ow)
	for o := 0; o < g.opg; o++ {
		bias := j.biasOf(grp, o)
		for r := 0; r < rows; r++ {
			simd.AddScalar(out[o*g.p+r*g.ow:][:g.ow], buf.prod[o*n+r*g.wp:][:g.ow], bias)
		}
		if g.relu { // the channel's rows are contiguous in out
			d := out[o*g.p:][:rows*g.ow]
			simd.ReLU(d, d)
		}
	}
}

// backwardImages sets dx of the group's channels of the span's images:
// Wᵀ·dy, for the images side by side, then col2im of each.
func (j *convJob) backwardImages(buf *workBuf, sp span, grp int) {
	g := &j.g
	wg := j.w[grp*g.opg*g.k:]
	if g.pointwise {
		// dx of the group's channels is Wᵀ·dy (one image a span).
		dy, dx := g.outRows(j.out, sp.i0, grp, 0), g.channels(j.x, sp.i0, grp)
		simd.Sgemm(true, false, g.k, g.p, g.opg, 1, wg, max(g.k, 1), dy, g.p, 0, dx, g.p)
		return
	}
	dy, ld := j.gathered(buf, sp, grp, 0, g.p)
	buf.col = growF(buf.col, g.k*ld)
	simd.Sgemm(true, false, g.k, ld, g.opg, 1, wg, max(g.k, 1), dy, ld, 0, buf.col, ld)
	for img := sp.i0; img < sp.i1; img++ {
		dx := g.channels(j.x, img, grp)
		for c := 0; c < g.cpg; c++ {
			g.col2im(dx[c*g.h*g.w:][:g.h*g.w], buf.col[c*g.kh*g.kw*ld+(img-sp.i0)*g.p:], ld)
		}
	}
}

// weightChunk adds the chunk's dy [opg, p1-p0] times its im2col matrix
// transposed to the worker's weight gradient of the group.
func (j *convJob) weightChunk(buf *workBuf, sp span, grp, p0, p1 int) {
	g := &j.g
	b, ldb := j.unrolled(buf, sp, grp, p0, p1)
	dy, lda := j.gathered(buf, sp, grp, p0, p1)
	if g.wT {
		simd.Sgemm(false, true, g.k, g.opg, ldb, 1, b, ldb, dy, lda, 1, buf.dw[grp*g.opg*g.k:], g.opg)
		return
	}
	simd.Sgemm(false, true, g.opg, g.k, ldb, 1, dy, lda, b, ldb, 1, buf.dw[grp*g.opg*g.k:], max(g.k, 1))
}

// validCols returns the range of output columns lo..hi that read input column
// o·s + off inside 0..n, for o in 0..out.
func validCols(off, s, n, out int) (lo, hi int) {
	if off < 0 {
		lo = (-off-1)/s + 1 // ceil(-off/s), without overflow for a huge s
	}
	if n-1-off < 0 {
		return 0, 0
	}
	hi = min(out, (n-1-off)/s+1)
	return min(lo, hi), hi
}

// im2col writes the kh·kw rows of one input channel for output pixels
// p0..p1 into rows (row stride ld): row (u, v), column q - p0 holds the
// plane at (i·sh - ph + u·dh, j·sw - pw + v·dw) for pixel q = i·ow + j,
// zero outside.
func (g *convGeom) im2col(rows []float32, ld int, plane []float32, p0, p1 int) {
	n := p1 - p0
	for u := 0; u < g.kh; u++ {
		for v := 0; v < g.kw; v++ {
			row := rows[(u*g.kw+v)*ld:][:n]
			offW := v*g.dw - g.pw
			lo, hi := validCols(offW, g.sw, g.w, g.ow)
			if g.sameWidth() {
				// One copy of the tap's shifted plane, then the columns
				// that read the padding (and got a neighbour row) cleared.
				qa, qb, delta := g.tapRun(u, offW, p0, p1)
				if qa == qb {
					clear(row)
					continue
				}
				clear(row[:qa-p0])
				copy(row[qa-p0:qb-p0], plane[qa+delta:qb+delta])
				clear(row[qb-p0:])
				g.clearPadCols(row, p0, qa, qb, lo, hi)
				continue
			}
			for q := p0; q < p1; {
				i, j0 := q/g.ow, q%g.ow
				j1 := min(g.ow, j0+p1-q)
				d := row[q-p0 : q-p0+j1-j0]
				q += j1 - j0
				ih := i*g.sh - g.ph + u*g.dh
				a, b := max(lo, j0), min(hi, j1) // valid columns in j0..j1
				if ih < 0 || ih >= g.h || a >= b {
					clear(d)
					continue
				}
				clear(d[:a-j0])
				clear(d[b-j0:])
				src := plane[ih*g.w:][:g.w]
				if g.sw == 1 {
					copy(d[a-j0:b-j0], src[a+offW:b+offW])
					continue
				}
				for j := a; j < b; j++ {
					d[j-j0] = src[j*g.sw+offW]
				}
			}
		}
	}
}

// sameWidth reports whether output rows are as wide as input rows with
// stride 1 (a "same" convolution): then every kernel tap reads the plane
// at a constant offset from the output pixel, q + delta, and im2col and
// col2im move whole runs instead of rows.
func (g *convGeom) sameWidth() bool { return g.sh == 1 && g.sw == 1 && g.ow == g.w }

// tapRun returns, for kernel row u and column offset offW (v·dw - pw), the
// pixels qa..qb within p0..p1 whose tap lies in a row of the plane and in
// the plane's bounds (qa == qb when none does), and the offset delta of their plane elements (pixel
// q reads plane[q+delta]). Pixels in that run whose column reads the
// padding still map into the plane (a neighbour row): clearPadCols.
func (g *convGeom) tapRun(u, offW, p0, p1 int) (qa, qb, delta int) {
	delta = (u*g.dh-g.ph)*g.w + offW
	iLo, iHi := max(0, g.ph-u*g.dh), min(g.oh, g.h+g.ph-u*g.dh)
	qa = min(p1, max(p0, iLo*g.ow, -delta))
	qb = max(qa, min(p1, iHi*g.ow, g.h*g.w-delta))
	return qa, qb, delta
}

// clearPadCols clears the elements of row (pixels from p0 on) in qa..qb
// whose output column j is outside the tap's valid columns lo..hi.
func (g *convGeom) clearPadCols(row []float32, p0, qa, qb, lo, hi int) {
	for j := 0; j < g.ow; j++ {
		if j == lo {
			if j = hi; j >= g.ow {
				break
			}
		}
		// Column j of every output row from qa on: one strided pass.
		q := qa - qa%g.ow + j
		if q < qa {
			q += g.ow
		}
		for ; q < qb; q += g.ow {
			row[q-p0] = 0
		}
	}
}

// col2im sets one input channel's plane to the sum of the im2col rows (of
// a whole image, row stride ld) that read each of its elements: the
// adjoint of im2col.
func (g *convGeom) col2im(plane, rows []float32, ld int) {
	clear(plane)
	for u := 0; u < g.kh; u++ {
		for v := 0; v < g.kw; v++ {
			row := rows[(u*g.kw+v)*ld:][:g.p]
			offW := v*g.dw - g.pw
			lo, hi := validCols(offW, g.sw, g.w, g.ow)
			if lo == hi {
				continue
			}
			if g.sameWidth() {
				// The adjoint of im2col's run: clear the columns that read
				// the padding (rows is scratch), then one Add.
				qa, qb, delta := g.tapRun(u, offW, 0, g.p)
				if qa == qb {
					continue
				}
				g.clearPadCols(row, 0, qa, qb, lo, hi)
				d := plane[qa+delta : qb+delta]
				simd.Add(d, d, row[qa:qb])
				continue
			}
			for i := 0; i < g.oh; i++ {
				ih := i*g.sh - g.ph + u*g.dh
				if ih < 0 || ih >= g.h {
					continue
				}
				d, s := plane[ih*g.w:][:g.w], row[i*g.ow:][:g.ow]
				if g.sw == 1 {
					dd := d[lo+offW : hi+offW]
					simd.Add(dd, dd, s[lo:hi])
					continue
				}
				for j := lo; j < hi; j++ {
					d[j*g.sw+offW] += s[j]
				}
			}
		}
	}
}

// target returns dst when it is contiguous, else a new tensor of its shape
// that finish copies into dst.
func target(dst *Tensor) *Tensor {
	if dst.IsContiguous() {
		return dst
	}
	return New(dst.shape...)
}

// finish copies out, from target(dst), into dst when they differ.
func finish(dst, out *Tensor) {
	if out != dst {
		CopyInto(dst, out)
	}
}

// weightBuf holds the forward weights rearranged for the shifted path.
var weightBufs = sync.Pool{New: func() any { return new([]float32) }}

func convForward(op string, g *convGeom, dst, x, w, bias *Tensor) {
	j := newConvJob(g, forwardIm2col)
	j.x, j.w = x.hostData(op), w.hostData(op)
	if bias != nil {
		j.bias = bias.hostData(op)
	}
	if !g.shifted {
		j.runInto(op, dst, &j.out)
		return
	}
	// [cout, cpg, kh, kw] to [groups, kh·kw, opg, cpg].
	wb := weightBufs.Get().(*[]float32)
	*wb = growF(*wb, len(j.w))
	taps := g.kh * g.kw
	for o := 0; o < g.cout; o++ {
		grp, oo := o/g.opg, o%g.opg
		for c := 0; c < g.cpg; c++ {
			for t := 0; t < taps; t++ {
				(*wb)[((grp*taps+t)*g.opg+oo)*g.cpg+c] = j.w[(o*g.cpg+c)*taps+t]
			}
		}
	}
	j.w, j.phase = *wb, forwardShifted
	j.runInto(op, dst, &j.out)
	weightBufs.Put(wb)
}

func convBackwardInput(op string, g *convGeom, dx, dy, w *Tensor) {
	j := newConvJob(g, backwardInput)
	j.w, j.out = w.hostData(op), dy.hostData(op)
	j.runInto(op, dx, &j.x)
}

func convBackwardWeight(op string, g *convGeom, dw, dy, x *Tensor) {
	j := newConvJob(g, backwardWeight)
	j.x, j.out = x.hostData(op), dy.hostData(op)
	j.runInto(op, dw, &j.dw)
}

// newConvJob returns a job (from convJobs) of the given phase of the
// convolution g; its operands are for the caller to set.
func newConvJob(g *convGeom, phase int) *convJob {
	j := convJobs.Get().(*convJob)
	j.g, j.phase = *g, phase
	return j
}

// runInto runs j with dst's elements as the phase's output, *into (a
// field of j: out, x for backwardInput, dw for backwardWeight, pooled
// for a pooled forward), through a contiguous copy that it then writes
// into dst when dst is not contiguous; it returns j to convJobs, and
// returns the invalid pooling index that a worker met (dst then partly
// written), nil when none.
func (j *convJob) runInto(op string, dst *Tensor, into *[]float32) *float32 {
	out := target(dst)
	if out.Len() > 0 {
		*into = out.hostData(op)
		j.run()
	}
	bad := j.badIndex.get()
	j.release()
	if bad == nil {
		finish(dst, out)
	}
	return bad
}

// run runs j's phase, its fields set, as a parallel loop over its items;
// the weight gradient's parts are then summed into j.dw in item order.
func (j *convJob) run() {
	g := &j.g
	switch j.phase {
	case forwardShifted:
		parallelProducts(j, g.n*g.blocks, g.groups*g.opg*g.k*g.rows*g.wp, g.opg*g.cpg*g.rows*g.wp)
	case backwardInput:
		parallelProducts(j, g.spans, g.groups*g.opg*g.k*g.p*g.imgs, g.opg*g.k*g.p*g.imgs)
	default: // forwardIm2col, backwardWeight: items of chunks
		if j.phase == backwardWeight {
			clear(j.dw)
		}
		parallelProducts(j, g.spans*g.chunks, g.groups*g.opg*g.k*g.cols*g.imgs, g.opg*g.k*g.cols*g.imgs)
	}
	if j.phase == backwardWeight {
		j.parts.sum(j.addPart)
	}
}

// release returns j to convJobs, cleared but for its parts' list.
func (j *convJob) release() {
	kept := j.parts.list
	*j = convJob{}
	j.parts.list = kept[:0]
	convJobs.Put(j)
}

// Conv2DShape returns the output shape [N, Cout, OH, OW] of Conv2D(x, w,
// ·, p), panicking as Conv2D does when x and w do not agree.
func Conv2DShape(x, w *Tensor, p ConvParams) [4]int {
	checkNil("Conv2DShape", "x, w", x, w)
	g := planConv("Conv2DShape", x.shape, w.shape, p)
	return g.outShape()
}
