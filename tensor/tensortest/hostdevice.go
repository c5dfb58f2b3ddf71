package tensortest

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// A HostDevice is a stand-in device whose memory is host slices and whose
// families run the CPU's implementation on host copies of their operands
// (see the package doc). Its methods are safe for concurrent use; the
// memory of its tensors is not, as a device's is not.
type HostDevice struct {
	dev tensor.Device
	cpu tensor.Backend // tensor.CPUBackend()

	mu     sync.Mutex
	counts Counts
	faults Faults
	mem    tensor.MemStats // its figures (MemoryStats): no pool, Reserved is InUse
}

// Counts is what a HostDevice has done since it was made or last Reset.
type Counts struct {
	// Uploads and UploadBytes count copies from the host into the
	// device's memory (To(dev), Set, a Staging's upload when performed):
	// calls and bytes.
	Uploads, UploadBytes int64
	// Downloads and DownloadBytes count copies from the device's memory
	// to the host (To(CPU), Data, At, Item): calls and bytes.
	Downloads, DownloadBytes int64
	// Allocs and AllocBytes count the buffers handed out (NewOn, To, the
	// results of ops on the device); Releases those given back.
	Allocs, AllocBytes, Releases int64
	// Calls counts the calls of each family method, by "Family.Method"
	// as the fields and methods of tensor.Backend are named
	// ("Elementwise.Binary", "Reduce.Softmax", "MatMul.MatMul", ...),
	// failed calls included.
	Calls map[string]int64
	// Offloads counts the family calls whose operands were all on the
	// host (work sent by tensor.SetOffload); they are in Calls too.
	Offloads int64
}

// Kernels returns the number of family calls, all methods together.
func (c Counts) Kernels() int64 {
	var n int64
	for _, v := range c.Calls {
		n += v
	}
	return n
}

// Faults makes a HostDevice fail as a device can: each non-nil error is
// returned by the operations it names, until SetFaults changes it.
type Faults struct {
	Alloc   error // every allocation (NewOn, To, an op's result)
	Copy    error // every copy to or from the host
	Kernels error // every family call, after it is counted
	// Memory, when above 0, is the device's capacity in bytes: an
	// allocation that would take the bytes in use (tensor.MemStats'
	// InUse) above it fails with a *tensor.OutOfMemoryError, as a full
	// device's does.
	Memory int64
}

// NewHostDevice returns a stand-in for dev, not registered (Register, or
// tensor.RegisterDevice(dev, d.Backend())). dev must not be tensor.CPU.
func NewHostDevice(dev tensor.Device) *HostDevice {
	if dev == tensor.CPU {
		panic("tensortest: NewHostDevice: tensor.CPU is not a device")
	}
	return &HostDevice{dev: dev, cpu: tensor.CPUBackend(), counts: Counts{Calls: map[string]int64{}}}
}

// Register makes a HostDevice for dev, registers it with
// tensor.RegisterDevice, and unregisters it when the test ends.
func Register(t testing.TB, dev tensor.Device) *HostDevice {
	t.Helper()
	d := NewHostDevice(dev)
	tensor.RegisterDevice(dev, d.Backend())
	t.Cleanup(func() { tensor.RegisterDevice(dev, nil) })
	return d
}

// Device returns the device d stands in for.
func (d *HostDevice) Device() tensor.Device { return d.dev }

// Backend returns a new Backend with d's memory and every family. A test
// may change its copy (remove a family, wrap one to record its
// arguments) before registering it.
func (d *HostDevice) Backend() *tensor.Backend {
	k := kernels{d}
	return &tensor.Backend{Memory: allocator{d}, MatMul: k, Conv: k, Elementwise: k, Reduce: k, Copy: k,
		Pool: k, Index: k, Norm: k, Loss: k, Optim: k, Random: k, Sort: k, Sample: k}
}

// Counts returns what d has done since it was made or last Reset.
func (d *HostDevice) Counts() Counts {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.counts
	c.Calls = maps.Clone(c.Calls)
	return c
}

// Reset sets d's counts to zero.
func (d *HostDevice) Reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts = Counts{Calls: map[string]int64{}}
}

// SetFaults makes d fail as f says (Faults{} for no failures).
func (d *HostDevice) SetFaults(f Faults) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = f
}

// update runs f on d's counts and returns d's faults.
func (d *HostDevice) update(f func(c *Counts)) Faults {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(&d.counts)
	return d.faults
}

// allocator is d's tensor.DeviceAllocator.
type allocator struct{ d *HostDevice }

func (a allocator) Alloc(dev tensor.Device, n int) (tensor.DeviceMemory, error) {
	if dev != a.d.dev {
		return nil, fmt.Errorf("tensortest: %v asked to allocate on %v", a.d.dev, dev)
	}
	d, bytes := a.d, 4*int64(n)
	d.mu.Lock()
	err := d.faults.Alloc
	if c := d.faults.Memory; err == nil && c > 0 && d.mem.InUse+bytes > c {
		d.mem.OOMs++
		err = &tensor.OutOfMemoryError{Device: d.dev, Requested: bytes, InUse: d.mem.InUse, Reserved: d.mem.Reserved,
			Err: fmt.Errorf("tensortest: capacity %d bytes", c)}
	}
	if err == nil {
		d.counts.Allocs++
		d.counts.AllocBytes += bytes
		m := &d.mem
		m.Allocs++
		m.DeviceAllocs++
		m.InUse += bytes
		m.Reserved = m.InUse
		m.PeakInUse = max(m.PeakInUse, m.InUse)
		m.PeakReserved = max(m.PeakReserved, m.Reserved)
	}
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &memory{d: d, buf: make([]float32, n)}, nil
}

// MemStats implements tensor.MemoryReporter: the stand-in keeps no pool,
// so Reserved is InUse and DeviceAllocs is Allocs.
func (a allocator) MemStats(tensor.Device) tensor.MemStats {
	a.d.mu.Lock()
	defer a.d.mu.Unlock()
	return a.d.mem
}

// ResetPeakMemStats implements tensor.MemoryReporter.
func (a allocator) ResetPeakMemStats(tensor.Device) {
	a.d.mu.Lock()
	defer a.d.mu.Unlock()
	a.d.mem.PeakInUse, a.d.mem.PeakReserved = a.d.mem.InUse, a.d.mem.Reserved
}

// memory is a buffer of a HostDevice.
type memory struct {
	d   *HostDevice
	buf []float32
}

func (m *memory) Device() tensor.Device { return m.d.dev }
func (m *memory) Len() int              { return len(m.buf) }
func (m *memory) Release() {
	m.d.update(func(c *Counts) {
		c.Releases++
		m.d.mem.Frees++
		m.d.mem.InUse -= 4 * int64(len(m.buf))
		m.d.mem.Reserved = m.d.mem.InUse
	})
}

func (m *memory) CopyFromHost(off int, src []float32) error {
	f := m.d.update(func(c *Counts) { c.Uploads++; c.UploadBytes += 4 * int64(len(src)) })
	if err := m.span("CopyFromHost", off, len(src), f); err != nil {
		return err
	}
	copy(m.buf[off:], src)
	return nil
}

func (m *memory) CopyToHost(dst []float32, off int) error {
	f := m.d.update(func(c *Counts) { c.Downloads++; c.DownloadBytes += 4 * int64(len(dst)) })
	if err := m.span("CopyToHost", off, len(dst), f); err != nil {
		return err
	}
	copy(dst, m.buf[off:])
	return nil
}

// NewStaging implements tensor.AsyncUploader: a host slice. An Upload
// checks its range and returns the copy fault; the copy is performed, and
// counted as one upload, at the Pending's first Use or Wait, or at the
// next Upload or Release, reading the staging buffer then: a caller that
// uses the device's elements before Use, or writes the buffer before
// Wait, gets the wrong elements, as it may on a GPU.
func (m *memory) NewStaging(n int) (tensor.Staging, error) {
	if n < 0 {
		return nil, fmt.Errorf("tensortest: NewStaging: %d elements", n)
	}
	if f := m.d.update(func(*Counts) {}); f.Alloc != nil {
		return nil, f.Alloc
	}
	return &staging{d: m.d, buf: make([]float32, n)}, nil
}

// staging is a HostDevice's tensor.Staging; queued is the upload not yet
// performed (nil when none).
type staging struct {
	d      *HostDevice
	buf    []float32
	queued func()
}

func (s *staging) Host() []float32 { return s.buf }

func (s *staging) Upload(dst tensor.DeviceMemory, off, n int) (tensor.Pending, error) {
	s.flush()
	m, ok := dst.(*memory)
	if !ok || m.d != s.d {
		return nil, fmt.Errorf("tensortest: Staging.Upload: memory of %v, the staging buffer's device is %v", dst.Device(), s.d.dev)
	}
	if n < 0 || n > len(s.buf) {
		return nil, fmt.Errorf("tensortest: Staging.Upload: %d elements from a staging buffer of %d", n, len(s.buf))
	}
	if err := m.span("Staging.Upload", off, n, m.d.update(func(*Counts) {})); err != nil {
		return nil, err
	}
	s.queued = func() {
		m.d.update(func(c *Counts) { c.Uploads++; c.UploadBytes += 4 * int64(n) })
		copy(m.buf[off:off+n], s.buf[:n])
	}
	return pending{s}, nil
}

// flush performs the queued upload.
func (s *staging) flush() {
	if q := s.queued; q != nil {
		s.queued = nil
		q()
	}
}

func (s *staging) Release() { s.flush(); s.buf = nil }

// pending is a HostDevice's tensor.Pending.
type pending struct{ s *staging }

func (p pending) Use() error  { p.s.flush(); return nil }
func (p pending) Wait() error { p.s.flush(); return nil }

// span checks that elements off to off+n are in m, and returns the copy
// fault if there is one.
func (m *memory) span(op string, off, n int, f Faults) error {
	if off < 0 || n > len(m.buf)-off {
		return fmt.Errorf("tensortest: %s: elements %d to %d of a buffer of %d", op, off, off+n, len(m.buf))
	}
	return f.Copy
}

// kernels is d's implementation of every family: the CPU's, run on host
// copies of the operands (do).
type kernels struct{ d *HostDevice }

var (
	_ tensor.MatMulKernels      = kernels{}
	_ tensor.ConvKernels        = kernels{}
	_ tensor.ElementwiseKernels = kernels{}
	_ tensor.ReduceKernels      = kernels{}
	_ tensor.CopyKernels        = kernels{}
	_ tensor.PoolKernels        = kernels{}
	_ tensor.IndexKernels       = kernels{}
	_ tensor.NormKernels        = kernels{}
	_ tensor.LossKernels        = kernels{}
	_ tensor.OptimKernels       = kernels{}
)

// do counts the call name, checks that the operands ts (nil ones
// skipped) are where a device's would be, and runs f on host copies of
// them, h; the first nOut of ts are results, written back from h after.
// The copies are the device's own reading of its memory, not counted as
// transfers.
func (k kernels) do(name string, nOut int, ts []*tensor.Tensor, f func(h []*tensor.Tensor) error) error {
	d := k.d
	onDevice, err := d.resident(name, ts)
	fl := d.update(func(c *Counts) {
		c.Calls[name]++
		if !onDevice && err == nil {
			c.Offloads++
		}
	})
	if err != nil {
		return err
	}
	if fl.Kernels != nil {
		return fl.Kernels
	}
	h := make([]*tensor.Tensor, len(ts))
	for i, t := range ts {
		if h[i], err = d.read(t); err != nil {
			return fmt.Errorf("tensortest: %s: %w", name, err)
		}
	}
	if err := f(h); err != nil {
		return err
	}
	for i, t := range ts[:nOut] {
		if t != nil {
			d.write(t, h[i])
		}
	}
	return nil
}

// resident reports whether any of ts is on d, and returns an error when
// one is on another device, or a host operand of one or more dimensions
// is beside operands on d: tensor should not have sent the op here.
func (d *HostDevice) resident(name string, ts []*tensor.Tensor) (bool, error) {
	onDevice, host := false, []int(nil)
	for _, t := range ts {
		switch {
		case t == nil:
		case t.Device() == d.dev:
			onDevice = true
		case t.Device() != tensor.CPU:
			return false, fmt.Errorf("tensortest: %v: %s given an operand %v on %v", d.dev, name, t.Shape(), t.Device())
		case t.Dims() > 0 && host == nil:
			host = t.Shape()
		}
	}
	if onDevice && host != nil {
		return true, fmt.Errorf("tensortest: %v: %s given a host operand %v beside device operands", d.dev, name, host)
	}
	return onDevice, nil
}

// read returns a contiguous host copy of t (nil for nil): for a tensor on
// d, its elements gathered from d's memory through its strides.
func (d *HostDevice) read(t *tensor.Tensor) (*tensor.Tensor, error) {
	if t == nil {
		return nil, nil
	}
	mem, off, ok := tensor.DeviceView(t)
	if !ok {
		return t.Clone(), nil
	}
	m, ok := mem.(*memory)
	if !ok || m.d != d {
		return nil, errors.New("tensor memory that is not the device's")
	}
	shape, strides := t.Shape(), t.Strides()
	if err := inBounds(len(m.buf), shape, strides, off); err != nil {
		return nil, err
	}
	data := make([]float32, 0, t.Len())
	walk(shape, strides, off, func(i int) { data = append(data, m.buf[i]) })
	return tensor.FromSlice(data, shape...), nil
}

// write stores the contiguous host tensor h into dst: through dst's
// strides for a tensor on d (read has checked its bounds), with
// tensor.CopyInto for a host one.
func (d *HostDevice) write(dst, h *tensor.Tensor) {
	mem, off, ok := tensor.DeviceView(dst)
	if !ok {
		tensor.CopyInto(dst, h)
		return
	}
	buf, src := mem.(*memory).buf, h.Data()
	j := 0
	walk(dst.Shape(), dst.Strides(), off, func(i int) { buf[i] = src[j]; j++ })
}

// inBounds checks that the view (shape, strides, off) of a buffer of n
// elements stays in it.
func inBounds(n int, shape, strides []int, off int) error {
	lo, hi := off, off
	for i, s := range shape {
		if s == 0 {
			return nil
		}
		if st := strides[i]; st > 0 {
			hi += (s - 1) * st
		} else {
			lo += (s - 1) * st
		}
	}
	if lo < 0 || hi >= n {
		return fmt.Errorf("view %v (strides %v, offset %d) outside a buffer of %d elements", shape, strides, off, n)
	}
	return nil
}

// walk calls f with the buffer position of each element of the view
// (shape, strides, off), in row-major order.
func walk(shape, strides []int, off int, f func(i int)) {
	n := 1
	for _, s := range shape {
		n *= s
	}
	idx, pos := make([]int, len(shape)), off
	for range n {
		f(pos)
		for a := len(shape) - 1; a >= 0; a-- {
			idx[a]++
			pos += strides[a]
			if idx[a] < shape[a] {
				break
			}
			pos -= idx[a] * strides[a]
			idx[a] = 0
		}
	}
}

// The families, each method the CPU's on host copies.

func (k kernels) MatMul(dst, a, b *tensor.Tensor) error {
	return k.do("MatMul.MatMul", 1, []*tensor.Tensor{dst, a, b}, func(h []*tensor.Tensor) error {
		return k.d.cpu.MatMul.MatMul(h[0], h[1], h[2])
	})
}

func (k kernels) Conv2D(dst, x, w, bias *tensor.Tensor, p tensor.ConvParams) error {
	return k.do("Conv.Conv2D", 1, []*tensor.Tensor{dst, x, w, bias}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Conv.Conv2D(h[0], h[1], h[2], h[3], p)
	})
}

func (k kernels) Conv2DBackwardInput(dx, dy, w *tensor.Tensor, p tensor.ConvParams) error {
	return k.do("Conv.Conv2DBackwardInput", 1, []*tensor.Tensor{dx, dy, w}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Conv.Conv2DBackwardInput(h[0], h[1], h[2], p)
	})
}

func (k kernels) Conv2DBackwardWeight(dw, dy, x *tensor.Tensor, p tensor.ConvParams) error {
	return k.do("Conv.Conv2DBackwardWeight", 1, []*tensor.Tensor{dw, dy, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Conv.Conv2DBackwardWeight(h[0], h[1], h[2], p)
	})
}

func (k kernels) Binary(op tensor.ElemOp, dst, a, b *tensor.Tensor) error {
	return k.do("Elementwise.Binary", 1, []*tensor.Tensor{dst, a, b}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Elementwise.Binary(op, h[0], h[1], h[2])
	})
}

func (k kernels) Unary(op tensor.ElemOp, dst, x *tensor.Tensor, arg [2]float32) error {
	return k.do("Elementwise.Unary", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Elementwise.Unary(op, h[0], h[1], arg)
	})
}

func (k kernels) Where(dst, cond, a, b *tensor.Tensor) error {
	return k.do("Elementwise.Where", 1, []*tensor.Tensor{dst, cond, a, b}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Elementwise.Where(h[0], h[1], h[2], h[3])
	})
}

func (k kernels) UnaryBackward(op tensor.ElemOp, dx, dy, x, y *tensor.Tensor, arg [2]float32) error {
	return k.do("Elementwise.UnaryBackward", 1, []*tensor.Tensor{dx, dy, x, y}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Elementwise.UnaryBackward(op, h[0], h[1], h[2], h[3], arg)
	})
}

func (k kernels) Reduce(op tensor.ReduceOp, dst, x *tensor.Tensor, axes []int, ddof int) error {
	return k.do("Reduce.Reduce", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Reduce.Reduce(op, h[0], h[1], axes, ddof)
	})
}

func (k kernels) NormP(dst, x *tensor.Tensor, axes []int, p float64) error {
	return k.do("Reduce.NormP", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Reduce.NormP(h[0], h[1], axes, p)
	})
}

func (k kernels) ArgReduce(op tensor.ArgOp, dst, x *tensor.Tensor, axis int) error {
	return k.do("Reduce.ArgReduce", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Reduce.ArgReduce(op, h[0], h[1], axis)
	})
}

func (k kernels) Softmax(dst, x *tensor.Tensor, axis int, log bool) error {
	return k.do("Reduce.Softmax", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Reduce.Softmax(h[0], h[1], axis, log)
	})
}

func (k kernels) SumTo(dst, x *tensor.Tensor) error {
	return k.do("Reduce.SumTo", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Reduce.SumTo(h[0], h[1])
	})
}

func (k kernels) SoftmaxBackward(dx, y, dy *tensor.Tensor, axis int, log bool) error {
	return k.do("Reduce.SoftmaxBackward", 1, []*tensor.Tensor{dx, y, dy}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Reduce.SoftmaxBackward(h[0], h[1], h[2], axis, log)
	})
}

func (k kernels) CopyInto(dst, src *tensor.Tensor) error {
	return k.do("Copy.CopyInto", 1, []*tensor.Tensor{dst, src}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Copy.CopyInto(h[0], h[1])
	})
}

func (k kernels) Concat(dst *tensor.Tensor, axis int, ts []*tensor.Tensor) error {
	return k.do("Copy.Concat", 1, append([]*tensor.Tensor{dst}, ts...), func(h []*tensor.Tensor) error {
		return k.d.cpu.Copy.Concat(h[0], axis, h[1:])
	})
}

func (k kernels) MaxPool2D(dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	return k.do("Pool.MaxPool2D", 2, []*tensor.Tensor{dst, indices, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.MaxPool2D(h[0], h[1], h[2], p)
	})
}

func (k kernels) AvgPool2D(dst, x *tensor.Tensor, p tensor.PoolParams) error {
	return k.do("Pool.AvgPool2D", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.AvgPool2D(h[0], h[1], p)
	})
}

func (k kernels) MaxPool2DBackward(dx, dy, indices *tensor.Tensor, p tensor.PoolParams) error {
	return k.do("Pool.MaxPool2DBackward", 1, []*tensor.Tensor{dx, dy, indices}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.MaxPool2DBackward(h[0], h[1], h[2], p)
	})
}

func (k kernels) AvgPool2DBackward(dx, dy *tensor.Tensor, p tensor.PoolParams) error {
	return k.do("Pool.AvgPool2DBackward", 1, []*tensor.Tensor{dx, dy}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.AvgPool2DBackward(h[0], h[1], p)
	})
}

func (k kernels) AdaptiveMaxPool2D(dst, indices, x *tensor.Tensor) error {
	return k.do("Pool.AdaptiveMaxPool2D", 2, []*tensor.Tensor{dst, indices, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.AdaptiveMaxPool2D(h[0], h[1], h[2])
	})
}

func (k kernels) AdaptiveAvgPool2D(dst, x *tensor.Tensor) error {
	return k.do("Pool.AdaptiveAvgPool2D", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.AdaptiveAvgPool2D(h[0], h[1])
	})
}

func (k kernels) AdaptiveMaxPool2DBackward(dx, dy, indices *tensor.Tensor) error {
	return k.do("Pool.AdaptiveMaxPool2DBackward", 1, []*tensor.Tensor{dx, dy, indices}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.AdaptiveMaxPool2DBackward(h[0], h[1], h[2])
	})
}

func (k kernels) AdaptiveAvgPool2DBackward(dx, dy *tensor.Tensor) error {
	return k.do("Pool.AdaptiveAvgPool2DBackward", 1, []*tensor.Tensor{dx, dy}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Pool.AdaptiveAvgPool2DBackward(h[0], h[1])
	})
}

func (k kernels) IndexSelect(dst, t *tensor.Tensor, axis int, index *tensor.Tensor) error {
	return k.do("Index.IndexSelect", 1, []*tensor.Tensor{dst, t, index}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Index.IndexSelect(h[0], h[1], axis, h[2])
	})
}

func (k kernels) Gather(dst, t *tensor.Tensor, axis int, index *tensor.Tensor) error {
	return k.do("Index.Gather", 1, []*tensor.Tensor{dst, t, index}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Index.Gather(h[0], h[1], axis, h[2])
	})
}

func (k kernels) IndexAdd(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return k.do("Index.IndexAdd", 1, []*tensor.Tensor{dst, index, src}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Index.IndexAdd(h[0], axis, h[1], h[2])
	})
}

func (k kernels) MaskedSelect(dst, x, mask *tensor.Tensor) error {
	return k.do("Index.MaskedSelect", 1, []*tensor.Tensor{dst, x, mask}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Index.MaskedSelect(h[0], h[1], h[2])
	})
}

func (k kernels) Scatter(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return k.do("Index.Scatter", 1, []*tensor.Tensor{dst, index, src}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Index.Scatter(h[0], axis, h[1], h[2])
	})
}

func (k kernels) ScatterAdd(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return k.do("Index.ScatterAdd", 1, []*tensor.Tensor{dst, index, src}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Index.ScatterAdd(h[0], axis, h[1], h[2])
	})
}

func (k kernels) OneHot(dst, labels *tensor.Tensor) error {
	return k.do("Index.OneHot", 1, []*tensor.Tensor{dst, labels}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Index.OneHot(h[0], h[1])
	})
}

// The normalizations write their statistics, and BatchNorm in training
// its running statistics, which are results as well as operands.

func (k kernels) BatchNorm(y *tensor.Tensor, s tensor.NormStats, x *tensor.Tensor, p tensor.BatchNormParams) error {
	ts := []*tensor.Tensor{y, s.Mean, s.InvStd, p.RunningMean, p.RunningVar, x, p.Gamma, p.Beta}
	return k.do("Norm.BatchNorm", 5, ts, func(h []*tensor.Tensor) error {
		p.RunningMean, p.RunningVar, p.Gamma, p.Beta = h[3], h[4], h[6], h[7]
		return k.d.cpu.Norm.BatchNorm(h[0], tensor.NormStats{Mean: h[1], InvStd: h[2]}, h[5], p)
	})
}

func (k kernels) BatchNormBackward(dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, p tensor.BatchNormParams) error {
	ts := []*tensor.Tensor{dx, dgamma, dbeta, dy, x, s.Mean, s.InvStd, p.Gamma}
	return k.do("Norm.BatchNormBackward", 3, ts, func(h []*tensor.Tensor) error {
		p.Gamma = h[7]
		return k.d.cpu.Norm.BatchNormBackward(h[0], h[1], h[2], h[3], h[4], tensor.NormStats{Mean: h[5], InvStd: h[6]}, p)
	})
}

func (k kernels) LayerNorm(y *tensor.Tensor, s tensor.NormStats, x *tensor.Tensor, p tensor.LayerNormParams) error {
	ts := []*tensor.Tensor{y, s.Mean, s.InvStd, x, p.Gamma, p.Beta}
	return k.do("Norm.LayerNorm", 3, ts, func(h []*tensor.Tensor) error {
		p.Gamma, p.Beta = h[4], h[5]
		return k.d.cpu.Norm.LayerNorm(h[0], tensor.NormStats{Mean: h[1], InvStd: h[2]}, h[3], p)
	})
}

func (k kernels) LayerNormBackward(dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, p tensor.LayerNormParams) error {
	ts := []*tensor.Tensor{dx, dgamma, dbeta, dy, x, s.Mean, s.InvStd, p.Gamma}
	return k.do("Norm.LayerNormBackward", 3, ts, func(h []*tensor.Tensor) error {
		p.Gamma = h[7]
		return k.d.cpu.Norm.LayerNormBackward(h[0], h[1], h[2], h[3], h[4], tensor.NormStats{Mean: h[5], InvStd: h[6]}, p)
	})
}

func (k kernels) RMSNorm(y, rrms, x *tensor.Tensor, p tensor.RMSNormParams) error {
	return k.do("Norm.RMSNorm", 2, []*tensor.Tensor{y, rrms, x, p.Gamma}, func(h []*tensor.Tensor) error {
		p.Gamma = h[3]
		return k.d.cpu.Norm.RMSNorm(h[0], h[1], h[2], p)
	})
}

func (k kernels) RMSNormBackward(dx, dgamma, dy, x, rrms *tensor.Tensor, p tensor.RMSNormParams) error {
	return k.do("Norm.RMSNormBackward", 2, []*tensor.Tensor{dx, dgamma, dy, x, rrms, p.Gamma}, func(h []*tensor.Tensor) error {
		p.Gamma = h[5]
		return k.d.cpu.Norm.RMSNormBackward(h[0], h[1], h[2], h[3], h[4], p)
	})
}

func (k kernels) Class(loss, dinput, dloss, input, target *tensor.Tensor, a tensor.ClassLossArgs) error {
	return k.do("Loss.Class", 2, []*tensor.Tensor{loss, dinput, dloss, input, target, a.Weight}, func(h []*tensor.Tensor) error {
		a.Weight = h[5]
		return k.d.cpu.Loss.Class(h[0], h[1], h[2], h[3], h[4], a)
	})
}

func (k kernels) Pointwise(loss, dpred, dloss, pred, target *tensor.Tensor, a tensor.PointLossArgs) error {
	ts := []*tensor.Tensor{loss, dpred, dloss, pred, target, a.Weight, a.PosWeight}
	return k.do("Loss.Pointwise", 2, ts, func(h []*tensor.Tensor) error {
		a.Weight, a.PosWeight = h[5], h[6]
		return k.d.cpu.Loss.Pointwise(h[0], h[1], h[2], h[3], h[4], a)
	})
}

// step runs an optimizer step through do: the lists written (parameters,
// then state slots; a nil list, unused, stands for nils) are its results,
// the gradients read after them; f gets the host copies, as lists again.
func (k kernels) step(name string, written [][]*tensor.Tensor, grads []*tensor.Tensor, f func(w [][]*tensor.Tensor, g []*tensor.Tensor) error) error {
	n := len(grads)
	ts := make([]*tensor.Tensor, 0, (len(written)+1)*n)
	for _, l := range written {
		if l == nil {
			l = make([]*tensor.Tensor, n)
		}
		ts = append(ts, l...)
	}
	ts = append(ts, grads...)
	return k.do(name, len(written)*n, ts, func(h []*tensor.Tensor) error {
		w := make([][]*tensor.Tensor, len(written))
		for i, l := range written {
			if l != nil {
				w[i] = h[i*n : (i+1)*n]
			}
		}
		return f(w, h[len(written)*n:])
	})
}

func (k kernels) SGD(params, grads, momentum []*tensor.Tensor, started []bool, hp tensor.SGDParams) error {
	return k.step("Optim.SGD", [][]*tensor.Tensor{params, momentum}, grads, func(w [][]*tensor.Tensor, g []*tensor.Tensor) error {
		return k.d.cpu.Optim.SGD(w[0], g, w[1], started, hp)
	})
}

func (k kernels) Adam(params, grads, m, v, vmax []*tensor.Tensor, steps []int64, hp tensor.AdamParams) error {
	return k.step("Optim.Adam", [][]*tensor.Tensor{params, m, v, vmax}, grads, func(w [][]*tensor.Tensor, g []*tensor.Tensor) error {
		return k.d.cpu.Optim.Adam(w[0], g, w[1], w[2], w[3], steps, hp)
	})
}

func (k kernels) Adagrad(params, grads, sum []*tensor.Tensor, steps []int64, hp tensor.AdagradParams) error {
	return k.step("Optim.Adagrad", [][]*tensor.Tensor{params, sum}, grads, func(w [][]*tensor.Tensor, g []*tensor.Tensor) error {
		return k.d.cpu.Optim.Adagrad(w[0], g, w[1], steps, hp)
	})
}

func (k kernels) Adamax(params, grads, m, u []*tensor.Tensor, steps []int64, hp tensor.AdamaxParams) error {
	return k.step("Optim.Adamax", [][]*tensor.Tensor{params, m, u}, grads, func(w [][]*tensor.Tensor, g []*tensor.Tensor) error {
		return k.d.cpu.Optim.Adamax(w[0], g, w[1], w[2], steps, hp)
	})
}

func (k kernels) NAdam(params, grads, m, v []*tensor.Tensor, steps []int64, muProduct []float64, hp tensor.NAdamParams) error {
	return k.step("Optim.NAdam", [][]*tensor.Tensor{params, m, v}, grads, func(w [][]*tensor.Tensor, g []*tensor.Tensor) error {
		return k.d.cpu.Optim.NAdam(w[0], g, w[1], w[2], steps, muProduct, hp)
	})
}

func (k kernels) RAdam(params, grads, m, v []*tensor.Tensor, steps []int64, hp tensor.RAdamParams) error {
	return k.step("Optim.RAdam", [][]*tensor.Tensor{params, m, v}, grads, func(w [][]*tensor.Tensor, g []*tensor.Tensor) error {
		return k.d.cpu.Optim.RAdam(w[0], g, w[1], w[2], steps, hp)
	})
}

func (k kernels) RMSProp(params, grads, squareAvg, gradAvg, momentum []*tensor.Tensor, hp tensor.RMSPropParams) error {
	return k.step("Optim.RMSProp", [][]*tensor.Tensor{params, squareAvg, gradAvg, momentum}, grads, func(w [][]*tensor.Tensor, g []*tensor.Tensor) error {
		return k.d.cpu.Optim.RMSProp(w[0], g, w[1], w[2], w[3], hp)
	})
}

// Panic returns what f panics with, formatted by fmt.Sprint, or "" when
// f returns: the message a test compares with the op's.
func Panic(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	f()
	return ""
}
