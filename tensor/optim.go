package tensor

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/internal/par"
	"github.com/lanesgo/lanes/simd"
)

// The optimizer steps. Each updates every parameter of a model in one
// call (one launch of a multi-tensor kernel on a device): params[i] from
// its gradient grads[i] and its state slots (momentum[i], m[i], ...),
// PyTorch's update rules for optim.SGD, Adam, AdamW and RMSprop. A nil
// grads[i] skips parameter i, as PyTorch skips a parameter whose grad is
// None: neither it nor its state changes.
//
// The lists have one entry per parameter; every tensor is contiguous, of
// its parameter's shape, and all are on one device (the host included:
// no 0-d host tensor beside device ones). A slot list a step does not
// read may be nil (SGD's momentum without Momentum, RMSProp's gradAvg
// unless Centered, its momentum without Momentum). Parameters, gradients
// and slots must not overlap one another. On a device, an error of the
// implementation (out of memory, a sticky error) panics naming the step,
// the number of parameters and the device, after the step counts have
// advanced (see AdamStep).
//
// On the CPU the updates run as a sequence of simd kernels over blocks of
// optBlock elements, spread over the worker pool for large models; each
// element is the float32 arithmetic of its rule as written (Adam's
// divisions by the bias corrections as products by AdamCorrections'
// factors), one rounding an operation but where simd's Axpy fuses a
// multiply-add (at the SIMD levels), so the results are the same at every
// run and thread count for a given SIMD level.

// SGDParams are SGD's hyperparameters (PyTorch's optim.SGD).
type SGDParams struct {
	LR, Momentum, Dampening, WeightDecay float32
	Nesterov                             bool
}

// AdamParams are Adam's and AdamW's hyperparameters (PyTorch's optim.Adam
// and AdamW); Decoupled selects AdamW's decoupled weight decay.
type AdamParams struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	Decoupled                          bool
}

// RMSPropParams are RMSProp's hyperparameters (PyTorch's optim.RMSprop).
type RMSPropParams struct {
	LR, Alpha, Eps, Momentum, WeightDecay float32
	Centered                              bool
}

// SGDStep is one step of stochastic gradient descent with optional
// momentum (Nesterov's or not), dampening and L2 weight decay, as
// PyTorch's optim.SGD, for every parameter i with a gradient:
//
//	g ← g + WeightDecay·p
//	b ← Momentum·b + (1 - Dampening)·g   (b ← g when !started[i])
//	g ← g + Momentum·b if Nesterov, else b
//	p ← p - LR·g
//
// where b is momentum[i], read and written only when Momentum is not 0.
// started[i] then becomes true: it says whether momentum[i] holds a
// buffer yet (false for a new optimizer, as PyTorch's missing
// momentum_buffer).
func SGDStep(params, grads, momentum []*Tensor, started []bool, hp SGDParams) {
	const op = "SGDStep"
	checkStep(op, params, grads, len(started), "started flags")
	if hp.Momentum != 0 || momentum != nil {
		checkSlots(op, params, "momentum", momentum)
	}
	dev := optimDevice(op, params, grads, momentum)
	k := optimOn(op, dev, params)
	optimRan(op, dev, params, k.SGD(params, grads, momentum, started, hp))
	for i, g := range grads {
		started[i] = started[i] || g != nil
	}
}

// AdamStep is one step of Adam (Kingma and Ba) as PyTorch's optim.Adam,
// with bias correction and, when hp.Decoupled is set, AdamW's decoupled
// weight decay (p ← p·(1 - LR·WeightDecay) before the update) instead of
// L2 decay added to the gradient, for every parameter i with a gradient:
//
//	steps[i] ← steps[i] + 1, t = steps[i]
//	m ← β₁m + (1-β₁)g,  v ← β₂v + (1-β₂)g²
//	p ← p - LR/(1-β₁ᵗ) · m/(√v/√(1-β₂ᵗ) + ε)
//
// m and v are m[i] and v[i]. Each parameter keeps its own t, as PyTorch's
// state["step"], so one that had no gradient in the first steps starts
// its bias correction from 1 when it first has one; the bias corrections
// are AdamCorrections'. steps stay on the host.
func AdamStep(params, grads, m, v []*Tensor, steps []int64, hp AdamParams) {
	const op = "AdamStep"
	checkStep(op, params, grads, len(steps), "step counts")
	checkSlots(op, params, "m", m)
	checkSlots(op, params, "v", v)
	dev := optimDevice(op, params, grads, m, v)
	k := optimOn(op, dev, params)
	countedStep(op, dev, params, grads, steps, func() error { return k.Adam(params, grads, m, v, nil, steps, hp) })
}

// countedStep runs a step that counts each parameter's steps: it
// advances steps[i] of every parameter with a gradient, runs the step,
// and takes the counts back when the step fails (a failed step counts
// for no parameter) before panicking with its error (optimRan).
func countedStep(op string, dev Device, params, grads []*Tensor, steps []int64, run func() error) {
	advance := func(by int64) {
		for i, g := range grads {
			if g != nil {
				steps[i] += by
			}
		}
	}
	advance(1)
	if err := run(); err != nil {
		advance(-1)
		optimRan(op, dev, params, err)
	}
}

// AdamCorrections returns the bias corrections of Adam's step t:
// stepSize = LR/(1-β₁ᵗ) and invSqrtBC2 = 1/√(1-β₂ᵗ), computed in float64
// and rounded once. Every device's Adam uses them, so that all round
// alike.
func AdamCorrections(hp AdamParams, t int64) (stepSize, invSqrtBC2 float32) {
	ft := float64(t)
	return float32(float64(hp.LR) / (1 - math.Pow(float64(hp.Beta1), ft))),
		float32(1 / math.Sqrt(1-math.Pow(float64(hp.Beta2), ft)))
}

// RMSPropStep is one step of RMSProp as PyTorch's optim.RMSprop, for
// every parameter i with a gradient:
//
//	g ← g + WeightDecay·p
//	v ← αv + (1-α)g²
//	a ← √(v - ḡ²) + ε with ḡ ← αḡ + (1-α)g if Centered, else √v + ε
//	b ← Momentum·b + g/a and p ← p - LR·b if Momentum > 0, else p ← p - LR·g/a
//
// v, ḡ and b are squareAvg[i], gradAvg[i] and momentum[i].
func RMSPropStep(params, grads, squareAvg, gradAvg, momentum []*Tensor, hp RMSPropParams) {
	const op = "RMSPropStep"
	checkStep(op, params, grads, len(params), "")
	checkSlots(op, params, "squareAvg", squareAvg)
	if hp.Centered || gradAvg != nil {
		checkSlots(op, params, "gradAvg", gradAvg)
	}
	if hp.Momentum > 0 || momentum != nil {
		checkSlots(op, params, "momentum", momentum)
	}
	dev := optimDevice(op, params, grads, squareAvg, gradAvg, momentum)
	k := optimOn(op, dev, params)
	optimRan(op, dev, params, k.RMSProp(params, grads, squareAvg, gradAvg, momentum, hp))
}

// checkStep checks a step's parameters and gradients, and that its
// per-parameter counters (what) number as many as the parameters.
func checkStep(op string, params, grads []*Tensor, counters int, what string) {
	if len(grads) != len(params) {
		panic(fmt.Sprintf("tensor: %s: %d gradients for %d parameters", op, len(grads), len(params)))
	}
	if counters != len(params) {
		panic(fmt.Sprintf("tensor: %s: %d %s for %d parameters", op, counters, what, len(params)))
	}
	for i, p := range params {
		if p == nil {
			panic(fmt.Sprintf("tensor: %s: parameter %d of %d is nil", op, i, len(params)))
		}
		if !p.IsContiguous() {
			panic(fmt.Sprintf("tensor: %s: parameter %d of shape %v is not contiguous", op, i, p.shape))
		}
		if g := grads[i]; g != nil {
			checkSlot(op, i, p, "gradient", g)
		}
	}
}

// checkSlots checks the state slot list name: one tensor for each
// parameter.
func checkSlots(op string, params []*Tensor, name string, slot []*Tensor) {
	if len(slot) != len(params) {
		panic(fmt.Sprintf("tensor: %s: %d %s tensors for %d parameters", op, len(slot), name, len(params)))
	}
	for i, s := range slot {
		if s == nil {
			panic(fmt.Sprintf("tensor: %s: %s of parameter %d is nil", op, name, i))
		}
		checkSlot(op, i, params[i], name, s)
	}
}

// checkSlot checks that s, parameter i's gradient or state, has p's shape
// and is contiguous.
func checkSlot(op string, i int, p *Tensor, name string, s *Tensor) {
	if !slices.Equal(s.shape, p.shape) {
		panic(fmt.Sprintf("tensor: %s: %s of shape %v for parameter %d of shape %v", op, name, s.shape, i, p.shape))
	}
	if !s.IsContiguous() {
		panic(fmt.Sprintf("tensor: %s: %s of parameter %d (shape %v) is not contiguous", op, name, i, s.shape))
	}
}

// optimDevice returns the device of every tensor in the lists (nil ones
// skipped), panicking, naming op, the parameter and the devices, when two
// are on different devices (the host counting as one).
func optimDevice(op string, lists ...[]*Tensor) Device {
	dev, set := CPU, false
	for _, l := range lists {
		for i, t := range l {
			if t == nil {
				continue
			}
			d := t.Device()
			if !set {
				dev, set = d, true
			} else if d != dev {
				panic(fmt.Sprintf("tensor: %s: parameter %d: tensors of shape %v on %v and %v; copy them to one device with To", op, i, t.shape, dev, d))
			}
		}
	}
	return dev
}

// optimRan panics, naming op, the parameters and the device, when the
// implementation returned err: with an *OutOfMemoryError when err is one,
// else with a message.
func optimRan(op string, dev Device, params []*Tensor, err error) {
	if err == nil {
		return
	}
	where := fmt.Sprintf("%d parameters on %v", len(params), dev)
	if oom, ok := AsOutOfMemory(err, "tensor: "+op, where); ok {
		panic(oom)
	}
	panic(fmt.Sprintf("tensor: %s: %s: %v", op, where, err))
}

// optBlock is the block of elements the CPU's updates run over: a
// sequence of simd kernels per block, so that each block of the
// parameter, its gradient and its state is read from memory and written
// back once per step while the intermediate passes stay in L1.
const optBlock = 1024

// blockUpdater is an update of one block of parameter i: its values p,
// gradient g and state slots s, with two scratch blocks of len(p)
// elements in tmp.
type blockUpdater interface {
	update(i int, p, g []float32, s [][]float32, tmp *[2][]float32)
}

// blockJob runs an update over the blocks of the parameters; block b of
// all of them is block b - starts[i] of parameter i, where starts[i] <= b
// < starts[i+1].
type blockJob struct {
	p, g   [][]float32 // each parameter's values and gradient (nil without one)
	state  [][]float32 // parameter i's slot k is state[i*slots+k]
	slots  int
	u      blockUpdater
	starts []int
	// The updaters, kept here so that a step allocates nothing.
	sgd    sgdUpdate
	adam   adamUpdate
	rms    rmsUpdate
	ada    adagradUpdate
	adamax adamaxUpdate
	nadam  nadamUpdate
	radam  radamUpdate
}

// optimScratch is a worker's scratch: the tmp blocks of blockUpdater and
// the slots' blocks it is given.
type optimScratch struct {
	tmp   [2][]float32
	slots [4][]float32
}

// optimJobs holds the jobs of the steps running, and optimTmp the
// workers' scratch.
var (
	optimJobs freelist.Stack[blockJob]
	optimTmp  freelist.Stack[optimScratch]
)

// blocks runs u over consecutive blocks of at most optBlock elements of
// each parameter that has a gradient, on several threads for large
// models: a step from par.SplitFrom parameter elements is spread over the
// worker pool, as tensor's elementwise operations are. slots lists the
// state slots u reads (nil ones unused: their blocks are nil). Adam on
// nn's CNN (421K parameters, Zen 5): 0.40-0.44 ms a step on one thread,
// 0.27-0.39 on two (0.40-0.50 before, all blocks on the caller).
func (j *blockJob) blocks(params, grads []*Tensor, u blockUpdater, slots ...[]*Tensor) {
	j.slots, j.u = len(slots), u
	j.p, j.g, j.state, j.starts = j.p[:0], j.g[:0], j.state[:0], append(j.starts[:0], 0)
	elems := 0
	for i, v := range params {
		var p, g []float32
		if grads[i] != nil {
			p, g = v.data[v.offset:v.offset+v.Len()], grads[i].hostData("optimizer step")
		}
		j.p, j.g = append(j.p, p), append(j.g, g)
		for _, s := range slots {
			var d []float32
			if s != nil && p != nil {
				d = s[i].hostData("optimizer step")
			}
			j.state = append(j.state, d)
		}
		elems += len(p)
		j.starts = append(j.starts, j.starts[len(j.starts)-1]+(len(p)+optBlock-1)/optBlock)
	}
	par.Split(j, j.starts[len(params)], elems)
	clear(j.p)
	clear(j.g)
	clear(j.state)
	j.u = nil
}

// RunRange updates blocks lo..hi.
func (j *blockJob) RunRange(lo, hi int) {
	sc := optimTmp.Get()
	for k := range sc.tmp {
		if len(sc.tmp[k]) < optBlock {
			sc.tmp[k] = make([]float32, optBlock)
		}
	}
	sb := sc.slots[:j.slots]
	i := sort.SearchInts(j.starts, lo+1) - 1 // the parameter holding block lo
	for b := lo; b < hi; b++ {
		for b >= j.starts[i+1] {
			i++
		}
		p, g := j.p[i], j.g[i]
		off := (b - j.starts[i]) * optBlock
		end := min(off+optBlock, len(p))
		for k := range sb {
			if s := j.state[i*j.slots+k]; s != nil {
				sb[k] = s[off:end]
			} else {
				sb[k] = nil
			}
		}
		j.u.update(i, p[off:end], g[off:end], sb, &sc.tmp)
	}
	clear(sb)
	optimTmp.Put(sc)
}

// SGD is the CPU's SGDStep (the operands on the host).
func (cpuKernels) SGD(params, grads, momentum []*Tensor, started []bool, hp SGDParams) error {
	j := optimJobs.Get()
	j.sgd = sgdUpdate{hp: hp, started: started}
	j.blocks(params, grads, &j.sgd, momentum)
	j.sgd = sgdUpdate{}
	optimJobs.Put(j)
	return nil
}

type sgdUpdate struct {
	hp      SGDParams
	started []bool
}

func (u *sgdUpdate) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	o := &u.hp
	buf, t := s[0], tmp[0][:len(p)]
	copy(t, g)
	if o.WeightDecay != 0 {
		simd.Axpy(t, o.WeightDecay, p)
	}
	if o.Momentum != 0 {
		if !u.started[i] {
			copy(buf, t)
		} else {
			simd.Scale(buf, buf, o.Momentum)
			simd.Axpy(buf, 1-o.Dampening, t)
		}
		if o.Nesterov {
			simd.Axpy(t, o.Momentum, buf)
		} else {
			copy(t, buf)
		}
	}
	simd.Axpy(p, -o.LR, t)
}

// Adam is the CPU's AdamStep, and AdamAMSGradStep's with vmax (the
// operands on the host; steps advanced).
func (cpuKernels) Adam(params, grads, m, v, vmax []*Tensor, steps []int64, hp AdamParams) error {
	j := optimJobs.Get()
	u := &j.adam
	u.hp, u.amsgrad = hp, vmax != nil
	u.stepSize, u.invSqrtBC2 = perParam(u.stepSize, len(params)), perParam(u.invSqrtBC2, len(params))
	for i, g := range grads {
		if g != nil {
			u.stepSize[i], u.invSqrtBC2[i] = AdamCorrections(hp, steps[i])
		}
	}
	j.blocks(params, grads, u, m, v, vmax)
	optimJobs.Put(j)
	return nil
}

type adamUpdate struct {
	hp AdamParams
	// This step's bias corrections (AdamCorrections) for each parameter.
	stepSize, invSqrtBC2 []float32
	// amsgrad: the denominator takes the running maximum of v, slot 2
	// (AdamAMSGradStep's vmax).
	amsgrad bool
}

func (u *adamUpdate) update(i int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	o := &u.hp
	m, v := s[0], s[1]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	if !u.amsgrad {
		// The same update in one pass where the level has it (the same
		// roundings as the composition below).
		g = adamDecay(p, g, o.LR, o.WeightDecay, o.Decoupled, t1)
		simd.AdamUpdate(p, g, m, v, t2, o.Beta1, o.Beta2, u.stepSize[i], u.invSqrtBC2[i], o.Eps)
		return
	}
	// AMSGrad: the denominator takes the running maximum of v, which
	// falls between AdamUpdate's moments and its step.
	adamMoments(p, g, m, v, o.LR, o.Beta1, o.Beta2, o.WeightDecay, o.Decoupled, t1, t2)
	simd.Maximum(s[2], s[2], v)
	simd.AdamStep(p, m, s[2], t2, u.stepSize[i], u.invSqrtBC2[i], o.Eps)
}

// RMSProp is the CPU's RMSPropStep (the operands on the host).
func (cpuKernels) RMSProp(params, grads, squareAvg, gradAvg, momentum []*Tensor, hp RMSPropParams) error {
	j := optimJobs.Get()
	j.rms = rmsUpdate{hp: hp}
	j.blocks(params, grads, &j.rms, squareAvg, gradAvg, momentum)
	optimJobs.Put(j)
	return nil
}

type rmsUpdate struct{ hp RMSPropParams }

func (u *rmsUpdate) update(_ int, p, g []float32, s [][]float32, tmp *[2][]float32) {
	o := &u.hp
	a := o.Alpha
	v, gavg, buf := s[0], s[1], s[2]
	t1, t2 := tmp[0][:len(p)], tmp[1][:len(p)]
	g = withL2(g, p, o.WeightDecay, t1)
	simd.Mul(t2, g, g)
	simd.Scale(v, v, a)
	simd.Axpy(v, 1-a, t2)
	if o.Centered {
		simd.Scale(gavg, gavg, a)
		simd.Axpy(gavg, 1-a, g)
		simd.Mul(t2, gavg, gavg)
		simd.Sub(t2, v, t2)
		simd.Sqrt(t2, t2)
	} else {
		simd.Sqrt(t2, v)
	}
	simd.AddScalar(t2, t2, o.Eps)
	simd.Div(t2, g, t2)
	if o.Momentum > 0 {
		simd.Scale(buf, buf, o.Momentum)
		simd.Add(buf, buf, t2)
		t2 = buf
	}
	simd.Axpy(p, -o.LR, t2)
}
