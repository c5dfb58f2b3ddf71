package cudaplugin

import (
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
)

func TestPlanTiles(t *testing.T) {
	for _, c := range []struct {
		m, n, k, gz, sms  int
		bm, gx, gy, split int
	}{
		{4096, 4096, 4096, 1, 132, 128, 32, 32, 1}, // large: 128×128 tiles
		{130, 4097, 64, 1, 132, 64, 65, 3, 2},      // 66 big blocks < 132 SMs: 64×64; 195 small ones, k in 2 parts
		{200, 200, 512, 1, 4, 128, 2, 2, 1},        // a small device keeps the big tile
		{1, 1, 1, 1, 132, 64, 1, 1, 1},
		{0, 5, 9, 1, 132, 64, 1, 0, 1},
		{64, 64, 64, 40, 132, 64, 1, 1, 2},        // a batch of 40 small products: k in 2 parts of 32
		{64, 100352, 576, 1, 132, 64, 1568, 1, 1}, // 64 output channels: half a big tile
		{128, 25088, 1152, 1, 132, 128, 196, 1, 1},
		{4096, 60, 64, 1, 1, 64, 1, 64, 1},
		{64, 3136, 576, 1, 132, 64, 49, 1, 7},    // 49 blocks on 132 SMs: k in 7 parts (2.5·132/49)
		{64, 49, 576, 1, 132, 64, 1, 1, 16},      // one block: at most 16 parts
		{64, 64, 96, 1, 132, 64, 1, 1, 3},        // parts at least 32 deep
		{64, 64, 63, 1, 132, 64, 1, 1, 1},        // k too short to split
		{64, 64, 4096, 40000, 132, 64, 1, 1, 1},  // enough blocks
		{512, 512, 1 << 20, 1, 132, 64, 8, 8, 6}, // 64 blocks: 6 parts
		{64, 12544, 576, 1, 132, 64, 196, 1, 2},  // 196 blocks: 2 parts
		{64, 17000, 576, 1, 132, 64, 266, 1, 1},  // two blocks a SM: no split
	} {
		p, err := planTiles(c.m, c.n, c.k, c.gz, c.sms)
		if err != nil {
			t.Fatal(err)
		}
		if p.cfg.bm != c.bm || p.gx != c.gx || p.gy != c.gy || p.gz != c.gz || p.splits != c.split {
			t.Errorf("planTiles(%d, %d, %d, %d, %d) = %+v; want %d tiles, grid %d×%d×%d, %d parts of k", c.m, c.n, c.k, c.gz, c.sms, p, c.bm, c.gx, c.gy, c.gz, c.split)
		}
		// The grid covers the product and no block is wholly outside it.
		if p.gx*p.cfg.bn < c.n || p.gy*p.cfg.bm < c.m || (p.gx-1)*p.cfg.bn >= max(c.n, 1) || (p.gy > 0 && (p.gy-1)*p.cfg.bm >= c.m) {
			t.Errorf("planTiles(%d, %d): grid %d×%d of %d×%d tiles does not fit", c.m, c.n, p.gx, p.gy, p.cfg.bm, p.cfg.bn)
		}
		if p.cfg.threads != (p.cfg.bm/8)*(p.cfg.bn/8) && p.cfg.threads != (p.cfg.bm/4)*(p.cfg.bn/4) {
			t.Errorf("threads %d do not match the register blocks", p.cfg.threads)
		}
		if p.gz*p.splits > maxGridYZ {
			t.Errorf("grid z %d×%d beyond CUDA's limit", p.gz, p.splits)
		}
	}
	if _, err := planTiles(65536*128+1, 8, 8, 1, 1); err == nil || !strings.Contains(err.Error(), "beyond CUDA's limits") {
		t.Errorf("a grid of more than 65535 rows of blocks: %v", err)
	}
	if _, err := planTiles(8, 8, 8, 70000, 1); err == nil {
		t.Errorf("a batch of 70000 in one grid accepted")
	}
}

// The matrix layouts the kernels read are internal/shape's MatrixLayout,
// tested there.
func TestVectorizable(t *testing.T) {
	if !vectorizable(8, 12, 96) || vectorizable(1, 12, 96) || vectorizable(0, 6, 0) {
		t.Errorf("vectorizable")
	}
}

func TestPlanMatMul(t *testing.T) {
	shapes := func(a, b *tensor.Tensor) matmulShape {
		return planMatMul(a.Shape(), a.Strides(), b.Shape(), b.Strides())
	}
	for _, c := range []struct{ a, b []int }{
		{[]int{3, 4}, []int{4, 5}},
		{[]int{4}, []int{4, 5}},
		{[]int{3, 4}, []int{4}},
		{[]int{4}, []int{4}},
		{[]int{2, 1, 3, 4}, []int{5, 4, 6}},
		{[]int{7, 3, 4}, []int{4, 2}},
	} {
		a, b := tensor.New(c.a...), tensor.New(c.b...)
		s := shapes(a, b)
		if want := tensor.MatMul(a, b).Shape(); !slices.Equal(s.out, want) {
			t.Errorf("%v @ %v: out %v, want %v", c.a, c.b, s.out, want)
		}
	}
	defer func() {
		if r := recover(); r != "cudaplugin: MatMul: shapes [3 4] and [5 6]: inner dimensions 4 and 5 differ" {
			t.Errorf("panic %v", r)
		}
	}()
	shapes(tensor.New(3, 4), tensor.New(5, 6))
}

func TestBatchOffsets(t *testing.T) {
	// a [2, 1, 3, 4] broadcast against batch [2, 5]: a's matrices repeat
	// along the second batch dimension.
	offs := batchOffsets([]int{2, 5}, []int{2, 1, 3, 4}, []int{12, 12, 4, 1})
	want := []int{0, 0, 0, 0, 0, 12, 12, 12, 12, 12}
	if !slices.Equal(offs, want) {
		t.Errorf("broadcast a: %v, want %v", offs, want)
	}
	if _, ok := uniformStride(offs); ok {
		t.Errorf("uniformStride accepted %v", offs)
	}
	// b [5, 4, 6]: batch [2, 5] lacks its first dimension.
	offs = batchOffsets([]int{2, 5}, []int{5, 4, 6}, []int{24, 6, 1})
	want = []int{0, 24, 48, 72, 96, 0, 24, 48, 72, 96}
	if !slices.Equal(offs, want) {
		t.Errorf("b: %v, want %v", offs, want)
	}
	offs = batchOffsets([]int{3}, []int{3, 4, 6}, []int{24, 6, 1})
	if s, ok := uniformStride(offs); !ok || s != 24 {
		t.Errorf("uniformStride(%v) = %d, %v", offs, s, ok)
	}
	if s, ok := uniformStride([]int{0, 0, 0}); !ok || s != 0 {
		t.Errorf("a broadcast operand is uniform with stride 0: %d, %v", s, ok)
	}
	if offs := batchOffsets(nil, []int{3, 4}, []int{4, 1}); !slices.Equal(offs, []int{0}) {
		t.Errorf("no batch: %v", offs)
	}
}

func TestPlanConv(t *testing.T) {
	for _, c := range []struct {
		x, w             []int
		stride, pad, dil [2]int
		groups           int
	}{
		{[]int{32, 64, 56, 56}, []int{64, 64, 3, 3}, [2]int{}, [2]int{1, 1}, [2]int{}, 0},
		{[]int{2, 4, 11, 10}, []int{6, 2, 3, 2}, [2]int{2, 1}, [2]int{0, 1}, [2]int{2, 1}, 2},
		{[]int{1, 3, 224, 224}, []int{64, 3, 7, 7}, [2]int{2, 2}, [2]int{3, 3}, [2]int{}, 1},
	} {
		g := planConv("Conv2D", c.x, c.w, c.stride, c.pad, c.dil, c.groups)
		p := tensor.ConvParams{Stride: c.stride, Padding: c.pad, Dilation: c.dil, Groups: c.groups}
		want := tensor.Conv2DShape(tensor.New(c.x...), tensor.New(c.w...), p)
		if got := [4]int{g.n, g.cout, g.oh, g.ow}; got != want {
			t.Errorf("planConv(%v, %v) gives %v, tensor %v", c.x, c.w, got, want)
		}
		if !g.fitsInt32() {
			t.Errorf("fitsInt32 false for %v", c.x)
		}
	}
	g := planConv("Conv2D", []int{32, 64, 56, 56}, []int{128, 64, 3, 3}, [2]int{}, [2]int{1, 1}, [2]int{}, 1)
	if m, n, k := g.gemm(); m != 128 || n != 32*56*56 || k != 64*9 {
		t.Errorf("gemm() = %d, %d, %d", m, n, k)
	}
	defer func() {
		if r, _ := recover().(string); !strings.HasPrefix(r, "cudaplugin: Conv2D: shapes [1 4 8 8] and [6 3 3 3] do not agree") {
			t.Errorf("panic %q", r)
		}
	}()
	planConv("Conv2D", []int{1, 4, 8, 8}, []int{6, 3, 3, 3}, [2]int{}, [2]int{}, [2]int{}, 1)
}

func TestPlace(t *testing.T) {
	prev, prevSource := dispatch.SetThresholds(dispatch.DefaultThresholds(), "test defaults")
	defer dispatch.SetThresholds(prev, prevSource)
	small := dispatch.WorkOf(dispatch.OpMatMul, 8, 8, 8)
	if place(small) != dispatch.OnCPU {
		t.Errorf("an 8³ product on host tensors went to the GPU")
	}
	small.Resident = true
	if place(small) != dispatch.OnGPU {
		t.Errorf("an 8³ product on device tensors left the device")
	}
	if big := dispatch.WorkOf(dispatch.OpMatMul, 8192, 8192, 8192); place(big) != dispatch.OnGPU {
		t.Errorf("an 8192³ product on host tensors stayed on the CPU under the default thresholds")
	}
	dispatch.SetThresholds(dispatch.CPUOnlyThresholds(), "cpu only")
	if big := dispatch.WorkOf(dispatch.OpMatMul, 8192, 8192, 8192); place(big) != dispatch.OnCPU {
		t.Errorf("CPU-only thresholds sent host work to the GPU")
	}
	if d := describe("NVIDIA H100"); !strings.Contains(d, "cuda NVIDIA H100: device tensors on the GPU") || !strings.Contains(d, "cpu only") {
		t.Errorf("describe: %s", d)
	}
}

// TestDeviceSizeLimits: sizes past the kernels' 32-bit ints are found
// before they wrap round in the conversion to C.int, and max pooling with indices refuses planes whose
// float32 indices would round, as tensor.MaxPool2D does. Host-side: the GPU
// methods call these before anything reaches the device.
func TestDeviceSizeLimits(t *testing.T) {
	if fitsInt32(4, 1<<31, 4) {
		t.Error("2^31 fits")
	}
	if !fitsInt32(1<<31-1, 1, 0) {
		t.Error("2^31-1 does not fit")
	}
	if fitsInt32(-1) {
		t.Error("a negative size fits")
	}
	checkPoolIndices("MaxPool2D", []int{1, 1, 4096, 4096})
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "cudaplugin: MaxPool2D: shape [1 1 4097 4096]: indices into a plane") {
			t.Errorf("plane of 4097·4096: panic %q", msg)
		}
	}()
	checkPoolIndices("MaxPool2D", []int{1, 1, 4097, 4096})
}
