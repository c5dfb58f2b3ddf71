package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lanesgo/lanes/bench/peers"
	"github.com/lanesgo/lanes/tensor"
)

// convShape is one convolution of the Conv2D table.
type convShape struct {
	name     string
	x, w     []int
	stride   int
	padding  int
	recorded float64 // PyTorch 1.13 CPU ms recorded in ANCHORS.md
}

var convShapes = []convShape{
	{"8x64x56x56 k3 p1", []int{8, 64, 56, 56}, []int{64, 64, 3, 3}, 1, 1, 33.13},
	{"32x3x224x224 k7 s2 p3", []int{32, 3, 224, 224}, []int{64, 3, 7, 7}, 2, 3, 304.67},
}

// torchConv times torch.nn.functional.conv2d (float32, GOMAXPROCS threads)
// on one shape: the median of rounds timed rounds after a warm-up, in ms.
const torchConv = `
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
n, c, h, w, o, k, s, p, rounds = map(int, sys.argv[2:])
x = torch.randn(n, c, h, w)
wt = torch.randn(o, c, k, k)
b = torch.randn(o)
with torch.no_grad():
    torch.nn.functional.conv2d(x, wt, b, stride=s, padding=p)
    ts = []
    for _ in range(rounds):
        t = time.perf_counter()
        torch.nn.functional.conv2d(x, wt, b, stride=s, padding=p)
        ts.append(time.perf_counter() - t)
ts.sort()
print(torch.__version__, ts[len(ts) // 2] * 1e3)
`

// runConv prints lanes' tensor.Conv2D against PyTorch's CPU conv2d timed
// in this run by the system python3 (or, without torch, the figure
// recorded in ANCHORS.md, labelled so).
func runConv(round time.Duration, rounds int, stat io.Writer) {
	procs := runtime.GOMAXPROCS(0)
	fmt.Printf("\n### Conv2D NCHW float32, %d threads, ms per call (median)\n\n", procs)
	printHeader([]string{"shape", "lanes tensor.Conv2D", "GFLOP/s", "PyTorch", "PyTorch ÷ lanes"})
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range convShapes {
		x, w, b := tensor.RandN(r, c.x...), tensor.RandN(r, c.w...), tensor.RandN(r, c.w[0])
		p := tensor.ConvParams{Stride: [2]int{c.stride, c.stride}, Padding: [2]int{c.padding, c.padding}}
		dst := tensor.Conv2D(x, w, b, p)
		t := peers.Measure(func() { tensor.Conv2DInto(dst, x, w, b, p) }, round, rounds) / 1e6
		o := dst.Shape()
		flops := 2 * float64(o[0]*o[1]*o[2]*o[3]*c.w[1]*c.w[2]*c.w[3])
		torch, label := c.recorded, "recorded"
		if ms, version, err := timeTorch(procs, c, rounds); err == nil {
			torch, label = ms, "torch "+version+", this run"
		}
		printRow([]string{c.name, fmt.Sprintf("%.2f", t), fmt.Sprintf("%.1f", flops/t/1e6),
			fmt.Sprintf("%.2f (%s)", torch, label), fmt.Sprintf("%.2fx", torch/t)})
		fmt.Fprintf(stat, "BenchmarkConv2D/%s-%d\t%d\t%.0f ns/op\t%.2f GFLOP/s\n",
			strings.ReplaceAll(c.name, " ", "_"), procs, 1, t*1e6, flops/t/1e6)
	}
}

// timeTorch runs torchConv; an error means no python3 with torch here.
func timeTorch(threads int, c convShape, rounds int) (ms float64, version string, err error) {
	args := []string{"-c", torchConv, strconv.Itoa(threads)}
	for _, v := range []int{c.x[0], c.x[1], c.x[2], c.x[3], c.w[0], c.w[2], c.stride, c.padding, max(rounds, 5)} {
		args = append(args, strconv.Itoa(v))
	}
	var out bytes.Buffer
	cmd := exec.Command("python3", args...)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return 0, "", err
	}
	f := strings.Fields(out.String())
	if len(f) != 2 {
		return 0, "", fmt.Errorf("unexpected output %q", out.String())
	}
	ms, err = strconv.ParseFloat(f[1], 64)
	return ms, f[0], err
}
