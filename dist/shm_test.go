package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// runShm runs f on each rank of a group of n ranks that all-reduce
// through a shared mapping with slots of slot bytes (in-process ranks
// for the rest) and polls of spin, and returns the panics and errors by
// rank. Where the system has no mapping (not Linux) it skips; on Linux
// a mapping that cannot be made fails the test.
func runShm(t testing.TB, n, slot, spin int, f func(c Comm) error) (panics []any, errs []error) {
	t.Helper()
	path := shmPath()
	if err := shmCreate(path, n, slot); err != nil {
		if errors.Is(err, errNoShm) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer os.Remove(path)
	base := NewLocal(n)
	cs := make([]*shmComm, n)
	for k := range n {
		g, err := shmOpen(path, k, n)
		if err != nil {
			t.Fatal(err)
		}
		g.spin = spin
		cs[k] = &shmComm{base: base[k], g: g}
	}
	// Every rank has mapped it: the name goes now, as overShm removes it,
	// so that a test binary killed below (a timeout) leaves no file.
	os.Remove(path)
	panics, errs = make([]any, n), make([]error, n)
	var wg sync.WaitGroup
	for k, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[k] = recover() }()
			errs[k] = f(c)
			if err := c.Close(); errs[k] == nil {
				errs[k] = err
			}
		}()
	}
	// A rank that leaves early (an error) leaves the others waiting at
	// the mapping's next barrier, as under MPI: fail rather than hang.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("ranks still waiting after 30 s; errors so far: %v", errs)
	}
	return panics, errs
}

func mustShm(t testing.TB, n, slot, spin int, f func(c Comm) error) {
	t.Helper()
	panics, errs := runShm(t, n, slot, spin, f)
	for k := range n {
		if panics[k] != nil {
			t.Fatalf("rank %d: panic: %v", k, panics[k])
		}
		if errs[k] != nil {
			t.Fatalf("rank %d: %v", k, errs[k])
		}
	}
}

// TestShmCollectives runs the collectives' checks on groups of 1 to 4
// ranks through the mapping, with slots of the real size and of one page
// (every length past 1024 float32s, or 512 float64s, then goes in pieces).
func TestShmCollectives(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4} {
		for _, slot := range []int{shmSlotBytes(p), 4096} {
			t.Run(fmt.Sprintf("ranks=%d/slot=%d", p, slot), func(t *testing.T) {
				mustShm(t, p, slot, shmSpin, func(c Comm) error {
					if Transport(c) != "in-process+shm" {
						t.Errorf("Transport = %q", Transport(c))
					}
					checkCollectives(t, c)
					return nil
				})
			})
		}
	}
}

// TestShmMatchesLocal checks the mapping's all-reduce against the
// in-process group's bit for bit, over lengths that end pieces anywhere,
// for both widths and both Ops, three times with other data each time
// (so that a read of a slot's previous contents would show).
func TestShmMatchesLocal(t *testing.T) {
	const passes = 3
	for _, p := range []int{2, 3, 4} {
		for _, n := range []int{511, 512, 513, 1023, 1024, 1025, 3000, 100003} {
			for _, op := range []Op{Sum, Mean} {
				// want[pass] from the in-process group; rank k's data in
				// a pass is rankData(k + pass·p).
				want32, want64 := make([][]float32, passes), make([][]float64, passes)
				for pass := range passes {
					if err := RunLocal(p, func(c Comm) error {
						b32, b64 := rankData[float32](c.Rank()+pass*p, n), rankData[float64](c.Rank()+pass*p, n)
						if err := c.AllReduce32(b32, op); err != nil {
							return err
						}
						if err := c.AllReduce64(b64, op); err != nil {
							return err
						}
						if c.Rank() == 0 {
							want32[pass], want64[pass] = b32, b64
						}
						return nil
					}); err != nil {
						t.Fatal(err)
					}
				}
				mustShm(t, p, 4096, shmSpin, func(c Comm) error {
					for pass := range passes {
						b32, b64 := rankData[float32](c.Rank()+pass*p, n), rankData[float64](c.Rank()+pass*p, n)
						if err := c.AllReduce32(b32, op); err != nil {
							return err
						}
						if err := c.AllReduce64(b64, op); err != nil {
							return err
						}
						for i := range n {
							if math.Float32bits(b32[i]) != math.Float32bits(want32[pass][i]) || math.Float64bits(b64[i]) != math.Float64bits(want64[pass][i]) {
								return fmt.Errorf("ranks=%d n=%d %v pass %d [%d]: %v, %v; in process %v, %v", p, n, op, pass, i, b32[i], b64[i], want32[pass][i], want64[pass][i])
							}
						}
					}
					return nil
				})
			}
		}
	}
}

// TestShmStress runs many all-reduces of page-sized slots (several pieces
// each, the slot sets alternating) between barriers and broadcasts, the
// ranks delayed at random before a collective and before their copies
// back (shmPause), so that they arrive in every order and a fast rank
// runs ahead into the next piece; polling, and sleeping at once (spin 0):
// every result must be the rank-order sum.
func TestShmStress(t *testing.T) {
	var mu sync.Mutex
	pr := rand.New(rand.NewPCG(3, 4))
	shmPause = func(rank int) {
		mu.Lock()
		d := pr.IntN(6)
		mu.Unlock()
		if d > 2 {
			time.Sleep(time.Duration(d) * 10 * time.Microsecond)
		}
	}
	defer func() { shmPause = nil }()
	for _, spin := range []int{0, shmSpin} {
		for _, p := range []int{2, 3} {
			t.Run(fmt.Sprintf("ranks=%d/spin=%d", p, spin), func(t *testing.T) {
				mustShm(t, p, 4096, spin, func(c Comm) error {
					r := rand.New(rand.NewPCG(uint64(c.Rank()), 7))
					for it := range 200 {
						n := 1 + (it*389)%3000 // up to three pieces of 1024
						buf := make([]float32, n)
						for i := range buf {
							buf[i] = float32(c.Rank()*100000 + it*10 + i%7)
						}
						if d := r.IntN(4); d > 0 {
							time.Sleep(time.Duration(d) * 20 * time.Microsecond)
						}
						if err := c.AllReduce32(buf, Sum); err != nil {
							return err
						}
						for i, v := range buf {
							var want float32
							for k := range p {
								want += float32(k*100000 + it*10 + i%7)
							}
							if v != want {
								return fmt.Errorf("rank %d, all-reduce %d of %d elements: [%d] = %v, want %v", c.Rank(), it, n, i, v, want)
							}
						}
						switch it % 3 {
						case 0:
							if err := c.Barrier(); err != nil {
								return err
							}
						case 1:
							b := []float64{float64(c.Rank()), float64(it)}
							if err := c.Broadcast64(b, it%p); err != nil {
								return err
							}
							if b[0] != float64(it%p) || b[1] != float64(it) {
								return fmt.Errorf("rank %d: broadcast %d from %d: %v", c.Rank(), it, it%p, b)
							}
						}
					}
					return nil
				})
			})
		}
	}
}

// TestShmMisuse checks that the mapping's agreement panics on every rank
// alike with the in-process group's messages, also where one rank's
// collective runs in the mapping and the other's in base.
func TestShmMisuse(t *testing.T) {
	cases := append(slices.Clone(misuses), misuse{"collectives differ, one in the mapping and one in base", func(c Comm) error {
		if c.Rank() == 1 {
			return c.Broadcast32(make([]float32, 3), 0)
		}
		return c.AllReduce64(make([]float64, 3), Sum)
	}, "rank 1 called Broadcast32 while rank 0 called AllReduce64"})
	for _, tc := range cases {
		panics, _ := runShm(t, 2, 4096, shmSpin, tc.f)
		for k, p := range panics {
			if msg := fmt.Sprint(p); p == nil || !strings.Contains(msg, tc.want) {
				t.Errorf("%s: rank %d: panic %v, want it to contain %q", tc.name, k, p, tc.want)
			}
		}
	}
}

// TestShmClosed checks that a closed rank's collectives return ErrClosed.
func TestShmClosed(t *testing.T) {
	mustShm(t, 1, 4096, shmSpin, func(c Comm) error {
		if err := c.Close(); err != nil {
			return err
		}
		for _, err := range []error{c.AllReduce32(make([]float32, 2), Sum), c.Barrier(), c.Broadcast64(nil, 0)} {
			if err != ErrClosed {
				return fmt.Errorf("after Close: %v, want ErrClosed", err)
			}
		}
		return nil
	})
}

// TestShmFiles checks that a file of the wrong length is refused.
func TestShmFiles(t *testing.T) {
	path := shmPath()
	if err := shmCreate(path, 2, 4096); err != nil {
		if errors.Is(err, errNoShm) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer os.Remove(path)
	if err := shmCreate(path, 2, 4096); err == nil {
		t.Error("shmCreate over an existing file succeeded")
	}
	if _, err := shmOpen(path, 0, 3); err == nil || !strings.Contains(err.Error(), "not the file of a group of 3 ranks") {
		t.Errorf("shmOpen with the wrong rank count: %v", err)
	}
	if _, err := shmOpen(path+"-none", 0, 2); err == nil {
		t.Error("shmOpen of a missing file succeeded")
	}
}

// BenchmarkShmAllReduce times a 1 MB float32 all-reduce of 2 and of 4
// in-process ranks through the mapping (each rank a goroutine).
func BenchmarkShmAllReduce(b *testing.B) {
	for _, p := range []int{2, 4} {
		b.Run(fmt.Sprintf("ranks=%d/bytes=1000000", p), func(b *testing.B) {
			b.SetBytes(1000000)
			mustShm(b, p, shmSlotBytes(p), shmSpin, func(c Comm) error {
				buf := make([]float32, 250000)
				if err := c.Barrier(); err != nil {
					return err
				}
				if c.Rank() == 0 {
					b.ResetTimer()
				}
				for range b.N {
					if err := c.AllReduce32(buf, Sum); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
