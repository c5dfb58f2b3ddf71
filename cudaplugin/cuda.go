//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
*/
import "C"

import (
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/tensor"
)

func init() { dispatch.SetDeviceLister(lister{}) }

// lister shows the CUDA devices in dispatch.Report.
type lister struct{}

func (lister) Devices() ([]dispatch.DeviceInfo, error) { return Devices() }
func (lister) Describe() string                        { return "CUDA plugin" }

// disabled is set by the first sticky CUDA error: the process does not use
// the GPU again.
var (
	disabled    atomic.Bool
	disableOnce sync.Once
)

func disable(err error) {
	disabled.Store(true)
	disableOnce.Do(func() {
		log.Printf("%v: the CUDA context is lost; cudaplugin disabled for this process, everything runs on the CPU", err)
	})
}

// check turns a cudaError_t into an *Error (nil for cudaSuccess) and
// disables the plugin on a sticky error.
func check(call string, code C.int) error {
	if code == 0 {
		return nil
	}
	e := &Error{Call: call, Code: int(code), Msg: C.GoString(C.lanes_error_string(code))}
	if isSticky(e.Code) {
		disable(e)
	}
	return e
}

// DeviceCount returns the number of CUDA devices; the error says why there
// are none (no driver, no device) when cudaGetDeviceCount fails.
func DeviceCount() (int, error) {
	var n C.int
	if err := check("cudaGetDeviceCount", C.lanes_device_count(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Devices describes every CUDA device.
func Devices() ([]dispatch.DeviceInfo, error) {
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ds := make([]dispatch.DeviceInfo, 0, n)
	for i := range n {
		d, _, err := deviceInfo(i)
		if err != nil {
			return ds, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func deviceInfo(i int) (dispatch.DeviceInfo, float64, error) {
	var name [256]C.char
	var mem C.size_t
	var major, minor, sms, clock C.int
	if err := check("cudaGetDeviceProperties", C.lanes_props(C.int(i), &name[0], C.size_t(len(name)), &mem, &major, &minor, &sms, &clock)); err != nil {
		return dispatch.DeviceInfo{}, 0, err
	}
	return dispatch.DeviceInfo{Index: i, Name: C.GoString(&name[0]), Memory: uint64(mem),
		Major: int(major), Minor: int(minor), Processors: int(sms)}, float64(clock) * 1e3, nil
}

// GPU is one CUDA device opened by Open. It is safe for concurrent use.
// A nil *GPU (what Open returns with an error) is no device: its methods
// return an error matching ErrUnavailable, or tensor.CPU, OnCPU, "" and
// zero values, as in the build without -tags cuda.
type GPU struct {
	ordinal  int
	dev      tensor.Device
	info     dispatch.DeviceInfo
	stream   C.lanes_stream // device-resident work, in call order
	copyMu   sync.Mutex
	copy     C.lanes_stream // uploads from staging buffers (staging.go); nil until the first
	resident *pool          // buffers used on stream
	staging  *pool          // buffers of offloaded ops, returned after their synchronization
	lanes    chan *lane     // idle streams for offloaded ops
	nlanes   atomic.Int32
	enabled  atomic.Bool
	closed   atomic.Bool
	// Graphs (graph.go): the warm-up being recorded, the capture in
	// progress, the pools of the graphs not yet closed.
	graphMu   sync.Mutex
	warm      atomic.Pointer[warmup]
	lastWarm  *warmup // the last warm-up, for the next captures
	capturing atomic.Pointer[capture]
	graphs    map[*pool]bool
}

// errNilGPU is what the methods of a GPU that Open did not make (a nil
// *GPU, as Open and Enable return with their error, or a zero GPU)
// return: there is no device behind it.
const errNilGPU = unavailable("cudaplugin: nil *GPU (Open or Enable failed, or was not called)")

// opened reports whether Open made g. The methods of a GPU it did not
// make answer as those of the build without -tags cuda: errNilGPU (which
// matches ErrUnavailable) from those with an error, tensor.CPU from
// Device, OnCPU from Place, "" from Name, zero Info and Stats.
func (g *GPU) opened() bool { return g != nil && g.resident != nil }

// Open opens CUDA device ordinal and registers it with package tensor as
// tensor.Device(ordinal+1): its memory (To, NewOn) and the op families it
// runs (MatMul, Conv, Elementwise, Reduce, Copy, Pool, Random, Sort, ...), so that tensor's ops on
// its tensors run on it (an op without a device kernel would panic there
// with ErrNoKernel's text; every registered op has one). It does not offload
// host work or install the placer (Enable does).
func Open(ordinal int) (*GPU, error) {
	if disabled.Load() {
		return nil, ErrDisabled
	}
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, unavailable(fmt.Sprintf("cudaplugin: no CUDA device %d (%d found)", ordinal, n))
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("cudaSetDevice", C.lanes_set_device(C.int(ordinal))); err != nil {
		return nil, err
	}
	info, _, err := deviceInfo(ordinal)
	if err != nil {
		return nil, err
	}
	g := &GPU{ordinal: ordinal, dev: deviceOf(ordinal), info: info,
		resident: newPool(cudaMemory{}), staging: newPool(cudaMemory{}),
		lanes: make(chan *lane, maxLanes)}
	g.resident.reclaim = collect // unreachable device tensors give their buffers back
	if err := check("cudaStreamCreate", C.lanes_stream_create(&g.stream)); err != nil {
		return nil, err
	}
	tensor.RegisterDevice(g.dev, &tensor.Backend{Memory: g, MatMul: g, Conv: g, Elementwise: g, Reduce: g, Copy: g, Pool: g, Index: g, Norm: g, Loss: g, Optim: g, Random: g, Sort: g, Sample: g, Graph: g})
	return g, nil
}

// collect runs a garbage collection and waits, a second at most, for the
// cleanups it queued: those of unreachable device tensors put their
// buffers back in the pool (best effort: cleanups may run in parallel,
// so the last of them may still be running when the marker's has).
func collect() {
	done := make(chan struct{})
	marker := &struct{ _ [32]byte }{} // not a tiny allocation: its own object
	runtime.AddCleanup(marker, func(c chan struct{}) { close(c) }, done)
	marker = nil
	runtime.GC()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	runtime.Gosched()
}

// Enable opens device 0 and makes it lanes' accelerator: the offload
// device for MatMul and Conv2D on host tensors, the dispatch placer (device tensors on
// the GPU, host tensors by the calibrated thresholds) and the accelerator
// that calibration measures. With no driver or no device it returns the
// reason and changes nothing.
func Enable() (*GPU, error) {
	g, err := Open(0)
	if err != nil {
		return nil, err
	}
	g.enabled.Store(true)
	tensor.SetOffload(g.dev)
	dispatch.SetPlacer(g)
	dispatch.SetAccelerator(g)
	return g, nil
}

// Device is the tensor.Device of the GPU's tensors.
func (g *GPU) Device() tensor.Device {
	if !g.opened() {
		return tensor.CPU
	}
	return g.dev
}

// Info describes the device.
func (g *GPU) Info() dispatch.DeviceInfo {
	if !g.opened() {
		return dispatch.DeviceInfo{}
	}
	return g.info
}

// Stats returns the counters of the pool of device-resident buffers and of
// the pool of offloaded ops.
func (g *GPU) Stats() (resident, staging PoolStats) {
	if !g.opened() {
		return
	}
	return g.resident.Stats(), g.staging.Stats()
}

// Close waits for the queued work, frees the pooled buffers, the streams
// and the staging buffers, and unregisters the device (and the offload
// device and placer if Enable installed them). Device tensors still alive must not
// be used afterwards; their memory is freed when they are collected.
func (g *GPU) Close() error {
	if !g.opened() {
		return errNilGPU
	}
	if g.closed.Swap(true) {
		return ErrClosed
	}
	tensor.RegisterDevice(g.dev, nil)
	if g.enabled.Load() {
		tensor.SetOffload(tensor.CPU)
		dispatch.SetPlacer(nil)
		dispatch.SetAccelerator(nil)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if disabled.Load() {
		return nil // the context is gone: nothing can be freed
	}
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	keep(check("cudaSetDevice", C.lanes_set_device(C.int(g.ordinal))))
	keep(check("cudaStreamSynchronize", C.lanes_stream_sync(g.stream)))
	for range g.nlanes.Load() {
		l := <-g.lanes
		keep(check("cudaStreamDestroy", C.lanes_stream_destroy(l.stream)))
		if l.host != nil {
			keep(check("cudaFreeHost", C.lanes_host_free(l.host)))
		}
	}
	keep(check("cudaStreamDestroy", C.lanes_stream_destroy(g.stream)))
	g.copyMu.Lock()
	if g.copy != nil {
		keep(check("cudaStreamSynchronize", C.lanes_stream_sync(g.copy)))
		keep(check("cudaStreamDestroy", C.lanes_stream_destroy(g.copy)))
		g.copy = nil
	}
	g.copyMu.Unlock()
	keep(g.resident.flush())
	keep(g.staging.flush())
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// enter locks the goroutine to its thread and makes the GPU's device
// current on it; exit undoes the lock.
func (g *GPU) enter() error {
	if !g.opened() {
		return errNilGPU
	}
	runtime.LockOSThread()
	var err error
	switch {
	case disabled.Load():
		err = ErrDisabled
	case g.closed.Load():
		err = ErrClosed
	default:
		err = check("cudaSetDevice", C.lanes_set_device(C.int(g.ordinal)))
	}
	if err != nil {
		runtime.UnlockOSThread()
	}
	return err
}

func (g *GPU) exit() { runtime.UnlockOSThread() }

// Sync waits for the device-resident work queued so far and returns the
// first error it met.
func (g *GPU) Sync() error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("cudaStreamSynchronize", C.lanes_stream_sync(g.stream))
}

// Place implements dispatch.Placer (place.go); everything is the CPU's
// once the plugin is disabled or the GPU closed.
func (g *GPU) Place(w dispatch.Work) dispatch.Target {
	if !g.opened() || disabled.Load() || g.closed.Load() {
		return dispatch.OnCPU
	}
	return place(w)
}

// Describe implements dispatch.Placer.
func (g *GPU) Describe() string {
	if !g.opened() {
		return errNilGPU.Error()
	}
	if disabled.Load() {
		return ErrDisabled.Error()
	}
	return describe(g.info.Name)
}

// Name implements dispatch.Accelerator.
func (g *GPU) Name() string {
	if !g.opened() {
		return ""
	}
	return fmt.Sprintf("%s (sm_%d%d, %d GiB)", g.info.Name, g.info.Major, g.info.Minor, g.info.Memory>>30)
}

// Prepare implements dispatch.Accelerator for calibration: operands of
// random values for op on dims (dispatch.WorkOf's convention), on the
// device when resident, else in host memory (each call is then an
// offloaded op with its transfers). run returns when the result is
// complete.
func (g *GPU) Prepare(op dispatch.Op, resident bool, dims ...int) (run func() error, release func(), err error) {
	if !g.opened() {
		return nil, nil, errNilGPU
	}
	dispatch.WorkOf(op, dims...) // panics on a malformed shape, as WorkOf documents
	r := rand.New(rand.NewPCG(uint64(len(dims)), 1))
	var ins []*tensor.Tensor
	var outShape []int
	var call func(dst *tensor.Tensor, in []*tensor.Tensor) error
	switch op {
	case dispatch.OpMatMul:
		m, n, k, batch := dims[0], dims[1], dims[2], 1
		if len(dims) == 4 {
			batch = dims[3]
		}
		ins = []*tensor.Tensor{tensor.RandN(r, batch, m, k), tensor.RandN(r, batch, k, n)}
		outShape = []int{batch, m, n}
		call = func(dst *tensor.Tensor, in []*tensor.Tensor) error { return g.MatMul(dst, in[0], in[1]) }
	case dispatch.OpConv2D:
		xs, ws, stride, pad := shape.ConvWork(dims)
		p := tensor.ConvParams{Stride: [2]int{stride, stride}, Padding: [2]int{pad, pad}}
		x := tensor.RandN(r, xs[:]...)
		w := tensor.RandN(r, ws[:]...)
		ins = []*tensor.Tensor{x, w}
		os := tensor.Conv2DShape(x, w, p)
		outShape = os[:]
		call = func(dst *tensor.Tensor, in []*tensor.Tensor) error { return g.Conv2D(dst, in[0], in[1], nil, p) }
	default:
		return nil, nil, fmt.Errorf("cudaplugin: Prepare: %v is not offloaded", op)
	}
	dst := tensor.New(outShape...)
	if resident {
		for i, t := range ins {
			if ins[i], err = t.To(g.dev); err != nil {
				return nil, nil, err
			}
		}
		if dst, err = g.New(outShape...); err != nil {
			return nil, nil, err
		}
	}
	run = func() error {
		if err := call(dst, ins); err != nil {
			return err
		}
		if resident {
			return g.Sync()
		}
		return nil
	}
	release = func() { ins, dst = nil, nil }
	return run, release, nil
}
