//go:build !mpi || !cgo

package dist

import (
	"errors"
	"testing"
)

func TestNoMPI(t *testing.T) {
	if c, err := MPI(); c != nil || !errors.Is(err, ErrNoMPI) {
		t.Fatalf("MPI() without -tags mpi = %v, %v; want nil, ErrNoMPI", c, err)
	}
}
