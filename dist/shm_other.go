//go:build !linux

package dist

import (
	"errors"
	"os"
	"time"
)

var errNoShm = errors.New("dist: no shared-memory transport on this system")

func reserve(f *os.File, n int) error             { return errNoShm }
func mapShared(f *os.File, n int) ([]byte, error) { return nil, errNoShm }
func unmapShared(b []byte) error                  { return nil }

// futexWait and futexWake are a poll with a short sleep (unused: no
// group is made without reserve).
func futexWait(word *uint32, v uint32) { time.Sleep(50 * time.Microsecond) }
func futexWake(word *uint32)           {}

const shmDir = ""
