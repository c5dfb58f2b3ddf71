package tensor

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"
)

// torch24 is testdata/torch24_shape.json, PyTorch's outputs for the ops
// of issue 24 (written by testdata/torch24_shape.py).
type torch24 struct {
	Torch string `json:"torch"`
	Cases []struct {
		Op      string                   `json:"op"`
		Args    map[string]any           `json:"args"`
		Inputs  map[string]torch24Tensor `json:"inputs"`
		Outputs map[string]torch24Tensor `json:"outputs"`
	} `json:"cases"`
}

type torch24Tensor struct {
	Shape []int `json:"shape"`
	Data  []any `json:"data"` // numbers, or "nan", "inf", "-inf"
}

func (t torch24Tensor) tensor() *Tensor {
	d := make([]float32, len(t.Data))
	for i, v := range t.Data {
		switch v := v.(type) {
		case float64:
			d[i] = float32(v)
		case string:
			f, _ := map[string]float64{"nan": math.NaN(), "inf": math.Inf(1), "-inf": math.Inf(-1)}[v]
			d[i] = float32(f)
		}
	}
	return FromSlice(d, t.Shape...)
}

func argInt(a any) int { return int(a.(float64)) }

func argInts(a any) []int {
	var out []int
	for _, v := range a.([]any) {
		out = append(out, argInt(v))
	}
	return out
}

func argFloat(a any) float64 {
	switch v := a.(type) {
	case string:
		return map[string]float64{"inf": math.Inf(1), "-inf": math.Inf(-1)}[v]
	}
	return a.(float64)
}

// TestTorch24 runs every case of testdata/torch24_shape.json: equal to
// PyTorch's output, or within 2⁻²² relative (of the largest magnitude of
// the output) where the two accumulate differently (the scans, Prod,
// Norm: lanes in float64, PyTorch in float32).
func TestTorch24(t *testing.T) {
	b, err := os.ReadFile("testdata/torch24_shape.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref torch24
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) < 200 {
		t.Fatalf("%d cases in testdata/torch24_shape.json", len(ref.Cases))
	}
	for i, c := range ref.Cases {
		in := map[string]*Tensor{}
		for k, v := range c.Inputs {
			in[k] = v.tensor()
		}
		a := c.Args
		got := map[string]*Tensor{}
		tol := 0.0
		switch c.Op {
		case "Sort":
			got["values"], got["indices"] = Sort(in["x"], argInt(a["axis"]), a["descending"].(bool))
		case "ArgSort":
			got["indices"] = ArgSort(in["x"], argInt(a["axis"]), a["descending"].(bool))
		case "TopK":
			got["values"], got["indices"] = TopK(in["x"], argInt(a["k"]), argInt(a["axis"]), a["largest"].(bool), true)
		case "Median":
			got["values"], got["indices"] = Median(in["x"], argInt(a["axis"]), a["keepdims"].(bool))
		case "CumSum":
			got["y"], tol = CumSum(in["x"], argInt(a["axis"])), 0x1p-22
		case "CumProd":
			got["y"], tol = CumProd(in["x"], argInt(a["axis"])), 0x1p-22
		case "Prod":
			got["y"], tol = Prod(in["x"], a["keepdims"].(bool), argInts(a["axes"])...), 0x1p-22
		case "Norm":
			got["y"], tol = Norm(in["x"], argFloat(a["p"]), a["keepdims"].(bool), argInts(a["axes"])...), 0x1p-22
		case "Any":
			got["y"] = Any(in["x"], a["keepdims"].(bool), argInts(a["axes"])...)
		case "All":
			got["y"] = All(in["x"], a["keepdims"].(bool), argInts(a["axes"])...)
		case "Flip":
			got["y"] = Flip(in["x"], argInts(a["axes"])...)
		case "Roll":
			got["y"] = Roll(in["x"], argInts(a["shifts"]), argInts(a["axes"])...)
		case "Tile":
			got["y"] = Tile(in["x"], argInts(a["reps"])...)
		case "MaskedSelect":
			got["y"] = MaskedSelect(in["x"], in["mask"])
		case "MaskedFill":
			got["y"] = MaskedFill(in["x"], in["mask"], float32(argFloat(a["value"])))
		case "Scatter":
			got["y"] = Scatter(in["dst"], argInt(a["axis"]), in["index"], in["src"])
		case "ScatterAdd":
			got["y"], tol = ScatterAdd(in["dst"], argInt(a["axis"]), in["index"], in["src"]), 0x1p-22
		case "IndexAdd":
			got["y"], tol = IndexAdd(in["dst"], argInt(a["axis"]), in["index"], in["src"]), 0x1p-22
		default:
			t.Fatalf("case %d: unknown op %q", i, c.Op)
		}
		for k, w := range c.Outputs {
			what := fmt.Sprintf("case %d: %s%v %s", i, c.Op, a, k)
			g, want := got[k], w.tensor()
			if g == nil {
				t.Errorf("%s: no output", what)
				continue
			}
			if !slices.Equal(g.Shape(), want.Shape()) {
				t.Errorf("%s: shape %v, want PyTorch's %v", what, g.Shape(), want.Shape())
				continue
			}
			scale := 0.0
			for _, v := range want.Data() {
				if !math.IsInf(float64(v), 0) && v == v {
					scale = max(scale, math.Abs(float64(v)))
				}
			}
			for j, v := range want.Data() {
				if !closeTo(g.Data()[j], float64(v), tol, scale) {
					t.Errorf("%s: element %d = %v, want PyTorch's %v", what, j, g.Data()[j], v)
					break
				}
			}
		}
	}
}
