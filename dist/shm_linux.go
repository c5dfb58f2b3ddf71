package dist

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reserve gives f its length n with its blocks allocated (fallocate), so
// that a full file system fails here.
func reserve(f *os.File, n int) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, int64(n))
}

func mapShared(f *os.File, n int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapShared(b []byte) error { return unix.Munmap(b) }

// futexWait sleeps while *word == v, for at most 100 ms (the caller
// checks again), on a futex shared between processes (no FUTEX_PRIVATE).
func futexWait(word *uint32, v uint32) {
	ts := unix.Timespec{Nsec: 100e6}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWaitOp, uintptr(v), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every sleeper on word.
func futexWake(word *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWakeOp, uintptr(1<<31-1), 0, 0, 0)
}

// The futex operations (linux/futex.h).
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

// shmDir is where groups make their files: tmpfs, so their pages are
// memory.
const shmDir = "/dev/shm"
