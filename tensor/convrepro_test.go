package tensor

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestConv2DBackwardWeightReproducible checks that the weight gradient,
// whose parts the threads compute side by side, is the same bit for bit
// from run to run at a given number of threads (4 here, where parts
// finishing in a different order used to round differently), for the
// plain and the transposed (k < output channels) gradient.
func TestConv2DBackwardWeightReproducible(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name string
		x, w []int
	}{
		{"k>=cout", []int{16, 8, 20, 20}, []int{16, 8, 3, 3}},
		{"k<cout", []int{64, 1, 28, 28}, []int{32, 1, 3, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ConvParams{Padding: [2]int{1, 1}}
			x := RandN(r, c.x...)
			out := Conv2DShape(x, New(c.w...), p)
			dy := RandN(r, out[:]...)
			want := Conv2DBackwardWeight(dy, x, c.w, p).Data()
			for run := range 20 {
				got := Conv2DBackwardWeight(dy, x, c.w, p).Data()
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("run %d: element %d = %v, first run %v", run, i, got[i], want[i])
					}
				}
			}
		})
	}
}
