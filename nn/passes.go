package nn

import (
	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/internal/par"
	"github.com/lanesgo/lanes/simd"
)

// The backward passes that are not tensor operations (a ReLU's mask, a
// convolution's bias gradient) run on the worker pool (internal/par) once
// they are large enough, as tensor's elementwise operations do. On nn's
// CNN (Zen 5, 2 threads, wall time of the backward nodes over 100 steps,
// several runs) the first pooling's backward node, which masks, went from
// 0.78-0.97 ms to 0.60-0.66 and the second's from 0.52-0.72 to 0.42-0.45.

// parallelPass is the number of elements from which a pass is split.
const parallelPass = 1 << 16

// passChunk is the number of elements of a ReLU mask part.
const passChunk = 1 << 14

type passJob struct {
	relu      bool
	dx, g, y  []float32 // relu: dx = g where y > 0, else 0
	d, gd     []float32 // channel sums: d[c] (+)= Σ over images of gd's plane c
	c, plane  int
	n         int // images
	accumDest bool
}

var passJobs freelist.Stack[passJob]

func (j *passJob) RunRange(lo, hi int) {
	if j.relu {
		hi = min(hi*passChunk, len(j.dx))
		reluGrad(j.dx[lo*passChunk:hi], j.g[lo*passChunk:hi], j.y[lo*passChunk:hi])
		return
	}
	for ch := lo; ch < hi; ch++ {
		var s float32
		if j.accumDest {
			s = j.d[ch]
		}
		for img := range j.n {
			s += simd.Sum(j.gd[(img*j.c+ch)*j.plane:][:j.plane])
		}
		j.d[ch] = s
	}
}

// reluGradPar is reluGrad on the worker pool.
func reluGradPar(dx, g, y []float32) {
	j := passJobs.Get()
	*j = passJob{relu: true, dx: dx, g: g[:len(dx)], y: y[:len(dx)]}
	chunks := (len(dx) + passChunk - 1) / passChunk
	par.Split(j, chunks, len(dx), parallelPass)
	*j = passJob{}
	passJobs.Put(j)
}

// channelSums sets (add: adds to) d[ch] the sum of the planes of channel ch
// of gd, laid out [n, len(d), plane]: a convolution's bias gradient. Each
// channel is summed in image order, as a serial loop would.
func channelSums(d, gd []float32, n, plane int, add bool) {
	j := passJobs.Get()
	*j = passJob{d: d, gd: gd, c: len(d), plane: plane, n: n, accumDest: add}
	par.Split(j, len(d), len(gd), parallelPass)
	*j = passJob{}
	passJobs.Put(j)
}
