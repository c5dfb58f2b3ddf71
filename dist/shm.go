package dist

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// This file is the on-node transport: ranks of one host all-reduce
// through a shared mapping (a file in /dev/shm that every rank maps), as
// Open MPI's own shared-memory BTL, NCCL's and Gloo's do on one machine,
// but without their small fragments and flow control (a buffer goes
// through in pieces of a slot, 4 MiB with two ranks): each rank copies its
// buffer into its slot of the mapping once, reduces its chunk (Split) of
// every rank's slot in rank order (reduceOrdered, as every Comm of this
// package does, so the bits are the same), and copies the others' reduced
// chunks back. docs/distributed.md has its figures against MPI's.
//
// Every collective of a shmComm is preceded by an agreement through the
// mapping (each rank's function, length and argument beside its arrival
// counter, compared with rank 0's after the barrier), so ranks that call
// different collectives or pass different lengths panic alike, as with
// MPI alone, also where one would run in the mapping and the other in MPI.

// shmSpace is the data the slots of a group take in all (two sets of one
// slot a rank), 16 MiB whatever the rank count; each slot holds at least
// shmMinSlot bytes. Longer buffers are all-reduced in pieces of a slot.
const (
	shmSpace   = 16 << 20
	shmMinSlot = 64 << 10
	shmLine    = 64 // one control line a rank: arrivals, sleepers, two metas
)

// shmPause, when set (by tests), runs in each rank's all-reduce between
// the barrier after the reduction and the copies back, where a slow rank
// still reads the slots that a fast one will write next.
var shmPause func(rank int)

// errNoShm is the error of shmCreate and shmOpen where there is no
// shmDir (systems other than Linux).
var errNoShm = errors.New("dist: no shared-memory transport on this system")

// shmSpin is how many times a waiting rank polls an arrival before it
// sleeps on it.
const shmSpin = 1 << 14

// shmSlotBytes is the slot size of a group of size ranks.
func shmSlotBytes(size int) int {
	return max(shmMinSlot, shmSpace/(2*size)) &^ (shmPage - 1)
}

// shmPage is the page size the mapping's parts are aligned to.
const shmPage = 4096

// shmLayout returns the offset of the slots and the mapping's length.
func shmLayout(size, slotBytes int) (data, total int) {
	data = (size*shmLine + shmPage - 1) &^ (shmPage - 1)
	return data, data + 2*size*slotBytes
}

// shmGroup is one rank's view of the mapping.
type shmGroup struct {
	rank, size int
	mem        []byte
	data, slot int    // offset of the slots, bytes a slot
	gen        uint32 // barriers this rank has arrived at
	ops        uint64 // collectives this rank has run (their parity picks the slot set and meta)
	spin       int    // polls before a waiting rank sleeps
	all        []int64
}

// ctl returns word w (of 16) of rank k's control line: 0 the barriers
// it arrived at, 1 the ranks sleeping on word 0; words 2..13 are its two
// metas (meta).
func (g *shmGroup) ctl(k, w int) *uint32 {
	return (*uint32)(unsafe.Pointer(&g.mem[k*shmLine+4*w]))
}

// meta returns rank k's meta of parity set: the function (collectives),
// length and argument of its collective, at bytes 8..31 or 32..55 of its
// control line.
func (g *shmGroup) meta(k int, set uint64) *[3]int64 {
	return (*[3]int64)(unsafe.Pointer(&g.mem[k*shmLine+8+int(set)*24]))
}

// slotOf returns rank k's slot of set as n elements of T.
func slotOf[T float](g *shmGroup, set uint64, k, n int) []T {
	off := g.data + (int(set)*g.size+k)*g.slot
	return unsafe.Slice((*T)(unsafe.Pointer(&g.mem[off])), n)
}

// shmCreate makes the file of a group of size ranks at path, with slots
// of slot bytes (a multiple of shmPage), its length reserved: a /dev/shm too
// small fails here, not with SIGBUS at the first write.
func shmCreate(path string, size, slot int) error {
	if shmDir == "" {
		return errNoShm
	}
	_, total := shmLayout(size, slot)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = reserve(f, total)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// shmOpen maps the group's file at path as rank of size ranks; the
// slot size follows from the file's length.
func shmOpen(path string, rank, size int) (*shmGroup, error) {
	if shmDir == "" {
		return nil, errNoShm
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data, _ := shmLayout(size, 0)
	slot := (int(st.Size()) - data) / (2 * size)
	_, total := shmLayout(size, slot)
	if slot <= 0 || slot%shmPage != 0 || int64(total) != st.Size() {
		return nil, fmt.Errorf("dist: %s has %d bytes, not the file of a group of %d ranks", path, st.Size(), size)
	}
	mem, err := mapShared(f, total)
	if err != nil {
		return nil, err
	}
	g := &shmGroup{rank: rank, size: size, mem: mem, data: data, slot: slot, all: make([]int64, 3*size)}
	// Poll a waiting rank's arrival for a while (about 50 µs) unless the
	// ranks outnumber the host's cores, where a poll takes a core from the
	// rank it waits for.
	if size <= hostCPUs() {
		g.spin = shmSpin
	}
	return g, nil
}

func (g *shmGroup) close() error {
	if g.mem == nil {
		return nil
	}
	err := unmapShared(g.mem)
	g.mem = nil
	return err
}

// barrier returns once every rank has arrived at as many barriers as
// this one. Arrival is a store to the rank's own word; a rank that has
// polled long enough sleeps on the word it waits for (futex), counted in
// the word beside it, and an arriving rank wakes that word's sleepers.
func (g *shmGroup) barrier() {
	g.gen++
	me := g.ctl(g.rank, 0)
	atomic.StoreUint32(me, g.gen)
	if atomic.LoadUint32(g.ctl(g.rank, 1)) != 0 {
		futexWake(me)
	}
	for k := range g.size {
		if k != g.rank {
			g.waitFor(k)
		}
	}
}

func (g *shmGroup) waitFor(k int) {
	word, sleepers := g.ctl(k, 0), g.ctl(k, 1)
	for i := 0; ; i++ {
		v := atomic.LoadUint32(word)
		if int32(v-g.gen) >= 0 {
			return
		}
		if i < g.spin {
			if i&63 == 63 {
				runtime.Gosched() // let this process's other goroutines run
			}
			continue
		}
		atomic.AddUint32(sleepers, 1)
		if v = atomic.LoadUint32(word); int32(v-g.gen) < 0 {
			futexWait(word, v)
		}
		atomic.AddUint32(sleepers, ^uint32(0))
	}
}

// agree publishes this rank's collective (its id in collectives, length
// n and argument), waits for every rank and panics, on every rank alike,
// when one differs from rank 0's (the MPI Comm's messages). It starts a
// collective: it advances the parity of the metas and slot sets.
func (g *shmGroup) agree(fn string, n, arg int) {
	set := g.ops & 1
	g.ops++
	*g.meta(g.rank, set) = [3]int64{collectives[fn], int64(n), int64(arg)}
	g.barrier()
	for k := range g.size {
		m := g.meta(k, set)
		copy(g.all[3*k:], m[:])
	}
	if amiss := disagreement(fn, g.all, g.size); amiss != "" {
		panic(amiss)
	}
}

// shmAllReduce all-reduces buf through the mapping, a slot at a time.
// Each piece is copied into this rank's slot before the barrier that
// starts it (the agreement's, for the first), and one more barrier comes
// between the reduction and the copies back. The slot sets alternate
// from piece to piece, so that a rank writing its slot for the piece
// after next cannot overtake one still copying from it: it has passed
// the next piece's first barrier, which no rank reaches before it has
// copied.
func shmAllReduce[T float](g *shmGroup, fn string, buf []T, op Op) {
	checkOp(fn, op)
	per := g.slot / int(unsafe.Sizeof(T(0)))
	for off := 0; off == 0 || off < len(buf); off += per {
		piece := buf[off:min(off+per, len(buf))]
		n := len(piece)
		set := g.ops & 1
		copy(slotOf[T](g, set, g.rank, n), piece)
		if off == 0 {
			g.agree(fn, len(buf), int(op))
		} else {
			g.ops++
			g.barrier()
		}
		if n == 0 {
			return
		}
		lo, hi := Split(n, g.rank, g.size)
		reduceOrdered(piece[lo:hi], func(k int) []T { return slotOf[T](g, set, k, n)[lo:hi] }, g.size, op)
		copy(slotOf[T](g, set, g.rank, n)[lo:hi], piece[lo:hi])
		g.barrier()
		if shmPause != nil {
			shmPause(g.rank)
		}
		for k := range g.size {
			if k != g.rank {
				klo, khi := Split(n, k, g.size)
				copy(piece[klo:khi], slotOf[T](g, set, k, n)[klo:khi])
			}
		}
	}
}

// shmComm is a Comm whose ranks share one host: its all-reduces and
// barriers run in the shared mapping, its broadcasts and all-gathers in
// base (after the mapping's agreement).
type shmComm struct {
	base   Comm
	g      *shmGroup
	closed bool
}

func (c *shmComm) Rank() int { return c.g.rank }
func (c *shmComm) Size() int { return c.g.size }

func (c *shmComm) AllReduce32(buf []float32, op Op) error {
	if c.closed {
		return ErrClosed
	}
	shmAllReduce(c.g, "AllReduce32", buf, op)
	return nil
}

func (c *shmComm) AllReduce64(buf []float64, op Op) error {
	if c.closed {
		return ErrClosed
	}
	shmAllReduce(c.g, "AllReduce64", buf, op)
	return nil
}

func (c *shmComm) Broadcast32(buf []float32, root int) error {
	if err := c.start("Broadcast32", len(buf), root); err != nil {
		return err
	}
	return c.base.Broadcast32(buf, root)
}

func (c *shmComm) Broadcast64(buf []float64, root int) error {
	if err := c.start("Broadcast64", len(buf), root); err != nil {
		return err
	}
	return c.base.Broadcast64(buf, root)
}

func (c *shmComm) AllGather32(dst, src []float32) error {
	checkGather("AllGather32", len(dst), len(src), c.g.size)
	if err := c.start("AllGather32", len(src), 0); err != nil {
		return err
	}
	return c.base.AllGather32(dst, src)
}

func (c *shmComm) AllGather64(dst, src []float64) error {
	checkGather("AllGather64", len(dst), len(src), c.g.size)
	if err := c.start("AllGather64", len(src), 0); err != nil {
		return err
	}
	return c.base.AllGather64(dst, src)
}

func (c *shmComm) Barrier() error { return c.start("Barrier", 0, 0) }

// start checks a root and runs the agreement of a collective that base
// carries out.
func (c *shmComm) start(fn string, n, root int) error {
	checkRoot(fn, root, c.g.size)
	if c.closed {
		return ErrClosed
	}
	c.g.agree(fn, n, root)
	return nil
}

// Close unmaps the mapping and closes base.
func (c *shmComm) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	err := c.g.close()
	if berr := c.base.Close(); err == nil {
		err = berr
	}
	return err
}

// shmPath returns a new name for a group's file in shmDir.
func shmPath() string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/lanes-dist-%d-%x", shmDir, os.Getpid(), b)
}

// ShmEnv is the environment variable that turns the on-node transport
// off: LANES_DIST_SHM=0 (exactly "0"; any other value, or none, leaves it
// on) on any rank makes the MPI Comm of every rank all-reduce through MPI
// even when every rank runs on one host.
const ShmEnv = "LANES_DIST_SHM"

func shmWanted() bool { return os.Getenv(ShmEnv) != "0" }

// Transport names the transport of c's all-reduce: "in-process" (NewLocal),
// "mpi", "mpi+shm" (MPI, its ranks on one host, all-reducing through the
// shared mapping), or "" for a Comm of another package.
func Transport(c Comm) string {
	switch c := c.(type) {
	case *local:
		return "in-process"
	case *shmComm:
		return Transport(c.base) + "+shm"
	case interface{ transport() string }:
		return c.transport()
	}
	return ""
}
