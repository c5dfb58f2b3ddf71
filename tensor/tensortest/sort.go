package tensortest

import (
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// The Sort family of a HostDevice: the CPU's, on host copies, as the
// other families (hostdevice.go).

var _ tensor.SortKernels = kernels{}

func (k kernels) Sort(values, indices, x *tensor.Tensor, axis, kk int, descending bool) error {
	return k.do("Sort.Sort", 2, []*tensor.Tensor{values, indices, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sort.Sort(h[0], h[1], h[2], axis, kk, descending)
	})
}

func (k kernels) Median(values, indices, x *tensor.Tensor, axis int) error {
	return k.do("Sort.Median", 2, []*tensor.Tensor{values, indices, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sort.Median(h[0], h[1], h[2], axis)
	})
}

func (k kernels) Scan(dst, x *tensor.Tensor, axis int, prod bool) error {
	return k.do("Sort.Scan", 1, []*tensor.Tensor{dst, x}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sort.Scan(h[0], h[1], axis, prod)
	})
}

func (k kernels) CumProdBackward(dx, x, dy *tensor.Tensor, axis int) error {
	return k.do("Sort.CumProdBackward", 1, []*tensor.Tensor{dx, x, dy}, func(h []*tensor.Tensor) error {
		return k.d.cpu.Sort.CumProdBackward(h[0], h[1], h[2], axis)
	})
}

// TestSort checks the Sort family on dev against the CPU's, which it must
// equal bit for bit: Sort, ArgSort, TopK and Median (values and indices)
// and CumSum, CumProd and CumProdBackward along every axis of 1- to 3-d
// operands, with ties (steps), NaN, ±Inf and -0 (nans, special), rows of
// one element, zero-size operands, transposed and sliced operands, strided
// destinations of the Into forms, and rows longer than a block's threads.
func TestSort(t *testing.T, dev tensor.Device) {
	var cases []kase
	vals := func(f func(x *tsr) (*tsr, *tsr)) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr { v, _ := f(x[0]); return v }
	}
	inds := func(f func(x *tsr) (*tsr, *tsr)) func(x []*tsr) *tsr {
		return func(x []*tsr) *tsr { _, i := f(x[0]); return i }
	}
	sortBy := func(axis int, desc bool) func(x *tsr) (*tsr, *tsr) {
		return func(x *tsr) (*tsr, *tsr) { return tensor.Sort(x, axis, desc) }
	}
	topK := func(k, axis int, largest bool) func(x *tsr) (*tsr, *tsr) {
		return func(x *tsr) (*tsr, *tsr) { return tensor.TopK(x, k, axis, largest, true) }
	}
	median := func(axis int, keep bool) func(x *tsr) (*tsr, *tsr) {
		return func(x *tsr) (*tsr, *tsr) { return tensor.Median(x, axis, keep) }
	}
	transposed := func(f func(x *tsr) (*tsr, *tsr)) func(x *tsr) (*tsr, *tsr) {
		return func(x *tsr) (*tsr, *tsr) { return f(x.T()) }
	}
	sliced := func(f func(x *tsr) (*tsr, *tsr)) func(x *tsr) (*tsr, *tsr) {
		return func(x *tsr) (*tsr, *tsr) { return f(x.Slice(1, 1, 33, 2)) }
	}
	pair := []struct {
		name string
		f    func(x *tsr) (*tsr, *tsr)
		in   []int
	}{
		{"Sort [300] ascending", sortBy(0, false), []int{300}},
		{"Sort [300] descending", sortBy(0, true), []int{300}},
		{"Sort [1]", sortBy(0, false), []int{1}},
		{"Sort [5 7 6] axis 0", sortBy(0, false), []int{5, 7, 6}},
		{"Sort [5 7 6] axis 1 descending", sortBy(1, true), []int{5, 7, 6}},
		{"Sort [5 7 6] axis -1", sortBy(-1, false), []int{5, 7, 6}},
		{"Sort [3 1100] (rows past a block)", sortBy(1, true), []int{3, 1100}},
		{"Sort [0 5]", sortBy(1, false), []int{0, 5}},
		{"Sort transposed", transposed(sortBy(1, false)), []int{33, 7}},
		{"Sort sliced", sliced(sortBy(1, true)), []int{4, 40}},
		{"TopK [5 7 6] k 3 axis 1", topK(3, 1, true), []int{5, 7, 6}},
		{"TopK [300] k 17 smallest", topK(17, 0, false), []int{300}},
		{"TopK [7 9] k 9 axis 1", topK(9, 1, true), []int{7, 9}},
		{"TopK [7 9] k 0", topK(0, 1, true), []int{7, 9}},
		{"TopK transposed", transposed(topK(2, 0, false)), []int{33, 7}},
		{"Median [301]", median(0, false), []int{301}},
		{"Median [5 8 6] axis 1", median(1, false), []int{5, 8, 6}},
		{"Median [5 8 6] axis 0 keepdims", median(0, true), []int{5, 8, 6}},
		{"Median [1 4]", median(0, false), []int{1, 4}},
		{"Median sliced", sliced(median(1, true)), []int{4, 40}},
	}
	for _, g := range []struct {
		name string
		gen  gen
	}{{"normal", normal}, {"ties", steps}, {"NaN", nans}, {"special", special}} {
		for _, p := range pair {
			cases = append(cases,
				kase{name: p.name + " values " + g.name, in: []operand{of(g.gen, p.in...)}, op: vals(p.f), tol: exactly},
				kase{name: p.name + " indices " + g.name, in: []operand{of(g.gen, p.in...)}, op: inds(p.f), tol: exactly})
		}
		cases = append(cases,
			kase{name: "ArgSort [5 7 6] axis 2 " + g.name, in: []operand{of(g.gen, 5, 7, 6)},
				op: func(x []*tsr) *tsr { return tensor.ArgSort(x[0], 2, false) }, tol: exactly},
			kase{name: "SortInto strided values " + g.name, in: []operand{guarded(20, 14), guarded(7, 20), of(g.gen, 7, 20)},
				op: func(x []*tsr) *tsr {
					v, _ := tensor.SortInto(x[0].Slice(1, 0, 14, 2).T(), x[1], x[2], 1, true)
					return v
				}, tol: exactly},
			kase{name: "TopKInto strided indices " + g.name, in: []operand{guarded(7, 3), guarded(3, 14), of(g.gen, 7, 20)},
				op: func(x []*tsr) *tsr {
					_, i := tensor.TopKInto(x[0], x[1].Slice(1, 0, 14, 2).T(), x[2], 3, 1, true, true)
					return i
				}, tol: exactly},
			kase{name: "MedianInto strided " + g.name, in: []operand{guarded(7, 2), guarded(7), of(g.gen, 7, 20)},
				op: func(x []*tsr) *tsr {
					v, _ := tensor.MedianInto(x[0].Slice(1, 0, 1, 1).Reshape(7), x[1], x[2], 1, false)
					return v
				}, tol: exactly},
		)
	}
	// More rows than a device's grid of sort blocks (cudaplugin: 4096),
	// which then stride over them reusing their scratch.
	cases = append(cases,
		kase{name: "Sort [4100 3] values (more rows than blocks)", in: []operand{of(nans, 4100, 3)}, op: vals(sortBy(1, true)), tol: exactly},
		kase{name: "Median [3 4100] indices (more rows than blocks)", in: []operand{of(nans, 3, 4100)}, op: inds(median(0, false)), tol: exactly})
	scans := []struct {
		name string
		f    func(x *tsr) *tsr
		in   []int
	}{
		{"[300] axis 0", func(x *tsr) *tsr { return tensor.CumSum(x, 0) }, []int{300}},
		{"[5 7 6] axis 0", func(x *tsr) *tsr { return tensor.CumSum(x, 0) }, []int{5, 7, 6}},
		{"[5 7 6] axis 1", func(x *tsr) *tsr { return tensor.CumSum(x, 1) }, []int{5, 7, 6}},
		{"[5 7 6] axis -1", func(x *tsr) *tsr { return tensor.CumSum(x, -1) }, []int{5, 7, 6}},
		{"[0 4] axis 1", func(x *tsr) *tsr { return tensor.CumSum(x, 1) }, []int{0, 4}},
		{"transposed", func(x *tsr) *tsr { return tensor.CumSum(x.T(), 1) }, []int{33, 7}},
		{"sliced", func(x *tsr) *tsr { return tensor.CumSum(x.Slice(1, 1, 33, 2), 0) }, []int{4, 40}},
		{"0-d", func(x *tsr) *tsr { return tensor.CumSum(x.Reshape(), 0) }, []int{1}},
		{"CumProd [5 7 6] axis 1", func(x *tsr) *tsr { return tensor.CumProd(x, 1) }, []int{5, 7, 6}},
		{"CumProd [300] axis 0", func(x *tsr) *tsr { return tensor.CumProd(x, 0) }, []int{300}},
		{"CumProd transposed", func(x *tsr) *tsr { return tensor.CumProd(x.T(), 0) }, []int{33, 7}},
	}
	for _, g := range []struct {
		name string
		gen  gen
	}{{"normal", normal}, {"zeros", steps}, {"special", special}} {
		for _, s := range scans {
			f := s.f
			cases = append(cases, kase{name: "scan " + s.name + " " + g.name, in: []operand{of(g.gen, s.in...)},
				op: func(x []*tsr) *tsr { return f(x[0]) }, tol: exactly})
		}
		cases = append(cases,
			kase{name: "CumSumInto strided dst " + g.name, in: []operand{guarded(20, 14), of(g.gen, 7, 20)},
				op: func(x []*tsr) *tsr { return tensor.CumSumInto(x[0].Slice(1, 0, 14, 2).T(), x[1], 1) }, tol: exactly},
			kase{name: "CumProdInto in place " + g.name, in: []operand{of(g.gen, 7, 20)},
				op: func(x []*tsr) *tsr { return tensor.CumProdInto(x[0], x[0], 0) }, tol: exactly},
			kase{name: "CumProdBackward [5 7 6] axis 1 " + g.name, in: []operand{of(g.gen, 5, 7, 6), rn(5, 7, 6)},
				op: func(x []*tsr) *tsr { return tensor.CumProdBackward(x[0], x[1], 1) }, tol: exactly},
			kase{name: "CumProdBackward transposed " + g.name, in: []operand{of(g.gen, 33, 7), rn(7, 33)},
				op: func(x []*tsr) *tsr { return tensor.CumProdBackward(x[0].T(), x[1], 0) }, tol: exactly},
		)
	}
	run(t, dev, 25, cases)
}
