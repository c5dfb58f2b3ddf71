//go:build cuda || cudaemu

package cudaplugin

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime.h"

// NCCL's ABI as nccl.h declares it (stable since NCCL 2.0): ncclUniqueId
// is 128 bytes passed by value, ncclComm_t a pointer, the enums ints.
typedef struct { char internal[128]; } lanes_nccl_id;
typedef void *lanes_nccl_comm;

typedef int (*lanes_nccl_version_fn)(int *);
typedef int (*lanes_nccl_unique_id_fn)(lanes_nccl_id *);
typedef int (*lanes_nccl_init_rank_fn)(lanes_nccl_comm *, int, lanes_nccl_id, int);
typedef int (*lanes_nccl_all_reduce_fn)(const void *, void *, size_t, int, int, lanes_nccl_comm, void *);
typedef int (*lanes_nccl_broadcast_fn)(const void *, void *, size_t, int, int, lanes_nccl_comm, void *);
typedef int (*lanes_nccl_all_gather_fn)(const void *, void *, size_t, int, lanes_nccl_comm, void *);
typedef int (*lanes_nccl_destroy_fn)(lanes_nccl_comm);
typedef const char *(*lanes_nccl_error_fn)(int);

static struct {
	void *lib;
	lanes_nccl_version_fn version;
	lanes_nccl_unique_id_fn unique_id;
	lanes_nccl_init_rank_fn init_rank;
	lanes_nccl_all_reduce_fn all_reduce;
	lanes_nccl_broadcast_fn broadcast;
	lanes_nccl_all_gather_fn all_gather;
	lanes_nccl_destroy_fn destroy;
	lanes_nccl_error_fn error_string;
} lanes_nccl;

// lanes_nccl_load opens path and finds NCCL's functions. It returns 0, or
// 1 with dlerror's text (or the missing symbol's name) in msg.
static int lanes_nccl_load(const char *path, char *msg, size_t len) {
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *e = dlerror();
		strncpy(msg, e ? e : "dlopen failed", len - 1);
		msg[len - 1] = 0;
		return 1;
	}
	static const char *names[] = {"ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce",
		"ncclBroadcast", "ncclAllGather", "ncclCommDestroy", "ncclGetErrorString"};
	void *fns[8];
	for (int i = 0; i < 8; i++) {
		fns[i] = dlsym(lib, names[i]);
		if (fns[i] == NULL) {
			snprintf(msg, len, "%s has no %s", path, names[i]);
			dlclose(lib);
			return 1;
		}
	}
	lanes_nccl.lib = lib;
	lanes_nccl.version = (lanes_nccl_version_fn)fns[0];
	lanes_nccl.unique_id = (lanes_nccl_unique_id_fn)fns[1];
	lanes_nccl.init_rank = (lanes_nccl_init_rank_fn)fns[2];
	lanes_nccl.all_reduce = (lanes_nccl_all_reduce_fn)fns[3];
	lanes_nccl.broadcast = (lanes_nccl_broadcast_fn)fns[4];
	lanes_nccl.all_gather = (lanes_nccl_all_gather_fn)fns[5];
	lanes_nccl.destroy = (lanes_nccl_destroy_fn)fns[6];
	lanes_nccl.error_string = (lanes_nccl_error_fn)fns[7];
	return 0;
}

static int lanes_nccl_get_version(int *v) { return lanes_nccl.version(v); }
static int lanes_nccl_get_unique_id(lanes_nccl_id *id) { return lanes_nccl.unique_id(id); }
static int lanes_nccl_init(lanes_nccl_comm *c, int n, const lanes_nccl_id *id, int rank) {
	return lanes_nccl.init_rank(c, n, *id, rank);
}
static int lanes_nccl_all_reduce(uintptr_t x, uintptr_t y, size_t n, int dtype, int op, lanes_nccl_comm c, lanes_stream s) {
	return lanes_nccl.all_reduce((const void *)x, (void *)y, n, dtype, op, c, s);
}
static int lanes_nccl_broadcast(uintptr_t x, uintptr_t y, size_t n, int dtype, int root, lanes_nccl_comm c, lanes_stream s) {
	return lanes_nccl.broadcast((const void *)x, (void *)y, n, dtype, root, c, s);
}
static int lanes_nccl_all_gather(uintptr_t x, uintptr_t y, size_t n, int dtype, lanes_nccl_comm c, lanes_stream s) {
	return lanes_nccl.all_gather((const void *)x, (void *)y, n, dtype, c, s);
}
static int lanes_nccl_destroy(lanes_nccl_comm c) { return lanes_nccl.destroy(c); }
static const char *lanes_nccl_error(int e) { return lanes_nccl.error_string(e); }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/tensor"
)

// NCCL's enums (nccl.h): ncclFloat32, ncclSum, ncclAvg (NCCL >= 2.10).
const (
	ncclFloat32 = 7
	ncclSum     = 0
	ncclAvg     = 4
	ncclAvgFrom = 21000 // ncclGetVersion's code of 2.10.0
)

var ncclLoad struct {
	mu      sync.Mutex
	loaded  bool
	version int
}

// loadNCCL opens the NCCL library on first use. A library that loaded
// stays loaded for the process; a failure is tried again on the next call
// (a library installed, or LANES_NCCL_LIBRARY set, in between is found).
func loadNCCL() (version int, err error) {
	ncclLoad.mu.Lock()
	defer ncclLoad.mu.Unlock()
	if ncclLoad.loaded {
		return ncclLoad.version, nil
	}
	names := []string{"libnccl.so.2", "libnccl.so"}
	if p := os.Getenv(NCCLLibraryEnv); p != "" {
		names = []string{p}
	}
	var msgs []string
	for _, name := range names {
		cname := C.CString(name)
		var msg [512]C.char
		rc := C.lanes_nccl_load(cname, &msg[0], C.size_t(len(msg)))
		C.free(unsafe.Pointer(cname))
		if rc != 0 {
			msgs = append(msgs, C.GoString(&msg[0]))
			continue
		}
		var v C.int
		if err := ncclCheck("ncclGetVersion", C.lanes_nccl_get_version(&v)); err != nil {
			return 0, err
		}
		ncclLoad.loaded, ncclLoad.version = true, int(v)
		return ncclLoad.version, nil
	}
	return 0, fmt.Errorf("%w: %s", ErrNoNCCL, strings.Join(msgs, "; "))
}

// NCCLError is a failed NCCL call: the function and ncclResult_t, with
// ncclGetErrorString's text.
type NCCLError struct {
	Func string
	Code int
	Text string
}

func (e *NCCLError) Error() string {
	return fmt.Sprintf("cudaplugin: %s: NCCL error %d: %s", e.Func, e.Code, e.Text)
}

func ncclCheck(fn string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return &NCCLError{Func: fn, Code: int(rc), Text: C.GoString(C.lanes_nccl_error(rc))}
}

// NCCLVersion returns the loaded NCCL's version code (major*10000 +
// minor*100 + patch since NCCL 2.9, e.g. 21803 for 2.18.3), loading it
// on first use; ErrNoNCCL (wrapped) when it is absent.
func NCCLVersion() (int, error) { return loadNCCL() }

// NewNCCLID returns a fresh unique id (ncclGetUniqueId), for rank 0 to
// hand to the others (NewNCCLComm does it through a dist.Comm;
// WriteNCCLID and ReadNCCLID through a shared file).
func NewNCCLID() (NCCLID, error) {
	var id NCCLID
	if _, err := loadNCCL(); err != nil {
		return id, err
	}
	var cid C.lanes_nccl_id
	if err := ncclCheck("ncclGetUniqueId", C.lanes_nccl_get_unique_id(&cid)); err != nil {
		return id, err
	}
	copy(id[:], unsafe.Slice((*byte)(unsafe.Pointer(&cid)), len(id)))
	return id, nil
}

// NCCLComm is one rank's end of an NCCL communicator: collectives over
// float32 tensors on this rank's GPU, queued on the GPU's stream after
// the work already queued there (and before the work queued later), so
// that gradients on the device never pass through the host. One rank
// per GPU, as NCCL requires.
//
// Unlike package dist's communicators, NCCL does not add in rank order:
// its ring and tree algorithms fix an order for a given number of
// ranks, topology and NCCL version, which NCCL does not document as
// stable; a run is reproducible in practice on the same machines, and
// matches a dist run only up to float32 reduction order.
//
// Calls on one NCCLComm must not overlap; every rank must call the same
// collectives in the same order with the same lengths (NCCL cannot check
// it: a mismatch hangs or corrupts, as with NCCL itself).
type NCCLComm struct {
	g          *GPU
	comm       C.lanes_nccl_comm
	rank, size int
	version    int
	closed     bool
}

// NewNCCLCommID joins the communicator of size ranks named by id as rank
// (ncclCommInitRank, which blocks until every rank has joined).
func (g *GPU) NewNCCLCommID(id NCCLID, rank, size int) (*NCCLComm, error) {
	if size < 1 || rank < 0 || rank >= size {
		panic(fmt.Sprintf("cudaplugin: NewNCCLCommID: rank %d of size %d", rank, size))
	}
	v, err := loadNCCL()
	if err != nil {
		return nil, err
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	n := &NCCLComm{g: g, rank: rank, size: size, version: v}
	cid := (*C.lanes_nccl_id)(unsafe.Pointer(&id[0]))
	if err := ncclCheck("ncclCommInitRank", C.lanes_nccl_init(&n.comm, C.int(size), cid, C.int(rank))); err != nil {
		return nil, err
	}
	return n, nil
}

// NewNCCLComm makes the NCCL communicator of c's ranks, one GPU each:
// rank 0 makes the unique id and broadcasts it through c (MPI, or the
// in-process group), and every rank joins. When rank 0 cannot make the
// id (no NCCL library), every rank returns an error instead of waiting.
func (g *GPU) NewNCCLComm(c dist.Comm) (*NCCLComm, error) {
	// The id travels as 128 float64s holding one byte each (exact), after
	// a flag that says whether rank 0 made one.
	buf := make([]float64, 1+len(NCCLID{}))
	var rootErr error
	if c.Rank() == 0 {
		id, err := NewNCCLID()
		if err == nil {
			buf[0] = 1
			for i, b := range id {
				buf[1+i] = float64(b)
			}
		}
		rootErr = err
	}
	if err := c.Broadcast64(buf, 0); err != nil {
		return nil, err
	}
	if rootErr != nil {
		return nil, rootErr
	}
	if buf[0] != 1 {
		return nil, fmt.Errorf("cudaplugin: NewNCCLComm: rank 0 could not make an NCCL id (see its error)")
	}
	var id NCCLID
	for i := range id {
		id[i] = byte(buf[1+i])
	}
	return g.NewNCCLCommID(id, c.Rank(), c.Size())
}

// Rank is this end's rank.
func (n *NCCLComm) Rank() int { return n.rank }

// Size is the number of ranks.
func (n *NCCLComm) Size() int { return n.size }

// Version is the NCCL version code (see NCCLVersion).
func (n *NCCLComm) Version() int { return n.version }

// deviceSpan returns t's contiguous device memory, checking that it is a
// contiguous float32 tensor on n's GPU.
func (n *NCCLComm) deviceSpan(c *call, op, what string, t *tensor.Tensor) (uintptr, error) {
	if t == nil {
		panic(fmt.Sprintf("cudaplugin: NCCLComm.%s: nil %s", op, what))
	}
	o, ok, err := c.view("NCCLComm."+op, what, t)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("cudaplugin: NCCLComm.%s: %s of shape %v is on the host; NCCL moves device memory", op, what, t.Shape())
	}
	if !t.IsContiguous() {
		panic(fmt.Sprintf("cudaplugin: NCCLComm.%s: %s of shape %v, strides %v, is not contiguous", op, what, t.Shape(), t.Strides()))
	}
	return o.ptr, nil
}

// AllReduce replaces t, on every rank, with the sum (dist.Sum) or mean
// (dist.Mean) of the ranks' ts, contiguous device tensors of the same
// length. Mean is NCCL's ncclAvg from NCCL 2.10, else the sum scaled by
// 1/Size on the device.
func (n *NCCLComm) AllReduce(t *tensor.Tensor, op dist.Op) error {
	if op != dist.Sum && op != dist.Mean {
		panic(fmt.Sprintf("cudaplugin: NCCLComm.AllReduce: op %v", op))
	}
	return n.run("AllReduce", func(c *call) error {
		p, err := n.deviceSpan(c, "AllReduce", "t", t)
		if err != nil || t.Len() == 0 {
			return err
		}
		nop := ncclSum
		if op == dist.Mean && n.version >= ncclAvgFrom {
			nop = ncclAvg
		}
		if err := ncclCheck("ncclAllReduce", C.lanes_nccl_all_reduce(C.uintptr_t(p), C.uintptr_t(p), C.size_t(t.Len()), ncclFloat32, C.int(nop), n.comm, n.g.stream)); err != nil {
			return err
		}
		if op == dist.Mean && nop == ncclSum && n.size > 1 {
			return n.g.Unary(tensor.ElemScale, t, t, [2]float32{1 / float32(n.size)})
		}
		return nil
	})
}

// Broadcast copies root's t into the ts of the other ranks.
func (n *NCCLComm) Broadcast(t *tensor.Tensor, root int) error {
	if root < 0 || root >= n.size {
		panic(fmt.Sprintf("cudaplugin: NCCLComm.Broadcast: root %d of %d ranks", root, n.size))
	}
	return n.run("Broadcast", func(c *call) error {
		p, err := n.deviceSpan(c, "Broadcast", "t", t)
		if err != nil || t.Len() == 0 {
			return err
		}
		return ncclCheck("ncclBroadcast", C.lanes_nccl_broadcast(C.uintptr_t(p), C.uintptr_t(p), C.size_t(t.Len()), ncclFloat32, C.int(root), n.comm, n.g.stream))
	})
}

// AllGather sets dst's k-th block of src.Len() elements, on every rank, to
// rank k's src; dst.Len() must be Size*src.Len().
func (n *NCCLComm) AllGather(dst, src *tensor.Tensor) error {
	if dst == nil || src == nil {
		panic("cudaplugin: NCCLComm.AllGather: nil tensor")
	}
	if dst.Len() != n.size*src.Len() {
		panic(fmt.Sprintf("cudaplugin: NCCLComm.AllGather: dst of shape %v is not %d times src of shape %v", dst.Shape(), n.size, src.Shape()))
	}
	return n.run("AllGather", func(c *call) error {
		d, err := n.deviceSpan(c, "AllGather", "dst", dst)
		if err != nil {
			return err
		}
		s, err := n.deviceSpan(c, "AllGather", "src", src)
		if err != nil || src.Len() == 0 {
			return err
		}
		return ncclCheck("ncclAllGather", C.lanes_nccl_all_gather(C.uintptr_t(s), C.uintptr_t(d), C.size_t(src.Len()), ncclFloat32, n.comm, n.g.stream))
	})
}

// run calls f on a thread bound to n's GPU.
func (n *NCCLComm) run(op string, f func(c *call) error) error {
	if n.closed {
		return fmt.Errorf("cudaplugin: NCCLComm.%s: %w", op, errNCCLClosed)
	}
	if err := n.g.enter(); err != nil {
		return err
	}
	defer n.g.exit()
	c := &call{g: n.g}
	defer c.release()
	return f(c)
}

var errNCCLClosed = errors.New("NCCL communicator closed")

// Close destroys the communicator (ncclCommDestroy); later calls return
// an error.
func (n *NCCLComm) Close() error {
	if n.closed {
		return nil
	}
	n.closed = true
	if err := n.g.enter(); err != nil {
		return err
	}
	defer n.g.exit()
	return ncclCheck("ncclCommDestroy", C.lanes_nccl_destroy(n.comm))
}
