//go:build mpi && cgo

package dist

/*
#cgo pkg-config: ompi-c
#include <stdint.h>
#include <stdlib.h>
#include <mpi.h>

// Open MPI's handles are macros over the addresses of its globals, which
// cgo cannot name: these return them.
static MPI_Datatype dt_float(void) { return MPI_FLOAT; }
static MPI_Datatype dt_double(void) { return MPI_DOUBLE; }
static MPI_Datatype dt_int64(void) { return MPI_INT64_T; }

static int lanes_init(int *provided, int *rank, int *size) {
	int inited = 0;
	MPI_Initialized(&inited);
	int rc = inited ? MPI_Query_thread(provided) : MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_size(MPI_COMM_WORLD, size);
}

static int lanes_alltoallv(void *send, int *scounts, int *sdispls, void *recv, int *rcounts, int *rdispls, MPI_Datatype dt) {
	return MPI_Alltoallv(send, scounts, sdispls, dt, recv, rcounts, rdispls, dt, MPI_COMM_WORLD);
}

static int lanes_allgatherv_inplace(void *buf, int *counts, int *displs, MPI_Datatype dt) {
	return MPI_Allgatherv(MPI_IN_PLACE, 0, dt, buf, counts, displs, dt, MPI_COMM_WORLD);
}

static int lanes_allgather(void *send, int n, void *recv, MPI_Datatype dt) {
	return MPI_Allgather(send, n, dt, recv, n, dt, MPI_COMM_WORLD);
}

static int lanes_bcast(void *buf, int n, int root, MPI_Datatype dt) {
	return MPI_Bcast(buf, n, dt, root, MPI_COMM_WORLD);
}

static int lanes_allreduce_native(void *buf, int n, MPI_Datatype dt) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, dt, MPI_SUM, MPI_COMM_WORLD);
}

// lanes_node_size sets *n to the number of ranks on this rank's host.
static int lanes_node_size(int *n) {
	MPI_Comm node;
	int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	if (rc != MPI_SUCCESS) return rc;
	rc = MPI_Comm_size(node, n);
	MPI_Comm_free(&node);
	return rc;
}

static int lanes_bcast_bytes(void *buf, int n, int root) {
	return MPI_Bcast(buf, n, MPI_CHAR, root, MPI_COMM_WORLD);
}

static int lanes_allmin_int(int *v) {
	return MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
}

static void lanes_error_string(int code, char *buf) {
	int len = 0;
	MPI_Error_string(code, buf, &len);
	buf[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING - 1] = 0;
}

static int lanes_max_error_string(void) { return MPI_MAX_ERROR_STRING; }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// This file is the MPI communicator (-tags mpi, cgo, Open MPI's
// libopenmpi-dev): MPI_COMM_WORLD of a program that mpirun (or srun)
// started. Every MPI call runs on one goroutine locked to the OS thread
// that called MPI_Init_thread (MPI_THREAD_FUNNELED), so that the Comm may
// be used from any goroutine.
//
// The all-reduce is not MPI_Allreduce: Open MPI 4.1's (coll/tuned) picks
// its algorithm (recursive doubling, ring, Rabenseifner, ...) by message
// size and process count, so its order of additions changes with the
// bucket size and differs from the in-process group's. It is instead a
// reduce-scatter through MPI_Alltoallv (each rank receives every rank's
// piece of its chunk), a sum of the pieces in rank order (reduceOrdered,
// the in-process group's code) and an MPI_Allgatherv of the chunks: the
// bandwidth-optimal volume (each rank sends and receives 2(P-1)/P of the
// buffer, as a ring does) and results bit-for-bit those of NewLocal.

var (
	mpiMu     sync.Mutex
	mpiWorld  *mpiComm
	mpiOpened Comm // what MPI returns: mpiWorld, or mpiWorld through the shared mapping
	mpiDone   bool
)

// MPI returns this process's end of MPI_COMM_WORLD, initializing MPI on
// its first call (later calls return the same Comm). Run the program with
// mpirun (or Slurm's srun); started alone it is a group of one rank.
// Close finalizes MPI, which cannot be initialized again: MPI then
// returns ErrClosed.
func MPI() (Comm, error) {
	mpiMu.Lock()
	defer mpiMu.Unlock()
	if mpiDone {
		return nil, ErrClosed
	}
	if mpiWorld != nil {
		return mpiOpened, nil
	}
	c := &mpiComm{calls: make(chan func())}
	started := make(chan C.int)
	go c.loop(started)
	if code := <-started; code != 0 {
		close(c.calls)
		return nil, mpiError("MPI", code)
	}
	mpiWorld, mpiOpened = c, c
	if c.size > 1 {
		if s, err := c.overShm(shmWanted()); err == nil {
			mpiOpened = s
		} else {
			c.shmErr = err
		}
	}
	return mpiOpened, nil
}

// overShm returns c with its all-reduces and barriers through a shared
// mapping, when every rank wants it (want: its ShmEnv; the ranks decide
// by their minimum, a collective every rank makes, so that a rank with
// LANES_DIST_SHM=0 turns the mapping off for all rather than leaving the
// others in a collective it never enters) and every rank runs on this
// host: rank 0 makes the file
// (shmDir) and broadcasts its name ("" when it could not), every rank
// maps it, and once all have (or one could not: then none uses it, the
// all-ranks minimum deciding alike everywhere) rank 0 removes the name,
// so that nothing is left behind however the job ends. An MPI error in
// the broadcast or the minimum is returned on the ranks that see it;
// with MPI_ERRORS_RETURN a rank might then fall back alone, but those
// errors leave MPI_COMM_WORLD unusable anyway.
func (c *mpiComm) overShm(want bool) (*shmComm, error) {
	wish := C.int(0)
	if want {
		wish = 1
	}
	if err := c.call("MPI", func() C.int { return C.lanes_allmin_int(&wish) }); err != nil {
		return nil, err
	}
	if wish == 0 {
		return nil, fmt.Errorf("dist: %s=0 on at least one rank", ShmEnv)
	}
	var node C.int
	if err := c.call("MPI", func() C.int { return C.lanes_node_size(&node) }); err != nil {
		return nil, err
	}
	if int(node) != c.size {
		return nil, fmt.Errorf("dist: %d of the %d ranks run on this host", int(node), c.size)
	}
	var name [256]byte
	var path string
	var err error // this rank's reason to go without the mapping
	if c.rank == 0 {
		if p := shmPath(); len(p) >= len(name) {
			err = fmt.Errorf("dist: the shared file's name %q is too long", p)
		} else if err = shmCreate(p, c.size, shmSlotBytes(c.size)); err == nil {
			path = p
			copy(name[:], p)
			defer os.Remove(path)
		}
	}
	if cerr := c.call("MPI", func() C.int { return C.lanes_bcast_bytes(unsafe.Pointer(&name[0]), C.int(len(name)), 0) }); cerr != nil {
		return nil, cerr
	}
	if c.rank != 0 {
		if path = C.GoString((*C.char)(unsafe.Pointer(&name[0]))); path == "" {
			err = errors.New("dist: rank 0 could not make the shared file")
		}
	}
	var g *shmGroup
	ok := C.int(0)
	if path != "" {
		if g, err = shmOpen(path, c.rank, c.size); err == nil {
			ok = 1
		}
	}
	if cerr := c.call("MPI", func() C.int { return C.lanes_allmin_int(&ok) }); cerr != nil {
		ok, err = 0, cerr
	}
	if ok == 0 {
		if g != nil {
			g.close()
		}
		if err == nil {
			err = errors.New("dist: another rank could not map the shared file")
		}
		return nil, err
	}
	c.underShm = true
	return &shmComm{base: c, g: g}, nil
}

func (c *mpiComm) transport() string { return "mpi" }

// MPIAllReduceNative32 is MPI_Allreduce(MPI_SUM) in place on c, a Comm
// that MPI returned (over the shared mapping or not): Open MPI's own
// algorithm, for comparing bandwidth with AllReduce32 (its order of
// additions is Open MPI's, see the file comment).
func MPIAllReduceNative32(c Comm, buf []float32) error {
	if s, ok := c.(*shmComm); ok {
		if err := s.start("MPIAllReduceNative32", len(buf), 0); err != nil {
			return err
		}
		c = s.base
	}
	m, ok := c.(*mpiComm)
	if !ok {
		panic(fmt.Sprintf("dist: MPIAllReduceNative32: a %T, not an MPI Comm", c))
	}
	if err := m.agree("MPIAllReduceNative32", len(buf), 0); err != nil || len(buf) == 0 {
		return err
	}
	return m.call("MPIAllReduceNative32", func() C.int {
		return C.lanes_allreduce_native(unsafe.Pointer(&buf[0]), C.int(len(buf)), C.dt_float())
	})
}

type mpiComm struct {
	rank, size int
	calls      chan func()
	closed     bool
	agreed     []int64 // agree's buffer: 3 per rank
	scratch    any     // AllReduce's received pieces ([]float32 or []float64)
	shmErr     error   // why MPI did not put the shared mapping over it
	underShm   bool    // a shmComm carries it: its agreements run in the mapping
	// AllReduce's counts and displacements: the ranks' chunks (send),
	// the rank's chunk from each rank (recv).
	sCounts, sDispls, rCounts, rDispls []C.int
}

// loop is the MPI thread: it initializes MPI, reports on started, and
// runs the calls until the channel closes (after MPI_Finalize).
func (c *mpiComm) loop(started chan<- C.int) {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	var provided, rank, size C.int
	code := C.lanes_init(&provided, &rank, &size)
	if code == 0 && provided < C.MPI_THREAD_FUNNELED {
		code = -1
	}
	c.rank, c.size = int(rank), int(size)
	n := c.size
	c.agreed = make([]int64, 3*n)
	c.sCounts, c.sDispls = make([]C.int, n), make([]C.int, n)
	c.rCounts, c.rDispls = make([]C.int, n), make([]C.int, n)
	started <- code
	for f := range c.calls {
		f()
	}
}

// call runs f on the MPI thread and returns its MPI error code as an
// error naming fn.
func (c *mpiComm) call(fn string, f func() C.int) error {
	if c.closed {
		return ErrClosed
	}
	done := make(chan C.int, 1)
	c.calls <- func() { done <- f() }
	return mpiError(fn, <-done)
}

func mpiError(fn string, code C.int) error {
	switch code {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("dist: %s: the MPI library does not provide MPI_THREAD_FUNNELED", fn)
	}
	buf := (*C.char)(C.malloc(C.size_t(C.lanes_max_error_string())))
	defer C.free(unsafe.Pointer(buf))
	C.lanes_error_string(code, buf)
	return fmt.Errorf("dist: %s: MPI error %d: %s", fn, int(code), C.GoString(buf))
}

func (c *mpiComm) Rank() int { return c.rank }
func (c *mpiComm) Size() int { return c.size }

func (c *mpiComm) Close() error {
	if c.closed {
		return nil
	}
	err := c.call("Close", func() C.int { return C.MPI_Finalize() })
	c.closed = true
	close(c.calls)
	mpiMu.Lock()
	mpiDone = true
	mpiMu.Unlock()
	return err
}

// agree gathers every rank's function, length n and argument (root or
// Op) and panics, on every rank alike, when one differs from rank 0's,
// as the in-process group does; it is a barrier too. It returns the
// transport's error, and an error when n does not fit MPI's int counts.
func (c *mpiComm) agree(fn string, n, arg int) error {
	return c.agreeThen(fn, n, arg, nil)
}

// agreeThen is agree followed, on the MPI thread in the same call, by
// then (when agree found nothing amiss): a collective of several MPI
// calls hands the MPI thread one function, not one per call (each hand-
// over wakes a thread, tens of microseconds on a loaded machine). Under a
// shmComm (underShm) the mapping's agreement, itself a barrier, has run
// instead, and only then runs.
func (c *mpiComm) agreeThen(fn string, n, arg int, then func() C.int) error {
	if n > math.MaxInt32 {
		return fmt.Errorf("dist: %s: %d elements; MPI counts are C ints (at most %d)", fn, n, math.MaxInt32)
	}
	if c.underShm {
		// The shared mapping's agreement has run (shmComm.start).
		if then == nil {
			return nil
		}
		return c.call(fn, then)
	}
	mine := [3]int64{collectives[fn], int64(n), int64(arg)}
	all := c.agreed
	var amiss string
	err := c.call(fn, func() C.int {
		code := C.lanes_allgather(unsafe.Pointer(&mine[0]), 3, unsafe.Pointer(&all[0]), C.dt_int64())
		if code != 0 {
			return code
		}
		if amiss = disagreement(fn, all, c.size); amiss != "" || then == nil {
			return 0
		}
		return then()
	})
	if amiss != "" {
		panic(amiss)
	}
	return err
}

func (c *mpiComm) Barrier() error { return c.agree("Barrier", 0, 0) }

func (c *mpiComm) AllReduce32(buf []float32, op Op) error {
	return allReduceMPI(c, "AllReduce32", buf, op, C.dt_float())
}

func (c *mpiComm) AllReduce64(buf []float64, op Op) error {
	return allReduceMPI(c, "AllReduce64", buf, op, C.dt_double())
}

// allReduceMPI runs the whole all-reduce (agree, MPI_Alltoallv, the sum
// and MPI_Allgatherv) in one call on the MPI thread.
func allReduceMPI[T float](c *mpiComm, fn string, buf []T, op Op, dt C.MPI_Datatype) error {
	checkOp(fn, op)
	if len(buf) == 0 || c.size == 1 || len(buf) > math.MaxInt32 {
		return c.agree(fn, len(buf), int(op)) // agree's error for the latter
	}
	n, p := len(buf), c.size
	lo, hi := Split(n, c.rank, p)
	m := hi - lo
	for k := range p {
		klo, khi := Split(n, k, p)
		c.sCounts[k], c.sDispls[k] = C.int(khi-klo), C.int(klo)
		c.rCounts[k], c.rDispls[k] = C.int(m), C.int(k*m)
	}
	pieces, _ := c.scratch.([]T)
	if cap(pieces) < p*m || cap(pieces) == 0 {
		pieces = make([]T, max(p*m, 1))
		c.scratch = pieces
	}
	pieces = pieces[:max(p*m, 1)]
	return c.agreeThen(fn, n, int(op), func() C.int {
		code := C.lanes_alltoallv(unsafe.Pointer(&buf[0]), &c.sCounts[0], &c.sDispls[0],
			unsafe.Pointer(&pieces[0]), &c.rCounts[0], &c.rDispls[0], dt)
		if code != 0 {
			return code
		}
		reduceOrdered(buf[lo:hi], func(k int) []T { return pieces[k*m : (k+1)*m] }, p, op)
		return C.lanes_allgatherv_inplace(unsafe.Pointer(&buf[0]), &c.sCounts[0], &c.sDispls[0], dt)
	})
}

func (c *mpiComm) Broadcast32(buf []float32, root int) error {
	return broadcastMPI(c, "Broadcast32", buf, root, C.dt_float())
}

func (c *mpiComm) Broadcast64(buf []float64, root int) error {
	return broadcastMPI(c, "Broadcast64", buf, root, C.dt_double())
}

func broadcastMPI[T float](c *mpiComm, fn string, buf []T, root int, dt C.MPI_Datatype) error {
	checkRoot(fn, root, c.size)
	if err := c.agree(fn, len(buf), root); err != nil || len(buf) == 0 || c.size == 1 {
		return err
	}
	return c.call(fn, func() C.int { return C.lanes_bcast(unsafe.Pointer(&buf[0]), C.int(len(buf)), C.int(root), dt) })
}

func (c *mpiComm) AllGather32(dst, src []float32) error {
	return allGatherMPI(c, "AllGather32", dst, src, C.dt_float())
}

func (c *mpiComm) AllGather64(dst, src []float64) error {
	return allGatherMPI(c, "AllGather64", dst, src, C.dt_double())
}

func allGatherMPI[T float](c *mpiComm, fn string, dst, src []T, dt C.MPI_Datatype) error {
	checkGather(fn, len(dst), len(src), c.size)
	if err := c.agree(fn, len(src), 0); err != nil || len(src) == 0 {
		return err
	}
	return c.call(fn, func() C.int {
		return C.lanes_allgather(unsafe.Pointer(&src[0]), C.int(len(src)), unsafe.Pointer(&dst[0]), dt)
	})
}
