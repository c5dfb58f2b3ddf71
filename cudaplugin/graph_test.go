//go:build cudaemu

package cudaplugin

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestEmulatedGraph captures a step of device ops (a MatMul with its
// result, an Add, a CrossEntropy with its error word) on the emulated
// device and replays it: the capture runs nothing (its results hold the
// uninitialised memory's NaNs until the first launch); a replay reads
// its operands where they were at the capture, so new values copied
// there are seen; the temporaries come from the graph's pool, reserved
// before the capture, and a replay asks no memory of the device.
func TestEmulatedGraph(t *testing.T) {
	g := requireGPU(t)
	dev := g.Device()
	r := rand.New(rand.NewPCG(1, 2))
	ha, hb := tensor.RandN(r, 8, 16), tensor.RandN(r, 16, 10)
	a, b := mustDev(t, ha, dev), mustDev(t, hb, dev)
	labels := mustDev(t, tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 8), dev)
	loss := mustDev(t, tensor.New(), dev)
	one := mustDev(t, tensor.Scalar(1), dev) // a host scalar would be uploaded: a copy from Go memory
	step := func() *tensor.Tensor {
		c := tensor.Add(tensor.MatMul(a, b), one)
		tensor.CrossEntropyInto(loss, nil, c, labels)
		return c
	}
	var c *tensor.Tensor
	gr := captureStep(t, g, dev, func() { c = step() })
	if hc := host(t, c); !math.IsNaN(float64(hc.Data()[0])) {
		t.Fatalf("a captured op's result before the graph's launch: %v, want the uninitialised memory's NaN", hc.Data()[0])
	}
	for i := range 3 {
		ha = tensor.RandN(r, 8, 16)
		tensor.CopyInto(a, mustDev(t, ha, dev))
		before, _ := g.Stats()
		if err := gr.Launch(); err != nil {
			t.Fatal(err)
		}
		if err := gr.Err(); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if after, _ := g.Stats(); after.Allocs != before.Allocs || after.Reuses != before.Reuses {
			t.Errorf("replay %d took buffers of the resident pool: %+v, before %+v", i, after, before)
		}
		want := tensor.Add(tensor.MatMul(ha, hb), tensor.Scalar(1))
		got := host(t, c)
		for j, w := range want.Data() {
			if d := math.Abs(float64(got.Data()[j] - w)); d > 1e-4*(1+math.Abs(float64(w))) {
				t.Fatalf("replay %d: element %d: %v, want %v", i, j, got.Data()[j], w)
			}
		}
		wlt, _ := tensor.CrossEntropy(want, tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 8))
		wl := wlt.Item()
		if gl := loss.Item(); math.Abs(float64(gl-wl)) > 1e-5*(1+math.Abs(float64(wl))) {
			t.Fatalf("replay %d: loss %v, want %v", i, gl, wl)
		}
	}
	// A bad label: the replay's error word, read by Err.
	tensor.CopyInto(labels.Slice(0, 3, 4, 1), mustDev(t, tensor.FromSlice([]float32{12}, 1), dev))
	if err := gr.Launch(); err != nil {
		t.Fatal(err)
	}
	if err := gr.Err(); err == nil || !strings.Contains(err.Error(), "12") {
		t.Errorf("a replay with label 12: Err %v, want it named", err)
	}
	// Close gives the graph's pool back to the device (its argument
	// block alone is 4·argFloats bytes).
	before := g.MemStats(dev).Reserved
	if err := gr.Close(); err != nil {
		t.Fatal(err)
	}
	if after := g.MemStats(dev).Reserved; before-after < 4*argFloats {
		t.Errorf("Close freed %d bytes of the graph's pool, want at least %d", before-after, 4*argFloats)
	}
}

// TestEmulatedCaptureRefuses: while the device stream captures, a
// synchronization and a cudaMalloc fail with
// cudaErrorStreamCaptureUnsupported, as on a GPU in the global capture
// mode, and the capture then fails at EndCapture.
func TestEmulatedCaptureRefuses(t *testing.T) {
	g := requireGPU(t)
	dev := g.Device()
	x := mustDev(t, tensor.New(4), dev)
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"Sync", g.Sync},
		{"cudaMalloc", func() error { _, err := tensor.NewOn(dev, 1<<20); return err }},
		{"CopyToHost", func() error { _, err := x.To(tensor.CPU); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := g.Warmup(dev); err != nil {
				t.Fatal(err)
			}
			if err := g.BeginCapture(dev); err != nil {
				t.Fatal(err)
			}
			err := c.do()
			var ce *Error
			if !errors.As(err, &ce) || ce.Code != 900 {
				t.Errorf("%s during a capture: %v, want cudaErrorStreamCaptureUnsupported (900)", c.name, err)
			}
			gr, err := g.EndCapture(dev)
			if !errors.As(err, &ce) || ce.Code != 901 || gr != nil {
				t.Errorf("EndCapture after a %s: %v, %v, want cudaErrorStreamCaptureInvalidated (901) and no graph", c.name, gr, err)
			}
			if err := g.Sync(); err != nil {
				t.Errorf("Sync after the failed capture: %v", err)
			}
		})
	}
}

// captureStep runs step once after g's warm-up (its allocations made
// outside the capture), then again under a capture, and returns the graph.
func captureStep(t *testing.T, g *GPU, dev tensor.Device, step func()) tensor.Graph {
	t.Helper()
	if err := g.Warmup(dev); err != nil {
		t.Fatal(err)
	}
	step()
	if err := g.BeginCapture(dev); err != nil {
		t.Fatal(err)
	}
	step()
	gr, err := g.EndCapture(dev)
	if err != nil {
		t.Fatal(err)
	}
	return gr
}

func mustDev(t *testing.T, x *tensor.Tensor, dev tensor.Device) *tensor.Tensor {
	t.Helper()
	d, err := x.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func host(t *testing.T, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	h, err := x.To(tensor.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestEmulatedGraphLosses captures a step of the losses with options (a
// CrossEntropyWith of [N, C, d] logits with class weights, label
// smoothing and an ignored target, its backward for an upstream gradient
// on the device, a SmoothL1 and its backward with LossNone) and replays
// it on new logits: the losses and gradients are the host's; a replay
// with a label that is no class reports it through Graph.Err.
func TestEmulatedGraphLosses(t *testing.T) {
	g := requireGPU(t)
	dev := g.Device()
	r := rand.New(rand.NewPCG(3, 4))
	hx := tensor.RandN(r, 3, 4, 5)
	hl := tensor.FromSlice([]float32{0, 1, 2, 3, -100, 1, 2, 2, 0, 3, 1, 0, 3, 3, 2}, 3, 5)
	hw := tensor.FromSlice([]float32{0.5, 2, 1, 1.5}, 4)
	ht := tensor.RandN(r, 3, 4, 5)
	hd := tensor.RandN(r, 3, 4, 5)
	x, lab, tg, dn := mustDev(t, hx, dev), mustDev(t, hl, dev), mustDev(t, ht, dev), mustDev(t, hd, dev)
	dloss := mustDev(t, tensor.Scalar(1.5), dev)
	p := tensor.LossParams{Weight: mustDev(t, hw, dev), LabelSmoothing: 0.1}
	hp := tensor.LossParams{Weight: hw, LabelSmoothing: 0.1}
	none := tensor.LossParams{Reduction: tensor.LossNone}
	var out [4]*tensor.Tensor
	step := func() {
		out[0] = tensor.CrossEntropyWith(x, lab, p)
		out[1] = tensor.CrossEntropyWithBackward(dloss, x, lab, p)
		out[2] = tensor.SmoothL1(x, tg, 0.5, none)
		out[3] = tensor.SmoothL1Backward(dn, x, tg, 0.5, none)
	}
	gr := captureStep(t, g, dev, step)
	defer gr.Close()
	for i := range 2 {
		hx = tensor.RandN(r, 3, 4, 5)
		tensor.CopyInto(x, mustDev(t, hx, dev))
		if err := gr.Launch(); err != nil {
			t.Fatal(err)
		}
		if err := gr.Err(); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		want := []*tensor.Tensor{
			tensor.CrossEntropyWith(hx, hl, hp),
			tensor.CrossEntropyWithBackward(tensor.Scalar(1.5), hx, hl, hp),
			tensor.SmoothL1(hx, ht, 0.5, none),
			tensor.SmoothL1Backward(hd, hx, ht, 0.5, none),
		}
		for k, w := range want {
			got := host(t, out[k])
			for j, v := range w.Data() {
				if d := math.Abs(float64(got.Data()[j] - v)); d > 1e-5*(1+math.Abs(float64(v))) {
					t.Fatalf("replay %d: result %d element %d: %v, want %v", i, k, j, got.Data()[j], v)
				}
			}
		}
	}
	tensor.CopyInto(lab.Slice(0, 1, 2, 1), mustDev(t, tensor.FromSlice([]float32{9, 9, 9, 9, 9}, 1, 5), dev))
	if err := gr.Launch(); err != nil {
		t.Fatal(err)
	}
	if err := gr.Err(); err == nil || !strings.Contains(err.Error(), "9") {
		t.Errorf("a replay with label 9: Err %v, want it named", err)
	}
}

// TestEmulatedGraphNAdam captures a NAdam step and runs eager NAdam
// steps of other parameters between the capture and each launch (their
// factors lists are reused from step to step): each replay still
// updates with the factors of its own step, the first launch those of
// the captured step, as the host's NAdamStep does.
func TestEmulatedGraphNAdam(t *testing.T) {
	g := requireGPU(t)
	dev := g.Device()
	r := rand.New(rand.NewPCG(35, 36))
	hp := tensor.NAdamParams{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1, MomentumDecay: 4e-3}
	type run struct {
		ps, gs, m, v []*tensor.Tensor
		steps        []int64
		mu           []float64
	}
	newRun := func(on tensor.Device, hs [][]*tensor.Tensor, step int64) *run {
		var k run
		for _, h := range hs[0] {
			k.ps = append(k.ps, mustDev(t, h, on))
		}
		for _, h := range hs[1] {
			k.gs = append(k.gs, mustDev(t, h, on))
			k.m = append(k.m, mustDev(t, tensor.New(h.Shape()...), on))
			k.v = append(k.v, mustDev(t, tensor.New(h.Shape()...), on))
			k.steps, k.mu = append(k.steps, step), append(k.mu, 1)
		}
		return &k
	}
	values := func() [][]*tensor.Tensor {
		return [][]*tensor.Tensor{{tensor.RandN(r, 4, 3), tensor.RandN(r, 7)}, {tensor.RandN(r, 4, 3), tensor.RandN(r, 7)}}
	}
	a, b := values(), values()
	da, ha := newRun(dev, a, 0), newRun(tensor.CPU, a, 0)
	db := newRun(dev, b, 40) // other step counts: other factors
	step := func(k *run) { tensor.NAdamStep(k.ps, k.gs, k.m, k.v, k.steps, k.mu, hp) }
	gr := captureStep(t, g, dev, func() { step(da) }) // steps 1 and 2 (captured)
	defer gr.Close()
	step(ha)
	step(ha)
	for i := range 3 {
		step(db) // eagerly, between the capture and the launch
		if err := gr.Launch(); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			step(ha)
		}
		for j := range ha.ps {
			same(t, fmt.Sprintf("launch %d: parameter %d", i, j), da.ps[j], ha.ps[j], 1e-5)
		}
		if !slices.Equal(da.steps, ha.steps) || !slices.Equal(da.mu, ha.mu) {
			t.Fatalf("launch %d: step counts %v and μ products %v, want %v and %v", i, da.steps, da.mu, ha.steps, ha.mu)
		}
	}
}
