package tensortest_test

import (
	"testing"

	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// The suite on the CPU (the reference itself: it checks the suite's cases
// run) and on the stand-in device (the routing of every op to the
// device's families, and the device's reading of views).

func TestConformanceCPU(t *testing.T) { tensortest.TestAll(t, tensor.CPU) }

func TestConformanceHostDevice(t *testing.T) {
	d := tensortest.Register(t, dev)
	tensortest.TestAll(t, dev)
	if c := d.Counts(); c.Offloads != 0 || c.Kernels() == 0 {
		t.Errorf("the suite ran %d family calls on the device, %d of host work", c.Kernels(), c.Offloads)
	}
}
