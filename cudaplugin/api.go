package cudaplugin

import (
	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
)

// Activation is the function BiasAct applies after the bias.
type Activation int

const (
	Identity Activation = iota // no activation
	ReLU                       // max(0, ·)
)

// A GPU is what it is to each package: the memory of its tensor device
// and its implementation of the op families (tensor.Backend's fields),
// dispatch's placer and accelerator.
var _ interface {
	tensor.DeviceAllocator
	tensor.MatMulKernels
	tensor.ConvKernels
	tensor.ElementwiseKernels
	tensor.ReduceKernels
	tensor.CopyKernels
	tensor.PoolKernels
	tensor.NormKernels
	tensor.IndexKernels
	tensor.LossKernels
	tensor.OptimKernels
	tensor.RandomKernels
	tensor.SortKernels
	dispatch.Placer
	dispatch.Accelerator
} = (*GPU)(nil)

// deviceOf returns the tensor device of CUDA device ordinal i: CPU is 0,
// CUDA device i is i+1.
func deviceOf(ordinal int) tensor.Device { return tensor.Device(ordinal + 1) }
