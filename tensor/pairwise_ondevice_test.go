package tensor_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestPairwiseOnDevice runs PairwiseSqDist(Into), its gradient and
// RBFKernel(Into) on the stand-in device, composed of the device's
// families: within 1e-5·d·(‖x̃[i]‖² + ‖ỹ[j]‖²) of the host's (x̃, ỹ
// centered by the mean of all the rows), the gradients within 1e-5 of
// 2(|rowsum g|·|x| + |g|·|y|); y = x symmetric bit for bit with a zero
// diagonal; strided operands and dst, zero sizes, and mixed devices
// panicking.
func TestPairwiseOnDevice(t *testing.T) {
	tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(25, 1))
	// near compares got (on the device) with want (the host's) within
	// tol[i] per element.
	near := func(name string, got, want *Tensor, tol func(i int) float64) {
		t.Helper()
		h := fromDev(t, name, got, onDev)
		if !slices.Equal(h.Shape(), want.Shape()) {
			t.Fatalf("%s: shape %v, want %v", name, h.Shape(), want.Shape())
		}
		gd, wd := h.Contiguous().Data(), want.Contiguous().Data()
		for i := range wd {
			if d := math.Abs(float64(gd[i]) - float64(wd[i])); !(d <= tol(i)) {
				t.Fatalf("%s: element %d = %v, want the host's %v (tolerance %g)", name, i, gd[i], wd[i], tol(i))
			}
		}
	}
	// distTol is the bound of PairwiseSqDist's comment for x and y.
	distTol := func(x, y *Tensor) func(i int) float64 {
		n, m, d := x.Dim(0), y.Dim(0), x.Dim(1)
		xd, yd := x.Contiguous().Data(), y.Contiguous().Data()
		mean := make([]float64, d)
		for _, rows := range [][]float32{xd, yd} {
			for i, v := range rows {
				mean[i%d] += float64(v) / float64(n+m)
			}
		}
		norm := func(rows []float32, i int) float64 {
			s := 0.0
			for k := range d {
				v := float64(rows[i*d+k]) - mean[k]
				s += v * v
			}
			return s
		}
		return func(i int) float64 { return 1e-5 * float64(d) * (norm(xd, i/m) + norm(yd, i%m) + 1e-30) }
	}
	for _, c := range []struct {
		name string
		x, y *Tensor
	}{
		{"7x5 4x5", RandN(r, 7, 5), RandN(r, 4, 5)},
		{"strided", RandN(r, 5, 6).T(), RandN(r, 3, 10, 5).Index(0, 1).Slice(0, 1, 10, 2)},
		{"far from the origin", AddScalar(RandN(r, 6, 3), 1000), AddScalar(RandN(r, 2, 3), 1000)},
		{"d = 0", New(3, 0), New(2, 0)},
		{"n = 0", New(0, 4), RandN(r, 2, 4)},
	} {
		x, y := toDev(t, c.x, onDev), toDev(t, c.y, onDev)
		tol := distTol(c.x, c.y)
		near(c.name, PairwiseSqDist(x, y), PairwiseSqDist(c.x, c.y), tol)
		dst := toDev(t, New(c.y.Dim(0), c.x.Dim(0)), onDev).T()
		if PairwiseSqDistInto(dst, x, y) != dst {
			t.Errorf("%s: PairwiseSqDistInto did not return dst", c.name)
		}
		near(c.name+" Into a transposed dst", dst, PairwiseSqDist(c.x, c.y), tol)
		rbf := func(i int) float64 { return 0.3*tol(i) + 1e-6 }
		near(c.name+" RBFKernel", RBFKernel(x, y, 0.3), RBFKernel(c.x, c.y, 0.3), rbf)
		near(c.name+" RBFKernelInto", RBFKernelInto(dst, x, y, 0.3), RBFKernel(c.x, c.y, 0.3), rbf)

		g := RandN(r, c.x.Dim(0), c.y.Dim(0))
		wx, wy := PairwiseSqDistGrad(g, c.x, c.y)
		gradTol := func(a, b, gm *Tensor) func(i int) float64 {
			bound := Add(Mul(Abs(a), Sum(Abs(gm), true, 1)), MatMul(Abs(gm), Abs(b))).Contiguous().Data()
			return func(i int) float64 { return 1e-5 * 2 * float64(bound[i]) }
		}
		gd := toDev(t, g, onDev)
		dx, dy := PairwiseSqDistGrad(gd, x, y)
		near(c.name+" dx", dx, wx, gradTol(c.x, c.y, g))
		near(c.name+" dy", dy, wy, gradTol(c.y, c.x, g.T()))
		dyT := toDev(t, New(c.y.Dim(1), c.y.Dim(0)), onDev).T()
		if gx, gy := PairwiseSqDistGradInto(nil, dyT, gd, x, y); gx != nil || gy != dyT {
			t.Errorf("%s: PairwiseSqDistGradInto(nil, dy, ...) = %v, %v", c.name, gx, gy)
		}
		near(c.name+" dy Into a transposed dst", dyT, wy, gradTol(c.y, c.x, g.T()))
	}

	// y = x: symmetric bit for bit, an exact zero diagonal.
	h := AddScalar(RandN(r, 6, 4), 50)
	x := toDev(t, h, onDev)
	for _, got := range []*Tensor{PairwiseSqDist(x, x), PairwiseSqDistInto(toDev(t, New(6, 6), onDev).T(), x, x)} {
		d := fromDev(t, "y = x", got, onDev)
		near("y = x", got, PairwiseSqDist(h, h), distTol(h, h))
		for i := range 6 {
			for j := range 6 {
				if a, b := d.At(i, j), d.At(j, i); a != b || i == j && a != 0 {
					t.Errorf("y = x: D[%d %d] = %v, D[%d %d] = %v: want symmetric with a zero diagonal", i, j, a, j, i, b)
				}
			}
		}
	}

	panics(t, "tensor: PairwiseSqDist: [2 3] on device(7) and [2 3] on cpu: operands on device(7) and cpu; copy them to one device with To",
		func() { PairwiseSqDist(x.Slice(0, 0, 2, 1).Slice(1, 0, 3, 1), New(2, 3)) })
}

// TestSpMMOnDevice runs SpMM and SpMMInto (a strided dst, a transposed b,
// an empty row, no nonzero at all) on the stand-in device: within
// n·2⁻²⁴·Σ|a||b| of the host's (the stand-in adds in the CPU's order, so
// in fact bit for bit but for the host's fused multiply-adds), and mixed
// devices panicking.
func TestSpMMOnDevice(t *testing.T) {
	tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(25, 7))
	a := CSRFromCOO(4, 6, []int{0, 0, 2, 2, 2, 3, 0}, []int{1, 5, 0, 3, 5, 2, 1}, []float32{0.5, -1, 2, 0.25, 3, -1.5, 1})
	empty := NewCSR(4, 6, []int{0, 0, 0, 0, 0}, nil, nil)
	for _, c := range []struct {
		name string
		a    *CSR
		b    *Tensor
	}{
		{"[6 3]", a, RandN(r, 6, 3)},
		{"transposed b", a, RandN(r, 3, 6).T()},
		{"no nonzero", empty, RandN(r, 6, 2)},
		{"k = 0", a, New(6, 0)},
	} {
		want := SpMM(c.a, c.b.Contiguous())
		tol := MatMul(Abs(denseOf(c.a)), Abs(c.b)).Contiguous().Data()
		check := func(what string, got *Tensor) {
			h := fromDev(t, c.name+" "+what, got, onDev)
			if !slices.Equal(h.Shape(), want.Shape()) {
				t.Fatalf("%s %s: shape %v, want %v", c.name, what, h.Shape(), want.Shape())
			}
			for i, w := range want.Data() {
				if d := math.Abs(float64(h.Contiguous().Data()[i] - w)); d > 4*0x1p-24*float64(tol[i]) {
					t.Fatalf("%s %s: element %d = %v, want the host's %v", c.name, what, i, h.Contiguous().Data()[i], w)
				}
			}
		}
		b := toDev(t, c.b, onDev)
		check("SpMM", SpMM(c.a, b))
		dst := toDev(t, Full(9, c.b.Dim(1), 4), onDev).T()
		check("SpMMInto a transposed dst", SpMMInto(dst, c.a, b))
	}
	panics(t, "tensor: SpMMInto: [4 3] on cpu and [6 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { SpMMInto(New(4, 3), a, toDev(t, RandN(r, 6, 3), onDev)) })
}

// denseOf returns a as a dense matrix.
func denseOf(a *CSR) *Tensor {
	d := New(a.Rows, a.Cols)
	for i := range a.Rows {
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			d.Set(d.At(i, a.ColIdx[p])+a.Val[p], i, a.ColIdx[p])
		}
	}
	return d
}
