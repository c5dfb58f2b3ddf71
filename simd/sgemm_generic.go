package simd

import "github.com/lanesgo/lanes/dispatch"

func init() {
	gemm.set(dispatch.Generic, newGemmKernels(4, 8, sgemmKernel4x8Generic))
}

// sgemmKernel4x8Generic is the portable microkernel: a 4×8 tile in 32 local
// accumulators, the same contract as the generated ones.
func sgemmKernel4x8Generic(k int, a, b, c []float32, ldc int, alpha, beta float32) {
	const mr, nr = 4, 8
	var acc [mr * nr]float32
	a, b = a[:k*mr], b[:k*nr]
	for p := 0; p < k; p++ {
		ap := a[p*mr : p*mr+mr]
		bp := b[p*nr : p*nr+nr]
		for i, av := range ap {
			row := acc[i*nr : i*nr+nr]
			for j, bv := range bp {
				row[j] += av * bv
			}
		}
	}
	for i := 0; i < mr; i++ {
		dst := c[i*ldc : i*ldc+nr]
		for j := range dst {
			v := alpha * acc[i*nr+j]
			if beta != 0 {
				v += beta * dst[j]
			}
			dst[j] = v
		}
	}
}
