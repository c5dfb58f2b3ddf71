package par

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counter counts how often each index is run.
type counter struct{ hits []atomic.Int32 }

func (c *counter) RunRange(lo, hi int) {
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

func check(t *testing.T, c *counter, n, parts int) {
	t.Helper()
	for i := range n {
		if h := c.hits[i].Load(); h != 1 {
			t.Fatalf("For(n=%d, parts=%d): index %d ran %d times, want 1", n, parts, i, h)
		}
	}
}

// TestForCoversEachIndexOnce runs loops of every small size and part count,
// from several goroutines at once, and nested.
func TestForCoversEachIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n <= 40; n++ {
				for parts := -1; parts <= 9; parts++ {
					c := &counter{hits: make([]atomic.Int32, n)}
					For(c, n, parts+g)
					check(t, c, n, parts+g)
				}
			}
		}()
	}
	wg.Wait()
}

// nested runs an inner loop in each index of an outer one.
type nested struct{ inner []*counter }

func (x *nested) RunRange(lo, hi int) {
	for i := lo; i < hi; i++ {
		For(x.inner[i], len(x.inner[i].hits), 3)
	}
}

func TestForNested(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	for range 50 {
		x := &nested{}
		for i := range 7 {
			x.inner = append(x.inner, &counter{hits: make([]atomic.Int32, 5+i)})
		}
		For(x, len(x.inner), 3)
		for _, c := range x.inner {
			check(t, c, len(c.hits), 3)
		}
	}
}

func TestForAllocatesNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	c := &counter{hits: make([]atomic.Int32, 1000)}
	For(c, 1000, 2)
	if a := testing.AllocsPerRun(100, func() { For(c, 1000, 2) }); a != 0 {
		t.Errorf("For allocated %v times per run, want 0", a)
	}
}

// BenchmarkFor times an empty two-part loop: the cost of handing a part
// to a worker and waiting for it.
func BenchmarkFor(b *testing.B) {
	c := &counter{hits: make([]atomic.Int32, 2)}
	for b.Loop() {
		For(c, 2, 2)
	}
}

// TestSpinFromEnv: a LANES_SPIN that is not a duration ≥ 0 keeps the
// default, with one warning and a note for Report that both quote the
// value, cut to 64 bytes; an empty one is no value.
func TestSpinFromEnv(t *testing.T) {
	long := strings.Repeat("9", 100000) + "ms"
	for _, c := range []struct {
		env     string
		spin    time.Duration
		note    string
		warning string
	}{
		{"", DefaultSpin, "default", ""},
		{"0", 0, "LANES_SPIN", ""},
		{"500us", 500 * time.Microsecond, "LANES_SPIN", ""},
		{"garbage", DefaultSpin, `default; LANES_SPIN="garbage" ignored`, `lanes: LANES_SPIN="garbage" is not a duration ≥ 0`},
		{"-1ms", DefaultSpin, `default; LANES_SPIN="-1ms" ignored`, `LANES_SPIN="-1ms" is not a duration`},
		{"2ms\nworkers: 9", DefaultSpin, `default; LANES_SPIN="2ms\nworkers: 9" ignored`, `LANES_SPIN="2ms\nworkers: 9" is not`},
		{long, DefaultSpin, `default; LANES_SPIN="` + long[:64] + `"... (100002 bytes) ignored`, `"... (100002 bytes) is not a duration`},
	} {
		d, note, warning := spinFromEnv(c.env)
		if d != c.spin || note != c.note || (c.warning == "") != (warning == "") || !strings.Contains(warning, c.warning) {
			t.Errorf("LANES_SPIN=%.80q: %v, %q, warning %.200q; want %v, %q, a warning containing %q", c.env, d, note, warning, c.spin, c.note, c.warning)
		}
		if strings.Contains(note+warning, "\n") {
			t.Errorf("LANES_SPIN=%.80q: a raw newline in %q or %q", c.env, note, warning)
		}
	}
}

// TestPartOf checks that PartOf inverts For's split: the range of part p
// starts at an lo whose PartOf is p.
func TestPartOf(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 64, 100, 1000} {
		for parts := 1; parts <= min(n, 9); parts++ {
			j := &job{n: n}
			j.state.Store(uint64(parts) << 32)
			for p := 0; ; p++ {
				lo, _, ok := j.claim()
				if !ok {
					if p != parts {
						t.Fatalf("n=%d parts=%d: %d ranges", n, parts, p)
					}
					break
				}
				if got := PartOf(lo, n, parts); got != p {
					t.Fatalf("n=%d parts=%d: PartOf(%d) = %d, want %d", n, parts, lo, got, p)
				}
			}
		}
	}
}
