//go:build cuda || cudaemu

// Command gpu-check checks cudaplugin's kernels against lanes' CPU path on
// random data and measures them: SGEMM and Conv2D GFLOP/s by size
// (device-resident and offloaded), host↔device GB/s, the overhead of a
// device-resident 1-element op, and, when python3 with a CUDA build of
// PyTorch is installed, cuBLAS and cuDNN in the same run with TF32 off.
// Built by `make gpu-check` (static CUDA runtime: copy bin/gpu-check to
// the NVIDIA machine). It prints a Markdown table; -o also writes it to a
// file (bench/results/gpu-check-<device>.md).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/lanesgo/lanes/cudaplugin"
	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
)

var (
	outFile = flag.String("o", "", "also write the report to this file")
	quick   = flag.Bool("quick", false, "smaller sizes and fewer repetitions")
	noTorch = flag.Bool("notorch", false, "skip the PyTorch comparison")
)

func main() {
	flag.Parse()
	g, err := cudaplugin.Open(0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpu-check: %v\n", err)
		os.Exit(2)
	}
	defer g.Close()
	var b bytes.Buffer
	w := io.MultiWriter(os.Stdout, &b)
	info := g.Info()
	fmt.Fprintf(w, "# gpu-check: %s\n\n", info.Name)
	fmt.Fprintf(w, "```\n%s```\n\n", dispatch.Report())
	failed := checks(w, g)
	bench(w, g)
	if !*noTorch {
		torch(w)
	}
	if *outFile != "" {
		if err := os.WriteFile(*outFile, b.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if failed {
		os.Exit(1)
	}
}

// maxErr returns the largest |got - want| / (scale + |want|).
func maxErr(got, want, scale *tensor.Tensor) float64 {
	if got.Device() != tensor.CPU {
		got, _ = got.To(tensor.CPU)
	}
	gd, wd, sd := got.Contiguous().Data(), want.Contiguous().Data(), scale.Contiguous().Data()
	e := 0.0
	for i := range gd {
		d := math.Abs(float64(gd[i])-float64(wd[i])) / (float64(sd[i]) + math.Abs(float64(wd[i])) + 1e-30)
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		e = max(e, d)
	}
	return e
}

func checks(w io.Writer, g *cudaplugin.GPU) (failed bool) {
	r := rand.New(rand.NewPCG(1, 2))
	fmt.Fprintf(w, "## Correctness (random normal data, error relative to Σ|a·b| + |result|, bound 1e-5)\n\n| check | max error | result |\n|---|---|---|\n")
	row := func(name string, e float64, err error) {
		res := "ok"
		if err != nil || !(e <= 1e-5) {
			res, failed = "FAIL", true
		}
		if err != nil {
			res += ": " + err.Error()
		}
		fmt.Fprintf(w, "| %s | %.2e | %s |\n", name, e, res)
	}
	// The last three run with k split over several blocks (split-K).
	for _, s := range [][3]int{{1, 1, 1}, {127, 129, 131}, {512, 512, 512}, {1000, 1000, 4096}, {64, 4096, 4096}, {64, 64, 4096}, {130, 70, 3000}} {
		a, bb := tensor.RandN(r, s[0], s[2]), tensor.RandN(r, s[2], s[1])
		want, scale := tensor.MatMul(a, bb), tensor.MatMul(tensor.Abs(a), tensor.Abs(bb))
		dst := tensor.New(want.Shape()...)
		err := g.MatMul(dst, a, bb)
		row(fmt.Sprintf("SGEMM %dx%dx%d offloaded", s[0], s[1], s[2]), maxErr(dst, want, scale), err)
		da, _ := a.To(g.Device())
		db, _ := bb.To(g.Device())
		dd, _ := g.New(want.Shape()...)
		err = g.MatMul(dd, da, db)
		row(fmt.Sprintf("SGEMM %dx%dx%d resident", s[0], s[1], s[2]), maxErr(dd, want, scale), err)
	}
	at, bt := tensor.RandN(r, 300, 200), tensor.RandN(r, 250, 300)
	want := tensor.MatMul(at.T(), bt.T())
	dt := tensor.New(want.Shape()...)
	err := g.MatMul(dt, at.T(), bt.T())
	row("SGEMM transposed 200x250x300", maxErr(dt, want, tensor.MatMul(tensor.Abs(at.T()), tensor.Abs(bt.T()))), err)
	for _, c := range []struct {
		x, wt []int
		p     tensor.ConvParams
	}{
		{[]int{32, 64, 56, 56}, []int{64, 64, 3, 3}, tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}},
		{[]int{8, 3, 224, 224}, []int{64, 3, 7, 7}, tensor.ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{3, 3}}},
		{[]int{4, 32, 28, 28}, []int{64, 16, 3, 3}, tensor.ConvParams{Padding: [2]int{2, 2}, Dilation: [2]int{2, 2}, Groups: 2}},
		// Small grids: k split over several blocks.
		{[]int{1, 64, 56, 56}, []int{64, 64, 3, 3}, tensor.ConvParams{Padding: [2]int{1, 1}, ReLU: true}},
		{[]int{1, 256, 14, 14}, []int{256, 256, 3, 3}, tensor.ConvParams{Padding: [2]int{1, 1}}},
		{[]int{2, 64, 9, 9}, []int{96, 32, 3, 3}, tensor.ConvParams{Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, Groups: 2, ReLU: true}},
	} {
		x, wt, bias := tensor.RandN(r, c.x...), tensor.RandN(r, c.wt...), tensor.RandN(r, c.wt[0])
		want := tensor.Conv2D(x, wt, bias, c.p)
		q := c.p
		q.ReLU = false
		scale := tensor.Conv2D(tensor.Abs(x), tensor.Abs(wt), tensor.Abs(bias), q)
		dx, _ := x.To(g.Device())
		dw, _ := wt.To(g.Device())
		db, _ := bias.To(g.Device())
		dd, _ := g.New(want.Shape()...)
		err := g.Conv2D(dd, dx, dw, db, c.p)
		row(fmt.Sprintf("Conv2D %v * %v %+v", c.x, c.wt, c.p), maxErr(dd, want, scale), err)
	}
	x, y := tensor.RandN(r, 16, 64, 28, 28), tensor.RandN(r, 16, 64, 28, 28)
	dx, _ := x.To(g.Device())
	dy, _ := y.To(g.Device())
	out, _ := g.New(x.Shape()...)
	zero := tensor.New(x.Shape()...)
	err = g.Add(out, dx, dy)
	row("Add", maxErr(out, tensor.Add(x, y), zero), err)
	err = g.Mul(out, dx, dy)
	row("Mul", maxErr(out, tensor.Mul(x, y), zero), err)
	err = g.SoftmaxRows(out, dx)
	row("SoftmaxRows", maxErr(out, tensor.Softmax(x, -1), zero), err)
	pp := tensor.PoolParams{Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}}
	wm, _ := tensor.MaxPool2D(x, pp)
	pm, _ := g.New(wm.Shape()...)
	err = g.MaxPool2D(pm, nil, dx, pp)
	row("MaxPool2D", maxErr(pm, wm, tensor.New(wm.Shape()...)), err)
	err = g.AvgPool2D(pm, dx, pp)
	row("AvgPool2D", maxErr(pm, tensor.AvgPool2D(x, pp), tensor.AvgPool2D(tensor.Abs(x), pp)), err)
	fmt.Fprintln(w)
	return failed
}

// timeIt returns the seconds per call of f, synchronized, after a warm-up.
func timeIt(g *cudaplugin.GPU, reps int, f func() error) float64 {
	if err := f(); err != nil {
		return math.NaN()
	}
	g.Sync()
	t0 := time.Now()
	for range reps {
		if err := f(); err != nil {
			return math.NaN()
		}
	}
	if err := g.Sync(); err != nil {
		return math.NaN()
	}
	return time.Since(t0).Seconds() / float64(reps)
}

func bench(w io.Writer, g *cudaplugin.GPU) {
	r := rand.New(rand.NewPCG(3, 4))
	sizes, reps := []int{256, 512, 1024, 2048, 4096}, 10
	if *quick {
		sizes, reps = []int{256, 1024}, 3
	}
	fmt.Fprintf(w, "## SGEMM (square, FP32), GFLOP/s\n\n| n | lanes CUDA resident | lanes CUDA offloaded (with transfers) | lanes CPU |\n|---|---|---|---|\n")
	for _, n := range sizes {
		a, b := tensor.RandN(r, n, n), tensor.RandN(r, n, n)
		da, _ := a.To(g.Device())
		db, _ := b.To(g.Device())
		dd, _ := g.New(n, n)
		flops := 2 * float64(n) * float64(n) * float64(n)
		res := timeIt(g, reps, func() error { return g.MatMul(dd, da, db) })
		host := tensor.New(n, n)
		off := timeIt(g, max(1, reps/2), func() error { return g.MatMul(host, a, b) })
		cpuReps := 1
		t0 := time.Now()
		for range cpuReps {
			tensor.MatMulInto(host, a, b)
		}
		cpu := time.Since(t0).Seconds() / float64(cpuReps)
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.0f |\n", n, flops/res/1e9, flops/off/1e9, flops/cpu/1e9)
	}
	fmt.Fprintf(w, "\n## Conv2D 32x64x56x56, 3x3, 64 out, pad 1 (FP32)\n\n")
	x, wt, bias := tensor.RandN(r, 32, 64, 56, 56), tensor.RandN(r, 64, 64, 3, 3), tensor.RandN(r, 64)
	p := tensor.ConvParams{Padding: [2]int{1, 1}}
	dx, _ := x.To(g.Device())
	dw, _ := wt.To(g.Device())
	db, _ := bias.To(g.Device())
	dd, _ := g.New(32, 64, 56, 56)
	flops := 2 * 32 * 64 * 56 * 56 * 64 * 9.0
	sec := timeIt(g, reps, func() error { return g.Conv2D(dd, dx, dw, db, p) })
	fmt.Fprintf(w, "lanes CUDA resident: %.3f ms, %.0f GFLOP/s\n\n", sec*1e3, flops/sec/1e9)

	fmt.Fprintf(w, "## Transfers and overhead\n\n")
	big := tensor.RandN(r, 64<<20) // 256 MiB, touched
	const gb = 0.268435456
	var h2d, d2hNew, d2h []float64
	for range 3 {
		t0 := time.Now()
		dbig, err := big.To(g.Device())
		if err != nil {
			fmt.Fprintf(w, "- transfers: %v\n", err)
			break
		}
		h2d = append(h2d, gb/time.Since(t0).Seconds())
		t0 = time.Now()
		if _, err := dbig.To(tensor.CPU); err != nil {
			fmt.Fprintf(w, "- transfers: %v\n", err)
			break
		}
		d2hNew = append(d2hNew, gb/time.Since(t0).Seconds())
		mem, off, _ := tensor.DeviceView(dbig)
		t0 = time.Now()
		if err := mem.CopyToHost(big.Data(), off); err != nil {
			fmt.Fprintf(w, "- transfers: %v\n", err)
			break
		}
		d2h = append(d2h, gb/time.Since(t0).Seconds())
	}
	if len(d2h) > 0 {
		fmt.Fprintf(w, "- 256 MiB, pageable Go memory, median of %d: H2D %.1f GB/s (Tensor.To); D2H %.1f GB/s into memory already touched (DeviceMemory.CopyToHost), %.1f GB/s with Tensor.To(CPU), which allocates the host tensor and faults its pages in\n",
			len(d2h), median(h2d), median(d2h), median(d2hNew))
	}
	one, _ := g.New(1)
	n := 10000
	per := timeIt(g, n, func() error { return g.Add(one, one, one) })
	fmt.Fprintf(w, "- device-resident 1-element Add: %.1f µs per op (%d ops queued, one synchronization)\n", per*1e6, n)
	sync1 := timeIt(g, 1000, func() error {
		if err := g.Add(one, one, one); err != nil {
			return err
		}
		return g.Sync()
	})
	fmt.Fprintf(w, "- the same with a synchronization per op: %.1f µs\n\n", sync1*1e6)
}

const torchScript = `
import time, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0)))
def timeit(f, reps):
    f(); torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps): f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps
for n in SIZES:
    a = torch.randn(n, n, device=dev); b = torch.randn(n, n, device=dev)
    s = timeit(lambda: torch.mm(a, b), 10)
    print("| %d | %.0f |" % (n, 2 * n**3 / s / 1e9))
x = torch.randn(32, 64, 56, 56, device=dev); w = torch.randn(64, 64, 3, 3, device=dev); b = torch.randn(64, device=dev)
s = timeit(lambda: torch.nn.functional.conv2d(x, w, b, padding=1), 10)
print("conv %.3f ms, %.0f GFLOP/s" % (s * 1e3, 2 * 32 * 64 * 56 * 56 * 64 * 9 / s / 1e9))
`

func torch(w io.Writer) {
	sizes := "[256, 512, 1024, 2048, 4096]"
	if *quick {
		sizes = "[256, 1024]"
	}
	cmd := exec.Command("python3", "-c", strings.Replace(torchScript, "SIZES", sizes, 1))
	out, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Fprintf(w, "## PyTorch (cuBLAS/cuDNN)\n\nnot run: %v\n%s\n", err, lastLines(string(out), 3))
		return
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	fmt.Fprintf(w, "## PyTorch in the same run (%s), TF32 off\n\n| n | cuBLAS SGEMM GFLOP/s |\n|---|---|\n", lines[0])
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "conv") {
			fmt.Fprintf(w, "\ncuDNN Conv2D 32x64x56x56 3x3: %s\n", strings.TrimPrefix(l, "conv "))
			continue
		}
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
