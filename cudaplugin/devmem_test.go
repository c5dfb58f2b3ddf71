//go:build cuda || cudaemu

package cudaplugin

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/tensor"
)

// A Fashion MLP trained on the device (nn on the plugin): its memory
// figures through tensor.MemoryStats, and a device too small for it.

// fashionRun is nn's Fashion MLP with CrossEntropy and Adam on 64 random
// images in batches of 16 (learnable by heart).
type fashionRun struct {
	m   nn.Module
	opt nn.Optimizer
	b   *nn.Batches
	tp  *nn.Tape
}

func newFashionRun(t *testing.T, dev tensor.Device) *fashionRun {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	m := nn.FashionMLP(r)
	x := tensor.RandN(r, 64, 28, 28)
	y := tensor.New(64)
	for i := range y.Data() {
		y.Data()[i] = float32(r.IntN(10))
	}
	if err := nn.To(m, dev); err != nil {
		t.Fatal(err)
	}
	b := nn.NewBatches(x, y, 16, r)
	if err := b.To(dev); err != nil {
		t.Fatal(err)
	}
	return &fashionRun{m: m, opt: nn.NewAdam(nn.Params(m), 1e-3), b: b, tp: nn.NewTape()}
}

// step runs a training step: its loss, or the device's out of memory.
func (s *fashionRun) step() (loss float32, err error) {
	err = tensor.Catch(func() {
		x, y, ok := s.b.Next()
		if !ok {
			s.b.Reset()
			x, y, _ = s.b.Next()
		}
		s.tp.Reset()
		l := s.tp.CrossEntropy(s.m.Forward(s.tp, s.tp.Const(x)), y)
		s.opt.ZeroGrad()
		s.tp.Backward(l)
		s.opt.Step()
		loss = l.Value().Item()
	})
	return loss, err
}

// TestDeviceMemoryTraining trains 20 steps on a device of 64 MiB: from
// step 2 on, the bytes in use after each step, the peak of each step (in
// use and reserved, reset before it) and the device allocations stay
// those of step 2, and the peak is reported.
func TestDeviceMemoryTraining(t *testing.T) {
	if emulated && !inChild(t, "LANES_CUDAEMU_MEMORY=64m") {
		return
	}
	g := requireGPU(t)
	s := newFashionRun(t, g.Device())
	var first tensor.MemStats
	for i := 1; i <= 20; i++ {
		if err := tensor.ResetPeakMemoryStats(g.Device()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		st, err := tensor.MemoryStats(g.Device())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i == 2:
			first = st
			t.Logf("step 2: %d bytes in use after it, peaks %d in use and %d reserved", st.InUse, st.PeakInUse, st.PeakReserved)
			if st.InUse == 0 || st.PeakInUse < st.InUse || st.PeakReserved < st.PeakInUse || st.Reserved < st.InUse {
				t.Errorf("step 2: %+v", st)
			}
		case i > 2 && (st.InUse != first.InUse || st.PeakInUse != first.PeakInUse || st.PeakReserved != first.PeakReserved || st.DeviceAllocs != first.DeviceAllocs):
			t.Errorf("step %d: %+v, step 2 %+v", i, st, first)
		}
	}
}

// TestDeviceOutOfMemoryTraining trains on an emulated device of 16 MiB
// that, once the model, Adam's state and the batches are there, other
// tensors of 64 KiB fill: no room for a step. The step returns the
// *tensor.OutOfMemoryError naming the op and the bytes (after the pool
// flushed and retried), no parameter changed; the model goes to the CPU
// and trains there, the loss going down; the device works on.
func TestDeviceOutOfMemoryTraining(t *testing.T) {
	if !emulated {
		t.Skip("a device of a few MiB is the emulated one's")
	}
	if !inChild(t, "LANES_CUDAEMU_MEMORY=16m") {
		return
	}
	g := requireGPU(t)
	s := newFashionRun(t, g.Device())
	var hogs []*tensor.Tensor
	for {
		h, err := tensor.NewOn(g.Device(), 16<<10)
		if err != nil {
			break
		}
		hogs = append(hogs, h)
	}
	defer runtime.KeepAlive(hogs)
	full, _ := tensor.MemoryStats(g.Device())
	params := nn.Params(s.m)
	before := make([][]float32, len(params))
	for i, v := range params {
		before[i] = v.Value().Data()
	}
	_, err := s.step()
	var oom *tensor.OutOfMemoryError
	if !errors.As(err, &oom) || !isOutOfMemory(err) {
		t.Fatalf("a step on a full device: %v", err)
	}
	t.Logf("step: %v", err)
	st, _ := tensor.MemoryStats(g.Device())
	if !strings.HasPrefix(oom.Op, "nn: ") && !strings.HasPrefix(oom.Op, "tensor: ") || oom.Requested <= 0 || oom.InUse <= 0 || st.OOMs != full.OOMs+1 || st.Flushes != full.Flushes+1 {
		t.Errorf("the error %+v; the device %+v", oom, st)
	}
	for i, v := range params {
		if !slices.Equal(v.Value().Data(), before[i]) {
			t.Errorf("parameter %d changed by the failed step", i)
		}
	}
	if err := nn.To(s.m, tensor.CPU); err != nil {
		t.Fatal(err)
	}
	if err := s.opt.To(tensor.CPU); err != nil {
		t.Fatal(err)
	}
	if err := s.b.To(tensor.CPU); err != nil {
		t.Fatal(err)
	}
	var losses []float32
	for i := range 32 {
		l, err := s.step()
		if err != nil {
			t.Fatalf("step %d on the CPU: %v", i, err)
		}
		losses = append(losses, l)
	}
	if a, b := (losses[0]+losses[1]+losses[2]+losses[3])/4, (losses[28]+losses[29]+losses[30]+losses[31])/4; !(b < a/2) {
		t.Errorf("the loss on the CPU went from %v to %v (first and last epoch)", a, b)
	}
	x, err := tensor.Full(2, 8).To(g.Device())
	if err != nil {
		t.Fatalf("the device after the failure: %v", err)
	}
	if got := tensor.Sum(tensor.Mul(x, x), false).Item(); got != 32 {
		t.Errorf("the device after the failure: %v, want 32", got)
	}
}
