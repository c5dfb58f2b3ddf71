//go:build cuda || cudaemu

package cudaplugin

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lanesgo/lanes/dist"
)

// TestNCCLMissing: without an NCCL library, loading fails with ErrNoNCCL
// naming what dlopen said, and NewNCCLComm fails on every rank of a
// group instead of leaving the others waiting for rank 0's id. It runs
// in a child process pointed at a library that does not exist, as a
// library loaded by another test stays loaded.
func TestNCCLMissing(t *testing.T) {
	const missing = "/nonexistent/lanes-test/libnccl.so.2"
	if !inChild(t, NCCLLibraryEnv+"="+missing) {
		return
	}
	_, err := NCCLVersion()
	if !errors.Is(err, ErrNoNCCL) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("NCCLVersion() error = %v, want ErrNoNCCL naming %s", err, missing)
	}
	if _, err := NewNCCLID(); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("NewNCCLID() error = %v, want ErrNoNCCL", err)
	}
	g, err := Open(0)
	if err != nil {
		return // no device: the group's path needs one (the library checks above ran)
	}
	defer g.Close()
	if _, err := g.NewNCCLCommID(NCCLID{}, 0, 1); !errors.Is(err, ErrNoNCCL) {
		t.Errorf("NewNCCLCommID error = %v, want ErrNoNCCL", err)
	}
	done := make(chan error, 1)
	go func() {
		done <- dist.RunLocal(3, func(c dist.Comm) error {
			n, err := g.NewNCCLComm(c)
			if err == nil {
				n.Close()
				return errors.New("NewNCCLComm succeeded without NCCL")
			}
			if c.Rank() == 0 && !errors.Is(err, ErrNoNCCL) {
				return err
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("NewNCCLComm without NCCL did not return on every rank")
	}
}

// TestNCCLDefaultSearch: on a machine without NCCL installed (CI), the
// default search fails with ErrNoNCCL and says how to fix it.
func TestNCCLDefaultSearch(t *testing.T) {
	if !inChild(t, NCCLLibraryEnv+"=") {
		return
	}
	v, err := NCCLVersion()
	if err == nil {
		t.Skipf("NCCL %d is installed here: the missing-library path is not taken", v)
	}
	if !errors.Is(err, ErrNoNCCL) || !strings.Contains(err.Error(), "libnccl.so.2") || !strings.Contains(err.Error(), NCCLLibraryEnv) {
		t.Errorf("NCCLVersion() error = %v, want ErrNoNCCL naming libnccl.so.2 and %s", err, NCCLLibraryEnv)
	}
}

func TestNCCLIDFile(t *testing.T) {
	path := t.TempDir() + "/id"
	var id NCCLID
	for i := range id {
		id[i] = byte(255 - i)
	}
	got := make(chan NCCLID, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := ReadNCCLID(path, 10*time.Second)
		got <- r
		errc <- err
	}()
	time.Sleep(30 * time.Millisecond)
	if err := WriteNCCLID(path, id); err != nil {
		t.Fatal(err)
	}
	if r, err := <-got, <-errc; err != nil || r != id {
		t.Fatalf("ReadNCCLID = %x, %v; want %x", r, err, id)
	}
	if _, err := ReadNCCLID(t.TempDir()+"/none", 20*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no id") {
		t.Errorf("ReadNCCLID of a missing file: %v", err)
	}
}
