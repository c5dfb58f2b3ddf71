//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package dispatch

import (
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after a while:
// a loader that blocks on a FIFO fails instead of hanging the test binary.
// unblock (if not nil) is called on a timeout to let f finish.
func within(t *testing.T, what string, unblock func(), f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		if unblock != nil {
			unblock()
			<-done
		}
		t.Fatalf("%s did not return within 10 s", what)
	}
}

// mkfifo makes a named pipe in a temporary directory and returns its path
// and a function that opens it for writing and closes it again (which
// lets a reader blocked in open or read go on).
func mkfifo(t *testing.T) (string, func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo.json")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path, func() {
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	}
}

// TestLoadThresholdsNotRegular gives LoadThresholds and loadInstalled a
// FIFO (which blocked the open for ever), a socket, devices and a
// directory: each is refused, saying what it is, with one warning and the
// defaults.
func TestLoadThresholdsNotRegular(t *testing.T) {
	fifo, unblock := mkfifo(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.json")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, why string }{
		{fifo, "is a named pipe (FIFO), not a regular file"},
		{link, "is a named pipe (FIFO), not a regular file"},
		{sock, "is a socket, not a regular file"},
		{"/dev/null", "is a device, not a regular file"},
		{"/dev/zero", "is a device, not a regular file"},
		{dir, "is a directory, not a regular file"},
	} {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("%s: %v", c.path, err)
			continue
		}
		var err error
		within(t, "LoadThresholds("+c.path+")", unblock, func() { _, err = LoadThresholds(c.path) })
		if err == nil || !strings.Contains(err.Error(), c.path+" "+c.why) || !strings.HasPrefix(err.Error(), "dispatch: thresholds: ") {
			t.Errorf("LoadThresholds(%s) = %v, want an error saying %q", c.path, err, c.why)
		}
		var warnings []string
		var got installed
		within(t, "loadInstalled("+c.path+")", unblock, func() {
			got = loadInstalled(env(map[string]string{ThresholdsEnv: c.path}), func() (string, error) { return dir, nil },
				func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) })
		})
		if len(warnings) != 1 || !strings.Contains(warnings[0], c.why) || got.t != DefaultThresholds() ||
			got.source != "built-in defaults ("+c.path+" rejected: see the log)" {
			t.Errorf("%s: warnings %q, thresholds %+v from %q", c.path, warnings, got.t, got.source)
		}
	}
}

// TestThresholdsFIFODoesNotBlockPlace is the process-wide path: with
// LANES_THRESHOLDS naming a FIFO, the first Place and Report return, log
// one warning and place with the defaults.
func TestThresholdsFIFODoesNotBlockPlace(t *testing.T) {
	if prev := SetPlacer(nil); prev != nil {
		defer SetPlacer(prev)
	}
	saved := currentThresholds() // loaded, so that the restore below leaves thresholds in force
	defer func() { current.Store(saved) }()
	var logged strings.Builder
	var mu sync.Mutex
	log.SetOutput(lockedWriter{&mu, &logged})
	defer log.SetOutput(os.Stderr)

	fifo, unblock := mkfifo(t)
	t.Setenv(ThresholdsEnv, fifo)
	current.Store(nil)
	loadCurrent = sync.Once{}
	var r string
	within(t, "Place and Report with "+ThresholdsEnv+" naming a FIFO", unblock, func() {
		PlaceOp(OpMatMul, false, 4096, 4096, 4096)
		r = Report()
	})
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logged.String(), "lanes: thresholds file"); n != 1 || !strings.Contains(logged.String(), "named pipe") {
		t.Errorf("log, want one warning about the named pipe:\n%s", logged.String())
	}
	if !strings.Contains(r, "placement: thresholds from built-in defaults ("+fifo+" rejected") {
		t.Errorf("Report:\n%s", r)
	}
	if got, _ := ActiveThresholds(); got != DefaultThresholds() {
		t.Errorf("ActiveThresholds = %+v, want the defaults", got)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
