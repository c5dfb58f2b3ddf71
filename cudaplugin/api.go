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

// A GPU is what it is to each package: tensor's backend and the memory
// of its device, dispatch's placer.
var _ interface {
	tensor.Backend
	tensor.DeviceAllocator
	dispatch.Placer
	dispatch.Accelerator
} = (*GPU)(nil)

// deviceOf returns the tensor device of CUDA device ordinal i: CPU is 0,
// CUDA device i is i+1.
func deviceOf(ordinal int) tensor.Device { return tensor.Device(ordinal + 1) }
