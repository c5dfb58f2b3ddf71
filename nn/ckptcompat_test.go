package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
)

// compatOptimizers are the optimizers whose checkpoints, written by the
// code before optimizer state became tensors (commit 861dad9), are kept
// under testdata as ckpt-v1-<name>-<steps>.safetensors.
var compatOptimizers = []struct {
	name string
	make func(ps []*Var) Optimizer
}{
	{"sgd", func(ps []*Var) Optimizer {
		o := NewSGD(ps, 0.05)
		o.Momentum, o.Dampening, o.WeightDecay = 0.9, 0.1, 0.01
		return o
	}},
	{"sgd-nesterov", func(ps []*Var) Optimizer {
		o := NewSGD(ps, 0.05)
		o.Momentum, o.Nesterov = 0.9, true
		return o
	}},
	{"adam", func(ps []*Var) Optimizer {
		o := NewAdam(ps, 1e-2)
		o.Beta1, o.Beta2, o.Eps, o.WeightDecay = 0.8, 0.99, 1e-6, 0.1
		return o
	}},
	{"adamw", func(ps []*Var) Optimizer { return NewAdamW(ps, 1e-2) }},
	{"rmsprop", func(ps []*Var) Optimizer {
		o := NewRMSProp(ps, 1e-2)
		o.Alpha, o.Eps, o.Momentum, o.WeightDecay, o.Centered = 0.9, 1e-6, 0.5, 0.05, true
		return o
	}},
}

// compatModel is the model of those checkpoints: a Linear(4, 3).
func compatModel() *Linear { return NewLinear(4, 3, rand.New(rand.NewPCG(21, 22))) }

// compatSteps runs steps from..to-1 (counted from 0) of the checkpoints'
// training on m: each step gives every parameter a gradient drawn from a
// generator seeded alike, but the bias none in step 0.
func compatSteps(m *Linear, opt Optimizer, from, to int) {
	r := rand.New(rand.NewPCG(23, 24))
	for step := range to {
		opt.ZeroGrad()
		for k, p := range []*Var{m.W, m.B} {
			g := tensor.RandN(r, p.value.Shape()...)
			if step < from || k == 1 && step == 0 {
				continue
			}
			p.grad, p.gradOK = g, true
		}
		if step >= from {
			opt.Step()
		}
	}
}

// compatNote is the caller's metadata of the checkpoints under testdata.
var compatNote = map[string]string{"written-by": "lanes 861dad9, LANES_SIMD=generic"}

// TestCheckpointCompat loads the checkpoints that the code before the
// optimizers' state became tensors wrote (testdata/ckpt-v1-*, made by
// TestGenCompatCheckpoints of that code at the generic SIMD level, a
// Linear(4, 3) trained by compatSteps): LoadCheckpoint takes them, saving
// again gives the same tensors and metadata, and training on from the
// 3-step file for 2 steps gives the 5-step file, bit for bit at the
// generic level on amd64, where they were written (elsewhere the compiler
// may fuse multiply-adds in the generic kernels), else within 1e-6.
func TestCheckpointCompat(t *testing.T) {
	prev, err := dispatch.SetLevel(dispatch.Generic)
	if err != nil {
		t.Fatal(err)
	}
	defer dispatch.SetLevel(prev)
	tol := 0.0
	if runtime.GOARCH != "amd64" {
		tol = 1e-6
	}
	for _, c := range compatOptimizers {
		t.Run(c.name, func(t *testing.T) {
			file := func(steps int) string {
				return filepath.Join("testdata", fmt.Sprintf("ckpt-v1-%s-%d.safetensors", c.name, steps))
			}
			m := compatModel()
			opt := c.make([]*Var{m.W, m.B})
			opt.SetLR(0.5) // the file's replaces it
			meta, err := LoadCheckpoint(file(3), m, opt, nil)
			if err != nil {
				t.Fatal(err)
			}
			if meta["written-by"] != compatNote["written-by"] {
				t.Errorf("metadata %v", meta)
			}
			again := filepath.Join(t.TempDir(), "again.safetensors")
			if err := SaveCheckpoint(again, m, opt, nil, compatNote); err != nil {
				t.Fatal(err)
			}
			sameCheckpoint(t, again, file(3), 0)
			compatSteps(m, opt, 3, 5)
			if err := SaveCheckpoint(again, m, opt, nil, compatNote); err != nil {
				t.Fatal(err)
			}
			sameCheckpoint(t, again, file(5), tol)
		})
	}
}

// sameCheckpoint fails unless the files got and want hold the same
// metadata and tensors of the same names and shapes, their elements
// within tol relative (0: the same bits).
func sameCheckpoint(t *testing.T, got, want string, tol float64) {
	t.Helper()
	gts, gmeta, err := LoadSafetensors(got)
	if err != nil {
		t.Fatal(err)
	}
	wts, wmeta, err := LoadSafetensors(want)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gmeta) != fmt.Sprint(wmeta) {
		t.Errorf("metadata\n%v\nwant\n%v", gmeta, wmeta)
	}
	if len(gts) != len(wts) {
		t.Fatalf("%d tensors, want %d", len(gts), len(wts))
	}
	for i, w := range wts {
		g := gts[i]
		if g.Name != w.Name || !slices.Equal(g.T.Shape(), w.T.Shape()) {
			t.Fatalf("tensor %d: %q of shape %v, want %q of shape %v", i, g.Name, g.T.Shape(), w.Name, w.T.Shape())
		}
		for j, v := range w.T.Data() {
			gv := g.T.Data()[j]
			if tol == 0 && math.Float32bits(gv) != math.Float32bits(v) || math.Abs(float64(gv-v)) > tol*math.Max(1, math.Abs(float64(v))) {
				t.Errorf("%s element %d: %v, want %v", w.Name, j, gv, v)
				break
			}
		}
	}
}
