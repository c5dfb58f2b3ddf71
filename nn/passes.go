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

// passChunk is the number of elements of a ReLU mask part.
const passChunk = 1 << 14

// reluJob is reluGrad over chunks of passChunk elements.
type reluJob struct{ dx, g, y []float32 }

var reluJobs freelist.Stack[reluJob]

func (j *reluJob) RunRange(lo, hi int) {
	lo, hi = lo*passChunk, min(hi*passChunk, len(j.dx))
	reluGradRange(j.dx[lo:hi], j.g[lo:hi], j.y[lo:hi])
}

// sumJob is channelSums over a range of channels.
type sumJob struct {
	d, gd    []float32
	plane, n int
	add      bool
}

var sumJobs freelist.Stack[sumJob]

func (j *sumJob) RunRange(lo, hi int) {
	c := len(j.d)
	for ch := lo; ch < hi; ch++ {
		var s float32
		if j.add {
			s = j.d[ch]
		}
		for img := range j.n {
			s += simd.Sum(j.gd[(img*c+ch)*j.plane:][:j.plane])
		}
		j.d[ch] = s
	}
}

// channelSums sets (add: adds to) d[ch] the sum of the planes of channel ch
// of gd, laid out [n, len(d), plane]: a convolution's bias gradient. Each
// channel is summed in image order, as a serial loop would.
func channelSums(d, gd []float32, n, plane int, add bool) {
	j := sumJobs.Get()
	*j = sumJob{d: d, gd: gd, plane: plane, n: n, add: add}
	par.Split(j, len(d), len(gd))
	*j = sumJob{}
	sumJobs.Put(j)
}
