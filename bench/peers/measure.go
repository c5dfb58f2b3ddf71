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
	f() // warm caches and page in the slices
	count := 1
	for {
		start := time.Now()
		for range count {
			f()
		}
		if el := time.Since(start); el >= round/5 || count >= 1<<30 {
			// Scale the count so one round takes about round.
			if el > 0 {
				c := int(float64(count) * float64(round) / float64(el))
				count = max(1, c)
			}
			break
		}
		count *= 4
	}
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
