package tensortest

import "github.com/lanesgo/lanes/tensor"

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
