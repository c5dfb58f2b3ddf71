package nn

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// memRun is a Fashion MLP trained with CrossEntropy and Adam on random
// batches (48 images, batches of 16: learnable by heart), on a device or
// the host.
type memRun struct {
	m   Module
	opt Optimizer
	b   *Batches
	tp  *Tape
}

func newMemRun(t *testing.T, dev tensor.Device) *memRun {
	t.Helper()
	r := rand.New(rand.NewPCG(21, 5))
	m := FashionMLP(r)
	const batch, n = 16, 48
	x := tensor.RandN(r, n, 28, 28)
	y := tensor.New(n)
	for i := range y.Data() {
		y.Data()[i] = float32(r.IntN(10))
	}
	if err := To(m, dev); err != nil {
		t.Fatal(err)
	}
	b := NewBatches(x, y, batch, r)
	if err := b.To(dev); err != nil {
		t.Fatal(err)
	}
	return &memRun{m: m, opt: NewAdam(Params(m), 1e-3), b: b, tp: NewTape()}
}

// step runs one training step and returns its loss, or the error of a
// device out of memory (tensor.Catch).
func (s *memRun) step() (loss float32, err error) {
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

// toCPU moves the model, its optimizer's state and the batches to the
// host: what a program does after the device ran out of memory.
func (s *memRun) toCPU(t *testing.T) {
	t.Helper()
	if err := To(s.m, tensor.CPU); err != nil {
		t.Fatal(err)
	}
	if err := s.opt.To(tensor.CPU); err != nil {
		t.Fatal(err)
	}
	if err := s.b.To(tensor.CPU); err != nil {
		t.Fatal(err)
	}
}

// TestDeviceMemoryStable trains on the stand-in device for 20 steps: from
// the second step on, the bytes in use after a step, the peak of a step
// (tensor.MemoryStats, reset before each) and the device's allocations
// do not change.
func TestDeviceMemoryStable(t *testing.T) {
	tensortest.Register(t, testDev)
	s := newMemRun(t, testDev)
	var first tensor.MemStats
	for i := 1; i <= 20; i++ {
		if err := tensor.ResetPeakMemoryStats(testDev); err != nil {
			t.Fatal(err)
		}
		if _, err := s.step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		st, err := tensor.MemoryStats(testDev)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i == 2:
			first = st
			t.Logf("step 2: %d bytes in use, peak %d, %d allocations", st.InUse, st.PeakReserved, st.Allocs)
			if st.InUse == 0 || st.PeakInUse < st.InUse {
				t.Errorf("step 2: %+v", st)
			}
		case i > 2 && (st.InUse != first.InUse || st.PeakInUse != first.PeakInUse || st.PeakReserved != first.PeakReserved || st.DeviceAllocs != first.DeviceAllocs):
			t.Errorf("step %d: %+v, step 2 %+v", i, st, first)
		}
	}
}

// TestDeviceOutOfMemoryToCPU trains on a stand-in device that has room
// for the model, its optimizer and the batches but not for a step's
// activations: the step returns the *tensor.OutOfMemoryError (through
// tensor.Catch) naming the op and the bytes, having changed no parameter;
// then the model, optimizer and batches move to the CPU and training goes
// on there, the loss going down.
func TestDeviceOutOfMemoryToCPU(t *testing.T) {
	d := tensortest.Register(t, testDev)
	s := newMemRun(t, testDev)
	st, _ := tensor.MemoryStats(testDev)
	d.SetFaults(tensortest.Faults{Memory: st.InUse + 4096})
	before := make([][]float32, 0)
	for _, v := range Params(s.m) {
		before = append(before, hostOf(t, v.value))
	}
	_, err := s.step()
	var oom *tensor.OutOfMemoryError
	if !errors.As(err, &oom) {
		t.Fatalf("a step on a full device: %v", err)
	}
	if !strings.HasPrefix(oom.Op, "nn: ") && !strings.HasPrefix(oom.Op, "tensor: ") || oom.Requested <= 4096 || oom.Device != testDev || oom.InUse < st.InUse {
		t.Errorf("the error %+v", oom)
	}
	t.Logf("step on the device: %v", err)
	for i, v := range Params(s.m) {
		if !slices.Equal(hostOf(t, v.value), before[i]) {
			t.Errorf("parameter %d changed by the failed step", i)
		}
	}
	d.SetFaults(tensortest.Faults{})
	s.toCPU(t)
	var losses []float32
	for i := range 30 {
		l, err := s.step()
		if err != nil {
			t.Fatalf("step %d on the CPU: %v", i, err)
		}
		losses = append(losses, l)
	}
	for _, v := range Params(s.m) {
		if v.value.Device() != tensor.CPU || v.Grad().Device() != tensor.CPU {
			t.Fatalf("a parameter on %v after To(CPU)", v.value.Device())
		}
	}
	mean := func(l []float32) (m float32) {
		for _, v := range l {
			m += v
		}
		return m / float32(len(l))
	}
	if a, b := mean(losses[:3]), mean(losses[27:]); !(b < a/2) {
		t.Errorf("the loss on the CPU went from %v to %v (first and last epoch)", a, b)
	}
}
