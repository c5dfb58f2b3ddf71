// Package cputime times alternatives by the CPU time of the thread that
// runs them, for A/B comparisons on a shared machine, where wall time
// measures the other processes' load more than the code.
package cputime

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Thread returns the CPU time the calling OS thread has used; the test
// is skipped where the clock is missing.
func Thread(t testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Skipf("no thread CPU clock: %v", err)
	}
	return time.Duration(ts.Nano())
}

// Variant is one of the alternatives that Compare times.
type Variant struct {
	Name string
	F    func()
}

// Compare runs each variant reps times per round, the variants
// interleaved, for rounds rounds on one locked thread with GOMAXPROCS 1
// (so that the parallel loops run on the caller), logs each one's median
// thread CPU time per call with its minimum and maximum, and returns the
// medians. Each variant runs once first, to warm caches and free lists.
func Compare(t testing.TB, rounds, reps int, vs ...Variant) []time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	times := make([][]time.Duration, len(vs))
	for _, v := range vs {
		v.F()
	}
	for range rounds {
		for i, v := range vs {
			t0 := Thread(t)
			for range reps {
				v.F()
			}
			times[i] = append(times[i], (Thread(t)-t0)/time.Duration(reps))
		}
	}
	med := make([]time.Duration, len(vs))
	for i, v := range vs {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
		t.Logf("%-34s median %8.3f ms  (min %.3f, max %.3f; %d rounds of %d, thread CPU time)", v.Name,
			Ms(med[i]), Ms(times[i][0]), Ms(times[i][len(times[i])-1]), rounds, reps)
	}
	return med
}

// Ms returns d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / 1e6 }

// Need skips the test unless LANES_CPUTIME is set: the comparisons
// measure, they assert nothing about speed.
func Need(t testing.TB) {
	if os.Getenv("LANES_CPUTIME") == "" {
		t.Skip("set LANES_CPUTIME=1 to time with the thread CPU clock")
	}
}
