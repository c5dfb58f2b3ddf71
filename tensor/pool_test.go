package tensor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refPoolOut is PyTorch's pooling output size.
func refPoolOut(in, k, s, p int, ceil bool) int {
	num := in + 2*p - k
	o := num/s + 1
	if ceil {
		o = int(math.Ceil(float64(num)/float64(s))) + 1
		if (o-1)*s >= in+p {
			o--
		}
	}
	return o
}

func TestPool2D(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	type tc struct {
		n, c, h, w int
		p          PoolParams
	}
	cases := []tc{
		{2, 3, 4, 4, PoolParams{Kernel: [2]int{2, 2}}},
		{1, 2, 5, 5, PoolParams{Kernel: [2]int{2, 2}, CeilMode: true}},                                              // partial last window
		{1, 2, 5, 4, PoolParams{Kernel: [2]int{2, 2}, CeilMode: true}},                                              // partial last row only (read past the plane before)
		{1, 2, 4, 7, PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true}}, // ceil window dropped
		{2, 1, 6, 5, PoolParams{Kernel: [2]int{3, 2}, Stride: [2]int{1, 3}, Padding: [2]int{1, 1}, ExcludePad: true}},
		{1, 1, 1, 1, PoolParams{Kernel: [2]int{1, 1}}},
		{0, 2, 4, 4, PoolParams{Kernel: [2]int{2, 2}}},
	}
	for len(cases) < 60 {
		c := tc{n: 1 + r.IntN(2), c: 1 + r.IntN(3), h: 1 + r.IntN(9), w: 1 + r.IntN(9)}
		c.p = PoolParams{Kernel: [2]int{1 + r.IntN(4), 1 + r.IntN(4)}, Stride: [2]int{r.IntN(4), r.IntN(4)},
			CeilMode: r.IntN(2) == 0, ExcludePad: r.IntN(2) == 0}
		c.p.Padding = [2]int{r.IntN(c.p.Kernel[0]/2 + 1), r.IntN(c.p.Kernel[1]/2 + 1)}
		if c.h+2*c.p.Padding[0] < c.p.Kernel[0] || c.w+2*c.p.Padding[1] < c.p.Kernel[1] {
			continue
		}
		cases = append(cases, c)
	}
	for _, c := range cases {
		kind := layouts[r.IntN(len(layouts))]
		x := randLayout(r, kind, c.n, c.c, c.h, c.w)
		if x.Len() > 0 && r.IntN(3) == 0 { // a NaN and an infinity somewhere
			x = x.Contiguous()
			x.Data()[r.IntN(x.Len())] = float32(math.NaN())
			x.Data()[r.IntN(x.Len())] = float32(math.Inf(-1))
		}
		k, s, pd := c.p.Kernel, c.p.Stride, c.p.Padding
		if s[0] == 0 {
			s[0] = k[0]
		}
		if s[1] == 0 {
			s[1] = k[1]
		}
		oh, ow := refPoolOut(c.h, k[0], s[0], pd[0], c.p.CeilMode), refPoolOut(c.w, k[1], s[1], pd[1], c.p.CeilMode)
		outShape := []int{c.n, c.c, oh, ow}
		dy := RandN(r, outShape...)
		// References: per output, the window's max (first in row-major
		// order, NaN wins), its index, and the average.
		maxV, maxI, avg, avgScale := map[[4]int]float64{}, map[[4]int]int{}, map[[4]int]float64{}, map[[4]int]float64{}
		dxMax, dxAvg := make([]float64, c.n*c.c*c.h*c.w), make([]float64, c.n*c.c*c.h*c.w)
		indices(outShape, func(o []int) {
			key := [4]int{o[0], o[1], o[2], o[3]}
			h0, w0 := o[2]*s[0]-pd[0], o[3]*s[1]-pd[1]
			h1, w1 := min(h0+k[0], c.h+pd[0]), min(w0+k[1], c.w+pd[1])
			pool := (h1 - h0) * (w1 - w0)
			m, at, sum, abs, count := math.Inf(-1), -1, 0.0, 0.0, 0
			for i := max(h0, 0); i < min(h1, c.h); i++ {
				for j := max(w0, 0); j < min(w1, c.w); j++ {
					v := float64(x.At(o[0], o[1], i, j))
					if at < 0 || (!math.IsNaN(m) && (v > m || math.IsNaN(v))) {
						m, at = v, i*c.w+j
					}
					sum += v
					abs += math.Abs(v)
					count++
				}
			}
			div := float64(pool)
			if c.p.ExcludePad {
				div = float64(count)
			}
			maxV[key], maxI[key], avg[key], avgScale[key] = m, at, sum/div, abs/div
			base := (o[0]*c.c + o[1]) * c.h * c.w
			d := float64(dy.At(o...))
			dxMax[base+at] += d
			for i := max(h0, 0); i < min(h1, c.h); i++ {
				for j := max(w0, 0); j < min(w1, c.w); j++ {
					dxAvg[base+i*c.w+j] += d / div
				}
			}
		})
		key := func(idx []int) [4]int { return [4]int{idx[0], idx[1], idx[2], idx[3]} }
		flat := func(idx []int) int { return ((idx[0]*c.c+idx[1])*c.h+idx[2])*c.w + idx[3] }
		t.Run(fmt.Sprintf("%v/%+v/%s", []int{c.n, c.c, c.h, c.w}, c.p, kind), func(t *testing.T) {
			out, ind := MaxPool2D(x, c.p)
			checkAgainst(t, "MaxPool2D", out, outShape, func(i []int) float64 { return maxV[key(i)] }, exact)
			checkAgainst(t, "MaxPool2D indices", ind, outShape, func(i []int) float64 { return float64(maxI[key(i)]) }, exact)
			xs := []int{c.n, c.c, c.h, c.w}
			kk := float64(k[0] * k[1])
			checkAgainst(t, "AvgPool2D", AvgPool2D(x, c.p), outShape, func(i []int) float64 { return avg[key(i)] },
				func(i []int) (float64, float64) { return (kk + 1) * 0x1p-24, avgScale[key(i)] })
			checkAgainst(t, "MaxPool2DBackward", MaxPool2DBackward(dy, ind, xs, c.p), xs, func(i []int) float64 { return dxMax[flat(i)] },
				func([]int) (float64, float64) { return kk * 0x1p-24, 4 })
			checkAgainst(t, "AvgPool2DBackward", AvgPool2DBackward(dy, xs, c.p), xs, func(i []int) float64 { return dxAvg[flat(i)] },
				func([]int) (float64, float64) { return kk * 0x1p-23, 4 })
			// Into non-contiguous outputs.
			o2 := New(c.c, c.n, oh, ow).Permute(1, 0, 2, 3)
			MaxPool2DInto(o2, nil, x, c.p)
			checkAgainst(t, "MaxPool2DInto (permuted)", o2, outShape, func(i []int) float64 { return maxV[key(i)] }, exact)
			i2 := New(outShape...)
			MaxPool2DInto(nil, i2, x, c.p)
			checkAgainst(t, "MaxPool2DInto (indices only)", i2, outShape, func(i []int) float64 { return float64(maxI[key(i)]) }, exact)
			// Strided gradients and indices, into a strided dx.
			sdy, sind := New(c.c, c.n, oh, ow).Permute(1, 0, 2, 3), New(c.c, c.n, oh, ow).Permute(1, 0, 2, 3)
			CopyInto(sdy, dy)
			CopyInto(sind, ind)
			sdx := New(c.c, c.n, c.h, c.w).Permute(1, 0, 2, 3)
			checkAgainst(t, "MaxPool2DBackwardInto (permuted)", MaxPool2DBackwardInto(sdx, sdy, sind, c.p), xs, func(i []int) float64 { return dxMax[flat(i)] },
				func([]int) (float64, float64) { return kk * 0x1p-24, 4 })
			checkAgainst(t, "AvgPool2DBackwardInto (permuted)", AvgPool2DBackwardInto(sdx, sdy, c.p), xs, func(i []int) float64 { return dxAvg[flat(i)] },
				func([]int) (float64, float64) { return kk * 0x1p-23, 4 })
		})
	}
}

func TestPool2DPanics(t *testing.T) {
	x := New(1, 1, 4, 4)
	expectPanic(t, "tensor: MaxPool2D: invalid parameters {Kernel:[2 2] Stride:[0 0] Padding:[2 0] CeilMode:false ExcludePad:false} (kernel ≥ 1, stride ≥ 1, 0 ≤ padding ≤ kernel/2)",
		func() { MaxPool2D(x, PoolParams{Kernel: [2]int{2, 2}, Padding: [2]int{2, 0}}) })
	expectPanic(t, "tensor: AvgPool2D: shape [1 1 4 4]: kernel [5 1] larger than the padded input",
		func() { AvgPool2D(x, PoolParams{Kernel: [2]int{5, 1}}) })
	expectPanic(t, "tensor: AvgPool2D: shape [4 4]: want [N, C, H, W]",
		func() { AvgPool2D(New(4, 4), PoolParams{Kernel: [2]int{2, 2}}) })
	expectPanic(t, "tensor: MaxPool2DBackward: index 16 is not an element of an input plane of 16",
		func() {
			MaxPool2DBackward(New(1, 1, 2, 2), Full(16, 1, 1, 2, 2), []int{1, 1, 4, 4}, PoolParams{Kernel: [2]int{2, 2}})
		})
	expectPanic(t, "tensor: MaxPool2DBackward: index -1 is not an element of an input plane of 16",
		func() {
			MaxPool2DBackward(New(1, 1, 2, 2), Full(-1, 1, 1, 2, 2), []int{1, 1, 4, 4}, PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{1, 1}})
		})
	expectPanic(t, "tensor: MaxPool2DInto: shapes [1 1 4 4] give output [1 1 2 2], got [1 1 3 3]",
		func() { MaxPool2DInto(New(1, 1, 3, 3), nil, x, PoolParams{Kernel: [2]int{2, 2}}) })
}

// TestMaxPool2DBackwardForeignIndices gives the 2×2 backward indices that
// are valid but outside their windows (simd.MaxUnpool2x2 refuses them):
// each plane falls back to adding dy at its indices.
func TestMaxPool2DBackwardForeignIndices(t *testing.T) {
	dy := Arange(0, 8, 1).Reshape(2, 1, 2, 2)
	idx := FromSlice([]float32{0, 0, 5, 15, 3, 3, 3, 3}, 2, 1, 2, 2)
	dx := MaxPool2DBackward(dy, idx, []int{2, 1, 4, 4}, PoolParams{Kernel: [2]int{2, 2}})
	want := make([]float32, 32)
	want[0], want[5], want[15] = 0+1, 2, 3
	want[16+3] = 4 + 5 + 6 + 7
	if got := dx.Data(); !slices.Equal(got, want) {
		t.Fatalf("dx = %v, want %v", got, want)
	}
}

func TestPool2DAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	x := RandN(r, 8, 32, 28, 28)
	p := PoolParams{Kernel: [2]int{2, 2}}
	out, idx := MaxPool2D(x, p)
	dx := New(x.Shape()...)
	avg := New(out.Shape()...)
	for name, f := range map[string]func(){
		"MaxPool2DInto":         func() { MaxPool2DInto(out, idx, x, p) },
		"AvgPool2DInto":         func() { AvgPool2DInto(avg, x, p) },
		"MaxPool2DBackwardInto": func() { MaxPool2DBackwardInto(dx, out, idx, p) },
		"AvgPool2DBackwardInto": func() { AvgPool2DBackwardInto(dx, out, p) },
	} {
		noAllocs(t, name, f)
	}
}

// TestMaxPoolLargePlanes pools planes of more than 2²⁴ elements, where a
// float32 index rounds: MaxPool2D's indices for a 2×3 kernel on a
// 2×(2²³+2) plane came out rounded (the gradient then went to another
// element); they are now refused, naming the limit, and so is the
// backward pass. Without indices any plane pools, the 2×2 case included
// (simd's kernel refuses such planes: it panicked naming simd).
func TestMaxPoolLargePlanes(t *testing.T) {
	w := 1<<23 + 2 // 2·w = 2²⁴+4 elements
	shape := []int{1, 1, 2, w}
	k23 := PoolParams{Kernel: [2]int{2, 3}}
	limit := "would not be exact in float32 (MaxIndexPlane = 2²⁴)"
	for _, c := range []struct {
		op string
		f  func()
	}{
		{"MaxPool2D", func() { MaxPool2D(Scalar(1).BroadcastTo(shape...), k23) }},
		{"MaxPool2DInto", func() {
			s := Pool2DShape(Scalar(1).BroadcastTo(shape...), k23)
			MaxPool2DInto(nil, New(s[:]...), Scalar(1).BroadcastTo(shape...), k23)
		}},
		{"MaxPool2DBackward", func() {
			s := Pool2DShape(Scalar(1).BroadcastTo(shape...), k23)
			MaxPool2DBackward(New(s[:]...), New(s[:]...), shape, k23)
		}},
	} {
		want := fmt.Sprintf("tensor: %s: shape %v: indices into a plane of 2·%d elements %s", c.op, shape, w, limit)
		if msg := panicOf(c.f); !strings.HasPrefix(msg, want) {
			t.Errorf("%s on a plane of 2²⁴+4 elements: panic %q, want %q...", c.op, msg, want)
		}
	}
	// The largest plane with indices, 2²⁴ elements, pools exactly.
	x := New(1, 1, 1, 1<<24)
	xd := x.Data()
	xd[1<<24-1] = 1
	last := 1<<22 - 1 // the window of elements 2²⁴-4 .. 2²⁴-1
	if m, idx := MaxPool2D(x, PoolParams{Kernel: [2]int{1, 4}}); m.At(0, 0, 0, last) != 1 || idx.At(0, 0, 0, last) != 1<<24-1 {
		t.Errorf("plane of 2²⁴: last window max %v at %v, want 1 at %d", m.At(0, 0, 0, last), idx.At(0, 0, 0, last), 1<<24-1)
	}
	// Without indices, 2×2 and 2×3 windows on the 2×(2²³+2) plane.
	x = New(shape...)
	xd = x.Data()
	for i := range xd {
		xd[i] = float32(i*7919%1013) - 500
	}
	for _, p := range []PoolParams{{Kernel: [2]int{2, 2}}, k23} {
		s := Pool2DShape(x, p)
		out, _ := MaxPool2DInto(New(s[:]...), nil, x, p)
		od := out.Data()
		bad := 0
		for j := range od {
			want := float32(math.Inf(-1))
			for r := 0; r < 2; r++ {
				for c := j * p.Kernel[1]; c < (j+1)*p.Kernel[1]; c++ {
					want = max(want, xd[r*w+c])
				}
			}
			if od[j] != want && bad < 5 {
				bad++
				t.Errorf("kernel %v: window %d max %v, want %v", p.Kernel, j, od[j], want)
			}
		}
	}
}
