package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// atEveryLevel runs f as a subtest at every SIMD level this machine has.
func atEveryLevel(t *testing.T, f func(t *testing.T)) {
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, l := range dispatch.Levels() {
		if _, err := dispatch.SetLevel(l); err != nil {
			t.Fatal(err)
		}
		t.Run(l.String(), f)
	}
}

// lossCase is a loss with its float64 reference: ref returns the loss and
// the gradient (row-major, of the prediction's shape) of pred and target.
type lossCase struct {
	name string
	f    func(pred, target *Tensor) (loss, grad *Tensor)
	into func(loss, grad, pred, target *Tensor)
	ref  func(pred, target []float64, shape []int) (float64, []float64)
	// target returns a target for a prediction of the given shape.
	target func(r *rand.Rand, shape []int) *Tensor
	shapes [][]int
}

var lossCases = []lossCase{
	{"CrossEntropy", CrossEntropy, CrossEntropyInto, refCrossEntropy, randLabels,
		[][]int{{4, 3}, {1, 1}, {7, 33}, {0, 5}, {65, 10}, {3, 1100}}},
	{"MSE", MSE, MSEInto, refMSE, func(r *rand.Rand, s []int) *Tensor { return RandN(r, s...) },
		[][]int{{}, {1}, {3, 4}, {0}, {2, 0, 3}, {5, 7, 61}, {2050}}},
	{"BCEWithLogits", BCEWithLogits, BCEWithLogitsInto, refBCE, func(r *rand.Rand, s []int) *Tensor { return RandU(r, 0, 1, s...) },
		[][]int{{}, {1}, {3, 4}, {0, 2}, {5, 7, 61}}},
}

func randLabels(r *rand.Rand, s []int) *Tensor {
	l := New(s[0])
	for i := range l.data {
		l.data[i] = float32(r.IntN(s[1]))
	}
	return l
}

func refCrossEntropy(x, lab []float64, shape []int) (float64, []float64) {
	n, c := shape[0], shape[1]
	g := make([]float64, len(x))
	var sum float64
	for i := range n {
		row := x[i*c : (i+1)*c]
		m := math.Inf(-1)
		for _, v := range row {
			m = math.Max(m, v)
		}
		var z float64
		for _, v := range row {
			z += math.Exp(v - m)
		}
		k := int(lab[i])
		sum += m + math.Log(z) - row[k]
		for j, v := range row {
			g[i*c+j] = math.Exp(v-m) / z / float64(n)
		}
		g[i*c+k] -= 1 / float64(n)
	}
	return sum / float64(n), g
}

func refMSE(p, t []float64, _ []int) (float64, []float64) {
	g := make([]float64, len(p))
	var sum float64
	for i := range p {
		d := p[i] - t[i]
		sum += d * d
		g[i] = 2 * d / float64(len(p))
	}
	return sum / float64(len(p)), g
}

func refBCE(x, t []float64, _ []int) (float64, []float64) {
	g := make([]float64, len(x))
	var sum float64
	for i, a := range x {
		sum += math.Max(a, 0) - a*t[i] + math.Log1p(math.Exp(-math.Abs(a)))
		g[i] = (1/(1+math.Exp(-a)) - t[i]) / float64(len(x))
	}
	return sum / float64(len(x)), g
}

func float64s(t *Tensor) []float64 {
	d := t.Data()
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v)
	}
	return out
}

// checkLoss compares a loss and its gradient with the float64 reference:
// the loss within 1e-6 relative, each gradient element within 1e-6 of the
// largest gradient element (1/N for CrossEntropy).
func checkLoss(t *testing.T, what string, loss, grad *Tensor, want float64, wantGrad []float64) {
	t.Helper()
	if len(loss.Shape()) != 0 {
		t.Fatalf("%s: loss of shape %v, want 0-d", what, loss.Shape())
	}
	if !closeTo(loss.Item(), want, 1e-6, math.Max(1, math.Abs(want))) {
		t.Errorf("%s: loss %v, reference %v", what, loss.Item(), want)
	}
	if grad == nil {
		return
	}
	scale := 1e-30
	for _, v := range wantGrad {
		scale = math.Max(scale, math.Abs(v))
	}
	for i, v := range grad.Data() {
		if !closeTo(v, wantGrad[i], 1e-6, scale) {
			t.Errorf("%s: gradient element %d: %v, reference %v", what, i, v, wantGrad[i])
			return
		}
	}
}

// TestLossReference checks every loss and its gradient against the
// float64 reference, at every SIMD level, with predictions laid out
// contiguous, transposed and strided, gradients written to contiguous and
// strided tensors, or not at all (the Into forms with nil), and empty
// operands (NaN loss).
func TestLossReference(t *testing.T) {
	atEveryLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(61, 62))
		for _, c := range lossCases {
			for _, shape := range c.shapes {
				for _, layout := range []string{"contiguous", "transposed", "strided"} {
					name := fmt.Sprintf("%s%v/%s", c.name, shape, layout)
					pred := randLayout(r, layout, shape...)
					target := c.target(r, shape)
					want, wantGrad := c.ref(float64s(pred), float64s(target), shape)
					loss, grad := c.f(pred, target)
					if !slices.Equal(grad.Shape(), shape) || !grad.IsContiguous() {
						t.Fatalf("%s: gradient of shape %v, want contiguous %v", name, grad.Shape(), shape)
					}
					checkLoss(t, name, loss, grad, want, wantGrad)

					loss2 := Scalar(-1)
					strided := randLayout(r, "strided", shape...)
					c.into(loss2, strided, pred, target)
					checkLoss(t, name+"/Into strided", loss2, strided, want, wantGrad)
					alone := Scalar(-1)
					c.into(alone, nil, pred, target)
					if math.Float32bits(alone.Item()) != math.Float32bits(loss.Item()) {
						t.Errorf("%s: the loss alone %v, with the gradient %v", name, alone.Item(), loss.Item())
					}
					if !slices.Equal(strided.Data(), grad.Data()) {
						t.Errorf("%s: the gradient into a strided tensor differs", name)
					}
				}
			}
		}
	})
}

// TestLossFiniteDifferences checks each loss's gradient against central
// differences of the loss itself (in float32, the quotient in float64).
func TestLossFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	for _, c := range lossCases {
		shape := []int{5, 6}
		pred, target := Scale(RandN(r, shape...), 2), c.target(r, shape)
		_, grad := c.f(pred, target)
		for j := range pred.data {
			old := pred.data[j]
			const h = 1e-2
			pred.data[j] = old + h
			up, _ := c.f(pred, target)
			pred.data[j] = old - h
			down, _ := c.f(pred, target)
			pred.data[j] = old
			num := (float64(up.Item()) - float64(down.Item())) / (2 * h)
			if got := float64(grad.data[j]); math.Abs(got-num) > 1e-4+1e-2*math.Abs(num) {
				t.Errorf("%s: element %d: gradient %v, finite differences %v", c.name, j, got, num)
			}
		}
	}
}

// TestLossEdges checks extreme values (no overflow: the losses are
// computed stably), outputs overlapping the inputs (computed from copies)
// and that the Into forms on the host allocate nothing.
func TestLossEdges(t *testing.T) {
	x := FromSlice([]float32{1e4, -1e4, 0, -1e4, 1e4, 3}, 2, 3)
	lab := FromSlice([]float32{1, 2}, 2)
	loss, g := CrossEntropy(x, lab)
	want, wantGrad := refCrossEntropy(float64s(x), float64s(lab), []int{2, 3})
	checkLoss(t, "CrossEntropy(±1e4)", loss, g, want, wantGrad)

	inf := float32(math.Inf(1))
	x = FromSlice([]float32{inf, 0, 0, 1}, 2, 2)
	loss, g = CrossEntropy(x, FromSlice([]float32{1, 0}, 2))
	if l := loss.Item(); !math.IsInf(float64(l), 1) || !math.IsNaN(float64(g.At(0, 0))) {
		t.Errorf("CrossEntropy of a row with +Inf: loss %v, gradient %v; want +Inf and NaN", l, g.Data())
	}

	b := FromSlice([]float32{100, -100, 30, -30}, 4)
	bt := FromSlice([]float32{0, 1, 0.5, 1}, 4)
	loss, g = BCEWithLogits(b, bt)
	want, wantGrad = refBCE(float64s(b), float64s(bt), nil)
	checkLoss(t, "BCEWithLogits(±100)", loss, g, want, wantGrad)

	// dlogits is logits itself: computed from a copy.
	r := rand.New(rand.NewPCG(65, 66))
	x = RandN(r, 4, 5)
	lab = FromSlice([]float32{0, 4, 2, 2}, 4)
	wl, wg := CrossEntropy(x, lab)
	l := New()
	CrossEntropyInto(l, x, x, lab)
	if l.Item() != wl.Item() || !slices.Equal(x.Data(), wg.Data()) {
		t.Errorf("CrossEntropyInto in place: %v %v, want %v %v", l.Item(), x.Data(), wl.Item(), wg.Data())
	}
	p, tg := RandN(r, 3, 4), RandN(r, 3, 4)
	wl, wg = MSE(p, tg)
	MSEInto(l, tg, p, tg) // the gradient over the target
	if l.Item() != wl.Item() || !slices.Equal(tg.Data(), wg.Data()) {
		t.Errorf("MSEInto over the target: %v, want %v", l.Item(), wl.Item())
	}

	x, lab, d := RandN(r, 64, 10), randLabels(r, []int{64, 10}), New(64, 10)
	p, tg, dp := RandN(r, 64, 10), RandN(r, 64, 10), New(64, 10)
	noAllocs(t, "CrossEntropyInto", func() { CrossEntropyInto(l, d, x, lab) })
	noAllocs(t, "MSEInto", func() { MSEInto(l, dp, p, tg) })
	noAllocs(t, "BCEWithLogitsInto", func() { BCEWithLogitsInto(l, dp, p, tg) })
	noAllocs(t, "MSEInto (the loss alone)", func() { MSEInto(l, nil, p, tg) })
}

// TestLossPanics checks the programmer errors: shapes, labels that are not
// class indices (named with their row and value), outputs of the wrong
// shape.
func TestLossPanics(t *testing.T) {
	x, lab := New(3, 3), FromSlice([]float32{0, 1, 2}, 3)
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"tensor: CrossEntropy: label 7 of row 0 outside [0, 3)", func() { CrossEntropy(x, FromSlice([]float32{7, 0, 1}, 3)) }},
		{"tensor: CrossEntropy: label -1 of row 2 outside [0, 3)", func() { CrossEntropy(x, FromSlice([]float32{0, 1, -1}, 3)) }},
		{"tensor: CrossEntropyInto: label 1.5 of row 1 outside [0, 3)", func() { CrossEntropyInto(New(), nil, x, FromSlice([]float32{0, 1.5, 1}, 3)) }},
		{"tensor: CrossEntropy: label NaN of row 0 outside [0, 3)", func() { CrossEntropy(x, FromSlice([]float32{float32(math.NaN()), 0, 0}, 3)) }},
		{"tensor: CrossEntropy: label 0 of row 0 outside [0, 0)", func() { CrossEntropy(New(1, 0), New(1)) }},
		{"tensor: CrossEntropy: logits of shape [3] and labels of shape [3], want [N C] and [N]", func() { CrossEntropy(New(3), lab) }},
		{"tensor: CrossEntropy: logits of shape [3 3] and labels of shape [2], want [N C] and [N]", func() { CrossEntropy(x, New(2)) }},
		{"tensor: CrossEntropy: nil tensor logits", func() { CrossEntropy(nil, lab) }},
		{"tensor: CrossEntropyInto: loss of shape [1], want a 0-d tensor", func() { CrossEntropyInto(New(1), nil, x, lab) }},
		{"tensor: CrossEntropyInto: gradient of shape [3 2] for a prediction of shape [3 3]", func() { CrossEntropyInto(New(), New(3, 2), x, lab) }},
		{"tensor: MSE: target shape [3] and x shape [3 3] differ", func() { MSE(x, lab) }},
		{"tensor: BCEWithLogitsInto: dst of shape [3 3] has a broadcast (stride 0) dimension 0", func() {
			BCEWithLogitsInto(New(), New(3).BroadcastTo(3, 3), x, x)
		}},
	} {
		expectPanic(t, c.want, c.f)
	}
}
