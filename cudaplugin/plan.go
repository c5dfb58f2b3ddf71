package cudaplugin

import (
	"fmt"
	"math"

	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/tensor"
)

// tileConfig is one instantiation of the SGEMM and Conv2D kernels (gemm.cu,
// conv.cu): a block of threads computes a bm×bn tile of the product.
type tileConfig struct {
	id      int // LANES_TILE_128 or LANES_TILE_64 in kernels.h
	bm, bn  int
	threads int
}

// tileConfigs lists the instantiations in lanes_sgemm and lanes_conv2d,
// largest first: 128×128 tiles with an 8×8 register block per thread,
// 64×64 tiles with 4×4 (the slice depths are gemm.cu's and conv.cu's, measured with
// cudaplugin/tune).
var tileConfigs = [...]tileConfig{
	{id: 0, bm: 128, bn: 128, threads: 256},
	{id: 1, bm: 64, bn: 64, threads: 256},
}

// Limits of a CUDA grid.
const (
	maxGridX  = 1<<31 - 1
	maxGridYZ = 65535
)

// launchPlan is a tile configuration and the grid that covers an m×n
// product gz times: x over columns, y over rows, z over the batch (or the
// groups of a convolution).
type launchPlan struct {
	cfg        tileConfig
	gx, gy, gz int
	splits     int // parts of k summed by separate blocks (1: none; see planSplits)
}

func (p launchPlan) blocks() int { return p.gx * p.gy * p.gz }

// Split-K: a grid of few blocks leaves much of the device idle while each
// block walks all of k one slice after another, each slice waiting on
// memory. Cutting k into parts summed by separate blocks (into a
// workspace that a second kernel adds up in order, so that results do not
// depend on timing) fills the device. Measured on an H100 with
// cudaplugin/tune (bench/results/gpu-h100/tune.txt), 64×64 tiles: the best
// split gives about 2.5 blocks per SM (1×64×56×56 3×3 convolution, 49
// blocks: 60 µs whole, 24 µs in 8 parts; 4×64×56×56, 196 blocks: 75 and
// 59 µs in 2; 64×64×4096 SGEMM, one block: 240 and 24 µs in 16), and
// parts of 36 deep still pay (1×64×28×28: 60 µs whole, 16 µs in 16 parts
// of 576).
const (
	splitMinK = 32 // the shallowest part
	maxSplits = 16
)

// planSplits returns the parts to cut k into for a grid of blocks on a
// device of sms SMs, 1 for none: enough for about 2.5 blocks per SM.
func planSplits(blocks, k, sms int) int {
	if blocks == 0 || blocks >= 2*sms || k < 2*splitMinK {
		return 1
	}
	want := (5*sms + 2*blocks - 1) / (2 * blocks)
	return max(1, min(want, k/splitMinK, maxSplits))
}

// planTiles plans an m×n product over k, gz times. It picks the large
// tile unless that gives fewer blocks than the device has SMs (each SM
// then idles part of the time and the smaller tile, four times as many
// blocks, keeps more of them busy) or the product is at most half a large
// tile high or wide (half of each block's work would be masked off: a
// 64-channel convolution); with the small tile it splits k (planSplits)
// when even that grid leaves most SMs idle.
func planTiles(m, n, k, gz, sms int) (launchPlan, error) {
	if m < 0 || n < 0 || k < 0 || gz < 0 {
		panic(fmt.Sprintf("cudaplugin: planTiles: negative size %d×%d×%d, %d times", m, n, k, gz))
	}
	plan := func(c tileConfig) launchPlan {
		return launchPlan{cfg: c, gx: ceilDiv(n, c.bn), gy: ceilDiv(m, c.bm), gz: gz, splits: 1}
	}
	p := plan(tileConfigs[0])
	if p.blocks() < sms || 2*m <= p.cfg.bm || 2*n <= p.cfg.bn {
		p = plan(tileConfigs[1])
	}
	if p.gx > maxGridX || p.gy > maxGridYZ || p.gz > maxGridYZ {
		return p, fmt.Errorf("cudaplugin: a %d×%d product %d times needs a grid of %d×%d×%d blocks, beyond CUDA's limits", m, n, gz, p.gx, p.gy, p.gz)
	}
	if p.cfg == tileConfigs[1] { // the small tile: the one chosen for small grids
		p.splits = planSplits(p.blocks(), k, sms)
		if p.splits > 1 { // then gz ≥ 1, and gz ≤ maxGridYZ from the check above
			p.splits = min(p.splits, maxGridYZ/p.gz)
		}
	}
	return p, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// vectorizable reports whether the kernels may read a matrix at element
// offset off (of a 16-byte aligned buffer) with leading dimension ld and
// batch stride stride in float4s.
func vectorizable(off, ld, stride int) bool {
	return off%4 == 0 && ld%4 == 0 && stride%4 == 0
}

// matmulShape is a MatMul after NumPy's rules (as tensor.MatMul): a and b
// as stacks of matrices (1-D operands made 2-D), the batch shape and the
// result's shape.
type matmulShape struct {
	m, n, k          int
	aShape, aStrides []int // at least 2-D
	bShape, bStrides []int
	batch            []int
	out              []int
}

// planMatMul checks shapes with shape.PlanMatMul, as tensor.MatMul does,
// and panics with both shapes on a mismatch (tensor has checked them
// before calling the backend; the check guards direct callers). A 1-D a
// becomes a 1×k row, a 1-D b a k×1 column.
func planMatMul(as, ast, bs, bst []int) matmulShape {
	p, err := shape.PlanMatMul(as, bs)
	if err != nil {
		panic(fmt.Sprintf("cudaplugin: MatMul: shapes %v and %v: %v", as, bs, err))
	}
	s := matmulShape{m: p.M, n: p.N, k: p.K, batch: p.Batch, out: p.Out,
		aShape: as, aStrides: ast, bShape: bs, bStrides: bst}
	if len(as) == 1 {
		s.aShape, s.aStrides = []int{1, as[0]}, []int{as[0] * ast[0], ast[0]}
	}
	if len(bs) == 1 {
		s.bShape, s.bStrides = []int{bs[0], 1}, []int{bst[0], 1}
	}
	return s
}

func (s *matmulShape) batchCount() int {
	c := 1
	for _, d := range s.batch {
		c *= d
	}
	return c
}

// batchOffsets returns the element offset of each matrix of a stack of
// the given shape and strides (the last two dimensions are the matrix)
// for each index of the broadcast batch shape, in row-major order.
func batchOffsets(batch, shape, strides []int) []int {
	count := 1
	for _, d := range batch {
		count *= d
	}
	offs := make([]int, count)
	lead := len(shape) - 2
	skip := len(batch) - lead // batch dimensions the operand lacks
	for i := range offs {
		rest, off := i, 0
		for d := len(batch) - 1; d >= 0; d-- {
			idx := rest % batch[d]
			rest /= batch[d]
			if j := d - skip; j >= 0 && shape[j] != 1 {
				off += idx * strides[j]
			}
		}
		offs[i] = off
	}
	return offs
}

// uniformStride reports whether offs is 0, s, 2s, ... and returns s: then
// one launch covers the whole batch.
func uniformStride(offs []int) (int, bool) {
	if len(offs) < 2 {
		return 0, len(offs) == 0 || offs[0] == 0
	}
	s := offs[1] - offs[0]
	for i, o := range offs {
		if o != offs[0]+i*s || offs[0] != 0 {
			return 0, false
		}
	}
	return s, true
}

// convShape is a Conv2D's geometry for lanes_conv2d.
type convShape struct {
	n, c, h, w, cout, kh, kw   int
	sh, sw, ph, pw, dh, dw, gr int
	oh, ow                     int
}

func (g convShape) gemm() (m, n, k int) {
	return g.cout / g.gr, g.n * g.oh * g.ow, g.c / g.gr * g.kh * g.kw
}

// planConv checks the shapes and parameters of a convolution (as
// tensor.Conv2D, whose ConvParams' zero values mean stride 1, dilation 1,
// one group) and panics naming both shapes when they do not fit.
func planConv(op string, xs, ws []int, stride, padding, dilation [2]int, groups int) convShape {
	if len(xs) != 4 || len(ws) != 4 {
		panic(fmt.Sprintf("cudaplugin: %s: shapes %v and %v: want input [N, C, H, W] and weight [Cout, C/groups, kh, kw]", op, xs, ws))
	}
	def := func(v int) int {
		if v == 0 {
			return 1
		}
		return v
	}
	g := convShape{n: xs[0], c: xs[1], h: xs[2], w: xs[3], cout: ws[0], kh: ws[2], kw: ws[3],
		sh: def(stride[0]), sw: def(stride[1]), ph: padding[0], pw: padding[1],
		dh: def(dilation[0]), dw: def(dilation[1]), gr: def(groups)}
	if g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.ph < 0 || g.pw < 0 || g.gr < 1 ||
		g.c%g.gr != 0 || g.cout%g.gr != 0 || ws[1] != g.c/g.gr || g.kh < 1 || g.kw < 1 {
		panic(fmt.Sprintf("cudaplugin: %s: shapes %v and %v do not agree with stride %v, padding %v, dilation %v, groups %d", op, xs, ws, stride, padding, dilation, groups))
	}
	eh, ew := g.dh*(g.kh-1)+1, g.dw*(g.kw-1)+1
	if g.h+2*g.ph < eh || g.w+2*g.pw < ew {
		panic(fmt.Sprintf("cudaplugin: %s: shapes %v and %v: kernel extent %dx%d larger than the padded input", op, xs, ws, eh, ew))
	}
	g.oh, g.ow = (g.h+2*g.ph-eh)/g.sh+1, (g.w+2*g.pw-ew)/g.sw+1
	return g
}

// fitsInt32 reports whether every count the kernels keep in an int fits.
func (g convShape) fitsInt32() bool {
	m, n, k := g.gemm()
	return fitsInt32(m, n, k, g.c*g.h*g.w, g.oh*g.ow)
}

// fitsInt32 reports whether every size fits the int the kernels keep it in
// (kernels.h): a size of 2³¹ or more would wrap round in the conversion to
// C.int. Callers build their error only when it does not.
func fitsInt32(sizes ...int) bool {
	for _, v := range sizes {
		if v < 0 || v > math.MaxInt32 {
			return false
		}
	}
	return true
}

// checkPoolIndices panics, as tensor.MaxPool2D does, when max pooling with
// indices is asked of a plane whose float32 indices would not be exact
// (more than tensor.MaxIndexPlane elements).
func checkPoolIndices(op string, xs []int) {
	if len(xs) == 4 && xs[2]*xs[3] > tensor.MaxIndexPlane {
		panic(fmt.Sprintf("cudaplugin: %s: shape %v: indices into a plane of %d·%d elements would not be exact in float32 (tensor.MaxIndexPlane = 2²⁴)", op, xs, xs[2], xs[3]))
	}
}
