//go:build cudaemu

package nn

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lanesgo/lanes/cudaplugin"
	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/tensor"
)

// TestDataParallelNCCLEmulated trains the Fashion MLP with SGD on two
// emulated devices, one rank each, through NewDataParallelDevice and an
// NCCLComm on cudaplugin's NCCL stand-in (testdata/fakenccl.c, which
// adds in rank order): the ranks end with the same bits, and the
// parameters agree with dist's host DataParallel on the same global
// batches within 1e-5 relative (the device's kernels round as the host's
// do only up to order). It runs in a child process with two emulated
// devices and the stand-in library.
func TestDataParallelNCCLEmulated(t *testing.T) {
	if os.Getenv("LANES_NN_CHILD") != t.Name() {
		cc, err := exec.LookPath("cc")
		if err != nil {
			t.Skip("no C compiler to build the NCCL stand-in")
		}
		lib := filepath.Join(t.TempDir(), "libnccl.so.2")
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-pthread", "-O1", "-o", lib, "../cudaplugin/testdata/fakenccl.c").CombinedOutput(); err != nil {
			t.Fatalf("building the NCCL stand-in: %v\n%s", err, out)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "LANES_NN_CHILD="+t.Name(), "LANES_CUDAEMU_DEVICES=2", cudaplugin.NCCLLibraryEnv+"="+lib)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	c := dpCase{model: "mlp", rows: 256, batch: 32, steps: 12, sgd: true}
	host := c.trainLocal(t, 2, "", 0, false)
	var gs [2]*cudaplugin.GPU
	for i := range gs {
		g, err := cudaplugin.Open(i)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		gs[i] = g
	}
	out := make([][][]float32, 2)
	var mu sync.Mutex
	err := dist.RunLocal(2, func(comm dist.Comm) error {
		rank := comm.Rank()
		g := gs[rank]
		nc, err := g.NewNCCLComm(comm)
		if err != nil {
			return err
		}
		defer nc.Close()
		x, y := dpData(c.rows, false)
		m := c.newModel(uint64(1 + 100*rank))
		if err := To(m, g.Device()); err != nil {
			return err
		}
		opt := NewSGD(Params(m), 0.02)
		b := NewBatches(x, y, c.batch, rand.New(rand.NewPCG(5, 6)))
		b.Shard(rank, 2)
		dp, err := NewDataParallelDevice(m, nc, 64<<10)
		if err != nil {
			return err
		}
		tp := NewTape()
		for range c.steps {
			bx, by, ok := b.Next()
			if !ok {
				b.Reset()
				bx, by, _ = b.Next()
			}
			if bx, err = bx.To(g.Device()); err != nil {
				return err
			}
			if by, err = by.To(g.Device()); err != nil {
				return err
			}
			tp.Reset()
			loss := tp.CrossEntropy(m.Forward(tp, tp.Const(bx)), by)
			opt.ZeroGrad()
			if err := dp.Backward(tp, loss); err != nil {
				return err
			}
			opt.Step()
		}
		if err := To(m, tensor.CPU); err != nil {
			return err
		}
		mu.Lock()
		out[rank] = flatParams(m)
		mu.Unlock()
		return g.Sync()
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sameBits(out[0], out[1]) {
		t.Fatal("the two ranks' parameters differ")
	}
	d := maxRelDiff(out[0], host[0])
	t.Logf("%d steps: within %.2g relative of the host DataParallel", c.steps, d)
	if d > 1e-5 {
		t.Fatalf("parameters %.3g relative from the host DataParallel's, want ≤ 1e-5", d)
	}
}
