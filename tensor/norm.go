package tensor

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/lanesgo/lanes/simd"
)

// NormStats are the mean and 1/√(variance + eps) of each group a
// normalization used (a channel for BatchNorm, a row for LayerNorm), kept
// for its backward.
type NormStats struct{ Mean, InvStd *Tensor }

// BatchNormParams configures BatchNorm over the channels (axis 1) of x
// [N, C, ...].
type BatchNormParams struct {
	Gamma, Beta *Tensor // [C] scale and shift; nil means 1 and 0
	// RunningMean and RunningVar [C] are used in inference and, when not
	// nil, updated in training: r = (1 - Momentum)·r + Momentum·batch
	// statistic, with the unbiased variance, as PyTorch.
	RunningMean, RunningVar *Tensor
	Training                bool
	Momentum                float32 // 0 means 0.1
	Eps                     float32 // 0 means 1e-5
}

func (p *BatchNormParams) defaults() (momentum, eps float32) {
	momentum, eps = p.Momentum, p.Eps
	if momentum == 0 {
		momentum = 0.1
	}
	if eps == 0 {
		eps = 1e-5
	}
	return momentum, eps
}

// Normalizations run on the device of their operands (x, dy, the results,
// gamma, beta, the running statistics and NormStats: all on one device)
// through its Norm family (NormKernels), which also updates the running
// statistics there; the functions without Into allocate their results
// there. A device without the family, or an error of its implementation,
// makes them panic naming the op, the shapes and the devices.

// BatchNorm returns (x - mean)/√(var + eps)·gamma + beta per channel, with
// the batch's mean and biased variance over every axis but 1 in training
// and the running ones in inference, and the statistics it used. The mean
// and variance are float64 sums of simd partial sums of the deviations
// from a float32 estimate of the mean (see normJob.moments), so neither a
// mean far above the spread nor squares beyond float32's range (BatchNorm
// of 1e20 and -1e20 is 1 and -1) spoil them; the result is within a few
// ulp of the float64 formula (the tests hold each element to
// 16·2⁻²⁴·(|y| + |gamma|)).
func BatchNorm(x *Tensor, p BatchNormParams) (*Tensor, NormStats) {
	const op = "BatchNorm"
	checkNil(op, "x", x)
	c, p := checkBatchNorm(op, x, p)
	dev := deviceOn(op, nil, x, p.Gamma, p.Beta, p.RunningMean, p.RunningVar)
	k := normOn(op, dev, nil, x, p.Gamma, p.Beta, p.RunningMean, p.RunningVar)
	y := result(op, dev, x.shape, x)
	s := NormStats{Mean: result(op, dev, []int{c}, x), InvStd: result(op, dev, []int{c}, x)}
	ran(op, k.BatchNorm(y, s, x, p), y, x)
	return y, s
}

// BatchNormInto writes BatchNorm(x, p) into y and the statistics into s
// (two tensors of C elements) and returns y. y may be x (x is then copied
// first).
func BatchNormInto(y *Tensor, s NormStats, x *Tensor, p BatchNormParams) *Tensor {
	const op = "BatchNormInto"
	checkNil(op, "y, x", y, x)
	c, p := checkBatchNorm(op, x, p)
	checkSameShape(op, "y", y, x)
	checkStats(op, s, c, true)
	dev := deviceOn(op, y, x, p.Gamma, p.Beta, p.RunningMean, p.RunningVar, s.Mean, s.InvStd)
	k := normOn(op, dev, y, x, p.Gamma, p.Beta, p.RunningMean, p.RunningVar, s.Mean, s.InvStd)
	if dev == CPU {
		// Not unalias: the statistics' passes read x after y is written.
		x = detach(y, x)
	}
	ran(op, k.BatchNorm(y, s, x, p), y, x)
	return y
}

// BatchNormBackward returns the gradients with respect to x, gamma and
// beta of BatchNorm(x, p) that returned s, given dy. In training the batch
// statistics depend on x and their gradient is included.
func BatchNormBackward(dy, x *Tensor, s NormStats, p BatchNormParams) (dx, dgamma, dbeta *Tensor) {
	const op = "BatchNormBackward"
	checkNil(op, "dy, x", dy, x)
	c, p := checkBatchNormBackward(op, dy, x, s, p)
	dev := deviceOn(op, nil, dy, x, p.Gamma, s.Mean, s.InvStd)
	k := normOn(op, dev, nil, dy, x, p.Gamma, s.Mean, s.InvStd)
	dx, dgamma, dbeta = result(op, dev, x.shape, dy, x), result(op, dev, []int{c}, dy, x), result(op, dev, []int{c}, dy, x)
	ran(op, k.BatchNormBackward(dx, dgamma, dbeta, dy, x, s, p), dx, dy, x)
	return dx, dgamma, dbeta
}

// BatchNormBackwardInto writes the gradients of BatchNormBackward into
// dx, dgamma and dbeta (C elements each; dgamma and dbeta may be nil).
// Inputs overlapping dx are copied first.
func BatchNormBackwardInto(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p BatchNormParams) {
	const op = "BatchNormBackwardInto"
	checkNil(op, "dx, dy, x", dx, dy, x)
	c, p := checkBatchNormBackward(op, dy, x, s, p)
	checkSameShape(op, "dx", dx, x)
	checkGrads(op, c, dgamma, dbeta)
	dev := deviceOn(op, dx, dgamma, dbeta, dy, x, p.Gamma, s.Mean, s.InvStd)
	k := normOn(op, dev, dx, dgamma, dbeta, dy, x, p.Gamma, s.Mean, s.InvStd)
	if dev == CPU {
		x, dy = detach(dx, x), detach(dx, dy)
	}
	ran(op, k.BatchNormBackward(dx, dgamma, dbeta, dy, x, s, p), dx, dy, x)
}

// checkBatchNorm checks x [N, C, ...] and p for BatchNorm's forward and
// returns C and p with its defaults filled in.
func checkBatchNorm(op string, x *Tensor, p BatchNormParams) (int, BatchNormParams) {
	c := channelsOf(op, x)
	checkLen(op, "gamma", p.Gamma, c)
	checkLen(op, "beta", p.Beta, c)
	checkLen(op, "running mean", p.RunningMean, c)
	checkLen(op, "running var", p.RunningVar, c)
	if (p.RunningMean == nil) != (p.RunningVar == nil) {
		panic(fmt.Sprintf("tensor: %s: give both running statistics or neither", op))
	}
	for _, t := range []*Tensor{p.RunningMean, p.RunningVar} {
		if t != nil && !t.IsContiguous() {
			panic(fmt.Sprintf("tensor: %s: running statistics must be contiguous, got strides %v", op, t.strides))
		}
	}
	if !p.Training && p.RunningMean == nil {
		panic(fmt.Sprintf("tensor: %s: inference needs RunningMean and RunningVar", op))
	}
	if p.Training && satMul(x.shape[0], shapeLen(x.shape[2:])) < 2 {
		panic(fmt.Sprintf("tensor: %s: shape %v: training needs more than one value per channel", op, x.shape))
	}
	p.Momentum, p.Eps = p.defaults()
	return c, p
}

// checkBatchNormBackward checks dy, x, s and p for BatchNorm's backward
// and returns C and the part of p the backward reads (Gamma, Training,
// Eps).
func checkBatchNormBackward(op string, dy, x *Tensor, s NormStats, p BatchNormParams) (int, BatchNormParams) {
	c := channelsOf(op, x)
	checkSameShape(op, "dy", dy, x)
	checkLen(op, "gamma", p.Gamma, c)
	checkStats(op, s, c, false)
	_, eps := p.defaults()
	return c, BatchNormParams{Gamma: p.Gamma, Training: p.Training, Eps: eps}
}

// channelsOf returns the channel count of x [N, C, ...].
func channelsOf(op string, x *Tensor) int {
	if x.Dims() < 2 {
		panic(fmt.Sprintf("tensor: %s: shape %v: want [N, C, ...]", op, x.shape))
	}
	return x.shape[1]
}

// LayerNormParams configures LayerNorm over the last Dims axes of x.
type LayerNormParams struct {
	Dims        int     // trailing axes normalized together; 0 means 1
	Gamma, Beta *Tensor // of the trailing shape; nil means 1 and 0
	Eps         float32 // 0 means 1e-5
}

// LayerNorm returns (x - mean)/√(var + eps)·gamma + beta over each row of
// x's last p.Dims axes (biased variance), and the statistics of each row
// (shaped as x's leading axes). Accuracy as BatchNorm.
func LayerNorm(x *Tensor, p LayerNormParams) (*Tensor, NormStats) {
	const op = "LayerNorm"
	checkNil(op, "x", x)
	lead, p := checkLayerNorm(op, x, p)
	dev := deviceOn(op, nil, x, p.Gamma, p.Beta)
	k := normOn(op, dev, nil, x, p.Gamma, p.Beta)
	y := result(op, dev, x.shape, x)
	s := NormStats{Mean: result(op, dev, lead, x), InvStd: result(op, dev, lead, x)}
	ran(op, k.LayerNorm(y, s, x, p), y, x)
	return y, s
}

// LayerNormInto writes LayerNorm(x, p) into y and the statistics into s
// (as many elements each as x has rows) and returns y. y may be x (x is
// then copied first).
func LayerNormInto(y *Tensor, s NormStats, x *Tensor, p LayerNormParams) *Tensor {
	const op = "LayerNormInto"
	checkNil(op, "y, x", y, x)
	lead, p := checkLayerNorm(op, x, p)
	checkSameShape(op, "y", y, x)
	checkStats(op, s, shapeLen(lead), true)
	dev := deviceOn(op, y, x, p.Gamma, p.Beta, s.Mean, s.InvStd)
	k := normOn(op, dev, y, x, p.Gamma, p.Beta, s.Mean, s.InvStd)
	if dev == CPU {
		x = detach(y, x) // as BatchNormInto
	}
	ran(op, k.LayerNorm(y, s, x, p), y, x)
	return y
}

// LayerNormBackward returns the gradients with respect to x, gamma and
// beta of LayerNorm(x, p) that returned s, given dy.
func LayerNormBackward(dy, x *Tensor, s NormStats, p LayerNormParams) (dx, dgamma, dbeta *Tensor) {
	const op = "LayerNormBackward"
	checkNil(op, "dy, x", dy, x)
	lead, p := checkLayerNormBackward(op, dy, x, s, p)
	dev := deviceOn(op, nil, dy, x, p.Gamma, s.Mean, s.InvStd)
	k := normOn(op, dev, nil, dy, x, p.Gamma, s.Mean, s.InvStd)
	trail := x.shape[len(lead):]
	dx, dgamma, dbeta = result(op, dev, x.shape, dy, x), result(op, dev, trail, dy, x), result(op, dev, trail, dy, x)
	ran(op, k.LayerNormBackward(dx, dgamma, dbeta, dy, x, s, p), dx, dy, x)
	return dx, dgamma, dbeta
}

// LayerNormBackwardInto writes the gradients into dx, dgamma and dbeta
// (of the trailing shape's size; either may be nil). Inputs overlapping dx
// are copied first.
func LayerNormBackwardInto(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p LayerNormParams) {
	const op = "LayerNormBackwardInto"
	checkNil(op, "dx, dy, x", dx, dy, x)
	lead, p := checkLayerNormBackward(op, dy, x, s, p)
	checkSameShape(op, "dx", dx, x)
	checkGrads(op, shapeLen(x.shape[len(lead):]), dgamma, dbeta)
	dev := deviceOn(op, dx, dgamma, dbeta, dy, x, p.Gamma, s.Mean, s.InvStd)
	k := normOn(op, dev, dx, dgamma, dbeta, dy, x, p.Gamma, s.Mean, s.InvStd)
	if dev == CPU {
		x, dy = detach(dx, x), detach(dx, dy)
	}
	ran(op, k.LayerNormBackward(dx, dgamma, dbeta, dy, x, s, p), dx, dy, x)
}

// checkLayerNorm checks p against x and returns the shape of the
// statistics (x's leading axes) and p with its defaults filled in.
func checkLayerNorm(op string, x *Tensor, p LayerNormParams) ([]int, LayerNormParams) {
	d := max(p.Dims, 1)
	if p.Dims < 0 || d > x.Dims() {
		panic(fmt.Sprintf("tensor: %s: %d normalized axes for shape %v", op, p.Dims, x.shape))
	}
	trail := x.shape[x.Dims()-d:]
	for _, t := range []*Tensor{p.Gamma, p.Beta} {
		if t != nil && !slices.Equal(t.shape, trail) {
			panic(fmt.Sprintf("tensor: %s: shapes %v and %v: gamma and beta must have the normalized shape %v", op, x.shape, t.shape, trail))
		}
	}
	p.Dims = d
	if p.Eps == 0 {
		p.Eps = 1e-5
	}
	return x.shape[:x.Dims()-d], p
}

// checkLayerNormBackward checks dy, x, s and p for LayerNorm's backward
// and returns the statistics' shape and the part of p the backward reads
// (Dims, Gamma, Eps).
func checkLayerNormBackward(op string, dy, x *Tensor, s NormStats, p LayerNormParams) ([]int, LayerNormParams) {
	lead, p := checkLayerNorm(op, x, p)
	checkSameShape(op, "dy", dy, x)
	checkStats(op, s, shapeLen(lead), false)
	p.Beta = nil
	return lead, p
}

// checkSameShape panics unless t (named name) has x's shape.
func checkSameShape(op, name string, t, x *Tensor) {
	if !slices.Equal(t.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: %s shape %v and x shape %v differ", op, name, t.shape, x.shape))
	}
}

// checkStats checks s: n elements each, writable when write (a forward
// pass writes them).
func checkStats(op string, s NormStats, n int, write bool) {
	if s.Mean == nil || s.InvStd == nil {
		panic(fmt.Sprintf("tensor: %s: NormStats needs Mean and InvStd", op))
	}
	checkLen(op, "mean", s.Mean, n)
	checkLen(op, "inverse std", s.InvStd, n)
	if write {
		checkWritable(op, s.Mean)
		checkWritable(op, s.InvStd)
	}
}

// checkGrads checks the parameter gradients dgamma and dbeta (n elements
// each, writable; either may be nil).
func checkGrads(op string, n int, dgamma, dbeta *Tensor) {
	checkLen(op, "dgamma", dgamma, n)
	checkLen(op, "dbeta", dbeta, n)
	for _, t := range []*Tensor{dgamma, dbeta} {
		if t != nil {
			checkWritable(op, t)
		}
	}
}

// shapeLen is the number of elements of a tensor of the given shape
// (capped at math.MaxInt: part of a shape with a zero elsewhere may
// overflow).
func shapeLen(shape []int) int {
	n := 1
	for _, d := range shape {
		n = satMul(n, d)
	}
	return n
}

// BatchNorm is the CPU's BatchNorm: host operands, y not overlapping x.
func (cpuKernels) BatchNorm(y *Tensor, s NormStats, x *Tensor, p BatchNormParams) error {
	const op = "BatchNorm"
	j := normJobs.Get().(*normJob)
	j.reset(normJob{kind: batchNormForward, training: p.Training, momentum: p.Momentum, eps: p.Eps})
	j.channels(op, x, p.Gamma, p.Beta)
	if p.RunningMean != nil { // contiguous: the updates go straight to them
		j.runMean, j.runVar = p.RunningMean.hostData(op), p.RunningVar.hostData(op)
	}
	j.run(op, s, y, x, nil, j.c)
	return nil
}

// BatchNormBackward is the CPU's BatchNormBackward: host operands, dx
// overlapping neither dy nor x.
func (cpuKernels) BatchNormBackward(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p BatchNormParams) error {
	const op = "BatchNormBackward"
	j := normJobs.Get().(*normJob)
	j.reset(normJob{kind: batchNormBackward, training: p.Training})
	j.channels(op, x, p.Gamma, nil)
	j.grads(op, dgamma, dbeta)
	j.run(op, s, dx, x, dy, j.c)
	return nil
}

// LayerNorm is the CPU's LayerNorm: host operands, y not overlapping x.
func (cpuKernels) LayerNorm(y *Tensor, s NormStats, x *Tensor, p LayerNormParams) error {
	const op = "LayerNorm"
	j := normJobs.Get().(*normJob)
	j.reset(normJob{kind: layerNormForward, eps: p.Eps})
	j.rows(op, x, p)
	j.run(op, s, y, x, nil, j.n)
	return nil
}

// LayerNormBackward is the CPU's LayerNormBackward: host operands, dx
// overlapping neither dy nor x.
func (cpuKernels) LayerNormBackward(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p LayerNormParams) error {
	const op = "LayerNormBackward"
	j := normJobs.Get().(*normJob)
	j.reset(normJob{kind: layerNormBackward})
	j.rows(op, x, p)
	j.grads(op, dgamma, dbeta)
	j.run(op, s, dx, x, dy, j.n)
	return nil
}

// run runs the prepared job over its groups (channels or rows) with the
// statistics s, reading x (and dy, for a backward pass) and writing out
// (y or dx), then frees it.
func (j *normJob) run(op string, s NormStats, out, x, dy *Tensor, groups int) {
	j.stats(op, s)
	o := target(out)
	j.x, j.y = x.hostData(op), o.hostData(op)
	work := x.Len()
	if dy != nil {
		j.dy, work = dy.hostData(op), 2*work
	}
	parallel(j, groups, work)
	j.parts.sum(j.addGradPart)
	j.done()
	finish(out, o)
}

const (
	batchNormForward = iota
	batchNormBackward
	layerNormForward
	layerNormBackward
)

// normJob is one normalization, parallel over its groups (channels or rows).
type normJob struct {
	kind            int
	n               int // BatchNorm: images; LayerNorm: rows
	groupLen        int // BatchNorm: elements per image and channel; LayerNorm: row length
	c               int // BatchNorm: channels
	x, y, dy        []float32
	gamma, beta     []float32
	runMean, runVar []float32
	mean, invStd    []float32
	statDst         [2]*Tensor // the caller's statistics, when not contiguous
	training        bool
	momentum, eps   float32
	dgamma, dbeta   []float32
	gradDst         [2]*Tensor
	gradOut         [2]*Tensor
	statOut         [2]*Tensor
	parts           *partials // layerNormGradRows: each part's dgamma and dbeta, added in row order
}

var normJobs = sync.Pool{New: func() any { return new(normJob) }}

// checkLen panics unless t (when not nil) has n elements.
func checkLen(op, name string, t *Tensor, n int) {
	if t != nil && t.Len() != n {
		panic(fmt.Sprintf("tensor: %s: %s shape %v, want %d elements", op, name, t.shape, n))
	}
}

// vec returns t's elements in row-major order (nil for a nil t).
func vec(op string, t *Tensor) []float32 {
	if t == nil {
		return nil
	}
	return t.hostData(op)
}

// channels sets up a BatchNorm of x [N, C, ...] over its channels.
func (j *normJob) channels(op string, x, gamma, beta *Tensor) {
	j.c, j.n = x.shape[1], x.shape[0]
	j.groupLen = shapeLen(x.shape[2:])
	j.gamma, j.beta = vec(op, gamma), vec(op, beta)
}

// stats prepares the statistics: for writing by a forward pass, or for
// reading by a backward one (j.kind says which).
func (j *normJob) stats(op string, s NormStats) {
	if j.kind == batchNormBackward || j.kind == layerNormBackward {
		j.mean, j.invStd = s.Mean.hostData(op), s.InvStd.hostData(op)
		return
	}
	for i, t := range []*Tensor{s.Mean, s.InvStd} {
		j.statDst[i], j.statOut[i] = t, target(t)
	}
	j.mean, j.invStd = j.statOut[0].hostData(op), j.statOut[1].hostData(op)
}

// rows sets up a LayerNorm of x over its last p.Dims axes.
func (j *normJob) rows(op string, x *Tensor, p LayerNormParams) {
	lead := len(x.shape) - p.Dims
	j.n = shapeLen(x.shape[:lead])
	// The row length is the trailing shape's, also when there are no rows
	// (gamma and beta have it).
	j.groupLen = shapeLen(x.shape[lead:])
	j.gamma, j.beta = vec(op, p.Gamma), vec(op, p.Beta)
}

// grads prepares the parameter gradients (may be nil), zeroed.
func (j *normJob) grads(op string, dgamma, dbeta *Tensor) {
	for i, t := range []*Tensor{dgamma, dbeta} {
		if t == nil {
			continue
		}
		j.gradDst[i], j.gradOut[i] = t, target(t)
		fillHost(j.gradOut[i], 0)
	}
	if j.gradOut[0] != nil {
		j.dgamma = j.gradOut[0].hostData(op)
	}
	if j.gradOut[1] != nil {
		j.dbeta = j.gradOut[1].hostData(op)
	}
}

// done copies results into non-contiguous destinations and frees the job.
func (j *normJob) done() {
	for i := range 2 {
		finish(j.statDst[i], j.statOut[i])
		finish(j.gradDst[i], j.gradOut[i])
	}
	j.reset(normJob{})
	normJobs.Put(j)
}

// reset sets j to n, keeping j's partials (whose list keeps its backing
// array, so that a pooled job's backward pass allocates nothing).
func (j *normJob) reset(n normJob) {
	p := j.parts
	if p == nil {
		p = new(partials)
	}
	*j = n
	j.parts = p
}

// plane returns image n's elements of channel c in s.
func (j *normJob) plane(s []float32, n, c int) []float32 {
	return s[(n*j.c+c)*j.groupLen:][:j.groupLen]
}

func (j *normJob) param(p []float32, i int, def float32) float32 {
	if p == nil {
		return def
	}
	return p[i]
}

func (j *normJob) RunRange(lo, hi int) {
	switch j.kind {
	case batchNormForward:
		for c := lo; c < hi; c++ {
			j.batchNormChannel(c)
		}
	case batchNormBackward:
		for c := lo; c < hi; c++ {
			j.batchNormGradChannel(c)
		}
	case layerNormForward:
		for r := lo; r < hi; r++ {
			j.layerNormRow(r)
		}
	case layerNormBackward:
		j.layerNormGradRows(lo, hi)
	}
}

func (j *normJob) batchNormChannel(c int) {
	m := j.n * j.groupLen
	var mean, invStd, delta float64
	normalized := false
	if j.training {
		var variance float64
		mean, variance, delta, normalized = j.moments(c)
		invStd = 1 / math.Sqrt(variance+float64(j.eps))
		if j.runMean != nil {
			mom := float64(j.momentum)
			j.runMean[c] = float32((1-mom)*float64(j.runMean[c]) + mom*mean)
			j.runVar[c] = float32((1-mom)*float64(j.runVar[c]) + mom*variance*float64(m)/float64(m-1))
		}
	} else {
		mean = float64(j.runMean[c])
		invStd = 1 / math.Sqrt(float64(j.runVar[c])+float64(j.eps))
	}
	j.mean[c], j.invStd[c] = float32(mean), float32(invStd)
	gamma, shift := float64(j.param(j.gamma, c, 1)), float64(j.param(j.beta, c, 0))
	scale := gamma * invStd
	for n := 0; n < j.n; n++ {
		y := j.plane(j.y, n, c)
		switch {
		case normalized: // y holds (x - mean)·invStd
			simd.Scale(y, y, float32(gamma))
			simd.AddScalar(y, y, float32(shift))
		case j.training: // y holds x - c, with mean - c = delta
			simd.Scale(y, y, float32(scale))
			simd.AddScalar(y, y, float32(shift-delta*scale))
		default:
			simd.Scale(y, j.plane(j.x, n, c), float32(scale))
			simd.AddScalar(y, y, float32(shift-mean*scale))
		}
	}
}

// moments returns the mean and biased variance of group g (BatchNorm: a
// channel, over its planes; LayerNorm: a row) and leaves y holding the
// deviations x - c from a float32 c, with delta = mean - c. c is the
// float32 mean from simd.Sum; y = x - c (simd.AddScalar), and in float64
// s2 = Σy² from simd.Norm (squares accumulated in float64, so no
// overflow) and s1 = Σy, from simd.Sum of pieces of sumPiece elements of
// y, or when c is below the spread from the first pass's sums (which then
// err no more); then delta = s1/m and variance = s2/m - delta²,
// recentering once if delta was not small against the spread. Only float32 rounding of the deviations and
// of the partial sums of each run enters, relative to the spread of x,
// not its magnitude. When float32 could not hold the deviations or their
// sums (values near float32's limits), it computes everything in float64
// instead, leaves y holding (x - mean)·invStd and reports normalized.
func (j *normJob) moments(g int) (mean, variance, delta float64, normalized bool) {
	planes := j.groupPlanes()
	m := float64(planes * j.groupLen)
	var s float64
	for p := range planes {
		s += float64(simd.Sum(j.groupPlane(j.x, g, p)))
	}
	c := float32(s / m)
	for iter := 0; ; iter++ {
		var s1, s2 float64
		ok := isFinite(c)
		for p := 0; p < planes && ok; p++ {
			x, y := j.groupPlane(j.x, g, p), j.groupPlane(j.y, g, p)
			simd.AddScalar(y, x, -c)
			r := simd.Norm(y)
			s2 += float64(r) * float64(r)
			ok = isFinite(r)
		}
		if !ok {
			break
		}
		if iter == 0 && float64(c)*float64(c) <= s2/m {
			// A mean below the spread: the first pass's sums erred by
			// no more than a sum of the deviations would, so they give
			// Σ(x - c) without another pass (zero-mean activations).
			s1 = s - m*float64(c)
		} else {
			for p := 0; p < planes && ok; p++ {
				y := j.groupPlane(j.y, g, p)
				for k := 0; k < len(y); k += sumPiece {
					d := simd.Sum(y[k:min(k+sumPiece, len(y))])
					s1 += float64(d)
					ok = ok && isFinite(d)
				}
			}
			if !ok {
				break
			}
		}
		delta = s1 / m
		variance = max(s2/m-delta*delta, 0)
		// Recenter once when the first estimate of the mean was off by
		// more than 2⁻⁵ standard deviations (a large mean, whose float32
		// sum erred by more than the spread): the subtraction above then
		// cancels less than 2⁻¹⁰ of s2.
		if delta*delta <= 0x1p-10*variance || iter == 1 {
			return float64(c) + delta, variance, delta, false
		}
		c = float32(float64(c) + delta)
	}
	mean, variance = j.exactMoments(g)
	invStd := 1 / math.Sqrt(variance+float64(j.eps))
	for p := range planes {
		x, y := j.groupPlane(j.x, g, p), j.groupPlane(j.y, g, p)
		for i, v := range x {
			y[i] = float32((float64(v) - mean) * invStd)
		}
	}
	return mean, variance, 0, true
}

// exactMoments returns group g's mean and biased variance summed in
// float64 element by element: moments' fallback.
func (j *normJob) exactMoments(g int) (mean, variance float64) {
	planes := j.groupPlanes()
	m := float64(planes * j.groupLen)
	for p := range planes {
		for _, v := range j.groupPlane(j.x, g, p) {
			mean += float64(v)
		}
	}
	mean /= m
	for p := range planes {
		for _, v := range j.groupPlane(j.x, g, p) {
			d := float64(v) - mean
			variance += d * d
		}
	}
	return mean, variance / m
}

// groupPlanes is the number of contiguous planes of a group: a BatchNorm
// channel has one per image, a LayerNorm row is one.
func (j *normJob) groupPlanes() int {
	if j.kind == layerNormForward {
		return 1
	}
	return j.n
}

// groupPlane returns plane p of group g in s.
func (j *normJob) groupPlane(s []float32, g, p int) []float32 {
	if j.kind == layerNormForward {
		return s[g*j.groupLen:][:j.groupLen]
	}
	return j.plane(s, p, g)
}

// batchNormGradChannel: with xm = x - mean, a = gamma·invStd and M the
// channel's element count, dx = a·(dy - Σdy/M - xm·invStd²·Σ(dy·xm)/M) in
// training and a·dy in inference; dgamma = Σ(dy·xm)·invStd, dbeta = Σdy.
func (j *normJob) batchNormGradChannel(c int) {
	m := float64(j.n * j.groupLen)
	mean, invStd := j.mean[c], float64(j.invStd[c])
	var sdy, sdyx float64
	for n := 0; n < j.n; n++ {
		dx, dy := j.plane(j.y, n, c), j.plane(j.dy, n, c)
		simd.AddScalar(dx, j.plane(j.x, n, c), -mean)
		sdy += float64(simd.Sum(dy))
		sdyx += float64(simd.Dot(dy, dx))
	}
	if j.dgamma != nil {
		j.dgamma[c] = float32(sdyx * invStd)
	}
	if j.dbeta != nil {
		j.dbeta[c] = float32(sdy)
	}
	a := float64(j.param(j.gamma, c, 1)) * invStd
	var b, k float64
	if j.training {
		b, k = -a*invStd*invStd*sdyx/m, -a*sdy/m
	}
	for n := 0; n < j.n; n++ {
		dx, dy := j.plane(j.y, n, c), j.plane(j.dy, n, c)
		simd.Scale(dx, dx, float32(b))
		simd.Axpy(dx, float32(a), dy)
		if k != 0 {
			simd.AddScalar(dx, dx, float32(k))
		}
	}
}

func (j *normJob) layerNormRow(r int) {
	d := j.groupLen
	y := j.y[r*d:][:d]
	mean, variance, delta, normalized := j.moments(r)
	invStd := 1 / math.Sqrt(variance+float64(j.eps))
	j.mean[r], j.invStd[r] = float32(mean), float32(invStd)
	if !normalized { // y holds x - c, with mean - c = delta
		simd.Scale(y, y, float32(invStd))
		// The shift moves each normalized value by |delta|·invStd: a pass
		// when that is more than 2⁻²⁴, within the stated bound below
		// (zero-mean rows: c is within an ulp of their mean).
		if off := -delta * invStd; math.Abs(off) > 0x1p-24 {
			simd.AddScalar(y, y, float32(off))
		}
	}
	if j.gamma != nil {
		simd.Mul(y, y, j.gamma)
	}
	if j.beta != nil {
		simd.Add(y, y, j.beta)
	}
}

// layerNormGradRows: with xh = (x - mean)·invStd and g = dy·gamma, dx =
// invStd·(g - mean(g) - xh·mean(g·xh)); dgamma = Σ_rows dy·xh, dbeta =
// Σ_rows dy, summed per part and added in row order once every part is
// done (addGradPart), so that the sums are the same bits for a given
// number of threads whichever part finishes first.
func (j *normJob) layerNormGradRows(lo, hi int) {
	d := j.groupLen
	buf := workBufs.Get()
	buf.col = growF(buf.col, 2*d)
	xh, g := buf.col[:d], buf.col[d:]
	var dg, db []float32
	if j.dgamma != nil || j.dbeta != nil {
		buf.dw = growF(buf.dw, 2*d)
		clear(buf.dw)
		dg, db = buf.dw[:d], buf.dw[d:]
	}
	for r := lo; r < hi; r++ {
		x, dy, dx := j.x[r*d:][:d], j.dy[r*d:][:d], j.y[r*d:][:d]
		invStd := j.invStd[r]
		simd.AddScalar(xh, x, -j.mean[r])
		simd.Scale(xh, xh, invStd)
		if j.gamma != nil {
			simd.Mul(g, dy, j.gamma)
		} else {
			copy(g, dy)
		}
		mg := simd.Sum(g) / float32(d)
		mgx := simd.Dot(g, xh) / float32(d)
		copy(dx, g)
		simd.Axpy(dx, -mgx, xh)
		simd.AddScalar(dx, dx, -mg)
		simd.Scale(dx, dx, invStd)
		if dg != nil {
			simd.Mul(g, dy, xh)
			simd.Add(dg, dg, g)
			simd.Add(db, db, dy)
		}
	}
	if dg != nil {
		j.parts.keep(lo, buf)
		return
	}
	workBufs.Put(buf)
}

// addGradPart adds one part's dgamma and dbeta sums (buf.dw) to the job's.
func (j *normJob) addGradPart(buf *workBuf) {
	d := j.groupLen
	if j.dgamma != nil {
		simd.Add(j.dgamma, j.dgamma, buf.dw[:d])
	}
	if j.dbeta != nil {
		simd.Add(j.dbeta, j.dbeta, buf.dw[d:2*d])
	}
}
