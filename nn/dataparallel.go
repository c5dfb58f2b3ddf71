package nn

import (
	"fmt"
	"time"

	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/tensor"
)

// DataParallel trains one model on the ranks of a communicator (package
// dist: MPI across processes and machines, or goroutines in process), as
// PyTorch's DistributedDataParallel does: every rank holds a replica of
// the model and its optimizer, takes its shard of each global batch
// (Batches.Shard), and DataParallel.Backward replaces Tape.Backward,
// averaging the parameters' gradients over the ranks so that every
// replica takes the same optimizer step.
//
// The gradients are averaged in buckets of about BucketBytes, in reverse
// parameter order (the order a backward pass finishes them): a bucket is
// all-reduced (dist.Mean) by a goroutine of its own as soon as the last of
// its parameters has its final gradient, while the backward pass goes on
// with the earlier layers. Buckets are all-reduced in the same order on
// every rank (the i-th bucket waits for the (i-1)-th), and the all-reduce
// adds in rank order, so a training run is bit-for-bit reproducible for a
// given number of ranks. With batches whose rows split evenly among the
// ranks, the mean of the ranks' mean gradients is the gradient of the
// global batch's mean loss: training matches a single process on the
// global batch up to the order of float32 additions.
//
// On the host, the parameters' gradients (Var.Grad) are views of the
// buckets, as with PyTorch's gradient_as_bucket_view: the backward pass
// writes each gradient into its bucket and the all-reduce leaves the
// average there, so that no gradient is copied. They stay views between
// steps (the next Backward overwrites them in place); a gradient that
// something replaced (nn.To) becomes a view again, with its values, at
// the next Backward.
//
// A parameter that got no gradient on a rank takes part with zeros, and
// ends the step with the average of the others' (never nil): unlike a
// single process, an optimizer then steps it. Gradients that accumulate
// over several Backwards without ZeroGrad stay correct: the average of
// (the earlier average + this step's) is the earlier average + this
// step's average.
//
// With a dist.Comm (NewDataParallel) the model's parameters and buffers
// must be on the host (dist's communicators move host memory). With a
// DeviceComm (NewDataParallelDevice: NCCL) they are on one device and the
// buckets stay there. A DataParallel is not safe for concurrent use;
// every rank must call Backward the same number of times.
type DataParallel struct {
	comm    dist.Comm
	dcomm   DeviceComm
	model   Module
	params  []*Var
	index   map[*Var]int
	buckets []dpBucket
	where   []dpSlot // each parameter's bucket and offset
	// views are the host parameters' gradients: each a tensor over the
	// parameter's place in its bucket (nil for a device bucket, and for
	// all but the last place of a parameter listed twice), so that the backward
	// pass writes the gradients into the buckets and the all-reduce
	// leaves its result in them, with no copy either way.
	views []*tensor.Tensor
	first []int // per step: the first node using each parameter; -1 when none or done
	left  []int // per step: each bucket's parameters not yet final
	// The device path's all-reduces, queued in bucket order by final.
	devGot  []bool
	devNext int
	devErr  error
	stats   DataParallelStats
}

type dpBucket struct {
	params []int // indexes into params, in reverse parameter order
	buf    []float32
	dev    *tensor.Tensor // the bucket on the device, instead of buf (DeviceComm)
}

// DeviceComm is a communicator of tensors on a device, one device per
// rank: cudaplugin.NCCLComm is one. Its collectives are queued on the
// device after the work queued there before them, and run before the
// work queued after them.
type DeviceComm interface {
	Rank() int
	Size() int
	// AllReduce replaces t, on every rank, with the sum or mean of the
	// ranks' ts (contiguous, on the rank's device, of the same length).
	AllReduce(t *tensor.Tensor, op dist.Op) error
	// Broadcast copies root's t into the other ranks' ts.
	Broadcast(t *tensor.Tensor, root int) error
}

type dpSlot struct{ bucket, off int }

// DataParallelStats are a DataParallel's counts since it was made.
type DataParallelStats struct {
	Steps   int           // Backward calls
	Buckets int           // buckets per step
	Bytes   int64         // gradient bytes all-reduced per step (per rank)
	Comm    time.Duration // time in the all-reduce calls, overlapped or not
	Wait    time.Duration // time Backward waited for them after its backward pass: the communication not hidden
}

// DefaultBucketBytes is NewDataParallel's bucket size when it is given
// 0: 1 MiB (PyTorch's first bucket; it uses 25 MiB for the later ones,
// larger than the Fashion-MNIST models).
const DefaultBucketBytes = 1 << 20

// NewDataParallel returns the DataParallel of m on comm's rank, with
// buckets of about bucketBytes (0: DefaultBucketBytes; a parameter larger
// than that is a bucket of its own). It broadcasts rank 0's parameters
// and buffers to every rank (Broadcast), so that the replicas start
// equal; every rank must call it, with the same model. The error is the
// communicator's.
//
// It panics when m or comm is nil, when bucketBytes < 0, or when m's
// parameters are not on the host.
func NewDataParallel(m Module, comm dist.Comm, bucketBytes int) (*DataParallel, error) {
	if comm == nil {
		panic("nn: NewDataParallel: nil communicator")
	}
	eachVar("NewDataParallel", m, func(name string, v *Var) {
		if !onHost(v.value) {
			panic(fmt.Sprintf("nn: NewDataParallel: %s of shape %v is on %v; DataParallel's communicators need the model on the host", name, v.value.Shape(), v.value.Device()))
		}
	})
	d, err := newDataParallel("NewDataParallel", m, bucketBytes, tensor.CPU)
	if err != nil {
		return nil, err
	}
	d.comm = comm
	return d, d.Broadcast()
}

// NewDataParallelDevice is NewDataParallel for a model on a device, with
// a communicator of device tensors (cudaplugin.NCCLComm): the gradients
// are gathered into buckets on the device and all-reduced there, so
// they never pass through the host. The all-reduce of a bucket is queued
// on the device as soon as the backward pass has finished the bucket's
// gradients, between the backward pass's kernels: on the device's one
// stream it runs after the kernels queued before it (a second stream,
// which would let it overlap them, is not used). The model's parameters
// and buffers must all be on one device, not the host. The error is the
// device's (allocating the buckets) or the communicator's.
func NewDataParallelDevice(m Module, comm DeviceComm, bucketBytes int) (*DataParallel, error) {
	if comm == nil {
		panic("nn: NewDataParallelDevice: nil communicator")
	}
	dev := tensor.CPU
	eachVar("NewDataParallelDevice", m, func(name string, v *Var) {
		d := v.value.Device()
		if d == tensor.CPU || dev != tensor.CPU && d != dev {
			panic(fmt.Sprintf("nn: NewDataParallelDevice: %s of shape %v is on %v; a device communicator needs the model on one device", name, v.value.Shape(), d))
		}
		dev = d
	})
	d, err := newDataParallel("NewDataParallelDevice", m, bucketBytes, dev)
	if err != nil {
		return nil, err
	}
	d.dcomm = comm
	return d, d.Broadcast()
}

// newDataParallel makes the buckets of m's parameters, on the host or on
// dev.
func newDataParallel(fn string, m Module, bucketBytes int, dev tensor.Device) (*DataParallel, error) {
	if bucketBytes < 0 {
		panic(fmt.Sprintf("nn: %s: bucket size %d bytes < 0", fn, bucketBytes))
	}
	if bucketBytes == 0 {
		bucketBytes = DefaultBucketBytes
	}
	d := &DataParallel{params: Params(m), index: map[*Var]int{}}
	d.where = make([]dpSlot, len(d.params))
	d.views = make([]*tensor.Tensor, len(d.params))
	d.first = make([]int, len(d.params))
	for i, p := range d.params {
		d.index[p] = i
	}
	// Buckets in reverse parameter order, each closed once it holds
	// bucketBytes or more.
	var cur []int
	size := 0
	var err error
	flush := func() {
		if len(cur) == 0 || err != nil {
			return
		}
		b := dpBucket{params: cur}
		if dev == tensor.CPU {
			b.buf = make([]float32, size)
		} else if b.dev, err = tensor.NewOn(dev, size); err != nil {
			err = fmt.Errorf("nn: %s: a bucket of %d bytes on %v: %w", fn, 4*size, dev, err)
			return
		}
		off := 0
		for _, i := range cur {
			d.where[i] = dpSlot{bucket: len(d.buckets), off: off}
			v := d.params[i]
			n := v.value.Len()
			if b.buf != nil && d.index[v] == i {
				d.views[i] = tensor.FromSlice(b.buf[off:off+n:off+n], v.value.Shape()...)
			}
			off += n
		}
		d.buckets = append(d.buckets, b)
		d.stats.Bytes += int64(4 * size)
		cur, size = nil, 0
	}
	for i := len(d.params) - 1; i >= 0; i-- {
		n := d.params[i].value.Len()
		if len(cur) > 0 && 4*(size+n) > bucketBytes {
			flush()
		}
		cur = append(cur, i)
		size += n
	}
	flush()
	if err != nil {
		return nil, err
	}
	d.left = make([]int, len(d.buckets))
	d.stats.Buckets = len(d.buckets)
	d.model = m
	return d, nil
}

// Comm returns the communicator (nil for NewDataParallelDevice's).
func (d *DataParallel) Comm() dist.Comm { return d.comm }

// DeviceComm returns the device communicator (nil for NewDataParallel's).
func (d *DataParallel) DeviceComm() DeviceComm { return d.dcomm }

// Stats returns the counts since NewDataParallel.
func (d *DataParallel) Stats() DataParallelStats { return d.stats }

// Broadcast copies rank 0's parameters and buffers to the other ranks:
// NewDataParallel does, and a rank that loaded a checkpoint the others
// did not (LoadCheckpoint) may do again. Every rank must call it. The
// error is the communicator's.
func (d *DataParallel) Broadcast() error {
	var err error
	eachVar("DataParallel.Broadcast", d.model, func(name string, v *Var) {
		if err == nil {
			var e error
			if d.dcomm != nil {
				e = d.dcomm.Broadcast(v.value, 0)
			} else {
				e = d.comm.Broadcast32(hostData(v.value), 0)
			}
			if e != nil {
				err = fmt.Errorf("nn: DataParallel.Broadcast: %s: %w", name, e)
			}
		}
	})
	return err
}

// Backward is tp.Backward(loss) with the parameters' gradients averaged
// over the ranks (see DataParallel): when it returns, every rank's
// parameters hold the same gradients, and the optimizer's Step may follow.
// It panics as Tape.Backward does; the error is the communicator's, after
// which the gradients are those of this rank alone or partly averaged.
func (d *DataParallel) Backward(tp *Tape, loss *Var) error {
	tp.use("DataParallel.Backward", "loss", loss)
	for i := range d.first {
		d.first[i] = -1
	}
	for i := range tp.nodes {
		for _, v := range tp.nodes[i].in {
			if v == nil || !v.param {
				continue
			}
			if p, ok := d.index[v]; ok && d.first[p] < 0 { // nodes in order: the first use
				d.first[p] = i
			}
		}
	}
	for b := range d.buckets {
		d.left[b] = len(d.buckets[b].params)
	}
	// The gradients are the buckets' views, unless something replaced
	// them (nn.To, say) since the last step: then they become the views
	// again, keeping their current values.
	for p, view := range d.views {
		if v := d.params[p]; view != nil && v.grad != view {
			if v.gradOK {
				copy(view.Data(), hostData(v.grad))
			}
			v.grad = view
		}
	}
	var ready chan int
	done := make(chan error, 1)
	if d.dcomm != nil {
		d.devNext, d.devErr = 0, nil
		clear(d.devGot)
		if d.devGot == nil {
			d.devGot = make([]bool, len(d.buckets))
		}
	} else {
		ready = make(chan int, len(d.buckets))
		go d.communicate(ready, done)
	}
	// A parameter used by no node is final now (zeros).
	for p, first := range d.first {
		if first < 0 {
			d.final(p, ready)
		}
	}
	var panicked any
	func() {
		defer func() { panicked = recover() }()
		tp.backward("DataParallel.Backward", loss, false, func(i int) {
			for _, v := range tp.nodes[i].in {
				if v == nil || !v.param {
					continue
				}
				if p, ok := d.index[v]; ok && d.first[p] == i {
					d.first[p] = -1 // once, whatever the node's inputs
					d.final(p, ready)
				}
			}
		})
	}()
	if panicked != nil {
		if ready != nil {
			close(ready) // the communication goroutine stops at the first missing bucket
			<-done
		}
		panic(panicked)
	}
	start := time.Now()
	var err error
	if ready != nil {
		err = <-done
	} else {
		err = d.devErr
	}
	d.stats.Wait += time.Since(start)
	d.stats.Steps++
	if err != nil {
		return err
	}
	for p, v := range d.params {
		if d.index[v] != p { // listed again later
			continue
		}
		s := d.where[p]
		n := v.value.Len()
		if d.views[p] != nil { // the all-reduce left the average there
			v.gradOK = true
			continue
		}
		if !v.gradOK {
			g, _ := tp.gradFor(v) // a parameter that got no gradient here
			v.grad = g
		}
		if b := d.buckets[s.bucket]; b.dev != nil {
			tensor.CopyInto(v.grad, b.dev.Slice(0, s.off, s.off+n, 1).Reshape(v.grad.Shape()...))
		} else {
			copy(hostData(v.grad), b.buf[s.off:s.off+n])
		}
		v.gradOK = true
	}
	return nil
}

// final copies parameter p's final gradient (zeros when it has none) into
// its bucket, and hands the bucket to the communication goroutine when it
// was the bucket's last (on a device, all-reduces the buckets ready in
// order instead).
func (d *DataParallel) final(p int, ready chan<- int) {
	v, s := d.params[p], d.where[p]
	n := v.value.Len()
	if b := d.buckets[s.bucket]; b.dev != nil {
		dst := b.dev.Slice(0, s.off, s.off+n, 1)
		if v.gradOK {
			tensor.CopyInto(dst.Reshape(v.grad.Shape()...), v.grad)
		} else {
			tensor.Fill(dst, 0)
		}
	} else if d.views[p] != nil {
		if !v.gradOK { // else the backward pass wrote it there
			clear(d.views[p].Data())
		}
	} else {
		dst := b.buf[s.off : s.off+n]
		if v.gradOK {
			if !onHost(v.grad) {
				panic(fmt.Sprintf("nn: DataParallel.Backward: a gradient of shape %v on %v; DataParallel's communicators need the model on the host", v.grad.Shape(), v.grad.Device()))
			}
			copy(dst, hostData(v.grad))
		} else {
			clear(dst)
		}
	}
	if d.left[s.bucket]--; d.left[s.bucket] != 0 {
		return
	}
	if ready != nil {
		ready <- s.bucket
		return
	}
	d.devGot[s.bucket] = true
	for d.devNext < len(d.buckets) && d.devGot[d.devNext] {
		if d.devErr == nil {
			start := time.Now()
			if err := d.dcomm.AllReduce(d.buckets[d.devNext].dev, dist.Mean); err != nil {
				d.devErr = fmt.Errorf("nn: DataParallel.Backward: bucket %d of %d: %w", d.devNext, len(d.buckets), err)
			}
			d.stats.Comm += time.Since(start)
		}
		d.devNext++
	}
}

// communicate all-reduces the buckets in order as they become ready, and
// reports the first error (or nil) on done. After an error it only waits
// for the remaining buckets; a closed ready channel (the backward pass
// panicked) ends it.
func (d *DataParallel) communicate(ready <-chan int, done chan<- error) {
	var err error
	got := make([]bool, len(d.buckets))
	next := 0
	for next < len(d.buckets) {
		b, ok := <-ready
		if !ok {
			break
		}
		got[b] = true
		for next < len(d.buckets) && got[next] {
			if err == nil {
				start := time.Now()
				err = d.comm.AllReduce32(d.buckets[next].buf, dist.Mean)
				d.stats.Comm += time.Since(start)
				if err != nil {
					err = fmt.Errorf("nn: DataParallel.Backward: bucket %d of %d: %w", next, len(d.buckets), err)
				}
			}
			next++
		}
	}
	done <- err
}
