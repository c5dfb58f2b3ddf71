package tensortest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// The Random family of a HostDevice: the CPU's, on host copies, as the
// other families (hostdevice.go).

var _ tensor.RandomKernels = kernels{}

func (k kernels) Uniform(dst *tensor.Tensor, seed, offset uint64) error {
	return k.do("Random.Uniform", 1, []*tensor.Tensor{dst}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Random.Uniform(h[0], seed, offset)
	})
}

func (k kernels) Dropout(dst, x *tensor.Tensor, p float32, seed, offset uint64) error {
	return k.do("Random.Dropout", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Random.Dropout(h[0], h[1], p, seed, offset)
	})
}

// TestRandom checks the Random family on dev against the CPU's, which it
// must equal bit for bit (the numbers are a function of the seed, the
// offset and the element's position only): UniformInto and Dropout over
// zero-size, one-element, odd and multi-part sizes, offsets near the
// counter's wrap, transposed and sliced operands and destinations, in
// place, and p = 0.
func TestRandom(t *testing.T, dev tensor.Device) {
	// A panic on the device (a family it lacks, a failing kernel) fails
	// the test with its message, as the other families' cases do, rather
	// than ending the test binary.
	defer func() {
		if msg := recover(); msg != nil {
			t.Errorf("%v", msg)
		}
	}()
	r := rand.New(rand.NewPCG(11, 12))
	const seed = 0xfedcba9876543210
	to := func(h *tensor.Tensor) *tensor.Tensor {
		d, err := h.To(dev)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	host := func(x *tensor.Tensor) []float32 {
		h, err := x.To(tensor.CPU)
		if err != nil {
			t.Fatal(err)
		}
		return h.Data()
	}
	same := func(what string, got *tensor.Tensor, want *tensor.Tensor) {
		t.Helper()
		if got.Device() != dev {
			t.Errorf("%s: result on %v, want %v", what, got.Device(), dev)
		}
		g, w := host(got), want.Data()
		for i := range w {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
				t.Errorf("%s: element %d = %v, want the CPU's %v", what, i, g[i], w[i])
				return
			}
		}
	}
	for _, shape := range [][]int{{0}, {1}, {5}, {3, 4, 5}, {3, 4099}} {
		for _, offset := range []uint64{0, 7, math.MaxUint64} {
			name := fmt.Sprintf("%v@%d", shape, offset)
			same("UniformInto"+name, tensor.UniformInto(on(to(tensor.New()), shape...), seed, offset),
				tensor.UniformInto(tensor.New(shape...), seed, offset))
			x := tensor.RandN(r, shape...)
			for _, p := range []float32{0, 0.3, 0.9} {
				same(fmt.Sprintf("Dropout%s p=%v", name, p), tensor.Dropout(to(x), p, seed, offset), tensor.Dropout(x, p, seed, offset))
			}
		}
	}
	x := tensor.RandN(r, 6, 9)
	dx := to(x)
	same("Dropout(transposed)", tensor.Dropout(dx.T(), 0.5, seed, 3), tensor.Dropout(x.T(), 0.5, seed, 3))
	same("Dropout(sliced)", tensor.Dropout(dx.Slice(1, 1, 8, 3), 0.5, seed, 3), tensor.Dropout(x.Slice(1, 1, 8, 3), 0.5, seed, 3))
	in := to(x.Clone()) // not x itself on the CPU
	same("DropoutInto(in place)", tensor.DropoutInto(in, in, 0.4, seed, 5), tensor.Dropout(x, 0.4, seed, 5))
	big := on(dx, 9, 13)
	dst := big.Slice(0, 1, 7, 1).Slice(1, 2, 11, 1)
	tensor.DropoutInto(dst, dx, 0.4, seed, 5)
	same("DropoutInto(sliced dst)", dst.Contiguous(), tensor.Dropout(x, 0.4, seed, 5))
	tensor.UniformInto(big.T(), seed, 9)
	same("UniformInto(transposed dst)", big.T().Contiguous(), tensor.UniformInto(tensor.New(13, 9), seed, 9))
}
