package tensor

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror and
// Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11; the
// Random123 library), so that the numbers an op draws depend on its seed,
// its offset and the element's position only: any element can be computed
// on its own, in any order, on any device, and the same (seed, offset)
// gives the same numbers on the CPU and on every device.
//
// The stream of a seed is the sequence of 128-bit counter blocks 0, 1, 2,
// ...: block c is Philox4x32-10 of the counter (c mod 2³², c >> 32, 0, 0)
// under the key (seed mod 2³², seed >> 32), four 32-bit words. An op
// over n elements starting at block offset gives element i (in row-major
// order of its shape, whatever its strides) word i mod 4 of block
// offset + ⌊i/4⌋ (mod 2⁶⁴), and so uses PhiloxBlocks(n) blocks: a caller
// drawing again from the same seed starts the next op at offset +
// PhiloxBlocks(n). A word w becomes the uniform u = ⌊w/2⁸⌋·2⁻²⁴ in [0, 1),
// exact in float32.
//
// With dst (or x) on a device the ops run on that device's Random family
// (RandomKernels); the operands must all be on that device. A device
// without the family, or an error of its implementation, makes the op
// panic naming it, the shapes and the devices.

// RandomKernels is the family of counter-based random ops. The public
// functions have checked the shapes and p.
type RandomKernels interface {
	// Uniform sets each element of dst to the uniform of its position
	// in the stream of seed from block offset (see above).
	Uniform(dst *Tensor, seed, offset uint64) error
	// Dropout sets dst = x·m elementwise, x of dst's shape, where m is
	// 1/(1-p) (rounded to float32) where the element's uniform is at
	// least p and 0 where it is below p; 0 ≤ p < 1.
	Dropout(dst, x *Tensor, p float32, seed, offset uint64) error
}

// PhiloxBlocks returns the number of counter blocks an op over n elements
// uses, ⌈n/4⌉: the offset of the next op that draws from the same seed
// advances by it.
func PhiloxBlocks(n int) uint64 {
	if n < 0 {
		panic(fmt.Sprintf("tensor: PhiloxBlocks: %d elements", n))
	}
	return uint64(n+3) / 4
}

// UniformInto sets each element of dst to a number uniform in [0, 1): the
// uniform of its row-major position in the Philox stream of seed, from
// counter block offset (see PhiloxBlocks), and returns dst.
func UniformInto(dst *Tensor, seed, offset uint64) *Tensor {
	const op = "UniformInto"
	checkNil(op, "dst", dst)
	checkWritable(op, dst)
	dev := deviceOn(op, dst)
	ran(op, randomOn(op, dev, dst).Uniform(dst, seed, offset), dst)
	return dst
}

// Dropout returns x with each element zeroed with probability p, and the
// others scaled by 1/(1-p) so that the expectation is unchanged (x times
// the mask, so a NaN or an infinity of x that is dropped gives NaN, as
// PyTorch's). Element i is dropped when its uniform (see UniformInto) is
// below p. The same x, p, seed and offset give the same result on every
// device; applied to a gradient, it is the dropout's backward pass. p must
// be in [0, 1).
func Dropout(x *Tensor, p float32, seed, offset uint64) *Tensor {
	const op = "Dropout"
	checkNil(op, "x", x)
	checkDropout(op, p)
	dev := deviceOn(op, nil, x)
	k := randomOn(op, dev, nil, x)
	dst := result(op, dev, x.shape, x)
	ran(op, k.Dropout(dst, x, p, seed, offset), dst, x)
	return dst
}

// DropoutInto sets dst to Dropout(x, p, seed, offset) and returns it; dst
// has x's shape and may be x.
func DropoutInto(dst, x *Tensor, p float32, seed, offset uint64) *Tensor {
	const op = "DropoutInto"
	checkNil(op, "dst, x", dst, x)
	checkDropout(op, p)
	if !slices.Equal(dst.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: dst of shape %v, x of shape %v", op, dst.shape, x.shape))
	}
	checkWritable(op, dst)
	dev := deviceOn(op, dst, x)
	k := randomOn(op, dev, dst, x)
	if dev == CPU {
		x = unalias(dst, x)
	}
	ran(op, k.Dropout(dst, x, p, seed, offset), dst, x)
	return dst
}

func checkDropout(op string, p float32) {
	if !(p >= 0 && p < 1) {
		panic(fmt.Sprintf("tensor: %s: probability %v outside [0, 1)", op, p))
	}
}

// The Philox4x32 constants: the multipliers and the Weyl key increments
// (the golden ratio and √3 - 1 as 32-bit fractions), Random123's.
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// philoxRound is one round of Philox4x32 on the counter (c0, c1, c2, c3)
// under the round's key (k0, k1).
func philoxRound(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	hi0, lo0 := bits.Mul32(philoxM0, c0)
	hi1, lo1 := bits.Mul32(philoxM1, c2)
	return hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
}

// philox4x32 is Philox4x32-10 of the counter (c0, c1, c2, c3) under the
// key (k0, k1): ten rounds, the key bumped by the Weyl constants before
// each but the first.
func philox4x32(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	for r := range 10 {
		if r > 0 {
			k0 += philoxW0
			k1 += philoxW1
		}
		c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	}
	return c0, c1, c2, c3
}

// philoxWords sets w to the words of seed's stream from counter block b
// on: w[i] is word i mod 4 of block b + ⌊i/4⌋. It computes two blocks at
// a time, whose rounds interleave (twice the throughput of one chain of
// multiplies).
func philoxWords(w []uint32, seed, b uint64) {
	s0, s1 := uint32(seed), uint32(seed>>32)
	i := 0
	for ; i+8 <= len(w); i, b = i+8, b+2 {
		a0, a1, a2, a3 := uint32(b), uint32(b>>32), uint32(0), uint32(0)
		c0, c1, c2, c3 := uint32(b+1), uint32((b+1)>>32), uint32(0), uint32(0)
		k0, k1 := s0, s1
		for r := range 10 {
			if r > 0 {
				k0 += philoxW0
				k1 += philoxW1
			}
			a0, a1, a2, a3 = philoxRound(a0, a1, a2, a3, k0, k1)
			c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
		}
		w := w[i : i+8 : i+8]
		w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7] = a0, a1, a2, a3, c0, c1, c2, c3
	}
	for ; i < len(w); i, b = i+4, b+1 {
		w0, w1, w2, w3 := philox4x32(uint32(b), uint32(b>>32), 0, 0, s0, s1)
		copy(w[i:], []uint32{w0, w1, w2, w3})
	}
}

// uniform24 maps a word to its uniform in [0, 1): its top 24 bits over
// 2²⁴.
func uniform24(w uint32) float32 { return float32(w>>8) * (1.0 / (1 << 24)) }

// philoxChunk is the elements of one part of a random op on the CPU (a
// multiple of 8, so that parts start on block pairs), and of the words a
// part computes at a time.
const philoxChunk = 1 << 10

// philoxJob fills dst with uniforms (x nil) or with x·mask (Dropout, the
// mask 0 or scale) from the stream of seed at block offset; dst and x are
// contiguous. An element is dropped when its uniform k·2⁻²⁴ is below p,
// that is when k < thr = ⌈p·2²⁴⌉: the test is on integers, without a
// branch (the outcomes are random).
type philoxJob struct {
	dst, x       []float32
	thr          uint32
	scale        float32
	seed, offset uint64
}

var philoxJobs = sync.Pool{New: func() any { return new(philoxJob) }}

func (j *philoxJob) RunRange(lo, hi int) {
	var words [philoxChunk]uint32
	keep := math.Float32bits(j.scale)
	for c := lo; c < hi; c++ {
		start, end := c*philoxChunk, min((c+1)*philoxChunk, len(j.dst))
		w := words[:end-start]
		philoxWords(w, j.seed, j.offset+uint64(start/4))
		dst := j.dst[start:end]
		if j.x == nil {
			for i, v := range w {
				dst[i] = uniform24(v)
			}
			continue
		}
		x := j.x[start:end]
		for i, v := range w {
			drop := uint32((int32(v>>8) - int32(j.thr)) >> 31) // all ones when dropped
			dst[i] = x[i] * math.Float32frombits(keep&^drop)
		}
	}
}

// philoxFill runs a philoxJob over dst (and x) on the worker pool; a
// block costs some twenty operations an element, so the split counts
// each element as four of an elementwise op.
func philoxFill(dst, x []float32, p float32, seed, offset uint64) {
	j := philoxJobs.Get().(*philoxJob)
	*j = philoxJob{dst: dst, x: x, thr: uint32(math.Ceil(float64(p) * (1 << 24))), scale: 1 / (1 - p), seed: seed, offset: offset}
	parallel(j, (len(dst)+philoxChunk-1)/philoxChunk, 4*len(dst))
	*j = philoxJob{}
	philoxJobs.Put(j)
}

// Uniform is the CPU's UniformInto: dst on the host.
func (cpuKernels) Uniform(dst *Tensor, seed, offset uint64) error {
	out := target(dst)
	philoxFill(out.data[out.offset:out.offset+out.Len()], nil, 0, seed, offset)
	finish(dst, out)
	return nil
}

// Dropout is the CPU's Dropout: dst and x on the host, of one shape, x not
// overlapping dst unless it is dst (same layout). Contiguous operands are
// one pass; others go through a contiguous mask.
func (cpuKernels) Dropout(dst, x *Tensor, p float32, seed, offset uint64) error {
	n := dst.Len()
	if dst.IsContiguous() && x.IsContiguous() {
		philoxFill(dst.data[dst.offset:dst.offset+n], x.data[x.offset:x.offset+n], p, seed, offset)
		return nil
	}
	mask := Ones(dst.shape...)
	philoxFill(mask.data, mask.data, p, seed, offset)
	return cpuKernels{}.Binary(ElemMul, dst, x, mask)
}
