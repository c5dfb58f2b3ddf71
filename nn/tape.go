package nn

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/lanesgo/lanes/tensor"
)

// Var is a tensor taking part in a computation: a value and, once a
// backward pass has reached it, its gradient.
//
// Parameters (NewParam) live as long as the model and accumulate their
// gradient across backward passes until the optimizer's ZeroGrad. Every
// other Var (constants included) belongs to the Tape that made it and, like
// its value and gradient, is valid until that tape's Reset: the tape reuses
// their storage for the next step. An operation given a Var from an earlier
// step panics, naming the step the Var was made in and the tape's step.
type Var struct {
	value, grad *tensor.Tensor
	gradOK      bool // grad holds a current gradient
	// reluMasked says that grad is already zero wherever the ReLU that
	// made this value output zero (see MaxPool2D), so that the ReLU's
	// backward may skip its mask.
	reluMasked bool
	requires   bool // gradients flow to this Var
	param      bool
	// noDecay marks an embedding table, which DecayGroups leaves out of
	// weight decay although it is a matrix.
	noDecay bool
	tape    *Tape
	gen     uint64 // the tape's step when it made this Var; never changes
}

// NewParam returns a parameter holding a contiguous copy of t: a leaf that
// requires a gradient.
func NewParam(t *tensor.Tensor) *Var {
	if t == nil {
		panic("nn: NewParam: nil tensor")
	}
	return &Var{value: t.Clone(), requires: true, param: true}
}

// Value returns v's value. It panics, naming v's step, when v belongs to a
// tape that has been Reset since v was made: its storage is the new step's.
func (v *Var) Value() *tensor.Tensor {
	v.live("Var.Value")
	return v.value
}

// stale reports whether v is a tape's Var from before its last Reset
// (parameters and constants of no tape never are).
func (v *Var) stale() bool { return !v.param && v.tape != nil && v.gen != v.tape.gen }

// live panics when v is nil or a Var of an earlier step of its tape.
func (v *Var) live(op string) {
	switch {
	case v == nil:
		panic(fmt.Sprintf("nn: %s: nil Var", op))
	case v.stale():
		panic(fmt.Sprintf("nn: %s: a Var made in step %d read after the tape's Reset (it is in step %d): its storage belongs to the new step", op, v.gen, v.tape.gen))
	}
}

// Grad returns v's gradient, or nil when no backward pass has reached v
// since it was made (or, for a parameter, since its gradient was zeroed).
// It panics as Value does for a Var of an earlier step.
func (v *Var) Grad() *tensor.Tensor {
	v.live("Var.Grad")
	if !v.gradOK {
		return nil
	}
	return v.grad
}

// RequiresGrad reports whether gradients flow to v.
func (v *Var) RequiresGrad() bool { return v.requires }

// ZeroGrad forgets v's gradient: the next backward pass writes it instead
// of adding to it, and Grad returns nil until then. It costs no pass over
// memory.
func (v *Var) ZeroGrad() { v.gradOK = false }

// Shape returns the shape of v's value (it panics as Value does).
func (v *Var) Shape() []int {
	v.live("Var.Shape")
	return v.value.Shape()
}

// Device returns the device of v's value (it panics as Value does): where
// the operations on v run (see To).
func (v *Var) Device() tensor.Device {
	v.live("Var.Device")
	return v.value.Device()
}

// Tape records the operations of one step (a forward pass) so that Backward
// can compute gradients, and owns the storage of the values and gradients
// it makes. Call Reset at the start of each step: the tape then hands out
// the same buffers again, so a training loop that repeats the same
// operations on the same shapes allocates no tensor storage after its first
// step.
//
// The operations run on the device of their operands, where the tape
// allocates their values and gradients (a model moved with To takes its
// forward and backward passes there; the batch must be copied there too:
// operands on two devices panic, naming the operation). On a device the
// tape reuses its device buffers in the same way, so a repeated step asks
// the device for no new memory.
//
// With gradients off (SetGrad(false)), operations record nothing: use it for
// evaluation. A Tape is not safe for concurrent use; the operations
// themselves use every core.
type Tape struct {
	nodes []node
	bufs  []slot
	views []viewSlot
	// vars is the block the step's Vars are cut from (see newVar).
	vars     []Var
	nbuf     int
	nview    int
	nvar     int // Vars made in this step
	lastVars int // Vars made in the previous step
	gen      uint64
	noGrad   bool
	consumed bool
}

// slot is one buffer of the tape: host storage (buf) or device storage
// (mem, a flat tensor on a device), and t, the tensor last handed out over
// it.
type slot struct {
	buf []float32
	mem *tensor.Tensor
	t   *tensor.Tensor
}

// viewSlot is a reshaped view the tape handed out: t, of src.
type viewSlot struct{ src, t *tensor.Tensor }

// node is one recorded operation: how to send the gradient of out back to
// its inputs, and what it saved for that.
type node struct {
	back  func(tp *Tape, n *node)
	out   *Var
	in    [3]*Var
	saved [3]*tensor.Tensor
	f     [2]float32
	relu  bool // the output went through a ReLU (a fused Conv2D's)
	act   Act
	conv  tensor.ConvParams
	pool  tensor.PoolParams
	norm  tensor.NormStats
	dims  int
	idx   [4]int // integer arguments: axis, start, end, step (Slice, Concat's pieces)
	axes  []int  // Permute's axes, the reductions' kept shape
	seed  uint64 // Dropout's
	// sparse is SpMM's matrix.
	sparse *tensor.CSR
}

// varBlock is the smallest block of Vars newVar allocates.
const varBlock = 8

// NewTape returns an empty tape with gradients on.
func NewTape() *Tape { return &Tape{gen: 1} }

// SetGrad turns recording on or off and returns the previous setting. With
// recording off, results do not require gradients and Backward has nothing
// to run.
func (tp *Tape) SetGrad(on bool) (prev bool) {
	prev = !tp.noGrad
	tp.noGrad = !on
	return prev
}

// Reset forgets the recorded operations and makes the tape's values and
// gradients free for reuse, starting the tape's next step. Vars made before
// the Reset (other than parameters) must not be used after it: an operation
// given one panics.
func (tp *Tape) Reset() {
	tp.nodes = tp.nodes[:0]
	tp.lastVars = tp.nvar
	tp.nbuf, tp.nview, tp.nvar = 0, 0, 0
	tp.vars = nil
	tp.gen++
	tp.consumed = false
}

// Const wraps t as a Var that requires no gradient (an input or a target).
// t is used as is: it must stay unchanged until the step's Backward. Like
// every Var the tape makes, the result is valid until the tape's Reset.
func (tp *Tape) Const(t *tensor.Tensor) *Var {
	if tp == nil {
		panic("nn: Const: nil Tape")
	}
	if t == nil {
		panic("nn: Const: nil tensor")
	}
	v := tp.newVar()
	v.value = t
	return v
}

// alloc returns an uninitialized contiguous host tensor of the given shape
// from the tape's storage (allocOn for a device).
func (tp *Tape) alloc(shape ...int) *tensor.Tensor { return tp.allocOn(tensor.CPU, shape...) }

// allocOn returns an uninitialized contiguous tensor of the given shape on
// dev from the tape's storage: the buffer the same call had in the
// previous step when it is on dev and large enough, else a new one (host
// buffers get a quarter more room, so that a slightly larger step reuses
// them; device buffers are exact). A device that cannot provide the
// memory makes it panic, naming the size (with the
// *tensor.OutOfMemoryError when it has too little: tensor.Catch).
func (tp *Tape) allocOn(dev tensor.Device, shape ...int) *tensor.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if tp.nbuf == len(tp.bufs) {
		tp.bufs = append(tp.bufs, slot{})
	}
	s := &tp.bufs[tp.nbuf]
	tp.nbuf++
	if dev == tensor.CPU {
		s.mem = nil // a device buffer of an earlier step (the model moved) goes
		if cap(s.buf) < n {
			s.buf = make([]float32, n, n+n/4)
			s.t = nil
		}
		if s.t == nil || s.t.Device() != dev || !sameShape(s.t, shape) {
			// A copy, so that shape (often a caller's array) does not escape.
			s.t = tensor.FromSlice(s.buf[:n], slices.Clone(shape)...)
		}
		return s.t
	}
	if s.mem == nil || s.mem.Device() != dev || s.mem.Len() < n {
		s.mem, s.t = nil, nil // the old buffer may go before the new one comes
		mem, err := tensor.NewOn(dev, n)
		if err != nil {
			panic(allocFailure("nn: Tape", fmt.Sprintf("allocating %d bytes for a tensor of shape %v on %v", 4*n, slices.Clone(shape), dev), err))
		}
		s.mem = mem
	}
	if s.t == nil || s.t.Device() != dev || !sameShape(s.t, shape) {
		s.t = s.mem.Slice(0, 0, n, 1).Reshape(slices.Clone(shape)...)
	}
	return s.t
}

// allocFailure is the panic value of nn code (op) that could not get
// device memory for what where says: the *tensor.OutOfMemoryError, naming
// them, when the device had too little (tensor.Catch recovers it), else
// the message "op: where: err".
func allocFailure(op, where string, err error) any {
	if oom, ok := tensor.AsOutOfMemory(err, op, where); ok {
		return oom
	}
	return fmt.Sprintf("%s: %s: %v", op, where, err)
}

// view returns x reshaped to shape (of x's length), sharing its storage,
// and reuses the header of the previous step when it matches: on the host
// when it views the same elements, on a device when x is the same tensor
// (the tape's buffers keep their headers across steps).
func (tp *Tape) view(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	if tp.nview == len(tp.views) {
		tp.views = append(tp.views, viewSlot{})
	}
	v := &tp.views[tp.nview]
	tp.nview++
	if v.t != nil && sameShape(v.t, shape) && v.t.Device() == x.Device() {
		if v.src == x {
			return v.t
		}
		if onHost(x) && x.Len() > 0 && unsafe.SliceData(v.t.Data()) == unsafe.SliceData(x.Data()) {
			v.src = x
			return v.t
		}
	}
	if onHost(x) {
		v.t = tensor.FromSlice(x.Data(), slices.Clone(shape)...)
	} else {
		v.t = x.Reshape(slices.Clone(shape)...)
	}
	v.src = x
	return v.t
}

// viewLike is view to the shape of like.
func (tp *Tape) viewLike(x, like *tensor.Tensor) *tensor.Tensor {
	var dims [tensor.MaxDims]int
	for i := range like.Dims() {
		dims[i] = like.Dim(i)
	}
	return tp.view(x, dims[:like.Dims()]...)
}

func sameShape(t *tensor.Tensor, shape []int) bool {
	if t.Dims() != len(shape) {
		return false
	}
	for i, d := range shape {
		if t.Dim(i) != d {
			return false
		}
	}
	return true
}

// newVar returns a new Var of the tape's current step. Unlike values and
// gradients, Vars are never reused: a Var from an earlier step that a
// caller still holds keeps the step it was made in, so that use can
// refuse it (a reused Var would carry the new step's number and value).
// They are cut from blocks sized by the previous step's count, so that a
// repeated step allocates one block (40 bytes per Var, a few hundred bytes
// for a model's step) and no other Var storage.
func (tp *Tape) newVar() *Var {
	if len(tp.vars) == cap(tp.vars) {
		n := tp.lastVars - tp.nvar
		if n <= 0 {
			n = varBlock
		}
		tp.vars = make([]Var, 0, n)
	}
	tp.vars = tp.vars[:len(tp.vars)+1]
	tp.nvar++
	v := &tp.vars[len(tp.vars)-1]
	v.tape, v.gen = tp, tp.gen
	return v
}

// use panics unless v can be the operand name of op on tp: v is not nil
// and is a parameter or a Var of tp's current step.
func (tp *Tape) use(op, name string, v *Var) {
	if tp == nil {
		panic(fmt.Sprintf("nn: %s: nil Tape", op))
	}
	if v == nil {
		panic(fmt.Sprintf("nn: %s: nil %s", op, name))
	}
	if v.param {
		return
	}
	if v.tape != tp {
		panic(fmt.Sprintf("nn: %s: %s of shape %v belongs to another tape", op, name, v.value.Shape()))
	}
	if v.stale() {
		panic(fmt.Sprintf("nn: %s: %s of shape %v was made in step %d, before the tape's last Reset (it is in step %d); only parameters outlive a Reset", op, name, v.value.Shape(), v.gen, tp.gen))
	}
}

// useOpt is use for an optional operand: nil is allowed.
func (tp *Tape) useOpt(op, name string, v *Var) {
	if v != nil {
		tp.use(op, name, v)
	}
}

// mustTensor panics when t, the tensor operand name of op, is nil.
func mustTensor(op, name string, t *tensor.Tensor) {
	if t == nil {
		panic(fmt.Sprintf("nn: %s: nil %s", op, name))
	}
}

// result makes the output Var of an operation on ins with value t, and
// records back as its gradient when gradients are on and an input needs
// one. It returns the node to fill in, or nil when nothing was recorded.
func (tp *Tape) result(t *tensor.Tensor, back func(*Tape, *node), ins ...*Var) (*Var, *node) {
	out := tp.newVar()
	out.value = t
	return out, tp.record(out, back, ins...)
}

// record appends a node computing by back a contribution of out's gradient
// to those of ins (at most three), when gradients are on and one of ins
// needs one, and marks out as requiring a gradient then. It returns the
// node to fill in, or nil when nothing was recorded. An operation with
// more inputs (Concat) records a node for each, all with the same out.
func (tp *Tape) record(out *Var, back func(*Tape, *node), ins ...*Var) *node {
	if tp.noGrad || !slices.ContainsFunc(ins, func(v *Var) bool { return v != nil && v.requires }) {
		return nil
	}
	out.requires = true
	tp.nodes = append(tp.nodes, node{back: back, out: out})
	n := &tp.nodes[len(tp.nodes)-1]
	copy(n.in[:], ins)
	return n
}

// Backward computes the gradient of loss, a Var of one element, with
// respect to every Var on the tape that requires one, and adds it to the
// gradients of the parameters. The tape is then consumed: a second
// Backward panics until Reset (use BackwardRetain to run it again).
func (tp *Tape) Backward(loss *Var) { tp.backward("Backward", loss, false, nil) }

// BackwardRetain is Backward that keeps the tape, so that another Backward
// (from the same or another loss) can follow; parameter gradients add up.
func (tp *Tape) BackwardRetain(loss *Var) { tp.backward("BackwardRetain", loss, true, nil) }

// backward runs the backward pass; after, when not nil, is called after
// node i's turn (whether or not its gradient ran), from the last node to
// the first: once node i has had its turn, a parameter whose first use is
// node i has its final gradient (DataParallel's hook).
func (tp *Tape) backward(op string, loss *Var, retain bool, after func(i int)) {
	tp.use(op, "loss", loss)
	if loss.value.Len() != 1 {
		panic(fmt.Sprintf("nn: %s: loss of shape %v is not a single value", op, loss.value.Shape()))
	}
	if tp.consumed {
		panic(fmt.Sprintf("nn: %s: the tape was consumed by an earlier Backward; call BackwardRetain to backpropagate more than once, or Reset to start a new step", op))
	}
	if !loss.requires {
		panic(fmt.Sprintf("nn: %s: the loss does not depend on anything that requires a gradient (were gradients off?)", op))
	}
	for i := range tp.nodes {
		tp.nodes[i].out.gradOK = false
	}
	g, add := tp.gradFor(loss)
	tensor.Fill(g, 1)
	tp.flush(loss, g, add)
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		n := &tp.nodes[i]
		if n.out.gradOK {
			n.back(tp, n)
		}
		if after != nil {
			after(i)
		}
	}
	tp.consumed = !retain
}

// gradFor returns where to write a contribution to v's gradient: v's
// gradient itself when it has none yet (add false), or scratch space whose
// contents flush adds to it.
func (tp *Tape) gradFor(v *Var) (dst *tensor.Tensor, add bool) {
	v.reluMasked = false
	if v.gradOK {
		return tp.like(v.value), true
	}
	if !v.param {
		v.grad = tp.like(v.value)
	} else if v.grad == nil || v.grad.Device() != v.value.Device() {
		dev := v.value.Device()
		g, err := tensor.NewOn(dev, v.value.Shape()...)
		if err != nil {
			panic(allocFailure("nn: Backward", fmt.Sprintf("allocating the gradient of a parameter of shape %v on %v", v.value.Shape(), dev), err))
		}
		v.grad = g
	}
	return v.grad, false
}

// flush completes a contribution written to dst by gradFor.
func (tp *Tape) flush(v *Var, dst *tensor.Tensor, add bool) {
	if add {
		tensor.AddInto(v.grad, v.grad, dst)
		return
	}
	v.gradOK = true
}

// like returns an uninitialized tensor of t's shape, on t's device, from
// the tape.
func (tp *Tape) like(t *tensor.Tensor) *tensor.Tensor {
	var dims [tensor.MaxDims]int
	for i := range t.Dims() {
		dims[i] = t.Dim(i)
	}
	return tp.allocOn(t.Device(), dims[:t.Dims()]...)
}

// onHost reports whether t's elements are in host memory, where nn's host
// code may read them as a slice.
func onHost(t *tensor.Tensor) bool { return t.Device() == tensor.CPU }

// deviceOf returns the device of the operands ts of op (nil ones skipped)
// and panics, naming op and where each operand is, when they are on two
// devices: nothing is copied behind the caller's back (the batch of a
// model moved to a device is copied there with Tensor.To, or by Batches).
func deviceOf(op string, ts ...*tensor.Tensor) tensor.Device {
	dev, seen := tensor.CPU, false
	for _, t := range ts {
		switch {
		case t == nil:
		case !seen:
			dev, seen = t.Device(), true
		case t.Device() != dev:
			panic(mixedDevices(op, slices.Clone(ts)))
		}
	}
	return dev
}

func mixedDevices(op string, ts []*tensor.Tensor) string {
	var b strings.Builder
	for _, t := range ts {
		if t == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v on %v", t.Shape(), t.Device())
	}
	return fmt.Sprintf("nn: %s: operands on two devices (%s); copy the batch to the model's device with Tensor.To (nn.To moves a model)", op, b.String())
}

// hostData returns the contiguous elements of t, a host tensor: the host
// code of an operation must not be given a device tensor, whose Data is a
// copy.
func hostData(t *tensor.Tensor) []float32 {
	if !onHost(t) {
		panic(fmt.Sprintf("nn: internal error: host code given a tensor of shape %v on %v", t.Shape(), t.Device()))
	}
	return t.Data()
}
