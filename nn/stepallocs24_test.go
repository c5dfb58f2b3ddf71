package nn

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// stepAllocCase is one op family of issue 24 run as a training step:
// forward on a fresh step of the tape, a sum as the loss, backward.
type stepAllocCase struct {
	name string
	f    func(tp *Tape, x *Var) *Var
}

// stepAllocCases covers the tape ops of issue 24 that reuse the tape's
// buffers, and the older ops they are compared with (exp, add).
func stepAllocCases() []stepAllocCase {
	mask := tensor.FromSlice([]float32{1, 0, 1, 0, 0, 1, 1, 0}, 2, 4)
	r := rand.New(rand.NewPCG(3, 4))
	w := NewParam(tensor.RandN(r, 3, 2, 3))     // Conv1D weight
	wt := NewParam(tensor.RandN(r, 2, 3, 2, 2)) // ConvTranspose2D weight
	theta := NewParam(tensor.FromSlice([]float32{1, 0.1, 0, -0.2, 0.9, 0.1}, 1, 2, 3))
	index := tensor.FromSlice([]float32{1, 0, 3, 2}, 1, 4)
	adj := tensor.CSRFromCOO(2, 2, []int{0, 1, 1}, []int{1, 0, 1}, []float32{0.5, 2, 1})
	return []stepAllocCase{
		{"old/exp", func(tp *Tape, x *Var) *Var { return tp.Exp(x) }},
		{"old/add", func(tp *Tape, x *Var) *Var { return tp.Add(x, x) }},
		{"sort", func(tp *Tape, x *Var) *Var { v, _ := tp.Sort(x, 1, true); return v }},
		{"topk", func(tp *Tape, x *Var) *Var { v, _ := tp.TopK(x, 2, 1, true, true); return v }},
		{"median", func(tp *Tape, x *Var) *Var { v, _ := tp.Median(x, 1, false); return v }},
		{"cumsum", func(tp *Tape, x *Var) *Var { return tp.CumSum(x, 1) }},
		{"cumprod", func(tp *Tape, x *Var) *Var { return tp.CumProd(x, 1) }},
		{"prod", func(tp *Tape, x *Var) *Var { return tp.Prod(x, false, 1) }},
		{"norm", func(tp *Tape, x *Var) *Var { return tp.Norm(x, 2, false, 1) }},
		{"maxaxes", func(tp *Tape, x *Var) *Var { return tp.MaxAxes(x, false, 1) }},
		{"flip", func(tp *Tape, x *Var) *Var { return tp.Flip(x, 0, 1) }},
		{"roll", func(tp *Tape, x *Var) *Var { return tp.Roll(x, []int{1, -3}, 0, 1) }},
		{"tile", func(tp *Tape, x *Var) *Var { return tp.Tile(x, 2, 1, 3) }},
		{"maskedselect", func(tp *Tape, x *Var) *Var { return tp.MaskedSelect(x, mask) }},
		{"maskedfill", func(tp *Tape, x *Var) *Var { return tp.MaskedFill(x, mask, -1) }},
		{"scatter", func(tp *Tape, x *Var) *Var {
			return tp.Scatter(x, 1, index, tp.Slice(x, 0, 0, 1, 1))
		}},
		{"pairwise", func(tp *Tape, x *Var) *Var { return tp.PairwiseSqDist(x, tp.Scale(x, 2)) }},
		{"rbf", func(tp *Tape, x *Var) *Var { return tp.RBFKernel(x, x, 0.5) }},
		{"spmm", func(tp *Tape, x *Var) *Var { return tp.SpMM(adj, x) }},
		{"sin", func(tp *Tape, x *Var) *Var { return tp.Sin(x) }},
		{"mod", func(tp *Tape, x *Var) *Var { return tp.Mod(x, tp.AddScalar(tp.Exp(x), 1)) }},
		{"conv1d", func(tp *Tape, x *Var) *Var { return tp.Conv1D(tp.Reshape(x, 1, 2, 4), w, nil, tensor.Conv1DParams{}) }},
		{"convtranspose2d", func(tp *Tape, x *Var) *Var {
			return tp.ConvTranspose2D(tp.Reshape(x, 1, 2, 2, 2), wt, nil, tensor.ConvTransposeParams{})
		}},
		{"pad", func(tp *Tape, x *Var) *Var { return tp.Pad(x, []int{1, 2}, tensor.PadConstant, 0) }},
		{"affinegrid", func(tp *Tape, x *Var) *Var {
			return tp.Add(tp.AffineGrid(theta, []int{1, 1, 2, 2}, false), tp.Reshape(x, 1, 2, 2, 2))
		}},
		{"gridsample", func(tp *Tape, x *Var) *Var {
			g := tp.Scale(tp.Reshape(x, 1, 2, 2, 2), 0.3)
			return tp.GridSample(tp.Reshape(x, 1, 1, 2, 4), g, tensor.GridSampleParams{})
		}},
		{"interpolate", func(tp *Tape, x *Var) *Var {
			return tp.Interpolate(tp.Reshape(x, 1, 1, 2, 4), tensor.InterpolateParams{Size: [2]int{3, 5}, Mode: tensor.InterpBilinear})
		}},
	}
}

// stepAllocs returns the allocations of a repeated training step of c on
// a [2, 4] parameter, after two warm-up steps.
func stepAllocs(c stepAllocCase) float64 {
	r := rand.New(rand.NewPCG(1, 2))
	x := NewParam(tensor.RandN(r, 2, 4))
	tp := NewTape()
	step := func() {
		tp.Reset()
		tp.Backward(tp.Sum(c.f(tp, x)))
	}
	step()
	step()
	return testing.AllocsPerRun(10, step)
}

func TestStepAllocsInventory(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: the race runtime allocates")
	}
	for _, c := range stepAllocCases() {
		t.Logf("%-16s %v", c.name, stepAllocs(c))
	}
}

// TestStepStorage24 checks that a repeated training step of each issue-24
// op that writes the tape's buffers allocates no tensor storage: its
// bytes per step (runtime.MemStats) stay under a quarter of x's, and so
// of the larger of x and the op's result, less than any value or
// gradient of the step (PairwiseSqDist's kernel copies its operands to
// centre them: there x is thin and the result large). Exp's step is
// shown beside them. Interpolate's backward accumulates in float64
// scratch of x's size (x is a sixteenth of the result here); GridSample
// is not among them: its backward
// accumulates in float64 scratch of the input's, the grid's and dy's
// sizes.
func TestStepStorage24(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: the race runtime allocates")
	}
	r := rand.New(rand.NewPCG(5, 6))
	const n = 256
	var coo [3][]int
	var val []float32
	for i := range n {
		for _, j := range []int{i, (i + 7) % n} {
			coo[0], coo[1], val = append(coo[0], i), append(coo[1], j), append(val, float32(i-j))
		}
	}
	adj := tensor.CSRFromCOO(n, n, coo[0], coo[1], val)
	mask := maskFor(n, 64)
	index := tensor.New(1, 64)
	for i := range index.Data() {
		index.Data()[i] = float32((i * 5) % 64)
	}
	cases := []struct {
		name  string
		shape []int
		f     func(tp *Tape, x *Var) *Var
	}{
		{"exp", []int{n, 64}, func(tp *Tape, x *Var) *Var { return tp.Exp(x) }},
		{"sort", []int{n, 64}, func(tp *Tape, x *Var) *Var { v, _ := tp.Sort(x, 1, true); return v }},
		{"topk", []int{n, 64}, func(tp *Tape, x *Var) *Var { v, _ := tp.TopK(x, 64, 1, true, true); return v }},
		{"median", []int{n, 64}, func(tp *Tape, x *Var) *Var {
			v, _ := tp.Median(x, 1, true)
			return tp.Mul(v, x)
		}},
		{"flip", []int{n, 64}, func(tp *Tape, x *Var) *Var { return tp.Flip(x, 0, 1) }},
		{"roll", []int{n, 64}, func(tp *Tape, x *Var) *Var { return tp.Roll(x, []int{3, -5}, 0, 1) }},
		{"tile", []int{n, 64}, func(tp *Tape, x *Var) *Var { return tp.Tile(x, 2, 1) }},
		{"scatter", []int{n, 64}, func(tp *Tape, x *Var) *Var {
			return tp.Scatter(x, 1, index, tp.Slice(x, 0, 0, 1, 1))
		}},
		{"pairwise", []int{n, 2}, func(tp *Tape, x *Var) *Var { return tp.PairwiseSqDist(x, tp.Scale(x, 2)) }},
		{"rbf", []int{n, 2}, func(tp *Tape, x *Var) *Var { return tp.RBFKernel(x, x, 0.5) }},
		{"spmm", []int{n, 64}, func(tp *Tape, x *Var) *Var { return tp.SpMM(adj, x) }},
		{"maskedselect", []int{n, 64}, func(tp *Tape, x *Var) *Var { return tp.MaskedSelect(x, mask) }},
		{"interpolate", []int{1, 16, 16, 16}, func(tp *Tape, x *Var) *Var {
			return tp.Interpolate(x, tensor.InterpolateParams{Size: [2]int{64, 64}, Mode: tensor.InterpBilinear})
		}},
		{"affinegrid", []int{1, 2, 3}, func(tp *Tape, x *Var) *Var { return tp.AffineGrid(x, []int{1, 1, 64, 64}, false) }},
	}
	for _, c := range cases {
		x := NewParam(tensor.RandN(r, c.shape...))
		tp := NewTape()
		var size int
		step := func() {
			tp.Reset()
			y := c.f(tp, x)
			size = max(x.Value().Len(), y.Value().Len())
			tp.Backward(tp.Sum(y))
		}
		for range 3 {
			step()
		}
		var before, after runtime.MemStats
		const steps = 10
		runtime.ReadMemStats(&before)
		for range steps {
			step()
		}
		runtime.ReadMemStats(&after)
		b := (after.TotalAlloc - before.TotalAlloc) / steps
		limit := uint64(size) // a quarter of the bytes of x or the result
		t.Logf("%-9s x %v: %d bytes, %d allocations a step (limit %d bytes)", c.name, c.shape, b, (after.Mallocs-before.Mallocs)/steps, limit)
		if b >= limit {
			t.Errorf("%s: a repeated step allocates %d bytes, a quarter of %d (x or the result) or more", c.name, b, 4*limit)
		}
	}
}

// maskFor returns a mask of the given shape with every third element set.
func maskFor(shape ...int) *tensor.Tensor {
	m := tensor.New(shape...)
	for i := range m.Data() {
		if i%3 == 0 {
			m.Data()[i] = 1
		}
	}
	return m
}
