package cudaplugin

import (
	"errors"
	"math/bits"
	"sync"
)

// Size classes: 512 bytes (cudaMalloc's granularity), then four classes
// per power of two: sizes 5/4, 6/4, 7/4 and 8/4 of it, so a buffer wastes
// less than a quarter of the request.
const minClassBytes = 512

// sizeClass returns the class of a request of n bytes and the size of its
// buffers.
func sizeClass(n int) (class, size int) {
	if n <= minClassBytes {
		return 0, minClassBytes
	}
	b := bits.Len64(uint64(n-1)) - 1 // 2^b < n ≤ 2^(b+1), b ≥ 9
	step := 1 << (b - 2)
	q := (n + step - 1) / step // 5..8
	return 1 + (b-9)*4 + (q - 5), q * step
}

// allocator is the device's memory: cudaMalloc and cudaFree, or a fake
// in tests.
type allocator interface {
	alloc(bytes int) (uintptr, error)
	free(ptr uintptr) error
}

// block is a buffer from the pool.
type block struct {
	ptr   uintptr
	size  int // bytes, the class's size
	class int
}

// PoolStats counts what a pool did. Bytes are the size classes' (a
// request rounded up).
type PoolStats struct {
	Allocs      int   // buffers allocated from the device
	Reuses      int   // requests served from the free lists
	Frees       int   // buffers handed back (to the free lists)
	Flushes     int   // times the free lists were emptied (Close, out of memory)
	OOMs        int   // requests that failed for want of memory after a flush and a retry
	CachedBytes int64 // bytes in the free lists now
	InUseBytes  int64 // bytes handed out and not returned
	// PeakInUseBytes and PeakReservedBytes are the highest InUseBytes
	// and InUseBytes + CachedBytes since the pool was made or resetPeak.
	PeakInUseBytes, PeakReservedBytes int64
}

// peaks raises the high-water marks to the current figures (mu held).
func (s *PoolStats) peaks() {
	s.PeakInUseBytes = max(s.PeakInUseBytes, s.InUseBytes)
	s.PeakReservedBytes = max(s.PeakReservedBytes, s.InUseBytes+s.CachedBytes)
}

// pool keeps freed device buffers by size class for reuse. Safe for
// concurrent use. A GPU has two (its resident and staging pools) and one
// more per captured graph (graph.go), whose buffers the graph's replays
// use: a buffer goes back to the pool it came from (deviceMemory.p), so
// a graph's buffers never serve eager work. A retired pool (its graph
// destroyed) keeps nothing: put refuses, and the caller frees.
type pool struct {
	a       allocator
	reclaim func() // called before a flush caused by out of memory (runtime.GC: release unreachable device tensors)

	mu      sync.Mutex
	free    map[int][]uintptr
	stats   PoolStats
	retired bool
}

func newPool(a allocator) *pool {
	return &pool{a: a, free: map[int][]uintptr{}}
}

// get returns a buffer of at least n bytes: a freed one of n's class, or a
// new one. When the device is out of memory it reclaims (the buffers of
// unreachable tensors come back), flushes the free lists and tries once
// more, as PyTorch's caching allocator does; the error is then the
// device's (isOutOfMemory).
func (p *pool) get(n int) (block, error) {
	class, size := sizeClass(n)
	p.mu.Lock()
	if l := p.free[class]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.free[class] = l[:len(l)-1]
		p.stats.Reuses++
		p.stats.CachedBytes -= int64(size)
		p.stats.InUseBytes += int64(size)
		p.stats.peaks()
		p.mu.Unlock()
		return block{ptr, size, class}, nil
	}
	p.mu.Unlock()
	ptr, err := p.a.alloc(size)
	if isOutOfMemory(err) {
		if p.reclaim != nil {
			p.reclaim()
		}
		if ferr := p.flush(); ferr != nil {
			return block{}, errors.Join(err, ferr)
		}
		ptr, err = p.a.alloc(size)
	}
	if err != nil {
		if isOutOfMemory(err) {
			p.mu.Lock()
			p.stats.OOMs++
			p.mu.Unlock()
		}
		return block{}, err
	}
	p.mu.Lock()
	p.stats.Allocs++
	p.stats.InUseBytes += int64(size)
	p.stats.peaks()
	p.mu.Unlock()
	return block{ptr, size, class}, nil
}

// put returns b to the free lists and reports true; a retired pool takes
// nothing back (false: the caller frees b). The caller guarantees that
// no work still queued on another stream than the pool's users' uses it.
func (p *pool) put(b block) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Frees++
	p.stats.InUseBytes -= int64(b.size)
	if p.retired {
		return false
	}
	p.free[b.class] = append(p.free[b.class], b.ptr)
	p.stats.CachedBytes += int64(b.size)
	return true
}

// reserve allocates count buffers of class's size into the free lists
// (a graph's pool before its capture, which may not allocate).
func (p *pool) reserve(size, count int) error {
	class, size := sizeClass(size)
	for range count {
		ptr, err := p.a.alloc(size)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.free[class] = append(p.free[class], ptr)
		p.stats.Allocs++
		p.stats.CachedBytes += int64(size)
		p.stats.peaks()
		p.mu.Unlock()
	}
	return nil
}

// retire frees the free lists and makes put refuse the buffers still
// out (their holders free them).
func (p *pool) retire() error {
	p.mu.Lock()
	p.retired = true
	p.mu.Unlock()
	return p.flush()
}

// flush frees every buffer in the free lists. Buffers in use are not
// touched; they join the free lists when put back.
func (p *pool) flush() error {
	p.mu.Lock()
	free := p.free
	p.free = map[int][]uintptr{}
	p.stats.Flushes++
	p.stats.CachedBytes = 0
	p.mu.Unlock()
	var errs []error
	for _, l := range free {
		for _, ptr := range l {
			if err := p.a.free(ptr); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (p *pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// resetPeak starts the high-water marks again from the current figures.
func (p *pool) resetPeak() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.PeakInUseBytes, p.stats.PeakReservedBytes = 0, 0
	p.stats.peaks()
}
