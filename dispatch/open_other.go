//go:build !unix

package dispatch

// openNonblock is 0 where os.OpenFile has no non-blocking open: there
// LoadThresholds relies on the os.Stat it makes before opening.
const openNonblock = 0
