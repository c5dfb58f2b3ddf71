package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// This file holds the convolutions beyond Conv2D (transposed, 1-D), the
// adaptive poolings and padding, with their layers.

// ConvTranspose2D returns the transposed convolution of x [N, Cin, H, W]
// with w [Cin, Cout/groups, kh, kw] plus b [Cout] (b may be nil), computed
// by tensor.ConvTranspose2D.
func (tp *Tape) ConvTranspose2D(x, w, b *Var, p tensor.ConvTransposeParams) *Var {
	const op = "ConvTranspose2D"
	tp.use(op, "x", x)
	tp.use(op, "weight", w)
	tp.useOpt(op, "bias", b)
	s := tensor.ConvTranspose2DShape(x.value, w.value, p)
	y := tp.allocOn(deviceOf(op, x.value, w.value, value(b)), s[:]...)
	tensor.ConvTranspose2DInto(y, x.value, w.value, value(b), p)
	out, nd := tp.result(y, backConvTranspose2D, x, w, b)
	if nd != nil {
		nd.conv = tensor.ConvParams{Stride: p.Stride, Padding: p.Padding, Dilation: p.Dilation, Groups: p.Groups}
		nd.idx[0], nd.idx[1] = p.OutputPadding[0], p.OutputPadding[1]
	}
	return out
}

func backConvTranspose2D(tp *Tape, n *node) {
	x, w, b := n.in[0], n.in[1], n.in[2]
	g := n.out.grad
	p := tensor.ConvTransposeParams{Stride: n.conv.Stride, Padding: n.conv.Padding, Dilation: n.conv.Dilation,
		Groups: n.conv.Groups, OutputPadding: [2]int{n.idx[0], n.idx[1]}}
	if x.requires {
		dx, add := tp.gradFor(x)
		tensor.ConvTranspose2DBackwardInputInto(dx, g, w.value, p)
		tp.flush(x, dx, add)
	}
	if w.requires {
		dw, add := tp.gradFor(w)
		tensor.ConvTranspose2DBackwardWeightInto(dw, g, x.value, p)
		tp.flush(w, dw, add)
	}
	tp.channelBiasGrad(b, g)
}

// ConvTranspose2D is a 2-D transposed convolution with weight W [Cin,
// Cout/groups, kh, kw] and bias B [Cout] (nil for none), as PyTorch's
// nn.ConvTranspose2d.
type ConvTranspose2D struct {
	W, B *Var
	P    tensor.ConvTransposeParams
}

// NewConvTranspose2D returns a ConvTranspose2D layer with square kernels
// of size k, initialized as PyTorch's: uniform in ±1/√(Cout/groups·k·k)
// (PyTorch's fan-in of the weight [Cin, Cout/groups, k, k]; the bias zero
// when it is 0), drawn from r, which must not be nil.
func NewConvTranspose2D(cin, cout, k int, p tensor.ConvTransposeParams, r *rand.Rand) *ConvTranspose2D {
	if cin < 0 || cout < 0 || k < 0 {
		panic(fmt.Sprintf("nn: NewConvTranspose2D: negative size cin=%d cout=%d k=%d", cin, cout, k))
	}
	mustRand("NewConvTranspose2D", r)
	groups := max(p.Groups, 1)
	if cin%groups != 0 || cout%groups != 0 {
		panic(fmt.Sprintf("nn: NewConvTranspose2D: %d and %d channels do not split into %d groups", cin, cout, groups))
	}
	w, b := tensor.New(cin, cout/groups, k, k), tensor.New(cout)
	bound := fanBound(cout / groups * k * k)
	Uniform(w, -bound, bound, r)
	Uniform(b, -bound, bound, r)
	return &ConvTranspose2D{W: NewParam(w), B: NewParam(b), P: p}
}

// Forward implements Module.
func (c *ConvTranspose2D) Forward(tp *Tape, x *Var) *Var { return tp.ConvTranspose2D(x, c.W, c.B, c.P) }

// State implements Module: weight and bias.
func (c *ConvTranspose2D) State(prefix string, f func(string, *Var)) {
	f(prefix+"weight", c.W)
	if c.B != nil {
		f(prefix+"bias", c.B)
	}
}

// SetTraining implements Module.
func (c *ConvTranspose2D) SetTraining(bool) {}
