package nn

import (
	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/internal/par"
	"github.com/lanesgo/lanes/simd"
)

// The backward pass that is not a tensor operation on the host (a
// convolution's bias gradient) runs on the worker pool (internal/par) once
// it is large enough, as tensor's elementwise operations do. (The ReLU's
// mask, which was here, is tensor.UnaryGrad's: tensor/grad.go.)

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
