// Command allreduce times the all-reduce of dist's communicators on
// float32 buffers, as OSU's osu_allreduce and NCCL's all_reduce_perf do,
// and prints, on rank 0, one line per implementation:
//
//	impl=I ranks=P bytes=B iters=N seconds_per_op=T algbw_GBps=A busbw_GBps=U
//
// T is the mean time of one all-reduce (the slowest rank's, after a
// barrier), A = B/T and U = A·2(P-1)/P, the bytes each rank moves (NCCL's
// bus bandwidth). impl is dist (Comm.AllReduce32, rank-order sums) and,
// under MPI, mpi (Open MPI's own MPI_Allreduce, what osu_allreduce times).
//
// Usage:
//
//	go build -tags mpi ./dist/cmd/allreduce
//	mpirun -np 2 --mca btl tcp,self ./allreduce -mb 100 -iters 10
//	go run ./dist/cmd/allreduce -local 2   (in-process ranks)
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/lanesgo/lanes/dist"
)

func main() {
	mb := flag.Float64("mb", 100, "buffer size in MB (10^6 bytes)")
	iters := flag.Int("iters", 10, "timed all-reduces per implementation (after one warm-up)")
	local := flag.Int("local", 0, "time an in-process group of this many ranks instead of MPI")
	flag.Parse()
	n := int(*mb * 1e6 / 4)
	var err error
	if *local > 0 {
		err = dist.RunLocal(*local, func(c dist.Comm) error { return bench(c, n, *iters, false) })
	} else {
		var c dist.Comm
		if c, err = dist.MPI(); err == nil {
			err = bench(c, n, *iters, true)
			if cerr := c.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "allreduce:", err)
		os.Exit(1)
	}
}

func bench(c dist.Comm, n, iters int, mpi bool) error {
	buf := make([]float32, n)
	for i := range buf {
		buf[i] = float32(i%1000) * 1e-3
	}
	impls := []struct {
		name string
		f    func() error
	}{{"dist", func() error { return c.AllReduce32(buf, dist.Sum) }}}
	if mpi {
		impls = append(impls, struct {
			name string
			f    func() error
		}{"mpi", func() error { return dist.MPIAllReduceNative32(c, buf) }})
	}
	p := c.Size()
	for _, im := range impls {
		if err := im.f(); err != nil { // warm-up
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		start := time.Now()
		for range iters {
			if err := im.f(); err != nil {
				return err
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		t := time.Since(start).Seconds() / float64(iters)
		alg := float64(4*n) / t / 1e9
		if c.Rank() == 0 {
			transport := dist.Transport(c)
			if im.name == "mpi" {
				transport = "mpi"
			}
			fmt.Printf("impl=%s transport=%s ranks=%d bytes=%d iters=%d seconds_per_op=%.6f algbw_GBps=%.3f busbw_GBps=%.3f\n",
				im.name, transport, p, 4*n, iters, t, alg, alg*2*float64(p-1)/float64(p))
		}
	}
	return nil
}
