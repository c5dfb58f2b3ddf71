//go:build unix

package dispatch

import "syscall"

// openNonblock opens the thresholds file without waiting: opening a FIFO
// for reading otherwise blocks until some process opens it for writing.
// It changes nothing for a regular file.
const openNonblock = syscall.O_NONBLOCK
