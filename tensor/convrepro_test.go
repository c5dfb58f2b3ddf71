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

// TestLayerNormBackwardReproducible: LayerNorm's gamma and beta gradients,
// summed over rows in parts on several threads, are the same bits from
// run to run at a given number of threads (they were added under a lock
// in the order the parts finished).
func TestLayerNormBackwardReproducible(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	r := rand.New(rand.NewPCG(7, 8))
	x, dy := RandN(r, 512, 96), RandN(r, 512, 96)
	p := LayerNormParams{Dims: 1, Gamma: RandN(r, 96), Beta: RandN(r, 96), Eps: 1e-5}
	_, s := LayerNorm(x, p)
	_, dg0, db0 := LayerNormBackward(dy, x, s, p)
	for run := range 20 {
		_, dg, db := LayerNormBackward(dy, x, s, p)
		for i := range 96 {
			if math.Float32bits(dg.Data()[i]) != math.Float32bits(dg0.Data()[i]) || math.Float32bits(db.Data()[i]) != math.Float32bits(db0.Data()[i]) {
				t.Fatalf("run %d: dgamma[%d], dbeta[%d] = %v, %v; first run %v, %v", run, i, i, dg.Data()[i], db.Data()[i], dg0.Data()[i], db0.Data()[i])
			}
		}
	}
}
