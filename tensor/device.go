package tensor

import (
	"fmt"
	"runtime"
	"slices"
)

// DeviceMemory is a buffer of float32 elements in an accelerator's
// memory. Plugins implement it (the CUDA plugin with pooled cudaMalloc
// buffers); package tensor only moves elements through it and releases it.
type DeviceMemory interface {
	// Device is where the buffer lives (never CPU).
	Device() Device
	// Len is the number of elements.
	Len() int
	// CopyFromHost copies src into elements off, off+1, ... of the buffer.
	CopyFromHost(off int, src []float32) error
	// CopyToHost copies len(dst) elements from off on into dst, after the
	// work queued on the buffer so far.
	CopyToHost(dst []float32, off int) error
	// Release returns the buffer to its plugin. Package tensor calls it
	// once, after no tensor refers to the buffer any more.
	Release()
}

// A DeviceAllocator hands out device memory; a plugin registers one per
// device, as its Backend's Memory, with RegisterDevice.
type DeviceAllocator interface {
	// Alloc returns a buffer of n zero-filled elements on dev. When the
	// device has too little memory, even after giving back what its
	// allocator caches, the error is an *OutOfMemoryError (Op and Where
	// empty: the caller fills them in). An allocator may also implement
	// MemoryReporter (MemoryStats).
	Alloc(dev Device, n int) (DeviceMemory, error)
}

// AsyncUploader is the optional asynchronous upload of the Memory family:
// a DeviceMemory whose device can copy from host memory while it computes
// implements it (the CUDA plugin with pinned host buffers and a copy
// stream; tensortest.HostDevice, deferring the copy to Use or Wait).
// Callers that find it missing upload with CopyFromHost, which waits.
type AsyncUploader interface {
	// NewStaging returns a host staging buffer of n elements for
	// asynchronous uploads to this memory's device (pinned memory on a
	// CUDA device). The caller keeps it and reuses it: allocating one is
	// slow.
	NewStaging(n int) (Staging, error)
}

// A Staging is a host buffer from which a device copies asynchronously
// (AsyncUploader). Its rules, as CUDA's for pinned memory and streams:
//
//   - Host returns the buffer's elements; the caller writes them only
//     when no upload from the buffer is pending, that is before the first
//     Upload and after the Wait of the last one. Writing them earlier may
//     change what the device receives.
//   - Upload(dst, off, n) queues the copy of Host()[:n] into dst's
//     elements off, off+1, ... and returns at once. The copy starts after
//     the device work queued before the call (so it may overwrite what
//     that work reads) and runs while later work runs: the device's work
//     queued after the call does not see the new elements until the
//     returned Pending's Use or Wait.
//   - Release frees the buffer after its pending upload (Wait); the
//     buffer must not be used afterwards.
//
// A Staging is not safe for concurrent use.
type Staging interface {
	Host() []float32
	Upload(dst DeviceMemory, off, n int) (Pending, error)
	Release()
}

// Pending is an upload in flight (Staging.Upload). It is valid until the
// next Upload from the same Staging.
type Pending interface {
	// Use orders the device's work queued after the call after the copy,
	// without waiting on the host (cudaStreamWaitEvent). The copy's error,
	// if it fails, is returned by a later Use, Wait or device operation.
	Use() error
	// Wait blocks until the copy is complete: its Staging may be written
	// again, and every later device operation sees the new elements.
	Wait() error
}

func allocator(op string, dev Device) (DeviceAllocator, error) {
	if b := registered(dev); b != nil && b.Memory != nil {
		return b.Memory, nil
	}
	return nil, fmt.Errorf("tensor: %s: no plugin serves %v", op, dev)
}

// Device tensors. A tensor on an accelerator keeps its elements in a
// DeviceMemory, held by a deviceStore that the tensor's store field points
// to; its data slice is nil. Views (Reshape, Transpose, Slice, ...) share
// the store as host views share a backing slice, and the memory is
// released once, by a cleanup on the store, after the last view of it is
// unreachable.
//
// The rules for device tensors:
//
//   - Host code reads device memory only by copying: To(CPU) (or Host)
//     copies a tensor, Data returns a host copy of its elements, At and
//     Item copy one element back and Set one in; each waits for the work
//     queued on the tensor.
//   - Views (Transpose, Slice, Index, Reshape where no copy is needed,
//     ...) and shape queries work on device tensors; views stay on the
//     device and share its memory.
//   - The ops of the families in backend.go (MatMul, the convolutions and
//     their gradients, the elementwise ops and UnaryGrad, the reductions,
//     Softmax and its gradients, the copies, pooling and its gradients,
//     the index ops: IndexSelect, Gather, IndexAdd, ScatterAdd, OneHot,
//     the normalizations and their gradients) run on the device of their
//     operands, dst included, through its Backend, whatever
//     dispatch.Place says, and return tensors on that device. Their
//     operands are all on that device, but for 0-d host tensors
//     (scalars) read as inputs: operands on two devices, or on the host
//     and a device, a device lacking the family, or an error of its
//     implementation make them panic, naming the op, the shapes and the
//     devices, since they have no error return; the plugin's own methods
//     (for instance (*cudaplugin.GPU).MatMul) return errors instead.

// deviceStore is the storage of a device tensor: mem and its device. Every
// view of the tensor points to the same deviceStore.
type deviceStore struct {
	mem DeviceMemory
	dev Device // mem.Device(), asked once
}

// deviceStorage wraps mem as a contiguous tensor of the given shape on
// mem's device. mem is released after the store is unreachable: the
// cleanup's argument is mem itself, not the store, so that the store can
// be collected.
func deviceStorage(mem DeviceMemory, shape []int) *Tensor {
	store := &deviceStore{mem: mem, dev: mem.Device()}
	runtime.AddCleanup(store, func(m DeviceMemory) { m.Release() }, mem)
	return &Tensor{shape: slices.Clone(shape), strides: contiguousStrides(shape), store: store}
}

// memoryOf returns the device memory behind t, or nil for a host tensor.
func memoryOf(t *Tensor) DeviceMemory {
	if t.store == nil {
		return nil
	}
	return t.store.mem
}

// DeviceView returns the memory behind a device tensor and the element
// offset of its first element in it; with Shape and Strides, that is the
// tensor's layout. ok is false for host tensors. Plugins use it to run
// operations on device tensors.
func DeviceView(t *Tensor) (mem DeviceMemory, offset int, ok bool) {
	checkNil("DeviceView", "t", t)
	if m := memoryOf(t); m != nil {
		return m, t.offset, true
	}
	return nil, 0, false
}

// FromDeviceMemory returns a contiguous tensor of the given shape whose
// elements are mem (no copy); mem.Len() must be at least the product of
// shape. The tensor owns mem from then on: mem is released when no view
// of it is left. Plugins use it to return results that stay on the device.
func FromDeviceMemory(mem DeviceMemory, shape ...int) *Tensor {
	n := checkShape("FromDeviceMemory", shape)
	if mem == nil {
		panic("tensor: FromDeviceMemory: nil DeviceMemory")
	}
	if mem.Device() == CPU {
		panic("tensor: FromDeviceMemory: memory on the CPU")
	}
	if mem.Len() < n {
		panic(fmt.Sprintf("tensor: FromDeviceMemory: %d elements for shape %v (%d elements)", mem.Len(), shape, n))
	}
	return deviceStorage(mem, shape)
}

// NewOn returns a zero-filled contiguous tensor of the given shape on dev
// (New for CPU). The error says why a device could not provide the memory:
// an *OutOfMemoryError when it had too little.
func NewOn(dev Device, shape ...int) (*Tensor, error) {
	n := checkShape("NewOn", shape)
	if dev == CPU {
		return New(shape...), nil
	}
	a, err := allocator("NewOn", dev)
	if err != nil {
		return nil, err
	}
	mem, err := a.Alloc(dev, n)
	if err != nil {
		if oom, ok := AsOutOfMemory(err, "tensor: NewOn", fmt.Sprintf("shape %v", shape)); ok {
			return nil, oom
		}
		return nil, err
	}
	return deviceStorage(mem, shape), nil
}

// To returns t on dev: t itself when it is there already, else a
// contiguous copy there. Host to device copies the elements in row-major
// order into new device memory; device to host waits for the work queued
// on the tensor and copies them back into a new host tensor; device to
// another device goes through the host.
//
// To(CPU) (or Host) is how a device tensor is read on the host (Data, At
// and Item copy too). Views and the ops of the families in backend.go
// (MatMul, the convolutions, the elementwise ops and UnaryGrad, the
// reductions, Softmax and SoftmaxBackward, the copies: Contiguous, Clone,
// CopyInto, Concat, Stack; pooling; the index ops: IndexSelect, Gather,
// IndexAdd, ScatterAdd, OneHot; BatchNorm, LayerNorm and their gradients)
// run on the device of their operands, through its Backend.
func (t *Tensor) To(dev Device) (*Tensor, error) {
	t.need("To")
	if t.Device() == dev {
		return t, nil
	}
	if t.store != nil {
		h, err := t.toHost()
		if err != nil || dev == CPU {
			return h, err
		}
		t = h
	}
	d, err := NewOn(dev, t.shape...)
	if err != nil {
		return nil, err
	}
	if src := t.Data(); len(src) > 0 {
		if err := memoryOf(d).CopyFromHost(0, src); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Host is To(CPU).
func (t *Tensor) Host() (*Tensor, error) {
	t.need("Host")
	return t.To(CPU)
}

// toHost copies a device tensor back: a contiguous view in one copy, any
// other view through the span of elements it covers.
func (t *Tensor) toHost() (*Tensor, error) {
	// t's store owns mem: a collection during the copy would release it
	// (the store's cleanup) while the device still reads it.
	defer runtime.KeepAlive(t)
	mem := memoryOf(t)
	h := New(t.shape...)
	n := t.Len()
	if n == 0 {
		return h, nil
	}
	if t.IsContiguous() {
		return h, mem.CopyToHost(h.data, t.offset)
	}
	first, last := t.reach()
	span := make([]float32, last-first+1)
	if err := mem.CopyToHost(span, first); err != nil {
		return nil, err
	}
	CopyInto(h, &Tensor{data: span, shape: t.shape, strides: t.strides, offset: t.offset - first})
	return h, nil
}
