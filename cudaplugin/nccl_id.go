package cudaplugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The NCCL pieces that need no cgo, in every build (nccl.go is the
// communicator, with -tags cuda or cudaemu; nocuda.go its stand-ins).

// NCCLLibraryEnv names the environment variable that overrides where
// the NCCL library is looked for (a path or a file name for dlopen).
const NCCLLibraryEnv = "LANES_NCCL_LIBRARY"

// ErrNoNCCL is what the NCCL functions return, wrapped with dlopen's
// reason, when the NCCL library cannot be loaded: libnccl.so.2, which
// NVIDIA's libnccl2 package and PyTorch's CUDA wheels (nvidia-nccl-cu12)
// ship, is looked for by dlopen's search (LD_LIBRARY_PATH, the ld.so
// cache), or where LANES_NCCL_LIBRARY says. No build of lanes links NCCL.
var ErrNoNCCL = errors.New("cudaplugin: NCCL library not found (install NVIDIA's libnccl2, or set " + NCCLLibraryEnv + " to libnccl.so.2's path)")

// NCCLID is an NCCL unique id (ncclUniqueId): rank 0 makes it with
// NewNCCLID and every rank of the communicator must get the same one.
type NCCLID [128]byte

// WriteNCCLID writes id to path atomically (a temporary file renamed),
// for ranks that share a file system but no dist.Comm.
func WriteNCCLID(path string, id NCCLID) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".nccl-id-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(id[:]); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadNCCLID waits up to timeout for WriteNCCLID's file at path and
// returns its id. A file of another length is an error.
func ReadNCCLID(path string, timeout time.Duration) (NCCLID, error) {
	var id NCCLID
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		switch {
		case err == nil && len(b) == len(id):
			copy(id[:], b)
			return id, nil
		case err == nil:
			return id, fmt.Errorf("cudaplugin: ReadNCCLID: %s holds %d bytes, not an NCCL id's %d", path, len(b), len(id))
		case !errors.Is(err, os.ErrNotExist):
			return id, err
		case time.Now().After(deadline):
			return id, fmt.Errorf("cudaplugin: ReadNCCLID: no id at %s after %v", path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
