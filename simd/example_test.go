package simd_test

import (
	"fmt"

	"github.com/lanesgo/lanes/simd"
)

// The elementwise kernels write into a destination that comes first; it may
// be one of the inputs. Their results are exact, the same at every level.
func ExampleAdd() {
	a := []float32{1, 2, 3, 4, 5}
	b := []float32{10, 20, 30, 40, 50}
	dst := make([]float32, len(a))
	simd.Add(dst, a, b)
	fmt.Println(dst)

	simd.Add(a, a, a) // in place: a = a + a
	fmt.Println(a)
	// Output:
	// [11 22 33 44 55]
	// [2 4 6 8 10]
}

func ExampleDot() {
	a := []float32{1, 2, 3, 4}
	b := []float32{4, 3, 2, 1}
	fmt.Println(simd.Dot(a, b))
	fmt.Println(simd.Sum(a), simd.Max(a), simd.ArgMax(b))
	// Output:
	// 20
	// 10 4 0
}

// Exp is within 2 ULP of the exact result, so the last bits may differ
// between levels: print rounded values.
func ExampleExp() {
	x := []float32{-1, 0, 0.5, 1, 2}
	dst := make([]float32, len(x))
	simd.Exp(dst, x)
	fmt.Printf("%.4f\n", dst)
	// Output:
	// [0.3679 1.0000 1.6487 2.7183 7.3891]
}

// C = A·B for a 2×3 A and a 3×2 B, row-major, each leading dimension the
// length of a stored row; then C += A·Aᵀ, with A read transposed as B.
func ExampleSgemm() {
	a := []float32{ // 2×3
		1, 2, 3,
		4, 5, 6,
	}
	b := []float32{ // 3×2
		7, 8,
		9, 10,
		11, 12,
	}
	c := make([]float32, 2*2)
	simd.Sgemm(false, false, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2)
	fmt.Println(c)

	// C = A·Aᵀ + C: B is A itself, read transposed; beta = 1 accumulates.
	simd.Sgemm(false, true, 2, 2, 3, 1, a, 3, a, 3, 1, c, 2)
	fmt.Println(c)
	// Output:
	// [58 64 139 154]
	// [72 96 171 231]
}

// Softmax of one row: the outputs are within 4 ULP of the float64 softmax
// and sum to 1 within 1e-6.
func ExampleSoftmax() {
	x := []float32{1, 2, 3, 4}
	p := make([]float32, len(x))
	simd.Softmax(p, x)
	fmt.Printf("%.4f\n", p)
	fmt.Printf("log-sum-exp %.4f\n", simd.LogSumExp(x))
	// Output:
	// [0.0321 0.0871 0.2369 0.6439]
	// log-sum-exp 4.4402
}

// Axpy is the BLAS update y += alpha·x.
func ExampleAxpy() {
	y := []float32{1, 1, 1}
	simd.Axpy(y, 0.5, []float32{2, 4, 6})
	fmt.Println(y)
	// Output:
	// [2 3 4]
}
