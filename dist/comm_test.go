package dist

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// rankData returns rank's operand of n elements for a collective: values
// of mixed magnitude and sign, so that the order of additions shows in
// the rounding.
func rankData[T float](rank, n int) []T {
	x := make([]T, n)
	for i := range x {
		v := math.Sin(float64(i*7+rank*13+1)) * math.Pow(10, float64((i+rank)%5-2))
		x[i] = T(v)
	}
	return x
}

var lengths = []int{0, 1, 2, 3, 5, 17, 64, 1000, 4099}

// checkCollectives runs every collective on c, an end of a group whose
// rank k holds rankData(k, n), and checks the results against references
// computed from every rank's data: the all-reduce bit for bit against the
// rank-order sum in T and within rounding of the float64 (float32) or
// exact (float64, compensated) sum; Broadcast and AllGather exactly. It
// reports with Errorf (it may run on a rank's goroutine).
func checkCollectives(t *testing.T, c Comm) {
	checkAllReduce(t, c, "AllReduce32", c.AllReduce32, 1e-6)
	checkAllReduce(t, c, "AllReduce64", c.AllReduce64, 1e-14)
	checkBroadcast(t, c, "Broadcast32", c.Broadcast32)
	checkBroadcast(t, c, "Broadcast64", c.Broadcast64)
	checkAllGather(t, c, "AllGather32", c.AllGather32)
	checkAllGather(t, c, "AllGather64", c.AllGather64)
	if err := c.Barrier(); err != nil {
		t.Errorf("rank %d: Barrier: %v", c.Rank(), err)
	}
}

func checkAllReduce[T float](t *testing.T, c Comm, fn string, f func([]T, Op) error, tol float64) {
	p, rank := c.Size(), c.Rank()
	for _, op := range []Op{Sum, Mean} {
		for _, n := range lengths {
			buf := rankData[T](rank, n)
			if err := f(buf, op); err != nil {
				t.Errorf("rank %d: %s(%d, %v): %v", rank, fn, n, op, err)
				return
			}
			all := make([][]T, p)
			for k := range p {
				all[k] = rankData[T](k, n)
			}
			for i := range n {
				var ordered T
				var exact, mag float64
				for k := range p {
					v := all[k][i]
					if k == 0 {
						ordered = v
					} else {
						ordered += v
					}
					exact += float64(v)
					mag += math.Abs(float64(v))
				}
				if op == Mean && p > 1 {
					ordered *= 1 / T(p)
					exact /= float64(p)
					mag /= float64(p)
				}
				if buf[i] != ordered {
					t.Errorf("rank %d of %d: %s(%v) n=%d [%d] = %v, rank-order reduction %v", rank, p, fn, op, n, i, buf[i], ordered)
					return
				}
				if d := math.Abs(float64(buf[i]) - exact); d > tol*mag {
					t.Errorf("rank %d of %d: %s(%v) n=%d [%d] = %v, exact %v (error %g > %g)", rank, p, fn, op, n, i, buf[i], exact, d, tol*mag)
					return
				}
			}
		}
	}
}

func checkBroadcast[T float](t *testing.T, c Comm, fn string, f func([]T, int) error) {
	for root := range c.Size() {
		for _, n := range lengths {
			buf := rankData[T](c.Rank(), n)
			if err := f(buf, root); err != nil {
				t.Errorf("rank %d: %s(%d, root %d): %v", c.Rank(), fn, n, root, err)
				return
			}
			want := rankData[T](root, n)
			for i := range want {
				if buf[i] != want[i] {
					t.Errorf("rank %d: %s(n=%d, root %d)[%d] = %v, want %v", c.Rank(), fn, n, root, i, buf[i], want[i])
					return
				}
			}
		}
	}
}

func checkAllGather[T float](t *testing.T, c Comm, fn string, f func(dst, src []T) error) {
	p := c.Size()
	for _, n := range lengths {
		dst := make([]T, p*n)
		if err := f(dst, rankData[T](c.Rank(), n)); err != nil {
			t.Errorf("rank %d: %s(%d): %v", c.Rank(), fn, n, err)
			return
		}
		for k := range p {
			want := rankData[T](k, n)
			for i := range want {
				if dst[k*n+i] != want[i] {
					t.Errorf("rank %d: %s(n=%d): dst[%d] (rank %d's [%d]) = %v, want %v", c.Rank(), fn, n, k*n+i, k, i, dst[k*n+i], want[i])
					return
				}
			}
		}
	}
}

func TestLocalCollectives(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4, 7} {
		t.Run(fmt.Sprintf("ranks=%d", p), func(t *testing.T) {
			err := RunLocal(p, func(c Comm) error {
				if c.Size() != p {
					return fmt.Errorf("Size %d, want %d", c.Size(), p)
				}
				checkCollectives(t, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLocalReproducible checks that two runs give the same bits and that
// the ranks agree, for a buffer whose sum depends on the order.
func TestLocalReproducible(t *testing.T) {
	run := func(p int) [][]float32 {
		out := make([][]float32, p)
		if err := RunLocal(p, func(c Comm) error {
			buf := rankData[float32](c.Rank(), 10007)
			out[c.Rank()] = buf
			return c.AllReduce32(buf, Mean)
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, p := range []int{2, 3, 4} {
		a, b := run(p), run(p)
		for k := range p {
			for i := range a[0] {
				if math.Float32bits(a[k][i]) != math.Float32bits(a[0][i]) || math.Float32bits(b[k][i]) != math.Float32bits(a[0][i]) {
					t.Fatalf("ranks=%d: rank %d [%d]: %v and %v in two runs, rank 0 %v", p, k, i, a[k][i], b[k][i], a[0][i])
				}
			}
		}
	}
}

func TestSplit(t *testing.T) {
	for _, n := range []int{0, 1, 5, 16, 17} {
		for _, p := range []int{1, 2, 3, 4, 7} {
			next := 0
			for k := range p {
				lo, hi := Split(n, k, p)
				if lo != next || hi < lo || hi-lo > n/p+1 || hi-lo < n/p {
					t.Fatalf("Split(%d, %d, %d) = [%d, %d), want it to start at %d with %d or %d elements", n, k, p, lo, hi, next, n/p, n/p+1)
				}
				next = hi
			}
			if next != n {
				t.Fatalf("chunks of %d among %d end at %d", n, p, next)
			}
		}
	}
}

func panicOf(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	f()
	return ""
}

// misuse is a programmer error on a group of two ranks and (a part of)
// the panic message that every implementation raises for it.
type misuse struct {
	name string
	f    func(c Comm) error
	want string
}

// misuses are the programmer errors that every Comm catches alike.
var misuses = []misuse{
	{"lengths differ", func(c Comm) error { return c.AllReduce32(make([]float32, 3+c.Rank()), Sum) },
		"dist: AllReduce32: rank 1 has 4 elements, rank 0 has 3"},
	{"long lengths differ", func(c Comm) error { return c.AllReduce64(make([]float64, 5000+c.Rank()), Sum) },
		"dist: AllReduce64: rank 1 has 5001 elements, rank 0 has 5000"},
	{"collectives differ", func(c Comm) error {
		if c.Rank() == 1 {
			return c.Barrier()
		}
		return c.AllReduce64(make([]float64, 3), Sum)
	}, "rank 1 called Barrier while rank 0 called AllReduce64"},
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

func TestLocalMisuse(t *testing.T) {
	for _, tc := range misuses {
		msg := panicOf(func() { RunLocal(2, tc.f) })
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: panic %q, want it to contain %q", tc.name, msg, tc.want)
		}
	}
	if msg := panicOf(func() { NewLocal(0) }); !strings.Contains(msg, "dist: NewLocal: 0 ranks") {
		t.Errorf("NewLocal(0): panic %q", msg)
	}
}

func TestLocalClosed(t *testing.T) {
	err := RunLocal(3, func(c Comm) error {
		if c.Rank() == 2 {
			return c.Close()
		}
		return c.AllReduce32(make([]float32, 4), Sum)
	})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("a collective after a rank closed: %v, want ErrClosed", err)
	}
	c := NewLocal(1)[0]
	c.Close()
	if err := c.Barrier(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Barrier on a closed Comm: %v, want ErrClosed", err)
	}
}
