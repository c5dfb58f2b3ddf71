//go:build cudaemu

package cudaplugin

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestEmulatedGraphSort captures a step of the Sort family's ops (a TopK
// of long rows, whose keys take a scratch buffer, a Median and a CumSum)
// on the emulated device and replays it on new values: each replay gives
// the host's results bit for bit.
func TestEmulatedGraphSort(t *testing.T) {
	g := requireGPU(t)
	dev := g.Device()
	r := rand.New(rand.NewPCG(25, 1))
	x := mustDev(t, tensor.RandN(r, 3, 3000), dev)
	var vals, idx, med, cs *tensor.Tensor
	step := func() {
		vals, idx = tensor.TopK(x, 5, 1, true, true)
		med, _ = tensor.Median(x, 0, false)
		cs = tensor.CumSum(x, 1)
	}
	gr := captureStep(t, g, dev, step)
	defer gr.Close()
	for i := range 2 {
		hx := tensor.RandN(r, 3, 3000)
		tensor.CopyInto(x, mustDev(t, hx, dev))
		if err := gr.Launch(); err != nil {
			t.Fatal(err)
		}
		if err := gr.Err(); err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		wv, wi := tensor.TopK(hx, 5, 1, true, true)
		wm, _ := tensor.Median(hx, 0, false)
		for _, c := range []struct {
			name      string
			got, want *tensor.Tensor
		}{{"TopK values", vals, wv}, {"TopK indices", idx, wi}, {"Median", med, wm}, {"CumSum", cs, tensor.CumSum(hx, 1)}} {
			if got := host(t, c.got).Data(); !slices.Equal(got, c.want.Data()) {
				t.Errorf("replay %d: %s differs from the host's", i, c.name)
			}
		}
	}
}
