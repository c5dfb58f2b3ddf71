package tensor

import (
	"runtime"
	"sync"
)

// parallelElems is the size (elements written, or read by a reduction)
// from which an operation splits across GOMAXPROCS goroutines; smaller ones
// run on the caller.
const parallelElems = 1 << 16

// ranger is work that can be cut into index ranges run concurrently.
type ranger interface{ runRange(lo, hi int) }

// part is indices lo..hi of a ranger, handed to a worker by value.
type part struct {
	r      ranger
	lo, hi int
	wg     *sync.WaitGroup
}

// workers is a persistent pool of goroutines running parts; it grows to
// GOMAXPROCS-1 and never shrinks. The caller runs one part itself and no
// part waits on another, so a busy pool only delays work.
var workers struct {
	mu    sync.Mutex
	n     int
	parts chan part
}

func init() { workers.parts = make(chan part, 256) }

var waitGroups = sync.Pool{New: func() any { return new(sync.WaitGroup) }}

// parallel runs r over 0..n, split into GOMAXPROCS equal ranges when work
// (an element count) reaches parallelElems and n allows, else on the caller.
func parallel(r ranger, n, work int) {
	threads := min(runtime.GOMAXPROCS(0), n)
	if work < parallelElems || threads <= 1 {
		r.runRange(0, n)
		return
	}
	workers.mu.Lock()
	for workers.n < threads-1 {
		workers.n++
		go func() {
			for p := range workers.parts {
				p.r.runRange(p.lo, p.hi)
				p.wg.Done()
			}
		}()
	}
	workers.mu.Unlock()
	wg := waitGroups.Get().(*sync.WaitGroup)
	for p := 1; p < threads; p++ {
		wg.Add(1)
		workers.parts <- part{r: r, lo: p * n / threads, hi: (p + 1) * n / threads, wg: wg}
	}
	r.runRange(0, n/threads)
	wg.Wait()
	waitGroups.Put(wg)
}

// parallelProducts runs r over n items of perItem multiply-adds each,
// done by Sgemm calls of perCall multiply-adds. When the calls are large
// enough for Sgemm to use every core itself (its cut-off is 2²⁵
// multiply-adds) the items run one after another on the caller; else they
// are spread over the workers, a multiply-add counted as an eighth of an
// elementwise element.
func parallelProducts(r ranger, n, perItem, perCall int) {
	work := n * perItem / 8
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

func (j *job) runRange(lo, hi int) { j.l.apply(lo, hi, j.k, &j.arg) }

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
