//go:build cudaemu

package cudaplugin

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/tensor"
)

// fakeNCCL builds testdata/fakenccl.c, an NCCL stand-in for ranks that
// are threads of this process, and returns the library's path.
func fakeNCCL(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build the NCCL stand-in")
	}
	lib := filepath.Join(t.TempDir(), "libnccl.so.2")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-pthread", "-O1", "-o", lib, "testdata/fakenccl.c").CombinedOutput(); err != nil {
		t.Fatalf("building the NCCL stand-in: %v\n%s", err, out)
	}
	return lib
}

// TestNCCLCollectives runs the Go side of NCCLComm on two emulated
// devices, one rank each, against the stand-in library: the id travels
// through dist's group, and every collective's pointers, lengths, types
// and roots reach NCCL right (the stand-in adds in rank order, so the
// sums are exact to compare). With NCCL before 2.10 (no ncclAvg), Mean is
// the sum scaled on the device.
func TestNCCLCollectives(t *testing.T) {
	for _, version := range []string{"21803", "20903"} {
		t.Run("version="+version, func(t *testing.T) {
			lib := fakeNCCL(t)
			if !inChild(t, "LANES_CUDAEMU_DEVICES=2", NCCLLibraryEnv+"="+lib, "FAKE_NCCL_VERSION="+version) {
				return
			}
			testNCCLCollectives(t)
		})
	}
}

func testNCCLCollectives(t *testing.T) {
	var gs [2]*GPU
	for i := range gs {
		g, err := Open(i)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		gs[i] = g
	}
	const n = 1000
	vals := func(rank int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i)*0.1 + float32(rank)*1e-3 + 1/float32(3+rank)
		}
		return v
	}
	// Device tensors are made here, one device at a time.
	var sum, mean, bc, src [2]*tensor.Tensor
	var gather [2]*tensor.Tensor
	for r, g := range gs {
		var err error
		mk := func(data []float32, shape ...int) *tensor.Tensor {
			d, e := tensor.FromSlice(data, shape...).To(g.Device())
			if e != nil {
				err = e
			}
			return d
		}
		sum[r] = mk(vals(r), 10, 100)
		mean[r] = mk(vals(r), n)
		bc[r] = mk(vals(r), n)
		src[r] = mk(vals(r)[:7], 7)
		gather[r] = mk(make([]float32, 14), 2, 7)
		if err != nil {
			t.Fatal(err)
		}
	}
	err := dist.RunLocal(2, func(c dist.Comm) error {
		r := c.Rank()
		nc, err := gs[r].NewNCCLComm(c)
		if err != nil {
			return err
		}
		defer nc.Close()
		if nc.Rank() != r || nc.Size() != 2 {
			return fmt.Errorf("rank %d: NCCLComm says rank %d of %d", r, nc.Rank(), nc.Size())
		}
		if err := nc.AllReduce(sum[r], dist.Sum); err != nil {
			return err
		}
		if err := nc.AllReduce(mean[r], dist.Mean); err != nil {
			return err
		}
		if err := nc.Broadcast(bc[r], 1); err != nil {
			return err
		}
		if err := nc.AllGather(gather[r], src[r]); err != nil {
			return err
		}
		if err := nc.AllReduce(tensor.New(3), dist.Sum); err == nil || !strings.Contains(err.Error(), "on the host") {
			return fmt.Errorf("AllReduce of a host tensor: %v, want an error saying it is on the host", err)
		}
		return gs[r].Sync()
	})
	if err != nil {
		t.Fatal(err)
	}
	v0, v1 := vals(0), vals(1)
	for r := range gs {
		s, m, b, a := sum[r].Data(), mean[r].Data(), bc[r].Data(), gather[r].Data()
		for i := range n {
			if want := v0[i] + v1[i]; s[i] != want {
				t.Fatalf("rank %d: Sum[%d] = %v, want %v", r, i, s[i], want)
			}
			if want := (v0[i] + v1[i]) * 0.5; m[i] != want {
				t.Fatalf("rank %d: Mean[%d] = %v, want %v", r, i, m[i], want)
			}
			if b[i] != v1[i] {
				t.Fatalf("rank %d: Broadcast from 1 [%d] = %v, want %v", r, i, b[i], v1[i])
			}
		}
		for i := range 14 {
			if want := vals(i / 7)[i%7]; a[i] != want {
				t.Fatalf("rank %d: AllGather[%d] = %v, want %v", r, i, a[i], want)
			}
		}
	}
}

// TestNCCLMisuse: programmer errors panic naming the method; a closed
// communicator returns an error.
func TestNCCLMisuse(t *testing.T) {
	lib := fakeNCCL(t)
	if !inChild(t, NCCLLibraryEnv+"="+lib) {
		return
	}
	g := requireGPU(t)
	id, err := NewNCCLID()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := g.NewNCCLCommID(id, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := tensor.Ones(4, 6).To(g.Device())
	panics := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			msg := fmt.Sprint(recover())
			if !strings.Contains(msg, want) {
				t.Errorf("%s: panic %q, want one containing %q", name, msg, want)
			}
		}()
		f()
	}
	panics("strided", "not contiguous", func() { nc.AllReduce(x.T(), dist.Sum) })
	panics("root", "root 1 of 1", func() { nc.Broadcast(x, 1) })
	panics("gather", "not 1 times", func() { nc.AllGather(x, tensor.New(3)) })
	panics("rank", "rank 2 of size 2", func() { g.NewNCCLCommID(id, 2, 2) })
	if err := nc.AllReduce(x, dist.Sum); err != nil {
		t.Fatal(err)
	}
	if got := x.Data(); got[0] != 1 {
		t.Errorf("one-rank AllReduce changed the data: %v", got[0])
	}
	if err := nc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := nc.AllReduce(x, dist.Sum); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("AllReduce after Close: %v", err)
	}
	_ = errors.Is
}
