package nn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/lanesgo/lanes/tensor"
)

// indexRows returns x of shape [n, xCols] and y of shape [n, 2, 3] whose
// row i holds i in every element (x's element j holds i + j/1000, so that
// the copying of whole rows is checked too).
func indexRows(n, xCols int) (x, y *tensor.Tensor) {
	xd := make([]float32, n*xCols)
	for i := range n {
		for j := range xCols {
			xd[i*xCols+j] = float32(i) + float32(j)/1000
		}
	}
	yd := make([]float32, n*6)
	for i := range yd {
		yd[i] = float32(i / 6)
	}
	return tensor.FromSlice(xd, n, xCols), tensor.FromSlice(yd, n, 2, 3)
}

// epoch runs b to the end of its epoch and returns the row indices in the
// order visited and the size of each batch, checking that every batch's x
// and y rows match.
func epoch(t *testing.T, b *Batches) (rows, sizes []int) {
	t.Helper()
	for {
		x, y, ok := b.Next()
		if !ok {
			return rows, sizes
		}
		n, cols := x.Dim(0), x.Dim(1)
		if diff := cmp.Diff([]int{n, 2, 3}, y.Shape()); diff != "" {
			t.Fatalf("y shape (-want +got):\n%s", diff)
		}
		xd, yd := x.Data(), y.Data()
		for r := range n {
			i := int(xd[r*cols])
			for j := range cols {
				if want := float32(i) + float32(j)/1000; xd[r*cols+j] != want {
					t.Fatalf("x row %d element %d = %v, want %v", r, j, xd[r*cols+j], want)
				}
			}
			for k := range 6 {
				if yd[r*6+k] != float32(i) {
					t.Fatalf("x row %d is dataset row %d but y row holds %v", r, i, yd[r*6:r*6+6])
				}
			}
			rows = append(rows, i)
		}
		sizes = append(sizes, n)
	}
}

func TestBatchesVisitEveryRowOnce(t *testing.T) {
	for _, tt := range []struct{ n, size int }{{10, 3}, {12, 4}, {1, 1}, {5, 8}, {100, 64}, {7, 1}} {
		t.Run(fmt.Sprintf("n=%d,size=%d", tt.n, tt.size), func(t *testing.T) {
			x, y := indexRows(tt.n, 5)
			b := NewBatches(x, y, tt.size, rand.New(rand.NewPCG(1, 2)))
			for e := range 3 {
				rows, sizes := epoch(t, b)
				slices.Sort(rows)
				for i, r := range rows {
					if r != i {
						t.Fatalf("epoch %d: sorted rows %v, want 0..%d each once", e, rows, tt.n-1)
					}
				}
				if len(rows) != tt.n || len(sizes) != b.Len() {
					t.Fatalf("epoch %d: %d rows in %d batches, want %d in %d", e, len(rows), len(sizes), tt.n, b.Len())
				}
				if _, _, ok := b.Next(); ok {
					t.Fatalf("epoch %d: Next after the end returned ok", e)
				}
				b.Reset()
			}
		})
	}
}

func TestBatchesShuffle(t *testing.T) {
	x, y := indexRows(50, 3)
	b1 := NewBatches(x, y, 7, rand.New(rand.NewPCG(42, 7)))
	b2 := NewBatches(x, y, 7, rand.New(rand.NewPCG(42, 7)))
	b3 := NewBatches(x, y, 7, rand.New(rand.NewPCG(43, 7)))
	var prev []int
	for e := range 4 {
		r1, _ := epoch(t, b1)
		r2, _ := epoch(t, b2)
		r3, _ := epoch(t, b3)
		if !slices.Equal(r1, r2) {
			t.Errorf("epoch %d: same seed gave orders\n%v\n%v", e, r1, r2)
		}
		if slices.Equal(r1, r3) {
			t.Errorf("epoch %d: different seeds gave the same order %v", e, r1)
		}
		if slices.IsSorted(r1) {
			t.Errorf("epoch %d: order %v is not shuffled", e, r1)
		}
		if slices.Equal(r1, prev) {
			t.Errorf("epoch %d: same order as the epoch before: %v", e, r1)
		}
		prev = r1
		b1.Reset()
		b2.Reset()
		b3.Reset()
	}
}

// TestBatchesOwnGenerator checks that the orders depend only on the seed
// NewBatches draws from r: the caller drawing from r afterwards (as a
// Dropout sharing it does) changes none of them; and that Epoch counts the
// Resets.
func TestBatchesOwnGenerator(t *testing.T) {
	x, y := indexRows(30, 2)
	r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	b1, b2 := NewBatches(x, y, 4, r1), NewBatches(x, y, 4, r2)
	for e := range 3 {
		if b1.Epoch() != e || b2.Epoch() != e {
			t.Fatalf("Epoch() = %d and %d after %d Resets", b1.Epoch(), b2.Epoch(), e)
		}
		r2.Uint64()
		rows1, _ := epoch(t, b1)
		rows2, _ := epoch(t, b2)
		if !slices.Equal(rows1, rows2) {
			t.Fatalf("epoch %d: drawing from r changed the order:\n%v\n%v", e, rows1, rows2)
		}
		b1.Reset()
		b2.Reset()
	}
}

func TestBatchesSequential(t *testing.T) {
	x, y := indexRows(10, 4)
	b := NewBatches(x, y, 4, nil)
	for e := range 2 {
		rows, sizes := epoch(t, b)
		if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, rows); diff != "" {
			t.Errorf("epoch %d rows (-want +got):\n%s", e, diff)
		}
		if diff := cmp.Diff([]int{4, 4, 2}, sizes); diff != "" {
			t.Errorf("epoch %d sizes (-want +got):\n%s", e, diff)
		}
		b.Reset()
	}
}

func TestBatchesPartialAndDropLast(t *testing.T) {
	tests := []struct {
		n, size  int
		dropLast bool
		want     []int
	}{
		{10, 3, false, []int{3, 3, 3, 1}},
		{10, 3, true, []int{3, 3, 3}},
		{9, 3, false, []int{3, 3, 3}},
		{9, 3, true, []int{3, 3, 3}},
		{2, 5, false, []int{2}},
		{2, 5, true, nil},
		{0, 5, false, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n=%d,size=%d,drop=%v", tt.n, tt.size, tt.dropLast), func(t *testing.T) {
			x, y := indexRows(tt.n, 2)
			b := NewBatches(x, y, tt.size, rand.New(rand.NewPCG(3, 4)))
			b.DropLast = tt.dropLast
			if b.Len() != len(tt.want) {
				t.Errorf("Len() = %d, want %d", b.Len(), len(tt.want))
			}
			for e := range 2 {
				_, sizes := epoch(t, b)
				if diff := cmp.Diff(tt.want, sizes); diff != "" {
					t.Errorf("epoch %d batch sizes (-want +got):\n%s", e, diff)
				}
				b.Reset()
			}
		})
	}
}

// TestBatchesShapes checks the batch shapes for 1-D and higher-dimensional
// x and y.
func TestBatchesShapes(t *testing.T) {
	x := tensor.FromSlice(make([]float32, 5*2*3*4), 5, 2, 3, 4)
	y := tensor.FromSlice([]float32{0, 1, 2, 3, 4}, 5)
	b := NewBatches(x, y, 3, nil)
	var xs, ys [][]int
	var yd [][]float32
	for {
		bx, by, ok := b.Next()
		if !ok {
			break
		}
		xs, ys = append(xs, bx.Shape()), append(ys, by.Shape())
		yd = append(yd, slices.Clone(by.Data()))
	}
	if diff := cmp.Diff([][]int{{3, 2, 3, 4}, {2, 2, 3, 4}}, xs); diff != "" {
		t.Errorf("x shapes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]int{{3}, {2}}, ys); diff != "" {
		t.Errorf("y shapes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]float32{{0, 1, 2}, {3, 4}}, yd); diff != "" {
		t.Errorf("y batches (-want +got):\n%s", diff)
	}
}

// TestBatchesNonContiguous checks that a strided x is read row by row in
// its logical order.
func TestBatchesNonContiguous(t *testing.T) {
	x := tensor.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3).Transpose(0, 1) // [3, 2]: rows (0,3) (1,4) (2,5)
	y := tensor.FromSlice([]float32{7, 8, 9}, 3)
	b := NewBatches(x, y, 2, nil)
	bx, by, _ := b.Next()
	if diff := cmp.Diff([]float32{0, 3, 1, 4}, bx.Data()); diff != "" {
		t.Errorf("x batch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]float32{7, 8}, by.Data()); diff != "" {
		t.Errorf("y batch (-want +got):\n%s", diff)
	}
}

func TestBatchesNoAllocs(t *testing.T) {
	for _, r := range []*rand.Rand{rand.New(rand.NewPCG(5, 6)), nil} {
		x, y := indexRows(1000, 784) // 15 full batches of 64 and one of 40
		b := NewBatches(x, y, 64, r)
		run := func() {
			for {
				if _, _, ok := b.Next(); !ok {
					break
				}
			}
			b.Reset()
		}
		run()
		if n := testing.AllocsPerRun(20, run); n != 0 {
			t.Errorf("shuffled=%v: %v allocations per epoch, want 0", r != nil, n)
		}
	}
}

func TestNewBatchesPanics(t *testing.T) {
	x, y := indexRows(4, 2)
	tests := []struct {
		name string
		x, y *tensor.Tensor
		size int
		want []string
	}{
		{"row mismatch", x, tensor.New(5, 2, 3), 2, []string{"nn: NewBatches: ", "[4 2]", "[5 2 3]"}},
		{"size 0", x, y, 0, []string{"nn: NewBatches: ", "batch size 0", "[4 2]", "[4 2 3]"}},
		{"size -1", x, y, -1, []string{"nn: NewBatches: ", "batch size -1"}},
		{"scalar x", tensor.Scalar(1), y, 1, []string{"nn: NewBatches: ", "x shape []", "[4 2 3]"}},
		{"scalar y", x, tensor.Scalar(1), 1, []string{"nn: NewBatches: ", "y shape []"}},
		{"nil y", x, nil, 1, []string{"nn: NewBatches: ", "nil"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				msg := fmt.Sprint(recover())
				for _, w := range tt.want {
					if !strings.Contains(msg, w) {
						t.Errorf("panic %q, want it to contain %q", msg, w)
					}
				}
			}()
			NewBatches(tt.x, tt.y, tt.size, nil)
		})
	}
}

func BenchmarkBatchesNext(b *testing.B) {
	x, y := indexRows(60000, 784)
	it := NewBatches(x, y, 64, rand.New(rand.NewPCG(1, 1)))
	b.SetBytes(64 * (784 + 6) * 4)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := it.Next(); !ok {
			it.Reset()
		}
	}
}
