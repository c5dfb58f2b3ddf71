package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// randAxes picks a random subset of x's axes (possibly none, meaning all),
// some given as negative numbers.
func randAxes(r *rand.Rand, n int) []int {
	var axes []int
	for i := 0; i < n; i++ {
		if r.IntN(2) == 0 {
			a := i
			if r.IntN(2) == 0 {
				a -= n
			}
			axes = append(axes, a)
		}
	}
	return axes
}

// refReduce folds x over the axes in float64: f(acc, v) from init, also
// returning Σ|v| and the count per output (for tolerances).
func refReduce(x *Tensor, axes []int, init float64, f func(acc, v float64) float64) (out map[string]float64, abs map[string]float64, count int) {
	mask := reduceAxes("ref", x, axes)
	out, abs = map[string]float64{}, map[string]float64{}
	count = 1
	for i, d := range x.Shape() {
		if mask[i] {
			count *= d
		}
	}
	indices(x.Shape(), func(idx []int) {
		key := keyOf(idx, mask)
		acc, ok := out[key]
		if !ok {
			acc = init
		}
		v := float64(x.At(idx...))
		out[key] = f(acc, v)
		abs[key] += math.Abs(v)
	})
	return out, abs, count
}

func keyOf(idx []int, mask [MaxDims]bool) string {
	k := make([]int, 0, len(idx))
	for i, v := range idx {
		if !mask[i] {
			k = append(k, v)
		}
	}
	return fmt.Sprint(k)
}

func TestReductions(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	nanMax := func(a, v float64) float64 {
		if math.IsNaN(a) || math.IsNaN(v) {
			return math.NaN()
		}
		return math.Max(a, v)
	}
	nanMin := func(a, v float64) float64 {
		if math.IsNaN(a) || math.IsNaN(v) {
			return math.NaN()
		}
		return math.Min(a, v)
	}
	for trial := 0; trial < 300; trial++ {
		shape := randShape(r, 4, 9)
		if trial%50 == 0 {
			shape = []int{3, 700} // runs longer than a scratch chunk
		}
		x := randLayout(r, layouts[r.IntN(len(layouts))], shape...)
		if trial%7 == 0 && x.Len() > 0 && x.IsContiguous() {
			x.Data()[r.IntN(x.Len())] = float32(math.NaN())
		}
		axes := randAxes(r, len(shape))
		keepdims := r.IntN(2) == 0
		what := fmt.Sprintf("shape %v (%v) axes %v keepdims %v", shape, x.Strides(), axes, keepdims)
		mask := reduceAxes("test", x, axes)
		_, outShape, _ := reducedShapes(x, mask, keepdims)
		sum, abs, count := refReduce(x, axes, 0, func(a, v float64) float64 { return a + v })
		key := func(idx []int) string {
			// idx is in the output shape: map back to the kept axes.
			if keepdims {
				return keyOf(idx, mask)
			}
			return fmt.Sprint(append([]int{}, idx...))
		}
		sumTol := func(idx []int) (float64, float64) {
			return float64(count+1) * 0x1p-24, abs[key(idx)]
		}
		checkAgainst(t, "Sum "+what, Sum(x, keepdims, axes...), outShape, func(idx []int) float64 { return sum[key(idx)] }, sumTol)
		if count > 0 {
			mx, _, _ := refReduce(x, axes, math.Inf(-1), nanMax)
			checkAgainst(t, "Max "+what, Max(x, keepdims, axes...), outShape, func(idx []int) float64 { return mx[key(idx)] }, exact)
			mn, _, _ := refReduce(x, axes, math.Inf(1), nanMin)
			checkAgainst(t, "Min "+what, Min(x, keepdims, axes...), outShape, func(idx []int) float64 { return mn[key(idx)] }, exact)
			checkAgainst(t, "Mean "+what, Mean(x, keepdims, axes...), outShape,
				func(idx []int) float64 { return sum[key(idx)] / float64(count) },
				func(idx []int) (float64, float64) {
					return float64(count+3) * 0x1p-24, abs[key(idx)] / float64(count)
				})
		}
		if count > 1 {
			mean := map[string]float64{}
			for k, v := range sum {
				mean[k] = v / float64(count)
			}
			sq := map[string]float64{}
			indices(x.Shape(), func(idx []int) {
				k := keyOf(idx, mask)
				d := float64(x.At(idx...)) - mean[k]
				sq[k] += d * d
			})
			checkAgainst(t, "Var "+what, Var(x, 1, keepdims, axes...), outShape,
				func(idx []int) float64 { return sq[key(idx)] / float64(count-1) },
				func(idx []int) (float64, float64) {
					// The mean's error enters squared deviations linearly.
					return float64(4*count+8) * 0x1p-24, (sq[key(idx)] + abs[key(idx)]*abs[key(idx)]/float64(count)) / float64(count-1)
				})
		}
	}
}

func TestReductionEdges(t *testing.T) {
	// Sum of nothing is 0; Max of nothing panics; all axes reduce to a scalar.
	if got := Sum(New(0, 3), false, 0).Data(); len(got) != 3 || got[0] != 0 {
		t.Errorf("Sum over a zero-size axis = %v, want [0 0 0]", got)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Max over a zero-size axis did not panic")
			}
		}()
		Max(New(0, 3), false, 0)
	}()
	s := Sum(Arange(0, 10, 1).Reshape(2, 5), false)
	if s.Dims() != 0 || s.Item() != 45 {
		t.Errorf("Sum of all = %v (dims %d), want scalar 45", s.Item(), s.Dims())
	}
	if got := Sum(Arange(0, 6, 1).Reshape(2, 3), true, 1).Shape(); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("keepdims shape %v, want [2 1]", got)
	}
}

func TestArgMaxLogSumExpSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 100; trial++ {
		shape := randShape(r, 3, 8)
		if len(shape) == 0 {
			continue
		}
		for i := range shape {
			shape[i] = max(shape[i], 1)
		}
		x := randLayout(r, layouts[r.IntN(len(layouts))], shape...)
		axis := r.IntN(len(shape))
		what := fmt.Sprintf("shape %v axis %d", shape, axis)
		var mask [MaxDims]bool
		mask[axis] = true
		// Reference rows along axis.
		rowOf := func(idx []int) []float64 {
			j := append([]int{}, idx...)
			row := make([]float64, shape[axis])
			for k := range row {
				j[axis] = k
				row[k] = float64(x.At(j...))
			}
			return row
		}
		am := ArgMax(x, axis, true)
		indices(am.Shape(), func(idx []int) {
			row := rowOf(idx)
			best := 0
			for k, v := range row {
				if v > row[best] {
					best = k
				}
			}
			if got := am.At(idx...); int(got) != best {
				t.Errorf("ArgMax %s at %v = %v, want %d", what, idx, got, best)
			}
		})
		lse := LogSumExp(x, true, axis)
		checkAgainst(t, "LogSumExp "+what, lse, am.Shape(), func(idx []int) float64 {
			return refLogSumExp(rowOf(idx))
		}, func(idx []int) (float64, float64) {
			return float64(len(rowOf(idx))+8) * 0x1p-24, 1 + math.Abs(float64(lse.At(idx...)))
		})
		sm := Softmax(x, axis)
		lsm := LogSoftmax(x, axis)
		dst := New(shape...)
		SoftmaxInto(dst, x, axis)
		checkAgainst(t, "Softmax "+what, sm, shape, func(idx []int) float64 {
			return math.Exp(float64(x.At(idx...)) - refLogSumExp(rowOf(idx)))
		}, func(idx []int) (float64, float64) { return float64(len(rowOf(idx))+8) * 0x1p-23, 1 })
		assertEqual(t, "SoftmaxInto "+what, dst, sm)
		checkAgainst(t, "LogSoftmax "+what, lsm, shape, func(idx []int) float64 {
			return float64(x.At(idx...)) - refLogSumExp(rowOf(idx))
		}, func(idx []int) (float64, float64) {
			return float64(len(rowOf(idx))+8) * 0x1p-23, 1 + math.Abs(float64(lsm.At(idx...)))
		})
	}
}

// refLogSumExp is log Σ e^v over row in float64, the maximum subtracted.
func refLogSumExp(row []float64) float64 {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, v)
	}
	s := 0.0
	for _, v := range row {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

func TestSoftmaxIntoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	x, dy, dst := RandN(r, 256, 512), RandN(r, 256, 512), New(256, 512)
	for name, f := range map[string]func(){
		"SoftmaxInto":            func() { SoftmaxInto(dst, x, -1) },
		"SoftmaxBackwardInto":    func() { SoftmaxBackwardInto(dst, x, dy, -1) },
		"LogSoftmaxBackwardInto": func() { LogSoftmaxBackwardInto(dst, x, dy, 1) },
	} {
		f()
		noAllocs(t, name, f)
	}
}

// TestEmptyReductions reduces over zero elements: sums are 0, means and
// variances NaN (NumPy, PyTorch), LogSumExp -Inf (the log of an empty sum,
// as simd.LogSumExp; it panicked, naming Max), and Max, Min, ArgMax and
// ArgMin, which have no identity, panic naming themselves (PyTorch
// raises). Reductions whose kept axes are empty give empty results. The
// last cases are the index reductions' other refusal, axes too long for
// exact float32 indices.
func TestEmptyReductions(t *testing.T) {
	inf, nan := math.Inf(-1), math.NaN()
	for _, c := range []struct {
		name  string
		f     func() *Tensor
		shape []int
		want  float64
	}{
		{"Sum all of [0]", func() *Tensor { return Sum(New(0), false) }, []int{}, 0},
		{"Sum axis 1 of [3 0]", func() *Tensor { return Sum(New(3, 0), false, 1) }, []int{3}, 0},
		{"Mean all of [0]", func() *Tensor { return Mean(New(0), false) }, []int{}, nan},
		{"Mean axis 1 of [3 0]", func() *Tensor { return Mean(New(3, 0), true, 1) }, []int{3, 1}, nan},
		{"Var axis 0 of [0 2]", func() *Tensor { return Var(New(0, 2), 0, false, 0) }, []int{2}, nan},
		{"Var ddof 1 of one", func() *Tensor { return Var(New(1), 1, false) }, []int{}, nan},
		{"Std axis 0 of [0 2]", func() *Tensor { return Std(New(0, 2), 0, false, 0) }, []int{2}, nan},
		{"LogSumExp all of [0]", func() *Tensor { return LogSumExp(New(0), false) }, []int{}, inf},
		{"LogSumExp axis 1 of [3 0]", func() *Tensor { return LogSumExp(New(3, 0), false, 1) }, []int{3}, inf},
		{"LogSumExp axis 1 of [3 0] keepdims", func() *Tensor { return LogSumExp(New(3, 0), true, 1) }, []int{3, 1}, inf},
		{"LogSumExp axes 0, 2 of [2 0 3]", func() *Tensor { return LogSumExp(New(2, 0, 3), false, 0, 2) }, []int{0}, 0},
		{"LogSumExp axis 1 of [0 3]", func() *Tensor { return LogSumExp(New(0, 3), false, 1) }, []int{0}, 0},
		{"Max axis 1 of [0 3]", func() *Tensor { return Max(New(0, 3), false, 1) }, []int{0}, 0},
		{"ArgMax axis 1 of [0 3]", func() *Tensor { return ArgMax(New(0, 3), 1, false) }, []int{0}, 0},
	} {
		var got *Tensor
		if msg := panicOf(func() { got = c.f() }); msg != "" {
			t.Errorf("%s: panic %q", c.name, msg)
			continue
		}
		checkAgainst(t, c.name, got, c.shape, func([]int) float64 { return c.want }, exact)
	}
	for _, c := range []struct {
		want string
		f    func()
	}{
		{"tensor: Max: zero-size reduction over axes [0] of shape [0 3] (no identity)", func() { Max(New(0, 3), false, 0) }},
		{"tensor: Min: zero-size reduction over axes [] of shape [0] (no identity)", func() { Min(New(0), false) }},
		{"tensor: ArgMax: zero-size axis 1 of shape [2 0]", func() { ArgMax(New(2, 0), 1, false) }},
		{"tensor: ArgMin: zero-size axis 0 of shape [0]", func() { ArgMin(New(0), 0, true) }},
		// Indices past 2²⁴ would round in float32 (the maximum's index
		// came back as a neighbour's): refused, as MaxPool2D's.
		{"tensor: ArgMax: axis 1 of shape [2 16777218]: indices past 2²⁴ would not be exact in float32", func() { ArgMax(huge(2, 1<<24+2), 1, false) }},
		{"tensor: ArgMin: axis 0 of shape [16777217]: indices past 2²⁴ would not be exact in float32", func() { ArgMin(huge(1<<24+1), 0, false) }},
	} {
		if msg := panicOf(c.f); msg != c.want {
			t.Errorf("panic %q, want %q", msg, c.want)
		}
	}
}

// TestSoftmaxBackward checks SoftmaxBackward and LogSoftmaxBackward along
// any axis against the float64 formula on the y given and against central
// differences of the float64 softmax of x, over random shapes (zero-size
// included) and layouts (dy also broadcast), and their Into forms into a
// strided dx and in place over dy and over y.
func TestSoftmaxBackward(t *testing.T) {
	r := rand.New(rand.NewPCG(67, 68))
	kinds := []string{"contiguous", "transposed", "strided"}
	for trial := range 120 {
		shape := randShape(r, 3, 7)
		if len(shape) == 0 {
			shape = []int{5}
		}
		if trial == 0 {
			shape = []int{3, 700} // rows of several pieces of chunk elements
		}
		axis := r.IntN(len(shape))
		log := trial%2 == 1
		x := Scale(randLayout(r, layouts[r.IntN(len(layouts))], shape...), 3)
		fwd, back, backInto := Softmax, SoftmaxBackward, SoftmaxBackwardInto
		if log {
			fwd, back, backInto = LogSoftmax, LogSoftmaxBackward, LogSoftmaxBackwardInto
		}
		y := filled(r, kinds[r.IntN(3)], fwd(x, axis))
		dy := randLayout(r, layouts[r.IntN(len(layouts))], shape...)
		what := fmt.Sprintf("log=%v %v axis %d", log, shape, axis)
		neg := axis - len(shape) // a negative axis, half the time
		if trial%4 < 2 {
			neg = axis
		}
		dx := back(y, dy, neg)
		if !slices.Equal(dx.Shape(), shape) {
			t.Fatalf("%s: shape %v", what, dx.Shape())
		}
		row := func(t *Tensor, idx []int) []float64 {
			j := slices.Clone(idx)
			out := make([]float64, shape[axis])
			for k := range out {
				j[axis] = k
				out[k] = float64(t.At(j...))
			}
			return out
		}
		indices(shape, func(idx []int) {
			ys, dys, xs := row(y, idx), row(dy, idx), row(x, idx)
			n, k := float64(len(ys)), idx[axis]
			var s, sAbs float64
			for i := range ys {
				if log {
					s += dys[i]
					sAbs += math.Abs(dys[i])
				} else {
					s += dys[i] * ys[i]
					sAbs += math.Abs(dys[i] * ys[i])
				}
			}
			var want, tol float64
			if log {
				e := math.Exp(ys[k])
				want = dys[k] - e*s
				tol = (n + 4) * 0x1p-24 * (e*sAbs + math.Abs(dys[k]))
			} else {
				want = ys[k] * (dys[k] - s)
				tol = (n+4)*0x1p-24*ys[k]*(sAbs+math.Abs(dys[k])) + 0x1p-24*math.Abs(want)
			}
			got := float64(dx.At(idx...))
			if math.Abs(got-want) > tol {
				t.Errorf("%s at %v: dx = %v, want %v (tolerance %.3g)", what, idx, got, want, tol)
			}
			// Central differences of L = Σ dy·f(x) along the row.
			f := func(xs []float64) float64 {
				m, z := math.Inf(-1), 0.0
				for _, v := range xs {
					m = math.Max(m, v)
				}
				for _, v := range xs {
					z += math.Exp(v - m)
				}
				l := 0.0
				for i, v := range xs {
					if log {
						l += dys[i] * (v - m - math.Log(z))
					} else {
						l += dys[i] * math.Exp(v-m) / z
					}
				}
				return l
			}
			h := 1e-6
			old := xs[k]
			xs[k] = old + h
			lp := f(xs)
			xs[k] = old - h
			lm := f(xs)
			fd := (lp - lm) / (2 * h)
			if math.Abs(got-fd) > 1e-5*(1+sAbs+math.Abs(dys[k])) {
				t.Errorf("%s at %v: dx = %v, central differences give %v", what, idx, got, fd)
			}
		})
		sdx := randLayout(r, "strided", shape...)
		if got := backInto(sdx, y, dy, axis); got != sdx {
			t.Fatalf("%s: Into did not return dx", what)
		}
		assertEqual(t, what+" Into strided", sdx.Contiguous(), dx)
		dyc := dy.Clone()
		backInto(dyc, y, dyc, axis)
		assertEqual(t, what+" Into over dy", dyc, dx)
		yc := y.Clone()
		backInto(yc, yc, dy, axis)
		assertEqual(t, what+" Into over y", yc, dx)
	}
	expectPanic(t, "tensor: SoftmaxBackward: shapes [2 3] and [3 2] differ", func() { SoftmaxBackward(New(2, 3), New(3, 2), 0) })
	expectPanic(t, "tensor: LogSoftmaxBackwardInto: shapes [2 2] and [2 3] and [2 3] differ", func() { LogSoftmaxBackwardInto(New(2, 2), New(2, 3), New(2, 3), 0) })
	expectPanic(t, "tensor: SoftmaxBackward: nil tensor dy", func() { SoftmaxBackward(New(2), nil, 0) })
	expectPanic(t, "tensor: LogSoftmaxBackwardInto: dst of shape [2 3] has a broadcast (stride 0) dimension 0", func() {
		LogSoftmaxBackwardInto(New(1, 3).BroadcastTo(2, 3), New(2, 3), New(2, 3), 1)
	})
}
