package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/lanesgo/lanes/tensor"
)

// Module is a layer or a model: a forward pass, its parameters and buffers
// under the names PyTorch's state_dict gives them, and a training mode.
type Module interface {
	// Forward returns the module's output for x, recording on tp.
	Forward(tp *Tape, x *Var) *Var
	// State calls f for each parameter and buffer, named prefix + name.
	State(prefix string, f func(name string, v *Var))
	// SetTraining switches between training (true) and evaluation mode
	// (false), for the layers that differ (Dropout, BatchNorm2D).
	SetTraining(on bool)
}

// Params returns m's parameters (the Vars that require gradients), in
// State order.
func Params(m Module) []*Var {
	var ps []*Var
	m.State("", func(_ string, v *Var) {
		if v.requires {
			ps = append(ps, v)
		}
	})
	return ps
}

// StateDict returns m's parameters and buffers by name, in State order,
// sharing their storage. It panics, naming the entry, when m is nil or
// gives a nil Var.
func StateDict(m Module) []Named { return stateOf("StateDict", m) }

// newBuffer returns persistent state that is not trained (running
// statistics).
func newBuffer(t *tensor.Tensor) *Var { return &Var{value: t, param: true} }

// stateless is embedded by modules without parameters or modes.
type stateless struct{}

func (stateless) State(string, func(string, *Var)) {}
func (stateless) SetTraining(bool)                 {}

// Linear is x·Wᵀ + B followed by Act: W is [out, in] and B [out] (nil for
// no bias), as PyTorch's nn.Linear.
type Linear struct {
	W, B *Var
	Act  Act
}

// NewLinear returns a Linear layer initialized as PyTorch's: W and B
// uniform in ±1/√in (B zero when in is 0), drawn from r, which must not be
// nil.
func NewLinear(in, out int, r *rand.Rand) *Linear {
	if in < 0 || out < 0 {
		panic(fmt.Sprintf("nn: NewLinear: negative size in=%d out=%d", in, out))
	}
	mustRand("NewLinear", r)
	w, b := tensor.New(out, in), tensor.New(out)
	bound := fanBound(in)
	Uniform(w, -bound, bound, r)
	Uniform(b, -bound, bound, r)
	return &Linear{W: NewParam(w), B: NewParam(b)}
}

// Forward implements Module.
func (l *Linear) Forward(tp *Tape, x *Var) *Var { return tp.Linear(x, l.W, l.B, l.Act) }

// State implements Module: weight and bias.
func (l *Linear) State(prefix string, f func(string, *Var)) {
	f(prefix+"weight", l.W)
	if l.B != nil {
		f(prefix+"bias", l.B)
	}
}

// SetTraining implements Module.
func (l *Linear) SetTraining(bool) {}

// fanBound is PyTorch's bound 1/√fanIn for the default initialization of
// Linear and Conv2D, 0 for a fan-in of 0 (where PyTorch makes it 0 too,
// rather than infinite).
func fanBound(fanIn int) float64 {
	if fanIn == 0 {
		return 0
	}
	return 1 / math.Sqrt(float64(fanIn))
}

// Conv2D is a 2-D convolution with weight W [Cout, Cin/groups, kh, kw] and
// bias B [Cout] (nil for none), as PyTorch's nn.Conv2d. P.ReLU fuses a
// ReLU into the bias pass.
type Conv2D struct {
	W, B *Var
	P    tensor.ConvParams
}

// NewConv2D returns a Conv2D layer with square kernels of size k,
// initialized as PyTorch's: uniform in ±1/√(Cin/groups·k·k) (the bias zero
// when that fan-in is 0), drawn from r, which must not be nil.
func NewConv2D(cin, cout, k int, p tensor.ConvParams, r *rand.Rand) *Conv2D {
	w, b := convWeights("NewConv2D", cin, cout, k, p.Groups, false, r, k, k)
	return &Conv2D{W: w, B: b, P: p}
}

// Forward implements Module.
func (c *Conv2D) Forward(tp *Tape, x *Var) *Var { return tp.Conv2D(x, c.W, c.B, c.P) }

// State implements Module: weight and bias.
func (c *Conv2D) State(prefix string, f func(string, *Var)) {
	f(prefix+"weight", c.W)
	if c.B != nil {
		f(prefix+"bias", c.B)
	}
}

// SetTraining implements Module.
func (c *Conv2D) SetTraining(bool) {}

// MaxPool2D takes the maximum over each window of P.
type MaxPool2D struct {
	stateless
	P tensor.PoolParams
}

// Forward implements Module.
func (m *MaxPool2D) Forward(tp *Tape, x *Var) *Var { return tp.MaxPool2D(x, m.P) }

// AvgPool2D takes the mean over each window of P.
type AvgPool2D struct {
	stateless
	P tensor.PoolParams
}

// Forward implements Module.
func (m *AvgPool2D) Forward(tp *Tape, x *Var) *Var { return tp.AvgPool2D(x, m.P) }

// Flatten reshapes [N, ...] to [N, rest].
type Flatten struct{ stateless }

// Forward implements Module.
func (Flatten) Forward(tp *Tape, x *Var) *Var { return tp.Flatten(x) }

// Activation applies Act elementwise.
type Activation struct {
	stateless
	Act Act
}

// Forward implements Module.
func (a *Activation) Forward(tp *Tape, x *Var) *Var { return tp.Activate(x, a.Act) }

// NewReLU returns a ReLU layer; the other constructors below return the
// other activations.
func NewReLU() *Activation { return &Activation{Act: Act{Kind: ActReLU}} }

// NewLeakyReLU returns a LeakyReLU layer with negative slope alpha.
func NewLeakyReLU(alpha float32) *Activation {
	return &Activation{Act: Act{Kind: ActLeakyReLU, Alpha: alpha}}
}

// NewELU returns an ELU layer.
func NewELU(alpha float32) *Activation { return &Activation{Act: Act{Kind: ActELU, Alpha: alpha}} }

// NewGELU returns a GELU (erf) layer.
func NewGELU() *Activation { return &Activation{Act: Act{Kind: ActGELU}} }

// NewSiLU returns a SiLU layer.
func NewSiLU() *Activation { return &Activation{Act: Act{Kind: ActSiLU}} }

// NewSigmoid returns a Sigmoid layer.
func NewSigmoid() *Activation { return &Activation{Act: Act{Kind: ActSigmoid}} }

// NewTanh returns a Tanh layer.
func NewTanh() *Activation { return &Activation{Act: Act{Kind: ActTanh}} }

// Dropout zeroes each element with probability P in training (scaling the
// others by 1/(1-P)), and is the identity in evaluation. R (which must not
// be nil) is the source of the seeds: each forward pass draws one number
// from it, the seed of the Philox stream that tensor.Dropout takes its
// mask from, so that the masks follow from R's state alone and are the
// same on the CPU and on every device. (Before the device support the
// layer drew one number from R per element; a model seeded as before now
// draws other masks.)
type Dropout struct {
	P        float32
	R        *rand.Rand
	training bool
}

// NewDropout returns a Dropout layer in training mode, drawing from r.
func NewDropout(p float32, r *rand.Rand) *Dropout {
	mustRand("NewDropout", r)
	return &Dropout{P: p, R: r, training: true}
}

// Forward implements Module.
func (d *Dropout) Forward(tp *Tape, x *Var) *Var {
	tp.use("Dropout", "x", x)
	if !d.training {
		return x
	}
	return tp.Dropout(x, d.P, d.R)
}

// State implements Module (Dropout has none).
func (d *Dropout) State(string, func(string, *Var)) {}

// SetTraining implements Module.
func (d *Dropout) SetTraining(on bool) { d.training = on }

// BatchNorm2D normalizes each channel of [N, C, H, W] (or [N, C]) with the
// batch statistics in training, updating the running ones, and with the
// running statistics in evaluation, as PyTorch's nn.BatchNorm2d.
type BatchNorm2D struct {
	Gamma, Beta             *Var
	RunningMean, RunningVar *Var
	Momentum, Eps           float32 // 0 means 0.1 and 1e-5
	training                bool
}

// NewBatchNorm2D returns a BatchNorm2D layer over c channels in training
// mode: gamma 1, beta 0, running mean 0 and variance 1.
func NewBatchNorm2D(c int) *BatchNorm2D {
	return &BatchNorm2D{Gamma: NewParam(tensor.Ones(c)), Beta: NewParam(tensor.New(c)),
		RunningMean: newBuffer(tensor.New(c)), RunningVar: newBuffer(tensor.Ones(c)), training: true}
}

// Forward implements Module.
func (b *BatchNorm2D) Forward(tp *Tape, x *Var) *Var {
	return tp.BatchNorm(x, b.Gamma, b.Beta, b.RunningMean.value, b.RunningVar.value, b.training,
		NormParams{Momentum: b.Momentum, Eps: b.Eps})
}

// State implements Module: weight, bias, running_mean and running_var.
func (b *BatchNorm2D) State(prefix string, f func(string, *Var)) {
	f(prefix+"weight", b.Gamma)
	f(prefix+"bias", b.Beta)
	f(prefix+"running_mean", b.RunningMean)
	f(prefix+"running_var", b.RunningVar)
}

// SetTraining implements Module.
func (b *BatchNorm2D) SetTraining(on bool) { b.training = on }

// LayerNorm normalizes over the trailing shape it was made for, with a
// learned elementwise scale and shift, as PyTorch's nn.LayerNorm.
type LayerNorm struct {
	Gamma, Beta *Var
	Eps         float32 // 0 means 1e-5
}

// NewLayerNorm returns a LayerNorm over trailing axes of the given shape.
func NewLayerNorm(shape ...int) *LayerNorm {
	return &LayerNorm{Gamma: NewParam(tensor.Ones(shape...)), Beta: NewParam(tensor.New(shape...))}
}

// Forward implements Module.
func (l *LayerNorm) Forward(tp *Tape, x *Var) *Var {
	return tp.LayerNorm(x, l.Gamma, l.Beta, NormParams{Dims: l.Gamma.value.Dims(), Eps: l.Eps})
}

// State implements Module: weight and bias.
func (l *LayerNorm) State(prefix string, f func(string, *Var)) {
	f(prefix+"weight", l.Gamma)
	f(prefix+"bias", l.Beta)
}

// SetTraining implements Module.
func (l *LayerNorm) SetTraining(bool) {}

// Embedding maps integer indices (held as float32 in the input's value)
// to rows of W [V, D].
type Embedding struct{ W *Var }

// NewEmbedding returns an Embedding of n rows of size d, normally
// distributed as PyTorch's, drawn from r, which must not be nil.
func NewEmbedding(n, d int, r *rand.Rand) *Embedding {
	if n < 0 || d < 0 {
		panic(fmt.Sprintf("nn: NewEmbedding: negative size n=%d d=%d", n, d))
	}
	mustRand("NewEmbedding", r)
	w := tensor.New(n, d)
	Normal(w, 0, 1, r)
	p := NewParam(w)
	p.noDecay = true
	return &Embedding{W: p}
}

// Forward implements Module.
func (e *Embedding) Forward(tp *Tape, x *Var) *Var {
	tp.use("Embedding", "indices", x)
	return tp.Embedding(x.value, e.W)
}

// State implements Module: weight.
func (e *Embedding) State(prefix string, f func(string, *Var)) { f(prefix+"weight", e.W) }

// SetTraining implements Module.
func (e *Embedding) SetTraining(bool) {}

// Sequential applies its layers in order. Its forward pass fuses a Linear
// without activation followed by an Activation into one Linear with that
// activation, a Conv2D followed by a ReLU into the convolution's fused
// bias+ReLU pass, and a Conv2D (with or without that ReLU) followed by a
// MaxPool2D, where tensor.Conv2DMaxPoolFuses, into Tape.Conv2DMaxPool,
// which never stores the convolution's output; the results are the same
// (but for the order in which a convolution's bias gradient is summed
// when no ReLU follows it), with fewer passes over memory.
type Sequential struct{ Layers []Module }

// NewSequential returns a Sequential of the given layers.
func NewSequential(layers ...Module) *Sequential { return &Sequential{Layers: layers} }

// Forward implements Module.
func (s *Sequential) Forward(tp *Tape, x *Var) *Var {
	tp.use("Sequential", "x", x)
	for i := 0; i < len(s.Layers); i++ {
		var act *Activation
		if i+1 < len(s.Layers) {
			act, _ = s.Layers[i+1].(*Activation)
		}
		switch l := s.Layers[i].(type) {
		case *Linear:
			if act != nil && l.Act.Kind == ActNone {
				x = tp.Linear(x, l.W, l.B, act.Act)
				i++
				continue
			}
		case *Conv2D:
			p, next := l.P, i+1
			if act != nil && act.Act.Kind == ActReLU && !p.ReLU {
				p.ReLU, next = true, i+2
			}
			if pool, ok := layerAt[*MaxPool2D](s.Layers, next); ok && convPoolOn && tensor.Conv2DMaxPoolFuses(x.value, l.W.value, p, pool.P) {
				x = tp.Conv2DMaxPool(x, l.W, l.B, p, pool.P)
				i = next
				continue
			}
			if p.ReLU != l.P.ReLU {
				x = tp.Conv2D(x, l.W, l.B, p)
				i++
				continue
			}
		}
		x = s.Layers[i].Forward(tp, x)
	}
	return x
}

// layerAt returns layers[i] as an L, if i is in range and it is one.
func layerAt[L Module](layers []Module, i int) (L, bool) {
	var l L
	if i < len(layers) {
		l, ok := layers[i].(L)
		return l, ok
	}
	return l, false
}

// State implements Module: each layer's state under its index, as
// PyTorch's nn.Sequential ("0.weight", "0.bias", ...).
func (s *Sequential) State(prefix string, f func(string, *Var)) {
	for i, l := range s.Layers {
		l.State(prefix+strconv.Itoa(i)+".", f)
	}
}

// SetTraining implements Module.
func (s *Sequential) SetTraining(on bool) {
	for _, l := range s.Layers {
		l.SetTraining(on)
	}
}
