package simd

import "github.com/lanesgo/lanes/dispatch"

// The generic level (and NEON, which registers no optimizer kernel)
// composes AdamUpdate of the elementwise kernels.
func init() {
	optim.set(dispatch.Generic, &optimKernels{})
}
