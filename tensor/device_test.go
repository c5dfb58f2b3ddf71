package tensor

import (
	"errors"
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
	RegisterDevice(testDevice, a)
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
	RegisterDevice(other, a)
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
	RegisterDevice(testDevice, a)
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
	// Host code indexing a device tensor fails loudly instead of reading
	// something stale.
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("At on a device tensor did not panic")
			}
		}()
		z.At(0, 0)
	}()
	expectPanic(t, "tensor: RegisterDevice: CPU is not an accelerator", func() { RegisterDevice(CPU, a) })
	expectPanic(t, "tensor: FromDeviceMemory: 6 elements for shape [7] (7 elements)", func() { FromDeviceMemory(mem, 7) })
}

// TestDeviceRelease checks that device memory goes back to its plugin once
// no view of it is left.
func TestDeviceRelease(t *testing.T) {
	a := &hostAllocator{}
	RegisterDevice(testDevice, a)
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
