package peers

import (
	"fmt"
	"math/rand/v2"
	"runtime"

	"github.com/viterin/vek/vek32"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/simd"
)

// GemmInputs are the row-major operands of one square product C = A·B.
type GemmInputs struct {
	N       int
	A, B, C []float32
}

// NewGemmInputs returns n×n operands with values in [-1, 1).
func NewGemmInputs(n int) *GemmInputs {
	r := rand.New(rand.NewPCG(uint64(n), 3))
	in := &GemmInputs{N: n, A: make([]float32, n*n), B: make([]float32, n*n), C: make([]float32, n*n)}
	for i := range in.A {
		in.A[i] = r.Float32()*2 - 1
		in.B[i] = r.Float32()*2 - 1
	}
	return in
}

// GemmImpl is one way to compute C = A·B on Threads goroutines.
type GemmImpl struct {
	Name    string
	Threads int
	IsLanes bool
	Run     func(in *GemmInputs)
}

// GemmImpls returns lanes at every level this CPU has on one thread and on
// GOMAXPROCS threads, vek's MatMul_Into (single-threaded) and gonum's
// blas32.Gemm (its native Go Sgemm, which uses GOMAXPROCS goroutines).
// Threads is applied by the caller through runtime.GOMAXPROCS.
func GemmImpls() []GemmImpl {
	procs := runtime.GOMAXPROCS(0)
	var out []GemmImpl
	for _, l := range dispatch.Levels() {
		for _, t := range uniq(1, procs) {
			out = append(out, GemmImpl{
				Name: fmt.Sprintf("lanes-%v/t%d", l, t), Threads: t, IsLanes: true,
				Run: func(in *GemmInputs) {
					dispatch.SetLevel(l)
					n := in.N
					simd.Sgemm(false, false, n, n, n, 1, in.A, n, in.B, n, 0, in.C, n)
				},
			})
		}
	}
	out = append(out,
		GemmImpl{Name: "vek/t1", Threads: 1, Run: func(in *GemmInputs) { vek32.MatMul_Into(in.C, in.A, in.B, in.N) }},
		GemmImpl{Name: fmt.Sprintf("gonum/t%d", procs), Threads: procs, Run: func(in *GemmInputs) {
			n := in.N
			g := func(s []float32) blas32.General { return blas32.General{Rows: n, Cols: n, Stride: n, Data: s} }
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, g(in.A), g(in.B), 0, g(in.C))
		}},
	)
	return out
}

func uniq(a, b int) []int {
	if a == b {
		return []int{a}
	}
	return []int{a, b}
}
