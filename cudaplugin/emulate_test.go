//go:build cudaemu

package cudaplugin

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lanesgo/lanes/tensor"
)

// Tests only the emulated device can run: its runtime counts what it
// holds and takes its device count and memory size from the environment
// (read once per process, hence the child processes).

// waitReleased collects unreachable device tensors until g's resident
// pool has nothing in use (their buffers go back through tensor's
// cleanups, which run after a collection).
func waitReleased(t *testing.T, g *GPU) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		if r, _ := g.Stats(); r.InUseBytes == 0 {
			return
		}
		if time.Now().After(deadline) {
			r, _ := g.Stats()
			t.Fatalf("device buffers still in use after collecting: %+v", r)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestEmulatedCloseFreesAll: Close gives back every buffer, stream and
// pinned buffer that the device's work made, resident and offloaded.
func TestEmulatedCloseFreesAll(t *testing.T) {
	if !inChild(t) {
		return
	}
	if b, n, s, p := emulatorLive(); b != 0 || n != 0 || s != 0 || p != 0 {
		t.Fatalf("before Open: %d bytes in %d buffers, %d streams, %d pinned buffers", b, n, s, p)
	}
	g, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	func() {
		a, b := tensor.RandN(r, 70, 300), tensor.RandN(r, 300, 40)
		if err := g.MatMul(tensor.New(70, 40), a, b); err != nil { // offloaded: a lane, its pinned buffer, staging
			t.Fatal(err)
		}
		da, _ := a.To(g.Device())
		db, _ := b.T().Contiguous().To(g.Device())
		c := tensor.MatMul(da, db.T())                              // resident
		if err := g.MatMul(tensor.New(70, 40), da, b); err != nil { // a host operand uploaded into a temporary, a host result
			t.Fatal(err)
		}
		x, _ := tensor.RandN(r, 2, 3, 9, 9).To(g.Device())
		w, _ := tensor.RandN(r, 4, 3, 3, 3).To(g.Device())
		y := tensor.Conv2D(x, w, nil, tensor.ConvParams{Padding: [2]int{1, 1}})
		if _, err := c.To(tensor.CPU); err != nil {
			t.Fatal(err)
		}
		if _, err := y.To(tensor.CPU); err != nil {
			t.Fatal(err)
		}
	}()
	waitReleased(t, g)
	if b, n, s, p := emulatorLive(); b == 0 || n == 0 || s < 2 || p == 0 {
		t.Errorf("while open: %d bytes in %d buffers, %d streams, %d pinned buffers; want some of each", b, n, s, p)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if b, n, s, p := emulatorLive(); b != 0 || n != 0 || s != 0 || p != 0 {
		t.Errorf("after Close: %d bytes in %d buffers, %d streams, %d pinned buffers left", b, n, s, p)
	}
}

// TestEmulatedOutOfMemory fills a 4 MiB device: the allocation that does
// not fit fails with the runtime's out-of-memory error after the pool has
// collected and flushed; once the tensors are dropped the memory is
// usable again; tensor's ops panic with a *tensor.OutOfMemoryError
// naming the op and the bytes, which tensor.Catch returns.
func TestEmulatedOutOfMemory(t *testing.T) {
	if !inChild(t, "LANES_CUDAEMU_MEMORY=4m") {
		return
	}
	g, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if m := g.Info().Memory; m != 4<<20 {
		t.Fatalf("device memory %d bytes, want %d", m, 4<<20)
	}
	var held []*tensor.Tensor
	for i := 0; ; i++ {
		d, err := tensor.NewOn(g.Device(), 64, 1024) // 256 KiB
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !isOutOfMemory(err) || !strings.Contains(err.Error(), "out of memory") {
				t.Fatalf("allocation %d: %v, want the runtime's out of memory", i, err)
			}
			break
		}
		if i > 16 {
			t.Fatalf("%d allocations of 256 KiB fit in 4 MiB", i+1)
		}
		held = append(held, d)
	}
	if r, _ := g.Stats(); r.Flushes == 0 {
		t.Errorf("the pool did not flush before failing: %+v", r)
	}
	held = nil
	waitReleased(t, g)
	if _, err := tensor.NewOn(g.Device(), 64, 1024); err != nil {
		t.Fatalf("after the tensors were dropped: %v", err)
	}
	a, _ := tensor.NewOn(g.Device(), 1024, 512)            // 2 MiB
	err = tensor.Catch(func() { tensor.MatMul(a, a.T()) }) // a 4 MiB result
	var oom *tensor.OutOfMemoryError
	if !errors.As(err, &oom) || oom.Op != "tensor: MatMul" || oom.Requested != 4<<20 || oom.Device != g.Device() ||
		!isOutOfMemory(err) || !strings.HasPrefix(err.Error(), "tensor: MatMul: [1024 512] on device(1) and [512 1024] on device(1): out of memory on device(1): 4194304 bytes asked, ") {
		t.Errorf("MatMul beyond the device's memory: %v, want a *tensor.OutOfMemoryError naming MatMul and 4 MiB", err)
	}
	runtime.KeepAlive(held)
}

// TestEmulatedTwoDevices: two devices are two tensor devices; an op with
// operands on both panics naming them, and a GPU's own method refuses a
// tensor of the other.
func TestEmulatedTwoDevices(t *testing.T) {
	if !inChild(t, "LANES_CUDAEMU_DEVICES=2") {
		return
	}
	if n, err := DeviceCount(); n != 2 || err != nil {
		t.Fatalf("DeviceCount() = %d, %v", n, err)
	}
	g0, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	defer g0.Close()
	g1, err := Open(1)
	if err != nil {
		t.Fatal(err)
	}
	defer g1.Close()
	if g0.Device() == g1.Device() {
		t.Fatalf("both devices are %v", g0.Device())
	}
	a0, _ := tensor.Ones(3, 4).To(g0.Device())
	b1, _ := tensor.Ones(4, 2).To(g1.Device())
	if err := g0.MatMul(tensor.New(3, 2), a0, b1); err == nil || !strings.Contains(err.Error(), "device(2)") {
		t.Errorf("g0.MatMul with a tensor of device 2: %v, want an error naming it", err)
	}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "device(1)") || !strings.Contains(msg, "device(2)") {
			t.Errorf("MatMul across devices: panic %q, want one naming both", msg)
		}
	}()
	tensor.MatMul(a0, b1)
	t.Error("MatMul across devices did not panic")
}

// The emulator's speed, for the tests' budget: device-resident SGEMM and
// a small convolution, including the launch and the synchronization.
func BenchmarkEmulatedMatMul256(b *testing.B) {
	g := requireGPU(b)
	r := rand.New(rand.NewPCG(1, 2))
	x, _ := tensor.RandN(r, 256, 256).To(g.Device())
	y, _ := tensor.RandN(r, 256, 256).To(g.Device())
	dst, _ := g.New(256, 256)
	for b.Loop() {
		if err := g.MatMul(dst, x, y); err != nil {
			b.Fatal(err)
		}
		if err := g.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEmulatedConv2D(b *testing.B) {
	g := requireGPU(b)
	r := rand.New(rand.NewPCG(3, 4))
	x, _ := tensor.RandN(r, 8, 16, 28, 28).To(g.Device())
	w, _ := tensor.RandN(r, 32, 16, 3, 3).To(g.Device())
	p := tensor.ConvParams{Padding: [2]int{1, 1}}
	dst, _ := g.New(8, 32, 28, 28)
	for b.Loop() {
		if err := g.Conv2D(dst, x, w, nil, p); err != nil {
			b.Fatal(err)
		}
		if err := g.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEmulatedGridSampleInputGradReads: GridSampleBackwardInto asked for
// dinput alone runs its two kernels (the grid points' sources, then one
// thread per plane) and no copy of a strided input, which only dgrid's
// kernel reads; asked for dgrid too, it gathers the input first. The
// results are the CPU's bit for bit.
func TestEmulatedGridSampleInputGradReads(t *testing.T) {
	g := requireGPU(t)
	dev := g.Device()
	r := rand.New(rand.NewPCG(37, 38))
	hbase, hgrid, hdy := tensor.RandN(r, 2, 7, 3, 5), tensor.RandU(r, -1.2, 1.2, 2, 4, 6, 2), tensor.RandN(r, 2, 3, 4, 6)
	hx := hbase.Transpose(1, 2) // [2 3 7 5], strided
	x, grid, dy := mustDev(t, hbase, dev).Transpose(1, 2), mustDev(t, hgrid, dev), mustDev(t, hdy, dev)
	p := tensor.GridSampleParams{Padding: tensor.GridPadReflection}
	wantDx, wantDg := tensor.GridSampleBackward(hdy, hx, hgrid, p)
	for _, withGrid := range []bool{false, true} {
		dx := mustDev(t, tensor.New(2, 3, 7, 5), dev)
		var dg *tensor.Tensor
		want := int64(2)
		if withGrid {
			dg = mustDev(t, tensor.New(2, 4, 6, 2), dev)
			want = 4 // the input's gather, then dgrid's kernel
		}
		before := EmulatedCounts()
		tensor.GridSampleBackwardInto(dx, dg, dy, x, grid, p)
		after := EmulatedCounts()
		if n := after.Launches - before.Launches; n != want {
			t.Errorf("dgrid %v: %d launches, want %d", withGrid, n, want)
		}
		same(t, "dinput", dx, wantDx, 0)
		if withGrid {
			same(t, "dgrid", dg, wantDg, 0)
		}
	}
}
