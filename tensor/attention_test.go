package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/internal/freelist"
)

// attnCase is one attention checked against the float64 reference.
type attnCase struct {
	b, h, sq, sk, d, dv int
	causal, pad         bool
	scale               float32
	layout              string // of q, k and v: contiguous, heads (from [B, S, H, D]), strided, expanded
}

func (c attnCase) String() string {
	s := fmt.Sprintf("%dx%dx%dx%dx%dx%d", c.b, c.h, c.sq, c.sk, c.d, c.dv)
	if c.causal {
		s += "/causal"
	}
	if c.pad {
		s += "/pad"
	}
	if c.scale != 0 {
		s += fmt.Sprintf("/scale=%v", c.scale)
	}
	return s + "/" + c.layout
}

// attnOperand returns a [b, h, s, d] operand laid out as layout says.
func attnOperand(r *rand.Rand, layout string, b, h, s, d int) *Tensor {
	switch layout {
	case "heads":
		return RandN(r, b, s, h, d).Permute(0, 2, 1, 3)
	case "expanded":
		return RandN(r, b, 1, s, d).Expand(b, h, s, d)
	case "strided":
		return randLayout(r, "strided", b, h, s, d)
	}
	return RandN(r, b, h, s, d)
}

// keyPadding returns a [b, sk] mask: keys masked at random, and every key
// of the last batch row when there are two or more rows.
func keyPadding(r *rand.Rand, b, sk int) *Tensor {
	kp := New(b, sk)
	for i := range b {
		for j := range sk {
			if i == b-1 && b > 1 || r.IntN(3) == 0 {
				kp.Set(float32(1+r.IntN(2)), i, j)
			}
		}
	}
	return kp
}

// refAttention is softmax(q·kᵀ·scale + mask)·v in float64 and the
// logsumexp of each row (-Inf for a row that sees no key, whose output is
// 0), with the gradients for dout when dout is not nil.
type refAttn struct {
	out, lse, dq, dk, dv []float64
}

func refAttention(c attnCase, scale float64, q, k, v, kp []float64, dout []float64) refAttn {
	b, h, sq, sk, d, dv := c.b, c.h, c.sq, c.sk, c.d, c.dv
	res := refAttn{out: make([]float64, b*h*sq*dv), lse: make([]float64, b*h*sq),
		dq: make([]float64, b*h*sq*d), dk: make([]float64, b*h*sk*d), dv: make([]float64, b*h*sk*dv)}
	p := make([]float64, sk)
	for bi := range b {
		for hi := range h {
			bh := bi*h + hi
			qm, km, vm := q[bh*sq*d:], k[bh*sk*d:], v[bh*sk*dv:]
			for i := range sq {
				seen := false
				mx := math.Inf(-1)
				for j := range sk {
					p[j] = math.Inf(-1)
					if c.causal && j > i+sk-sq || kp != nil && kp[bi*sk+j] != 0 {
						continue
					}
					var s float64
					for x := range d {
						s += qm[i*d+x] * km[j*d+x]
					}
					p[j] = s * scale
					seen = true
					mx = math.Max(mx, p[j])
				}
				row := bh*sq + i
				if !seen {
					res.lse[row] = math.Inf(-1)
					continue
				}
				var sum float64
				for j := range sk {
					p[j] = math.Exp(p[j] - mx)
					sum += p[j]
				}
				res.lse[row] = mx + math.Log(sum)
				for j := range sk {
					p[j] /= sum
					for x := range dv {
						res.out[row*dv+x] += p[j] * vm[j*dv+x]
					}
				}
				if dout == nil {
					continue
				}
				dom := dout[row*dv:]
				var delta float64
				for x := range dv {
					delta += dom[x] * res.out[row*dv+x]
				}
				for j := range sk {
					if p[j] == 0 {
						continue
					}
					var dp float64
					for x := range dv {
						res.dv[(bh*sk+j)*dv+x] += p[j] * dom[x]
						dp += dom[x] * vm[j*dv+x]
					}
					ds := p[j] * (dp - delta) * scale
					for x := range d {
						res.dq[row*d+x] += ds * km[j*d+x]
						res.dk[(bh*sk+j)*d+x] += ds * qm[i*d+x]
					}
				}
			}
		}
	}
	return res
}

// allClose checks got against want within tol·(1 + mag) (closeTo).
func allClose(t *testing.T, what string, got *Tensor, want []float64, tol, mag float64) {
	t.Helper()
	g := got.Contiguous().Data()
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	bad := 0
	for i, x := range g {
		if !closeTo(x, want[i], tol, 1+mag) {
			if bad++; bad <= 3 {
				t.Errorf("%s[%d] = %v, want %v (tolerance %.3g)", what, i, x, want[i], tol*(1+mag))
			}
		}
	}
}

func maxAbs(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

func attnCases() []attnCase {
	var cs []attnCase
	for _, s := range [][6]int{
		{1, 1, 1, 1, 1, 1}, {2, 3, 5, 7, 3, 4}, {1, 2, 64, 64, 32, 32}, {1, 1, 65, 129, 17, 5},
		{2, 1, 130, 70, 129, 1}, {1, 1, 1, 300, 64, 64}, {1, 2, 200, 1, 7, 9}, {2, 2, 100, 100, 63, 65},
		{1, 1, 300, 300, 33, 33}, {1, 2, 0, 5, 3, 3}, {2, 1, 4, 0, 3, 3}, {1, 1, 5, 6, 0, 3},
		{1, 1, 5, 6, 3, 0}, {0, 2, 3, 3, 2, 2}, {1, 1, 129, 128, 127, 31},
	} {
		for _, causal := range []bool{false, true} {
			for _, pad := range []bool{false, true} {
				cs = append(cs, attnCase{b: s[0], h: s[1], sq: s[2], sk: s[3], d: s[4], dv: s[5], causal: causal, pad: pad, layout: "contiguous"})
			}
		}
	}
	for _, l := range []string{"heads", "strided", "expanded"} {
		cs = append(cs, attnCase{b: 2, h: 3, sq: 70, sk: 90, d: 16, dv: 8, causal: true, pad: true, layout: l},
			attnCase{b: 1, h: 2, sq: 9, sk: 9, d: 5, dv: 5, layout: l})
	}
	cs = append(cs, attnCase{b: 1, h: 1, sq: 40, sk: 50, d: 8, dv: 8, scale: -0.7, layout: "contiguous"},
		attnCase{b: 2, h: 2, sq: 33, sk: 33, d: 16, dv: 16, causal: true, scale: 2, layout: "heads"})
	return cs
}

// checkAttention runs c forward and backward and checks the results
// against refAttention.
func checkAttentionCase(t *testing.T, c attnCase, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 3))
	q := attnOperand(r, c.layout, c.b, c.h, c.sq, c.d)
	k := attnOperand(r, c.layout, c.b, c.h, c.sk, c.d)
	v := attnOperand(r, c.layout, c.b, c.h, c.sk, c.dv)
	p := AttentionParams{Causal: c.causal, Scale: c.scale}
	var kp []float64
	if c.pad {
		p.KeyPadding = keyPadding(r, c.b, c.sk)
		kp = f64s(p.KeyPadding)
	}
	scale := float64(c.scale)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(max(c.d, 1)))
	}
	dout := RandN(r, c.b, c.h, c.sq, c.dv)
	want := refAttention(c, scale, f64s(q), f64s(k), f64s(v), kp, f64s(dout))
	out := ScaledDotProductAttention(q, k, v, p)
	tol := 4e-6 * math.Sqrt(float64(c.d+c.sk+1)) * math.Max(1, math.Abs(scale))
	allClose(t, "out", out, want.out, tol, maxAbs(f64s(v)))
	out2, lse := New(c.b, c.h, c.sq, c.dv), New(c.b, c.h, c.sq)
	ScaledDotProductAttentionInto(out2, lse, q, k, v, p)
	allClose(t, "Into's out", out2, want.out, tol, maxAbs(f64s(v)))
	allClose(t, "lse", lse, want.lse, tol, maxAbs(want.lse))
	dq, dk, dv := ScaledDotProductAttentionBackward(dout, q, k, v, out2, lse, p)
	gtol := 10 * tol
	allClose(t, "dq", dq, want.dq, gtol, maxAbs(want.dq))
	allClose(t, "dk", dk, want.dk, gtol, maxAbs(want.dk))
	allClose(t, "dv", dv, want.dv, gtol, maxAbs(want.dv))
}

func TestScaledDotProductAttention(t *testing.T) {
	cases := attnCases()
	atEveryLevel(t, func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.String(), func(t *testing.T) { checkAttentionCase(t, c, uint64(i)) })
		}
	})
}

// TestAttentionReferenceGradient checks refAttention's gradients against
// central differences of its own output, so that the gradients the kernels
// are held to are the derivative of the forward pass.
func TestAttentionReferenceGradient(t *testing.T) {
	c := attnCase{b: 2, h: 1, sq: 5, sk: 6, d: 3, dv: 2, causal: true, pad: true}
	r := rand.New(rand.NewPCG(5, 5))
	q, k, v, dout := f64s(RandN(r, 2, 1, 5, 3)), f64s(RandN(r, 2, 1, 6, 3)), f64s(RandN(r, 2, 1, 6, 2)), f64s(RandN(r, 2, 1, 5, 2))
	kp := f64s(keyPadding(r, 1, 6))
	kp = append(kp, 0, 0, 0, 0, 0, 1) // the second batch row pads one key only
	want := refAttention(c, 0.6, q, k, v, kp, dout)
	loss := func() float64 {
		o := refAttention(c, 0.6, q, k, v, kp, nil).out
		var s float64
		for i, x := range o {
			s += x * dout[i]
		}
		return s
	}
	for _, in := range []struct {
		name    string
		x, grad []float64
	}{{"q", q, want.dq}, {"k", k, want.dk}, {"v", v, want.dv}} {
		for i := range in.x {
			old := in.x[i]
			in.x[i] = old + 1e-6
			up := loss()
			in.x[i] = old - 1e-6
			down := loss()
			in.x[i] = old
			if num := (up - down) / 2e-6; math.Abs(num-in.grad[i]) > 1e-7*(1+math.Abs(num)) {
				t.Errorf("d%s[%d] = %v, finite differences %v", in.name, i, in.grad[i], num)
			}
		}
	}
}

// TestAttentionMaskedRows checks that rows that see no key give 0 and a
// logsumexp of -Inf, and pass no gradient.
func TestAttentionMaskedRows(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	q, k, v := RandN(r, 1, 1, 6, 4), RandN(r, 1, 1, 3, 4), RandN(r, 1, 1, 3, 2)
	p := AttentionParams{Causal: true} // Sq > Sk: queries 0..2 see nothing
	out, lse := New(1, 1, 6, 2), New(1, 1, 6)
	ScaledDotProductAttentionInto(out, lse, q, k, v, p)
	dq, _, _ := ScaledDotProductAttentionBackward(Ones(1, 1, 6, 2), q, k, v, out, lse, p)
	for i := range 6 {
		masked := i < 3
		if got := lse.At(0, 0, i); masked != math.IsInf(float64(got), -1) {
			t.Errorf("lse[%d] = %v", i, got)
		}
		for x := range 2 {
			if got := out.At(0, 0, i, x); masked != (got == 0) {
				t.Errorf("out[%d][%d] = %v", i, x, got)
			}
		}
		for x := range 4 {
			// Row 3 sees key 0 alone: its probability is 1 whatever q, so its
			// dq is 0 too.
			if got := dq.At(0, 0, i, x); (i <= 3) != (got == 0) {
				t.Errorf("dq[%d][%d] = %v", i, x, got)
			}
		}
	}
}

// TestAttentionSpecialValues checks the propagation rules of the doc
// comment.
func TestAttentionSpecialValues(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	r := rand.New(rand.NewPCG(4, 4))
	tests := []struct {
		name   string
		set    func(q, k, v *Tensor)
		p      AttentionParams
		nanRow func(i int) bool
	}{
		{"NaN in q row 2", func(q, k, v *Tensor) { q.Set(nan, 0, 0, 2, 1) }, AttentionParams{}, func(i int) bool { return i == 2 }},
		{"NaN in k row 3, causal", func(q, k, v *Tensor) { k.Set(nan, 0, 0, 3, 0) }, AttentionParams{Causal: true}, func(i int) bool { return i >= 3 }},
		{"+Inf in q row 1", func(q, k, v *Tensor) { q.Set(inf, 0, 0, 1, 0) }, AttentionParams{}, func(i int) bool { return i == 1 }},
		{"NaN in a padded key's k", func(q, k, v *Tensor) { k.Set(nan, 0, 0, 5, 2) },
			AttentionParams{KeyPadding: FromSlice([]float32{0, 0, 0, 0, 0, 1, 0, 0}, 1, 8)}, func(int) bool { return false }},
		{"NaN padding flag masks", func(q, k, v *Tensor) { k.Set(nan, 0, 0, 6, 2) },
			AttentionParams{KeyPadding: FromSlice([]float32{0, 0, 0, 0, 0, 0, nan, 0}, 1, 8)}, func(int) bool { return false }},
	}
	for _, tc := range tests {
		q, k, v := RandN(r, 1, 1, 8, 3), RandN(r, 1, 1, 8, 3), RandN(r, 1, 1, 8, 2)
		tc.set(q, k, v)
		out := ScaledDotProductAttention(q, k, v, tc.p)
		for i := range 8 {
			got := math.IsNaN(float64(out.At(0, 0, i, 0))) || math.IsNaN(float64(out.At(0, 0, i, 1)))
			if got != tc.nanRow(i) {
				t.Errorf("%s: row %d: %v, NaN %v, want %v", tc.name, i, []float32{out.At(0, 0, i, 0), out.At(0, 0, i, 1)}, got, tc.nanRow(i))
			}
		}
	}
	// A NaN in the v row of a key a row attends to reaches that row (rows
	// that do not attend to it may be NaN too: see the doc comment).
	q, k, v := RandN(r, 1, 1, 8, 3), RandN(r, 1, 1, 8, 3), RandN(r, 1, 1, 8, 2)
	v.Set(nan, 0, 0, 4, 0)
	out := ScaledDotProductAttention(q, k, v, AttentionParams{Causal: true})
	for i := 4; i < 8; i++ {
		if !math.IsNaN(float64(out.At(0, 0, i, 0))) {
			t.Errorf("NaN in v row 4: out row %d = %v", i, out.At(0, 0, i, 0))
		}
	}
	// A score of -Inf counts as masked: a row all -Inf sees nothing.
	q, k, v = Full(-inf, 1, 1, 2, 1), Ones(1, 1, 3, 1), Ones(1, 1, 3, 2)
	if out := ScaledDotProductAttention(q, k, v, AttentionParams{}); out.At(0, 0, 1, 1) != 0 {
		t.Errorf("all scores -Inf: out %v, want 0", out)
	}
}

// TestAttentionAliasing checks results that overlap inputs and the
// nil gradients of BackwardInto.
func TestAttentionAliasing(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	q, k, v := RandN(r, 2, 2, 10, 4), RandN(r, 2, 2, 10, 4), RandN(r, 2, 2, 10, 4)
	p := AttentionParams{Causal: true}
	out, lse := New(2, 2, 10, 4), New(2, 2, 10)
	ScaledDotProductAttentionInto(out, lse, q, k, v, p)
	qc := q.Clone()
	ScaledDotProductAttentionInto(qc, nil, qc, k, v, p) // out is q
	allClose(t, "out into q", qc, f64s(out), 0, 0)
	dout := RandN(r, 2, 2, 10, 4)
	dq, dk, dv := ScaledDotProductAttentionBackward(dout, q, k, v, out, lse, p)
	g := New(2, 2, 10, 4)
	ScaledDotProductAttentionBackwardInto(nil, g, nil, dout, q, k, v, out, lse, p)
	allClose(t, "dk alone", g, f64s(dk), 0, 0)
	ScaledDotProductAttentionBackwardInto(nil, nil, g, dout, q, k, v, out, lse, p)
	allClose(t, "dv alone", g, f64s(dv), 0, 0)
	dc := dout.Clone()
	ScaledDotProductAttentionBackwardInto(dc, nil, nil, dc, q, k, v, out, lse, p) // dq is dout
	allClose(t, "dq into dout", dc, f64s(dq), 0, 0)
	// dk written into k, one (batch, head) (the split schedule, whose dq
	// pass reads k after the dk pass).
	q1, k1, v1 := RandN(r, 1, 1, 300, 4), RandN(r, 1, 1, 300, 4), RandN(r, 1, 1, 300, 4)
	o1, l1, do1 := New(1, 1, 300, 4), New(1, 1, 300), RandN(r, 1, 1, 300, 4)
	ScaledDotProductAttentionInto(o1, l1, q1, k1, v1, p)
	dq1, dk1, _ := ScaledDotProductAttentionBackward(do1, q1, k1, v1, o1, l1, p)
	kc, dq2 := k1.Clone(), New(1, 1, 300, 4)
	ScaledDotProductAttentionBackwardInto(dq2, kc, nil, do1, q1, kc, v1, o1, l1, p)
	allClose(t, "dk into k", kc, f64s(dk1), 0, 0)
	allClose(t, "dq beside dk into k", dq2, f64s(dq1), 0, 0)
	// A transposed result.
	tr := New(2, 2, 4, 10).Transpose(2, 3)
	ScaledDotProductAttentionInto(tr, nil, q, k, v, p)
	allClose(t, "transposed out", tr, f64s(out), 0, 0)
}

// TestAttentionSchedules checks that the backward pass's two schedules
// (one (batch, head) a part, or blocks of keys then blocks of queries, for
// fewer (batch, head)s than twice the threads) give the same bits, so
// that results do not depend on the thread count.
func TestAttentionSchedules(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, causal := range []bool{false, true} {
		q, k, v := RandN(r, 2, 2, 300, 24), RandN(r, 2, 2, 270, 24), RandN(r, 2, 2, 270, 20)
		p := AttentionParams{Causal: causal, KeyPadding: keyPadding(r, 2, 270)}
		out, lse := New(2, 2, 300, 20), New(2, 2, 300)
		ScaledDotProductAttentionInto(out, lse, q, k, v, p)
		dout := RandN(r, 2, 2, 300, 20)
		var grads [2][3]*Tensor
		for i, procs := range []int{1, 4} { // 4 (batch, head)s: one a part at 1 thread, split at 4
			prev := runtime.GOMAXPROCS(procs)
			dq, dk, dv := ScaledDotProductAttentionBackward(dout, q, k, v, out, lse, p)
			runtime.GOMAXPROCS(prev)
			grads[i] = [3]*Tensor{dq, dk, dv}
		}
		for g := range 3 {
			a, b := grads[0][g].Data(), grads[1][g].Data()
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("causal %v: gradient %d element %d: %v with one part a (batch, head), %v split", causal, g, i, a[i], b[i])
				}
			}
		}
	}
}

func TestAttentionPanics(t *testing.T) {
	q, k, v := New(2, 3, 4, 5), New(2, 3, 6, 5), New(2, 3, 6, 7)
	tests := []struct {
		want string
		f    func()
	}{
		{"tensor: ScaledDotProductAttention: nil tensor k", func() { ScaledDotProductAttention(q, nil, v, AttentionParams{}) }},
		{"tensor: ScaledDotProductAttention: q [2 3 4 5], k [2 3 6 5], v [2 3 6]: want [B, H, S, D] each",
			func() { ScaledDotProductAttention(q, k, New(2, 3, 6), AttentionParams{}) }},
		{"tensor: ScaledDotProductAttention: q [2 3 4 5], k [2 3 6 4], v [2 3 6 7]: want q [B, H, Sq, D], k [B, H, Sk, D], v [B, H, Sk, Dv]",
			func() { ScaledDotProductAttention(q, New(2, 3, 6, 4), v, AttentionParams{}) }},
		{"tensor: ScaledDotProductAttention: q [2 3 4 5], k [2 3 6 5], v [2 3 5 7]: want q [B, H, Sq, D], k [B, H, Sk, D], v [B, H, Sk, Dv]",
			func() { ScaledDotProductAttention(q, k, New(2, 3, 5, 7), AttentionParams{}) }},
		{"tensor: ScaledDotProductAttention: key padding [2 4] for k [2 3 6 5]: want [2 6]",
			func() { ScaledDotProductAttention(q, k, v, AttentionParams{KeyPadding: New(2, 4)}) }},
		{"tensor: ScaledDotProductAttention: scale NaN is not finite",
			func() { ScaledDotProductAttention(q, k, v, AttentionParams{Scale: float32(math.NaN())}) }},
		{"tensor: ScaledDotProductAttentionInto: out shape [2 3 4 5], want [2 3 4 7]",
			func() { ScaledDotProductAttentionInto(New(2, 3, 4, 5), nil, q, k, v, AttentionParams{}) }},
		{"tensor: ScaledDotProductAttentionInto: lse shape [2 3 4 1], want [2 3 4]",
			func() { ScaledDotProductAttentionInto(New(2, 3, 4, 7), New(2, 3, 4, 1), q, k, v, AttentionParams{}) }},
		{"tensor: ScaledDotProductAttentionBackward: nil tensor lse",
			func() {
				ScaledDotProductAttentionBackward(New(2, 3, 4, 7), q, k, v, New(2, 3, 4, 7), nil, AttentionParams{})
			}},
		{"tensor: ScaledDotProductAttentionBackwardInto: dk shape [2 3 6 7], want [2 3 6 5]",
			func() {
				ScaledDotProductAttentionBackwardInto(nil, New(2, 3, 6, 7), nil, New(2, 3, 4, 7), q, k, v, New(2, 3, 4, 7), New(2, 3, 4), AttentionParams{})
			}},
		{"tensor: ScaledDotProductAttentionBackwardInto: gradients of shapes [2 3 6 5] and [2 3 6 7] overlap",
			func() {
				g := New(2, 3, 6, 7)
				ScaledDotProductAttentionBackwardInto(nil, g.Slice(3, 0, 5, 1), g, New(2, 3, 4, 7), q, k, v, New(2, 3, 4, 7), New(2, 3, 4), AttentionParams{})
			}},
	}
	for _, tc := range tests {
		expectPanic(t, tc.want, tc.f)
	}
}

// TestAttentionAllocs checks that the Into forms allocate nothing once
// their scratch has grown.
func TestAttentionAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	q, k, v := RandN(r, 2, 4, 130, 32), RandN(r, 2, 4, 130, 32), RandN(r, 2, 4, 130, 32)
	p := AttentionParams{Causal: true, KeyPadding: keyPadding(r, 2, 130)}
	out, lse, dout := New(2, 4, 130, 32), New(2, 4, 130), RandN(r, 2, 4, 130, 32)
	dq, dk, dv := New(q.Shape()...), New(k.Shape()...), New(v.Shape()...)
	noAllocs(t, "ScaledDotProductAttentionInto", func() { ScaledDotProductAttentionInto(out, lse, q, k, v, p) })
	noAllocs(t, "ScaledDotProductAttentionBackwardInto", func() {
		ScaledDotProductAttentionBackwardInto(dq, dk, dv, dout, q, k, v, out, lse, p)
	})
}

func FuzzScaledDotProductAttention(f *testing.F) {
	f.Add([]byte{1, 1, 3, 4, 2, 2, 0}, uint64(1))
	f.Add([]byte{2, 2, 70, 65, 9, 3, 3}, uint64(2))
	f.Add([]byte{1, 1, 0, 4, 2, 2, 1}, uint64(3))
	f.Add([]byte{2, 1, 5, 0, 2, 2, 2}, uint64(4))
	f.Add([]byte{1, 2, 130, 1, 0, 1, 7}, uint64(5))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		at := func(i, mod int) int {
			if i < len(b) {
				return int(b[i]) % mod
			}
			return 0
		}
		c := attnCase{b: at(0, 3), h: at(1, 3), sq: at(2, 140), sk: at(3, 140), d: at(4, 40), dv: at(5, 40),
			causal: at(6, 2) == 1, pad: at(6, 4) >= 2, layout: []string{"contiguous", "heads", "strided", "expanded"}[at(6, 16)/4]}
		checkAttentionCase(t, c, seed)
	})
}

// BenchmarkScaledDotProductAttention times forward plus backward as
// bench/torchref/attention.py does for PyTorch (same names, so that
// benchstat compares the two outputs): the Into forms on preallocated
// results, as nn's tape calls them.
func BenchmarkScaledDotProductAttention(b *testing.B) {
	for _, s := range []struct {
		shape  [4]int
		causal bool
	}{{[4]int{8, 4, 512, 32}, true}, {[4]int{8, 4, 512, 32}, false}, {[4]int{1, 1, 4096, 64}, true}} {
		name := strings.Trim(strings.ReplaceAll(fmt.Sprint(s.shape), " ", "x"), "[]")
		if s.causal {
			name += "/causal"
		}
		r := rand.New(rand.NewPCG(1, 1))
		sh := s.shape[:]
		q, k, v, dout := RandN(r, sh...), RandN(r, sh...), RandN(r, sh...), RandN(r, sh...)
		p := AttentionParams{Causal: s.causal}
		out, lse := New(sh...), New(sh[:3]...)
		dq, dk, dv := New(sh...), New(sh...), New(sh...)
		b.Run(name+"/fwd+bwd", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ScaledDotProductAttentionInto(out, lse, q, k, v, p)
				ScaledDotProductAttentionBackwardInto(dq, dk, dv, dout, q, k, v, out, lse, p)
			}
		})
		if sh[2] < 4096 {
			continue
		}
		// The memory one step asks for: the results and the scratch (its
		// free list emptied each time), O(seq·dim) where the composition's
		// [S, S] scores alone are 4·S² bytes (SxS-B).
		b.Run(name+"/fwd+bwd/alloc", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				attnScratches = freelist.Stack[attnScratch]{}
				out, lse := New(sh...), New(sh[:3]...)
				ScaledDotProductAttentionInto(out, lse, q, k, v, p)
				ScaledDotProductAttentionBackward(dout, q, k, v, out, lse, p)
			}
			b.ReportMetric(4*float64(sh[2])*float64(sh[2]), "SxS-B")
		})
	}
}

// f64s is float64s of any view.
func f64s(t *Tensor) []float64 { return float64s(t.Contiguous()) }
