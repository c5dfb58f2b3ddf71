package tensor

import (
	"math"

	"github.com/lanesgo/lanes/simd"
)

// Mean and Var accumulate in float64, so that their results are those of
// the exact mean and variance of the float32 elements rounded, give or
// take a little, instead of float32 sums' n·2⁻²⁴·Σ|x| (the mean of
// 16777216, 16777218 and 16777220 was 16777220). The elements are walked
// as Sum walks them, in runs of up to chunk elements.
//
// Mean: a piece of m elements (up to sumPiece) of a run along the
// reduced axes (one output) is shifted by an estimate s of its mean
// (simd.AddScalar into scratch) and summed by simd.Sum; m·s plus that sum
// goes to the output's float64 total. s is the previous piece's mean in
// the same run, or for a run's first piece simd.Sum's float32 mean of it.
// The sum's error is at most (m+1)·2⁻²⁴·Σ|x - s| by simd.Sum's bound, and
// Σ|x - s| is at most Σ|x - mean| over the piece, twice, plus over the
// piece before (or for a first piece plus 2⁻¹³·Σ|x|): the error scales
// with the spread of the values, not with their magnitude. A run along kept axes (one element per output) goes into
// float32 block sums of the deviations from each output's first element
// (simd.Sub, simd.Add), moved to float64 every blockRuns runs: at most
// 17·2⁻²⁴·Σ|x - first| is lost, which scales with the spread too. A run
// whose float32 sums are not finite (an element is ±Inf or NaN, or a sum
// overflows) is summed in float64; for the blocks, the whole pass is then
// done again in float64.
//
// Var: with c the mean rounded to float32, a second pass sums x - c and
// (x - c)² in float64 (each element exactly converted, each deviation and
// square rounded once), and the variance is (Σ(x-c)² - (Σ(x-c))²/n)/(n -
// ddof), the corrected two-pass formula: the shift c is within Mean's
// error of the mean, and the correction term removes what remains.

// momentJob is one Mean or Var pass over x into float64 totals, one per
// output, laid out as the output with reduced axes kept as 1.
type momentJob struct {
	acc, acc2 []float64 // Σx, or Σ(x-c) and Σ(x-c)²
	mean      []float64 // nil for Mean's pass; else c = float32(mean[o])
	shift     float32   // Mean's pass: the previous chunk's mean in a run
	// Mean's pass over kept-axis runs of stride 1 (see blockSum): the
	// float32 block sums, each output's shift (its first element), and
	// how many runs each segment of outputs has had (at its first output).
	acc32, shift32 []float32
	visits         []int
	exact          bool // add kept-axis runs in float64 instead
}

// blockRuns is how many kept-axis runs Mean's pass adds in float32
// before moving the block sums to float64: at most 17·2⁻²⁴ of the
// deviations' absolute sum is lost per block.
const blockRuns = 16

// reduceMoments returns the float64 totals of x over the axes in mask
// (see momentJob; acc2 is nil without mean) and the kept shape they are
// laid out in.
func reduceMoments(op string, x *Tensor, mask [MaxDims]bool, mean []float64) (acc, acc2 []float64, keep []int) {
	keep, _, count := reducedShapes(x, mask, true)
	n, _ := checkedSize(keep) // at most x's elements
	j := momentJob{acc: make([]float64, n), mean: mean}
	if mean != nil {
		j.acc2 = make([]float64, n)
	}
	if !j.walk(op, x, keep) {
		return j.acc, j.acc2, keep
	}
	// Mean's pass went through blocks: add them and the shifts, or
	// when one is not finite (an element is ±Inf or NaN, or a block
	// overflowed float32) do the pass again in float64.
	finite := true
	for o, a := range j.acc32 {
		j.acc[o] += float64(a) + float64(count)*float64(j.shift32[o])
		finite = finite && !math.IsInf(j.acc[o], 0) && j.acc[o] == j.acc[o]
	}
	if !finite {
		clear(j.acc)
		j.exact = true
		j.walk(op, x, keep)
	}
	return j.acc, j.acc2, keep
}

// walk runs j over x's elements (outputs laid out in keep) and reports
// whether it used the float32 blocks.
func (j *momentJob) walk(op string, x *Tensor, keep []int) (blocks bool) {
	// dst only lays out the totals: loop reads its strides, not its data.
	dst := &Tensor{shape: keep, strides: contiguousStrides(keep)}
	var l loop
	l.init(op, x.shape, dst, x)
	if l.empty {
		return false
	}
	runLen, st := l.inner()
	if blocks = st[0] == 1 && j.mean == nil && !j.exact; blocks {
		j.acc32, j.shift32, j.visits = make([]float32, len(j.acc)), make([]float32, len(j.acc)), make([]int, len(j.acc))
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	// Mean's contiguous runs go to simd in pieces of sumPiece elements
	// (fewer calls), others in chunks through scratch.
	step, tmp := chunk, sc.buf[0][:]
	if st[1] == 1 && (st[0] == 0 || blocks) {
		step, tmp = sumPiece, make([]float32, sumPiece)
	}
	xs := x.data
	l.each(0, l.runs(), &sc.off, &sc.idx, func(off *[maxOps]int) {
		j.shift = nan32 // a new run: estimate its first piece's mean afresh
		for c := 0; c < runLen; c += step {
			m := min(step, runLen-c)
			run := stridedRun(xs, off[1]+c*st[1], m, st[1], sc.buf[1][:])
			j.add(off[0]+c*st[0], st[0], run, tmp[:m])
		}
	})
	return blocks
}

// sumPiece is the length of the pieces of contiguous runs that Mean's
// pass hands simd: simd.Sum's bound for it is 2⁻¹³ of the deviations'
// absolute sum (its lanes do much better), and pieces of chunk (256)
// took about twice as long: Mean of 1024×1024 over all axes, best of 6
// runs, 228 µs with chunks (and an estimate of each one's mean), 108 µs
// with pieces.
const sumPiece = 2048

// add folds run into the totals from output od on, output stride ost (0:
// every element into od); tmp is scratch of len(run).
func (j *momentJob) add(od, ost int, run, tmp []float32) {
	switch {
	case ost == 0 && j.mean == nil:
		var t float64
		t, j.shift = sumRun(run, tmp, j.shift)
		j.acc[od] += t
	case ost == 0:
		s1, s2 := deviations(run, float32(j.mean[od]))
		j.acc[od] += s1
		j.acc2[od] += s2
	case ost == 1 && j.acc32 != nil && !j.exact:
		j.blockSum(od, run, tmp)
	case ost == 1:
		// The common kept-axis layout (the reduced axes outside the run):
		// slices of the outputs, without a multiply per element.
		a := j.acc[od : od+len(run)]
		if j.mean == nil {
			for i, v := range run {
				a[i] += float64(v)
			}
			return
		}
		a2, mean := j.acc2[od:od+len(run)], j.mean[od:od+len(run)]
		for i, v := range run {
			d := float64(v) - float64(float32(mean[i]))
			a[i] += d
			a2[i] += d * d
		}
	case j.mean == nil:
		for i, v := range run {
			j.acc[od+i*ost] += float64(v)
		}
	default:
		for i, v := range run {
			o := od + i*ost
			d := float64(v) - float64(float32(j.mean[o]))
			j.acc[o] += d
			j.acc2[o] += d * d
		}
	}
}

// blockSum adds a kept-axis run to the outputs od.. in float32, as
// deviations from each output's first element (the shift, taken on the
// segment's first visit): simd.Sub and simd.Add, and every blockRuns runs
// the block sums move to the float64 totals. reduceMoments adds the
// shifts, count times each, at the end.
func (j *momentJob) blockSum(od int, run, tmp []float32) {
	m := len(run)
	a32, sh := j.acc32[od:od+m], j.shift32[od:od+m]
	if j.visits[od] == 0 {
		copy(sh, run)
	} else {
		simd.Sub(tmp, run, sh)
		simd.Add(a32, a32, tmp)
	}
	if j.visits[od]++; j.visits[od]%blockRuns == 0 {
		a := j.acc[od : od+m]
		for i, v := range a32 {
			a[i] += float64(v)
		}
		clear(a32)
	}
}

// sumRun returns Σ run, in float32 around sh (see the comment at the
// top), or in float64 when that is not finite, and run's mean as the
// shift for the next chunk of the run. A NaN sh is estimated first, with
// simd.Sum.
func sumRun(run, tmp []float32, sh float32) (float64, float32) {
	m := float64(len(run))
	if sh != sh {
		sh = float32(float64(simd.Sum(run)) / m)
	}
	if isFinite(sh) {
		simd.AddScalar(tmp, run, -sh)
		if d := simd.Sum(tmp); isFinite(d) {
			t := float64(d) + m*float64(sh)
			return t, float32(t / m)
		}
	}
	var t float64
	for _, v := range run {
		t += float64(v)
	}
	return t, float32(t / m)
}

var nan32 = float32(math.NaN())

// deviations returns Σ(run - c) and Σ(run - c)² in float64, in four
// independent chains (as simd's generic sums) to break the add latency.
func deviations(run []float32, c float32) (s1, s2 float64) {
	cc := float64(c)
	var a0, a1, a2, a3, q0, q1, q2, q3 float64
	i := 0
	for ; i+4 <= len(run); i += 4 {
		r := run[i : i+4 : i+4]
		d0, d1, d2, d3 := float64(r[0])-cc, float64(r[1])-cc, float64(r[2])-cc, float64(r[3])-cc
		a0, a1, a2, a3 = a0+d0, a1+d1, a2+d2, a3+d3
		q0, q1, q2, q3 = q0+d0*d0, q1+d1*d1, q2+d2*d2, q3+d3*d3
	}
	for ; i < len(run); i++ {
		d := float64(run[i]) - cc
		a0 += d
		q0 += d * d
	}
	return (a0 + a1) + (a2 + a3), (q0 + q1) + (q2 + q3)
}

func isFinite(v float32) bool { return v-v == 0 }

// meanOf returns the float64 means of x over the axes in mask (NaN for no
// elements), laid out in keep, and the number of elements n per output.
func meanOf(op string, x *Tensor, mask [MaxDims]bool) (mean []float64, keep []int, n int) {
	_, _, n = reducedShapes(x, mask, true)
	mean, _, keep = reduceMoments(op, x, mask, nil)
	for i := range mean {
		mean[i] /= float64(n) // 0/0 = NaN for no elements
	}
	return mean, keep, n
}

// varianceOf returns the float64 variances of x over the axes in mask
// with divisor n - ddof (NaN where that is not positive), laid out in keep.
func varianceOf(op string, x *Tensor, ddof int, mask [MaxDims]bool) (v []float64, keep []int) {
	mean, keep, n := meanOf(op, x, mask)
	s1, s2, _ := reduceMoments(op, x, mask, mean)
	for i := range s1 {
		s1[i] = math.Max(s2[i]-s1[i]*s1[i]/float64(n), 0) / float64(n-ddof)
		if n-ddof <= 0 {
			s1[i] = math.NaN()
		}
	}
	return s1, keep
}
