package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

type torch24Tensor struct {
	Shape []int     `json:"shape"`
	Data  []float64 `json:"data"`
}

func (t torch24Tensor) tensor() *tensor.Tensor {
	d := make([]float32, len(t.Data))
	for i, v := range t.Data {
		d[i] = float32(v)
	}
	return tensor.FromSlice(d, t.Shape...)
}

func ints(a any) []int {
	var out []int
	for _, v := range a.([]any) {
		out = append(out, int(v.(float64)))
	}
	return out
}

func floats(a any) []float32 {
	var out []float32
	for _, v := range a.([]any) {
		out = append(out, float32(v.(float64)))
	}
	return out
}

// TestTorch24Grads compares the tape's values and gradients of Σ op(x)·w
// with PyTorch's (testdata/torch24_grad.json, written by
// testdata/torch24_grad.py) within 1e-5 of the largest magnitude.
func TestTorch24Grads(t *testing.T) {
	b, err := os.ReadFile("testdata/torch24_grad.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Op     string                   `json:"op"`
			Args   map[string]any           `json:"args"`
			Inputs map[string]torch24Tensor `json:"inputs"`
			W      torch24Tensor            `json:"w"`
			Y      torch24Tensor            `json:"y"`
			Grads  map[string]torch24Tensor `json:"grads"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 28 {
		t.Fatalf("%d cases", len(ref.Cases))
	}
	for i, c := range ref.Cases {
		a := c.Args
		tp := NewTape()
		ps := map[string]*Var{}
		for k, v := range c.Inputs {
			ps[k] = NewParam(v.tensor())
		}
		x := ps["x"]
		var y *Var
		axis := func() int { return int(a["axis"].(float64)) }
		switch c.Op {
		case "Prod":
			y = tp.Prod(x, false, axis())
		case "CumProd":
			y = tp.CumProd(x, axis())
		case "CumSum":
			y = tp.CumSum(x, axis())
		case "Norm":
			p := map[any]float64{"inf": math.Inf(1), "-inf": math.Inf(-1)}[a["p"]]
			if f, ok := a["p"].(float64); ok {
				p = f
			}
			y = tp.Norm(x, p, false, axis())
		case "Sort":
			y, _ = tp.Sort(x, axis(), a["descending"].(bool))
		case "TopK":
			y, _ = tp.TopK(x, int(a["k"].(float64)), axis(), a["largest"].(bool), true)
		case "Median":
			y, _ = tp.Median(x, axis(), false)
		case "Flip":
			y = tp.Flip(x, ints(a["axes"])...)
		case "Roll":
			y = tp.Roll(x, ints(a["shifts"]), ints(a["axes"])...)
		case "Tile":
			y = tp.Tile(x, ints(a["reps"])...)
		case "MaskedSelect":
			y = tp.MaskedSelect(x, tensor.FromSlice(floats(a["mask"]), ints(a["maskShape"])...))
		case "Scatter":
			index := tensor.FromSlice(floats(a["index"]), ints(a["indexShape"])...)
			y = tp.Scatter(ps["dst"], axis(), index, ps["src"])
		default:
			t.Fatalf("case %d: unknown op %q", i, c.Op)
		}
		tp.Backward(tp.Sum(tp.Mul(y, tp.Const(c.W.tensor()))))
		check := func(what string, got *tensor.Tensor, want torch24Tensor) {
			what = fmt.Sprintf("case %d: %s%v: %s", i, c.Op, a, what)
			if !slices.Equal(got.Shape(), want.Shape) {
				t.Errorf("%s: shape %v, want PyTorch's %v", what, got.Shape(), want.Shape)
				return
			}
			scale := 1e-30
			for _, v := range want.Data {
				scale = max(scale, math.Abs(v))
			}
			for j, v := range want.Data {
				if g := float64(got.Data()[j]); math.Abs(g-v) > 1e-5*scale || g != g {
					t.Errorf("%s: element %d = %v, want PyTorch's %v", what, j, g, v)
					return
				}
			}
		}
		check("value", y.Value(), c.Y)
		for k, g := range c.Grads {
			check("gradient of "+k, ps[k].Grad(), g)
		}
	}
}
