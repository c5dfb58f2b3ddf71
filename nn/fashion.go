package nn

import (
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// The two models of the Fashion-MNIST benchmark, which nn/cmd/fashion
// trains, bench/cmd/report times and bench/torchref/fashion.py builds in
// PyTorch for the comparison. Both are initialized from r, as PyTorch
// initializes its layers; they panic, naming themselves, when r is nil.

// FashionMLP returns the 784-256-128-10 ReLU MLP; its input is [N, 28, 28]
// (or [N, 1, 28, 28]).
func FashionMLP(r *rand.Rand) *Sequential {
	mustRand("FashionMLP", r)
	return NewSequential(Flatten{},
		NewLinear(784, 256, r), NewReLU(),
		NewLinear(256, 128, r), NewReLU(),
		NewLinear(128, 10, r))
}

// FashionCNN returns conv32-pool-conv64-pool-fc128-fc10: two 3×3 "same"
// convolutions with ReLU, each followed by 2×2 max pooling, then two
// Linear layers; its input is [N, 1, 28, 28].
func FashionCNN(r *rand.Rand) *Sequential {
	mustRand("FashionCNN", r)
	same := tensor.ConvParams{Padding: [2]int{1, 1}}
	pool := tensor.PoolParams{Kernel: [2]int{2, 2}}
	return NewSequential(
		NewConv2D(1, 32, 3, same, r), NewReLU(), &MaxPool2D{P: pool},
		NewConv2D(32, 64, 3, same, r), NewReLU(), &MaxPool2D{P: pool},
		Flatten{},
		NewLinear(64*7*7, 128, r), NewReLU(),
		NewLinear(128, 10, r))
}
