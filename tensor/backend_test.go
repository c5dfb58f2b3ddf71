package tensor

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// fakeBackend marks the results it computes with 42, or fails.
type fakeBackend struct {
	fail         bool
	matmul, conv int
}

func (f *fakeBackend) MatMul(dst, _, _ *Tensor) error {
	f.matmul++
	if f.fail {
		return errors.New("fake: out of memory")
	}
	Fill(dst, 42)
	return nil
}

func (f *fakeBackend) Conv2D(dst, _, _, _ *Tensor, _ ConvParams) error {
	f.conv++
	if f.fail {
		return errors.New("fake: out of memory")
	}
	Fill(dst, 42)
	return nil
}

// flopsPlacer sends work of at least min FLOPs to the accelerator and
// records what it was asked.
type flopsPlacer struct {
	min  float64
	last dispatch.Work
}

func (p *flopsPlacer) Place(w dispatch.Work) dispatch.Target {
	p.last = w
	if w.FLOPs >= p.min {
		return dispatch.OnGPU
	}
	return dispatch.OnCPU
}

func (p *flopsPlacer) Describe() string { return "test" }

func TestBackendPlacement(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	pl := &flopsPlacer{min: 1e4}
	dispatch.SetPlacer(pl)
	defer dispatch.SetPlacer(nil)
	fb := &fakeBackend{}
	// Without a backend everything stays on the CPU, whatever Place says.
	small, big := RandN(r, 4, 4), RandN(r, 32, 32)
	want := MatMul(big, big)
	SetBackend(fb)
	defer SetBackend(nil)

	if got := MatMul(small, small); got.At(0, 0) == 42 || fb.matmul != 0 {
		t.Errorf("a 4×4 product (%v FLOPs) went to the backend", pl.last.FLOPs)
	}
	if got := MatMul(big, big); got.At(3, 3) != 42 || fb.matmul != 1 {
		t.Errorf("a 32×32 product did not go to the backend")
	}
	if pl.last.Op != dispatch.OpMatMul || pl.last.FLOPs != 2*32*32*32 || pl.last.Bytes != 4*3*32*32 || pl.last.Resident {
		t.Errorf("Place asked %+v", pl.last)
	}
	x, w := RandN(r, 1, 2, 16, 16), RandN(r, 3, 2, 3, 3)
	if got := Conv2D(x, w, nil, ConvParams{}); got.At(0, 0, 0, 0) != 42 || fb.conv != 1 {
		t.Errorf("Conv2D did not go to the backend")
	}
	if pl.last.Op != dispatch.OpConv2D || pl.last.FLOPs != 2*3*196*18 {
		t.Errorf("Place asked %+v", pl.last)
	}
	// A failing backend leaves the work to the CPU.
	fb.fail = true
	dst := New(32, 32)
	MatMulInto(dst, big, big)
	for i, v := range want.Data() {
		if dst.Data()[i] != v {
			t.Fatalf("after a backend error, element %d is %v, want the CPU's %v", i, dst.Data()[i], v)
		}
	}
	SetBackend(nil)
	if got := MatMul(big, big); got.At(3, 3) == 42 {
		t.Error("the removed backend still runs")
	}
}
