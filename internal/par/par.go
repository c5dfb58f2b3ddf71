// Package par runs the parallel loops of simd and tensor on one persistent
// pool of GOMAXPROCS-1 goroutines that spin for a while before they park.
//
// Why they spin: a parked goroutine is woken through its OS thread, and
// on a virtual machine whose idle vCPU has halted that takes as long as a
// small operation. Measured on the 2-vCPU Zen 5 (Firecracker) developer
// machine: a worker parked on a channel started its part 106 µs after the
// caller on average (loops 200 µs apart, the caller sleeping between
// them), so a 250 µs max-pooling ran no faster on two threads than on
// one, and nn's CNN training step took 13.4 ms on two threads against
// 16.7 on one although its convolutions alone scaled 1.5x. Spinning is
// what OpenMP runtimes and BLAS thread pools do (OMP_WAIT_POLICY,
// KMP_BLOCKTIME); the spin time is set by LANES_SPIN (see Spin).
//
// A loop's parts are claimed with one atomic compare-and-swap each, by
// the caller and by any worker that is free, so the caller never waits for
// a worker to start: parts nobody has claimed when it is done with its own
// it runs itself. Nested loops (a convolution item calling Sgemm) are safe:
// a caller waits only for parts that some goroutine is running.
package par

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lanesgo/lanes/internal/freelist"
)

// Ranger is work that can be cut into index ranges run concurrently.
type Ranger interface{ RunRange(lo, hi int) }

// DefaultSpin is how long a worker polls for the next part before it parks,
// unless LANES_SPIN says otherwise. It spans the serial gaps between the
// parallel operations of a training step (bias sums, small products).
// BenchmarkTrainStep/cnn on the developer machine (Zen 5, 2 threads), runs
// side by side: 13.3-13.6 ms with LANES_SPIN=0, 12.8-13.8 with 200us,
// 12.2-13.4 with 2ms (the host is noisy); the old pool, parked workers
// fed by a channel, 13.4-13.7.
const DefaultSpin = 2 * time.Millisecond

var (
	spin     = DefaultSpin
	spinNote = "default"
)

func init() {
	var warning string
	spin, spinNote, warning = spinFromEnv(os.Getenv("LANES_SPIN"))
	if warning != "" {
		fmt.Fprintln(os.Stderr, warning)
	}
}

// spinFromEnv reads a LANES_SPIN value: the spin time, the note Spin
// returns and, for a value that is not a duration ≥ 0, the one warning
// printed at start-up. An empty value is no value, as for LANES_SIMD and
// LANES_THRESHOLDS. The value is quoted and cut to 64 bytes in the note
// and the warning, which end up in dispatch.Report and in logs.
func spinFromEnv(s string) (d time.Duration, note, warning string) {
	if s == "" {
		return DefaultSpin, "default", ""
	}
	d, err := time.ParseDuration(s)
	if err == nil && d >= 0 {
		return d, "LANES_SPIN", ""
	}
	v := strconv.Quote(s)
	if len(s) > 64 {
		v = strconv.Quote(s[:64]) + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return DefaultSpin, fmt.Sprintf("default; LANES_SPIN=%s ignored", v),
		fmt.Sprintf("lanes: LANES_SPIN=%s is not a duration ≥ 0 (such as 0, 500us or 2ms); using %v", v, DefaultSpin)
}

// Spin returns how long an idle worker polls for work before it parks, and
// where that came from ("default" or "LANES_SPIN"). LANES_SPIN=0 parks at
// once: no CPU is burnt between operations, at the cost of the wake-up
// latency above in every parallel one.
func Spin() (time.Duration, string) { return spin, spinNote }

// job is one parallel loop. state packs the number of parts (high 32 bits)
// and the next unclaimed part (low 32): claiming is one CAS, and a stale
// token (a worker arriving after the loop is over, or after the job was
// reused for the next loop) claims nothing or a part of the current loop,
// whose fields were written before state published it.
type job struct {
	r     Ranger
	n     int
	state atomic.Uint64
	done  atomic.Int64
}

var jobs freelist.Stack[job]

// claim returns the range of the next unclaimed part, if any.
func (j *job) claim() (lo, hi int, ok bool) {
	for {
		s := j.state.Load()
		parts, next := s>>32, s&(1<<32-1)
		if next >= parts {
			return 0, 0, false
		}
		if j.state.CompareAndSwap(s, s+1) {
			n, p, q := uint64(j.n), next, parts
			return int(n * p / q), int(n * (p + 1) / q), true
		}
	}
}

// PartOf returns the part whose range starts at lo when For cuts 0..n into
// parts ranges (parts ≤ n): the inverse of claim's split, for a Ranger
// whose parts share work by index (simd's shared GEMM packing).
func PartOf(lo, n, parts int) int { return (lo*parts + n - 1) / n }

// work runs parts of j until none is left to claim.
func (j *job) work() {
	for {
		lo, hi, ok := j.claim()
		if !ok {
			return
		}
		j.r.RunRange(lo, hi)
		j.done.Add(1)
	}
}

var pool struct {
	mu     sync.Mutex   // held while starting workers
	n      atomic.Int32 // workers started
	tokens chan *job    // one token per part a worker may take
}

func init() { pool.tokens = make(chan *job, 256) }

// For runs r.RunRange over 0..n cut into parts ranges of (nearly) equal
// length, on the caller and the pool, and returns when all have run. With
// parts ≤ 1 (or n ≤ 1) it runs r.RunRange(0, n) on the caller.
func For(r Ranger, n, parts int) {
	parts = min(parts, n)
	if parts <= 1 {
		r.RunRange(0, n)
		return
	}
	workers := grow()
	j := jobs.Get()
	j.r, j.n = r, n
	j.done.Store(0)
	j.state.Store(uint64(parts) << 32)
	for range min(parts-1, workers) {
		select {
		case pool.tokens <- j:
		default: // the channel is full of other loops' tokens: run it here
		}
	}
	j.work()
	for j.done.Load() < int64(parts) {
		runtime.Gosched()
	}
	j.r = nil
	jobs.Put(j)
}

// SplitFrom is the work (elements written, or read by a reduction) from
// which Split uses every thread; smaller loops run on the caller.
const SplitFrom = 1 << 16

// Split is For with one part per thread (GOMAXPROCS) when work reaches
// SplitFrom, and on the caller alone below it: the rule of every
// elementwise-sized loop of tensor and nn.
func Split(r Ranger, n, work int) {
	parts := runtime.GOMAXPROCS(0)
	if work < SplitFrom {
		parts = 1
	}
	For(r, n, parts)
}

// Workers returns how many workers the pool has, or will have once a
// loop starts them: GOMAXPROCS-1 (0 with one thread).
func Workers() int { return max(runtime.GOMAXPROCS(0)-1, 0) }

// grow starts workers up to GOMAXPROCS-1 and returns how many there are.
// Once they are there (every call but the first few) it takes no lock.
func grow() int {
	want := int32(Workers())
	if n := pool.n.Load(); n >= want {
		return int(n)
	}
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for pool.n.Load() < want {
		pool.n.Add(1)
		go worker()
	}
	return int(pool.n.Load())
}

func worker() {
	for {
		next().work()
	}
}

// next returns the next token, polling for up to spin (yielding the
// processor between polls) before it blocks.
func next() *job {
	select {
	case j := <-pool.tokens:
		return j
	default:
	}
	if spin > 0 {
		until := time.Now().Add(spin)
		for {
			runtime.Gosched()
			select {
			case j := <-pool.tokens:
				return j
			default:
			}
			if time.Now().After(until) {
				break
			}
		}
	}
	return <-pool.tokens
}
