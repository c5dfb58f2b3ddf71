package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// SpMM returns a·x for the sparse a (tensor.CSR, a constant: it gets no
// gradient) and x [a.Cols, k] (tensor.SpMM); x's gradient is aᵀ·g
// (tensor.SpMM of a.T(), the transpose made once per call that needs
// it). It runs on x's device (tensor.SpMM's composition there), in the
// tape's buffers.
func (tp *Tape) SpMM(a *tensor.CSR, x *Var) *Var {
	const op = "SpMM"
	tp.use(op, "x", x)
	if a == nil {
		panic("nn: SpMM: nil sparse matrix")
	}
	if x.value.Dims() != 2 {
		tensor.SpMM(a, x.value) // its panic
	}
	y := tp.allocOn(x.value.Device(), a.Rows, x.value.Dim(1))
	tensor.SpMMInto(y, a, x.value)
	out, nd := tp.result(y, backSpMM, x)
	if nd != nil {
		nd.sparse = a
	}
	return out
}

func backSpMM(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.SpMMInto(dx, n.sparse.T(), n.out.grad)
	tp.flush(x, dx, add)
}

// GraphConv is Kipf and Welling's graph convolution (PyTorch Geometric's
// GCNConv): for node features x [nodes, in],
//
//	y = Â·(x·Wᵀ) + B
//
// with Adj = Â the normalized adjacency, a [nodes, nodes] CSR matrix the
// caller sets (GCNNormalize of the graph's adjacency gives Â = D^-½ (A +
// I) D^-½), W [out, in] and B [out]. State names are GCNConv's:
// "lin.weight" and "bias". It runs on the device of x and its parameters
// (SpMM there copies Adj's arrays each call).
type GraphConv struct {
	Adj  *tensor.CSR
	W, B *Var
}

// NewGraphConv returns a GraphConv from in to out features over adj,
// initialized as GCNConv: W Glorot-uniform (±√(6/(in+out))), B zero.
// r must not be nil.
func NewGraphConv(adj *tensor.CSR, in, out int, r *rand.Rand) *GraphConv {
	if in < 0 || out < 0 {
		panic(fmt.Sprintf("nn: NewGraphConv: negative size in=%d out=%d", in, out))
	}
	mustRand("NewGraphConv", r)
	w := tensor.New(out, in)
	if in+out > 0 {
		bound := math.Sqrt(6 / float64(in+out))
		Uniform(w, -bound, bound, r)
	}
	return &GraphConv{Adj: adj, W: NewParam(w), B: NewParam(tensor.New(out))}
}

// Forward implements Module: x holds one row of features per node. It
// panics, naming itself, when Adj is nil or not [nodes, nodes].
func (g *GraphConv) Forward(tp *Tape, x *Var) *Var {
	tp.use("GraphConv", "x", x)
	if g.Adj == nil || g.Adj.Rows != g.Adj.Cols || x.value.Dims() != 2 || x.value.Dim(0) != g.Adj.Cols {
		rows, cols := -1, -1
		if g.Adj != nil {
			rows, cols = g.Adj.Rows, g.Adj.Cols
		}
		panic(fmt.Sprintf("nn: GraphConv: adjacency %d×%d (nil: -1) and x of shape %v (want square, [nodes in])", rows, cols, x.value.Shape()))
	}
	h := tp.SpMM(g.Adj, tp.Linear(x, g.W, nil, Act{}))
	if g.B != nil {
		h = tp.Add(h, g.B)
	}
	return h
}

// State implements Module: GCNConv's names, lin.weight and bias.
func (g *GraphConv) State(prefix string, f func(string, *Var)) {
	f(prefix+"lin.weight", g.W)
	if g.B != nil {
		f(prefix+"bias", g.B)
	}
}

// SetTraining implements Module.
func (g *GraphConv) SetTraining(bool) {}
