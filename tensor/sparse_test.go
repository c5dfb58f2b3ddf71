package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// randCSR returns a random rows×cols sparse matrix of about density, with
// repeated entries (summed) and a few empty rows, and its dense float64 form.
func randCSR(r *rand.Rand, rows, cols int, density float64) (*CSR, []float64) {
	var ri, ci []int
	var v []float32
	dense := make([]float64, rows*cols)
	for i := range rows {
		if i%5 == 3 {
			continue // an empty row
		}
		for j := range cols {
			for r.Float64() < density {
				x := float32(r.NormFloat64())
				ri, ci, v = append(ri, i), append(ci, j), append(v, x)
				dense[i*cols+j] += float64(x)
				density /= 2 // a repeat now and then
			}
		}
	}
	// shuffle the entries: CSRFromCOO sorts them
	r.Shuffle(len(ri), func(p, q int) { ri[p], ri[q], ci[p], ci[q], v[p], v[q] = ri[q], ri[p], ci[q], ci[p], v[q], v[p] })
	return CSRFromCOO(rows, cols, ri, ci, v), dense
}

// dense64 returns a's dense float64 form.
func dense64(a *CSR) []float64 {
	d := make([]float64, a.Rows*a.Cols)
	for i := range a.Rows {
		for k := a.RowPtr[i]; k < a.RowPtr[i+1]; k++ {
			d[i*a.Cols+a.ColIdx[k]] += float64(a.Val[k])
		}
	}
	return d
}

// TestCSR checks CSRFromCOO (sorted columns, duplicates summed), Check,
// T and GCNNormalize against dense float64 forms.
func TestCSR(t *testing.T) {
	r := rand.New(rand.NewPCG(101, 102))
	for _, sz := range [][2]int{{0, 0}, {1, 1}, {7, 5}, {30, 30}} {
		a, want := randCSR(r, sz[0], sz[1], 0.3)
		if err := a.Check(); err != nil {
			t.Fatalf("%v: %v", sz, err)
		}
		for i := range a.Rows {
			if cs := a.ColIdx[a.RowPtr[i]:a.RowPtr[i+1]]; !slices.IsSorted(cs) || len(slices.Compact(slices.Clone(cs))) != len(cs) {
				t.Fatalf("%v row %d: columns %v not sorted and unique", sz, i, cs)
			}
		}
		for k, v := range dense64(a) {
			if math.Abs(v-want[k]) > 1e-6*(1+math.Abs(want[k])) {
				t.Fatalf("%v: entry %d: %v, want %v", sz, k, v, want[k])
			}
		}
		at := a.T()
		if err := at.Check(); err != nil {
			t.Fatal(err)
		}
		d, dt := dense64(a), dense64(at)
		for i := range a.Rows {
			for j := range a.Cols {
				if d[i*a.Cols+j] != dt[j*a.Rows+i] {
					t.Fatalf("%v: T()[%d, %d] = %v, want %v", sz, j, i, dt[j*a.Rows+i], d[i*a.Cols+j])
				}
			}
		}
		if a.Rows != a.Cols {
			continue
		}
		// Â = D^-½ (A + I) D^-½ with nonnegative weights.
		for k := range a.Val {
			a.Val[k] = float32(math.Abs(float64(a.Val[k])))
		}
		n := a.Rows
		ai := dense64(a)
		for i := range n {
			ai[i*n+i]++
		}
		deg := make([]float64, n)
		for i := range n {
			for j := range n {
				deg[i] += ai[i*n+j]
			}
		}
		got := dense64(GCNNormalize(a))
		for i := range n {
			for j := range n {
				w := ai[i*n+j] / math.Sqrt(deg[i]*deg[j])
				if math.Abs(got[i*n+j]-w) > 1e-6*(1+w) {
					t.Fatalf("%v: Â[%d, %d] = %v, want %v", sz, i, j, got[i*n+j], w)
				}
			}
		}
	}
	for _, c := range []struct {
		a    CSR
		want string
	}{
		{CSR{Rows: 2, Cols: 2, RowPtr: []int{0, 1}}, "2 row pointers for 2 rows (want rows+1)"},
		{CSR{Rows: 1, Cols: 2, RowPtr: []int{0, 1}, ColIdx: []int{2}, Val: []float32{1}}, "column index 2 at 0 out of range [0, 2)"},
		{CSR{Rows: 2, Cols: 2, RowPtr: []int{0, 2, 1}, ColIdx: []int{0}, Val: []float32{1}}, "row pointer 2 (1) below row pointer 1 (2)"},
		{CSR{Rows: 1, Cols: 2, RowPtr: []int{0, 2}, ColIdx: []int{0}, Val: []float32{1}}, "row pointers from 0 to 2 for 1 values (want 0 to 1)"},
		{CSR{Rows: 1, Cols: 1, RowPtr: []int{0, 1}, ColIdx: []int{0, 0}, Val: []float32{1}}, "2 column indices for 1 values"},
	} {
		err := c.a.Check()
		if err == nil || err.Error() != c.want {
			t.Errorf("Check: %v, want %q", err, c.want)
		}
	}
	expectPanic(t, "tensor: NewCSR: size -1×2", func() { NewCSR(-1, 2, nil, nil, nil) })
	expectPanic(t, "tensor: CSRFromCOO: entry 0 at (0, 3) outside 2×3", func() { CSRFromCOO(2, 3, []int{0}, []int{3}, []float32{1}) })
	expectPanic(t, "tensor: GCNNormalize: 2×3 adjacency (want square)", func() { GCNNormalize(CSRFromCOO(2, 3, nil, nil, nil)) })
}

// TestSpMM checks SpMM at every level against the dense float64 product:
// empty rows, zero sizes, a strided b, and a product large enough to run
// on several threads (whose result must equal the one-thread bits: each
// row is computed alone).
func TestSpMM(t *testing.T) {
	atEveryLevel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(103, 104))
		for _, c := range []struct{ rows, cols, k int }{{0, 3, 4}, {3, 0, 4}, {4, 3, 0}, {9, 7, 5}, {33, 20, 17}, {200, 150, 48}} {
			a, ad := randCSR(r, c.rows, c.cols, 0.2)
			bs := []*Tensor{RandN(r, c.cols, c.k), RandN(r, c.k, c.cols).T()}
			for _, b := range bs {
				got := SpMM(a, b)
				prev := runtime.GOMAXPROCS(1)
				one := SpMM(a, b)
				runtime.GOMAXPROCS(prev)
				if !slices.Equal(got.Data(), one.Data()) {
					t.Fatalf("%v: %d threads and one differ", c, prev)
				}
				if !slices.Equal(got.Shape(), []int{c.rows, c.k}) {
					t.Fatalf("%v: shape %v", c, got.Shape())
				}
				for i := range c.rows {
					for j := range c.k {
						var w, s float64
						for p := range c.cols {
							w += ad[i*c.cols+p] * float64(b.At(p, j))
							s += math.Abs(ad[i*c.cols+p] * float64(b.At(p, j)))
						}
						if g := float64(got.At(i, j)); math.Abs(g-w) > 1e-6*(1+s) {
							t.Fatalf("%v: [%d, %d] = %v, want %v", c, i, j, g, w)
						}
					}
				}
			}
		}
	})
	r := rand.New(rand.NewPCG(105, 106))
	a, _ := randCSR(r, 3, 4, 0.5)
	expectPanic(t, "tensor: SpMMInto: dst of shape [3 2], a 3×4, b [3 2] (want [3 k] = [3 4]·[4 k])", func() { SpMM(a, New(3, 2)) })
	expectPanic(t, "tensor: SpMM: a 3×4 and b of shape [4] (want [4 k])", func() { SpMM(a, New(4)) })
}

// BenchmarkSpMM multiplies a random graph's normalized adjacency (about
// 16 neighbours a node) by [nodes, 64] features.
func BenchmarkSpMM(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			var ri, ci []int
			for i := range n {
				for range 8 {
					j := r.IntN(n)
					ri, ci = append(ri, i, j), append(ci, j, i)
				}
			}
			a := GCNNormalize(CSRFromCOO(n, n, ri, ci, slices.Repeat([]float32{1}, len(ri))))
			x, dst := RandN(r, n, 64), New(n, 64)
			b.SetBytes(int64(4 * (a.NNZ()*64 + n*64)))
			b.ResetTimer()
			for range b.N {
				SpMMInto(dst, a, x)
			}
		})
	}
}
