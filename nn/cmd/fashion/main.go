// Command fashion trains a classifier on Fashion-MNIST with package nn and
// prints one line per epoch:
//
//	epoch=N seconds=S train_loss=L test_accuracy=A
//
// S is the wall time of the epoch's training loop (not the evaluation), L
// the mean training loss over its batches and A the accuracy on the 10,000
// test images, in percent. On Linux the line ends with the process's peak
// resident memory so far (VmHWM: data, model, optimizer state, the tape's
// buffers and the Go heap's slack; bench/torchref/fashion.py prints
// PyTorch's, ru_maxrss, the same way):
//
//	... peak_rss_bytes=B
//
// On a terminal a progress bar shows the epoch as it runs.
//
// Usage:
//
//	go run ./nn/cmd/fashion -model mlp|cnn -epochs N [-device cpu|cuda[:N]] [-data DIR] [-save FILE] [-checkpoint FILE] [-resume FILE]
//	go run ./nn/cmd/fashion -model mlp|cnn -eval FILE [-device cpu|cuda[:N]] [-data DIR]
//	mpirun -np P fashion -dist mpi [-bucket BYTES] ...   (go build -tags mpi ./nn/cmd/fashion)
//	go run ./nn/cmd/fashion -dist local -ranks P ...
//	go run ./nn/cmd/fashion -split 0 ...   (one part of each batch per thread)
//
// -split N runs each step's forward and backward passes on the CPU as N
// parts of the batch side by side (nn.BatchSplit: replicas sharing the
// parameters, their gradients summed in a fixed order, one Adam step),
// instead of splitting each operation between the threads; 0 is one part
// per thread (GOMAXPROCS), 1 (the default) is no split. It does not
// combine with -device or -dist.
//
// -device cuda (or cuda:N for the device of ordinal N) trains on a CUDA
// device: the model (nn.To), the optimizer's state and each batch
// (Batches.To, one upload a step) go there, and the losses stay there
// until the epoch's line is printed (or the progress bar draws). It needs
// the binary built with -tags cuda (or -tags cudaemu, the plugin's
// kernels emulated on the host), and a plugin that registers every op
// family the models use; without the tag the command says so and exits.
// The default, cpu, trains on the host. On a device the epoch's line
// ends with the device memory the epoch's training steps took at their
// peak (tensor.MemoryStats, reset at the start of each epoch):
//
//	... device_peak_bytes=P device_peak_reserved_bytes=R
//
// P is the bytes of live buffers at the peak (torch.cuda.max_memory_allocated),
// R the bytes the device's pool held (max_memory_reserved).
//
// When the device runs out of memory (a *tensor.OutOfMemoryError, caught
// with tensor.Catch) in a training step or in the evaluation, the command
// says so on stderr, naming the op and the bytes, moves the model, the
// optimizer's state and the batches to the CPU, runs the step (or the
// evaluation) again there, and goes on on the CPU; -oom exit makes it
// stop with the error instead. The failed step updated no parameter
// (tensor's optimizer steps do all or nothing); the models have no
// BatchNorm, whose running statistics a failed forward pass would have
// moved.
//
// -checkpoint FILE saves, after every epoch, the model, the optimizer's
// state and the batch iterator's place (nn.SaveCheckpoint); -resume FILE
// starts from such a file, with the epoch after the one it was saved at,
// and trains to epoch N: the parameters are bit for bit those of a run
// that never stopped. -eval reads the model of a checkpoint too.
//
// -dist trains data-parallel (nn.DataParallel) on the CPU: -dist mpi on
// the ranks of mpirun (or srun), with a binary built with -tags mpi
// (Open MPI's libopenmpi-dev; see the README), -dist local on -ranks
// goroutines of this process (for trying it without MPI). Every rank
// loads the data and builds the model alike; rank 0's parameters are
// broadcast, each rank trains on its share of each global batch of
// -batch rows (nn.Batches.Shard) and the gradients are averaged over the
// ranks in buckets of -bucket bytes during the backward pass. Each rank
// prints to stderr, after each epoch,
//
//	rank=K/P epoch=N seconds=S steps=T shard_loss=L comm_seconds=C comm_wait_seconds=W
//
// C is the time the rank spent in the gradients' all-reduces (waiting for
// slower ranks included), W the part of it the backward pass waited for
// (the communication not overlapped); rank 0 prints the epoch's line on
// stdout with the loss averaged over the ranks, the accuracy (each rank
// evaluates its share of the test set) and its own times:
//
//	epoch=N seconds=S train_loss=L test_accuracy=A ranks=P transport=X comm_seconds=C comm_wait_seconds=W
//
// X is dist.Transport's name for the all-reduces' transport: mpi, or
// mpi+shm where every rank runs on one host (LANES_DIST_SHM=0: mpi).
//
// Rank 0 writes -checkpoint and -save; -resume reads the checkpoint on
// every rank (with any number of ranks). -steps N stops after N steps in
// all, e.g. to compare the parameters of two runs.
//
// The models and settings are those of bench/torchref/fashion.py, the
// PyTorch reference: Adam with learning rate 1e-3, batches of 64, pixels
// scaled to [0, 1] and normalized with the training set's mean and
// standard deviation.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lanesgo/lanes/cudaplugin"
	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/nn/cmd/internal/progress"
	"github.com/lanesgo/lanes/simd"
	"github.com/lanesgo/lanes/tensor"
)

// Fashion-MNIST's training-set pixel mean and standard deviation, after
// scaling to [0, 1].
const (
	pixelMean = 0.2860
	pixelStd  = 0.3530
)

func main() {
	model := flag.String("model", "mlp", "model: mlp (784-256-128-10) or cnn (conv32-pool-conv64-pool-fc128-fc10)")
	epochs := flag.Int("epochs", 5, "training epochs")
	dir := flag.String("data", "/usr/share/datasets/fashion-mnist", "directory holding the Fashion-MNIST IDX files")
	save := flag.String("save", "", "write the trained parameters to this safetensors file")
	eval := flag.String("eval", "", "load parameters from this safetensors file and evaluate them (no training)")
	seed := flag.Uint64("seed", 1, "seed of the initialization, shuffling and dropout")
	batch := flag.Int("batch", 64, "batch size")
	lr := flag.Float64("lr", 1e-3, "Adam learning rate")
	checkpoint := flag.String("checkpoint", "", "after each epoch, save the model, the optimizer and the batch iterator's place to this file")
	resume := flag.String("resume", "", "resume training from this checkpoint (written by -checkpoint); -epochs counts from the start")
	device := flag.String("device", "cpu", "where to train: cpu, or cuda[:N] (a binary built with -tags cuda or -tags cudaemu)")
	oom := flag.String("oom", "cpu", "when the device runs out of memory: cpu (go on on the CPU) or exit")
	distMode := flag.String("dist", "", "data-parallel training: mpi (under mpirun or srun; a binary built with -tags mpi), nccl (the same, one GPU per rank, gradients through NCCL; -tags 'mpi cuda') or local (-ranks goroutines in this process)")
	ranks := flag.Int("ranks", 2, "with -dist local: the number of ranks")
	bucket := flag.Int("bucket", nn.DefaultBucketBytes, "with -dist: the gradient buckets' size in bytes")
	maxSteps := flag.Int("steps", 0, "stop after this many training steps in all (0: train whole epochs), e.g. to compare the parameters (-save) of runs")
	split := flag.Int("split", 1, "on the CPU, run each step as this many parts of the batch side by side (nn.BatchSplit; 0: one per thread, GOMAXPROCS; 1: no split)")
	graphs := flag.Bool("graphs", false, "on a device, replay each training step as a CUDA graph captured in the third step (nn.GraphStep; drops each epoch's partial last batch, as a graph has fixed shapes)")
	flag.Parse()
	useGraphs = *graphs
	if *oom != "cpu" && *oom != "exit" {
		fmt.Fprintf(os.Stderr, "fashion: -oom %s: want cpu or exit\n", *oom)
		os.Exit(2)
	}
	if *distMode != "" && (*device != "cpu" || *eval != "") {
		fmt.Fprintln(os.Stderr, "fashion: -dist does not take -device (mpi and local train on the CPU, nccl on the GPU of each rank's local rank) and does not evaluate (-eval)")
		os.Exit(2)
	}
	if *split < 0 || *split != 1 && (*distMode != "" || *device != "cpu") {
		fmt.Fprintln(os.Stderr, "fashion: -split takes a number of parts ≥ 0 and does not combine with -dist or -device")
		os.Exit(2)
	}
	if *split == 0 {
		*split = runtime.GOMAXPROCS(0)
	}
	o := options{split: *split, kind: *model, epochs: *epochs, save: *save, eval: *eval, checkpoint: *checkpoint, resume: *resume,
		seed: *seed, batch: *batch, lr: float32(*lr), oomToCPU: *oom == "cpu", bucket: *bucket, maxSteps: *maxSteps}
	d, err := loadData(*dir, *model)
	if err == nil {
		switch *distMode {
		case "":
			var dev tensor.Device
			var closeDev func() error
			if dev, closeDev, err = openDevice(*device); err == nil {
				err = run(o, d, dev, nil)
				if cerr := closeDev(); err == nil {
					err = cerr
				}
			}
		case "local":
			err = dist.RunLocal(*ranks, func(c dist.Comm) error { return run(o, d, tensor.CPU, c) })
		case "mpi":
			var c dist.Comm
			if c, err = dist.MPI(); err == nil {
				err = run(o, d, tensor.CPU, c)
				if cerr := c.Close(); err == nil {
					err = cerr
				}
			}
		case "nccl":
			var c dist.Comm
			if c, err = dist.MPI(); err == nil {
				err = runNCCL(o, d, c)
				if cerr := c.Close(); err == nil {
					err = cerr
				}
			}
		default:
			err = fmt.Errorf("-dist %s: want mpi, nccl or local", *distMode)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fashion:", err)
		os.Exit(1)
	}
}

// runNCCL trains as a rank of c on the GPU of the rank's local rank
// (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, Slurm's SLURM_LOCALID, else the
// rank modulo the GPUs), with the gradients all-reduced by NCCL on the
// devices and the rest (metrics, accuracy) through c.
func runNCCL(o options, d *dataset, c dist.Comm) error {
	n, err := cudaplugin.DeviceCount()
	if err != nil {
		return fmt.Errorf("-dist nccl: %w", err)
	}
	local := c.Rank() % max(n, 1)
	for _, env := range []string{"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"} {
		if v, err := strconv.Atoi(os.Getenv(env)); err == nil {
			local = v
			break
		}
	}
	g, err := cudaplugin.Open(local)
	if err != nil {
		return fmt.Errorf("-dist nccl: rank %d: cuda:%d: %w", c.Rank(), local, err)
	}
	defer g.Close()
	nc, err := g.NewNCCLComm(c)
	if err != nil {
		return fmt.Errorf("-dist nccl: rank %d: %w", c.Rank(), err)
	}
	defer nc.Close()
	o.nccl = nc
	return run(o, d, g.Device(), c)
}

// options are the command's settings.
type options struct {
	kind, save, eval, checkpoint, resume string
	epochs, batch, bucket, maxSteps      int
	split                                int // parts of a batch (nn.BatchSplit); 1: none
	seed                                 uint64
	lr                                   float32
	oomToCPU                             bool
	nccl                                 nn.DeviceComm // -dist nccl: the gradients' communicator
}

// openDevice opens the device that -device names and returns it with the
// function that closes it.
func openDevice(name string) (tensor.Device, func() error, error) {
	none := func() error { return nil }
	if name == "cpu" {
		return tensor.CPU, none, nil
	}
	ordinal := 0
	if rest, ok := strings.CutPrefix(name, "cuda"); ok && (rest == "" || strings.HasPrefix(rest, ":")) {
		if rest != "" {
			n, err := strconv.Atoi(rest[1:])
			if err != nil || n < 0 {
				return tensor.CPU, none, fmt.Errorf("-device %s: want cuda:N with N a device ordinal", name)
			}
			ordinal = n
		}
		g, err := cudaplugin.Open(ordinal) // ErrUnavailable without -tags cuda
		if err != nil {
			return tensor.CPU, none, fmt.Errorf("-device %s: %w", name, err)
		}
		return g.Device(), g.Close, nil
	}
	return tensor.CPU, none, fmt.Errorf("-device %s: want cpu, cuda or cuda:N", name)
}

// run trains (or evaluates) as o says, on dev; with comm, as a rank of a
// data-parallel run (on the CPU).
func run(o options, d *dataset, dev tensor.Device, comm dist.Comm) error {
	kind, epochs, save, eval, checkpoint, resume, lr := o.kind, o.epochs, o.save, o.eval, o.checkpoint, o.resume, o.lr
	r := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	model, err := newModel(kind, r)
	if err != nil {
		return err
	}
	rank, ranks := 0, 1
	if comm != nil {
		rank, ranks = comm.Rank(), comm.Size()
	}
	tr := &training{model: model, tp: nn.NewTape(), dev: dev, oomToCPU: o.oomToCPU}
	if err := tr.fallBack(nn.To(model, dev)); err != nil {
		return err
	}
	if eval != "" {
		if _, err := nn.Load(eval, model); err != nil {
			return err
		}
		acc, err := tr.accuracy(d.testX, d.testY, nil)
		if err != nil {
			return err
		}
		fmt.Printf("test_accuracy=%.2f\n", acc)
		return nil
	}
	var opt nn.Optimizer
	if err := tr.fallBack(tensor.Catch(func() { opt = nn.NewAdam(nn.Params(model), lr) })); err != nil {
		return err
	}
	if opt == nil { // the device had no room for its state: on the CPU now
		opt = nn.NewAdam(nn.Params(model), lr)
	}
	tr.opt = opt // its state is made where the parameters are
	if o.split > 1 {
		tr.split = nn.NewBatchSplit(model, o.split, func() nn.Module {
			m, _ := newModel(kind, rand.New(rand.NewPCG(0, 0))) // its values are replaced by model's
			return m
		})
	}
	batches := nn.NewBatches(d.trainX, d.trainY, o.batch, r)
	tr.batches = batches
	first := 1
	var commDone, waitDone time.Duration // the communication times before the epoch
	totalSteps := 0
	if resume != "" {
		meta, err := nn.LoadCheckpoint(resume, model, opt, batches)
		if err != nil {
			return err
		}
		if meta["model"] != kind {
			return fmt.Errorf("%s: a checkpoint of model %q, not %q", resume, meta["model"], kind)
		}
		// The checkpoint was saved at the end of epoch Epoch()+1.
		first = batches.Epoch() + 2
	}
	if comm != nil {
		batches.Shard(rank, ranks)
		if o.nccl != nil {
			tr.dp, err = nn.NewDataParallelDevice(model, o.nccl, o.bucket)
		} else {
			tr.dp, err = nn.NewDataParallel(model, comm, o.bucket)
		}
		if err != nil {
			return err
		}
	}
	if err := tr.fallBack(batches.To(tr.dev)); err != nil {
		return err
	}
	if useGraphs && tr.dev != tensor.CPU {
		batches.DropLast = true // a graph replays fixed shapes
		tr.graph = nn.NewGraphStep(tr.tp, func(x, y *tensor.Tensor) *nn.Var {
			tr.tp.Reset()
			loss := crossEntropy(tr.tp, tr.model, x, y)
			tr.opt.ZeroGrad()
			tr.tp.Backward(loss)
			tr.opt.Step()
			return loss
		})
		defer tr.graph.Close()
	}
	// The step losses stay where the model is until they are read.
	losses, err := tensor.NewOn(tr.dev, batches.Len())
	if err := tr.fallBack(err); err != nil {
		return err
	}
	if tr.losses = losses; losses == nil {
		tr.losses = tensor.New(batches.Len())
	}
	bar := progress.New(os.Stderr, batches.Len())
	if rank != 0 {
		bar.Quiet()
	}
	for epoch := first; epoch <= epochs; epoch++ {
		if epoch > 1 {
			batches.Reset()
		}
		model.SetTraining(true)
		onDevice := tr.dev != tensor.CPU
		if onDevice {
			if err := tensor.ResetPeakMemoryStats(tr.dev); err != nil {
				return err
			}
		}
		start := time.Now()
		var steps int
		stop := false
		if comm != nil {
			st := tr.dp.Stats()
			commDone, waitDone = st.Comm, st.Wait
		}
		for x, y, ok := batches.Next(); ok; x, y, ok = batches.Next() {
			if err := tr.step(x, y, steps); err != nil {
				return fmt.Errorf("epoch %d, step %d: %w", epoch, steps+1, err)
			}
			steps++
			if bar.Due(steps) {
				bar.Update(steps, fmt.Sprintf("loss=%.4f", meanLoss(tr.losses, steps)))
			}
			if totalSteps++; totalSteps == o.maxSteps {
				stop = true
				break
			}
		}
		if err := batches.Err(); err != nil {
			return err
		}
		mean := meanLoss(tr.losses, steps) // waits for the epoch's work
		secs := time.Since(start).Seconds()
		bar.Done()
		distNote := ""
		if comm != nil {
			st := tr.dp.Stats()
			fmt.Fprintf(os.Stderr, "rank=%d/%d epoch=%d seconds=%.2f steps=%d shard_loss=%.4f comm_seconds=%.2f comm_wait_seconds=%.2f\n",
				rank, ranks, epoch, secs, steps, mean, (st.Comm - commDone).Seconds(), (st.Wait - waitDone).Seconds())
			distNote = fmt.Sprintf(" ranks=%d transport=%s comm_seconds=%.2f comm_wait_seconds=%.2f", ranks, dist.Transport(comm), (st.Comm - commDone).Seconds(), (st.Wait - waitDone).Seconds())
			commDone, waitDone = st.Comm, st.Wait
			m := []float64{mean}
			if err := comm.AllReduce64(m, dist.Mean); err != nil {
				return err
			}
			mean = m[0]
		}
		peak := ""
		if onDevice {
			st, err := tensor.MemoryStats(dev)
			if err != nil {
				return err
			}
			peak = fmt.Sprintf(" device_peak_bytes=%d device_peak_reserved_bytes=%d", st.PeakInUse, st.PeakReserved)
		}
		acc, err := tr.accuracy(d.testX, d.testY, comm)
		if err != nil {
			return err
		}
		if rank == 0 {
			fmt.Printf("epoch=%d seconds=%.2f train_loss=%.4f test_accuracy=%.2f%s%s%s\n", epoch, secs, mean, acc, peak, distNote, rssNote())
		}
		if checkpoint != "" && rank == 0 {
			if err := nn.SaveCheckpoint(checkpoint, model, opt, batches, map[string]string{"model": kind}); err != nil {
				return err
			}
		}
		if stop {
			break
		}
	}
	if save != "" && rank == 0 {
		return nn.Save(save, model, map[string]string{"model": kind, "format": "pt"})
	}
	return nil
}

func newModel(kind string, r *rand.Rand) (nn.Module, error) {
	switch kind {
	case "mlp":
		return nn.FashionMLP(r), nil
	case "cnn":
		return nn.FashionCNN(r), nil
	}
	return nil, fmt.Errorf("unknown model %q (want mlp or cnn)", kind)
}

type dataset struct{ trainX, trainY, testX, testY *tensor.Tensor }

// loadData reads the four IDX files (gzipped or not) and normalizes the
// images, shaped [N, 1, 28, 28] for the CNN and [N, 28, 28] otherwise.
func loadData(dir, kind string) (*dataset, error) {
	var d dataset
	for _, f := range []struct {
		name string
		dst  **tensor.Tensor
	}{
		{"train-images-idx3-ubyte", &d.trainX}, {"train-labels-idx1-ubyte", &d.trainY},
		{"t10k-images-idx3-ubyte", &d.testX}, {"t10k-labels-idx1-ubyte", &d.testY},
	} {
		path := filepath.Join(dir, f.name+".gz")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			path = filepath.Join(dir, f.name)
		}
		t, err := nn.LoadIDX(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("Fashion-MNIST not found: %s(.gz) is missing.\n"+
				"Install it with `apt-get install dataset-fashion-mnist` (Debian; files go to /usr/share/datasets/fashion-mnist)\n"+
				"or download the four *-ubyte.gz files from https://github.com/zalandoresearch/fashion-mnist into a directory and pass -data DIR", filepath.Join(dir, f.name))
		}
		if err != nil {
			return nil, err
		}
		*f.dst = t
	}
	for _, x := range []*tensor.Tensor{d.trainX, d.testX} {
		if x.Dims() != 3 || x.Dim(1) != 28 || x.Dim(2) != 28 {
			return nil, fmt.Errorf("images of shape %v, want [N, 28, 28]", x.Shape())
		}
		v := x.Data()
		simd.Scale(v, v, 1/(255*pixelStd))
		simd.AddScalar(v, v, -pixelMean/pixelStd)
	}
	if kind == "cnn" {
		d.trainX = d.trainX.Reshape(-1, 1, 28, 28)
		d.testX = d.testX.Reshape(-1, 1, 28, 28)
	}
	return &d, nil
}

// meanLoss returns the mean of the first steps step losses, copied back
// from the device they are on.
func meanLoss(losses *tensor.Tensor, steps int) float64 {
	var sum float64
	for _, l := range losses.Slice(0, 0, steps, 1).Data() {
		sum += float64(l)
	}
	return sum / float64(max(steps, 1))
}

// useGraphs is -graphs: the steps on a device run through an
// nn.GraphStep.
var useGraphs bool

// training is what a training run holds: the model, its optimizer, the
// batches and the step losses, all on dev, and whether running out of
// the device's memory moves them to the CPU (else it is an error).
type training struct {
	model    nn.Module
	opt      nn.Optimizer
	batches  *nn.Batches
	losses   *tensor.Tensor
	tp       *nn.Tape
	dev      tensor.Device
	oomToCPU bool
	dp       *nn.DataParallel // nil unless data-parallel
	graph    *nn.GraphStep    // -graphs on a device; nil otherwise
	split    *nn.BatchSplit   // -split on the CPU; nil otherwise
}

// crossEntropy is the models' loss (the step's, the graph's and BatchSplit's).
func crossEntropy(tp *nn.Tape, m nn.Module, x, y *tensor.Tensor) *nn.Var {
	return tp.CrossEntropy(m.Forward(tp, tp.Const(x)), y)
}

// step runs a training step on the batch x, y and stores its loss as
// step i's; a device out of memory moves the training to the CPU
// (fallBack) and runs the step there.
func (tr *training) step(x, y *tensor.Tensor, i int) error {
	if tr.graph != nil && tr.dev != tensor.CPU {
		var loss *tensor.Tensor
		var gerr error
		err := tensor.Catch(func() { loss, gerr = tr.graph.Run(x, y) })
		if errors.Is(gerr, nn.ErrGraphEnded) { // the step ran eagerly; so do the next ones
			fmt.Fprintf(os.Stderr, "fashion: %v; the steps run eagerly\n", gerr)
			gerr = nil
		}
		switch {
		case gerr != nil:
			return gerr
		case err == nil:
			tensor.CopyInto(tr.losses.Slice(0, i, i+1, 1).Reshape(), loss)
			return nil
		}
		tr.graph.Close() // out of memory: the eager step below handles it
		tr.graph = nil
	}
	run := func(x, y *tensor.Tensor) {
		if tr.split != nil {
			tr.opt.ZeroGrad()
			l := tr.split.Step(x, y, crossEntropy)
			tr.opt.Step()
			tr.losses.Data()[i] = l
			return
		}
		tr.tp.Reset()
		loss := crossEntropy(tr.tp, tr.model, x, y)
		tr.opt.ZeroGrad()
		if tr.dp != nil {
			if err := tr.dp.Backward(tr.tp, loss); err != nil {
				panic(commFailure{err})
			}
		} else {
			tr.tp.Backward(loss)
		}
		tr.opt.Step()
		tensor.CopyInto(tr.losses.Slice(0, i, i+1, 1).Reshape(), loss.Value())
	}
	var cerr error
	err := tensor.Catch(func() {
		defer func() {
			if p := recover(); p != nil {
				f, ok := p.(commFailure)
				if !ok {
					panic(p)
				}
				cerr = f.err
			}
		}()
		run(x, y)
	})
	if err == nil || cerr != nil {
		return cerr
	}
	if err := tr.fallBack(err); err != nil {
		return err
	}
	hx, err := x.To(tensor.CPU)
	if err != nil {
		return err
	}
	hy, err := y.To(tensor.CPU)
	if err != nil {
		return err
	}
	run(hx, hy)
	return nil
}

// commFailure carries the communicator's error out of a step.
type commFailure struct{ err error }

// fallBack returns err, unless it is the device's out of memory (a
// *tensor.OutOfMemoryError) and -oom is cpu: then it says so and moves
// the model, the optimizer's state, the batches and the losses (those
// made so far) to the CPU, which the training goes on on.
func (tr *training) fallBack(err error) error {
	if err == nil || !tr.oomToCPU || tr.dev == tensor.CPU || !errors.As(err, new(*tensor.OutOfMemoryError)) {
		return err
	}
	oom := err
	fmt.Fprintf(os.Stderr, "fashion: %v\nfashion: continuing on the CPU\n", oom)
	if err := nn.To(tr.model, tensor.CPU); err != nil {
		return err
	}
	if tr.opt != nil {
		if err := tr.opt.To(tensor.CPU); err != nil {
			return err
		}
	}
	if tr.batches != nil {
		if err := tr.batches.To(tensor.CPU); err != nil {
			return err
		}
	}
	if tr.losses != nil {
		h, err := tr.losses.To(tensor.CPU)
		if err != nil {
			return err
		}
		tr.losses = h
	}
	tr.dev = tensor.CPU
	return nil
}

// accuracy is the model's test accuracy (accuracy) on tr.dev; a device
// out of memory moves the training to the CPU (fallBack) and evaluates
// there. With comm, each rank evaluates its share of the rows and the
// counts are summed over the ranks.
func (tr *training) accuracy(x, y *tensor.Tensor, comm dist.Comm) (acc float64, err error) {
	if comm != nil {
		lo, hi := dist.Split(x.Dim(0), comm.Rank(), comm.Size())
		sx, sy := x.Slice(0, lo, hi, 1), y.Slice(0, lo, hi, 1)
		a, err := accuracy(tr.model, sx, sy, tr.dev)
		if err != nil {
			return 0, err
		}
		counts := []float64{math.Round(a * float64(hi-lo) / 100), float64(hi - lo)}
		if err := comm.AllReduce64(counts, dist.Sum); err != nil {
			return 0, err
		}
		return 100 * counts[0] / max(counts[1], 1), nil
	}
	if oom := tensor.Catch(func() { acc, err = accuracy(tr.model, x, y, tr.dev) }); oom != nil {
		err = oom
	}
	if tr.dev != tensor.CPU && errors.As(err, new(*tensor.OutOfMemoryError)) { // Batches.To's too
		if err := tr.fallBack(err); err != nil {
			return 0, err
		}
		return accuracy(tr.model, x, y, tr.dev)
	}
	return acc, err
}

// accuracy returns the percentage of test images classified correctly,
// evaluating in batches of 1000 on dev with gradients off; the error is
// the device's.
func accuracy(m nn.Module, x, y *tensor.Tensor, dev tensor.Device) (float64, error) {
	m.SetTraining(false)
	defer m.SetTraining(true)
	tp := nn.NewTape()
	tp.SetGrad(false)
	b := nn.NewBatches(x, y, 1000, nil)
	if err := b.To(dev); err != nil {
		return 0, err
	}
	correct, total := 0, 0
	for bx, by, ok := b.Next(); ok; bx, by, ok = b.Next() {
		tp.Reset()
		pred, err := tensor.ArgMax(m.Forward(tp, tp.Const(bx)).Value(), 1, false).To(tensor.CPU)
		if err != nil {
			return 0, err
		}
		labels, err := by.To(tensor.CPU)
		if err != nil {
			return 0, err
		}
		for i, l := range labels.Data() {
			if pred.Data()[i] == l {
				correct++
			}
		}
		total += pred.Len()
	}
	return 100 * float64(correct) / float64(max(total, 1)), b.Err()
}
