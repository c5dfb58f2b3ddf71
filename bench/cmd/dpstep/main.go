//go:build linux

// Command dpstep breaks a data-parallel training step of the Fashion MLP
// or CNN (random data, Adam) into its phases and prints, per rank, the
// median over the steps (after 20 warm-up steps) of each phase's CPU time
// on the training thread and its wall time, the CPU time of the process's
// other threads (MPI's progress thread, spinning while it waits, and Go's
// runtime; with one process and GOMAXPROCS=2, the second worker), and
// DataParallel's mean all-reduce and wait time a step:
//
//	rank=R/P MODEL rows=N  thread CPU: fwd F bwd B opt O | wall: fwd F bwd B opt O step S | other threads CPU C | buckets K comm/step T wait/step W
//
// The backward pass's wall time less its CPU time is the time it waited
// for the all-reduces (or was preempted: on a loaded machine only the CPU
// times mean anything). Usage (see docs/distributed.md):
//
//	go build -tags mpi ./cmd/dpstep          (in bench/)
//	GOMAXPROCS=2 ./dpstep -model mlp -batch 64
//	mpirun -np 2 -x GOMAXPROCS=1 ./dpstep -dist mpi -model mlp -batch 64
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"time"

	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/tensor"
	"syscall"
	"unsafe"
)

// Linux's clock ids.
const (
	clockProcessCPUTime = 2
	clockThreadCPUTime  = 3
)

func clock(id uintptr) time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, id, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return time.Duration(ts.Nano())
}

// tcpu is the CPU time of the calling thread, pcpu the process's.
func tcpu() time.Duration { return clock(clockThreadCPUTime) }
func pcpu() time.Duration { return clock(clockProcessCPUTime) }

func med(x []time.Duration) time.Duration {
	s := append([]time.Duration(nil), x...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func main() {
	runtime.LockOSThread() // tcpu times the training
	model := flag.String("model", "mlp", "mlp or cnn")
	steps := flag.Int("steps", 300, "steps, 20 of them warm-up")
	mode := flag.String("dist", "", "mpi: a rank of MPI_COMM_WORLD (-tags mpi, under mpirun); empty: one process")
	bucket := flag.Int("bucket", 0, "DataParallel's bucket size in bytes (0: nn.DefaultBucketBytes)")
	batch := flag.Int("batch", 64, "the global batch; each of P ranks takes batch/P rows")
	flag.Parse()
	if *steps <= 20 || *model != "mlp" && *model != "cnn" {
		fmt.Fprintln(os.Stderr, "dpstep: want -steps > 20 and -model mlp or cnn")
		os.Exit(2)
	}
	var comm dist.Comm
	rank, size := 0, 1
	if *mode == "mpi" {
		c, err := dist.MPI()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		comm = c
		defer c.Close()
		rank, size = c.Rank(), c.Size()
	}
	r := rand.New(rand.NewPCG(1, 2))
	var m *nn.Sequential
	var shape []int
	if *model == "mlp" {
		m = nn.FashionMLP(r)
		shape = []int{*batch / size, 784}
	} else {
		m = nn.FashionCNN(r)
		shape = []int{*batch / size, 1, 28, 28}
	}
	var dp *nn.DataParallel
	if comm != nil {
		var err error
		if dp, err = nn.NewDataParallel(m, comm, *bucket); err != nil {
			panic(err)
		}
	}
	opt := nn.NewAdam(nn.Params(m), 1e-3)
	x := tensor.New(shape...)
	xd := x.Data()
	for i := range xd {
		xd[i] = r.Float32()
	}
	y := tensor.New(shape[0])
	for i := range y.Data() {
		y.Data()[i] = float32(r.IntN(10))
	}
	tp := nn.NewTape()
	var fw, bw, op, fwW, bwW, opW, stepW, other []time.Duration
	for s := 0; s < *steps; s++ {
		w0, c0, p0 := time.Now(), tcpu(), pcpu()
		tp.Reset()
		loss := tp.CrossEntropy(m.Forward(tp, tp.Const(x)), y)
		opt.ZeroGrad()
		w1, c1 := time.Now(), tcpu()
		if dp != nil {
			if err := dp.Backward(tp, loss); err != nil {
				panic(err)
			}
		} else {
			tp.Backward(loss)
		}
		w2, c2 := time.Now(), tcpu()
		opt.Step()
		w3, c3, p3 := time.Now(), tcpu(), pcpu()
		if s < 20 {
			continue
		}
		fw, bw, op = append(fw, c1-c0), append(bw, c2-c1), append(op, c3-c2)
		fwW, bwW, opW = append(fwW, w1.Sub(w0)), append(bwW, w2.Sub(w1)), append(opW, w3.Sub(w2))
		stepW = append(stepW, w3.Sub(w0))
		other = append(other, (p3-p0)-(c3-c0))
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.0fus", float64(d)/1e3) }
	line := fmt.Sprintf("rank=%d/%d %s rows=%d  thread CPU: fwd %s bwd %s opt %s | wall: fwd %s bwd %s opt %s step %s | other threads CPU %s",
		rank, size, *model, shape[0], us(med(fw)), us(med(bw)), us(med(op)), us(med(fwW)), us(med(bwW)), us(med(opW)), us(med(stepW)), us(med(other)))
	if dp != nil {
		st := dp.Stats()
		line += fmt.Sprintf(" | buckets %d comm/step %s wait/step %s", st.Buckets, us(st.Comm/time.Duration(st.Steps)), us(st.Wait/time.Duration(st.Steps)))
	}
	fmt.Println(line)
}
