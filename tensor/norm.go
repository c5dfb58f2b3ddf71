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
	checkNil("BatchNorm", "x", x)
	c := channelsOf("BatchNorm", x)
	s := NormStats{Mean: New(c), InvStd: New(c)}
	return BatchNormInto(New(x.shape...), s, x, p), s
}

// BatchNormInto writes BatchNorm(x, p) into y and the statistics into s
// (two [C] tensors) and returns y. y may be x.
func BatchNormInto(y *Tensor, s NormStats, x *Tensor, p BatchNormParams) *Tensor {
	const op = "BatchNormInto"
	checkNil(op, "y, x", y, x)
	c := channelsOf(op, x)
	if !slices.Equal(y.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: y shape %v and x shape %v differ", op, y.shape, x.shape))
	}
	checkWritable(op, y)
	j := normJobs.Get().(*normJob)
	*j = normJob{kind: batchNormForward}
	j.channels(op, x, c, p.Gamma, p.Beta, p.RunningMean, p.RunningVar, s.Mean, s.InvStd)
	j.momentum, j.eps = p.defaults()
	j.training = p.Training
	if !p.Training && p.RunningMean == nil {
		panic(fmt.Sprintf("tensor: %s: inference needs RunningMean and RunningVar", op))
	}
	if p.Training && j.groupLen*j.n < 2 {
		panic(fmt.Sprintf("tensor: %s: shape %v: training needs more than one value per channel", op, x.shape))
	}
	x = unalias(y, x)
	out := target(y)
	j.x, j.y = x.hostData(op), out.hostData(op)
	parallel(j, c, x.Len())
	j.done()
	finish(y, out)
	return y
}

// BatchNormBackward returns the gradients with respect to x, gamma and
// beta of BatchNorm(x, p) that returned s, given dy. In training the batch
// statistics depend on x and their gradient is included.
func BatchNormBackward(dy, x *Tensor, s NormStats, p BatchNormParams) (dx, dgamma, dbeta *Tensor) {
	checkNil("BatchNormBackward", "dy, x", dy, x)
	c := channelsOf("BatchNormBackward", x)
	dx, dgamma, dbeta = New(x.shape...), New(c), New(c)
	BatchNormBackwardInto(dx, dgamma, dbeta, dy, x, s, p)
	return dx, dgamma, dbeta
}

// BatchNormBackwardInto writes the gradients of BatchNormBackward into
// dx, dgamma and dbeta ([C] each; dgamma and dbeta may be nil).
func BatchNormBackwardInto(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p BatchNormParams) {
	const op = "BatchNormBackward"
	checkNil(op, "dx, dy, x", dx, dy, x)
	c := channelsOf(op, x)
	if !slices.Equal(dy.shape, x.shape) || !slices.Equal(dx.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: shapes dx %v, dy %v and x %v differ", op, dx.shape, dy.shape, x.shape))
	}
	checkWritable(op, dx)
	j := normJobs.Get().(*normJob)
	*j = normJob{kind: batchNormBackward}
	j.channels(op, x, c, p.Gamma, nil, nil, nil, s.Mean, s.InvStd)
	j.training = p.Training
	j.grads(op, c, dgamma, dbeta)
	out := target(dx)
	j.x, j.dy, j.y = detach(dx, x).hostData(op), detach(dx, dy).hostData(op), out.hostData(op)
	parallel(j, c, 2*x.Len())
	j.done()
	finish(dx, out)
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
	checkNil("LayerNorm", "x", x)
	lead := layerRows("LayerNorm", x, p)
	s := NormStats{Mean: New(lead...), InvStd: New(lead...)}
	return LayerNormInto(New(x.shape...), s, x, p), s
}

// LayerNormInto writes LayerNorm(x, p) into y and the statistics into s
// and returns y. y may be x.
func LayerNormInto(y *Tensor, s NormStats, x *Tensor, p LayerNormParams) *Tensor {
	const op = "LayerNormInto"
	checkNil(op, "y, x", y, x)
	lead := layerRows(op, x, p)
	if !slices.Equal(y.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: y shape %v and x shape %v differ", op, y.shape, x.shape))
	}
	checkWritable(op, y)
	j := normJobs.Get().(*normJob)
	*j = normJob{kind: layerNormForward}
	j.rows(op, x, lead, p, s)
	x = unalias(y, x)
	out := target(y)
	j.x, j.y = x.hostData(op), out.hostData(op)
	parallel(j, j.n, x.Len())
	j.done()
	finish(y, out)
	return y
}

// LayerNormBackward returns the gradients with respect to x, gamma and
// beta of LayerNorm(x, p) that returned s, given dy.
func LayerNormBackward(dy, x *Tensor, s NormStats, p LayerNormParams) (dx, dgamma, dbeta *Tensor) {
	checkNil("LayerNormBackward", "dy, x", dy, x)
	layerRows("LayerNormBackward", x, p)
	trail := x.shape[len(x.shape)-max(p.Dims, 1):]
	dx, dgamma, dbeta = New(x.shape...), New(trail...), New(trail...)
	LayerNormBackwardInto(dx, dgamma, dbeta, dy, x, s, p)
	return dx, dgamma, dbeta
}

// LayerNormBackwardInto writes the gradients into dx, dgamma and dbeta
// (of the trailing shape; either may be nil).
func LayerNormBackwardInto(dx, dgamma, dbeta, dy, x *Tensor, s NormStats, p LayerNormParams) {
	const op = "LayerNormBackward"
	checkNil(op, "dx, dy, x", dx, dy, x)
	lead := layerRows(op, x, p)
	if !slices.Equal(dy.shape, x.shape) || !slices.Equal(dx.shape, x.shape) {
		panic(fmt.Sprintf("tensor: %s: shapes dx %v, dy %v and x %v differ", op, dx.shape, dy.shape, x.shape))
	}
	checkWritable(op, dx)
	j := normJobs.Get().(*normJob)
	*j = normJob{kind: layerNormBackward}
	j.rows(op, x, lead, p, s)
	j.grads(op, j.groupLen, dgamma, dbeta)
	out := target(dx)
	j.x, j.dy, j.y = detach(dx, x).hostData(op), detach(dx, dy).hostData(op), out.hostData(op)
	parallel(j, j.n, 2*x.Len())
	j.done()
	finish(dx, out)
}

// layerRows checks p against x and returns the shape of the statistics.
func layerRows(op string, x *Tensor, p LayerNormParams) []int {
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
	return x.shape[:x.Dims()-d]
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
	mu              sync.Mutex
}

var normJobs = sync.Pool{New: func() any { return new(normJob) }}

// checkLen panics unless t (when not nil) has n elements.
func checkLen(op, name string, t *Tensor, n int) {
	if t != nil && t.Len() != n {
		panic(fmt.Sprintf("tensor: %s: %s shape %v, want %d elements", op, name, t.shape, n))
	}
}

// vec returns t's elements checked to be n long (nil for a nil t).
func vec(op, name string, t *Tensor, n int) []float32 {
	checkLen(op, name, t, n)
	if t == nil {
		return nil
	}
	return t.hostData(op)
}

func (j *normJob) channels(op string, x *Tensor, c int, gamma, beta, rm, rv, mean, invStd *Tensor) {
	j.c, j.n = c, x.shape[0]
	j.groupLen = 1
	for _, d := range x.shape[2:] {
		j.groupLen *= d
	}
	j.gamma, j.beta = vec(op, "gamma", gamma, c), vec(op, "beta", beta, c)
	j.runMean, j.runVar = vec(op, "running mean", rm, c), vec(op, "running var", rv, c)
	if (rm == nil) != (rv == nil) {
		panic(fmt.Sprintf("tensor: %s: give both running statistics or neither", op))
	}
	for _, t := range []*Tensor{rm, rv} {
		if t != nil && !t.IsContiguous() {
			panic(fmt.Sprintf("tensor: %s: running statistics must be contiguous, got strides %v", op, t.strides))
		}
	}
	j.stats(op, mean, invStd, c)
}

// stats prepares the statistics (n elements each): for writing by a
// forward pass, or for reading by a backward one (j.kind says which).
func (j *normJob) stats(op string, mean, invStd *Tensor, n int) {
	if mean == nil || invStd == nil {
		panic(fmt.Sprintf("tensor: %s: NormStats needs Mean and InvStd", op))
	}
	checkLen(op, "mean", mean, n)
	checkLen(op, "inverse std", invStd, n)
	if j.kind == batchNormBackward || j.kind == layerNormBackward {
		j.mean, j.invStd = mean.hostData(op), invStd.hostData(op)
		return
	}
	for i, t := range []*Tensor{mean, invStd} {
		checkWritable(op, t)
		j.statDst[i], j.statOut[i] = t, target(t)
	}
	j.mean, j.invStd = j.statOut[0].hostData(op), j.statOut[1].hostData(op)
}

func (j *normJob) rows(op string, x *Tensor, lead []int, p LayerNormParams, s NormStats) {
	j.n = 1
	for _, d := range lead {
		j.n *= d
	}
	// The row length is the trailing shape's, also when there are no rows
	// (gamma and beta have it).
	j.groupLen = 1
	for _, d := range x.shape[len(lead):] {
		j.groupLen *= d
	}
	j.gamma, j.beta = vec(op, "gamma", p.Gamma, j.groupLen), vec(op, "beta", p.Beta, j.groupLen)
	j.eps = p.Eps
	if j.eps == 0 {
		j.eps = 1e-5
	}
	j.stats(op, s.Mean, s.InvStd, j.n)
}

// grads prepares the parameter gradients (n elements each, may be nil).
func (j *normJob) grads(op string, n int, dgamma, dbeta *Tensor) {
	for i, t := range []*Tensor{dgamma, dbeta} {
		if t == nil {
			continue
		}
		checkLen(op, [2]string{"dgamma", "dbeta"}[i], t, n)
		checkWritable(op, t)
		j.gradDst[i], j.gradOut[i] = t, target(t)
		Fill(j.gradOut[i], 0)
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
	*j = normJob{}
	normJobs.Put(j)
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
// Σ_rows dy, summed per worker and added under the job's lock.
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
		j.mu.Lock()
		if j.dgamma != nil {
			simd.Add(j.dgamma, j.dgamma, dg)
		}
		if j.dbeta != nil {
			simd.Add(j.dbeta, j.dbeta, db)
		}
		j.mu.Unlock()
	}
	workBufs.Put(buf)
}
