//go:build cuda || cudaemu

package cudaplugin

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestElemfnOnDevice runs tensor/elemfn.go's ops and the gradients of the
// differentiable ones on the device against the CPU: the transcendental
// ones (the device's sinf, log1pf, ...) within 4e-6 relative, the others
// exactly; inputs with special values (±0, ±Inf, NaN, halves, integers),
// a broadcast binary pair and a transposed operand.
func TestElemfnOnDevice(t *testing.T) {
	g := requireGPU(t)
	r := rand.New(rand.NewPCG(24, 25))
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0.5, 1.5, -2.5, 3, -1}
	mk := func(shape ...int) *tensor.Tensor {
		x := tensor.Scale(tensor.RandN(r, shape...), 3)
		d := x.Data()
		for i := range d {
			if r.IntN(4) == 0 {
				d[i] = specials[r.IntN(len(specials))]
			}
		}
		return x
	}
	up := func(x *tensor.Tensor) *tensor.Tensor {
		d, err := x.To(g.Device())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	x := mk(7, 9)
	dx := up(x)
	for _, c := range []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
		tol  float64
	}{
		{"Sin", tensor.Sin, 4e-6}, {"Cos", tensor.Cos, 4e-6}, {"Tan", tensor.Tan, 4e-6}, {"Log1p", tensor.Log1p, 4e-6},
		{"Expm1", tensor.Expm1, 4e-6}, {"Floor", tensor.Floor, 0}, {"Ceil", tensor.Ceil, 0}, {"Round", tensor.Round, 0},
		{"Sign", tensor.Sign, 0}, {"IsNaN", tensor.IsNaN, 0}, {"IsInf", tensor.IsInf, 0}, {"IsFinite", tensor.IsFinite, 0},
		{"LogicalNot", tensor.LogicalNot, 0},
	} {
		same(t, c.name, c.f(dx), c.f(x), c.tol)
		same(t, c.name+" transposed", c.f(dx.T()), c.f(x.T()), c.tol)
	}
	a, b := mk(3, 4, 5), mk(4, 1)
	da, db := up(a), up(b)
	for _, c := range []struct {
		name string
		f    func(a, b *tensor.Tensor) *tensor.Tensor
	}{{"Mod", tensor.Mod}, {"Fmod", tensor.Fmod}, {"LogicalAnd", tensor.LogicalAnd}, {"LogicalOr", tensor.LogicalOr}, {"LogicalXor", tensor.LogicalXor}} {
		same(t, c.name, c.f(da, db), c.f(a, b), 0)
	}
	// Gradients, finite x (dy random).
	xf := tensor.Clamp(tensor.RandN(r, 6, 5), -1.2, 1.2)
	dy := tensor.RandN(r, 6, 5)
	dxf, ddy := up(xf), up(dy)
	for _, c := range []struct {
		op   tensor.ElemOp
		fwd  func(x *tensor.Tensor) *tensor.Tensor
		useY bool
	}{
		{tensor.ElemSin, tensor.Sin, false}, {tensor.ElemCos, tensor.Cos, false}, {tensor.ElemTan, tensor.Tan, true},
		{tensor.ElemLog1p, tensor.Log1p, false}, {tensor.ElemExpm1, tensor.Expm1, true},
		{tensor.ElemFloor, tensor.Floor, false}, {tensor.ElemCeil, tensor.Ceil, false},
		{tensor.ElemRound, tensor.Round, false}, {tensor.ElemSign, tensor.Sign, false},
	} {
		var want, got *tensor.Tensor
		if c.useY {
			want = tensor.UnaryGrad(c.op, dy, nil, c.fwd(xf), [2]float32{})
			got = tensor.UnaryGrad(c.op, ddy, nil, up(c.fwd(xf)), [2]float32{})
		} else {
			want = tensor.UnaryGrad(c.op, dy, xf, nil, [2]float32{})
			got = tensor.UnaryGrad(c.op, ddy, dxf, nil, [2]float32{})
		}
		same(t, "UnaryGrad", got, want, 4e-6)
	}
}
