package nn

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// GroupNorm normalizes x [N, C, ...] over each group of C/groups channels
// of each image, then scales by gamma and shifts by beta per channel ([C];
// either may be nil), as tensor.GroupNorm (eps 0 means 1e-5). It runs
// where tensor.GroupNorm does (the host, or a device with the Norm,
// Elementwise and Reduce families) and allocates its results.
func (tp *Tape) GroupNorm(x, gamma, beta *Var, groups int, eps float32) *Var {
	const op = "GroupNorm"
	tp.use(op, "x", x)
	tp.useOpt(op, "gamma", gamma)
	tp.useOpt(op, "beta", beta)
	p := tensor.GroupNormParams{Groups: groups, Gamma: value(gamma), Beta: value(beta), Eps: eps}
	y, s := tensor.GroupNorm(x.value, p)
	out, _ := tp.result(y, func(tp *Tape, n *node) {
		dx, dg, db := tensor.GroupNormBackward(n.out.grad, x.value, s, p)
		tp.normAdd(x, gamma, beta, dx, dg, db)
	}, x, gamma, beta)
	return out
}

// InstanceNorm is GroupNorm with one group per channel: each (image,
// channel) plane normalized over its spatial elements with its own
// statistics (PyTorch's instance_norm without running statistics).
func (tp *Tape) InstanceNorm(x, gamma, beta *Var, eps float32) *Var {
	tp.use("InstanceNorm", "x", x)
	return tp.GroupNorm(x, gamma, beta, channels("InstanceNorm", x), eps)
}

// RMSNorm divides each row of x's last dims axes (0 means 1) by its root
// mean square √(mean(x²) + eps) and scales it by gamma (of the rows'
// shape; nil means 1), as tensor.RMSNorm (eps 0 means PyTorch's None, the
// float32 epsilon 2⁻²³). It runs on x's device (the Norm family) and
// allocates its results.
func (tp *Tape) RMSNorm(x, gamma *Var, dims int, eps float32) *Var {
	const op = "RMSNorm"
	tp.use(op, "x", x)
	tp.useOpt(op, "gamma", gamma)
	d := max(dims, 1)
	if dims < 0 || d > x.value.Dims() {
		panic(fmt.Sprintf("nn: RMSNorm: %d normalized axes for x of shape %v", dims, x.value.Shape()))
	}
	dev := deviceOf(op, x.value, value(gamma))
	y, rrms := tp.like(x.value), tp.allocOn(dev, x.value.Shape()[:x.value.Dims()-d]...)
	tensor.RMSNormInto(y, rrms, x.value, tensor.RMSNormParams{Dims: d, Gamma: value(gamma), Eps: eps})
	out, nd := tp.result(y, backRMSNorm, x, gamma)
	if nd != nil {
		nd.norm, nd.f[0], nd.dims = tensor.NormStats{InvStd: rrms}, eps, d
	}
	return out
}

func backRMSNorm(tp *Tape, n *node) {
	x, gamma := n.in[0], n.in[1]
	p := tensor.RMSNormParams{Dims: n.dims, Gamma: value(gamma), Eps: n.f[0]}
	ng := tp.normGrads(x, gamma, nil)
	tensor.RMSNormBackwardInto(ng.dx, ng.dg, n.out.grad, x.value, n.norm.InvStd, p)
	ng.flush(tp)
}

// normAdd adds the gradients of a normalization to those of its inputs
// that require one.
func (tp *Tape) normAdd(x, gamma, beta *Var, dx, dg, db *tensor.Tensor) {
	for i, v := range []*Var{x, gamma, beta} {
		if v != nil && v.requires {
			tp.addGrad(v, []*tensor.Tensor{dx, dg, db}[i])
		}
	}
}

// channels returns C of x [N, C, ...], panicking naming op otherwise.
func channels(op string, x *Var) int {
	if x.value.Dims() < 2 {
		panic(fmt.Sprintf("nn: %s: x of shape %v has no channel axis", op, x.value.Shape()))
	}
	return x.value.Dim(1)
}

// GroupNorm is PyTorch's nn.GroupNorm(num_groups, num_channels, eps,
// affine): Tape.GroupNorm with learned per-channel Gamma (weight, 1) and
// Beta (bias, 0), both nil when not affine.
type GroupNorm struct {
	Groups      int
	Gamma, Beta *Var
	Eps         float32 // 0 means 1e-5
}

// NewGroupNorm returns a GroupNorm layer of groups groups over c channels,
// with affine parameters when affine is set (PyTorch's default).
func NewGroupNorm(groups, c int, affine bool) *GroupNorm {
	if groups <= 0 || c%groups != 0 {
		panic(fmt.Sprintf("nn: NewGroupNorm: %d groups for %d channels: want a positive divisor", groups, c))
	}
	g := &GroupNorm{Groups: groups}
	if affine {
		g.Gamma, g.Beta = NewParam(tensor.Ones(c)), NewParam(tensor.New(c))
	}
	return g
}

// Forward implements Module.
func (g *GroupNorm) Forward(tp *Tape, x *Var) *Var {
	return tp.GroupNorm(x, g.Gamma, g.Beta, g.Groups, g.Eps)
}

// State implements Module: weight and bias when affine.
func (g *GroupNorm) State(prefix string, f func(string, *Var)) {
	affineState(prefix, f, g.Gamma, g.Beta)
}

// SetTraining implements Module.
func (g *GroupNorm) SetTraining(bool) {}

// InstanceNorm2D is PyTorch's nn.InstanceNorm2d(num_features, eps,
// affine) with its default track_running_stats=False: the statistics of
// each (image, channel) plane in training and evaluation alike. Gamma and
// Beta are nil unless affine (PyTorch's default is not).
type InstanceNorm2D struct {
	Gamma, Beta *Var
	Eps         float32 // 0 means 1e-5
}

// NewInstanceNorm2D returns an InstanceNorm2D layer over c channels.
func NewInstanceNorm2D(c int, affine bool) *InstanceNorm2D {
	l := &InstanceNorm2D{}
	if affine {
		l.Gamma, l.Beta = NewParam(tensor.Ones(c)), NewParam(tensor.New(c))
	}
	return l
}

// Forward implements Module.
func (l *InstanceNorm2D) Forward(tp *Tape, x *Var) *Var {
	return tp.InstanceNorm(x, l.Gamma, l.Beta, l.Eps)
}

// State implements Module: weight and bias when affine.
func (l *InstanceNorm2D) State(prefix string, f func(string, *Var)) {
	affineState(prefix, f, l.Gamma, l.Beta)
}

// SetTraining implements Module.
func (l *InstanceNorm2D) SetTraining(bool) {}

// RMSNorm is PyTorch's nn.RMSNorm(normalized_shape, eps=None,
// elementwise_affine=True): Tape.RMSNorm over the trailing shape it was
// made for with a learned Gamma (weight, 1; nil when not affine).
type RMSNorm struct {
	Gamma *Var
	Dims  int     // the normalized trailing axes
	Eps   float32 // 0 means the float32 epsilon 2⁻²³ (PyTorch's None)
}

// NewRMSNorm returns an RMSNorm over trailing axes of the given shape.
func NewRMSNorm(affine bool, shape ...int) *RMSNorm {
	if len(shape) == 0 {
		panic("nn: NewRMSNorm: no normalized shape")
	}
	l := &RMSNorm{Dims: len(shape)}
	if affine {
		l.Gamma = NewParam(tensor.Ones(shape...))
	}
	return l
}

// Forward implements Module.
func (l *RMSNorm) Forward(tp *Tape, x *Var) *Var { return tp.RMSNorm(x, l.Gamma, l.Dims, l.Eps) }

// State implements Module: weight when affine.
func (l *RMSNorm) State(prefix string, f func(string, *Var)) { affineState(prefix, f, l.Gamma, nil) }

// SetTraining implements Module.
func (l *RMSNorm) SetTraining(bool) {}

// affineState names a normalization's weight and bias (those not nil).
func affineState(prefix string, f func(string, *Var), gamma, beta *Var) {
	if gamma != nil {
		f(prefix+"weight", gamma)
	}
	if beta != nil {
		f(prefix+"bias", beta)
	}
}
