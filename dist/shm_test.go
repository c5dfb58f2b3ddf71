package dist

import (
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
)

// runShm runs f on each rank of a group of n ranks that all-reduce
// through a shared mapping with slots of slot bytes (in-process ranks
// for the rest), and returns the panics and errors by rank.
func runShm(t testing.TB, n, slot int, f func(c Comm) error) (panics []any, errs []error) {

	t.Helper()
	path := shmPath()
	if err := shmCreate(path, n, slot); err != nil {
		t.Skipf("no shared mapping here: %v", err)
	}
	base := NewLocal(n)
	cs := make([]*shmComm, n)
	for k := range n {
		g, err := shmOpen(path, k, n)
		if err != nil {
			t.Fatal(err)
		}
		cs[k] = &shmComm{base: base[k], g: g}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
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
	wg.Wait()
	return panics, errs
}

func mustShm(t testing.TB, n, slot int, f func(c Comm) error) {
	t.Helper()
	panics, errs := runShm(t, n, slot, f)
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
			mustShm(t, p, slot, func(c Comm) error {
				if Transport(c) != "in-process+shm" {
					t.Errorf("Transport = %q", Transport(c))
				}
				checkCollectives(t, c)
				return nil
			})
		}
	}
}

// TestShmMatchesLocal checks the mapping's all-reduce against the
// in-process group's bit for bit, over lengths that end pieces anywhere.
func TestShmMatchesLocal(t *testing.T) {
	for _, p := range []int{2, 3, 4} {
		for _, n := range []int{511, 512, 513, 1023, 1024, 1025, 3000, 100003} {
			want32, want64 := make([][]float32, p), make([][]float64, p)
			if err := RunLocal(p, func(c Comm) error {
				r := c.Rank()
				want32[r], want64[r] = rankData[float32](r, n), rankData[float64](r, n)
				if err := c.AllReduce32(want32[r], Mean); err != nil {
					return err
				}
				return c.AllReduce64(want64[r], Sum)
			}); err != nil {
				t.Fatal(err)
			}
			mustShm(t, p, 4096, func(c Comm) error {
				r := c.Rank()
				b32, b64 := rankData[float32](r, n), rankData[float64](r, n)
				for range 2 { // the second pass reuses the slot sets
					copy(b32, rankData[float32](r, n))
					copy(b64, rankData[float64](r, n))
					if err := c.AllReduce32(b32, Mean); err != nil {
						return err
					}
					if err := c.AllReduce64(b64, Sum); err != nil {
						return err
					}
					for i := range n {
						if math.Float32bits(b32[i]) != math.Float32bits(want32[0][i]) || math.Float64bits(b64[i]) != math.Float64bits(want64[0][i]) {
							return fmt.Errorf("ranks=%d n=%d [%d]: %v, %v; in process %v, %v", p, n, i, b32[i], b64[i], want32[0][i], want64[0][i])
						}
					}
				}
				return nil
			})
		}
	}
}

// TestShmMisuse checks that the mapping's agreement panics on every rank
// alike with the in-process group's messages, also where one rank's
// collective runs in the mapping and the other's in base.
func TestShmMisuse(t *testing.T) {
	cases := []struct {
		name string
		f    func(c Comm) error
		want string
	}{
		{"lengths differ", func(c Comm) error { return c.AllReduce32(make([]float32, 3+c.Rank()), Sum) },
			"dist: AllReduce32: rank 1 has 4 elements, rank 0 has 3"},
		{"lengths differ in pieces", func(c Comm) error { return c.AllReduce64(make([]float64, 5000+c.Rank()), Sum) },
			"dist: AllReduce64: rank 1 has 5001 elements, rank 0 has 5000"},
		{"collectives differ", func(c Comm) error {
			if c.Rank() == 1 {
				return c.Broadcast32(make([]float32, 3), 0)
			}
			return c.AllReduce64(make([]float64, 3), Sum)
		}, "rank 1 called Broadcast32 while rank 0 called AllReduce64"},
		{"ops differ", func(c Comm) error { return c.AllReduce32(make([]float32, 2), Op(c.Rank())) },
			"dist: AllReduce32: rank 1 passed 1, rank 0 passed 0"},
		{"roots differ", func(c Comm) error { return c.Broadcast32(make([]float32, 2), c.Rank()) },
			"dist: Broadcast32: rank 1 passed 1, rank 0 passed 0"},
		{"root out of range", func(c Comm) error { return c.Broadcast64(make([]float64, 2), 2) },
			"dist: Broadcast64: root 2 out of range [0, 2)"},
		{"bad op", func(c Comm) error { return c.AllReduce32(nil, Op(7)) }, "dist: AllReduce32: unknown Op 7"},
		{"gather dst", func(c Comm) error { return c.AllGather32(make([]float32, 5), make([]float32, 3)) },
			"dist: AllGather32: dst has 5 elements, want 6 (Size 2 × src's 3)"},
	}
	for _, tc := range cases {
		panics, _ := runShm(t, 2, 4096, tc.f)
		for k, p := range panics {
			if msg := fmt.Sprint(p); p == nil || !strings.Contains(msg, tc.want) {
				t.Errorf("%s: rank %d: panic %v, want it to contain %q", tc.name, k, p, tc.want)
			}
		}
	}
}

// TestShmClosed checks that a closed rank's collectives return ErrClosed.
func TestShmClosed(t *testing.T) {
	mustShm(t, 1, 4096, func(c Comm) error {
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
		t.Skipf("no shared mapping here: %v", err)
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

// BenchmarkShmAllReduce times a 1 MB float32 all-reduce of two in-process
// ranks through the mapping (each rank a goroutine).
func BenchmarkShmAllReduce(b *testing.B) {
	for _, p := range []int{2, 4} {
		b.Run(fmt.Sprintf("ranks=%d/bytes=1000000", p), func(b *testing.B) {
			b.SetBytes(1000000)
			mustShm(b, p, shmSlotBytes(p), func(c Comm) error {
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
