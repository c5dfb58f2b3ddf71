package tensor

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/lanesgo/lanes/internal/freelist"
	"github.com/lanesgo/lanes/internal/par"
	"github.com/lanesgo/lanes/simd"
)

// AttentionParams configures ScaledDotProductAttention.
type AttentionParams struct {
	// Scale multiplies the scores q·k; 0 means 1/√D (D the size of the
	// last axis of q and k; with D = 0 every score is 0 and Scale does not
	// matter). It must be finite.
	Scale float32
	// Causal lets query i attend to the keys j ≤ i + (Sk - Sq) only: the
	// mask is aligned to the bottom right, as FlashAttention-2's, so that
	// a step of a KV cache (Sq = 1) sees every cached key, and with
	// Sq > Sk the first Sq - Sk queries see no key at all.
	Causal bool
	// KeyPadding, when not nil, is a [B, Sk] tensor on the operands'
	// device: a nonzero element (NaN included) masks key j of batch b out
	// for every query of every head.
	KeyPadding *Tensor
}

// Scaled dot-product attention runs on the device of its operands. On the
// host it is fused and tiled as FlashAttention-2 is: each block of 128
// queries of one (batch, head) runs over the keys in blocks of 128 with an
// online softmax (a running maximum and sum per row), the scores and
// probabilities of one block pair live in per-thread scratch, and the
// products are simd.Sgemm calls on the operands' own memory, so memory is
// O(seq·dim): no [Sq, Sk] matrix is ever made. The blocks of queries of
// every (batch, head) are spread over the worker pool, one part each;
// causal blocks of keys no query of a block can see are skipped. The
// backward pass recomputes the probabilities from q, k and the
// logsumexp of each row the forward pass saved, and runs one (batch,
// head) per part, its blocks of keys in turn, dq summed over them in
// order; with fewer (batch, head)s than twice the threads, it runs the
// blocks of keys (dk, dv) in parallel, then the blocks of queries (dq),
// recomputing the probabilities (7 products of a block pair instead of 5)
// with the same sums in the same order. Results are the same on every run
// and thread count.
//
// On a device the op is composed of the device's own ops (batched MatMul,
// Where, Softmax, LogSumExp, the elementwise ops): it is not fused there
// yet and makes [B, H, Sq, Sk] temporaries (O(seq²) memory). A causal mask
// is made on the host and copied to the device (Sq·Sk elements, each
// call). The results agree with the host's within rounding, but that a
// row whose every unmasked score is -Inf gives NaN there.
//
// Masks: a key masked for a row (causal, KeyPadding) has weight 0. A row
// that sees no key (all masked, Sk = 0, or every score -Inf) gives an
// output of 0, a logsumexp of -Inf and a gradient of 0 — PyTorch's
// composition gives NaN there; 0 is what a padded query row of a batch
// needs. A score of -Inf (from an infinite q or k) counts as masked.
//
// Special values: a NaN or +Inf score, or a NaN or ±Inf in the v row of
// a key a row attends to, makes that row's output NaN (or ±Inf for an
// infinite v with finite scores), as the formula does; a NaN or ±Inf in
// the v row of a key masked for a row may also reach it (0·Inf is NaN, as
// in PyTorch's composition).
//
// Accuracy (host): the scores and products are float32 simd.Sgemm sums,
// the exponentials simd.Exp (2 ulp); the output is within about
// (D + Sk)·2⁻²⁴ relative to the largest |v| of the row; the tests hold it
// and the logsumexp to 4e-6·√(D + Sk + 1)·(1 + max|v|) (times |scale| when
// above 1) against a float64 reference, and the gradients to ten times
// that relative to their largest element.
//
// Operands: q [B, H, Sq, D], k [B, H, Sk, D], v [B, H, Sk, Dv]; the
// batch and head axes are equal (Expand k and v for grouped-query
// attention: broadcast views are read in place). Any views are accepted:
// those whose last axis is contiguous and whose rows do not overlap
// (transposed heads, as from a [B, S, H, D] projection, included) are read
// in place; others are copied first. Results may be any views; on the
// host an input overlapping a result is copied first.

// ScaledDotProductAttention returns softmax(q·kᵀ·scale + mask)·v, shaped
// [B, H, Sq, Dv], on the operands' device (see above).
func ScaledDotProductAttention(q, k, v *Tensor, p AttentionParams) *Tensor {
	const op = "ScaledDotProductAttention"
	checkNil(op, "q, k, v", q, k, v)
	sh := checkAttention(op, q, k, v, p)
	dev := deviceOn(op, nil, q, k, v, p.KeyPadding)
	out := result(op, dev, []int{sh.b, sh.h, sh.sq, sh.dv}, q, k, v)
	attentionForward(dev, sh, out, nil, q, k, v, p)
	return out
}

// ScaledDotProductAttentionInto writes ScaledDotProductAttention(q, k, v,
// p) into out [B, H, Sq, Dv] and, when lse is not nil, the logsumexp of
// each row's masked, scaled scores into lse [B, H, Sq] (-Inf for a row
// that sees no key): what the backward pass needs. It returns out.
func ScaledDotProductAttentionInto(out, lse, q, k, v *Tensor, p AttentionParams) *Tensor {
	const op = "ScaledDotProductAttentionInto"
	checkNil(op, "out, q, k, v", out, q, k, v)
	sh := checkAttention(op, q, k, v, p)
	checkShapeIs(op, "out", out, sh.b, sh.h, sh.sq, sh.dv)
	if lse != nil {
		checkShapeIs(op, "lse", lse, sh.b, sh.h, sh.sq)
	}
	dev := deviceOn(op, out, lse, q, k, v, p.KeyPadding)
	if dev == CPU && lse != nil && overlaps(out, lse) {
		panic(fmt.Sprintf("tensor: %s: out %v and lse %v overlap", op, out.shape, lse.shape))
	}
	attentionForward(dev, sh, out, lse, q, k, v, p)
	return out
}

// ScaledDotProductAttentionBackward returns the gradients with respect to
// q, k and v of ScaledDotProductAttentionInto(out, lse, q, k, v, p), given
// dout, the gradient with respect to out.
func ScaledDotProductAttentionBackward(dout, q, k, v, out, lse *Tensor, p AttentionParams) (dq, dk, dv *Tensor) {
	const op = "ScaledDotProductAttentionBackward"
	checkNil(op, "dout, q, k, v, out, lse", dout, q, k, v, out, lse)
	sh := checkAttentionBackward(op, dout, q, k, v, out, lse, p)
	dev := deviceOn(op, nil, dout, q, k, v, out, lse, p.KeyPadding)
	dq = result(op, dev, q.shape, q, k, v)
	dk = result(op, dev, k.shape, q, k, v)
	dv = result(op, dev, v.shape, q, k, v)
	attentionBackward(dev, sh, dq, dk, dv, dout, q, k, v, out, lse, p)
	return dq, dk, dv
}

// ScaledDotProductAttentionBackwardInto writes the gradients of
// ScaledDotProductAttentionBackward into dq, dk and dv (of q's, k's and
// v's shapes; any of them may be nil, and is then not computed where that
// saves work). out and lse are the forward pass's results for q, k, v and
// p. The results must not overlap one another.
func ScaledDotProductAttentionBackwardInto(dq, dk, dv, dout, q, k, v, out, lse *Tensor, p AttentionParams) {
	const op = "ScaledDotProductAttentionBackwardInto"
	checkNil(op, "dout, q, k, v, out, lse", dout, q, k, v, out, lse)
	sh := checkAttentionBackward(op, dout, q, k, v, out, lse, p)
	for _, g := range []struct {
		name string
		t, x *Tensor
	}{{"dq", dq, q}, {"dk", dk, k}, {"dv", dv, v}} {
		if g.t != nil {
			checkSameShapeAs(op, g.name, g.t, g.x)
		}
	}
	dev := deviceOn(op, nil, dq, dk, dv, dout, q, k, v, out, lse, p.KeyPadding)
	if dev == CPU {
		for _, pair := range [][2]*Tensor{{dq, dk}, {dq, dv}, {dk, dv}} {
			if pair[0] != nil && pair[1] != nil && overlaps(pair[0], pair[1]) {
				panic(fmt.Sprintf("tensor: %s: gradients of shapes %v and %v overlap", op, pair[0].shape, pair[1].shape))
			}
		}
	}
	attentionBackward(dev, sh, dq, dk, dv, dout, q, k, v, out, lse, p)
}

// attnShape is the sizes of one attention: batch, heads, queries, keys,
// the width of q and k (d) and of v (dv), and the scale in effect.
type attnShape struct {
	b, h, sq, sk, d, dv int
	scale               float32
}

func checkAttention(op string, q, k, v *Tensor, p AttentionParams) attnShape {
	for _, t := range []*Tensor{q, k, v} {
		if t.Dims() != 4 {
			panic(fmt.Sprintf("tensor: %s: q %v, k %v, v %v: want [B, H, S, D] each", op, q.shape, k.shape, v.shape))
		}
	}
	sh := attnShape{b: q.shape[0], h: q.shape[1], sq: q.shape[2], sk: k.shape[2], d: q.shape[3], dv: v.shape[3]}
	if k.shape[0] != sh.b || v.shape[0] != sh.b || k.shape[1] != sh.h || v.shape[1] != sh.h ||
		k.shape[3] != sh.d || v.shape[2] != sh.sk {
		panic(fmt.Sprintf("tensor: %s: q %v, k %v, v %v: want q [B, H, Sq, D], k [B, H, Sk, D], v [B, H, Sk, Dv]", op, q.shape, k.shape, v.shape))
	}
	if kp := p.KeyPadding; kp != nil && (kp.Dims() != 2 || kp.shape[0] != sh.b || kp.shape[1] != sh.sk) {
		panic(fmt.Sprintf("tensor: %s: key padding %v for k %v: want [%d %d]", op, kp.shape, k.shape, sh.b, sh.sk))
	}
	s := float64(p.Scale)
	if math.IsNaN(s) || math.IsInf(s, 0) {
		panic(fmt.Sprintf("tensor: %s: scale %v is not finite", op, p.Scale))
	}
	switch {
	case sh.d == 0:
		sh.scale = 1
	case s == 0:
		sh.scale = float32(1 / math.Sqrt(float64(sh.d)))
	default:
		sh.scale = p.Scale
	}
	return sh
}

func checkAttentionBackward(op string, dout, q, k, v, out, lse *Tensor, p AttentionParams) attnShape {
	sh := checkAttention(op, q, k, v, p)
	checkShapeIs(op, "out", out, sh.b, sh.h, sh.sq, sh.dv)
	checkShapeIs(op, "dout", dout, sh.b, sh.h, sh.sq, sh.dv)
	checkShapeIs(op, "lse", lse, sh.b, sh.h, sh.sq)
	return sh
}

// checkShapeIs panics unless t's shape is want.
func checkShapeIs(op, name string, t *Tensor, want ...int) {
	ok := t.Dims() == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = t.shape[i] == want[i]
	}
	if !ok {
		panic(fmt.Sprintf("tensor: %s: %s shape %v, want %v", op, name, t.shape, slices.Clone(want))) // a copy: want does not escape
	}
}

// checkSameShapeAs panics unless t has x's shape.
func checkSameShapeAs(op, name string, t, x *Tensor) { checkShapeIs(op, name, t, x.shape...) }

// attentionForward writes the attention of q, k, v into out and lse (nil:
// not wanted) on dev.
func attentionForward(dev Device, sh attnShape, out, lse, q, k, v *Tensor, p AttentionParams) {
	if dev != CPU {
		attentionForwardComposed(sh, out, lse, q, k, v, p)
		return
	}
	j := attnJobs.Get()
	*j = attnJob{sh: sh, causal: p.Causal, out: out, lse: lse}
	j.q, j.k, j.v = attnInput(out, lse, q), attnInput(out, lse, k), attnInput(out, lse, v)
	j.kp = attnDetach(out, lse, p.KeyPadding)
	j.run(sh.b * sh.h * ceilDiv(sh.sq, attnBlockQ))
	*j = attnJob{}
	attnJobs.Put(j)
}

// attentionBackward writes the gradients (those not nil) on dev.
func attentionBackward(dev Device, sh attnShape, dq, dk, dv, dout, q, k, v, out, lse *Tensor, p AttentionParams) {
	if dq == nil && dk == nil && dv == nil {
		return
	}
	if dev != CPU {
		attentionBackwardComposed(sh, dq, dk, dv, dout, q, k, v, out, p)
		return
	}
	j := attnJobs.Get()
	*j = attnJob{sh: sh, causal: p.Causal, phase: attnBackward, dq: dq, dk: dk, dv: dv}
	in := func(x *Tensor) *Tensor { return attnInput(dq, dk, attnInput(dv, nil, x)) }
	j.q, j.k, j.v, j.out, j.dout, j.lse = in(q), in(k), in(v), in(out), in(dout), in(lse)
	j.kp = attnDetach(dq, dk, attnDetach(dv, nil, p.KeyPadding))
	if bh := sh.b * sh.h; bh >= 2*runtime.GOMAXPROCS(0) || j.small() {
		j.run(bh)
	} else {
		if dk != nil || dv != nil {
			j.phase = attnBackwardKeys
			j.run(bh * ceilDiv(sh.sk, attnBlockK))
		}
		if dq != nil {
			j.phase = attnBackwardQueries
			j.run(bh * ceilDiv(sh.sq, attnBlockQ))
		}
	}
	*j = attnJob{}
	attnJobs.Put(j)
}

// The blocks of queries and keys of the host's tiled attention: 128×128
// scores (64 KiB) and the blocks of q, k, v stay in L2. Measured on the
// development machine (Zen 5, one thread, CPU time, under load from other
// processes) for [8, 4, 512, 32] causal, forward and backward: 64×64
// 14 and 23-36 ms, 32×64 14 and 26-28, 64×128 11 and 23-25, 128×128 10-12
// and 21-28, 128×256 9-11 and 26-31, 256×128 13-15 and 26-32.
const attnBlockQ, attnBlockK = 128, 128

// attnJob is one attention on the host, run on the worker pool by parts:
// a block of queries of one (batch, head) forward; one (batch, head)
// backward, or, when there are too few of them to keep every thread busy,
// a block of keys (dk, dv), then a block of queries (dq), whose sums are
// the same, in the same order (the split schedule recomputes the
// probabilities twice: 7 products of a block pair instead of 5).
type attnJob struct {
	sh                     attnShape
	causal                 bool
	phase                  int
	q, k, v, kp, dout, lse *Tensor
	out, dq, dk, dv        *Tensor
}

// attnScratch is one thread's scratch: scores and probabilities, their
// gradient, the output accumulator, the running maximum and sum of each
// row, the key mask, and the backward's accumulators.
type attnScratch struct {
	s, ds, o, m, l, rows, dq, dk, dv []float32
	pad                              []bool
}

var (
	attnJobs      freelist.Stack[attnJob]
	attnScratches freelist.Stack[attnScratch]
)

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// run runs n parts, one at a time per thread, claimed dynamically (their
// costs differ under a causal mask), on the pool when the work is large
// enough to share.
func (j *attnJob) run(n int) {
	parts := n
	if j.small() {
		parts = 1
	}
	par.For(j, n, min(parts, runtime.GOMAXPROCS(0)*8))
}

// small reports whether j is too small to share with the pool.
func (j *attnJob) small() bool {
	sh := j.sh
	return sh.b*sh.h*sh.sq*max(sh.sk, 1)*max(sh.d+sh.dv, 1) < 1<<18
}

// The phases of an attnJob.
const (
	attnForward = iota
	attnBackward
	attnBackwardKeys
	attnBackwardQueries
)

func (j *attnJob) RunRange(lo, hi int) {
	s := attnScratches.Get()
	for u := lo; u < hi; u++ {
		switch j.phase {
		case attnForward:
			j.forwardPart(s, u)
		case attnBackward:
			j.backwardPart(s, u)
		case attnBackwardKeys:
			j.keyPart(s, u)
		default:
			j.queryPart(s, u)
		}
	}
	attnScratches.Put(s)
}

// attnInput returns x, or a copy of it when the tiled kernels cannot read
// it in place (its last axis is strided, or its rows overlap) or it
// overlaps a result (r1 or r2, either may be nil).
func attnInput(r1, r2, x *Tensor) *Tensor {
	if x == nil {
		return nil
	}
	n := x.Dims()
	inPlace := x.Len() == 0 || x.shape[n-1] <= 1 || x.strides[n-1] == 1
	if inPlace && x.shape[n-2] > 1 && x.Len() > 0 && x.strides[n-2] < x.shape[n-1] {
		inPlace = false
	}
	if !inPlace {
		return x.Contiguous()
	}
	return attnDetach(r1, r2, x)
}

// attnDetach returns x, or a copy of it when it overlaps r1 or r2 (either
// may be nil): the key padding, which is read by element, any strides.
func attnDetach(r1, r2, x *Tensor) *Tensor {
	if x != nil && (r1 != nil && overlaps(r1, x) || r2 != nil && overlaps(r2, x)) {
		return x.Clone()
	}
	return x
}

// rowsOf returns the memory of t's (b, h) matrix of rows × cols from its
// first row, and the row stride (at least cols, which is any stride for a
// single row), for simd.Sgemm. t is an attnInput.
func rowsOf(t *Tensor, b, h int) ([]float32, int) {
	rows, cols := t.shape[2], t.shape[3]
	ld := t.strides[2]
	if rows <= 1 {
		ld = max(ld, cols)
	}
	if rows == 0 || cols == 0 {
		return nil, ld
	}
	return t.data[t.offset+b*t.strides[0]+h*t.strides[1]:], ld
}

// putRows writes rows × cols of src (row stride lds) into t's (b, h)
// matrix from row r0, any strides.
func putRows(t *Tensor, b, h, r0, rows, cols int, src []float32, lds int) {
	if rows == 0 || cols == 0 {
		return
	}
	st := t.strides
	base := t.offset + b*st[0] + h*st[1] + r0*st[2]
	for r := range rows {
		row, s := base+r*st[2], src[r*lds:r*lds+cols]
		if st[3] == 1 {
			copy(t.data[row:row+cols], s)
			continue
		}
		for c, x := range s {
			t.data[row+c*st[3]] = x
		}
	}
}

// vecAt returns the address of t[b, h, i] for a 3-D t.
func vecAt(t *Tensor, b, h, i int) int {
	return t.offset + b*t.strides[0] + h*t.strides[1] + i*t.strides[2]
}

// keyMask returns KeyPadding's row b in s.pad (true: masked), nil without a padding mask.
func (j *attnJob) keyMask(s *attnScratch, b int) []bool {
	if j.kp == nil {
		return nil
	}
	if cap(s.pad) < j.sh.sk {
		s.pad = make([]bool, j.sh.sk)
	}
	pad := s.pad[:j.sh.sk]
	kp := j.kp
	for c := range pad {
		pad[c] = kp.data[kp.offset+b*kp.strides[0]+c*kp.strides[1]] != 0
	}
	return pad
}

// scores sets sc (mq × nk, row stride nk) to the masked, scaled scores of
// queries i0.. and keys j0..: -Inf where masked.
func (j *attnJob) scores(sc, qd []float32, ldq int, kd []float32, ldk, i0, mq, j0, nk int, pad []bool) {
	sh := j.sh
	if sh.d == 0 {
		clear(sc)
	} else {
		simd.Sgemm(false, true, mq, nk, sh.d, sh.scale, qd[i0*ldq:], ldq, kd[j0*ldk:], ldk, 0, sc, nk)
	}
	inf := float32(math.Inf(-1))
	for r := range mq {
		row := sc[r*nk : (r+1)*nk]
		if j.causal {
			if see := i0 + r + sh.sk - sh.sq - j0 + 1; see < nk {
				for c := range row[max(see, 0):] {
					row[max(see, 0)+c] = inf
				}
			}
		}
		if pad != nil {
			for c, masked := range pad[j0 : j0+nk] {
				if masked {
					row[c] = inf
				}
			}
		}
	}
}

// keysSeen returns how many keys (from the first) some query of i0..i0+mq
// sees.
func (j *attnJob) keysSeen(i0, mq int) int {
	if !j.causal {
		return j.sh.sk
	}
	return min(max(i0+mq+j.sh.sk-j.sh.sq, 0), j.sh.sk)
}

// forwardPart runs block u of queries (of the (batch, head) u / blocks)
// over the keys with the online softmax.
func (j *attnJob) forwardPart(s *attnScratch, u int) {
	sh := j.sh
	nqb := ceilDiv(sh.sq, attnBlockQ)
	bh, i0 := u/nqb, u%nqb*attnBlockQ
	b, h := bh/sh.h, bh%sh.h
	mq := min(attnBlockQ, sh.sq-i0)
	qd, ldq := rowsOf(j.q, b, h)
	kd, ldk := rowsOf(j.k, b, h)
	vd, ldv := rowsOf(j.v, b, h)
	pad := j.keyMask(s, b)
	s.s = growF(s.s, attnBlockQ*attnBlockK)
	o, m, l := growF(s.o, mq*sh.dv), growF(s.m, mq), growF(s.l, mq)
	s.o, s.m, s.l = o, m, l
	clear(o)
	clear(l)
	inf := float32(math.Inf(-1))
	for r := range m {
		m[r] = inf
	}
	kend := j.keysSeen(i0, mq)
	for j0 := 0; j0 < kend; j0 += attnBlockK {
		nk := min(attnBlockK, kend-j0)
		sc := s.s[:mq*nk]
		j.scores(sc, qd, ldq, kd, ldk, i0, mq, j0, nk, pad)
		for r := range mq {
			row := sc[r*nk : (r+1)*nk]
			mnew := max(m[r], simd.Max(row))
			if mnew == inf {
				clear(row) // nothing seen yet: o and l stay 0
				continue
			}
			simd.AddScalar(row, row, -mnew)
			simd.Exp(row, row)
			if mnew != m[r] {
				alpha := float32(math.Exp(float64(m[r] - mnew)))
				l[r] *= alpha
				orow := o[r*sh.dv : (r+1)*sh.dv]
				simd.Scale(orow, orow, alpha)
			}
			l[r] += simd.Sum(row)
			m[r] = mnew
		}
		if sh.dv > 0 {
			simd.Sgemm(false, false, mq, sh.dv, nk, 1, sc, nk, vd[j0*ldv:], ldv, 1, o, sh.dv)
		}
	}
	for r := range mq {
		orow := o[r*sh.dv : (r+1)*sh.dv]
		if l[r] == 0 { // no key seen
			clear(orow)
			m[r] = inf
			continue
		}
		simd.Scale(orow, orow, 1/l[r])
		m[r] += float32(math.Log(float64(l[r])))
	}
	putRows(j.out, b, h, i0, mq, sh.dv, o, sh.dv)
	if j.lse != nil {
		for r := range mq {
			j.lse.data[vecAt(j.lse, b, h, i0+r)] = m[r]
		}
	}
}

// attnMats is the memory of one (batch, head)'s matrices, for
// simd.Sgemm: from the first row, and the row stride.
type attnMats struct {
	b, h                   int
	q, k, v, out, dout     []float32
	ldq, ldk, ldv, ldo, ld int
}

func (j *attnJob) mats(bh int) attnMats {
	m := attnMats{b: bh / j.sh.h, h: bh % j.sh.h}
	m.q, m.ldq = rowsOf(j.q, m.b, m.h)
	m.k, m.ldk = rowsOf(j.k, m.b, m.h)
	m.v, m.ldv = rowsOf(j.v, m.b, m.h)
	m.out, m.ldo = rowsOf(j.out, m.b, m.h)
	m.dout, m.ld = rowsOf(j.dout, m.b, m.h)
	return m
}

// rowStats sets s.rows to each query's logsumexp (from i0, n of them)
// followed by its Σ dout·out, and returns the two.
func (j *attnJob) rowStats(s *attnScratch, m *attnMats, i0, n int) (lse, delta []float32) {
	s.rows = growF(s.rows, 2*n)
	lse, delta = s.rows[:n], s.rows[n:]
	for r := range n {
		i := i0 + r
		lse[r] = j.lse.data[vecAt(j.lse, m.b, m.h, i)]
		delta[r] = 0
		if j.sh.dv > 0 {
			delta[r] = simd.Dot(m.dout[i*m.ld:i*m.ld+j.sh.dv], m.out[i*m.ldo:i*m.ldo+j.sh.dv])
		}
	}
	return lse, delta
}

// probs sets p (s.s) to the probabilities P = exp(scores - lse) of queries
// i0..i0+mq and keys j0..j0+nk, and ds (s.ds) to dS = P·(dout·vᵀ - Σ
// dout·out); lse and delta are the rows' from i0.
func (j *attnJob) probs(s *attnScratch, m *attnMats, pad []bool, lse, delta []float32, i0, mq, j0, nk int) (p, ds []float32) {
	sh := j.sh
	s.s, s.ds = growF(s.s, attnBlockQ*attnBlockK), growF(s.ds, attnBlockQ*attnBlockK)
	p, ds = s.s[:mq*nk], s.ds[:mq*nk]
	j.scores(p, m.q, m.ldq, m.k, m.ldk, i0, mq, j0, nk, pad)
	for r := range mq {
		row := p[r*nk : (r+1)*nk]
		if math.IsInf(float64(lse[r]), -1) {
			clear(row)
			continue
		}
		simd.AddScalar(row, row, -lse[r])
		simd.Exp(row, row)
	}
	if sh.dv > 0 {
		simd.Sgemm(false, true, mq, nk, sh.dv, 1, m.dout[i0*m.ld:], m.ld, m.v[j0*m.ldv:], m.ldv, 0, ds, nk)
	} else {
		clear(ds)
	}
	for r := range mq {
		dsr := ds[r*nk : (r+1)*nk]
		simd.AddScalar(dsr, dsr, -delta[r])
		simd.Mul(dsr, dsr, p[r*nk:(r+1)*nk])
	}
	return p, ds
}

// firstQuery returns the first block of queries that sees key j0.
func (j *attnJob) firstQuery(j0 int) int {
	if !j.causal {
		return 0
	}
	return max(j0-(j.sh.sk-j.sh.sq), 0) / attnBlockQ * attnBlockQ
}

// keyBlock computes dk and dv of the keys j0..j0+nk of m: the blocks of
// queries that see them recompute their probabilities and add their share
// of dv = Pᵀ·dout and dk = scale·dSᵀ·q, and, when dqa is not nil (all of
// m's queries), of dq = scale·dS·k.
func (j *attnJob) keyBlock(s *attnScratch, m *attnMats, pad []bool, lse, delta []float32, j0, nk int, dqa []float32) {
	sh := j.sh
	s.dk, s.dv = growF(s.dk, attnBlockK*sh.d), growF(s.dv, attnBlockK*sh.dv)
	dk, dv := s.dk[:nk*sh.d], s.dv[:nk*sh.dv]
	clear(dk)
	clear(dv)
	for i0 := j.firstQuery(j0); i0 < sh.sq; i0 += attnBlockQ {
		mq := min(attnBlockQ, sh.sq-i0)
		p, ds := j.probs(s, m, pad, lse[i0:], delta[i0:], i0, mq, j0, nk)
		if sh.dv > 0 {
			simd.Sgemm(true, false, nk, sh.dv, mq, 1, p, nk, m.dout[i0*m.ld:], m.ld, 1, dv, sh.dv)
		}
		if sh.d > 0 {
			if dqa != nil {
				simd.Sgemm(false, false, mq, sh.d, nk, sh.scale, ds, nk, m.k[j0*m.ldk:], m.ldk, 1, dqa[i0*sh.d:], sh.d)
			}
			simd.Sgemm(true, false, nk, sh.d, mq, sh.scale, ds, nk, m.q[i0*m.ldq:], m.ldq, 1, dk, sh.d)
		}
	}
	if j.dk != nil {
		putRows(j.dk, m.b, m.h, j0, nk, sh.d, dk, sh.d)
	}
	if j.dv != nil {
		putRows(j.dv, m.b, m.h, j0, nk, sh.dv, dv, sh.dv)
	}
}

// backwardPart computes the gradients of (batch, head) bh, its blocks of
// keys in turn, dq summed over them in order.
func (j *attnJob) backwardPart(s *attnScratch, bh int) {
	sh := j.sh
	m := j.mats(bh)
	pad := j.keyMask(s, m.b)
	lse, delta := j.rowStats(s, &m, 0, sh.sq)
	s.dq = growF(s.dq, sh.sq*sh.d)
	dqa := s.dq
	clear(dqa)
	for j0 := 0; j0 < sh.sk; j0 += attnBlockK {
		j.keyBlock(s, &m, pad, lse, delta, j0, min(attnBlockK, sh.sk-j0), dqa)
	}
	if j.dq != nil {
		putRows(j.dq, m.b, m.h, 0, sh.sq, sh.d, dqa, sh.d)
	}
}

// keyPart computes dk and dv of block u of keys (of the (batch, head) u /
// blocks), for the split schedule.
func (j *attnJob) keyPart(s *attnScratch, u int) {
	sh := j.sh
	nkb := ceilDiv(sh.sk, attnBlockK)
	m := j.mats(u / nkb)
	j0 := u % nkb * attnBlockK
	pad := j.keyMask(s, m.b)
	lse, delta := j.rowStats(s, &m, 0, sh.sq)
	j.keyBlock(s, &m, pad, lse, delta, j0, min(attnBlockK, sh.sk-j0), nil)
}

// queryPart computes dq of block u of queries for the split schedule,
// summed over the blocks of keys in the order backwardPart sums them.
func (j *attnJob) queryPart(s *attnScratch, u int) {
	sh := j.sh
	nqb := ceilDiv(sh.sq, attnBlockQ)
	m := j.mats(u / nqb)
	i0 := u % nqb * attnBlockQ
	mq := min(attnBlockQ, sh.sq-i0)
	pad := j.keyMask(s, m.b)
	lse, delta := j.rowStats(s, &m, i0, mq)
	s.dq = growF(s.dq, mq*sh.d)
	dqa := s.dq
	clear(dqa)
	if sh.d > 0 {
		for j0 := 0; j0 < j.keysSeen(i0, mq); j0 += attnBlockK {
			nk := min(attnBlockK, sh.sk-j0)
			_, ds := j.probs(s, &m, pad, lse, delta, i0, mq, j0, nk)
			simd.Sgemm(false, false, mq, sh.d, nk, sh.scale, ds, nk, m.k[j0*m.ldk:], m.ldk, 1, dqa, sh.d)
		}
	}
	putRows(j.dq, m.b, m.h, i0, mq, sh.d, dqa, sh.d)
}

// attnProbsComposed returns the probabilities softmax(q·kᵀ·scale + mask)
// [B, H, Sq, Sk] (0 where masked, rows that see no key all 0), the masked
// scores (the lowest float32 where masked) and the mask keep (1: seen; nil
// when nothing is masked), made of q's device's ops. sh.sk > 0.
func attnProbsComposed(sh attnShape, q, k *Tensor, p AttentionParams) (prob, scores, keep *Tensor) {
	scores = MatMul(q, k.Transpose(2, 3))
	ScaleInto(scores, scores, sh.scale)
	if p.Causal {
		c := New(sh.sq, sh.sk)
		for i := range sh.sq {
			for j := range min(max(i+sh.sk-sh.sq+1, 0), sh.sk) {
				c.data[i*sh.sk+j] = 1
			}
		}
		d, err := c.To(q.Device())
		if err != nil {
			panic(failure("ScaledDotProductAttention", nil, []*Tensor{q, k}, fmt.Errorf("copying the causal mask to the device: %w", err)))
		}
		keep = d.Reshape(1, 1, sh.sq, sh.sk)
	}
	if p.KeyPadding != nil {
		kp := Equal(p.KeyPadding, Scalar(0)).Reshape(sh.b, 1, 1, sh.sk)
		if keep == nil {
			keep = kp
		} else {
			keep = Mul(keep, kp)
		}
	}
	if keep != nil {
		scores = Where(keep, scores, Scalar(-math.MaxFloat32))
	}
	prob = Softmax(scores, 3)
	if keep != nil {
		MulInto(prob, prob, keep)
	}
	return prob, scores, keep
}

// attentionForwardComposed is the device's attention: out and lse from
// the composed probabilities.
func attentionForwardComposed(sh attnShape, out, lse, q, k, v *Tensor, p AttentionParams) {
	if sh.b*sh.h*sh.sq == 0 {
		return
	}
	if sh.sk == 0 {
		Fill(out, 0)
		if lse != nil {
			Fill(lse, float32(math.Inf(-1)))
		}
		return
	}
	prob, scores, keep := attnProbsComposed(sh, q, k, p)
	MatMulInto(out, prob, v)
	if lse == nil {
		return
	}
	l := LogSumExp(scores, false, 3)
	if keep != nil {
		seen := Greater(Sum(keep, false, 3), Scalar(0))
		l = Where(seen, l, Scalar(float32(math.Inf(-1))))
	}
	CopyInto(lse, l)
}

// attentionBackwardComposed is the device's attention backward, from the
// recomputed probabilities.
func attentionBackwardComposed(sh attnShape, dq, dk, dv, dout, q, k, v, out *Tensor, p AttentionParams) {
	if sh.sk == 0 || sh.b*sh.h*sh.sq == 0 {
		for _, g := range []*Tensor{dq, dk, dv} {
			if g != nil {
				Fill(g, 0)
			}
		}
		return
	}
	prob, _, _ := attnProbsComposed(sh, q, k, p)
	if dv != nil {
		MatMulInto(dv, prob.Transpose(2, 3), dout)
	}
	if dq == nil && dk == nil {
		return
	}
	ds := MatMul(dout, v.Transpose(2, 3))
	SubInto(ds, ds, Sum(Mul(dout, out), true, 3))
	MulInto(ds, ds, prob)
	if dq != nil {
		MatMulInto(dq, ds, k)
		ScaleInto(dq, dq, sh.scale)
	}
	if dk != nil {
		MatMulInto(dk, ds.Transpose(2, 3), q)
		ScaleInto(dk, dk, sh.scale)
	}
}
