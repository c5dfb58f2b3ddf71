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
	w, b := convWeights("NewConvTranspose2D", cin, cout, k, p.Groups, true, r, k, k)
	return &ConvTranspose2D{W: w, B: b, P: p}
}

// Forward implements Module.
func (c *ConvTranspose2D) Forward(tp *Tape, x *Var) *Var { return tp.ConvTranspose2D(x, c.W, c.B, c.P) }

// State implements Module: weight and bias.
func (c *ConvTranspose2D) State(prefix string, f func(string, *Var)) {
	weightBiasState(prefix, f, c.W, c.B)
}

// SetTraining implements Module.
func (c *ConvTranspose2D) SetTraining(bool) {}

// Conv1D returns the convolution of x [N, C, L] with w [Cout, C/groups, k]
// plus b [Cout] (b may be nil), computed by tensor.Conv1D.
func (tp *Tape) Conv1D(x, w, b *Var, p tensor.Conv1DParams) *Var {
	const op = "Conv1D"
	tp.use(op, "x", x)
	tp.use(op, "weight", w)
	tp.useOpt(op, "bias", b)
	s := tensor.Conv1DShape(x.value, w.value, p)
	y := tp.allocOn(deviceOf(op, x.value, w.value, value(b)), s[:]...)
	tensor.Conv1DInto(y, x.value, w.value, value(b), p)
	out, nd := tp.result(y, backConv1D, x, w, b)
	if nd != nil {
		nd.conv = tensor.ConvParams{Stride: [2]int{1, p.Stride}, Padding: [2]int{0, p.Padding},
			Dilation: [2]int{1, p.Dilation}, Groups: p.Groups, PaddingMode: p.PaddingMode}
	}
	return out
}

func backConv1D(tp *Tape, n *node) {
	x, w, b := n.in[0], n.in[1], n.in[2]
	g := n.out.grad
	c := n.conv
	p := tensor.Conv1DParams{Stride: c.Stride[1], Padding: c.Padding[1], Dilation: c.Dilation[1], Groups: c.Groups, PaddingMode: c.PaddingMode}
	if x.requires {
		dx, add := tp.gradFor(x)
		tensor.Conv1DBackwardInputInto(dx, g, w.value, p)
		tp.flush(x, dx, add)
	}
	if w.requires {
		dw, add := tp.gradFor(w)
		tensor.Conv1DBackwardWeightInto(dw, g, x.value, p)
		tp.flush(w, dw, add)
	}
	tp.channelBiasGrad(b, tp.view(g, g.Dim(0), g.Dim(1), 1, g.Dim(2)))
}

// Conv1D is a 1-D convolution with weight W [Cout, Cin/groups, k] and bias
// B [Cout] (nil for none), as PyTorch's nn.Conv1d.
type Conv1D struct {
	W, B *Var
	P    tensor.Conv1DParams
}

// NewConv1D returns a Conv1D layer with kernels of size k, initialized as
// PyTorch's: uniform in ±1/√(Cin/groups·k), drawn from r (not nil).
func NewConv1D(cin, cout, k int, p tensor.Conv1DParams, r *rand.Rand) *Conv1D {
	w, b := convWeights("NewConv1D", cin, cout, k, p.Groups, false, r, k)
	return &Conv1D{W: w, B: b, P: p}
}

// convWeights checks a convolution layer's sizes (panicking as fn) and
// returns its parameters initialized as PyTorch's, uniform in ±1/√fanIn
// (the bias too; zero when the fan-in is): the weight [cout, cin/groups,
// kernel...], or [cin, cout/groups, kernel...] when transposed, whose
// fan-in PyTorch takes from its second axis; the bias [cout].
func convWeights(fn string, cin, cout, k, groups int, transposed bool, r *rand.Rand, kernel ...int) (w, b *Var) {
	if cin < 0 || cout < 0 || k < 0 {
		panic(fmt.Sprintf("nn: %s: negative size cin=%d cout=%d k=%d", fn, cin, cout, k))
	}
	mustRand(fn, r)
	groups = max(groups, 1)
	if cin%groups != 0 || cout%groups != 0 {
		panic(fmt.Sprintf("nn: %s: %d and %d channels do not split into %d groups", fn, cin, cout, groups))
	}
	shape := append([]int{cout, cin / groups}, kernel...)
	if transposed {
		shape[0], shape[1] = cin, cout/groups
	}
	fanIn := shape[1]
	for _, n := range kernel {
		fanIn *= n
	}
	wt, bt := tensor.New(shape...), tensor.New(cout)
	bound := fanBound(fanIn)
	Uniform(wt, -bound, bound, r)
	Uniform(bt, -bound, bound, r)
	return NewParam(wt), NewParam(bt)
}

// Forward implements Module.
func (c *Conv1D) Forward(tp *Tape, x *Var) *Var { return tp.Conv1D(x, c.W, c.B, c.P) }

// State implements Module: weight and bias.
func (c *Conv1D) State(prefix string, f func(string, *Var)) { weightBiasState(prefix, f, c.W, c.B) }

// SetTraining implements Module.
func (c *Conv1D) SetTraining(bool) {}

// weightBiasState is the State of a layer with a weight and a bias (nil
// for none).
func weightBiasState(prefix string, f func(string, *Var), w, b *Var) {
	f(prefix+"weight", w)
	if b != nil {
		f(prefix+"bias", b)
	}
}

// AdaptiveAvgPool2D returns the means of x [..., H, W] over the adaptive
// windows of output size out, computed by tensor.AdaptiveAvgPool2D (on
// x's device).
func (tp *Tape) AdaptiveAvgPool2D(x *Var, out [2]int) *Var {
	tp.use("AdaptiveAvgPool2D", "x", x)
	y := tp.allocOn(x.value.Device(), adaptiveShape("AdaptiveAvgPool2D", x.value, out)...)
	tensor.AdaptiveAvgPool2DInto(y, x.value)
	r, _ := tp.result(y, backAdaptiveAvgPool2D, x)
	return r
}

// adaptiveShape is x's shape with the last two axes out.
func adaptiveShape(op string, x *tensor.Tensor, out [2]int) []int {
	s := x.Shape()
	if len(s) < 2 || out[0] < 0 || out[1] < 0 {
		panic(fmt.Sprintf("nn: %s: input of shape %v and output size %v: want [..., H, W] and sizes >= 0", op, s, out))
	}
	s[len(s)-2], s[len(s)-1] = out[0], out[1]
	return s
}

func backAdaptiveAvgPool2D(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.AdaptiveAvgPool2DBackwardInto(dx, n.out.grad)
	tp.flush(x, dx, add)
}

// AdaptiveMaxPool2D returns the maxima of x [..., H, W] over the adaptive
// windows of output size out, computed by tensor.AdaptiveMaxPool2D (on
// x's device); the backward pass routes each gradient to its window's maximum.
func (tp *Tape) AdaptiveMaxPool2D(x *Var, out [2]int) *Var {
	tp.use("AdaptiveMaxPool2D", "x", x)
	s := adaptiveShape("AdaptiveMaxPool2D", x.value, out)
	y, idx := tp.allocOn(x.value.Device(), s...), tp.allocOn(x.value.Device(), s...)
	tensor.AdaptiveMaxPool2DInto(y, idx, x.value)
	r, nd := tp.result(y, backAdaptiveMaxPool2D, x)
	if nd != nil {
		nd.saved[0] = idx
	}
	return r
}

func backAdaptiveMaxPool2D(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.AdaptiveMaxPool2DBackwardInto(dx, n.out.grad, n.saved[0])
	tp.flush(x, dx, add)
}

// Pad returns x padded as tensor.Pad(x, pads, mode, value) (PyTorch's
// F.pad; on x's device); the backward pass is tensor.PadBackward.
func (tp *Tape) Pad(x *Var, pads []int, mode tensor.PadMode, value float32) *Var {
	tp.use("Pad", "x", x)
	y := tensor.Pad(x.value, pads, mode, value)
	r, nd := tp.result(y, backPad, x)
	if nd != nil {
		nd.axes, nd.idx[0] = append([]int(nil), pads...), int(mode)
	}
	return r
}

func backPad(tp *Tape, n *node) {
	x := n.in[0]
	dx, add := tp.gradFor(x)
	tensor.PadBackwardInto(dx, n.out.grad, n.axes, tensor.PadMode(n.idx[0]))
	tp.flush(x, dx, add)
}

// AdaptiveAvgPool2D pools the last two axes to Out, as PyTorch's
// nn.AdaptiveAvgPool2d.
type AdaptiveAvgPool2D struct {
	stateless
	Out [2]int
}

// Forward implements Module.
func (m *AdaptiveAvgPool2D) Forward(tp *Tape, x *Var) *Var { return tp.AdaptiveAvgPool2D(x, m.Out) }

// AdaptiveMaxPool2D pools the last two axes to Out, as PyTorch's
// nn.AdaptiveMaxPool2d.
type AdaptiveMaxPool2D struct {
	stateless
	Out [2]int
}

// Forward implements Module.
func (m *AdaptiveMaxPool2D) Forward(tp *Tape, x *Var) *Var { return tp.AdaptiveMaxPool2D(x, m.Out) }
