package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// foldCases are the shapes and axes the fold, scan and sort tests run.
var foldCases = []struct {
	shape []int
	axes  []int
}{
	{[]int{}, nil},
	{[]int{0}, nil},
	{[]int{7}, []int{0}},
	{[]int{1}, []int{-1}},
	{[]int{3, 0, 2}, []int{1}},
	{[]int{3, 0, 2}, []int{0, 2}},
	{[]int{4, 5}, nil},
	{[]int{4, 5}, []int{0}},
	{[]int{4, 5}, []int{-1}},
	{[]int{2, 3, 4}, []int{0, 2}},
	{[]int{2, 3, 4}, []int{1}},
	{[]int{3, 1, 33}, []int{2, 0}},
}

// withZeros sets every third element of x's storage to 0 (x a view of
// randLayout's), so that Prod, Any and All meet zeros.
func withZeros(x *Tensor) *Tensor {
	for i := range x.data {
		if i%3 == 0 {
			x.data[i] = 0
		}
	}
	return x
}

// groups returns, for each output position (row-major, keepdims shape) of
// reducing x over axes, the float64 elements folded into it, in x's
// row-major order.
func groups(x *Tensor, axes []int) (keep []int, rows [][]float64) {
	mask := reduceAxes("test", x, axes)
	keep, _, _ = reducedShapes(x, mask, true)
	out := 1
	for _, d := range keep {
		out *= d
	}
	rows = make([][]float64, out)
	st := contiguousStrides(keep)
	indices(x.shape, func(idx []int) {
		o := 0
		for i, v := range idx {
			if !mask[i] {
				o += v * st[i]
			}
		}
		rows[o] = append(rows[o], float64(x.At(idx...)))
	})
	return keep, rows
}

func refVectorNorm(row []float64, p float64) float64 {
	if p == 0 {
		n := 0.0
		for _, v := range row {
			if v != 0 {
				n++
			}
		}
		return n
	}
	for _, v := range row {
		if math.IsNaN(v) {
			return math.NaN()
		}
	}
	switch {
	case math.IsInf(p, 1):
		m := 0.0
		for _, v := range row {
			m = max(m, math.Abs(v))
		}
		return m
	case math.IsInf(p, -1):
		m := math.Inf(1)
		for _, v := range row {
			m = min(m, math.Abs(v))
		}
		return m
	}
	s := 0.0
	for _, v := range row {
		s += math.Pow(math.Abs(v), p)
	}
	return math.Pow(s, 1/p)
}

func TestFoldAxes(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	type fold struct {
		name  string
		f     func(x *Tensor, keepdims bool, axes ...int) *Tensor
		ref   func(row []float64) float64
		empty bool // defined over no element
	}
	folds := []fold{
		{"Prod", Prod, func(row []float64) float64 {
			p := 1.0
			for _, v := range row {
				p *= v
			}
			return p
		}, true},
		{"Any", Any, func(row []float64) float64 {
			for _, v := range row {
				if v != 0 {
					return 1
				}
			}
			return 0
		}, true},
		{"All", All, func(row []float64) float64 {
			for _, v := range row {
				if v == 0 {
					return 0
				}
			}
			return 1
		}, true},
	}
	for _, p := range []float64{1, 2, 3, 0.5, 0, -1.5, math.Inf(1), math.Inf(-1)} {
		folds = append(folds, fold{fmt.Sprintf("Norm(p=%v)", p),
			func(x *Tensor, keepdims bool, axes ...int) *Tensor { return Norm(x, p, keepdims, axes...) },
			func(row []float64) float64 { return refVectorNorm(row, p) }, p >= 0 && !math.IsInf(p, 1)})
	}
	for _, c := range foldCases {
		for _, kind := range layouts {
			for _, keepdims := range []bool{false, true} {
				for _, zeros := range []bool{false, true} {
					x := randLayout(r, kind, c.shape...)
					if zeros {
						withZeros(x)
					}
					keep, rows := groups(x, c.axes)
					_, out, count := reducedShapes(x, reduceAxes("test", x, c.axes), keepdims)
					for _, fd := range folds {
						what := fmt.Sprintf("%s(%v %s zeros=%v, axes %v, keepdims %v)", fd.name, c.shape, kind, zeros, c.axes, keepdims)
						if count == 0 && !fd.empty {
							func() {
								defer func() {
									if recover() == nil {
										t.Errorf("%s: no panic for a zero-size reduction", what)
									}
								}()
								fd.f(x, keepdims, c.axes...)
							}()
							continue
						}
						got := fd.f(x, keepdims, c.axes...)
						if !slices.Equal(got.Shape(), out) {
							t.Fatalf("%s: shape %v, want %v", what, got.Shape(), out)
						}
						g := got.Reshape(keep...)
						st := contiguousStrides(keep)
						checkAgainst(t, what, g, keep, func(idx []int) float64 {
							o := 0
							for i, v := range idx {
								o += v * st[i]
							}
							return fd.ref(rows[o])
						}, func(idx []int) (float64, float64) {
							o := 0
							for i, v := range idx {
								o += v * st[i]
							}
							return 1e-6, math.Abs(fd.ref(rows[o]))
						})
					}
				}
			}
		}
	}
}

func TestNormRange(t *testing.T) {
	for _, c := range []struct {
		x    []float32
		p    float64
		want float64
	}{
		{[]float32{3e30, 4e30}, 2, 5e30},
		{[]float32{3e-30, 4e-30}, 2, 5e-30},
		{[]float32{3e-44, 4e-44}, 2, 5e-44}, // subnormal squares
		{[]float32{1e30, 1e30}, 3, 1e30 * math.Cbrt(2)},
		{[]float32{1e-30, -1e-30}, 4, 1e-30 * math.Pow(2, 0.25)},
		{[]float32{3e38, 3e38}, 1, math.Inf(1)}, // 6e38 is past float32
		{[]float32{0, 2}, -1, 0},
		{[]float32{float32(math.NaN()), 2}, 2, math.NaN()},
		{[]float32{float32(math.NaN()), 0}, 0, 1},
	} {
		got := Norm(FromSlice(c.x, len(c.x)), c.p, false).Item()
		if !closeTo(got, float64(float32(c.want)), 2e-7, math.Abs(c.want)) {
			t.Errorf("Norm(%v, p=%v) = %v, want %v", c.x, c.p, got, c.want)
		}
	}
}

func TestFoldAxesPanics(t *testing.T) {
	expectPanic(t, "tensor: Norm: zero-size reduction over axes [] of shape [0] (no identity)", func() { Norm(New(0), math.Inf(1), false) })
	expectPanic(t, "tensor: Prod: axis out of range for shape [2 3]", func() { Prod(New(2, 3), false, 2) })
	expectPanic(t, "tensor: All: repeated axis in [0 -2] for shape [2 3]", func() { All(New(2, 3), false, 0, -2) })
	expectPanic(t, "tensor: Norm: order p = NaN (x of shape [2])", func() { Norm(New(2), math.NaN(), false) })
}
