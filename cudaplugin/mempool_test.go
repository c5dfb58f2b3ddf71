package cudaplugin

import (
	"sync"
	"testing"
)

func TestSizeClass(t *testing.T) {
	for _, c := range []struct{ n, class, size int }{
		{0, 0, 512}, {1, 0, 512}, {512, 0, 512},
		{513, 1, 640}, {640, 1, 640}, {641, 2, 768}, {1024, 4, 1024},
		{1025, 5, 1280}, {2048, 8, 2048},
		{4 << 20, 4 * (22 - 9), 4 << 20}, {4<<20 + 1, 4*(22-9) + 1, 5 << 20},
	} {
		class, size := sizeClass(c.n)
		if class != c.class || size != c.size {
			t.Errorf("sizeClass(%d) = %d, %d; want %d, %d", c.n, class, size, c.class, c.size)
		}
	}
	// Every request fits its class with less than a quarter wasted, and
	// classes grow with the request.
	prevClass, prevSize := -1, 0
	for n := 1; n < 1<<22; n += 1 + n/97 {
		class, size := sizeClass(n)
		if size < n || (n > minClassBytes && 4*(size-n) >= size) {
			t.Fatalf("sizeClass(%d) = %d bytes", n, size)
		}
		if class < prevClass || (class == prevClass) != (size == prevSize) {
			t.Fatalf("sizeClass(%d) = %d, %d after %d, %d", n, class, size, prevClass, prevSize)
		}
		prevClass, prevSize = class, size
	}
}

// fakeDevice hands out addresses from a budget of bytes.
type fakeDevice struct {
	mu       sync.Mutex
	budget   int
	next     uintptr
	live     map[uintptr]int
	allocs   int
	oomCalls int
}

func newFakeDevice(budget int) *fakeDevice {
	return &fakeDevice{budget: budget, next: 1 << 20, live: map[uintptr]int{}}
}

func (d *fakeDevice) alloc(n int) (uintptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	used := 0
	for _, s := range d.live {
		used += s
	}
	if used+n > d.budget {
		d.oomCalls++
		return 0, &Error{Call: "cudaMalloc", Code: errMemoryAllocation, Msg: "out of memory"}
	}
	p := d.next
	d.next += uintptr(n)
	d.live[p] = n
	d.allocs++
	return p, nil
}

func (d *fakeDevice) free(p uintptr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.live[p]; !ok {
		return &Error{Call: "cudaFree", Code: 1, Msg: "invalid argument"}
	}
	delete(d.live, p)
	return nil
}

func TestPoolReuse(t *testing.T) {
	d := newFakeDevice(1 << 30)
	p := newPool(d)
	a, err := p.get(1000)
	if err != nil || a.size != 1024 {
		t.Fatalf("get(1000) = %+v, %v", a, err)
	}
	p.put(a)
	b, _ := p.get(900) // same class: reused
	if b.ptr != a.ptr || d.allocs != 1 {
		t.Errorf("a freed buffer of the class was not reused: %+v after %+v, %d allocs", b, a, d.allocs)
	}
	c, _ := p.get(2000) // other class: new
	if c.ptr == b.ptr || d.allocs != 2 {
		t.Errorf("another class reused a buffer")
	}
	p.put(b)
	p.put(c)
	s := p.Stats()
	if s.Allocs != 2 || s.Reuses != 1 || s.CachedBytes != 1024+2048 || s.InUseBytes != 0 {
		t.Errorf("stats %+v", s)
	}
	if err := p.flush(); err != nil || len(d.live) != 0 || p.Stats().CachedBytes != 0 {
		t.Errorf("flush left %d buffers (%v)", len(d.live), err)
	}
}

func TestPoolOutOfMemory(t *testing.T) {
	d := newFakeDevice(4096)
	p := newPool(d)
	reclaimed := 0
	p.reclaim = func() { reclaimed++ }
	a, _ := p.get(2048)
	b, _ := p.get(1024)
	p.put(a)
	p.put(b)
	// 3072 bytes cached: a 4096-byte request fails, flushes and retries.
	c, err := p.get(4096)
	if err != nil || d.oomCalls != 1 || reclaimed != 1 || p.Stats().Flushes != 1 {
		t.Fatalf("get after flush: %+v, %v (%d OOMs, %d reclaims)", c, err, d.oomCalls, reclaimed)
	}
	// Nothing cached and the device full: the retry fails too.
	if _, err := p.get(1024); !isOutOfMemory(err) || d.oomCalls != 3 {
		t.Errorf("get on a full device: %v (%d OOMs)", err, d.oomCalls)
	}
	p.put(c)
	if s := p.Stats(); s.InUseBytes != 0 || s.CachedBytes != 4096 || s.OOMs != 1 || s.Flushes != 2 || s.Frees != 3 {
		t.Errorf("stats %+v", s)
	}
}

// TestPoolPeaks follows the high-water marks of bytes in use and bytes
// reserved (in use and cached) through gets, puts, a reuse, a flush and
// resetPeak.
func TestPoolPeaks(t *testing.T) {
	d := newFakeDevice(1 << 20)
	p := newPool(d)
	var held []block
	get := func(n int) {
		b, err := p.get(n)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
	}
	put := func() { p.put(held[0]); held = held[1:] }
	for _, c := range []struct {
		name                  string
		do                    func()
		inUse, reserved       int64
		peakInUse, peakReserv int64
	}{
		{"get 1000", func() { get(1000) }, 1024, 1024, 1024, 1024},
		{"get 2000", func() { get(2000) }, 3072, 3072, 3072, 3072},
		{"put 1024", put, 2048, 3072, 3072, 3072},
		{"get 900 (reused)", func() { get(900) }, 3072, 3072, 3072, 3072},
		{"put 2048", put, 1024, 3072, 3072, 3072},
		{"flush", func() { p.flush() }, 1024, 1024, 3072, 3072},
		{"resetPeak", p.resetPeak, 1024, 1024, 1024, 1024},
		{"get 512", func() { get(512) }, 1536, 1536, 1536, 1536},
		{"put 1024", put, 512, 1536, 1536, 1536},
		{"put 512", put, 0, 1536, 1536, 1536},
	} {
		c.do()
		s := p.Stats()
		if s.InUseBytes != c.inUse || s.InUseBytes+s.CachedBytes != c.reserved || s.PeakInUseBytes != c.peakInUse || s.PeakReservedBytes != c.peakReserv {
			t.Errorf("%s: in use %d, reserved %d, peaks %d and %d; want %d, %d, %d, %d", c.name,
				s.InUseBytes, s.InUseBytes+s.CachedBytes, s.PeakInUseBytes, s.PeakReservedBytes, c.inUse, c.reserved, c.peakInUse, c.peakReserv)
		}
	}
	if s := p.Stats(); s.Allocs != 3 || s.Reuses != 1 || s.Frees != 4 {
		t.Errorf("counts %+v", s)
	}
}

func TestPoolConcurrent(t *testing.T) {
	d := newFakeDevice(1 << 30)
	p := newPool(d)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b, err := p.get(512 * (1 + (g+i)%7))
				if err != nil {
					t.Error(err)
					return
				}
				p.put(b)
			}
		}()
	}
	wg.Wait()
	s := p.Stats()
	if s.InUseBytes != 0 || s.Allocs+s.Reuses != 1600 || s.Allocs > 8*7 {
		t.Errorf("stats %+v", s)
	}
}
