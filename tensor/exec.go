package tensor

import (
	"math"
	"sync"

	"github.com/lanesgo/lanes/internal/par"
)

// parallel runs r over 0..n, split into GOMAXPROCS equal ranges on the
// shared worker pool when work (an element count) reaches par.SplitFrom
// and n allows, else on the caller.
func parallel(r par.Ranger, n, work int) { par.Split(r, n, work) }

// parallelProducts runs r over n items of perItem multiply-adds each,
// done by Sgemm calls of perCall multiply-adds. When the calls are so
// large (2²⁵ multiply-adds) that Sgemm's own split uses every core well,
// the items run one after another on the caller; else they are spread
// over the workers, a multiply-add counted as an eighth of an elementwise
// element. A call inside an item may still split (Sgemm does from 2²²):
// its parts go to whichever thread is free, the caller's own first.
func parallelProducts(r par.Ranger, n, perItem, perCall int) {
	work := satMul(n, perItem) / 8
	if perCall >= 1<<25 {
		work = 0
	}
	parallel(r, n, work)
}

// job is one elementwise loop; jobs are pooled so that running one
// allocates nothing.
type job struct {
	l   loop
	k   kernel
	arg [2]float32
}

var jobPool = sync.Pool{New: func() any { return new(job) }}

func (j *job) RunRange(lo, hi int) { j.l.apply(lo, hi, j.k, &j.arg) }

// run applies k over the loop of ops aligned to shape, ops[0] written; op
// names the operation in panics (see loop.init).
func run(op string, shape []int, k kernel, arg [2]float32, ops ...*Tensor) {
	j := jobPool.Get().(*job)
	j.l.init(op, shape, ops...)
	j.k, j.arg = k, arg
	total := j.l.runs() * j.l.innerLen()
	parallel(j, total, total)
	j.l.clear()
	j.k = nil
	jobPool.Put(j)
}

// satMul and satAdd are a·b and a+b for a, b >= 0, capped at math.MaxInt
// instead of overflowing: sizes derived from user parameters (a huge
// padding, dilation or kernel) compare as too large rather than wrap.
func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
