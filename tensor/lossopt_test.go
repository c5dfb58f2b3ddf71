package tensor

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// torchLossCase is one case of testdata/lossopt.json (lossopt_gen.py):
// PyTorch's loss and gradient, in float64, for float32 inputs.
type torchLossCase struct {
	Name, Fn, Reduction                string
	Input, Target, Loss, Dloss, Grad   jsonFloats
	InputShape, TargetShape, LossShape []int
	Weight, PosWeight                  jsonFloats
	IgnoreIndex                        *int
	LabelSmoothing, Beta, Delta        float64
	LogTarget                          bool
}

func (c *torchLossCase) UnmarshalJSON(b []byte) error {
	type plain torchLossCase
	var raw struct {
		plain
		InputShape  []int      `json:"input_shape"`
		TargetShape []int      `json:"target_shape"`
		LossShape   []int      `json:"loss_shape"`
		PosWeight   jsonFloats `json:"pos_weight"`
		IgnoreIndex *int       `json:"ignore_index"`
		LS          float64    `json:"label_smoothing"`
		LogTarget   bool       `json:"log_target"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*c = torchLossCase(raw.plain)
	c.InputShape, c.TargetShape, c.LossShape = raw.InputShape, raw.TargetShape, raw.LossShape
	c.PosWeight, c.IgnoreIndex, c.LabelSmoothing, c.LogTarget = raw.PosWeight, raw.IgnoreIndex, raw.LS, raw.LogTarget
	return nil
}

// jsonFloats are float64s in JSON, where a non-finite one is a string ("nan",
// "inf", "-inf").
type jsonFloats []float64

func (f *jsonFloats) UnmarshalJSON(b []byte) error {
	var raw []any
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*f = make(jsonFloats, len(raw))
	for i, v := range raw {
		switch v := v.(type) {
		case float64:
			(*f)[i] = v
		case string:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return err
			}
			(*f)[i] = x
		}
	}
	return nil
}

func f32Tensor(v []float64, shape ...int) *Tensor {
	t := New(shape...)
	for i, x := range v {
		t.data[i] = float32(x)
	}
	return t
}

// params returns the case's LossParams.
func (c *torchLossCase) params() LossParams {
	p := LossParams{Reduction: map[string]LossReduction{"mean": LossMean, "sum": LossSum, "none": LossNone, "batchmean": LossBatchMean}[c.Reduction],
		LabelSmoothing: float32(c.LabelSmoothing), LogTarget: c.LogTarget}
	if c.Weight != nil {
		p.Weight = f32Tensor(c.Weight, len(c.Weight))
	}
	if c.PosWeight != nil {
		p.PosWeight = f32Tensor(c.PosWeight, len(c.PosWeight))
	}
	if c.IgnoreIndex != nil {
		p.Ignore, p.IgnoreIndex = true, *c.IgnoreIndex
	}
	return p
}

// lossFns are the forward and backward of each loss by the name the
// generator gives it.
var lossFns = map[string]struct {
	f func(x, t *Tensor, c *torchLossCase, p LossParams) *Tensor
	b func(d, x, t *Tensor, c *torchLossCase, p LossParams) *Tensor
}{
	"NLL": {func(x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return NLL(x, t, p) }, func(d, x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return NLLBackward(d, x, t, p) }},
	"CrossEntropy": {func(x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return CrossEntropyWith(x, t, p) }, func(d, x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor {
		return CrossEntropyWithBackward(d, x, t, p)
	}},
	"L1": {func(x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return L1(x, t, p) }, func(d, x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return L1Backward(d, x, t, p) }},
	"SmoothL1": {func(x, t *Tensor, c *torchLossCase, p LossParams) *Tensor { return SmoothL1(x, t, float32(c.Beta), p) },
		func(d, x, t *Tensor, c *torchLossCase, p LossParams) *Tensor {
			return SmoothL1Backward(d, x, t, float32(c.Beta), p)
		}},
	"Huber": {func(x, t *Tensor, c *torchLossCase, p LossParams) *Tensor { return Huber(x, t, float32(c.Delta), p) },
		func(d, x, t *Tensor, c *torchLossCase, p LossParams) *Tensor {
			return HuberBackward(d, x, t, float32(c.Delta), p)
		}},
	"KLDiv": {func(x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return KLDiv(x, t, p) }, func(d, x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return KLDivBackward(d, x, t, p) }},
	"BCE":   {func(x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return BCE(x, t, p) }, func(d, x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return BCEBackward(d, x, t, p) }},
	"BCEWithLogits": {func(x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor { return BCEWithLogitsWith(x, t, p) },
		func(d, x, t *Tensor, _ *torchLossCase, p LossParams) *Tensor {
			return BCEWithLogitsWithBackward(d, x, t, p)
		}},
}

func loadLossCases(t *testing.T) []torchLossCase {
	b, err := os.ReadFile("testdata/lossopt.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []torchLossCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs) < 50 {
		t.Fatalf("%d cases in testdata/lossopt.json", len(cs))
	}
	return cs
}

// TestLossOptTorch holds each loss, its reduction and options, and its
// gradient to PyTorch's float64 values (inputs rounded to float32 first):
// within 2e-6 relative to the larger of the value and the case's scale.
func TestLossOptTorch(t *testing.T) {
	for _, c := range loadLossCases(t) {
		t.Run(c.Name+"/"+c.Reduction, func(t *testing.T) {
			fn := lossFns[c.Fn]
			x, tg := f32Tensor(c.Input, c.InputShape...), f32Tensor(c.Target, c.TargetShape...)
			p := c.params()
			loss := fn.f(x, tg, &c, p)
			checkNear(t, "loss", loss, c.LossShape, c.Loss)
			d := f32Tensor(c.Dloss, c.LossShape...)
			checkNear(t, "grad", fn.b(d, x, tg, &c, p), c.InputShape, c.Grad)
		})
	}
}

// checkNear compares got with want elementwise within 2e-6·(1 + |want|).
func checkNear(t *testing.T, what string, got *Tensor, shape []int, want []float64) {
	t.Helper()
	if len(got.Shape()) != len(shape) || got.Len() != len(want) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), shape)
	}
	for i, g := range got.Data() {
		if !closeTo(g, want[i], 2e-6, 1+math.Abs(want[i])) {
			t.Errorf("%s[%d] = %v, want %v", what, i, g, want[i])
		}
	}
}

// TestLossOptFiniteDifferences checks each backward (sum reduction)
// against central differences of its forward, computed from the forward
// of float32 inputs: within 1e-2·(1 + |g|) at step 1e-2 (the float32
// rounding of the loss bounds the accuracy).
func TestLossOptFiniteDifferences(t *testing.T) {
	for _, c := range loadLossCases(t) {
		if c.Reduction != "sum" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			fn := lossFns[c.Fn]
			x, tg := f32Tensor(c.Input, c.InputShape...), f32Tensor(c.Target, c.TargetShape...)
			p := c.params()
			g := fn.b(Scalar(1), x, tg, &c, p).Data()
			const h = 1e-2
			for i := range x.data {
				v := x.data[i]
				if c.Fn == "BCE" && (v < 0.1 || v > 0.9) {
					continue // curvature near the ends (its values there are PyTorch's, above)
				}
				if (c.Fn == "L1" || c.Fn == "SmoothL1" || c.Fn == "Huber") &&
					math.Abs(math.Abs(float64(v)-c.Target[i])-c.Beta-c.Delta) < 2*h {
					continue // |z| within the step of a kink (L1's 0) or of a change of formula
				}
				x.data[i] = v + h
				up := float64(fn.f(x, tg, &c, p).Item())
				x.data[i] = v - h
				down := float64(fn.f(x, tg, &c, p).Item())
				x.data[i] = v
				fd := (up - down) / (2 * h)
				if math.Abs(fd-float64(g[i])) > 1e-2*(1+math.Abs(fd)) {
					t.Errorf("d/dx[%d]: backward %v, finite differences %v", i, g[i], fd)
				}
			}
		})
	}
}

// TestLossOptEdges: every target ignored gives NaN for the mean (PyTorch's
// 0/0), 0 for the sum, zero gradients; no element gives NaN (mean) and 0
// (sum); bad arguments panic naming the function.
func TestLossOptEdges(t *testing.T) {
	x := FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	ign := FromSlice([]float32{-100, -100}, 2)
	for _, tc := range []struct {
		name string
		f    func(p LossParams) *Tensor
		b    func(p LossParams) *Tensor
	}{
		{"NLL", func(p LossParams) *Tensor { return NLL(x, ign, p) }, func(p LossParams) *Tensor { return NLLBackward(Scalar(1), x, ign, p) }},
		{"CrossEntropyWith", func(p LossParams) *Tensor { return CrossEntropyWith(x, ign, p) }, func(p LossParams) *Tensor { return CrossEntropyWithBackward(Scalar(1), x, ign, p) }},
	} {
		if v := tc.f(LossParams{}).Item(); !math.IsNaN(float64(v)) {
			t.Errorf("%s: all ignored, mean %v, want NaN", tc.name, v)
		}
		if v := tc.f(LossParams{Reduction: LossSum}).Item(); v != 0 {
			t.Errorf("%s: all ignored, sum %v, want 0", tc.name, v)
		}
		for i, v := range tc.b(LossParams{}).Data() {
			if v != 0 {
				t.Errorf("%s: all ignored, gradient[%d] = %v, want 0", tc.name, i, v)
			}
		}
	}
	// The fast path is taken with default options, and a -100 target
	// leaves it for the general one (the fused CrossEntropy would panic).
	lab := FromSlice([]float32{2, -100}, 2)
	want := float64(CrossEntropyWith(x.Slice(0, 0, 1, 1), lab.Slice(0, 0, 1, 1), LossParams{}).Item())
	if got := float64(CrossEntropyWith(x, lab, LossParams{}).Item()); math.Abs(got-want) > 1e-6 {
		t.Errorf("CrossEntropyWith with an ignored row: %v, want %v", got, want)
	}
	e := New(0)
	if v := L1(e, e, LossParams{}).Item(); !math.IsNaN(float64(v)) {
		t.Errorf("L1 of nothing: mean %v, want NaN", v)
	}
	if v := L1(e, e, LossParams{Reduction: LossSum}).Item(); v != 0 {
		t.Errorf("L1 of nothing: sum %v, want 0", v)
	}
	expectPanic(t, "tensor: NLL: target 3 at 1 outside [0, 3) and not the ignored index -100", func() {
		NLL(x, FromSlice([]float32{0, 3}, 2), LossParams{})
	})
	expectPanic(t, "tensor: NLL: input of shape [2 3] and target of shape [3], want [N C d...] and [N d...] (or [C] and [])", func() {
		NLL(x, New(3), LossParams{})
	})
	expectPanic(t, "tensor: BCE: input element 0 is 1.5, outside [0, 1]", func() {
		BCE(FromSlice([]float32{1.5}, 1), New(1), LossParams{})
	})
	expectPanic(t, "tensor: L1: reduction batchmean not supported", func() {
		L1(x, x, LossParams{Reduction: LossBatchMean})
	})
	expectPanic(t, "tensor: CrossEntropyWith: weight of shape [2] for 3 classes", func() {
		CrossEntropyWith(x, FromSlice([]float32{0, 1}, 2), LossParams{Weight: New(2)})
	})
	expectPanic(t, "tensor: L1Backward: dloss of shape [2], want a 0-d tensor", func() {
		L1Backward(New(2), x, x, LossParams{})
	})
}

// TestLossOptStrided: strided and transposed operands give the results of
// their contiguous copies.
func TestLossOptStrided(t *testing.T) {
	base := RandN(rand.New(rand.NewPCG(1, 2)), 4, 6)
	x := base.T() // [6 4], transposed
	tgt := RandN(rand.New(rand.NewPCG(3, 4)), 6, 4)
	for _, p := range []LossParams{{}, {Reduction: LossNone}} {
		a, b := Huber(x, tgt, 0.5, p).Data(), Huber(x.Contiguous(), tgt, 0.5, p).Data()
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("Huber of a transposed view: %v, want %v", a, b)
			}
		}
	}
}
