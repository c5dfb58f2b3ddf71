package tensor

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"
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
// device with RegisterDevice.
type DeviceAllocator interface {
	// Alloc returns a buffer of n zero-filled elements on dev.
	Alloc(dev Device, n int) (DeviceMemory, error)
}

var allocators sync.Map // Device → DeviceAllocator

// RegisterDevice makes dev usable with To and NewOn, its memory coming
// from a; a nil a unregisters it. dev must not be CPU.
func RegisterDevice(dev Device, a DeviceAllocator) {
	if dev == CPU {
		panic("tensor: RegisterDevice: CPU is not an accelerator")
	}
	if a == nil {
		allocators.Delete(dev)
		return
	}
	allocators.Store(dev, a)
}

func allocator(op string, dev Device) (DeviceAllocator, error) {
	if a, ok := allocators.Load(dev); ok {
		return a.(DeviceAllocator), nil
	}
	return nil, fmt.Errorf("tensor: %s: no plugin serves %v", op, dev)
}

// Device tensors. A tensor on an accelerator keeps its elements in a
// DeviceMemory; its data slice is an anchor of length and capacity 0
// that identifies the storage (views share it, as they share a host
// backing slice) and keeps it alive. storages maps the anchor, weakly, to
// the memory, which is released when the last view is collected. Host
// code that indexes data on a device tensor fails with an index panic
// rather than reading stale values.
var storages sync.Map // weak.Pointer[float32] → DeviceMemory

// deviceStorage wraps mem as a contiguous tensor of the given shape on
// mem's device.
func deviceStorage(mem DeviceMemory, shape []int) *Tensor {
	anchor := new([4]float32) // 16 bytes: not batched by the tiny allocator, which would delay the cleanup
	key := weak.Make(&anchor[0])
	storages.Store(key, mem)
	runtime.AddCleanup(&anchor[0], func(k weak.Pointer[float32]) {
		if m, ok := storages.LoadAndDelete(k); ok {
			m.(DeviceMemory).Release()
		}
	}, key)
	return &Tensor{data: anchor[:0:0], shape: slices.Clone(shape), strides: contiguousStrides(shape), dev: mem.Device()}
}

// memoryOf returns the device memory behind t, or nil for a host tensor.
func memoryOf(t *Tensor) DeviceMemory {
	if t.dev == CPU {
		return nil
	}
	m, ok := storages.Load(weak.Make(unsafe.SliceData(t.data)))
	if !ok {
		panic(fmt.Sprintf("tensor: tensor of shape %v on %v has no device storage", t.shape, t.dev))
	}
	return m.(DeviceMemory)
}

// DeviceView returns the memory behind a device tensor and the element
// offset of its first element in it; with Shape and Strides, that is the
// tensor's layout. ok is false for host tensors. Plugins use it to run
// operations on device tensors.
func DeviceView(t *Tensor) (mem DeviceMemory, offset int, ok bool) {
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
	if mem.Device() == CPU {
		panic("tensor: FromDeviceMemory: memory on the CPU")
	}
	if mem.Len() < n {
		panic(fmt.Sprintf("tensor: FromDeviceMemory: %d elements for shape %v (%d elements)", mem.Len(), shape, n))
	}
	return deviceStorage(mem, shape)
}

// NewOn returns a zero-filled contiguous tensor of the given shape on dev
// (New for CPU). The error says why a device could not provide the memory.
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
		return nil, err
	}
	return deviceStorage(mem, shape), nil
}

// To returns t on dev: t itself when it is there already, else a
// contiguous copy there. Host to device copies the elements in row-major
// order into new device memory; device to host waits for the work queued
// on the tensor and copies them back into a new host tensor. A device
// tensor is read on the host through To(CPU) (or Host): host operations
// (At, Data, Add, ...) must not be given device tensors, except MatMul,
// Conv2D and their Into forms, which the plugin runs on the device.
func (t *Tensor) To(dev Device) (*Tensor, error) {
	if t.dev == dev {
		return t, nil
	}
	if t.dev != CPU {
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
func (t *Tensor) Host() (*Tensor, error) { return t.To(CPU) }

// toHost copies a device tensor back: a contiguous view in one copy, any
// other view through the span of elements it covers.
func (t *Tensor) toHost() (*Tensor, error) {
	mem := memoryOf(t)
	h := New(t.shape...)
	n := t.Len()
	if n == 0 {
		return h, nil
	}
	if t.IsContiguous() {
		return h, mem.CopyToHost(h.data, t.offset)
	}
	first, last := t.offset, t.offset
	for i, d := range t.shape {
		if s := t.strides[i]; s > 0 {
			last += (d - 1) * s
		} else {
			first += (d - 1) * s
		}
	}
	span := make([]float32, last-first+1)
	if err := mem.CopyToHost(span, first); err != nil {
		return nil, err
	}
	CopyInto(h, &Tensor{data: span, shape: t.shape, strides: t.strides, offset: t.offset - first})
	return h, nil
}
