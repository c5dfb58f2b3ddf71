package simd

import "github.com/lanesgo/lanes/dispatch"

func init() {
	sgemmFamily.kernels.set(dispatch.Generic, newGemmKernels(4, 8, gemmKernel4x8Generic[float32]))
	dgemmFamily.kernels.set(dispatch.Generic, newGemmKernels(4, 8, gemmKernel4x8Generic[float64]))
}

// gemmKernel4x8Generic is the portable microkernel of both widths: a 4×8
// tile in 32 local accumulators, the same contract as the generated ones.
func gemmKernel4x8Generic[T float](k int, a, b, c []T, ldc int, alpha, beta T) {
	const mr, nr = 4, 8
	var acc [mr * nr]T
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
