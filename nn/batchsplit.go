package nn

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/internal/par"
	"github.com/lanesgo/lanes/tensor"
)

// BatchSplit runs the forward and backward passes of a training step on
// parts of the batch side by side, one part per thread, instead of
// splitting each operation of one pass between the threads. Each part is a
// replica of the model with its own tape; the replicas share the model's
// parameter values (no copy, no broadcast) and keep gradients of their own,
// which Step adds into the model's parameters in part order. The
// optimizer then steps the model's parameters once, as for an unsplit
// step.
//
// Where one pass's operations are too short or too serial to keep two
// cores busy (the gaps between them, the small products of the last
// layers, the pooling passes), the parts run without meeting until their
// gradients are summed. The price is the work the split repeats or
// narrows: each part's products are as many rows narrower.
//
// Results: the gradient of the batch's mean loss, summed in another order
// than one pass sums it (float32 rounding only), and bit for bit the same
// from run to run for a given number of parts (every part's operations
// are deterministic, and the sum's order is fixed). Random layers
// (Dropout) draw from their own replica's generator.
type BatchSplit struct {
	model  Module
	names  []string // the model's parameters' names, for Step's messages
	params []*Var
	parts  []*splitPart
}

// splitPart is one part: a replica (the model itself for part 0), its
// tape, and this step's rows and results.
type splitPart struct {
	m      Module
	params []*Var
	tp     *Tape
	x, y   *tensor.Tensor // this step's rows: views of the batch
	// The batch and rows the views were made for: a batch iterator's
	// buffers come back step after step, and their views are kept.
	srcX, srcY, xv, yv *tensor.Tensor
	lo, hi             int
	loss               func(tp *Tape, m Module, x, y *tensor.Tensor) *Var
	weight             float32 // rows of the part over rows of the batch
	value              float32 // the part's mean loss
	failed             any     // a panic of the part, re-raised by Step on its caller
}

// NewBatchSplit returns the BatchSplit of m into parts parts. replica
// builds a model of the same architecture (its parameters' values are
// replaced by views of m's: only their shapes and order matter); it is
// called parts-1 times.
//
// It panics when m or replica is nil, when parts < 1, when a replica's
// parameters do not match m's in number, names and shapes, when m has
// buffers (BatchNorm2D's running statistics: each part would update its
// own, and the parts would then disagree), or when m's parameters are not
// on the host.
func NewBatchSplit(m Module, parts int, replica func() Module) *BatchSplit {
	switch {
	case m == nil:
		panic("nn: NewBatchSplit: nil model")
	case parts < 1:
		panic(fmt.Sprintf("nn: NewBatchSplit: parts = %d, want at least 1", parts))
	case parts > 1 && replica == nil:
		panic("nn: NewBatchSplit: nil replica constructor")
	}
	names, params := splitState("NewBatchSplit", "the model", m)
	s := &BatchSplit{model: m, names: names, params: params}
	s.parts = append(s.parts, &splitPart{m: m, params: params, tp: NewTape()})
	for k := 1; k < parts; k++ {
		r := replica()
		if r == nil {
			panic("nn: NewBatchSplit: the replica constructor returned nil")
		}
		rnames, rparams := splitState("NewBatchSplit", fmt.Sprintf("replica %d", k), r)
		if !slices.Equal(names, rnames) {
			panic(fmt.Sprintf("nn: NewBatchSplit: replica %d has parameters %v, the model %v", k, rnames, names))
		}
		for i, p := range rparams {
			if !slices.Equal(p.value.Shape(), params[i].value.Shape()) {
				panic(fmt.Sprintf("nn: NewBatchSplit: replica %d's %s has shape %v, the model's %v", k, names[i], p.value.Shape(), params[i].value.Shape()))
			}
		}
		s.parts = append(s.parts, &splitPart{m: r, params: rparams, tp: NewTape()})
	}
	s.share()
	return s
}

// splitState returns m's parameters and their names, and panics (naming
// what, and fn) on a buffer or a parameter off the host.
func splitState(fn, what string, m Module) (names []string, params []*Var) {
	m.State("", func(name string, v *Var) {
		switch {
		case !v.requires:
			panic(fmt.Sprintf("nn: %s: %s has the buffer %s of shape %v: the parts would each update their own", fn, what, name, v.value.Shape()))
		case !onHost(v.value):
			panic(fmt.Sprintf("nn: %s: %s's %s of shape %v is on %v; the parts run on the host", fn, what, name, v.value.Shape(), v.value.Device()))
		}
		names = append(names, name)
		params = append(params, v)
	})
	return names, params
}

// share points every replica's parameters at the model's values (again:
// loading a state may have given them new tensors).
func (s *BatchSplit) share() {
	for _, pt := range s.parts[1:] {
		for i, p := range pt.params {
			p.value = s.params[i].value
		}
	}
}

// Parts returns the number of parts.
func (s *BatchSplit) Parts() int { return len(s.parts) }

// Step runs loss on each part's rows of x and y (x and y are cut along
// their first axis into parts of nearly equal size, the first parts one
// row larger; a part without rows is skipped), each part on its replica
// and tape, on the pool's threads side by side. loss must return the
// scalar mean loss of the rows it is given (as CrossEntropy does); Step
// weights each part's by its share of the rows and runs its backward
// pass. The model's parameters then hold, added to the gradient they had
// (as Backward adds), the gradient of the batch's mean loss; Step returns
// that loss. The Vars loss makes belong to the part's tape and are valid
// until the next Step.
//
// It panics when x and y do not have the same number of rows, when the
// batch is empty, when x or y is not on the host, and with whatever loss
// or a layer panics with (re-raised on the caller's goroutine).
func (s *BatchSplit) Step(x, y *tensor.Tensor, loss func(tp *Tape, m Module, x, y *tensor.Tensor) *Var) float32 {
	switch {
	case x == nil || y == nil:
		panic("nn: BatchSplit.Step: nil batch")
	case loss == nil:
		panic("nn: BatchSplit.Step: nil loss")
	case x.Dims() == 0 || y.Dims() == 0 || x.Dim(0) != y.Dim(0):
		panic(fmt.Sprintf("nn: BatchSplit.Step: x of shape %v and y of shape %v: want the same number of rows along the first axis", x.Shape(), y.Shape()))
	case x.Dim(0) == 0:
		panic(fmt.Sprintf("nn: BatchSplit.Step: an empty batch (x of shape %v)", x.Shape()))
	case !onHost(x) || !onHost(y):
		panic(fmt.Sprintf("nn: BatchSplit.Step: x on %v and y on %v; the parts run on the host", x.Device(), y.Device()))
	}
	for i, p := range s.params { // moved since NewBatchSplit checked them?
		if !onHost(p.value) {
			panic(fmt.Sprintf("nn: BatchSplit.Step: the model's %s of shape %v is on %v; the parts run on the host", s.names[i], p.value.Shape(), p.value.Device()))
		}
	}
	s.share()
	n, parts := x.Dim(0), len(s.parts)
	used := min(parts, n)
	for k, pt := range s.parts {
		pt.x, pt.y, pt.failed, pt.value = nil, nil, nil, 0
		if k >= used {
			continue
		}
		lo, hi := k*n/used, (k+1)*n/used
		if pt.srcX != x || pt.srcY != y || pt.lo != lo || pt.hi != hi || pt.xv == nil || !sameRows(pt.xv, x) || !sameRows(pt.yv, y) {
			pt.xv, pt.yv = x.Slice(0, lo, hi, 1), y.Slice(0, lo, hi, 1)
			pt.srcX, pt.srcY, pt.lo, pt.hi = x, y, lo, hi
		}
		pt.x, pt.y = pt.xv, pt.yv
		pt.loss, pt.weight = loss, float32(hi-lo)/float32(n)
		if k > 0 {
			for _, p := range pt.params {
				p.ZeroGrad()
			}
		}
	}
	par.For((*splitRun)(s), used, used)
	var total float64
	for _, pt := range s.parts[:used] {
		pt.loss = nil
		if pt.failed != nil {
			panic(pt.failed)
		}
		total += float64(pt.weight) * float64(pt.value)
	}
	// The replicas' gradients, added into the model's in part order (as
	// the tape adds a contribution to a parameter's gradient).
	for _, pt := range s.parts[1:used] {
		for i, p := range pt.params {
			if p.gradOK {
				s.parts[0].tp.addGrad(s.params[i], p.grad)
			}
		}
	}
	return float32(total)
}

// sameRows reports whether a view of rows of t still has t's row shape
// (t's buffer may have been reshaped since the view was made).
func sameRows(view, t *tensor.Tensor) bool {
	if view.Dims() != t.Dims() {
		return false
	}
	for i := 1; i < t.Dims(); i++ {
		if view.Dim(i) != t.Dim(i) {
			return false
		}
	}
	return true
}

// splitRun is a BatchSplit as par.For's Ranger (a pointer: no allocation).
type splitRun BatchSplit

// RunRange runs parts lo..hi of a step.
func (s *splitRun) RunRange(lo, hi int) {
	for _, pt := range s.parts[lo:hi] {
		pt.run()
	}
}

// run is one part's forward and backward pass; a panic is kept for Step.
func (pt *splitPart) run() {
	defer func() {
		if p := recover(); p != nil {
			pt.failed = p
		}
	}()
	tp := pt.tp
	tp.Reset()
	l := pt.loss(tp, pt.m, pt.x, pt.y)
	if l == nil {
		panic("nn: BatchSplit.Step: loss returned nil")
	}
	pt.value = l.Value().Item()
	if pt.weight != 1 {
		l = tp.Scale(l, pt.weight)
	}
	tp.Backward(l)
}
