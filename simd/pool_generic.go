package simd

import (
	"unsafe"

	"github.com/lanesgo/lanes/dispatch"
)

// The generic pooling kernels: every level without its own.

func init() {
	pool.set(dispatch.Generic, &poolKernels{maxPool2x2: maxPool2x2Generic, maxUnpool2x2: maxUnpool2x2Generic})
}

// maxPool2x2Generic reads the values' bits as order-preserving integers
// (orderKey) and picks each window's maximum with masks rather than
// branches, which random activations mispredict. A window holding a NaN
// takes the slow path: its first NaN.
func maxPool2x2Generic(dst, idx, x []float32, w, oh, ow int) {
	bits := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(x))), len(x))
	for i := range oh {
		r := 2 * i * w
		top, bot := bits[r:r+w], bits[r+w:r+2*w]
		for j := range ow {
			c := 2 * j
			a, b, d, e := int(top[c]), int(top[c+1]), int(bot[c]), int(bot[c+1])
			var at int
			if notNaN(a)|notNaN(b)|notNaN(d)|notNaN(e) >= 0 {
				best := orderKey(a)
				at, best = argmaxStep(0, best, 1, orderKey(b))
				at, best = argmaxStep(at, best, w, orderKey(d))
				at, _ = argmaxStep(at, best, w+1, orderKey(e))
			} else {
				switch {
				case notNaN(a) < 0:
					at = 0
				case notNaN(b) < 0:
					at = 1
				case notNaN(d) < 0:
					at = w
				default:
					at = w + 1
				}
			}
			k, o := r+c+at, i*ow+j
			if dst != nil {
				dst[o] = x[k]
			}
			if idx != nil {
				idx[o] = float32(k)
			}
		}
	}
}

// notNaN is negative when the float32 bits b are a NaN's.
func notNaN(b int) int { return 0x7f800000 - b&0x7fffffff }

// orderKey maps the bits of a float32 other than NaN to an integer with
// the same order, -0 and +0 both to 0.
func orderKey(b int) int {
	m := b >> 63
	return b ^ (m & 0x7fffffff) + (m & 1)
}

// argmaxStep returns (o, k) when k > best and (at, best) otherwise, with
// masks rather than a branch.
func argmaxStep(at, best, o, k int) (int, int) {
	m := (best - k) >> 63 // all ones when k > best
	return at ^ ((at ^ o) & m), best ^ ((best ^ k) & m)
}

// maxUnpool2x2Generic writes each window's four elements: dy at the one
// its index names, zero at the others.
func maxUnpool2x2Generic(dx, dy, idx []float32, w, oh, ow int) bool {
	for i := range oh {
		r := 2 * i * w
		top, bot := dx[r:r+w], dx[r+w:r+2*w]
		for j := range ow {
			c, o := 2*j, i*ow+j
			d := dy[o]
			var a, b, e, f float32
			switch idx[o] - float32(r+c) {
			case 0:
				a = d
			case 1:
				b = d
			case float32(w):
				e = d
			case float32(w + 1):
				f = d
			default:
				return false
			}
			top[c], top[c+1], bot[c], bot[c+1] = a, b, e, f
		}
	}
	return true
}
