package peers

import (
	"slices"
	"time"
)

// Measure times f and returns nanoseconds per call: it finds a call count that
// takes about round/5, then runs rounds rounds of that count and returns the
// median round's time per call. The median, not the minimum, so that a figure
// is one the machine actually delivers most of the time.
func Measure(f func(), round time.Duration, rounds int) float64 {
	count := calibrate(f, round)
	per := make([]float64, rounds)
	for r := range per {
		start := time.Now()
		for range count {
			f()
		}
		per[r] = float64(time.Since(start).Nanoseconds()) / float64(count)
	}
	slices.Sort(per)
	return per[len(per)/2]
}

// calibrate warms f up and returns the call count that takes about round:
// it finds a count that takes about round/5 and scales it.
func calibrate(f func(), round time.Duration) int {
	f() // warm caches and page in the slices
	count := 1
	for {
		start := time.Now()
		for range count {
			f()
		}
		if el := time.Since(start); el >= round/5 || count >= 1<<30 {
			if el > 0 {
				count = max(1, int(float64(count)*float64(round)/float64(el)))
			}
			return count
		}
		count *= 4
	}
}

// MeasureAll times every f as Measure does, but interleaved: each round runs
// every f once (its own call count, about round long, after one untimed call
// so that it starts on caches it filled itself), starting with a different f
// each round, so that a shared machine's changing load falls on all of them
// alike and the ratios between them hold better than those of separate
// Measure calls. before, if not nil, runs before each f's calibration and
// each of its rounds (to make its SIMD level active). It returns each f's
// median ns per call.
func MeasureAll(fs []func(), before func(i int), round time.Duration, rounds int) []float64 {
	med, _, _ := MeasureAllRemote(fs, nil, before, round, rounds)
	return med
}

// MeasureAllRemote is MeasureAll with one more implementation, timed in
// another process: remote, if not nil, runs one round there (about round
// long) and returns that round's ns per call as timed there (GCCServer.Round).
// Its rounds take their turn among fs's, and its median is the second result.
// An error of remote ends the measurement with that error.
func MeasureAllRemote(fs []func(), remote func() (float64, error), before func(i int), round time.Duration, rounds int) ([]float64, float64, error) {
	if before == nil {
		before = func(int) {}
	}
	counts := make([]int, len(fs))
	for i, f := range fs {
		before(i)
		counts[i] = calibrate(f, round)
	}
	slots := len(fs)
	if remote != nil {
		slots++
	}
	per := make([][]float64, slots)
	for r := 0; r < rounds; r++ {
		for j := range slots {
			i := (j + r) % slots
			if i == len(fs) {
				ns, err := remote()
				if err != nil {
					return nil, 0, err
				}
				per[i] = append(per[i], ns)
				continue
			}
			before(i)
			fs[i]()
			start := time.Now()
			for range counts[i] {
				fs[i]()
			}
			per[i] = append(per[i], float64(time.Since(start).Nanoseconds())/float64(counts[i]))
		}
	}
	med := make([]float64, slots)
	for i, p := range per {
		slices.Sort(p)
		med[i] = p[len(p)/2]
	}
	if remote != nil {
		return med[:len(fs)], med[len(fs)], nil
	}
	return med, 0, nil
}
