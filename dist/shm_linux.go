package dist

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// shmDir is where groups make their files: tmpfs, so their pages are
// memory.
const shmDir = "/dev/shm"

// reserve gives f its length n with its blocks allocated (fallocate), so
// that a full file system fails here.
func reserve(f *os.File, n int) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, int64(n))
}

func mapShared(f *os.File, n int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapShared(b []byte) error { return unix.Munmap(b) }

// The futex operations (linux/futex.h).
const (
	futexWaitOp = 0
	futexWakeOp = 1
)

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

// hostCPUs is the number of CPUs online on the host, from
// /sys/devices/system/cpu/online ("0-1,4-7"); runtime.NumCPU counts only
// those of the process's affinity mask, a single one for each rank that
// mpirun binds to a core.
func hostCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if found {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	return max(n, 1)
}
