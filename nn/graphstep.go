package nn

import (
	"errors"
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// ErrGraphEnded is what the error of a Run that ended graph mode matches
// (errors.Is): the step has run eagerly, and later Runs run eagerly.
var ErrGraphEnded = errors.New("nn: GraphStep: graph mode ended")

// maxGraphs is the most graphs a GraphStep keeps: one per input buffer,
// and Batches.To's device batches alternate between two.
const maxGraphs = 2

// GraphStep runs a training step as a device graph (tensor.GraphKernels,
// CUDA graphs): the first Run calls f eagerly (the tape's buffers
// settle), the second too, as the warm-up in which the device notes the
// memory the step's temporaries take; a later Run on inputs in a buffer
// not seen before captures f (its Go code runs once more, the device
// records its work, then replays the recording); a Run on inputs seen
// before replays the graph of those inputs, without running f: one
// launch a step. Batches.To alternates between two device buffers, so a
// GraphStep captures two graphs (the third Run and the fourth), one per
// buffer: the upload of the next batch overlaps the step as in eager
// mode, and nothing is copied into a fixed input buffer.
//
// A replay repeats the captured work exactly: the same buffers, shapes
// and arguments. f must therefore do the same device work at every call,
// on the tape tp (which f resets), with the arguments it had when
// captured: host state that f changes or reads is not seen by a replay
// (a learning rate changed with SetLR after the capture, host counters),
// except the optimizers' step counts (and NAdam's μ products), which each
// replay advances (the device takes the factors they give, Adam's bias
// corrections..., from memory it fills before each launch, so that every
// optimizer of nn replays as it runs eagerly). Dropout,
// whose seed the host draws at each step, refuses to be captured (the
// device's error names it). A failed capture does not roll back the host
// state f changed (the tape's, a random source's draws). A step of host
// tensors (the CPU, or a device without the family) runs f eagerly at
// every Run.
//
// Graph mode ends, with an error from Run, when the inputs' shapes differ
// from the first Run's, when the capture fails (an op needs the host: a
// copy to or from host memory, a synchronization such as Item, or more
// memory than the first step's; any panic of f during the capture), when
// f returns a Var of another tape than tp, or when the captured step made
// another number of tape operations or buffers than the first; later
// Runs then call f eagerly. A bad index or label met by a replayed step
// (CrossEntropy's labels, the Index family, MaxPool2DBackward) is
// reported by Run after the step, and graph mode goes on: the replay's
// kernels keep their errors on the device and Run reads them once
// (eager ops read each op's).
//
// Device graph mode is for one goroutine: while f is captured, nothing
// else may use the device. Close frees the graphs.
type GraphStep struct {
	tp *Tape
	f  func(x, y *tensor.Tensor) *Var

	k      tensor.GraphKernels
	calls  int
	xs, ys []int
	nodes  int // tape operations of the first step
	nbuf   int // tape buffers of the first step
	graphs []stepGraph
	off    error // why graph mode ended; nil while on
}

// stepGraph is a graph and the inputs it was captured on.
type stepGraph struct {
	x, y inputKey
	g    tensor.Graph
	loss *tensor.Tensor
}

// inputKey is where an input lies: its device buffer, offset and
// strides (its shape is the first step's, which Run has checked). It is
// comparable and made without allocating, as a replayed step must be.
type inputKey struct {
	mem     tensor.DeviceMemory
	off     int
	strides [tensor.MaxDims]int
}

func keyOf(t *tensor.Tensor) inputKey {
	mem, off, _ := tensor.DeviceView(t)
	k := inputKey{mem: mem, off: off}
	for i := range t.Dims() {
		k.strides[i] = t.Stride(i)
	}
	return k
}

// NewGraphStep returns a GraphStep of f, a training step on the batch x,
// y that records its operations on tp (f calls tp.Reset first) and
// returns its loss.
func NewGraphStep(tp *Tape, f func(x, y *tensor.Tensor) *Var) *GraphStep {
	if tp == nil || f == nil {
		panic("nn: NewGraphStep: nil Tape or step function")
	}
	return &GraphStep{tp: tp, f: f}
}

// Run runs the step on x, y (see GraphStep) and returns its loss: a 0-d
// tensor on the step's device, valid until the next Run. The error is
// the replay's deferred error, or why graph mode ended; the step has run
// in every case but a failed capture's.
func (s *GraphStep) Run(x, y *tensor.Tensor) (loss *tensor.Tensor, err error) {
	if s.calls == 0 {
		s.k = tensor.GraphsOn(x.Device())
	}
	s.calls++
	if s.k == nil || s.off != nil {
		return s.eager(x, y), nil
	}
	if s.calls == 1 {
		s.xs, s.ys = x.Shape(), y.Shape()
		return s.eager(x, y), nil
	}
	if !sameShape(x, s.xs) || !sameShape(y, s.ys) {
		return s.eager(x, y), s.end(fmt.Errorf("the batch's shapes %v and %v differ from the first step's %v and %v", x.Shape(), y.Shape(), s.xs, s.ys))
	}
	if s.calls == 2 {
		// The warm-up: the tape's buffers are in place since the first
		// step, so the memory it notes is the step's temporaries'.
		if err := s.k.Warmup(x.Device()); err != nil {
			return s.eager(x, y), s.end(err)
		}
		loss = s.eager(x, y)
		s.nodes, s.nbuf = len(s.tp.nodes), s.tp.nbuf
		return loss, nil
	}
	kx, ky := keyOf(x), keyOf(y)
	for _, sg := range s.graphs {
		if sg.x == kx && sg.y == ky {
			return sg.loss, s.replay(sg.g)
		}
	}
	if len(s.graphs) == maxGraphs {
		return s.eager(x, y), s.end(fmt.Errorf("the batch is in a buffer none of the %d graphs was captured on", maxGraphs))
	}
	return s.capture(x, y, kx, ky)
}

// eager runs f and returns the loss's value.
func (s *GraphStep) eager(x, y *tensor.Tensor) *tensor.Tensor {
	return s.f(x, y).Value()
}

// capture captures f on x, y, then replays it once.
func (s *GraphStep) capture(x, y *tensor.Tensor, kx, ky inputKey) (*tensor.Tensor, error) {
	dev := x.Device()
	if err := s.k.BeginCapture(dev); err != nil {
		return s.eager(x, y), s.end(err)
	}
	var v *Var
	panicked := func() (msg any) {
		defer func() { msg = recover() }()
		v = s.f(x, y)
		return nil
	}()
	g, err := s.k.EndCapture(dev)
	switch {
	case panicked != nil:
		err = errors.Join(fmt.Errorf("the step panicked while captured: %v", panicked), err)
	case err != nil:
	case v == nil || v.tape != s.tp:
		err = errors.New("the step's loss is not a Var of the GraphStep's tape")
	case len(s.tp.nodes) != s.nodes || s.tp.nbuf != s.nbuf:
		err = fmt.Errorf("the captured step made %d tape operations and %d buffers, the first %d and %d", len(s.tp.nodes), s.tp.nbuf, s.nodes, s.nbuf)
	}
	if err != nil {
		if g != nil {
			err = errors.Join(err, g.Close())
		}
		// The capture ran nothing: run the step now.
		return s.eager(x, y), s.end(err)
	}
	loss := v.Value()
	s.graphs = append(s.graphs, stepGraph{x: kx, y: ky, g: g, loss: loss})
	return loss, s.replay(g)
}

// replay launches g and reads the step's deferred error.
func (s *GraphStep) replay(g tensor.Graph) error {
	if err := g.Launch(); err != nil {
		return s.end(err)
	}
	if err := g.Err(); err != nil {
		return fmt.Errorf("nn: GraphStep: %w", err)
	}
	return nil
}

// end ends graph mode for the reason err, closing the graphs.
func (s *GraphStep) end(err error) error {
	s.off = fmt.Errorf("%w: %w", ErrGraphEnded, err)
	return errors.Join(s.off, s.closeGraphs())
}

func (s *GraphStep) closeGraphs() error {
	var errs []error
	for _, sg := range s.graphs {
		errs = append(errs, sg.g.Close())
	}
	s.graphs = nil
	return errors.Join(errs...)
}

// Graphs returns the number of graphs captured and not closed.
func (s *GraphStep) Graphs() int { return len(s.graphs) }

// Close frees the graphs; later Runs call f eagerly.
func (s *GraphStep) Close() error {
	if s.off == nil {
		s.off = errors.New("nn: GraphStep: closed")
	}
	return s.closeGraphs()
}
