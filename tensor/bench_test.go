package tensor

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/lanesgo/lanes/simd"
)

// The benchmarks pair each tensor operation (GOMAXPROCS goroutines) with
// its anchor: the same elements through the simd kernel on one goroutine
// (BenchmarkX/simd-1thread), so the ratio comes from one run.

func oneThread(b *testing.B) func() {
	prev := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(prev) }
}

func BenchmarkBroadcastAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, row, dst := RandN(r, 4096, 1024), RandN(r, 1024), New(4096, 1024)
	b.Run("tensor/4096x1024+1024", func(b *testing.B) {
		b.SetBytes(3 * 4 * 4096 * 1024)
		for b.Loop() {
			AddInto(dst, x, row)
		}
	})
	b.Run("simd-1thread/4096x1024+4096x1024", func(b *testing.B) {
		defer oneThread(b)()
		full := row.BroadcastTo(4096, 1024).Clone().Data()
		b.SetBytes(3 * 4 * 4096 * 1024)
		for b.Loop() {
			simd.Add(dst.Data(), x.Data(), full)
		}
	})
}

func BenchmarkSoftmax(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	x, dst := RandN(r, 4096, 1024), New(4096, 1024)
	b.Run("tensor/4096x1024", func(b *testing.B) {
		b.SetBytes(2 * 4 * 4096 * 1024)
		for b.Loop() {
			SoftmaxInto(dst, x, -1)
		}
	})
	b.Run("simd-1thread/4096x1024", func(b *testing.B) {
		defer oneThread(b)()
		xd, dd := x.Data(), dst.Data()
		b.SetBytes(2 * 4 * 4096 * 1024)
		for b.Loop() {
			for i := 0; i < 4096; i++ {
				simd.Softmax(dd[i*1024:(i+1)*1024], xd[i*1024:(i+1)*1024])
			}
		}
	})
}

// BenchmarkBatchedMatMul compares 64 products of 128×128 matrices with one
// Sgemm of the same multiply-adds (8192×128 @ 128×128), both on GOMAXPROCS
// goroutines.
func BenchmarkBatchedMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	a, w, dst := RandN(r, 64, 128, 128), RandN(r, 64, 128, 128), New(64, 128, 128)
	flops := 2 * 64 * 128 * 128 * 128.0
	b.Run("tensor/64x128x128x128", func(b *testing.B) {
		for b.Loop() {
			MatMulInto(dst, a, w)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("sgemm/8192x128x128", func(b *testing.B) {
		for b.Loop() {
			simd.Sgemm(false, false, 8192, 128, 128, 1, a.Data(), 128, w.Data()[:128*128], 128, 0, dst.Data(), 128)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkConv2D times the two convolutions (GFLOP/s = 2·N·Cout·
// OH·OW·C·kh·kw per call). The anchor is PyTorch 1.13's CPU conv2d on the
// same shapes, timed in the same run by bench/cmd/lanes (-conv), or
// recorded in ANCHORS.md.
func BenchmarkConv2D(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, c := range []struct {
		name string
		x, w []int
		p    ConvParams
	}{
		{"8x64x56x56_k3_p1", []int{8, 64, 56, 56}, []int{64, 64, 3, 3}, ConvParams{Padding: [2]int{1, 1}}},
		{"32x3x224x224_k7_s2_p3", []int{32, 3, 224, 224}, []int{64, 3, 7, 7}, ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{3, 3}}},
	} {
		x, w, bias := RandN(r, c.x...), RandN(r, c.w...), RandN(r, c.w[0])
		g := planConv("bench", c.x, c.w, c.p)
		os := g.outShape()
		dst := New(os[:]...)
		flops := 2 * float64(g.n*g.cout*g.p*g.k)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				Conv2DInto(dst, x, w, bias, c.p)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkConv2DPath compares the shifted and im2col paths on stride-1
// 3×3 convolutions with C input channels, to place shiftedMinChannels.
func BenchmarkConv2DPath(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	defer func(v int) { shiftedMinChannels = v }(shiftedMinChannels)
	for _, c := range []struct{ n, c, hw, cout int }{{64, 1, 28, 32}, {64, 4, 28, 32}, {16, 8, 56, 64}, {16, 16, 56, 64}, {64, 32, 14, 64}, {8, 64, 56, 64}} {
		x, w := RandN(r, c.n, c.c, c.hw, c.hw), RandN(r, c.cout, c.c, 3, 3)
		p := ConvParams{Padding: [2]int{1, 1}}
		dst := New(c.n, c.cout, c.hw, c.hw)
		flops := 2 * float64(c.n*c.cout*c.hw*c.hw*c.c*9)
		for _, path := range []string{"shifted", "im2col"} {
			b.Run(fmt.Sprintf("%dx%dx%dx%d_to_%d/%s", c.n, c.c, c.hw, c.hw, c.cout, path), func(b *testing.B) {
				shiftedMinChannels = 1
				if path == "im2col" {
					shiftedMinChannels = 1 << 30
				}
				for b.Loop() {
					Conv2DInto(dst, x, w, nil, p)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMaxPool2D pools the two feature maps of nn's Fashion-MNIST CNN
// (2×2 windows, stride 2), with indices as in training.
func BenchmarkMaxPool2D(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][]int{{64, 32, 28, 28}, {64, 64, 14, 14}} {
		x := RandN(r, s...)
		p := PoolParams{Kernel: [2]int{2, 2}}
		out, idx := MaxPool2D(x, p)
		b.Run(fmt.Sprint(s), func(b *testing.B) {
			b.SetBytes(int64(4 * x.Len()))
			for b.Loop() {
				MaxPool2DInto(out, idx, x, p)
			}
		})
	}
}

// BenchmarkConvTraining times the three passes of a training step (forward
// with bias and ReLU, input gradient, weight gradient) on the two
// convolutions of nn's Fashion-MNIST CNN, batch 64, 3×3, padding 1
// (GFLOP/s = 2·N·Cout·OH·OW·C·9 per pass). The first convolution's input
// gradient is not needed in training and is not timed.
func BenchmarkConvTraining(b *testing.B) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, c := range []struct {
		name string
		x, w []int
	}{
		{"64x1x28x28_to_32", []int{64, 1, 28, 28}, []int{32, 1, 3, 3}},
		{"64x32x14x14_to_64", []int{64, 32, 14, 14}, []int{64, 32, 3, 3}},
	} {
		p := ConvParams{Padding: [2]int{1, 1}, ReLU: true}
		x, w, bias := RandN(r, c.x...), RandN(r, c.w...), RandN(r, c.w[0])
		g := planConv("bench", c.x, c.w, p)
		os := g.outShape()
		y, dy, dx, dw := New(os[:]...), RandN(r, os[:]...), New(c.x...), New(c.w...)
		flops := 2 * float64(g.n*g.cout*g.p*g.k)
		for _, pass := range []string{"forward", "input", "weight"} {
			if pass == "input" && c.x[1] == 1 {
				continue
			}
			b.Run(c.name+"/"+pass, func(b *testing.B) {
				for b.Loop() {
					switch pass {
					case "forward":
						Conv2DInto(y, x, w, bias, p)
					case "input":
						Conv2DBackwardInputInto(dx, dy, w, p)
					case "weight":
						Conv2DBackwardWeightInto(dw, dy, x, p)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkMoments times Mean and Var over all of a 1024×1024 tensor, over
// its rows (axis 1: each output a contiguous run) and over its columns
// (axis 0: each run adds into a row of outputs).
func BenchmarkMoments(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 7))
	x := RandN(r, 1024, 1024)
	AddScalarInto(x, x, 3)
	for _, c := range []struct {
		name string
		axes []int
	}{{"all", nil}, {"axis1", []int{1}}, {"axis0", []int{0}}} {
		b.Run("Mean/1024x1024/"+c.name, func(b *testing.B) {
			b.SetBytes(4 * 1024 * 1024)
			for b.Loop() {
				Mean(x, false, c.axes...)
			}
		})
		b.Run("Var/1024x1024/"+c.name, func(b *testing.B) {
			b.SetBytes(4 * 1024 * 1024)
			for b.Loop() {
				Var(x, 0, false, c.axes...)
			}
		})
	}
}

// BenchmarkNorms times the forward and backward passes of LayerNorm over
// rows of 768 (a transformer's, 1024 rows) and of BatchNorm in training
// over the CNN's first feature map (64×32×28×28), with gamma and beta.
func BenchmarkNorms(b *testing.B) {
	r := rand.New(rand.NewPCG(8, 8))
	x := RandN(r, 1024, 768)
	lp := LayerNormParams{Gamma: RandN(r, 768), Beta: RandN(r, 768)}
	y, s := LayerNorm(x, lp)
	b.Run("LayerNorm/1024x768", func(b *testing.B) {
		b.SetBytes(2 * 4 * 1024 * 768)
		for b.Loop() {
			LayerNormInto(y, s, x, lp)
		}
	})
	xb := RandN(r, 64, 32, 28, 28)
	bp := BatchNormParams{Gamma: RandN(r, 32), Beta: RandN(r, 32), RunningMean: New(32), RunningVar: Ones(32), Training: true}
	yb, sb := BatchNorm(xb, bp)
	b.Run("BatchNorm/64x32x28x28", func(b *testing.B) {
		b.SetBytes(2 * 4 * int64(xb.Len()))
		for b.Loop() {
			BatchNormInto(yb, sb, xb, bp)
		}
	})
	dy, dx, dg, db := RandN(r, 1024, 768), New(1024, 768), New(768), New(768)
	b.Run("LayerNormBackward/1024x768", func(b *testing.B) {
		b.SetBytes(3 * 4 * 1024 * 768)
		for b.Loop() {
			LayerNormBackwardInto(dx, dg, db, dy, x, s, lp)
		}
	})
	dyb, dxb, dgb, dbb := RandN(r, xb.Shape()...), New(xb.Shape()...), New(32), New(32)
	b.Run("BatchNormBackward/64x32x28x28", func(b *testing.B) {
		b.SetBytes(3 * 4 * int64(xb.Len()))
		for b.Loop() {
			BatchNormBackwardInto(dxb, dgb, dbb, dyb, xb, sb, bp)
		}
	})
}
