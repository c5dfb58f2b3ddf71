package tensor

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostMemory is a DeviceMemory in host memory, standing in for a plugin's.
type hostMemory struct {
	dev      Device
	buf      []float32
	released *atomic.Int32
	fail     error // returned by the copies when set
}

func (m *hostMemory) Device() Device { return m.dev }
func (m *hostMemory) Len() int       { return len(m.buf) }
func (m *hostMemory) Release()       { m.released.Add(1) }

func (m *hostMemory) CopyFromHost(off int, src []float32) error {
	if m.fail != nil {
		return m.fail
	}
	copy(m.buf[off:off+len(src)], src)
	return nil
}

func (m *hostMemory) CopyToHost(dst []float32, off int) error {
	if m.fail != nil {
		return m.fail
	}
	copy(dst, m.buf[off:off+len(dst)])
	return nil
}

type hostAllocator struct {
	released atomic.Int32
	allocs   int
	fail     error
}

func (a *hostAllocator) Alloc(dev Device, n int) (DeviceMemory, error) {
	if a.fail != nil {
		return nil, a.fail
	}
	a.allocs++
	return &hostMemory{dev: dev, buf: make([]float32, n), released: &a.released}, nil
}

const testDevice Device = 7

func TestDeviceRoundTrip(t *testing.T) {
	a := &hostAllocator{}
	RegisterDevice(testDevice, &Backend{Memory: a})
	defer RegisterDevice(testDevice, nil)
	r := rand.New(rand.NewPCG(1, 2))
	x := RandN(r, 3, 4, 5)
	d, err := x.To(testDevice)
	if err != nil {
		t.Fatal(err)
	}
	if d.Device() != testDevice || !slices.Equal(d.Shape(), x.Shape()) {
		t.Fatalf("To: device %v shape %v", d.Device(), d.Shape())
	}
	if same, _ := d.To(testDevice); same != d {
		t.Errorf("To the tensor's own device copied")
	}
	mem, off, ok := DeviceView(d)
	if !ok || off != 0 || mem.Len() != 60 || !slices.Equal(mem.(*hostMemory).buf, x.Data()) {
		t.Fatalf("DeviceView = %v, %d, %v", mem, off, ok)
	}
	if _, _, ok := DeviceView(x); ok {
		t.Errorf("DeviceView of a host tensor reports ok")
	}
	back, err := d.Host()
	if err != nil || back.Device() != CPU || !slices.Equal(back.Data(), x.Data()) {
		t.Fatalf("Host: %v, %v", back, err)
	}
	// Views of a device tensor share its memory and copy back as views.
	views := map[string][2]*Tensor{
		"transpose": {d.Transpose(0, 2), x.Transpose(0, 2)},
		"slice":     {d.Slice(1, 1, 4, 2), x.Slice(1, 1, 4, 2)},
		"index":     {d.Index(0, 2), x.Index(0, 2)},
		"broadcast": {d.Index(2, 1).Unsqueeze(0).Expand(2, 3, 4), x.Index(2, 1).Unsqueeze(0).Expand(2, 3, 4)},
		"reshape":   {d.Reshape(12, 5), x.Reshape(12, 5)},
	}
	for name, v := range views {
		if m, _, _ := DeviceView(v[0]); m != mem {
			t.Errorf("%s: the view has other memory", name)
		}
		h, err := v[0].To(CPU)
		if err != nil || !slices.Equal(h.Data(), v[1].Contiguous().Data()) || !slices.Equal(h.Shape(), v[1].Shape()) {
			t.Errorf("%s: To(CPU) = %v, want %v (%v)", name, h, v[1], err)
		}
	}
	// Device to another device goes through the host.
	const other Device = 8
	RegisterDevice(other, &Backend{Memory: a})
	defer RegisterDevice(other, nil)
	if o, err := d.Transpose(0, 1).To(other); err != nil || o.Device() != other {
		t.Errorf("To(other): %v, %v", o, err)
	} else if h, _ := o.Host(); !slices.Equal(h.Data(), x.Transpose(0, 1).Contiguous().Data()) {
		t.Errorf("To(other) has the wrong elements")
	}
}

func TestDeviceNewOnAndErrors(t *testing.T) {
	if _, err := New(2).To(testDevice); err == nil || !strings.Contains(err.Error(), "tensor: NewOn: no plugin serves device(7)") {
		t.Errorf("To an unregistered device: %v", err)
	}
	a := &hostAllocator{fail: errors.New("out of memory")}
	RegisterDevice(testDevice, &Backend{Memory: a})
	defer RegisterDevice(testDevice, nil)
	if _, err := NewOn(testDevice, 2, 3); err == nil || err.Error() != "out of memory" {
		t.Errorf("NewOn with a failing allocator: %v", err)
	}
	a.fail = nil
	z, err := NewOn(testDevice, 2, 3)
	if err != nil || z.Device() != testDevice || z.Len() != 6 {
		t.Fatalf("NewOn: %v, %v", z, err)
	}
	if h, _ := z.Host(); !slices.Equal(h.Data(), make([]float32, 6)) {
		t.Errorf("NewOn is not zero-filled: %v", h)
	}
	if c, err := NewOn(CPU, 2); err != nil || c.Device() != CPU {
		t.Errorf("NewOn(CPU) = %v, %v", c, err)
	}
	mem, _, _ := DeviceView(z)
	mem.(*hostMemory).fail = errors.New("copy failed")
	if _, err := z.Host(); err == nil || err.Error() != "copy failed" {
		t.Errorf("Host with a failing copy: %v", err)
	}
	// Element access copies; a failed copy panics with the device's error.
	expectPanic(t, "tensor: At: reading an element of a tensor of shape [2 3] on device(7): copy failed", func() { z.At(0, 0) })
	expectPanic(t, "tensor: Item: reading an element of a tensor of shape [] on device(7): copy failed", func() { z.Index(0, 0).Index(0, 0).Item() })
	expectPanic(t, "tensor: Set: writing an element of a tensor of shape [2 3] on device(7): copy failed", func() { z.Set(1, 0, 0) })
	expectPanic(t, "tensor: Data: copying a tensor of shape [2 3] from device(7): copy failed", func() { z.Data() })
	expectPanic(t, "tensor: RegisterDevice: CPU is not an accelerator", func() { RegisterDevice(CPU, &Backend{Memory: a}) })
	expectPanic(t, "tensor: FromDeviceMemory: 6 elements for shape [7] (7 elements)", func() { FromDeviceMemory(mem, 7) })
}

// TestDeviceRelease checks that device memory goes back to its plugin once
// no view of it is left.
func TestDeviceRelease(t *testing.T) {
	a := &hostAllocator{}
	RegisterDevice(testDevice, &Backend{Memory: a})
	defer RegisterDevice(testDevice, nil)
	keep, _ := NewOn(testDevice, 4)
	view := keep.Reshape(2, 2)
	for range 10 {
		if _, err := NewOn(testDevice, 1000); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.released.Load() < 10 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := a.released.Load(); n != 10 {
		t.Errorf("%d of 10 unreachable buffers released", n)
	}
	runtime.KeepAlive(keep)
	if m, _, ok := DeviceView(view); !ok || m.Len() != 4 {
		t.Errorf("the kept view lost its memory")
	}
}

// deviceViews returns views of a new device tensor of shape [4, 6], made
// in a function of its own so that the tensor itself is unreachable on
// return.
//
//go:noinline
func deviceViews(t *testing.T) []*Tensor {
	d, err := NewOn(testDevice, 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	return []*Tensor{d.Reshape(2, 12), d.Transpose(0, 1), d.Slice(1, 1, 5, 2), d.Index(0, 3), d.Unsqueeze(0).Expand(3, 4, 6)}
}

// TestDeviceStoreShared checks that the views of a device tensor share its
// store (no host slice), and that its memory is released once, after the
// last view is unreachable, not before.
func TestDeviceStoreShared(t *testing.T) {
	a := &hostAllocator{}
	RegisterDevice(testDevice, &Backend{Memory: a})
	defer RegisterDevice(testDevice, nil)
	views := deviceViews(t)
	store := views[0].store
	if store == nil || store.mem == nil || store.dev != testDevice {
		t.Fatalf("device tensor store = %+v", store)
	}
	for i, v := range views {
		if v.store != store || v.data != nil || v.Device() != testDevice {
			t.Errorf("view %d: store %p (want %p), data %v, device %v", i, v.store, store, v.data, v.Device())
		}
		if m, _, _ := DeviceView(v); m != store.mem {
			t.Errorf("view %d: DeviceView gives other memory", i)
		}
	}
	store = nil
	settle := func() {
		for range 3 {
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}
	// The base tensor is gone; the views keep the memory, down to the last.
	for len(views) > 0 {
		settle()
		if n := a.released.Load(); n != 0 {
			t.Fatalf("memory released with %d views left", len(views))
		}
		views[len(views)-1] = nil
		views = views[:len(views)-1]
	}
	deadline := time.Now().Add(5 * time.Second)
	for a.released.Load() == 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := a.released.Load(); n != 1 {
		t.Fatalf("memory released %d times after the last view went, want 1", n)
	}
	settle()
	if n := a.released.Load(); n != 1 {
		t.Errorf("memory released %d times, want 1", n)
	}
	// Host tensors have no store.
	if h := New(2, 3); h.store != nil || h.Device() != CPU || h.T().store != nil {
		t.Errorf("a host tensor has a device store")
	}
}

// TestDeviceHostOpsPanic checks that host code given a device tensor
// panics with a message naming the operation, the shape and the device,
// whichever choke point (Data, At/Set, the CPU's kernels) it reaches the
// elements by. (Every public operation goes to the device's families:
// TestElementwiseOnDevice, TestReduceOnDevice, TestCopyOnDevice,
// TestPoolOnDevice, TestIndexOnDevice, TestNormOnDevice; only a caller of
// the CPU's kernels themselves, CPUBackend, can hand them a device
// tensor.)
func TestDeviceHostOpsPanic(t *testing.T) {
	RegisterDevice(testDevice, &Backend{Memory: &hostAllocator{}})
	defer RegisterDevice(testDevice, nil)
	d, _ := NewOn(testDevice, 2, 3)
	d4, _ := NewOn(testDevice, 1, 2, 4, 4)
	for _, c := range []struct {
		ops   []string // the operation named, or what it reads through
		shape []int
		f     func()
	}{
		{[]string{"LayerNorm"}, []int{2, 3}, func() {
			cpuBackend.Norm.LayerNorm(New(2, 3), NormStats{Mean: New(2, 1), InvStd: New(2, 1)}, d, LayerNormParams{Dims: 1, Eps: 1e-5})
		}},
		{[]string{"Gather"}, []int{2, 3}, func() { cpuBackend.Index.Gather(New(2, 3), d, 1, New(2, 3)) }},
		{[]string{"MaxPool2D"}, []int{1, 2, 4, 4}, func() { cpuBackend.Pool.MaxPool2D(New(1, 2, 2, 2), nil, d4, PoolParams{Kernel: [2]int{2, 2}}) }},
	} {
		msg := func() (msg any) {
			defer func() { msg = recover() }()
			c.f()
			return nil
		}()
		ok := false
		for _, op := range c.ops {
			ok = ok || msg == fmt.Sprintf("tensor: %s: tensor of shape %v is on device(7): copy it with To(tensor.CPU) first", op, c.shape)
		}
		if !ok {
			t.Errorf("%s on a device tensor: panic %q", c.ops[0], msg)
		}
	}
	// Data, At, Item and Set copy; views and printing do not touch the elements.
	src := FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	dd, err := src.To(testDevice)
	if err != nil {
		t.Fatal(err)
	}
	if got := dd.Data(); !slices.Equal(got, src.Data()) {
		t.Errorf("Data of a device tensor = %v, want %v", got, src.Data())
	}
	if got := dd.T().Data(); !slices.Equal(got, []float32{1, 4, 2, 5, 3, 6}) {
		t.Errorf("Data of a transposed device tensor = %v", got)
	}
	dd.Data()[0] = 100 // a copy: the tensor keeps its element
	dd.Set(-7, 1, 2)
	if a, b, c := dd.At(0, 0), dd.At(1, 2), dd.T().At(2, 1); a != 1 || b != -7 || c != -7 {
		t.Errorf("At after Set on a device tensor: %v %v %v, want 1 -7 -7", a, b, c)
	}
	if v := dd.Index(0, 1).Index(0, 1).Item(); v != 5 {
		t.Errorf("Item of a device view = %v, want 5", v)
	}
	// Views and printing do not touch the elements.
	if v := d.T().Reshape(3, 2); v.Device() != testDevice {
		t.Errorf("a view left the device")
	}
	if got := fmt.Sprint(d.T()); got != "<tensor of shape [3 2] on device(7)>" {
		t.Errorf("String of a device tensor = %q", got)
	}
}
