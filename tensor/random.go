package tensor

import (
	"fmt"
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

// philox4x32 is Philox4x32-10 of counter c under key k.
func philox4x32(c [4]uint32, k [2]uint32) [4]uint32 {
	for r := range 10 {
		if r > 0 {
			k[0] += philoxW0
			k[1] += philoxW1
		}
		hi0, lo0 := bits.Mul32(philoxM0, c[0])
		hi1, lo1 := bits.Mul32(philoxM1, c[2])
		c = [4]uint32{hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0}
	}
	return c
}

// philoxBlock returns the four words of counter block b of seed's stream.
func philoxBlock(seed, b uint64) [4]uint32 {
	return philox4x32([4]uint32{uint32(b), uint32(b >> 32)}, [2]uint32{uint32(seed), uint32(seed >> 32)})
}

// uniform24 maps a word to its uniform in [0, 1): its top 24 bits over
// 2²⁴.
func uniform24(w uint32) float32 { return float32(w>>8) * (1.0 / (1 << 24)) }

// philoxChunk is the elements of one part of a random op on the CPU (a
// multiple of 4, so that parts start on block boundaries).
const philoxChunk = 1 << 12

// philoxJob fills dst with uniforms (x nil) or with x·mask (Dropout) from
// the stream of seed at block offset; dst and x are contiguous.
type philoxJob struct {
	dst, x       []float32
	p, scale     float32
	seed, offset uint64
}

var philoxJobs = sync.Pool{New: func() any { return new(philoxJob) }}

func (j *philoxJob) RunRange(lo, hi int) {
	for c := lo; c < hi; c++ {
		start, end := c*philoxChunk, min((c+1)*philoxChunk, len(j.dst))
		for i := start; i < end; i += 4 {
			w := philoxBlock(j.seed, j.offset+uint64(i/4))
			for k := range min(4, end-i) {
				u := uniform24(w[k])
				if j.x == nil {
					j.dst[i+k] = u
					continue
				}
				m := j.scale
				if u < j.p {
					m = 0
				}
				j.dst[i+k] = j.x[i+k] * m
			}
		}
	}
}

// philoxFill runs a philoxJob over dst (and x) on the worker pool; a
// block costs some twenty operations an element, so the split counts
// each element as four of an elementwise op.
func philoxFill(dst, x []float32, p float32, seed, offset uint64) {
	j := philoxJobs.Get().(*philoxJob)
	*j = philoxJob{dst: dst, x: x, p: p, scale: 1 / (1 - p), seed: seed, offset: offset}
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
