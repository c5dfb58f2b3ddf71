package shape

import (
	"slices"
	"testing"
)

func TestBroadcast(t *testing.T) {
	for _, c := range []struct {
		a, b, want []int
		ok         bool
	}{
		{nil, nil, []int{}, true},
		{[]int{3}, nil, []int{3}, true},
		{nil, []int{2, 3}, []int{2, 3}, true},
		{[]int{2, 3}, []int{2, 3}, []int{2, 3}, true},
		{[]int{2, 1}, []int{1, 3}, []int{2, 3}, true},
		{[]int{4, 1, 5}, []int{3, 1}, []int{4, 3, 5}, true},
		{[]int{1}, []int{0}, []int{0}, true}, // size 1 repeats to 0
		{[]int{0}, []int{1}, []int{0}, true},
		{[]int{2, 3}, []int{3, 3}, nil, false},
		{[]int{0}, []int{2}, nil, false},
		{[]int{5, 2}, []int{2, 5, 3}, nil, false},
	} {
		got, ok := Broadcast(c.a, c.b)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("Broadcast(%v, %v) = %v, %v; want %v, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
		// Broadcasting is symmetric.
		if got2, ok2 := Broadcast(c.b, c.a); ok2 != ok || !slices.Equal(got2, got) {
			t.Errorf("Broadcast(%v, %v) = %v, %v; the other order gives %v, %v", c.b, c.a, got2, ok2, got, ok)
		}
	}
}

func TestContiguousStrides(t *testing.T) {
	for _, c := range []struct{ shape, want []int }{
		{nil, []int{}},
		{[]int{5}, []int{1}},
		{[]int{2, 3, 4}, []int{12, 4, 1}},
		{[]int{2, 0, 4}, []int{4, 4, 1}}, // a size-0 dimension counts as 1
		{[]int{3, 1}, []int{1, 1}},
	} {
		if got := ContiguousStrides(c.shape); !slices.Equal(got, c.want) {
			t.Errorf("ContiguousStrides(%v) = %v, want %v", c.shape, got, c.want)
		}
	}
}

func TestMatrixLayout(t *testing.T) {
	for _, c := range []struct {
		rows, cols, rs, cs int
		trans              bool
		ld                 int
		ok                 bool
	}{
		{3, 4, 4, 1, false, 4, true},  // row-major
		{3, 4, 6, 1, false, 6, true},  // a slice of columns
		{3, 4, 1, 3, true, 3, true},   // a transposed view
		{3, 4, 1, 5, true, 5, true},   // a transposed slice
		{3, 4, 2, 8, false, 0, false}, // strided both ways
		{3, 4, 2, 1, false, 0, false}, // rows overlap
		{1, 4, 0, 1, false, 4, true},  // a broadcast row
		{4, 1, 1, 0, false, 1, true},  // a column: reads as row-major with ld 1
		{4, 1, 7, 0, false, 7, true},  // a strided column
		{1, 1, 0, 0, false, 1, true},
		{0, 0, 1, 1, false, 1, true}, // empty, with contiguous strides
		{3, 0, 1, 1, false, 1, true},
	} {
		trans, ld, ok := MatrixLayout(c.rows, c.cols, c.rs, c.cs)
		if trans != c.trans || ld != c.ld || ok != c.ok {
			t.Errorf("MatrixLayout(%d, %d, %d, %d) = %v, %d, %v; want %v, %d, %v", c.rows, c.cols, c.rs, c.cs, trans, ld, ok, c.trans, c.ld, c.ok)
		}
	}
}

func TestPlanMatMul(t *testing.T) {
	for _, c := range []struct {
		a, b       []int
		m, n, k    int
		batch, out []int
	}{
		{[]int{3, 4}, []int{4, 5}, 3, 5, 4, []int{}, []int{3, 5}},
		{[]int{4}, []int{4, 5}, 1, 5, 4, []int{}, []int{5}},
		{[]int{3, 4}, []int{4}, 3, 1, 4, []int{}, []int{3}},
		{[]int{4}, []int{4}, 1, 1, 4, []int{}, []int{}},
		{[]int{2, 1, 3, 4}, []int{5, 4, 6}, 3, 6, 4, []int{2, 5}, []int{2, 5, 3, 6}},
		{[]int{7, 3, 4}, []int{4, 2}, 3, 2, 4, []int{7}, []int{7, 3, 2}},
		{[]int{4}, []int{7, 4, 2}, 1, 2, 4, []int{7}, []int{7, 2}},
		{[]int{7, 3, 4}, []int{4}, 3, 1, 4, []int{7}, []int{7, 3}},
		{[]int{0, 3, 0}, []int{0, 5}, 3, 5, 0, []int{0}, []int{0, 3, 5}},
	} {
		p, err := PlanMatMul(c.a, c.b)
		if err != nil {
			t.Errorf("PlanMatMul(%v, %v): %v", c.a, c.b, err)
			continue
		}
		if p.M != c.m || p.N != c.n || p.K != c.k || !slices.Equal(p.Batch, c.batch) || !slices.Equal(p.Out, c.out) {
			t.Errorf("PlanMatMul(%v, %v) = %+v; want m %d n %d k %d batch %v out %v", c.a, c.b, p, c.m, c.n, c.k, c.batch, c.out)
		}
	}
	for _, c := range []struct {
		a, b []int
		err  string
	}{
		{nil, []int{4, 5}, "scalars have no matrix product"},
		{[]int{3, 4}, []int{}, "scalars have no matrix product"},
		{[]int{3, 4}, []int{5, 6}, "inner dimensions 4 and 5 differ"},
		{[]int{4}, []int{5}, "inner dimensions 4 and 5 differ"},
		{[]int{3, 4}, []int{5}, "inner dimensions 4 and 5 differ"},
		{[]int{2, 3, 4}, []int{3, 4, 5}, "batch dimensions do not broadcast"},
	} {
		if _, err := PlanMatMul(c.a, c.b); err == nil || err.Error() != c.err {
			t.Errorf("PlanMatMul(%v, %v): error %v, want %q", c.a, c.b, err, c.err)
		}
	}
}

func TestConvWork(t *testing.T) {
	for _, c := range []struct {
		dims        []int
		x, w        [4]int
		stride, pad int
	}{
		{[]int{8, 3, 32, 30, 16, 5, 3}, [4]int{8, 3, 32, 30}, [4]int{16, 3, 5, 3}, 1, 0},
		{[]int{8, 3, 32, 30, 16, 5, 3, 2}, [4]int{8, 3, 32, 30}, [4]int{16, 3, 5, 3}, 2, 0},
		{[]int{8, 3, 32, 30, 16, 5, 3, 2, 1}, [4]int{8, 3, 32, 30}, [4]int{16, 3, 5, 3}, 2, 1},
	} {
		x, w, stride, pad := ConvWork(c.dims)
		if x != c.x || w != c.w || stride != c.stride || pad != c.pad {
			t.Errorf("ConvWork(%v) = %v, %v, %d, %d; want %v, %v, %d, %d", c.dims, x, w, stride, pad, c.x, c.w, c.stride, c.pad)
		}
	}
}
