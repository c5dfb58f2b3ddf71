//go:build !mpi || !cgo

package dist

// MPI reports ErrNoMPI: the package was built without -tags mpi (or
// without cgo). See mpi.go.
func MPI() (Comm, error) { return nil, ErrNoMPI }

// MPIAllReduceNative32 reports ErrNoMPI (see mpi.go).
func MPIAllReduceNative32(c Comm, buf []float32) error { return ErrNoMPI }
