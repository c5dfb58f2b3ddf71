package nn

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lanesgo/lanes/tensor"
)

// eachVar calls f with each of m's parameters and buffers and its name,
// in State order, and panics, naming fn, when m is nil or gives a nil Var.
func eachVar(fn string, m Module, f func(name string, v *Var)) {
	if m == nil {
		panic(fmt.Sprintf("nn: %s: nil module", fn))
	}
	m.State("", func(name string, v *Var) {
		if v == nil || v.value == nil {
			panic(fmt.Sprintf("nn: %s: the module's %q is a nil Var", fn, name))
		}
		f(name, v)
	})
}

// stateOf returns m's parameters and buffers by name, in State order,
// sharing their storage, and panics, naming fn, when m is nil or gives a
// nil Var.
func stateOf(fn string, m Module) []Named {
	var ts []Named
	eachVar(fn, m, func(name string, v *Var) {
		ts = append(ts, Named{Name: name, T: v.value, DType: "F32"})
	})
	return ts
}

// hostStateOf is stateOf with the tensors on the host: those of a model on
// a device are copied back (for writing them to a file), and the error is
// the device's.
func hostStateOf(fn string, m Module) ([]Named, error) {
	ts := stateOf(fn, m)
	for i := range ts {
		h, err := ts[i].T.Host()
		if err != nil {
			return nil, fmt.Errorf("nn: %s: copying %q of shape %v from %v: %w", fn, ts[i].Name, ts[i].T.Shape(), ts[i].T.Device(), err)
		}
		ts[i].T = h
	}
	return ts, nil
}

// To moves m's parameters and buffers (BatchNorm2D's running statistics)
// to dev, or back to the host with tensor.CPU, as PyTorch's
// model.to(device): each Var keeps its identity, so that an optimizer made
// over Params(m) still updates them (move its state with its own To), and
// its value is replaced by a contiguous copy on dev (Tensor.To; a Var
// already there is left as it is), as is its gradient when it has one.
// The operations of a Tape on m's Vars then run on dev, and the batches
// given to m must be there too (Tensor.To, or Batches.To). A Var that m
// gives twice (shared weights) moves once.
//
// All the copies are made before any Var changes: when one fails (device
// memory can run out) To returns the error, naming the Var, and m is as
// it was. To panics when m is nil or gives a nil Var.
func To(m Module, dev tensor.Device) error {
	type move struct {
		v           *Var
		value, grad *tensor.Tensor
	}
	var moves []move
	seen := map[*Var]bool{}
	var err error
	eachVar("To", m, func(name string, v *Var) {
		if err != nil || seen[v] {
			return
		}
		seen[v] = true
		mv := move{v: v}
		if mv.value, err = v.value.To(dev); err != nil {
			err = fmt.Errorf("nn: To: %q of shape %v to %v: %w", name, v.value.Shape(), dev, err)
			return
		}
		if v.gradOK {
			if mv.grad, err = v.grad.To(dev); err != nil {
				err = fmt.Errorf("nn: To: the gradient of %q of shape %v to %v: %w", name, v.value.Shape(), dev, err)
				return
			}
		}
		moves = append(moves, mv)
	})
	if err != nil {
		return err
	}
	for _, mv := range moves {
		mv.v.value, mv.v.grad = mv.value, mv.grad
		mv.v.gradOK = mv.grad != nil
	}
	return nil
}

// LoadState copies the tensors of ts into m's parameters and buffers by
// name, wherever they are (a model on a device gets the tensors uploaded
// into its Vars' memory). Every name of m must be present with the same
// number of elements and shape; names m does not have are an error too,
// except PyTorch's BatchNorm "num_batches_tracked" counters, which lanes
// does not keep, as is a nil tensor in ts. Nothing is copied unless
// everything matches; a device that fails a copy (an error naming the
// tensor) may leave the model partly loaded. LoadState panics when m is
// nil or gives a nil Var.
func LoadState(m Module, ts []Named) error {
	copies, err := planLoadState("LoadState", m, ts)
	if err == nil {
		err = copies()
	}
	if err != nil {
		return fmt.Errorf("nn: LoadState: %w", err)
	}
	return nil
}

// planLoadState checks ts against m as LoadState and returns the function
// that copies them, or an error listing the problems. It panics, naming
// fn, when m is nil or gives a nil Var.
func planLoadState(fn string, m Module, ts []Named) (func() error, error) {
	mine := stateOf(fn, m)
	byName := make(map[string]Named, len(ts))
	var problems []string
	for _, t := range ts {
		if t.T == nil {
			problems = append(problems, fmt.Sprintf("tensor %q is nil", t.Name))
			continue
		}
		byName[t.Name] = t
	}
	var pairs [][2]*Named
	seen := make(map[string]bool, len(mine))
	for i, v := range mine {
		seen[v.Name] = true
		t, ok := byName[v.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing %q", v.Name))
		case !sameShapeAs(t.T, v.T):
			problems = append(problems, fmt.Sprintf("%q has shape %v, the model %v", v.Name, t.T.Shape(), v.T.Shape()))
		default:
			pairs = append(pairs, [2]*Named{&mine[i], &t})
		}
	}
	for _, t := range ts {
		if t.T != nil && !seen[t.Name] && !strings.HasSuffix(t.Name, "num_batches_tracked") {
			problems = append(problems, fmt.Sprintf("unexpected %q", t.Name))
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return func() error {
		for _, p := range pairs {
			if err := assign(p[0].T, p[1].T); err != nil {
				return fmt.Errorf("copying %q of shape %v to %v: %w", p[0].Name, p[0].T.Shape(), p[0].T.Device(), err)
			}
		}
		return nil
	}, nil
}

// assign copies src into dst, of the same shape, each on any device: a
// contiguous device dst in one upload from the host, any other through
// Tensor.To and tensor.CopyInto.
func assign(dst, src *tensor.Tensor) error {
	if mem, off, ok := tensor.DeviceView(dst); ok && dst.IsContiguous() {
		h, err := src.Host()
		if err != nil || h.Len() == 0 {
			return err
		}
		return mem.CopyFromHost(off, h.Data())
	}
	s, err := src.To(dst.Device())
	if err != nil {
		return err
	}
	tensor.CopyInto(dst, s)
	return nil
}

// Save writes m's parameters and buffers to path in the safetensors
// format, under their state_dict names, with optional metadata (those of
// a model on a device are copied to the host first). It replaces the file
// atomically, as SaveSafetensors: a failed or interrupted Save leaves the
// previous file whole. Save panics when m is nil or gives a nil Var.
func Save(path string, m Module, metadata map[string]string) error {
	ts, err := hostStateOf("Save", m)
	if err != nil {
		return err
	}
	return SaveSafetensors(path, ts, metadata)
}

// Load reads a safetensors file into m's parameters and buffers (see
// LoadState: a model on a device gets them uploaded) and returns the
// file's metadata. Of a checkpoint (see SaveCheckpoint) it reads the
// model and ignores the optimizer's tensors. Load panics when m is nil or
// gives a nil Var.
func Load(path string, m Module) (map[string]string, error) {
	if m == nil {
		panic("nn: Load: nil module")
	}
	ts, meta, err := LoadSafetensors(path)
	if err != nil {
		return nil, err
	}
	if _, ok := meta[ckptKey]; ok {
		ts, _ = splitCheckpoint(ts)
	}
	if err := LoadState(m, ts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return meta, nil
}

// The names a checkpoint adds to a model's state.
const (
	// ckptPrefix starts the metadata keys of a checkpoint; the caller's
	// may not.
	ckptPrefix = "lanes."
	// ckptKey marks a checkpoint and holds its format version, "1".
	ckptKey = "lanes.checkpoint"
	// ckptOptimizer holds the optimizer's optimizerState as JSON.
	ckptOptimizer = "lanes.optimizer"
	// ckptBatches holds the batch iterator's batchesState as JSON.
	ckptBatches = "lanes.batches"
	// ckptOptimPrefix starts the names of the optimizer's tensors.
	ckptOptimPrefix = "optim."
)

// SaveCheckpoint writes to path what training needs to resume exactly
// where it is: m's parameters and buffers under their state_dict names,
// as Save; the state of opt, unless it is nil; the place of b in its
// epochs, unless it is nil; and metadata, whose keys must not start with
// "lanes.". The file is a safetensors file, replaced atomically as by
// SaveSafetensors. opt must be one of this package's optimizers (SGD,
// Adam, RMSProp, Adagrad, Adamax, NAdam, RAdam): their per-parameter state
// (momentum buffers, the moments, the averages and sums) is kept as
// float32 tensors named "optim.<i>.<name>" after PyTorch's state names, i
// indexing opt's parameters ("optim.0.exp_avg"), and their learning rate,
// hyperparameters, parameter groups and counters (each parameter's step
// count, NAdam's μ products, whether each SGD momentum buffer is set) as
// JSON in the metadata, under
// "lanes.optimizer", floats written so that they read back to the same
// bits. Of b it keeps the epoch (see Epoch), the rows of it handed out,
// DropLast and the state of its generator at the epoch's start, under
// "lanes.batches".
//
// Training resumed with LoadCheckpoint into a model, optimizer and
// iterator made as the saved ones were (the same layers, the same
// parameters given to the optimizer in the same order, an iterator over
// the same data with the same batch size) and run with the same settings,
// SIMD level and GOMAXPROCS, gives bit for bit the parameters that
// training which never stopped gives (TestCheckpointResume). What the file does not hold stays the caller's: the random
// sources of layers such as Dropout (a model that draws from them resumes
// with other draws) and the learning-rate schedule, which the caller
// applies from the epoch (opt.SetLR(s.At(b.Epoch())); ReduceLROnPlateau's
// counters go into metadata through its MarshalJSON).
//
// SaveCheckpoint panics when m is nil or gives a nil Var; it returns an
// error, having written nothing, for an optimizer of another kind, a
// metadata key starting with "lanes." or a model state name starting with
// "optim.", and otherwise the errors of SaveSafetensors.
func SaveCheckpoint(path string, m Module, opt Optimizer, b *Batches, metadata map[string]string) error {
	ts, err := hostStateOf("SaveCheckpoint", m)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if strings.HasPrefix(t.Name, ckptOptimPrefix) {
			return fmt.Errorf("nn: SaveCheckpoint: %s: the model's %q starts with %q, kept for the optimizer's state", path, t.Name, ckptOptimPrefix)
		}
	}
	meta := make(map[string]string, len(metadata)+3)
	for k, v := range metadata {
		if strings.HasPrefix(k, ckptPrefix) {
			return fmt.Errorf("nn: SaveCheckpoint: %s: metadata key %q starts with %q, kept for the checkpoint's own", path, k, ckptPrefix)
		}
		meta[k] = v
	}
	meta[ckptKey] = "1"
	if opt != nil {
		st, slots, state, params, ok := optimizerOf(opt)
		if !ok {
			return fmt.Errorf("nn: SaveCheckpoint: %s: optimizer %T: only this package's SGD, Adam, RMSProp, Adagrad, Adamax, NAdam and RAdam can be saved", path, opt)
		}
		for i := range params {
			for k, slot := range slots {
				h, err := state[k][i].To(tensor.CPU) // a device's state is copied back
				if err != nil {
					return fmt.Errorf("nn: SaveCheckpoint: %s: optimizer state %q: %w", path, ckptOptimName(i, slot), err)
				}
				ts = append(ts, Named{Name: ckptOptimName(i, slot), T: h})
			}
		}
		js, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("nn: SaveCheckpoint: %s: %w", path, err)
		}
		meta[ckptOptimizer] = string(js)
	}
	if b != nil {
		st, err := b.saveState()
		if err != nil {
			return fmt.Errorf("nn: SaveCheckpoint: %s: %w", path, err)
		}
		js, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("nn: SaveCheckpoint: %s: %w", path, err)
		}
		meta[ckptBatches] = string(js)
	}
	return SaveSafetensors(path, ts, meta)
}

// splitCheckpoint separates a checkpoint's model tensors from its
// optimizer's.
func splitCheckpoint(ts []Named) (model []Named, optim map[string]*tensor.Tensor) {
	optim = make(map[string]*tensor.Tensor)
	for _, t := range ts {
		if strings.HasPrefix(t.Name, ckptOptimPrefix) {
			optim[t.Name] = t.T
		} else {
			model = append(model, t)
		}
	}
	return model, optim
}

// LoadCheckpoint restores from a file written by SaveCheckpoint the
// parameters and buffers of m, the state of opt and the place of b, and
// returns the caller's metadata (without the "lanes." keys). opt and b may
// be nil, to leave them out; the file must hold the state of those that
// are not. Nothing changes unless everything matches: the model's state
// names and shapes (as LoadState), the optimizer's type, parameter count
// and parameter shapes, and the iterator's row count, batch size and
// shuffling. The optimizer takes the file's learning rate and
// hyperparameters, as PyTorch's load_state_dict; the iterator resumes at
// the file's epoch and row, so that Next gives the batch that would have
// come next, and after the last batch of an epoch the caller's Reset
// starts the next one.
//
// LoadCheckpoint panics when m is nil or gives a nil Var; it returns an
// error for an unreadable or malformed file, a file that is not a
// checkpoint or lacks a state asked for, an optimizer of another kind, or
// any mismatch.
func LoadCheckpoint(path string, m Module, opt Optimizer, b *Batches) (map[string]string, error) {
	if m == nil {
		panic("nn: LoadCheckpoint: nil module")
	}
	ts, meta, err := LoadSafetensors(path)
	if err != nil {
		return nil, err
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("nn: LoadCheckpoint: %s: %s", path, fmt.Sprintf(format, args...))
	}
	if v, ok := meta[ckptKey]; !ok {
		return nil, fail("not a checkpoint (no %q in its metadata)", ckptKey)
	} else if v != "1" {
		return nil, fail("checkpoint format %q, want \"1\"", v)
	}
	model, optim := splitCheckpoint(ts)
	loadModel, err := planLoadState("LoadCheckpoint", m, model)
	if err != nil {
		return nil, fail("model: %v", err)
	}
	loadOpt := func() {}
	if opt != nil {
		if loadOpt, err = planLoadOptimizer(opt, meta[ckptOptimizer], optim); err != nil {
			return nil, fail("optimizer: %v", err)
		}
	}
	loadBatches := func() {}
	if b != nil {
		js, ok := meta[ckptBatches]
		if !ok {
			return nil, fail("no batch iterator state (%q)", ckptBatches)
		}
		var st batchesState
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			return nil, fail("batch iterator state: %v", err)
		}
		if loadBatches, err = b.planLoad(st); err != nil {
			return nil, fail("batch iterator: %v", err)
		}
	}
	if err := loadModel(); err != nil {
		return nil, fail("model: %v", err)
	}
	loadOpt()
	loadBatches()
	user := make(map[string]string, len(meta))
	for k, v := range meta {
		if !strings.HasPrefix(k, ckptPrefix) {
			user[k] = v
		}
	}
	return user, nil
}

// planLoadOptimizer checks a checkpoint's optimizer state, js and the
// tensors in optim, against opt and returns the function that restores it.
func planLoadOptimizer(opt Optimizer, js string, optim map[string]*tensor.Tensor) (func(), error) {
	cur, slots, state, params, ok := optimizerOf(opt)
	if !ok {
		return nil, fmt.Errorf("%T: only this package's SGD, Adam, RMSProp, Adagrad, Adamax, NAdam and RAdam can be loaded", opt)
	}
	if js == "" {
		return nil, fmt.Errorf("no state (%q)", ckptOptimizer)
	}
	var st optimizerState
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		return nil, err
	}
	switch {
	case st.Type != cur.Type:
		return nil, fmt.Errorf("the file's is %s, this one %s", st.Type, cur.Type)
	case st.Params != len(params):
		return nil, fmt.Errorf("the file's has %d parameters, this one %d", st.Params, len(params))
	case st.AMSGrad != cur.AMSGrad:
		return nil, fmt.Errorf("the file's has AMSGrad %v, this one %v", st.AMSGrad, cur.AMSGrad)
	case len(optim) != len(params)*len(slots):
		return nil, fmt.Errorf("the file has %d tensors for it, want %d", len(optim), len(params)*len(slots))
	}
	if err := checkOptimizerState(&st); err != nil {
		return nil, err
	}
	if fs, cs := groupSizes(st.Groups, st.Params), groupSizes(cur.Groups, len(params)); !slices.Equal(fs, cs) {
		return nil, fmt.Errorf("the file's parameter groups have %v parameters, this one's %v", fs, cs)
	}
	src := make([][]*tensor.Tensor, len(slots))
	for k := range src {
		src[k] = make([]*tensor.Tensor, len(params))
	}
	for i, p := range params {
		for k, slot := range slots {
			name := ckptOptimName(i, slot)
			t, ok := optim[name]
			switch {
			case !ok:
				return nil, fmt.Errorf("missing %q", name)
			case t == nil || !sameShapeAs(t, p.value):
				return nil, fmt.Errorf("%q has shape %v, parameter %d %v", name, shapeOf(t), i, p.value.Shape())
			}
			src[k][i] = t
		}
	}
	for k, slot := range src { // the state on a device gets a copy there
		for i, t := range slot {
			d, err := t.To(state[k][i].Device())
			if err != nil {
				return nil, fmt.Errorf("%q: %w", ckptOptimName(i, slots[k]), err)
			}
			slot[i] = d
		}
	}
	return func() {
		for k, slot := range src {
			for i, t := range slot {
				tensor.CopyInto(state[k][i], t)
			}
		}
		restoreOptimizer(opt, st)
	}, nil
}

// ckptOptimName is the name of slot (a PyTorch state name such as
// "exp_avg") of the optimizer's parameter i in a checkpoint.
func ckptOptimName(i int, slot string) string {
	return fmt.Sprintf("%s%d.%s", ckptOptimPrefix, i, slot)
}
