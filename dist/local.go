package dist

import (
	"fmt"
	"sync"
)

// NewLocal returns the n ends of an in-process group (goroutines as
// ranks): comm k is rank k and must be used by its own goroutine. The
// collectives exchange through shared memory, without copies beyond the
// result's; an all-reduce has each rank reduce its chunk of the elements
// (reduceOrdered, in rank order) and write it into every rank's buffer,
// so its results are those of MPI's implementation bit for bit.
//
// It panics when n < 1.
func NewLocal(n int) []Comm {
	if n < 1 {
		panic(fmt.Sprintf("dist: NewLocal: %d ranks (want at least 1)", n))
	}
	g := &group{n: n, slots: make([]slot, n)}
	g.cond = sync.NewCond(&g.mu)
	cs := make([]Comm, n)
	for k := range cs {
		cs[k] = &local{g: g, rank: k, agreed: make([]int64, 3*n)}
	}
	return cs
}

// RunLocal runs f on each rank of a new in-process group of n ranks, each
// in its own goroutine, closes the ranks and returns the first error (by
// rank) that f returned. A panic in f closes the group (so that the other
// ranks' collectives fail instead of waiting) and is raised again by
// RunLocal once every rank has returned.
func RunLocal(n int, f func(c Comm) error) error {
	cs := NewLocal(n)
	errs := make([]error, n)
	panics := make([]any, n)
	var wg sync.WaitGroup
	for k, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					panics[k] = p
					c.Close()
				}
			}()
			errs[k] = f(c)
			if err := c.Close(); errs[k] == nil {
				errs[k] = err
			}
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	for k, err := range errs {
		if err != nil {
			return fmt.Errorf("rank %d: %w", k, err)
		}
	}
	return nil
}

// group is the state the ranks of an in-process group share: a reusable
// barrier and each rank's operands of the current collective.
type group struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	arrived int
	gen     uint64
	dead    bool // a rank closed: no collective can complete
	slots   []slot
}

// slot is what a rank brings to a collective: the function's name (so
// that ranks running different collectives are caught), its buffers and
// its scalar argument.
type slot struct {
	fn       string
	buf, src any
	n        int
	arg      int
}

// wait blocks until every rank has called it (once per round) or the
// group is dead.
func (g *group) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead {
		return ErrClosed
	}
	gen := g.gen
	g.arrived++
	if g.arrived == g.n {
		g.arrived = 0
		g.gen++
		g.cond.Broadcast()
		return nil
	}
	for gen == g.gen && !g.dead {
		g.cond.Wait()
	}
	if gen == g.gen {
		return ErrClosed
	}
	return nil
}

type local struct {
	g       *group
	rank    int
	closed  bool
	scratch any     // the chunk accumulator of AllReduce ([]float32 or []float64)
	agreed  []int64 // enter's view of the ranks' collectives, 3 per rank (disagreement)
}

func (c *local) Rank() int { return c.rank }
func (c *local) Size() int { return c.g.n }

func (c *local) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.g.mu.Lock()
	if c.g.n > 1 {
		c.g.dead = true
	}
	c.g.cond.Broadcast()
	c.g.mu.Unlock()
	return nil
}

// enter publishes the rank's operands and waits for the others; it
// panics, on every rank alike, when a rank runs another collective or
// passes another length, root or Op than rank 0.
func (c *local) enter(s slot) error {
	if c.closed {
		return ErrClosed
	}
	c.g.slots[c.rank] = s
	if err := c.g.wait(); err != nil {
		return err
	}
	for k, sk := range c.g.slots {
		c.agreed[3*k], c.agreed[3*k+1], c.agreed[3*k+2] = collectives[sk.fn], int64(sk.n), int64(sk.arg)
	}
	if amiss := disagreement(s.fn, c.agreed, c.g.n); amiss != "" {
		panic(amiss)
	}
	return nil
}

// leave waits until every rank is done with the others' buffers.
func (c *local) leave() error { return c.g.wait() }

func (c *local) AllReduce32(buf []float32, op Op) error {
	return allReduceLocal(c, "AllReduce32", buf, op)
}

func (c *local) AllReduce64(buf []float64, op Op) error {
	return allReduceLocal(c, "AllReduce64", buf, op)
}

func allReduceLocal[T float](c *local, fn string, buf []T, op Op) error {
	checkOp(fn, op)
	if err := c.enter(slot{fn: fn, buf: buf, n: len(buf), arg: int(op)}); err != nil {
		return err
	}
	lo, hi := Split(len(buf), c.rank, c.g.n)
	acc, _ := c.scratch.([]T)
	if cap(acc) < hi-lo {
		acc = make([]T, hi-lo)
		c.scratch = acc
	}
	acc = acc[:hi-lo]
	slots := c.g.slots
	reduceOrdered(acc, func(k int) []T { return slots[k].buf.([]T)[lo:hi] }, c.g.n, op)
	for k := range slots {
		copy(slots[k].buf.([]T)[lo:hi], acc)
	}
	return c.leave()
}

func (c *local) Broadcast32(buf []float32, root int) error {
	return broadcastLocal(c, "Broadcast32", buf, root)
}

func (c *local) Broadcast64(buf []float64, root int) error {
	return broadcastLocal(c, "Broadcast64", buf, root)
}

func broadcastLocal[T float](c *local, fn string, buf []T, root int) error {
	checkRoot(fn, root, c.g.n)
	if err := c.enter(slot{fn: fn, buf: buf, n: len(buf), arg: root}); err != nil {
		return err
	}
	if c.rank != root {
		copy(buf, c.g.slots[root].buf.([]T))
	}
	return c.leave()
}

func (c *local) AllGather32(dst, src []float32) error {
	return allGatherLocal(c, "AllGather32", dst, src)
}

func (c *local) AllGather64(dst, src []float64) error {
	return allGatherLocal(c, "AllGather64", dst, src)
}

func allGatherLocal[T float](c *local, fn string, dst, src []T) error {
	checkGather(fn, len(dst), len(src), c.g.n)
	if err := c.enter(slot{fn: fn, src: src, n: len(src)}); err != nil {
		return err
	}
	m := len(src)
	for k, s := range c.g.slots {
		copy(dst[k*m:(k+1)*m], s.src.([]T))
	}
	return c.leave()
}

func (c *local) Barrier() error {
	if err := c.enter(slot{fn: "Barrier"}); err != nil {
		return err
	}
	return c.leave()
}
