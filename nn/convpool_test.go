package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestConvPoolFused trains models whose Conv2D layers a MaxPool2D follows
// (FashionCNN; a Conv2D with its ReLU set in its P; one without a ReLU)
// for a few Adam steps with Sequential's Conv2DMaxPool and with the
// separate operations: losses and parameters must agree bit for bit, and
// the fused runs must have used Conv2DMaxPool.
func TestConvPoolFused(t *testing.T) {
	same := tensor.ConvParams{Padding: [2]int{1, 1}}
	sameReLU := tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}
	pool := &MaxPool2D{P: tensor.PoolParams{Kernel: [2]int{2, 2}}}
	models := []struct {
		name  string
		model func(r *rand.Rand) *Sequential
		x     []int
		fused int
	}{
		{"fashion", FashionCNN, []int{16, 1, 28, 28}, 2},
		{"preset", func(r *rand.Rand) *Sequential {
			return NewSequential(NewConv2D(2, 4, 3, sameReLU, r), pool, Flatten{}, NewLinear(4*5*5, 10, r))
		}, []int{6, 2, 10, 11}, 1},
		{"norelu", func(r *rand.Rand) *Sequential {
			return NewSequential(NewConv2D(2, 4, 3, same, r), pool, NewReLU(), NewConv2D(4, 3, 3, same, r), NewReLU(), pool, Flatten{}, NewLinear(3*2*2, 10, r))
		}, []int{6, 2, 9, 9}, 2},
	}
	defer func() { convPoolOn = true }()
	for _, c := range models {
		t.Run(c.name, func(t *testing.T) {
			var losses [2][]float32
			var params [2][]*Var
			for run, on := range []bool{true, false} {
				convPoolOn = on
				r := rand.New(rand.NewPCG(5, 6))
				s := newTrainer(c.model(r), r, c.x...)
				for range 3 {
					losses[run] = append(losses[run], s.step())
				}
				fused := 0
				for _, n := range s.tp.nodes {
					if backPC(n.back) == backPC(backConv2DMaxPool) {
						fused++
					}
				}
				if want := map[bool]int{true: c.fused, false: 0}[on]; fused != want {
					t.Fatalf("convPoolOn=%v: %d Conv2DMaxPool nodes, want %d", on, fused, want)
				}
				params[run] = Params(s.m)
			}
			for i := range losses[0] {
				if math.Float32bits(losses[0][i]) != math.Float32bits(losses[1][i]) {
					t.Fatalf("step %d: loss %v fused, %v not", i, losses[0][i], losses[1][i])
				}
			}
			for i, p := range params[0] {
				a, b := p.Value().Data(), params[1][i].Value().Data()
				for k := range a {
					if math.Float32bits(a[k]) != math.Float32bits(b[k]) {
						t.Fatalf("parameter %d element %d: %v fused, %v not", i, k, a[k], b[k])
					}
				}
			}
		})
	}
}
