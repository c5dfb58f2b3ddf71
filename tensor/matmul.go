package tensor

import (
	"fmt"
	"slices"
	"sync"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/simd"
)

// MatMul returns the matrix product with NumPy's matmul rules: 2-D
// operands multiply as matrices; a 1-D a is a row vector and a 1-D b a
// column vector, the added dimension removed from the result; operands
// with more dimensions are stacks of matrices in their last two, and the
// leading (batch) dimensions broadcast. Each product is simd.Sgemm, with
// its error bound; transposed and strided views whose matrices have unit
// stride along rows or columns are passed to it without a copy.
//
// With all operands on the host the product runs on the CPU, or on the
// offload device (SetOffload) when dispatch.Place sends it there (an
// error there falls back to the CPU). With the operands on a device it
// always runs on that device's Backend and the result is on that device.
// MatMul has no error return, so it panics, naming the shapes, the
// devices and the cause, when the operands are on two devices or on the
// host and a device (copy them to one with To), when the device has no
// MatMul kernels or the result cannot be allocated, and when the device
// fails; the plugin's own methods, such as (*cudaplugin.GPU).MatMul,
// return those errors instead (and take host operands).
func MatMul(a, b *Tensor) *Tensor {
	s := checkMatMul("MatMul", a, b)
	dev := deviceOn("MatMul", nil, a, b)
	k := matmulOn("MatMul", dev, nil, a, b)
	dst := result("MatMul", dev, s.Out, a, b)
	if dev != CPU || !offloadMatMul(&s, dst, a, b) {
		ran("MatMul", k.MatMul(dst, a, b), dst, a, b)
	}
	return dst
}

// MatMulInto sets dst = MatMul(a, b) and returns dst. dst must have the
// result's shape and must not overlap a or b (an overlapping operand is
// copied first). Where it runs and when it panics is as for MatMul, dst
// counting as an operand: dst, a and b are all on the host or all on one
// device, whose Backend does the work.
func MatMulInto(dst, a, b *Tensor) *Tensor {
	checkNil("MatMulInto", "dst, a, b", dst, a, b)
	s := checkMatMul("MatMulInto", a, b)
	if !slices.Equal(dst.shape, s.Out) {
		panic(fmt.Sprintf("tensor: MatMulInto: dst shape %v, want %v for %v @ %v", dst.shape, s.Out, a.shape, b.shape))
	}
	checkWritable("MatMulInto", dst)
	dev := deviceOn("MatMulInto", dst, a, b)
	k := matmulOn("MatMulInto", dev, dst, a, b)
	if dev == CPU {
		if offloadMatMul(&s, dst, a, b) {
			return dst
		}
		a, b = detach(dst, a), detach(dst, b)
	}
	ran("MatMulInto", k.MatMul(dst, a, b), dst, a, b)
	return dst
}

// checkMatMul checks the shapes of a and b with shape.PlanMatMul (the
// same check as the CUDA plugin's) and panics naming op and both shapes
// when they have no product.
func checkMatMul(op string, a, b *Tensor) shape.MatMul {
	checkNil(op, "a, b", a, b)
	s, err := shape.PlanMatMul(a.shape, b.shape)
	if err != nil {
		panic(fmt.Sprintf("tensor: %s: shapes %v and %v: %v", op, a.shape, b.shape, err))
	}
	checkShape(op, s.Out)
	return s
}

// offloadMatMul offers the product of host operands to the offload device
// (see SetOffload) and reports whether it did it.
func offloadMatMul(s *shape.MatMul, dst, a, b *Tensor) bool {
	batch := 1
	for _, d := range s.Batch {
		batch *= d
	}
	w := dispatch.Work{Op: dispatch.OpMatMul, FLOPs: 2 * float64(batch) * float64(s.M) * float64(s.N) * float64(s.K),
		Bytes: 4 * float64(a.Len()+b.Len()+dst.Len())}
	be := offloadTo(w)
	return be != nil && be.MatMul != nil && be.MatMul.MatMul(dst, a, b) == nil
}

// MatMul is the CPU's product: dst = MatMul(a, b), host operands whose
// shapes the public function has checked, dst not overlapping them.
func (cpuKernels) MatMul(dst, a, b *Tensor) error {
	p := planMatMul(a, b)
	p.run(dst)
	return nil
}

// matmulPlan is a MatMul on the CPU: a and b as (batched) matrices and
// the batch shape.
type matmulPlan struct {
	a, b    *Tensor // at least 2-D
	m, n, k int
	batch   []int
}

// planMatMul returns the plan of the product of a and b, whose shapes
// checkMatMul accepted.
func planMatMul(a, b *Tensor) matmulPlan {
	s, err := shape.MatMulDims(a.shape, b.shape)
	if err != nil {
		panic(fmt.Sprintf("tensor: MatMul: shapes %v and %v: %v", a.shape, b.shape, err))
	}
	p := matmulPlan{a: a, b: b, m: s.M, n: s.N, k: s.K, batch: s.Batch}
	if a.Dims() == 1 {
		p.a = a.Unsqueeze(0)
	}
	if b.Dims() == 1 {
		p.b = b.Unsqueeze(1)
	}
	return p
}

// matrixLayout returns how Sgemm reads the last two dimensions of x (rows
// × cols): trans and the leading dimension, or ok = false when neither
// dimension has unit stride (see shape.MatrixLayout).
func matrixLayout(x *Tensor) (trans bool, ld int, ok bool) {
	r := x.Dims()
	return shape.MatrixLayout(x.shape[r-2], x.shape[r-1], x.strides[r-2], x.strides[r-1])
}

// matmulJob is the batch of products of one MatMul.
type matmulJob struct {
	p        matmulPlan
	dst      *Tensor // contiguous result in [batch..., m, n] layout
	transA   bool
	transB   bool
	lda, ldb int
	// a and b broadcast to [batch..., rows, cols]: stride 0 along the
	// batch dimensions they repeat.
	a, b *Tensor
}

func (j *matmulJob) RunRange(lo, hi int) {
	p, a, b, c := &j.p, j.a, j.b, j.dst
	for i := lo; i < hi; i++ {
		oa, ob, oc := a.offset, b.offset, c.offset
		r := i
		for d := len(p.batch) - 1; d >= 0; d-- {
			x := r % p.batch[d]
			r /= p.batch[d]
			oa += x * a.strides[d]
			ob += x * b.strides[d]
			oc += x * c.strides[d]
		}
		simd.Sgemm(j.transA, j.transB, p.m, p.n, p.k, 1, a.data[oa:], j.lda, b.data[ob:], j.ldb, 0, c.data[oc:], p.n)
	}
}

var matmulJobs = sync.Pool{New: func() any { return new(matmulJob) }}

func (p *matmulPlan) run(dst *Tensor) {
	if p.k == 0 {
		Fill(dst, 0) // empty sums; A and B have no elements to read
		return
	}
	transA, lda, okA := matrixLayout(p.a)
	if !okA {
		p.a = p.a.Clone()
		transA, lda, _ = matrixLayout(p.a)
	}
	transB, ldb, okB := matrixLayout(p.b)
	if !okB {
		p.b = p.b.Clone()
		transB, ldb, _ = matrixLayout(p.b)
	}
	// The products write a contiguous [batch..., m, n] tensor: dst itself
	// when it is contiguous (its vector dimensions removed changes nothing
	// in the layout), else a temporary copied into it.
	c := target(dst)
	shape := append(append([]int{}, p.batch...), p.m, p.n)
	full := c.view(shape, contiguousStrides(shape), c.offset)
	j := matmulJobs.Get().(*matmulJob)
	*j = matmulJob{p: *p, dst: full, transA: transA, transB: transB, lda: lda, ldb: ldb,
		a: p.a.BroadcastTo(append(append([]int{}, p.batch...), p.m, p.k)...),
		b: p.b.BroadcastTo(append(append([]int{}, p.batch...), p.k, p.n)...)}
	batch := 1
	for _, d := range p.batch {
		batch *= d
	}
	if batch > 0 && p.m > 0 && p.n > 0 {
		parallelProducts(j, batch, p.m*p.n*p.k, p.m*p.n*p.k)
	}
	*j = matmulJob{}
	matmulJobs.Put(j)
	finish(dst, c)
}
