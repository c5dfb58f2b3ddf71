package dist

import (
	"errors"
	"fmt"

	"github.com/lanesgo/lanes/simd"
)

// Op is the reduction of an all-reduce.
type Op int

const (
	// Sum leaves every rank's buffer holding the elementwise sum over the
	// ranks, added in rank order: ((x0 + x1) + x2) + ...
	Sum Op = iota
	// Mean is Sum scaled by 1/Size (a multiplication by the rounded
	// reciprocal, exact when Size is a power of two).
	Mean
)

func (op Op) String() string {
	switch op {
	case Sum:
		return "Sum"
	case Mean:
		return "Mean"
	}
	return fmt.Sprintf("Op(%d)", int(op))
}

// Comm is one rank's end of a communicator: a group of Size ranks,
// numbered 0 to Size-1, that run the same collective operations in the
// same order. Every collective blocks until the rank's part is done and
// returns only once the rank's buffers hold the result (and the rank may
// reuse the buffers it sent); a rank that never joins a collective the
// others run blocks them (as in MPI).
//
// Calls on one Comm must not overlap (one goroutine at a time, or calls
// ordered by the caller); the collectives must be called in the same
// order, with the same lengths, on every rank. Buffers of different ranks
// must not overlap.
//
// Programmer errors panic with a message naming the function: a length
// that does not match (naming both lengths, or the rank whose length
// differs when the implementation can see it), a root or Op out of range.
// Runtime failures (a closed group, the transport's errors) are returned.
type Comm interface {
	// Rank is this end's rank, in [0, Size).
	Rank() int
	// Size is the number of ranks in the group.
	Size() int
	// AllReduce32 replaces buf, on every rank, with the reduction op of
	// the ranks' bufs, all of the same length. The sum is formed in rank
	// order for each element, so the result is bit-for-bit the same on
	// every rank and in every run with the same Size, and the same in
	// every implementation of this package.
	AllReduce32(buf []float32, op Op) error
	// AllReduce64 is AllReduce32 for float64.
	AllReduce64(buf []float64, op Op) error
	// Broadcast32 copies root's buf into the bufs of the other ranks (all
	// of the same length).
	Broadcast32(buf []float32, root int) error
	// Broadcast64 is Broadcast32 for float64.
	Broadcast64(buf []float64, root int) error
	// AllGather32 sets dst[k*len(src):(k+1)*len(src)], on every rank, to
	// rank k's src; len(dst) must be Size*len(src), and src the same
	// length on every rank. dst and src must not overlap.
	AllGather32(dst, src []float32) error
	// AllGather64 is AllGather32 for float64.
	AllGather64(dst, src []float64) error
	// Barrier returns once every rank has called it.
	Barrier() error
	// Close leaves the group; later calls return ErrClosed. Closing one
	// rank of an in-process group makes the collectives of the others
	// fail rather than wait forever; MPI's Close is MPI_Finalize, which
	// every rank must call.
	Close() error
}

// ErrClosed is returned by a collective on a closed Comm, or (in
// process) on a group one of whose ranks has closed.
var ErrClosed = errors.New("dist: communicator closed")

// ErrNoMPI is returned by MPI when the package was built without -tags mpi
// (or without cgo).
var ErrNoMPI = errors.New("dist: built without MPI support (build with -tags mpi and cgo, against Open MPI's libopenmpi-dev)")

type float interface{ ~float32 | ~float64 }

// Split returns rank's part [lo, hi) of n elements (or rows) shared by
// size ranks: contiguous parts in rank order, the first n%size ranks one
// element more. It is the chunk of an all-reduce that a rank reduces,
// and the rows of a batch a rank trains on (nn's Batches.Shard).
func Split(n, rank, size int) (lo, hi int) {
	q, r := n/size, n%size
	lo = rank*q + min(rank, r)
	hi = lo + q
	if rank < r {
		hi++
	}
	return lo, hi
}

// reduceOrdered sets acc to the reduction op of pieces (each of acc's
// length), added in order: acc = ((p0 + p1) + p2) + ..., then scaled by
// 1/len(pieces) for Mean. Every implementation reduces through it, which
// makes their results equal bit for bit.
func reduceOrdered[T float](acc []T, pieces func(k int) []T, n int, op Op) {
	copy(acc, pieces(0))
	for k := 1; k < n; k++ {
		add(acc, acc, pieces(k))
	}
	if op == Mean && n > 1 {
		scale(acc, 1/T(n))
	}
}

func add[T float](dst, a, b []T) {
	switch d := any(dst).(type) {
	case []float32:
		simd.Add(d, any(a).([]float32), any(b).([]float32))
	case []float64:
		simd.AddF64(d, any(a).([]float64), any(b).([]float64))
	default:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	}
}

func scale[T float](x []T, s T) {
	switch d := any(x).(type) {
	case []float32:
		simd.Scale(d, d, float32(s))
	case []float64:
		simd.ScaleF64(d, d, float64(s))
	default:
		for i := range x {
			x[i] *= s
		}
	}
}

// checkOp panics unless op is Sum or Mean.
func checkOp(fn string, op Op) {
	if op != Sum && op != Mean {
		panic(fmt.Sprintf("dist: %s: unknown Op %d (want Sum or Mean)", fn, int(op)))
	}
}

// checkRoot panics unless root is a rank of a group of size ranks.
func checkRoot(fn string, root, size int) {
	if root < 0 || root >= size {
		panic(fmt.Sprintf("dist: %s: root %d out of range [0, %d)", fn, root, size))
	}
}

// checkGather panics unless len(dst) is size*len(src).
func checkGather(fn string, dst, src, size int) {
	if dst != size*src {
		panic(fmt.Sprintf("dist: %s: dst has %d elements, want %d (Size %d × src's %d)", fn, dst, size*src, size, src))
	}
}

// mismatch is the panic message of a collective fn whose length n on
// rank differs from want on rank 0.
func mismatch(fn string, rank, n, n0 int) string {
	return fmt.Sprintf("dist: %s: rank %d has %d elements, rank 0 has %d: every rank must pass the same length", fn, rank, n, n0)
}

// collectives numbers the functions for the agreements of the MPI Comm
// and the shared mapping.
var collectives = map[string]int64{"Barrier": 1, "AllReduce32": 2, "AllReduce64": 3, "Broadcast32": 4,
	"Broadcast64": 5, "AllGather32": 6, "AllGather64": 7, "MPIAllReduceNative32": 8}

// disagreement is the panic message of an agreement when a rank's
// function, length or argument in all (3 per rank, size ranks) differs
// from rank 0's, or "".
func disagreement(fn string, all []int64, size int) string {
	name := func(id int64) string {
		for k, v := range collectives {
			if v == id {
				return k
			}
		}
		return "?"
	}
	for k := 1; k < size; k++ {
		got := all[3*k : 3*k+3]
		switch {
		case got[0] != all[0]:
			return fmt.Sprintf("dist: %s: rank %d called %s while rank 0 called %s: every rank must run the same collectives in the same order", fn, k, name(got[0]), name(all[0]))
		case got[1] != all[1]:
			return mismatch(fn, k, int(got[1]), int(all[1]))
		case got[2] != all[2]:
			return fmt.Sprintf("dist: %s: rank %d passed %d, rank 0 passed %d: every rank must pass the same root or Op", fn, k, got[2], all[2])
		}
	}
	return ""
}
