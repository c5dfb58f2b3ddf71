//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/lanesgo/lanes/tensor"
)

// The Graph family (tensor.GraphKernels): CUDA graphs of the device
// stream. A step is run once eagerly under a warm-up, which notes the
// most buffers of each size class it held at once; BeginCapture
// allocates that many into a pool of the graph's own (a capture may not
// cudaMalloc: the capture mode is global) and starts
// cudaStreamBeginCapture on the device stream; the step's Go code then
// runs again, every op's kernels and memsets being recorded, its
// temporaries drawn from the graph's pool and given back there, so that
// they have the same addresses at each replay and no eager work is
// handed them; EndCapture instantiates the recording. The graph keeps
// every tensor whose memory its ops used (call.release) until Close, so
// that no buffer it replays on goes back to a pool meanwhile.
//
// What needs the host inside a step cannot be captured: a copy to or
// from Go memory and a synchronization fail the capture
// (cudaErrorStreamCaptureUnsupported), and so does an allocation beyond
// the warm-up's. The ops that read back a flag of bad indices or labels
// (the Index family, CrossEntropy, MaxPool2DBackward) do not, in a
// capture: their kernels report into the step's one error word (cleared
// by the graph's first node), which Graph.Err reads after the replay.
// An op whose scalars change from step to step on the host, which a
// graph would replay frozen, either takes them from the graph's argument
// block (the optimizers' factors of their step counts, Adam's bias
// corrections, NAdam's μ products...: capture.arg), which
// Launch fills and uploads before each replay (a copy from Go memory,
// outside the graph), or refuses to be captured (the Random family's
// Philox offsets).

// argFloats is the size of a graph's argument block: 3 floats
// (optScalars) per parameter of a step that counts (Adam, AMSGrad,
// Adagrad, Adamax, NAdam, RAdam), for 8192 parameters.
const argFloats = 3 << 13

// argHook fills floats off..off+n of a graph's argument block before a
// replay; advance is false for the first launch, which replays the
// captured step itself (its host state has advanced already).
type argHook struct {
	off, n int
	fill   func(dst []float32, advance bool)
}

// warmup notes the buffers the resident pool hands out during a warm-up
// step: per size class, those out now and the most out at once.
type warmup struct {
	mu        sync.Mutex
	out       map[uintptr]int // buffer → class, of those handed out during the warm-up
	cur, peak map[int]int
	size      map[int]int // class → its buffers' size
}

func (g *GPU) warmupGet(b block) {
	w := g.warm.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out[b.ptr] = b.class
	w.cur[b.class]++
	w.peak[b.class] = max(w.peak[b.class], w.cur[b.class])
	w.size[b.class] = b.size
}

func (g *GPU) warmupPut(b block) {
	w := g.warm.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.out[b.ptr]; ok {
		delete(w.out, b.ptr)
		w.cur[c]--
	}
}

// capture is a capture in progress: the graph's pool, its error word and
// the tensors its ops used.
type capture struct {
	pool  *pool
	flag  block
	args  block // the argument block: argFloats floats
	used  int   // floats of args taken
	hooks []argHook
	mu    sync.Mutex
	keep  [][]*tensor.Tensor
}

// arg takes n floats of the argument block for an op whose scalars
// change each replay, which fill writes before each launch; it returns
// their device address, or an error when the block is full.
func (c *capture) arg(op string, n int, fill func(dst []float32, advance bool)) (uintptr, error) {
	if c.used+n > argFloats {
		return 0, fmt.Errorf("cudaplugin: %s: %d per-replay scalars exceed a graph's %d", op, c.used+n, argFloats)
	}
	c.hooks = append(c.hooks, argHook{c.used, n, fill})
	ptr := c.args.ptr + uintptr(4*c.used)
	c.used += n
	return ptr, nil
}

// hold keeps the operands of a captured op for the graph.
func (c *capture) hold(ts []*tensor.Tensor) {
	c.mu.Lock()
	c.keep = append(c.keep, ts)
	c.mu.Unlock()
}

// graphDevice checks that dev is g's, for the Graph family's methods.
func (g *GPU) graphDevice(op string, dev tensor.Device) error {
	if !g.opened() {
		return errNilGPU
	}
	if dev != g.dev {
		return fmt.Errorf("cudaplugin: %s: %v is not this GPU (%v)", op, dev, g.dev)
	}
	return nil
}

// Warmup implements tensor.GraphKernels.
func (g *GPU) Warmup(dev tensor.Device) error {
	if err := g.graphDevice("Warmup", dev); err != nil {
		return err
	}
	if g.capturing.Load() != nil {
		return errors.New("cudaplugin: Warmup: a capture is in progress")
	}
	g.warm.Store(&warmup{out: map[uintptr]int{}, cur: map[int]int{}, peak: map[int]int{}, size: map[int]int{}})
	return nil
}

// BeginCapture implements tensor.GraphKernels: the warm-up ends; the
// graph's pool gets what it noted (or, with no Warmup since the last
// capture, what the last warm-up noted).
func (g *GPU) BeginCapture(dev tensor.Device) error {
	if err := g.graphDevice("BeginCapture", dev); err != nil {
		return err
	}
	w := g.warm.Swap(nil)
	g.graphMu.Lock()
	if w != nil {
		g.lastWarm = w
	}
	w = g.lastWarm
	g.graphMu.Unlock()
	if w == nil {
		return errors.New("cudaplugin: BeginCapture: no Warmup before it")
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	p := newPool(cudaMemory{})
	var taken []block // the error word and the argument block, once taken
	fail := func(err error) error {
		for _, b := range taken {
			p.put(b)
		}
		return errors.Join(fmt.Errorf("cudaplugin: BeginCapture: %w", err), p.retire())
	}
	w.mu.Lock()
	for class, n := range w.peak {
		if err := p.reserve(w.size[class], n); err != nil {
			w.mu.Unlock()
			return fail(err)
		}
	}
	w.mu.Unlock()
	if err := p.reserve(8, 1); err != nil {
		return fail(err)
	}
	if err := p.reserve(4*argFloats, 1); err != nil {
		return fail(err)
	}
	flag, err := p.get(8)
	if err != nil {
		return fail(err)
	}
	taken = append(taken, flag)
	args, err := p.get(4 * argFloats)
	if err != nil {
		return fail(err)
	}
	taken = append(taken, args)
	c := &capture{pool: p, flag: flag, args: args}
	if !g.capturing.CompareAndSwap(nil, c) {
		return fail(errors.New("a capture is in progress"))
	}
	if err := check("cudaStreamBeginCapture", C.lanes_stream_begin_capture(g.stream)); err != nil {
		g.capturing.Store(nil)
		return fail(err)
	}
	// The graph's first node clears the step's error word.
	if err := check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(flag.ptr), 8, g.stream)); err != nil {
		var dropped C.lanes_graph
		C.lanes_stream_end_capture(g.stream, &dropped)
		g.capturing.Store(nil)
		return fail(err)
	}
	g.graphMu.Lock()
	if g.graphs == nil {
		g.graphs = map[*pool]bool{}
	}
	g.graphs[p] = true
	g.graphMu.Unlock()
	return nil
}

// EndCapture implements tensor.GraphKernels.
func (g *GPU) EndCapture(dev tensor.Device) (tensor.Graph, error) {
	if err := g.graphDevice("EndCapture", dev); err != nil {
		return nil, err
	}
	c := g.capturing.Load()
	if c == nil {
		return nil, errors.New("cudaplugin: EndCapture: no capture in progress")
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	var gr C.lanes_graph
	err := check("cudaStreamEndCapture", C.lanes_stream_end_capture(g.stream, &gr))
	g.capturing.Store(nil)
	gp := &graph{g: g, pool: c.pool, flag: c.flag, args: c.args, hooks: c.hooks, host: make([]float32, c.used), keep: c.keep}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cudaplugin: EndCapture: the captured work needed the host (a copy, a synchronization, or more memory than the warm-up step's): %w", err), gp.free())
	}
	err = check("cudaGraphInstantiate", C.lanes_graph_instantiate(&gp.exec, gr))
	if derr := check("cudaGraphDestroy", C.lanes_graph_destroy(gr)); err == nil {
		err = derr
	}
	if err != nil {
		return nil, errors.Join(err, gp.free())
	}
	return gp, nil
}

// refuseCapture is the error of an op whose per-step arguments a graph
// would replay frozen, when g captures; nil otherwise.
func (g *GPU) refuseCapture(op, why string) error {
	if g.capturing.Load() == nil {
		return nil
	}
	return fmt.Errorf("cudaplugin: %s cannot be captured in a graph: %s", op, why)
}

// graph is a captured step (tensor.Graph).
type graph struct {
	g        *GPU
	exec     C.lanes_graph_exec
	pool     *pool
	flag     block
	word     [2]float32 // the error word read back (a field: a local escapes through cgo)
	args     block
	hooks    []argHook
	host     []float32 // the argument block's floats in use, filled before each launch
	keep     [][]*tensor.Tensor
	launched bool
	closed   bool
}

// Launch implements tensor.Graph.
func (gp *graph) Launch() error {
	if gp.closed {
		return errors.New("cudaplugin: Graph.Launch: the graph is closed")
	}
	if err := gp.g.enter(); err != nil {
		return err
	}
	defer gp.g.exit()
	if len(gp.host) > 0 {
		for _, h := range gp.hooks {
			h.fill(gp.host[h.off:h.off+h.n], gp.launched)
		}
		// Queued before the replay; CUDA has read the Go memory when
		// cudaMemcpyAsync returns (a pageable source is staged).
		if err := check("cudaMemcpyAsync", C.lanes_h2d(C.uintptr_t(gp.args.ptr), unsafe.Pointer(&gp.host[0]), C.size_t(4*len(gp.host)), gp.g.stream)); err != nil {
			return err
		}
	}
	gp.launched = true
	return check("cudaGraphLaunch", C.lanes_graph_launch(gp.exec, gp.g.stream))
}

// Err implements tensor.Graph: the error word of the last replay, read
// once (a synchronization).
func (gp *graph) Err() error {
	if gp.closed {
		return errors.New("cudaplugin: Graph.Err: the graph is closed")
	}
	if err := gp.g.enter(); err != nil {
		return err
	}
	defer gp.g.exit()
	f := &gp.word
	if err := gp.g.download(f[:], gp.flag.ptr); err != nil {
		return err
	}
	if math.Float32bits(f[0]) != 0 {
		return fmt.Errorf("cudaplugin: a replayed step met the index or label %v, which names no element (IndexSelect, Gather, IndexAdd, ScatterAdd, OneHot, CrossEntropy or MaxPool2DBackward; the values it reached are NaN or skipped)", f[1])
	}
	return nil
}

// Close implements tensor.Graph: it waits for the replays queued, then
// frees the executable graph and the graph's pool (its buffers still
// held by tensors are freed when those are collected) and lets the
// operands go.
func (gp *graph) Close() error {
	if gp.closed {
		return nil
	}
	gp.closed = true
	if err := gp.g.enter(); err != nil {
		return err
	}
	defer gp.g.exit()
	err := check("cudaStreamSynchronize", C.lanes_stream_sync(gp.g.stream))
	if e := check("cudaGraphExecDestroy", C.lanes_graph_exec_destroy(gp.exec)); err == nil {
		err = e
	}
	return errors.Join(err, gp.free())
}

// free gives the graph's memory back (entered).
func (gp *graph) free() error {
	gp.keep = nil
	gp.pool.put(gp.flag)
	gp.pool.put(gp.args)
	err := gp.pool.retire()
	gp.g.graphMu.Lock()
	delete(gp.g.graphs, gp.pool)
	gp.g.graphMu.Unlock()
	return err
}

// graphStats adds the figures of the graphs' pools to s.
func (g *GPU) graphStats(s *PoolStats) {
	g.graphMu.Lock()
	defer g.graphMu.Unlock()
	for p := range g.graphs {
		ps := p.Stats()
		s.InUseBytes += ps.InUseBytes
		s.CachedBytes += ps.CachedBytes
		s.Allocs += ps.Allocs
	}
}
