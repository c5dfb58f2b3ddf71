package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// axisCases are the shapes and axes of the scan and sort tests.
var axisCases = []struct {
	shape []int
	axis  int
}{
	{[]int{0}, 0},
	{[]int{1}, 0},
	{[]int{9}, -1},
	{[]int{3, 0}, 0},
	{[]int{0, 3}, 1},
	{[]int{4, 5}, 0},
	{[]int{4, 5}, 1},
	{[]int{2, 3, 6}, 1},
	{[]int{2, 3, 6}, -1},
	{[]int{3, 40, 2}, 1},
}

// withTies rounds x's storage to multiples of 1/2 in [-2, 2] and puts NaN,
// ±Inf and -0 in, so that the sorts meet ties and special values.
func withTies(r *rand.Rand, x *Tensor) *Tensor {
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))}
	for i := range x.data {
		x.data[i] = float32(math.Round(float64(x.data[i])*2) / 2)
		if r.IntN(8) == 0 {
			x.data[i] = special[r.IntN(len(special))]
		}
	}
	return x
}

// lineAt returns x's elements along axis through idx.
func lineAt(x *Tensor, idx []int, axis int) []float64 {
	line := make([]float64, x.shape[axis])
	for i := range line {
		line[i] = float64(x.At(with(idx, axis, i)...))
	}
	return line
}

// refOrder is a stable insertion sort of line's positions, NaN above
// +Inf, -0 equal to +0: the reference of the sorts.
func refOrder(line []float64, descending bool) []int {
	less := func(a, b float64) bool { // a strictly before b ascending
		if math.IsNaN(a) {
			return false
		}
		return math.IsNaN(b) || a < b
	}
	p := make([]int, 0, len(line))
	for i := range line {
		j := len(p)
		for j > 0 {
			a, b := line[i], line[p[j-1]]
			if descending {
				a, b = b, a
			}
			if !less(a, b) {
				break
			}
			j--
		}
		p = slices.Insert(p, j, i)
	}
	return p
}

func TestScans(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	for _, c := range axisCases {
		for _, kind := range layouts {
			x := randLayout(r, kind, c.shape...)
			a := x.axis("test", c.axis)
			for _, prod := range []bool{false, true} {
				name, f, into := "CumSum", CumSum, CumSumInto
				if prod {
					name, f, into = "CumProd", CumProd, CumProdInto
				}
				ref := func(idx []int) (float64, float64) {
					line := lineAt(x, idx, a)
					acc, mag := 0.0, 0.0
					if prod {
						acc = 1
					}
					for _, v := range line[:idx[a]+1] {
						if prod {
							acc *= v
						} else {
							acc += v
						}
						mag += math.Abs(v)
					}
					if prod {
						mag = math.Abs(acc)
					}
					return acc, mag
				}
				want := func(idx []int) float64 { w, _ := ref(idx); return w }
				tol := func(idx []int) (float64, float64) { _, m := ref(idx); return 2e-7, m }
				what := fmt.Sprintf("%s(%v %s, axis %d)", name, c.shape, kind, c.axis)
				checkAgainst(t, what, f(x, c.axis), c.shape, want, tol)
				for _, dk := range writable {
					dst := randLayout(r, dk, c.shape...)
					if got := into(dst, x, c.axis); got != dst {
						t.Fatalf("%sInto did not return dst", name)
					}
					checkAgainst(t, what+" Into "+dk, dst, c.shape, want, tol)
				}
			}
		}
	}
}

// TestCumSumLong checks that a long axis keeps its prefix sums accurate:
// 0.1 added 2²⁰ times drifts by thousands of ulps in a float32 sum.
func TestCumSumLong(t *testing.T) {
	const n = 1 << 20
	x := Full(0.1, n)
	y := CumSum(x, 0)
	for _, i := range []int{0, 1000, n/2 - 1, n - 1} {
		want := float64(float32(0.1)) * float64(i+1)
		if got := y.At(i); !closeTo(got, want, 0x1p-24, want) {
			t.Errorf("CumSum of 0.1s at %d = %v, want %v", i, got, want)
		}
	}
}

func TestSorts(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 3))
	for _, c := range axisCases {
		for _, kind := range layouts {
			x := withTies(r, randLayout(r, kind, c.shape...))
			a := x.axis("test", c.axis)
			n := c.shape[a]
			for _, desc := range []bool{false, true} {
				what := fmt.Sprintf("(%v %s, axis %d, descending %v)", c.shape, kind, c.axis, desc)
				vals, idx := Sort(x, c.axis, desc)
				pos := func(i []int) float64 { return float64(refOrder(lineAt(x, i, a), desc)[i[a]]) }
				checkAgainst(t, "Sort indices"+what, idx, c.shape, pos, exact)
				checkAgainst(t, "Sort values"+what, vals, c.shape, func(i []int) float64 {
					return lineAt(x, i, a)[int(pos(i))]
				}, exact)
				checkAgainst(t, "ArgSort"+what, ArgSort(x, c.axis, desc), c.shape, pos, exact)
				for _, k := range []int{0, 1, n / 2, n} {
					if k > n {
						continue
					}
					ks := slices.Clone(c.shape)
					ks[a] = k
					for _, sorted := range []bool{true, false} {
						tv, ti := TopK(x, k, c.axis, desc, sorted)
						w := fmt.Sprintf("TopK(k=%d, largest %v)%s", k, desc, what)
						checkAgainst(t, w+" indices", ti, ks, pos, exact)
						checkAgainst(t, w+" values", tv, ks, func(i []int) float64 { return lineAt(x, i, a)[int(pos(i))] }, exact)
					}
				}
			}
			if n == 0 {
				expectPanic(t, fmt.Sprintf("tensor: Median: zero-size axis %d of shape %v (no identity)", a, c.shape), func() { Median(x, c.axis, false) })
				continue
			}
			for _, keepdims := range []bool{false, true} {
				mv, mi := Median(x, c.axis, keepdims)
				ks := slices.Clone(c.shape)
				ks[a] = 1
				med := func(i []int) int {
					line := lineAt(x, i, a)
					if j := slices.IndexFunc(line, math.IsNaN); j >= 0 {
						return j
					}
					return refOrder(line, false)[(n-1)/2]
				}
				what := fmt.Sprintf("Median(%v %s, axis %d, keepdims %v)", c.shape, kind, c.axis, keepdims)
				checkAgainst(t, what+" indices", mi.Reshape(ks...), ks, func(i []int) float64 { return float64(med(i)) }, exact)
				checkAgainst(t, what+" values", mv.Reshape(ks...), ks, func(i []int) float64 { return lineAt(x, i, a)[med(i)] }, exact)
				if keepdims != (mv.Dims() == len(c.shape)) {
					t.Errorf("%s: shape %v", what, mv.Shape())
				}
			}
		}
	}
}

// TestSortTorch checks cases against the outputs of PyTorch 1.13
// (torch.sort(..., stable=True), torch.median, torch.topk) where its
// result is specified.
func TestSortTorch(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	v, i := Sort(FromSlice([]float32{1, nan, inf, nan, 1}, 5), 0, true)
	wantV, wantI := []float32{nan, nan, inf, 1, 1}, []float32{1, 3, 2, 0, 4}
	if !slices.EqualFunc(v.Data(), wantV, func(a, b float32) bool { return a == b || a != a && b != b }) || !slices.Equal(i.Data(), wantI) {
		t.Errorf("Sort descending = %v %v, want %v %v", v.Data(), i.Data(), wantV, wantI)
	}
	mv, mi := Median(FromSlice([]float32{1, nan, 3, nan}, 4), 0, false)
	if mv.Item() == mv.Item() || mi.Item() != 1 {
		t.Errorf("Median with NaN = %v at %v, want NaN at 1", mv.Item(), mi.Item())
	}
	mv, mi = Median(FromSlice([]float32{4, 1, 3, 2}, 4), 0, false)
	if mv.Item() != 2 || mi.Item() != 3 {
		t.Errorf("Median of an even count = %v at %v, want the lower middle 2 at 3", mv.Item(), mi.Item())
	}
	tv, ti := TopK(FromSlice([]float32{1, 3, 2, 5}, 4), 2, 0, false, true)
	if !slices.Equal(tv.Data(), []float32{1, 2}) || !slices.Equal(ti.Data(), []float32{0, 2}) {
		t.Errorf("TopK smallest = %v %v", tv.Data(), ti.Data())
	}
}

func TestSortPanics(t *testing.T) {
	expectPanic(t, "tensor: TopK: k = 4 out of range for axis 1 of shape [2 3]", func() { TopK(New(2, 3), 4, 1, true, true) })
	expectPanic(t, "tensor: Sort: axis 1 out of range for shape []", func() { Sort(Scalar(1), 1, false) })
	for _, axis := range []int{0, -1} { // 0-d: a line of one, as PyTorch
		v, i := Sort(Scalar(3), axis, true)
		mv, mi := Median(Scalar(3), axis, true)
		tv, ti := TopK(Scalar(3), 1, axis, true, true)
		for _, r := range []*Tensor{v, i, mv, mi, tv, ti, CumSum(Scalar(3), axis), CumProd(Scalar(3), axis), ArgSort(Scalar(3), axis, false), Flip(Scalar(3), axis)} {
			if r.Dims() != 0 {
				t.Errorf("0-d sort or scan: shape %v", r.Shape())
			}
		}
		if v.Item() != 3 || i.Item() != 0 || mv.Item() != 3 || tv.Item() != 3 || ti.Item() != 0 || mi.Item() != 0 {
			t.Errorf("0-d Sort %v %v, Median %v %v, TopK %v %v", v.Item(), i.Item(), mv.Item(), mi.Item(), tv.Item(), ti.Item())
		}
	}
	expectPanic(t, "tensor: CumSumInto: dst shape [3 2], want [2 3]", func() { CumSumInto(New(3, 2), New(2, 3), 0) })
}

func BenchmarkSort(b *testing.B) {
	for _, n := range []int{64, 4096} {
		x := RandN(rand.New(rand.NewPCG(1, 2)), 1<<20/n, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(4 * x.Len()))
			for b.Loop() {
				Sort(x, -1, false)
			}
		})
	}
}

func BenchmarkCumSum(b *testing.B) {
	x := RandN(rand.New(rand.NewPCG(1, 2)), 1024, 1024)
	for _, axis := range []int{0, 1} {
		b.Run(fmt.Sprint("axis", axis), func(b *testing.B) {
			b.SetBytes(int64(4 * x.Len()))
			for b.Loop() {
				CumSum(x, axis)
			}
		})
	}
}

// TestRowsSplit checks that rows split over the workers (past
// par.SplitFrom elements of work) give what each row gives alone.
func TestRowsSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 8))
	x := withTies(r, RandN(r, 700, 128))
	v, i := Sort(x, 1, true)
	n := Norm(x, 3, false, 1)
	c := CumProd(x, 0)
	for _, row := range []int{0, 350, 699} {
		rv, ri := Sort(x.Index(0, row), 0, true)
		same := func(a, b []float32) bool {
			return slices.EqualFunc(a, b, func(p, q float32) bool { return p == q || p != p && q != q })
		}
		if !same(v.Index(0, row).Data(), rv.Data()) || !slices.Equal(i.Index(0, row).Data(), ri.Data()) {
			t.Errorf("Sort: row %d differs from the row sorted alone", row)
		}
		if !same([]float32{n.At(row)}, Norm(x.Index(0, row), 3, false).Data()) {
			t.Errorf("Norm: row %d differs from the row's alone", row)
		}
	}
	if !slices.EqualFunc(c.Index(1, 5).Data(), CumProd(x.Index(1, 5), 0).Data(), func(p, q float32) bool { return p == q || p != p && q != q }) {
		t.Error("CumProd: column 5 differs from the column's alone")
	}
}
