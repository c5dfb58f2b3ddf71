//go:build !linux

package dist

import (
	"os"
	"runtime"
	"time"
)

// shmDir is empty: no on-node transport here (shmCreate and shmOpen
// return errNoShm before touching any file).
const shmDir = ""

func reserve(f *os.File, n int) error             { return errNoShm }
func mapShared(f *os.File, n int) ([]byte, error) { return nil, errNoShm }
func unmapShared(b []byte) error                  { return nil }

// futexWait and futexWake are a short sleep and nothing (unused: no
// group is made here).
func futexWait(word *uint32, v uint32) { time.Sleep(50 * time.Microsecond) }
func futexWake(word *uint32)           {}

func hostCPUs() int { return runtime.NumCPU() }
