package tensortest_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

const dev tensor.Device = 7

// TestBackendComplete checks that the stand-in implements every family
// of tensor.Backend: a family added to tensor fails here until it does.
// Graph is the exception: without it a device runs each step eagerly,
// which is what a stand-in on the host does.
func TestBackendComplete(t *testing.T) {
	b := reflect.ValueOf(*tensortest.NewHostDevice(dev).Backend())
	for i := range b.NumField() {
		if b.Field(i).IsNil() != (b.Type().Field(i).Name == "Graph") {
			t.Errorf("HostDevice's Backend: %s is nil: %v", b.Type().Field(i).Name, b.Field(i).IsNil())
		}
	}
	// The CPU's has every family too (and no Memory, no Graph).
	c := reflect.ValueOf(tensor.CPUBackend())
	for i := range c.NumField() {
		if name := c.Type().Field(i).Name; c.Field(i).IsNil() != (name == "Memory" || name == "Graph") {
			t.Errorf("CPUBackend: %s is nil: %v", name, c.Field(i).IsNil())
		}
	}
}

// to copies h to d's device, failing the test if it cannot.
func to(t *testing.T, h *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	x, err := h.To(dev)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// back copies x, which must be on dev, to the host.
func back(t *testing.T, what string, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	if x.Device() != dev {
		t.Fatalf("%s: result on %v, want %v", what, x.Device(), dev)
	}
	h, err := x.To(tensor.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func want(t *testing.T, c tensortest.Counts, up, upBytes, down, downBytes, allocs int64, calls map[string]int64) {
	t.Helper()
	if c.Uploads != up || c.UploadBytes != upBytes || c.Downloads != down || c.DownloadBytes != downBytes || c.Allocs != allocs || !reflect.DeepEqual(c.Calls, calls) {
		t.Errorf("counts %+v, want %d uploads (%d bytes), %d downloads (%d bytes), %d allocations, calls %v", c, up, upBytes, down, downBytes, allocs, calls)
	}
}

// TestCounts checks the counts of transfers, allocations and family
// calls, and that results stay on the device.
func TestCounts(t *testing.T) {
	d := tensortest.Register(t, dev)
	r := rand.New(rand.NewPCG(1, 2))
	a := tensor.RandN(r, 3, 4)
	da := to(t, a)
	want(t, d.Counts(), 1, 48, 0, 0, 1, map[string]int64{})
	e := tensor.Exp(da)
	s := tensor.Sum(e, false, 1)
	want(t, d.Counts(), 1, 48, 0, 0, 3, map[string]int64{"Elementwise.Unary": 1, "Reduce.Reduce": 1})
	if got, w := back(t, "Sum(Exp)", s), tensor.Sum(tensor.Exp(a), false, 1); !slices.Equal(got.Data(), w.Data()) {
		t.Errorf("Sum(Exp) on the device = %v, want %v", got, w)
	}
	if v := e.At(1, 2); v != tensor.Exp(a).At(1, 2) {
		t.Errorf("At = %v", v)
	}
	want(t, d.Counts(), 1, 48, 2, 16, 3, map[string]int64{"Elementwise.Unary": 1, "Reduce.Reduce": 1})
	if c := d.Counts(); c.Kernels() != 2 || c.Offloads != 0 {
		t.Errorf("Kernels() = %d, Offloads %d", c.Kernels(), c.Offloads)
	}
	d.Reset()
	want(t, d.Counts(), 0, 0, 0, 0, 0, map[string]int64{})
}

// TestViews checks that the stand-in reads and writes device tensors
// through their strides: transposed, sliced and broadcast operands, a
// strided dst, a 0-d host scalar.
func TestViews(t *testing.T) {
	d := tensortest.Register(t, dev)
	r := rand.New(rand.NewPCG(3, 4))
	a, b, c := tensor.RandN(r, 5, 6), tensor.RandN(r, 6), tensor.RandN(r, 6, 5)
	da, db, dc := to(t, a), to(t, b), to(t, c)
	dst := to(t, tensor.Full(-1, 6, 5))
	for _, k := range []struct {
		name      string
		got, want func() *tensor.Tensor
	}{
		{"Add(transposed, broadcast)", func() *tensor.Tensor { return tensor.Add(dc.T(), db) }, func() *tensor.Tensor { return tensor.Add(c.T(), b) }},
		{"Mul(sliced, 0-d host)", func() *tensor.Tensor { return tensor.Mul(da.Slice(1, 1, 6, 2), tensor.Scalar(3)) },
			func() *tensor.Tensor { return tensor.Mul(a.Slice(1, 1, 6, 2), tensor.Scalar(3)) }},
		{"SubInto(strided dst)", func() *tensor.Tensor { tensor.SubInto(dst.T(), da, db); return dst },
			func() *tensor.Tensor { h := tensor.Full(-1, 6, 5); tensor.SubInto(h.T(), a, b); return h }},
		{"SumToInto(strided dst)", func() *tensor.Tensor { tensor.SumToInto(dst.Index(1, 2), da); return dst },
			func() *tensor.Tensor {
				h := tensor.Full(-1, 6, 5)
				tensor.SubInto(h.T(), a, b)
				tensor.SumToInto(h.Index(1, 2), a)
				return h
			}},
		{"Contiguous(broadcast)", func() *tensor.Tensor { return db.Unsqueeze(1).Expand(6, 4).Contiguous() },
			func() *tensor.Tensor { return b.Unsqueeze(1).Expand(6, 4).Contiguous() }},
	} {
		got, w := back(t, k.name, k.got()), k.want()
		if !slices.Equal(got.Shape(), w.Shape()) || !slices.Equal(got.Data(), w.Data()) {
			t.Errorf("%s on the device = %v, want %v", k.name, got, w)
		}
	}
	if c := d.Counts(); c.Calls["Elementwise.Binary"] != 3 || c.Calls["Reduce.SumTo"] != 1 || c.Calls["Copy.CopyInto"] != 1 {
		t.Errorf("calls %v", c.Calls)
	}
}

// TestResidency checks that the stand-in refuses operands that a device
// could not read: a host operand of one or more dimensions beside device
// ones, an operand on another device.
func TestResidency(t *testing.T) {
	d := tensortest.NewHostDevice(dev)
	tensor.RegisterDevice(dev, d.Backend())
	defer tensor.RegisterDevice(dev, nil)
	other := tensortest.Register(t, 8)
	b := d.Backend()
	da, hb := to(t, tensor.Ones(2, 3)), tensor.Ones(2, 3)
	ob, _ := hb.To(other.Device())
	dst, _ := tensor.NewOn(dev, 2, 3)
	for _, k := range []struct {
		err  error
		want string
	}{
		{b.Elementwise.Binary(tensor.ElemAdd, dst, da, hb), "tensortest: device(7): Elementwise.Binary given a host operand [2 3] beside device operands"},
		{b.Elementwise.Binary(tensor.ElemAdd, dst, da, ob), "tensortest: device(7): Elementwise.Binary given an operand [2 3] on device(8)"},
		{b.Copy.CopyInto(tensor.New(2, 3), da), "tensortest: device(7): Copy.CopyInto given a host operand [2 3] beside device operands"},
	} {
		if k.err == nil || k.err.Error() != k.want {
			t.Errorf("error %v, want %q", k.err, k.want)
		}
	}
	if err := b.Elementwise.Binary(tensor.ElemAdd, dst, da, tensor.Scalar(1)); err != nil {
		t.Errorf("a 0-d host scalar beside device operands: %v", err)
	}
}

// TestFaults checks that the faults are returned where they are named,
// and that the public functions turn a kernel's into a panic.
func TestFaults(t *testing.T) {
	d := tensortest.Register(t, dev)
	da := to(t, tensor.Ones(2, 3))
	oom := errors.New("out of memory")
	d.SetFaults(tensortest.Faults{Alloc: oom})
	if _, err := tensor.Ones(2).To(dev); err != oom {
		t.Errorf("To with an Alloc fault: %v", err)
	}
	d.SetFaults(tensortest.Faults{Copy: oom})
	if _, err := da.To(tensor.CPU); err != oom {
		t.Errorf("To(CPU) with a Copy fault: %v", err)
	}
	d.SetFaults(tensortest.Faults{Kernels: oom})
	func() {
		defer func() {
			if p := fmt.Sprint(recover()); !strings.HasSuffix(p, ": out of memory") || !strings.HasPrefix(p, "tensor: Exp: ") {
				t.Errorf("Exp with a Kernels fault panicked %q", p)
			}
		}()
		tensor.Exp(da)
	}()
	if c := d.Counts(); c.Calls["Elementwise.Unary"] != 1 {
		t.Errorf("the failed call was not counted: %v", c.Calls)
	}
	d.SetFaults(tensortest.Faults{})
	if _, err := da.To(tensor.CPU); err != nil {
		t.Error(err)
	}
}

// gpuPlacer sends all work to the accelerator.
type gpuPlacer struct{}

func (gpuPlacer) Place(dispatch.Work) dispatch.Target { return dispatch.OnGPU }
func (gpuPlacer) Describe() string                    { return "test: all on the accelerator" }

// TestOffload checks that host work offloaded to the stand-in
// (SetOffload) runs there on host operands and writes a host result.
func TestOffload(t *testing.T) {
	d := tensortest.Register(t, dev)
	tensor.SetOffload(dev)
	defer tensor.SetOffload(tensor.CPU)
	dispatch.SetPlacer(gpuPlacer{})
	defer dispatch.SetPlacer(nil)
	r := rand.New(rand.NewPCG(5, 6))
	a, b := tensor.RandN(r, 4, 5), tensor.RandN(r, 5, 3)
	got := tensor.MatMul(a, b)
	if c := d.Counts(); c.Offloads != 1 || c.Calls["MatMul.MatMul"] != 1 || got.Device() != tensor.CPU {
		t.Fatalf("offloaded MatMul: counts %+v, result on %v", c, got.Device())
	}
	tensor.SetOffload(tensor.CPU)
	if w := tensor.MatMul(a, b); !slices.Equal(got.Data(), w.Data()) {
		t.Errorf("offloaded MatMul = %v, want %v", got, w)
	}
}
