//go:build cudaemu

package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/cudaplugin"
	"github.com/lanesgo/lanes/tensor"
)

// TestBatchesToEmulated trains the Fashion MLP on the emulated CUDA
// device (-tags cudaemu) twice: with Batches.To, whose batches travel
// through pinned staging buffers on the copy stream, each read ahead
// while the previous step runs, and with the synchronous path (the host
// iterator's batches copied by Tensor.To, which waits). The emulated copy
// stream starts each copy 2 ms late, so that a batch used before its copy
// is complete (a missing wait) would differ. The batches and the losses
// must be the same bit for bit, over two epochs (a partial last batch,
// Resets). (The CNN waits for the plugin's Conv2D gradient kernels.)
func TestBatchesToEmulated(t *testing.T) {
	t.Setenv("LANES_CUDAEMU_COPY_DELAY", "2000")
	g, err := cudaplugin.Open(0)
	if err != nil {
		t.Skipf("no emulated device: %v", err)
	}
	defer g.Close()
	dev := g.Device()
	for _, c := range models[:1] { // mlp
		t.Run(c.name, func(t *testing.T) {
			type run struct {
				m   Module
				opt Optimizer
				b   *Batches
				tp  *Tape
			}
			setup := func(async bool) *run {
				r := rand.New(rand.NewPCG(21, 22))
				m := c.model(r)
				const batch, n = 16, 40
				x := tensor.RandN(r, append([]int{n}, c.x[1:]...)...)
				y := tensor.New(n)
				for i := range y.Data() {
					y.Data()[i] = float32(r.IntN(10))
				}
				if err := To(m, dev); err != nil {
					t.Fatal(err)
				}
				b := NewBatches(x, y, batch, r)
				if async {
					if err := b.To(dev); err != nil {
						t.Fatal(err)
					}
					if len(b.dev.slots) != 2 {
						t.Fatalf("Batches.To on the emulated device: %d device buffers, want 2 (asynchronous uploads)", len(b.dev.slots))
					}
				}
				return &run{m: m, opt: NewAdam(Params(m), 1e-3), b: b, tp: NewTape()}
			}
			step := func(s *run, x, y *tensor.Tensor) float32 {
				s.tp.Reset()
				loss := s.tp.CrossEntropy(s.m.Forward(s.tp, s.tp.Const(x)), y)
				s.opt.ZeroGrad()
				s.tp.Backward(loss)
				s.opt.Step()
				return loss.Value().Item()
			}
			async, sync := setup(true), setup(false)
			steps := 0
			for epoch := range 2 {
				for {
					ax, ay, ok := async.b.Next()
					hx, hy, hok := sync.b.Next()
					if ok != hok {
						t.Fatalf("epoch %d: Next ok %v, synchronous %v", epoch, ok, hok)
					}
					if !ok {
						break
					}
					if ax.Device() != dev {
						t.Fatalf("batch on %v", ax.Device())
					}
					sx, sy := onDev(t, hx, dev), onDev(t, hy, dev)
					la, ls := step(async, ax, ay), step(sync, sx, sy)
					if math.Float32bits(la) != math.Float32bits(ls) {
						t.Errorf("epoch %d step %d: loss %v through staging, %v synchronously", epoch, steps, la, ls)
					}
					// The batch as the step read it (the next one is in flight).
					if !slices.Equal(hostOf(t, ax), hx.Data()) || !slices.Equal(hostOf(t, ay), hy.Data()) {
						t.Errorf("epoch %d step %d: the device batch differs from the host's", epoch, steps)
					}
					steps++
				}
				if err := async.b.Err(); err != nil {
					t.Fatal(err)
				}
				async.b.Reset()
				sync.b.Reset()
			}
			if steps != 6 {
				t.Errorf("%d steps, want 6", steps)
			}
			if err := async.b.To(tensor.CPU); err != nil {
				t.Error(err)
			}
		})
	}
}
