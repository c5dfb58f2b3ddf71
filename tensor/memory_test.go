package tensor_test

import (
	"errors"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestMemoryStats checks MemoryStats and ResetPeakMemoryStats on the
// stand-in device (buffers taken and given back through its Memory, so
// that no collection decides when), and their errors for the CPU, an
// unregistered device and a device whose Memory keeps no figures.
func TestMemoryStats(t *testing.T) {
	d := tensortest.Register(t, onDev)
	mem := d.Backend().Memory
	alloc := func(n int) DeviceMemory {
		m, err := mem.Alloc(onDev, n)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	var held []DeviceMemory
	for _, c := range []struct {
		name                             string
		do                               func()
		inUse, peak, allocs, frees, ooms int64
	}{
		{"nothing", func() {}, 0, 0, 0, 0, 0},
		{"alloc 10", func() { held = append(held, alloc(10)) }, 40, 40, 1, 0, 0},
		{"alloc 25", func() { held = append(held, alloc(25)) }, 140, 140, 2, 0, 0},
		{"release 10", func() { held[0].Release() }, 100, 140, 2, 1, 0},
		{"reset peak", func() { ResetPeakMemoryStats(onDev) }, 100, 100, 2, 1, 0},
		{"alloc 0", func() { held = append(held, alloc(0)) }, 100, 100, 3, 1, 0},
		{"over capacity", func() {
			d.SetFaults(tensortest.Faults{Memory: 120})
			_, err := mem.Alloc(onDev, 6)
			var oom *OutOfMemoryError
			if !errors.As(err, &oom) || oom.Requested != 24 || oom.InUse != 100 || oom.Device != onDev {
				t.Errorf("Alloc beyond the capacity: %v", err)
			}
			d.SetFaults(tensortest.Faults{})
		}, 100, 100, 3, 1, 1},
		{"release 25", func() { held[1].Release() }, 0, 100, 3, 2, 1},
	} {
		c.do()
		s, err := MemoryStats(onDev)
		if err != nil {
			t.Fatal(err)
		}
		want := MemStats{InUse: c.inUse, Reserved: c.inUse, PeakInUse: c.peak, PeakReserved: c.peak,
			Allocs: c.allocs, Frees: c.frees, DeviceAllocs: c.allocs, OOMs: c.ooms}
		if s != want {
			t.Errorf("%s: %+v, want %+v", c.name, s, want)
		}
	}

	// A Memory that keeps no figures: the stand-in's, wrapped.
	RegisterDevice(otherDev, &Backend{Memory: struct{ DeviceAllocator }{mem}})
	t.Cleanup(func() { RegisterDevice(otherDev, nil) })
	for _, c := range []struct {
		dev  Device
		want string
		is   bool
	}{
		{CPU, "tensor: MemoryStats: cpu: no memory statistics (the Go heap: runtime.ReadMemStats)", true},
		{otherDev, "tensor: MemoryStats: device(8): no memory statistics", true},
		{Device(99), "tensor: MemoryStats: device(99) is not registered (tensor.RegisterDevice)", false},
	} {
		_, err := MemoryStats(c.dev)
		if err == nil || err.Error() != c.want || errors.Is(err, ErrNoMemoryStats) != c.is {
			t.Errorf("MemoryStats(%v): %v, want %q", c.dev, err, c.want)
		}
		if err := ResetPeakMemoryStats(c.dev); err == nil || errors.Is(err, ErrNoMemoryStats) != c.is {
			t.Errorf("ResetPeakMemoryStats(%v): %v", c.dev, err)
		}
	}
}

// TestOutOfMemory checks what a device out of memory does to ops: they
// panic with an *OutOfMemoryError naming the op, its operands, the device
// and the bytes, which Catch returns as an error; NewOn returns one;
// other panics go through Catch; and the device goes on working once
// memory is free.
func TestOutOfMemory(t *testing.T) {
	d := tensortest.Register(t, onDev)
	a := toDev(t, Arange(0, 6, 1).Reshape(2, 3), onDev)
	b := toDev(t, Full(1, 3), onDev)
	dst := toDev(t, New(2, 3), onDev)
	s, _ := MemoryStats(onDev) // 60 bytes: a, b and dst
	d.SetFaults(tensortest.Faults{Memory: s.InUse + 8})

	err := Catch(func() { Add(a, b) })
	var oom *OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("Add on a full device: Catch returned %v", err)
	}
	want := OutOfMemoryError{Op: "tensor: Add", Where: "[2 3] on device(7) and [3] on device(7)", Device: onDev,
		Requested: 24, InUse: s.InUse, Reserved: s.InUse}
	if got := *oom; got.Err == nil || func() bool { got.Err = nil; return got != want }() {
		t.Errorf("Add's error %+v, want %+v", got, want)
	}
	if msg, w := err.Error(), "tensor: Add: [2 3] on device(7) and [3] on device(7): out of memory on device(7): 24 bytes asked, 60 in use, 60 reserved: tensortest: capacity 68 bytes"; msg != w {
		t.Errorf("message %q, want %q", msg, w)
	}
	// The Into form writes into memory it has: it runs.
	if err := Catch(func() { AddInto(dst, a, b) }); err != nil {
		t.Errorf("AddInto on a full device: %v", err)
	}
	if got := fromDev(t, "AddInto", dst, onDev).Data(); !slices.Equal(got, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("AddInto = %v", got)
	}
	_, err = NewOn(onDev, 4, 4)
	if !errors.As(err, &oom) || oom.Op != "tensor: NewOn" || oom.Where != "shape [4 4]" || oom.Requested != 64 {
		t.Errorf("NewOn on a full device: %v", err)
	}
	if msg := tensortest.Panic(func() { Catch(func() { panic("tensor: something else") }) }); msg != "tensor: something else" {
		t.Errorf("Catch of another panic: %q", msg)
	}
	if err := Catch(func() {}); err != nil {
		t.Errorf("Catch of nothing: %v", err)
	}
	d.SetFaults(tensortest.Faults{})
	if got := fromDev(t, "Add", Add(a, b), onDev).Data(); !slices.Equal(got, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("Add after the memory came back = %v", got)
	}
}

// TestOptimizerStepOutOfMemory checks that an optimizer step whose device
// fails for want of memory panics with the *OutOfMemoryError and changes
// nothing: no parameter, no state, no step count, no started flag.
func TestOptimizerStepOutOfMemory(t *testing.T) {
	d := tensortest.Register(t, onDev)
	oomErr := &OutOfMemoryError{Device: onDev, Requested: 1 << 20}
	for _, c := range []struct {
		name string
		step func(p, g, s0, s1 []*Tensor, counts []int64, started []bool)
	}{
		{"SGDStep", func(p, g, s0, _ []*Tensor, _ []int64, started []bool) {
			SGDStep(p, g, s0, started, SGDParams{LR: 0.1, Momentum: 0.9})
		}},
		{"AdamStep", func(p, g, s0, s1 []*Tensor, counts []int64, _ []bool) {
			AdamStep(p, g, s0, s1, counts, AdamParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		}},
		{"RMSPropStep", func(p, g, s0, _ []*Tensor, _ []int64, _ []bool) {
			RMSPropStep(p, g, s0, nil, nil, RMSPropParams{LR: 0.1, Alpha: 0.99, Eps: 1e-8})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			list := func(v float32) []*Tensor {
				return []*Tensor{toDev(t, Full(v, 3), onDev), toDev(t, Full(v, 2, 2), onDev)}
			}
			p, g, s0, s1 := list(1), list(0.5), list(0.25), list(0.125)
			g[1] = nil
			counts, started := []int64{3, 4}, []bool{true, false}
			d.SetFaults(tensortest.Faults{Kernels: oomErr})
			err := Catch(func() { c.step(p, g, s0, s1, counts, started) })
			d.SetFaults(tensortest.Faults{})
			var oom *OutOfMemoryError
			if !errors.As(err, &oom) || oom.Op != "tensor: "+c.name || oom.Where != "2 parameters on device(7)" {
				t.Fatalf("step on a full device: %v", err)
			}
			if !slices.Equal(counts, []int64{3, 4}) || !slices.Equal(started, []bool{true, false}) {
				t.Errorf("counters advanced by a failed step: %v %v", counts, started)
			}
			for i, l := range [][]*Tensor{p, s0, s1} {
				for _, x := range l {
					h := fromDev(t, "state", x, onDev).Data()
					if want := []float32{1, 0.25, 0.125}[i]; slices.ContainsFunc(h, func(v float32) bool { return v != want }) {
						t.Errorf("list %d changed by a failed step: %v", i, h)
					}
				}
			}
			c.step(p, g, s0, s1, counts, started) // the same step again, with memory: it runs
			if h := fromDev(t, "parameter", p[0], onDev).Data(); h[0] >= 1 {
				t.Errorf("the step after the failure did not update: %v", h)
			}
		})
	}
}
