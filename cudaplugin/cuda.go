//go:build cuda

package cudaplugin

/*
#cgo CFLAGS: -I/usr/local/cuda/include
#cgo LDFLAGS: -L${SRCDIR}/build -llanescuda -L/usr/local/cuda/lib64 -lcudart_static -lstdc++ -ldl -lpthread -lrt -lm
#include <stdint.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "kernels.h"

// Every CUDA call goes through a helper that returns the cudaError_t as an
// int: device pointers cross into Go as uintptr_t, never as Go pointers,
// and no function-like macro (cudaGetDeviceProperties is one in CUDA 12)
// is called from Go.
static int lanes_device_count(int *n) { return cudaGetDeviceCount(n); }
static int lanes_set_device(int d) { return cudaSetDevice(d); }
static int lanes_props(int d, char *name, size_t len, size_t *mem, int *major, int *minor, int *sms, int *clock_khz) {
	struct cudaDeviceProp p;
	int e = cudaGetDeviceProperties(&p, d);
	if (e) return e;
	strncpy(name, p.name, len - 1);
	name[len - 1] = 0;
	*mem = p.totalGlobalMem;
	*major = p.major;
	*minor = p.minor;
	*sms = p.multiProcessorCount;
	return cudaDeviceGetAttribute(clock_khz, cudaDevAttrClockRate, d);
}
static const char *lanes_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
static int lanes_stream_create(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking); }
static int lanes_stream_destroy(cudaStream_t s) { return cudaStreamDestroy(s); }
static int lanes_stream_sync(cudaStream_t s) { return cudaStreamSynchronize(s); }
static int lanes_malloc(uintptr_t *p, size_t n) {
	void *q = 0;
	int e = cudaMalloc(&q, n);
	*p = (uintptr_t)q;
	return e;
}
static int lanes_free(uintptr_t p) { return cudaFree((void *)p); }
static int lanes_host_alloc(void **p, size_t n) { return cudaHostAlloc(p, n, cudaHostAllocDefault); }
static int lanes_host_free(void *p) { return cudaFreeHost(p); }
static int lanes_memset(uintptr_t p, size_t n, cudaStream_t s) { return cudaMemsetAsync((void *)p, 0, n, s); }
static int lanes_h2d(uintptr_t dst, const void *src, size_t n, cudaStream_t s) {
	return cudaMemcpyAsync((void *)dst, src, n, cudaMemcpyHostToDevice, s);
}
static int lanes_d2h(void *dst, uintptr_t src, size_t n, cudaStream_t s) {
	return cudaMemcpyAsync(dst, (const void *)src, n, cudaMemcpyDeviceToHost, s);
}
static float *lanes_fptr(uintptr_t p) { return (float *)p; }
static int lanes_gemm_at(cudaStream_t s, int cfg, LanesGemm *g, uintptr_t a, uintptr_t b, uintptr_t c, int gx, int gy, int gz) {
	g->a = (const float *)a;
	g->b = (const float *)b;
	g->c = (float *)c;
	return lanes_sgemm(s, cfg, g, gx, gy, gz);
}
static int lanes_conv_at(cudaStream_t s, int cfg, LanesConv *c, uintptr_t x, uintptr_t w, uintptr_t bias, uintptr_t y, int gx, int gy, int gz) {
	c->x = (const float *)x;
	c->w = (const float *)w;
	c->bias = (const float *)bias;
	c->y = (float *)y;
	return lanes_conv2d(s, cfg, c, gx, gy, gz);
}
static int lanes_bias_act_at(cudaStream_t s, uintptr_t y, uintptr_t x, uintptr_t bias, long long n, int ch, long long inner, int act) {
	return lanes_bias_act(s, (float *)y, (const float *)x, (const float *)bias, n, ch, inner, act);
}
static int lanes_binary_at(cudaStream_t s, int op, uintptr_t y, uintptr_t a, uintptr_t b, long long n) {
	return lanes_binary(s, op, (float *)y, (const float *)a, (const float *)b, n);
}
static int lanes_softmax_at(cudaStream_t s, uintptr_t y, uintptr_t x, long long rows, int cols) {
	return lanes_softmax_rows(s, (float *)y, (const float *)x, rows, cols);
}
static int lanes_pool_at(cudaStream_t s, int kind, LanesPool *p, uintptr_t y, uintptr_t idx, uintptr_t x) {
	return lanes_pool2d(s, kind, p, (float *)y, (float *)idx, (const float *)x);
}
static int lanes_gather_at(cudaStream_t s, uintptr_t y, uintptr_t x, LanesGather *g) {
	return lanes_gather(s, (float *)y, (const float *)x, g);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

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
	stream   C.cudaStream_t // device-resident work, in call order
	resident *pool          // buffers used on stream
	staging  *pool          // buffers of offloaded ops, returned after their synchronization
	lanes    chan *lane     // idle streams for offloaded ops
	nlanes   atomic.Int32
	enabled  atomic.Bool
	closed   atomic.Bool
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

// maxLanes is the number of offloaded ops in flight at once; more wait.
const maxLanes = 4

// lane is a stream for offloaded ops with its pinned staging buffer.
type lane struct {
	stream C.cudaStream_t
	host   unsafe.Pointer // cudaHostAlloc'd, elements floats
	elems  int
}

// cudaMemory is the pools' allocator: cudaMalloc and cudaFree (called
// from entered methods, on the right device).
type cudaMemory struct{}

func (cudaMemory) alloc(n int) (uintptr, error) {
	var p C.uintptr_t
	if err := check("cudaMalloc", C.lanes_malloc(&p, C.size_t(n))); err != nil {
		return 0, err
	}
	return uintptr(p), nil
}

func (cudaMemory) free(p uintptr) error { return check("cudaFree", C.lanes_free(C.uintptr_t(p))) }

// Open opens CUDA device ordinal and registers it with package tensor as
// tensor.Device(ordinal+1): its memory (To, NewOn) and the op families it
// runs (MatMul, Conv), so that tensor's ops on its tensors run on it. It
// does not offload host work or install the placer (Enable does).
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
	g.resident.reclaim = runtime.GC // unreachable device tensors give their buffers back
	if err := check("cudaStreamCreate", C.lanes_stream_create(&g.stream)); err != nil {
		return nil, err
	}
	tensor.RegisterDevice(g.dev, &tensor.Backend{Memory: g, MatMul: g, Conv: g})
	return g, nil
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

// deviceMemory is a pooled device buffer holding n elements: the storage
// of device tensors and the temporaries of operations.
type deviceMemory struct {
	g        *GPU
	b        block
	n        int
	released atomic.Bool
}

func (m *deviceMemory) Device() tensor.Device { return m.g.dev }
func (m *deviceMemory) Len() int              { return m.n }
func (m *deviceMemory) ptr(off int) uintptr   { return m.b.ptr + uintptr(off)*4 }

func (m *deviceMemory) bounds(op string, off, n int) {
	if off < 0 || n < 0 || off+n > m.n {
		panic(fmt.Sprintf("cudaplugin: %s: elements %d..%d of a buffer of %d", op, off, off+n, m.n))
	}
}

// CopyFromHost copies src to the device and waits for the copy (src is Go
// memory, which the CUDA runtime must not read after the call returns).
func (m *deviceMemory) CopyFromHost(off int, src []float32) error {
	m.bounds("CopyFromHost", off, len(src))
	if len(src) == 0 {
		return nil
	}
	if err := m.g.enter(); err != nil {
		return err
	}
	defer m.g.exit()
	return m.g.upload(m.ptr(off), src)
}

// CopyToHost waits for the work queued on the device stream, then copies.
func (m *deviceMemory) CopyToHost(dst []float32, off int) error {
	m.bounds("CopyToHost", off, len(dst))
	if len(dst) == 0 {
		return nil
	}
	if err := m.g.enter(); err != nil {
		return err
	}
	defer m.g.exit()
	return m.g.download(dst, m.ptr(off))
}

// Release returns the buffer to the resident pool: work queued on the
// device stream that still reads it runs before any later use, which is
// queued on the same stream. After Close it is freed.
func (m *deviceMemory) Release() {
	if m.released.Swap(true) {
		return
	}
	if !m.g.closed.Load() {
		m.g.resident.put(m.b)
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !disabled.Load() && check("cudaSetDevice", C.lanes_set_device(C.int(m.g.ordinal))) == nil {
		cudaMemory{}.free(m.b.ptr)
	}
}

// upload copies src to device address dst on the device stream and waits.
func (g *GPU) upload(dst uintptr, src []float32) error {
	if err := check("cudaMemcpyAsync", C.lanes_h2d(C.uintptr_t(dst), unsafe.Pointer(&src[0]), C.size_t(4*len(src)), g.stream)); err != nil {
		return err
	}
	return check("cudaStreamSynchronize", C.lanes_stream_sync(g.stream))
}

// download copies len(dst) elements from device address src after the
// work queued on the device stream, and waits.
func (g *GPU) download(dst []float32, src uintptr) error {
	if err := check("cudaMemcpyAsync", C.lanes_d2h(unsafe.Pointer(&dst[0]), C.uintptr_t(src), C.size_t(4*len(dst)), g.stream)); err != nil {
		return err
	}
	return check("cudaStreamSynchronize", C.lanes_stream_sync(g.stream))
}

// alloc returns an uninitialized resident buffer of n elements (entered).
func (g *GPU) alloc(n int) (*deviceMemory, error) {
	b, err := g.resident.get(4 * max(n, 1))
	if err != nil {
		return nil, err
	}
	return &deviceMemory{g: g, b: b, n: n}, nil
}

// Alloc implements tensor.DeviceAllocator: n zero-filled elements.
func (g *GPU) Alloc(dev tensor.Device, n int) (tensor.DeviceMemory, error) {
	if !g.opened() {
		return nil, errNilGPU
	}
	if dev != g.dev {
		return nil, fmt.Errorf("cudaplugin: Alloc: %v is not this GPU (%v)", dev, g.dev)
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	m, err := g.alloc(n)
	if err != nil {
		return nil, err
	}
	if err := check("cudaMemsetAsync", C.lanes_memset(C.uintptr_t(m.b.ptr), C.size_t(4*max(n, 1)), g.stream)); err != nil {
		m.Release()
		return nil, err
	}
	return m, nil
}

// New returns a zero-filled tensor of the given shape on the GPU.
func (g *GPU) New(shape ...int) (*tensor.Tensor, error) {
	if !g.opened() {
		return nil, errNilGPU
	}
	return tensor.NewOn(g.dev, shape...)
}

// operand is a tensor's elements on the device: the address of the view's
// first element, its shape and strides.
type operand struct {
	ptr     uintptr
	shape   []int
	strides []int
}

func (o operand) aligned() bool { return o.ptr%16 == 0 }

func isContiguous(shape, strides []int) bool {
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && strides[i] != s {
			return false
		}
		s *= shape[i]
	}
	return true
}

// call is one operation on the device stream: the temporaries it made and
// whether host memory is involved (then it ends synchronized).
type call struct {
	g     *GPU
	temps []*deviceMemory
}

func (c *call) release() {
	for _, m := range c.temps {
		m.Release()
	}
}

func (c *call) temp(n int) (*deviceMemory, error) {
	m, err := c.g.alloc(n)
	if err == nil {
		c.temps = append(c.temps, m)
	}
	return m, err
}

// scratchFunc returns device memory of n floats for an op's own use, valid
// until the op's work on its stream is done.
type scratchFunc func(n int) (uintptr, error)

// scratch is a scratchFunc for ops on the device stream: a temporary,
// released with the call (later users of the memory queue on the same
// stream).
func (c *call) scratch(n int) (uintptr, error) {
	m, err := c.temp(n)
	if err != nil {
		return 0, err
	}
	return m.ptr(0), nil
}

// splitK sets a kernel's split-K fields: splits parts of per floats each
// in a workspace from scratch, or no split (0, nil) for splits 1.
func splitK(splits *C.int, partial **C.float, n, per int, scratch scratchFunc) error {
	if n <= 1 {
		*splits, *partial = 0, nil
		return nil
	}
	p, err := scratch(n * per)
	if err != nil {
		return err
	}
	*splits, *partial = C.int(n), C.lanes_fptr(C.uintptr_t(p))
	return nil
}

// input returns t on the device: a device tensor of this GPU as it is, a
// host tensor uploaded (row-major) into a temporary.
func (c *call) input(op string, t *tensor.Tensor) (operand, error) {
	if mem, off, ok := tensor.DeviceView(t); ok {
		m, mine := mem.(*deviceMemory)
		if !mine || m.g != c.g {
			return operand{}, fmt.Errorf("cudaplugin: %s: a tensor on %v given to the GPU of %v", op, mem.Device(), c.g.dev)
		}
		return operand{ptr: m.ptr(off), shape: t.Shape(), strides: t.Strides()}, nil
	}
	data := t.Data()
	m, err := c.temp(len(data))
	if err != nil {
		return operand{}, err
	}
	if len(data) > 0 {
		if err := c.g.upload(m.ptr(0), data); err != nil {
			return operand{}, err
		}
	}
	return operand{ptr: m.ptr(0), shape: t.Shape(), strides: shape.ContiguousStrides(t.Shape())}, nil
}

// contiguous returns o itself when it is row-major contiguous, else a
// gathered copy in a temporary.
func (c *call) contiguous(o operand) (operand, error) {
	if isContiguous(o.shape, o.strides) {
		return o, nil
	}
	n := 1
	for _, d := range o.shape {
		n *= d
	}
	m, err := c.temp(n)
	if err != nil {
		return operand{}, err
	}
	if err := c.g.gather(c.g.stream, m.ptr(0), o, n); err != nil {
		return operand{}, err
	}
	return operand{ptr: m.ptr(0), shape: o.shape, strides: shape.ContiguousStrides(o.shape)}, nil
}

// gather copies the n elements of view o into contiguous memory at dst.
func (g *GPU) gather(stream C.cudaStream_t, dst uintptr, o operand, n int) error {
	if n == 0 {
		return nil
	}
	// Merge nothing; pad to at least one dimension.
	shape, strides := o.shape, o.strides
	if len(shape) == 0 {
		shape, strides = []int{1}, []int{0}
	}
	if len(shape) > C.LANES_GATHER_DIMS {
		return fmt.Errorf("cudaplugin: a view of %d dimensions (at most %d on the device)", len(shape), C.LANES_GATHER_DIMS)
	}
	var gd C.LanesGather
	gd.dims = C.int(len(shape))
	gd.n = C.longlong(n)
	for i := range shape {
		gd.shape[i] = C.longlong(shape[i])
		gd.strides[i] = C.longlong(strides[i])
	}
	return check("lanes_gather", C.lanes_gather_at(stream, C.uintptr_t(dst), C.uintptr_t(o.ptr), &gd))
}

// output returns where the result for dst goes: dst's own memory when it
// is a contiguous device tensor of this GPU, else a temporary that finish
// copies into host dst.
func (c *call) output(op string, dst *tensor.Tensor) (uintptr, error) {
	if mem, off, ok := tensor.DeviceView(dst); ok {
		m, mine := mem.(*deviceMemory)
		if !mine || m.g != c.g {
			return 0, fmt.Errorf("cudaplugin: %s: dst on %v given to the GPU of %v", op, mem.Device(), c.g.dev)
		}
		if !dst.IsContiguous() {
			return 0, fmt.Errorf("cudaplugin: %s: dst of shape %v and strides %v is not contiguous", op, dst.Shape(), dst.Strides())
		}
		return m.ptr(off), nil
	}
	m, err := c.temp(dst.Len())
	if err != nil {
		return 0, err
	}
	return m.ptr(0), nil
}

// finish copies the result into a host dst (and so waits for it); a device
// dst is left to the stream.
func (c *call) finish(dst *tensor.Tensor, out uintptr) error {
	if dst.Device() != tensor.CPU || dst.Len() == 0 {
		return nil
	}
	if dst.IsContiguous() {
		return c.g.download(dst.Data(), out)
	}
	tmp := make([]float32, dst.Len())
	if err := c.g.download(tmp, out); err != nil {
		return err
	}
	tensor.CopyInto(dst, tensor.FromSlice(tmp, dst.Shape()...))
	return nil
}

func anyDevice(ts ...*tensor.Tensor) bool {
	for _, t := range ts {
		if t != nil && t.Device() != tensor.CPU {
			return true
		}
	}
	return false
}

// gemm queues dst = a·b for the stacks of matrices of s: one launch when
// both operands' matrices are evenly spaced, one per matrix otherwise.
// dst is contiguous with s.out's layout; a and b have s's shapes and
// strides; each needs unit stride along its rows or columns.
func (g *GPU) gemm(stream C.cudaStream_t, s matmulShape, a, b uintptr, dst uintptr, scratch scratchFunc) error {
	ra, rb := len(s.aShape), len(s.bShape)
	ta, lda, okA := shape.MatrixLayout(s.m, s.k, s.aStrides[ra-2], s.aStrides[ra-1])
	tb, ldb, okB := shape.MatrixLayout(s.k, s.n, s.bStrides[rb-2], s.bStrides[rb-1])
	if !okA || !okB {
		return fmt.Errorf("cudaplugin: MatMul: an operand without unit stride along rows or columns")
	}
	count := s.batchCount()
	if s.m == 0 || s.n == 0 || count == 0 {
		return nil
	}
	offA := batchOffsets(s.batch, s.aShape, s.aStrides)
	offB := batchOffsets(s.batch, s.bShape, s.bStrides)
	strideA, uniA := uniformStride(offA)
	strideB, uniB := uniformStride(offB)
	var gm C.LanesGemm
	gm.m, gm.n, gm.k = C.int(s.m), C.int(s.n), C.int(s.k)
	gm.alpha, gm.beta = 1, 0
	gm.lda, gm.ldb, gm.ldc = C.longlong(lda), C.longlong(ldb), C.longlong(s.n)
	gm.trans_a, gm.trans_b = cbool(ta), cbool(tb)
	vec := func(p uintptr, ld int, offs []int) bool {
		ok := p%16 == 0 && ld%4 == 0
		for _, o := range offs {
			ok = ok && o%4 == 0
		}
		return ok
	}
	gm.vec_a, gm.vec_b = cbool(vec(a, lda, offA)), cbool(vec(b, ldb, offB))
	mn := s.m * s.n
	if uniA && uniB && count <= maxGridYZ {
		plan, err := planTiles(s.m, s.n, s.k, count, g.info.Processors)
		if err != nil {
			return err
		}
		if err := splitK(&gm.splits, &gm.partial, plan.splits, count*mn, scratch); err != nil {
			return err
		}
		gm.stride_a, gm.stride_b, gm.stride_c = C.longlong(strideA), C.longlong(strideB), C.longlong(mn)
		return check("lanes_sgemm", C.lanes_gemm_at(stream, C.int(plan.cfg.id), &gm, C.uintptr_t(a), C.uintptr_t(b), C.uintptr_t(dst),
			C.int(plan.gx), C.int(plan.gy), C.int(plan.gz)))
	}
	plan, err := planTiles(s.m, s.n, s.k, 1, g.info.Processors)
	if err != nil {
		return err
	}
	if err := splitK(&gm.splits, &gm.partial, plan.splits, mn, scratch); err != nil { // one workspace: the products run in stream order
		return err
	}
	for i := range count {
		pa, pb, pc := a+uintptr(offA[i])*4, b+uintptr(offB[i])*4, dst+uintptr(i*mn)*4
		if err := check("lanes_sgemm", C.lanes_gemm_at(stream, C.int(plan.cfg.id), &gm, C.uintptr_t(pa), C.uintptr_t(pb), C.uintptr_t(pc),
			C.int(plan.gx), C.int(plan.gy), 1)); err != nil {
			return err
		}
	}
	return nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// MatMul implements tensor.MatMulKernels: dst = tensor.MatMul(a, b). With every
// operand on the host it is an offloaded op (pinned staging, one
// synchronization); otherwise it runs on the device stream, host operands
// uploaded first, and waits only when dst is on the host.
func (g *GPU) MatMul(dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	s := planMatMul(a.Shape(), a.Strides(), b.Shape(), b.Strides())
	if !slices.Equal(dst.Shape(), s.out) {
		panic(fmt.Sprintf("cudaplugin: MatMul: dst shape %v, want %v for %v @ %v", dst.Shape(), s.out, a.Shape(), b.Shape()))
	}
	if !fitsInt32(s.m, s.n, s.k) {
		return fmt.Errorf("cudaplugin: MatMul: m=%d n=%d k=%d do not fit the kernels' 32-bit sizes", s.m, s.n, s.k)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if !anyDevice(dst, a, b) {
		cs := s
		cs.aStrides, cs.bStrides = shape.ContiguousStrides(s.aShape), shape.ContiguousStrides(s.bShape)
		return g.offload(dst, [][]float32{a.Data(), b.Data()}, func(st C.cudaStream_t, in []uintptr, out uintptr, scratch scratchFunc) error {
			return g.gemm(st, cs, in[0], in[1], out, scratch)
		})
	}
	c := &call{g: g}
	defer c.release()
	ao, err := c.input("MatMul", a)
	if err != nil {
		return err
	}
	bo, err := c.input("MatMul", b)
	if err != nil {
		return err
	}
	// Operands whose matrices have no unit stride are gathered first.
	s2 := planMatMul(ao.shape, ao.strides, bo.shape, bo.strides)
	if _, _, ok := shape.MatrixLayout(s2.m, s2.k, s2.aStrides[len(s2.aStrides)-2], s2.aStrides[len(s2.aStrides)-1]); !ok {
		if ao, err = c.contiguous(ao); err != nil {
			return err
		}
	}
	if _, _, ok := shape.MatrixLayout(s2.k, s2.n, s2.bStrides[len(s2.bStrides)-2], s2.bStrides[len(s2.bStrides)-1]); !ok {
		if bo, err = c.contiguous(bo); err != nil {
			return err
		}
	}
	s2 = planMatMul(ao.shape, ao.strides, bo.shape, bo.strides)
	out, err := c.output("MatMul", dst)
	if err != nil {
		return err
	}
	if err := g.gemm(g.stream, s2, ao.ptr, bo.ptr, out, c.scratch); err != nil {
		return err
	}
	return c.finish(dst, out)
}

// Conv2D implements tensor.ConvKernels: dst = tensor.Conv2D(x, w, bias,
// p), as MatMul for where it runs.
func (g *GPU) Conv2D(dst, x, w, bias *tensor.Tensor, p tensor.ConvParams) error {
	if !g.opened() {
		return errNilGPU
	}
	cs := planConv("Conv2D", x.Shape(), w.Shape(), p.Stride, p.Padding, p.Dilation, p.Groups)
	if want := []int{cs.n, cs.cout, cs.oh, cs.ow}; !slices.Equal(dst.Shape(), want) {
		panic(fmt.Sprintf("cudaplugin: Conv2D: shapes %v and %v give output %v, got %v", x.Shape(), w.Shape(), want, dst.Shape()))
	}
	if bias != nil && (bias.Dims() != 1 || bias.Dim(0) != cs.cout) {
		panic(fmt.Sprintf("cudaplugin: Conv2D: bias shape %v for %d output channels", bias.Shape(), cs.cout))
	}
	if !cs.fitsInt32() {
		return fmt.Errorf("cudaplugin: Conv2D: shapes %v and %v too large for the kernel's 32-bit counts", x.Shape(), w.Shape())
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if !anyDevice(dst, x, w, bias) {
		in := [][]float32{x.Data(), w.Data()}
		if bias != nil {
			in = append(in, bias.Data())
		}
		return g.offload(dst, in, func(st C.cudaStream_t, ptrs []uintptr, out uintptr, scratch scratchFunc) error {
			var bp uintptr
			if bias != nil {
				bp = ptrs[2]
			}
			return g.conv(st, cs, p.ReLU, ptrs[0], ptrs[1], bp, out, scratch)
		})
	}
	c := &call{g: g}
	defer c.release()
	var ops [3]operand
	for i, t := range []*tensor.Tensor{x, w, bias} {
		if t == nil {
			continue
		}
		o, err := c.input("Conv2D", t)
		if err == nil {
			o, err = c.contiguous(o)
		}
		if err != nil {
			return err
		}
		ops[i] = o
	}
	out, err := c.output("Conv2D", dst)
	if err != nil {
		return err
	}
	if err := g.conv(g.stream, cs, p.ReLU, ops[0].ptr, ops[1].ptr, ops[2].ptr, out, c.scratch); err != nil {
		return err
	}
	return c.finish(dst, out)
}

// Conv2DBackwardInput implements tensor.ConvKernels. The plugin has no
// kernel for it yet: it returns an error naming it, which package tensor
// turns into the op's panic on device tensors (host work never comes
// here: tensor does not offload the gradients).
func (g *GPU) Conv2DBackwardInput(dx, dy, w *tensor.Tensor, p tensor.ConvParams) error {
	if !g.opened() {
		return errNilGPU
	}
	return errors.New("cudaplugin: Conv2DBackwardInput: no device kernel yet")
}

// Conv2DBackwardWeight implements tensor.ConvKernels; as
// Conv2DBackwardInput, it has no kernel yet.
func (g *GPU) Conv2DBackwardWeight(dw, dy, x *tensor.Tensor, p tensor.ConvParams) error {
	if !g.opened() {
		return errNilGPU
	}
	return errors.New("cudaplugin: Conv2DBackwardWeight: no device kernel yet")
}

// conv queues one implicit-GEMM convolution (bias may be 0: none).
func (g *GPU) conv(stream C.cudaStream_t, cs convShape, relu bool, x, w, bias, y uintptr, scratch scratchFunc) error {
	m, n, k := cs.gemm()
	if m == 0 || n == 0 {
		return nil
	}
	plan, err := planTiles(m, n, k, cs.gr, g.info.Processors)
	if err != nil {
		return err
	}
	var splits C.int
	var partial *C.float
	if err := splitK(&splits, &partial, plan.splits, cs.cout*n, scratch); err != nil {
		return err
	}
	cv := C.LanesConv{n: C.int(cs.n), c: C.int(cs.c), h: C.int(cs.h), w_: C.int(cs.w), cout: C.int(cs.cout),
		kh: C.int(cs.kh), kw: C.int(cs.kw), sh: C.int(cs.sh), sw: C.int(cs.sw), ph: C.int(cs.ph), pw: C.int(cs.pw),
		dh: C.int(cs.dh), dw: C.int(cs.dw), groups: C.int(cs.gr), oh: C.int(cs.oh), ow: C.int(cs.ow),
		vec_w: cbool(w%16 == 0 && k%4 == 0), relu: cbool(relu), splits: splits, partial: partial}
	return check("lanes_conv2d", C.lanes_conv_at(stream, C.int(plan.cfg.id), &cv, C.uintptr_t(x), C.uintptr_t(w), C.uintptr_t(bias), C.uintptr_t(y),
		C.int(plan.gx), C.int(plan.gy), C.int(plan.gz)))
}

// getLane returns an idle lane, making one while fewer than maxLanes exist.
func (g *GPU) getLane() (*lane, error) {
	select {
	case l := <-g.lanes:
		return l, nil
	default:
	}
	if n := g.nlanes.Add(1); n <= maxLanes {
		l := &lane{}
		if err := check("cudaStreamCreate", C.lanes_stream_create(&l.stream)); err != nil {
			g.nlanes.Add(-1)
			return nil, err
		}
		return l, nil
	}
	g.nlanes.Add(-1)
	return <-g.lanes, nil
}

// staging returns the lane's pinned buffer with at least n elements.
func (l *lane) staging(n int) ([]float32, error) {
	if l.elems < n {
		if l.host != nil {
			if err := check("cudaFreeHost", C.lanes_host_free(l.host)); err != nil {
				return nil, err
			}
			l.host, l.elems = nil, 0
		}
		size := max(n, 1<<16)
		if err := check("cudaHostAlloc", C.lanes_host_alloc(&l.host, C.size_t(4*size))); err != nil {
			return nil, err
		}
		l.elems = size
	}
	return unsafe.Slice((*float32)(l.host), n), nil
}

// align4 rounds n up to a multiple of 4 elements (16 bytes).
func align4(n int) int { return (n + 3) &^ 3 }

// offload runs an op on host tensors: the inputs are copied into the
// lane's pinned buffer, sent with one asynchronous copy, run queues the
// kernels on the lane's stream, the result comes back with one
// asynchronous copy, and the op synchronizes once. Errors leave dst to
// the CPU path.
func (g *GPU) offload(dst *tensor.Tensor, inputs [][]float32, run func(C.cudaStream_t, []uintptr, uintptr, scratchFunc) error) error {
	l, err := g.getLane()
	if err != nil {
		return err
	}
	defer func() { g.lanes <- l }()
	offs := make([]int, len(inputs)+1)
	total := 0
	for i, in := range inputs {
		offs[i] = total
		total += align4(len(in))
	}
	inEnd := total
	offs[len(inputs)] = total
	nOut := dst.Len()
	total += nOut
	host, err := l.staging(total)
	if err != nil {
		return err
	}
	for i, in := range inputs {
		copy(host[offs[i]:], in)
	}
	b, err := g.staging.get(4 * max(total, 1))
	if err != nil {
		return err
	}
	defer g.staging.put(b) // after the synchronization below (deferred calls run last in, first out)
	if inEnd > 0 {
		if err := check("cudaMemcpyAsync", C.lanes_h2d(C.uintptr_t(b.ptr), l.host, C.size_t(4*inEnd), l.stream)); err != nil {
			return err
		}
	}
	ptrs := make([]uintptr, len(inputs))
	for i := range inputs {
		ptrs[i] = b.ptr + uintptr(offs[i])*4
	}
	out := b.ptr + uintptr(inEnd)*4
	// Workspace of the op (split-K parts) comes from the staging pool and
	// goes back after the synchronization, as the buffer above.
	var scratchBlocks []block
	defer func() {
		for _, sb := range scratchBlocks {
			g.staging.put(sb)
		}
	}()
	scratch := func(n int) (uintptr, error) {
		sb, err := g.staging.get(4 * max(n, 1))
		if err != nil {
			return 0, err
		}
		scratchBlocks = append(scratchBlocks, sb)
		return sb.ptr, nil
	}
	runErr := run(l.stream, ptrs, out, scratch)
	if runErr == nil && nOut > 0 {
		runErr = check("cudaMemcpyAsync", C.lanes_d2h(unsafe.Add(l.host, 4*inEnd), C.uintptr_t(out), C.size_t(4*nOut), l.stream))
	}
	// Synchronize even after a failed launch: the copies already queued
	// read the staging buffers.
	if err := check("cudaStreamSynchronize", C.lanes_stream_sync(l.stream)); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return runErr
	}
	res := host[inEnd : inEnd+nOut]
	if dst.IsContiguous() {
		copy(dst.Data(), res)
	} else {
		tensor.CopyInto(dst, tensor.FromSlice(slices.Clone(res), dst.Shape()...))
	}
	return nil
}

// deviceOperands checks that the operands of a device-only op are contiguous
// tensors on this GPU and returns their addresses; anything else is a
// programmer error.
func (g *GPU) deviceOperands(op string, ts ...*tensor.Tensor) []uintptr {
	ptrs := make([]uintptr, len(ts))
	for i, t := range ts {
		if t == nil {
			continue
		}
		mem, off, ok := tensor.DeviceView(t)
		m, mine := mem.(*deviceMemory)
		if !ok || !mine || m.g != g {
			panic(fmt.Sprintf("cudaplugin: %s: operand %d (shape %v) is on %v, want %v (use To)", op, i, t.Shape(), t.Device(), g.dev))
		}
		if !t.IsContiguous() {
			panic(fmt.Sprintf("cudaplugin: %s: operand %d of shape %v and strides %v is not contiguous (use GPU.Contiguous)", op, i, t.Shape(), t.Strides()))
		}
		ptrs[i] = m.ptr(off)
	}
	return ptrs
}

func sameShape(op string, a, b *tensor.Tensor) {
	if !slices.Equal(a.Shape(), b.Shape()) {
		panic(fmt.Sprintf("cudaplugin: %s: shapes %v and %v differ", op, a.Shape(), b.Shape()))
	}
}

// Contiguous returns t when it is a contiguous tensor on the GPU, else a
// contiguous copy on the GPU (a host t is uploaded; a device view is
// gathered on the device).
func (g *GPU) Contiguous(t *tensor.Tensor) (*tensor.Tensor, error) {
	if !g.opened() {
		return nil, errNilGPU
	}
	if t.Device() == tensor.CPU {
		return t.To(g.dev)
	}
	if t.IsContiguous() {
		g.deviceOperands("Contiguous", t)
		return t, nil
	}
	if err := g.enter(); err != nil {
		return nil, err
	}
	defer g.exit()
	c := &call{g: g}
	defer c.release()
	o, err := c.input("Contiguous", t)
	if err != nil {
		return nil, err
	}
	m, err := g.alloc(t.Len())
	if err != nil {
		return nil, err
	}
	if err := g.gather(g.stream, m.ptr(0), o, t.Len()); err != nil {
		m.Release()
		return nil, err
	}
	return tensor.FromDeviceMemory(m, t.Shape()...), nil
}

// BiasAct sets dst to act(x + bias) with bias (nil: none) broadcast along
// x's axis (1 for an NCHW convolution output, -1 for a linear layer's).
// dst may be x. Every tensor is a contiguous tensor on the GPU.
func (g *GPU) BiasAct(dst, x, bias *tensor.Tensor, axis int, act Activation) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape("BiasAct", dst, x)
	shape := x.Shape()
	if axis < 0 {
		axis += len(shape)
	}
	if axis < 0 || axis >= len(shape) {
		panic(fmt.Sprintf("cudaplugin: BiasAct: axis out of range for shape %v", shape))
	}
	if bias != nil && (bias.Dims() != 1 || bias.Dim(0) != shape[axis]) {
		panic(fmt.Sprintf("cudaplugin: BiasAct: bias shape %v for axis %d of %v", bias.Shape(), axis, shape))
	}
	if act != Identity && act != ReLU {
		panic(fmt.Sprintf("cudaplugin: BiasAct: unknown activation %d", act))
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	if !fitsInt32(shape[axis]) {
		return fmt.Errorf("cudaplugin: BiasAct: %d channels do not fit the kernels' 32-bit sizes", shape[axis])
	}
	p := g.deviceOperands("BiasAct", dst, x, bias)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_bias_act", C.lanes_bias_act_at(g.stream, C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.uintptr_t(p[2]),
		C.longlong(x.Len()), C.int(shape[axis]), C.longlong(max(inner, 1)), C.int(act)))
}

// Add sets dst = a + b elementwise (same shapes; dst may be a or b).
func (g *GPU) Add(dst, a, b *tensor.Tensor) error { return g.binary("Add", 0, dst, a, b) }

// Mul sets dst = a · b elementwise (same shapes; dst may be a or b).
func (g *GPU) Mul(dst, a, b *tensor.Tensor) error { return g.binary("Mul", 1, dst, a, b) }

func (g *GPU) binary(op string, code int, dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape(op, a, b)
	sameShape(op, dst, a)
	p := g.deviceOperands(op, dst, a, b)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_binary", C.lanes_binary_at(g.stream, C.int(code), C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.uintptr_t(p[2]), C.longlong(a.Len())))
}

// SoftmaxRows sets dst to the softmax of x along its last axis, as
// tensor.Softmax(x, -1); dst may be x.
func (g *GPU) SoftmaxRows(dst, x *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape("SoftmaxRows", dst, x)
	if x.Dims() == 0 {
		panic("cudaplugin: SoftmaxRows: a scalar has no rows")
	}
	cols := x.Dim(-1)
	if !fitsInt32(cols) {
		return fmt.Errorf("cudaplugin: SoftmaxRows: %d columns do not fit the kernels' 32-bit sizes", cols)
	}
	p := g.deviceOperands("SoftmaxRows", dst, x)
	rows := 0
	if cols > 0 {
		rows = x.Len() / cols
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_softmax_rows", C.lanes_softmax_at(g.stream, C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.longlong(rows), C.int(cols)))
}

// MaxPool2D sets dst (and indices, unless nil) to tensor.MaxPool2D(x, p).
func (g *GPU) MaxPool2D(dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	return g.pool("MaxPool2D", 0, dst, indices, x, p)
}

// AvgPool2D sets dst to tensor.AvgPool2D(x, p).
func (g *GPU) AvgPool2D(dst, x *tensor.Tensor, p tensor.PoolParams) error {
	return g.pool("AvgPool2D", 1, dst, nil, x, p)
}

func (g *GPU) pool(op string, kind int, dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	if !g.opened() {
		return errNilGPU
	}
	out := tensor.Pool2DShape(x, p) // checks x and p, panicking as tensor does
	if !slices.Equal(dst.Shape(), out[:]) || (indices != nil && !slices.Equal(indices.Shape(), out[:])) {
		panic(fmt.Sprintf("cudaplugin: %s: shape %v gives output %v, got dst %v", op, x.Shape(), out, dst.Shape()))
	}
	xs := x.Shape()
	if indices != nil {
		checkPoolIndices(op, xs)
	}
	sh, sw := p.Stride[0], p.Stride[1]
	if sh == 0 {
		sh = p.Kernel[0]
	}
	if sw == 0 {
		sw = p.Kernel[1]
	}
	if !fitsInt32(xs[2], xs[3], out[2], out[3], p.Kernel[0], p.Kernel[1], sh, sw, p.Padding[0], p.Padding[1]) {
		return fmt.Errorf("cudaplugin: %s: shape %v with %+v does not fit the kernels' 32-bit sizes", op, xs, p)
	}
	ptrs := g.deviceOperands(op, dst, indices, x)
	lp := C.LanesPool{planes: C.longlong(xs[0] * xs[1]), h: C.int(xs[2]), w: C.int(xs[3]), oh: C.int(out[2]), ow: C.int(out[3]),
		kh: C.int(p.Kernel[0]), kw: C.int(p.Kernel[1]), sh: C.int(sh), sw: C.int(sw), ph: C.int(p.Padding[0]), pw: C.int(p.Padding[1]),
		exclude_pad: cbool(p.ExcludePad)}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_pool2d", C.lanes_pool_at(g.stream, C.int(kind), &lp, C.uintptr_t(ptrs[0]), C.uintptr_t(ptrs[1]), C.uintptr_t(ptrs[2])))
}
