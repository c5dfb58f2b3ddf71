package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatMul checks random products (vectors, broadcast batches, every
// layout) against float64 dot products with the bound (k+1)·2⁻²⁴·Σ|a||b|.
func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for trial := 0; trial < 200; trial++ {
		m, n, k := r.IntN(9), r.IntN(9), r.IntN(9)
		if trial%40 == 0 {
			m, n, k = 40, 70, 90 // packed path
		}
		// Batch shapes that broadcast.
		bs := randShape(r, 2, 3)
		ba, bb := append([]int{}, bs...), append([]int{}, bs...)
		for i := range bs {
			if r.IntN(3) == 0 {
				ba[i] = 1
			} else if r.IntN(3) == 0 {
				bb[i] = 1
			}
		}
		if len(bb) > 0 && r.IntN(3) == 0 {
			bb = bb[1:]
		}
		sa := append(append([]int{}, ba...), m, k)
		sb := append(append([]int{}, bb...), k, n)
		aVec, bVec := r.IntN(6) == 0, r.IntN(6) == 0
		if aVec {
			sa = []int{k}
		}
		if bVec {
			sb = []int{k}
		}
		a := randLayout(r, layouts[r.IntN(len(layouts))], sa...)
		b := randLayout(r, layouts[r.IntN(len(layouts))], sb...)
		what := fmt.Sprintf("%v @ %v (strides %v, %v)", sa, sb, a.Strides(), b.Strides())
		got := MatMul(a, b)
		// Reference: promote vectors, then index with broadcasting.
		a2, b2 := a, b
		if aVec {
			a2 = a.Unsqueeze(0)
		}
		if bVec {
			b2 = b.Unsqueeze(1)
		}
		full := got.Shape()
		if aVec && bVec {
			full = []int{1, 1}
		} else if aVec {
			full = append(append([]int{}, full[:len(full)-1]...), 1, full[len(full)-1])
		} else if bVec {
			full = append(append([]int{}, full...), 1)
		}
		g := got.Reshape(full...)
		dot := func(idx []int) (sum, abs float64) {
			nd := len(idx)
			i, j := idx[nd-2], idx[nd-1]
			for p := 0; p < k; p++ {
				ia := append(append([]int{}, idx[:nd-2]...), i, p)
				ib := append(append([]int{}, idx[:nd-2]...), p, j)
				x, y := bcastAt(a2, ia), bcastAt(b2, ib)
				sum += x * y
				abs += math.Abs(x * y)
			}
			return sum, abs
		}
		checkAgainst(t, what, g, full, func(idx []int) float64 { s, _ := dot(idx); return s },
			func(idx []int) (float64, float64) { _, ab := dot(idx); return float64(k+1) * 0x1p-24, ab })
		// Into a non-contiguous dst gives the same.
		if got.Dims() >= 2 {
			dst := New(got.Shape()...).T().Contiguous().T()
			MatMulInto(dst, a, b)
			assertEqual(t, "MatMulInto "+what, dst, got)
		}
	}
}

func TestMatMulPanics(t *testing.T) {
	for _, c := range []struct {
		f   func()
		msg string
	}{
		{func() { MatMul(New(2, 3), New(4, 5)) }, "tensor: MatMul: shapes [2 3] and [4 5]: inner dimensions 3 and 4 differ"},
		{func() { MatMul(New(2, 2, 3), New(3, 3, 4)) }, "tensor: MatMul: shapes [2 2 3] and [3 3 4]: batch dimensions do not broadcast"},
		{func() { MatMulInto(New(2, 5), New(2, 3), New(3, 4)) }, "tensor: MatMulInto: dst shape [2 5], want [2 4] for [2 3] @ [3 4]"},
	} {
		func() {
			defer func() {
				if got := recover(); got != c.msg {
					t.Errorf("panic %q, want %q", got, c.msg)
				}
			}()
			c.f()
		}()
	}
}

// TestMatMulIntoOperand writes a product over one of its square operands:
// every element of the result reads a whole row or column of it.
func TestMatMulIntoOperand(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	a, b := RandN(r, 5, 5), RandN(r, 5, 5)
	want := MatMul(a, b)
	MatMulInto(a, a, b)
	for i, v := range want.Data() {
		if got := a.Data()[i]; got != v {
			t.Fatalf("MatMulInto(a, a, b): element %d is %v, want %v", i, got, v)
		}
	}
}
