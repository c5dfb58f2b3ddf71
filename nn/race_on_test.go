//go:build race

package nn

// raceEnabled: sync.Pool drops items at random under -race, so the
// allocation tests cannot hold there.
const raceEnabled = true
