package nn

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// ringGraph returns the normalized adjacency of an n-node ring with a
// chord 0-2 and one isolated node (n-1 is left out of the ring).
func ringGraph(n int) *tensor.CSR {
	var r, c []int
	var v []float32
	for i := range n - 1 {
		j := (i + 1) % (n - 1)
		r, c, v = append(r, i, j), append(c, j, i), append(v, 1, 1)
	}
	r, c, v = append(r, 0, 2), append(c, 2, 0), append(v, 0.5, 0.5)
	return tensor.GCNNormalize(tensor.CSRFromCOO(n, n, r, c, v))
}

// TestGraphConv checks GraphConv's forward against Â·(x·Wᵀ) + B in
// float64, its gradients against finite differences (SpMM's are hostOpGradCases'), its
// state names and its panics.
func TestGraphConv(t *testing.T) {
	r := rand.New(rand.NewPCG(111, 112))
	adj := ringGraph(7)
	g := NewGraphConv(adj, 4, 3, r)
	tensor.CopyInto(g.B.value, tensor.RandN(r, 3)) // a nonzero bias
	x := tensor.RandN(r, 7, 4)
	tp := NewTape()
	y := g.Forward(tp, tp.Const(x)).Value()
	dense := make([]float64, 49)
	for i := range 7 {
		for k := adj.RowPtr[i]; k < adj.RowPtr[i+1]; k++ {
			dense[i*7+adj.ColIdx[k]] = float64(adj.Val[k])
		}
	}
	for i := range 7 {
		for o := range 3 {
			w := float64(g.B.value.At(o))
			for j := range 7 {
				var xw float64
				for k := range 4 {
					xw += float64(x.At(j, k)) * float64(g.W.value.At(o, k))
				}
				w += dense[i*7+j] * xw
			}
			if got := float64(y.At(i, o)); math.Abs(got-w) > 1e-5*(1+math.Abs(w)) {
				t.Fatalf("y[%d, %d] = %v, want %v", i, o, got, w)
			}
		}
	}
	xv := NewParam(x)
	gradCheckVars(t, "GraphConv", append(Params(g), xv), func(tp *Tape) *Var { return tp.Tanh(g.Forward(tp, xv)) }, 0)

	var names []string
	g.State("conv.", func(name string, _ *Var) { names = append(names, name) })
	if !slices.Equal(names, []string{"conv.lin.weight", "conv.bias"}) {
		t.Errorf("state names %v", names)
	}
	bad := &GraphConv{W: g.W, B: g.B}
	if msg := panicMessage(func() { tp := NewTape(); bad.Forward(tp, tp.Const(x)) }); msg != "nn: GraphConv: adjacency -1×-1 (nil: -1) and x of shape [7 4] (want square, [nodes in])" {
		t.Errorf("nil adjacency: panic %q", msg)
	}
	if msg := panicMessage(func() { tp := NewTape(); g.Forward(tp, tp.Const(tensor.New(6, 4))) }); msg != "nn: GraphConv: adjacency 7×7 (nil: -1) and x of shape [6 4] (want square, [nodes in])" {
		t.Errorf("wrong node count: panic %q", msg)
	}
}
