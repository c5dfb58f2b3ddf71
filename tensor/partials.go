package tensor

import (
	"cmp"
	"slices"
	"sync"
)

// partials collects the partial results of a parallel loop's parts (each
// in a workBuf, keyed by the part's first item) so that the caller adds
// them in item order once the loop is done: the sum is then the same
// for a given number of threads whichever thread ran which part and
// whichever finished first (adding them as they finished gave one of
// several roundings from three threads on). The buffers go back to
// workBufs.
type partials struct {
	mu   sync.Mutex
	list []partial
}

type partial struct {
	lo  int
	buf *workBuf
}

// keep records the partial result buf of the part that starts at item lo;
// it is safe for concurrent use.
func (p *partials) keep(lo int, buf *workBuf) {
	p.mu.Lock()
	p.list = append(p.list, partial{lo, buf})
	p.mu.Unlock()
}

// sum calls add on each kept buffer in the order of their parts' first
// items, returns the buffers to workBufs and empties the list.
func (p *partials) sum(add func(*workBuf)) {
	slices.SortFunc(p.list, func(a, b partial) int { return cmp.Compare(a.lo, b.lo) })
	for i, q := range p.list {
		add(q.buf)
		workBufs.Put(q.buf)
		p.list[i] = partial{}
	}
	p.list = p.list[:0]
}
