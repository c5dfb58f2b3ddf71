package cudaplugin

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/tensor"
)

// This file has no build tag: both builds must answer alike when there is
// no GPU to use.

// TestNoDeviceIsUnavailable: the errors of "no device, no driver" match
// ErrUnavailable, with and without -tags cuda; other CUDA errors do not.
func TestNoDeviceIsUnavailable(t *testing.T) {
	for _, c := range []struct {
		code int
		want bool
	}{
		{errNoDevice, true}, {errInsufficientDriver, true}, {errStubLibrary, true},
		{errInitializationError, true}, {errSystemNotReady, true},
		{errMemoryAllocation, false}, {errIllegalAddress, false}, {errUnknown, false},
	} {
		err := error(&Error{Call: "cudaGetDeviceCount", Code: c.code, Msg: "m"})
		if got := errors.Is(err, ErrUnavailable); got != c.want {
			t.Errorf("errors.Is(CUDA error %d, ErrUnavailable) = %v, want %v", c.code, got, c.want)
		}
		var e *Error
		if !errors.As(fmt.Errorf("wrapped: %w", err), &e) || e.Code != c.code {
			t.Errorf("CUDA error %d: errors.As lost the *Error", c.code)
		}
	}
	if errors.Is(ErrDisabled, ErrUnavailable) || errors.Is(ErrClosed, ErrUnavailable) {
		t.Error("ErrDisabled or ErrClosed matches ErrUnavailable")
	}

	n, err := DeviceCount()
	if err == nil && n > 0 {
		t.Logf("%d CUDA devices: only the ordinals past them are unavailable", n)
	} else {
		if !errors.Is(err, ErrUnavailable) && !(err == nil && n == 0) {
			t.Errorf("DeviceCount() = %d, %v; want an error matching ErrUnavailable", n, err)
		}
		if ds, err := Devices(); len(ds) != 0 || !errors.Is(err, ErrUnavailable) && err != nil {
			t.Errorf("Devices() = %v, %v; want an error matching ErrUnavailable", ds, err)
		}
		if g, err := Enable(); g != nil || !errors.Is(err, ErrUnavailable) {
			t.Errorf("Enable() = %v, %v; want nil and an error matching ErrUnavailable", g, err)
		}
	}
	for _, ordinal := range []int{-1, max(n, 0), max(n, 0) + 1000} {
		if g, err := Open(ordinal); g != nil || !errors.Is(err, ErrUnavailable) {
			t.Errorf("Open(%d) = %v, %v; want nil and an error matching ErrUnavailable", ordinal, g, err)
		}
	}
}

// TestNilGPU calls every method of a nil *GPU (what Open returns with its
// error) and of a zero GPU: none dereferences nil, those with an error
// return one matching ErrUnavailable, the others the documented zeros.
func TestNilGPU(t *testing.T) {
	for _, g := range []*GPU{nil, new(GPU)} {
		name := "nil *GPU"
		if g != nil {
			name = "zero GPU"
		}
		a, b, c := tensor.New(2, 2), tensor.New(2, 2), tensor.New(2, 2)
		x, w := tensor.New(1, 1, 4, 4), tensor.New(1, 1, 3, 3)
		pp := tensor.PoolParams{Kernel: [2]int{2, 2}}
		calls := []struct {
			name string
			call func() error
		}{
			{"Close", g.Close},
			{"Sync", g.Sync},
			{"MatMul", func() error { return g.MatMul(c, a, b) }},
			{"Conv2D", func() error { return g.Conv2D(tensor.New(1, 1, 2, 2), x, w, nil, tensor.ConvParams{}) }},
			{"Conv2DBackwardInput", func() error {
				return g.Conv2DBackwardInput(tensor.New(1, 1, 4, 4), tensor.New(1, 1, 2, 2), w, tensor.ConvParams{})
			}},
			{"Conv2DBackwardWeight", func() error {
				return g.Conv2DBackwardWeight(tensor.New(1, 1, 3, 3), tensor.New(1, 1, 2, 2), x, tensor.ConvParams{})
			}},
			{"Prepare", func() error {
				run, release, err := g.Prepare(dispatch.OpMatMul, true, 4, 4, 4)
				if run != nil || release != nil {
					return errors.New("Prepare returned functions")
				}
				return err
			}},
			{"Alloc", func() error {
				m, err := g.Alloc(tensor.Device(1), 4)
				if m != nil {
					return errors.New("Alloc returned memory")
				}
				return err
			}},
			{"New", func() error {
				t, err := g.New(2, 3)
				if t != nil {
					return errors.New("New returned a tensor")
				}
				return err
			}},
			{"Contiguous", func() error {
				t, err := g.Contiguous(a)
				if t != nil {
					return errors.New("Contiguous returned a tensor")
				}
				return err
			}},
			{"BiasAct", func() error { return g.BiasAct(c, a, tensor.New(2), -1, ReLU) }},
			{"Add", func() error { return g.Add(c, a, b) }},
			{"Mul", func() error { return g.Mul(c, a, b) }},
			{"SoftmaxRows", func() error { return g.SoftmaxRows(c, a) }},
			{"MaxPool2D", func() error { return g.MaxPool2D(tensor.New(1, 1, 2, 2), nil, x, pp) }},
			{"AvgPool2D", func() error { return g.AvgPool2D(tensor.New(1, 1, 2, 2), x, pp) }},
			{"MaxPool2DBackward", func() error { return g.MaxPool2DBackward(x, tensor.New(1, 1, 2, 2), tensor.New(1, 1, 2, 2), pp) }},
			{"AvgPool2DBackward", func() error { return g.AvgPool2DBackward(x, tensor.New(1, 1, 2, 2), pp) }},
			{"Binary", func() error { return g.Binary(tensor.ElemAdd, c, a, b) }},
			{"Unary", func() error { return g.Unary(tensor.ElemReLU, c, a, [2]float32{}) }},
			{"Where", func() error { return g.Where(c, a, a, b) }},
			{"Uniform", func() error { return g.Uniform(c, 1, 2) }},
			{"Dropout", func() error { return g.Dropout(c, a, 0.5, 1, 2) }},
			{"Sort", func() error { return g.Sort(c, tensor.New(2, 3), a, 1, 3, false) }},
			{"Median", func() error { return g.Median(tensor.New(2, 1), tensor.New(2, 1), a, 1) }},
			{"Scan", func() error { return g.Scan(c, a, 0, false) }},
			{"CumProdBackward", func() error { return g.CumProdBackward(c, a, b, 0) }},
			{"UnaryBackward", func() error { return g.UnaryBackward(tensor.ElemReLU, c, a, a, nil, [2]float32{}) }},
			{"SoftmaxBackward", func() error { return g.SoftmaxBackward(c, a, b, 1, false) }},
			{"Reduce", func() error { return g.Reduce(tensor.ReduceSum, tensor.New(1, 1), a, []int{0, 1}, 0) }},
			{"ArgReduce", func() error { return g.ArgReduce(tensor.ArgOpMax, tensor.New(1, 2), a, 0) }},
			{"NormP", func() error { return g.NormP(tensor.New(1, 1), a, []int{0, 1}, 3) }},
			{"Softmax", func() error { return g.Softmax(c, a, 1, false) }},
			{"SumTo", func() error { return g.SumTo(tensor.New(2), a) }},
			{"IndexSelect", func() error { return g.IndexSelect(c, a, 0, tensor.New(2)) }},
			{"Gather", func() error { return g.Gather(c, a, 0, b) }},
			{"IndexAdd", func() error { return g.IndexAdd(c, 0, tensor.New(2), a) }},
			{"ScatterAdd", func() error { return g.ScatterAdd(c, 0, b, a) }},
			{"Scatter", func() error { return g.Scatter(c, 0, b, a) }},
			{"MaskedSelect", func() error { return g.MaskedSelect(tensor.New(1), a, a) }},
			{"OneHot", func() error { return g.OneHot(c, tensor.New(2)) }},
			{"Class", func() error {
				return g.Class(tensor.New(), c, nil, a, tensor.New(2), tensor.ClassLossArgs{Logits: true})
			}},
			{"Pointwise", func() error { return g.Pointwise(tensor.New(), c, nil, a, b, tensor.PointLossArgs{}) }},
			{"SGD", func() error {
				return g.SGD([]*tensor.Tensor{a}, []*tensor.Tensor{b}, nil, []bool{false}, tensor.SGDParams{LR: 1})
			}},
			{"Adam", func() error {
				return g.Adam([]*tensor.Tensor{a}, []*tensor.Tensor{b}, []*tensor.Tensor{c}, []*tensor.Tensor{tensor.New(2, 2)}, nil, []int64{1}, tensor.AdamParams{LR: 1})
			}},
			{"Adagrad", func() error {
				return g.Adagrad([]*tensor.Tensor{a}, []*tensor.Tensor{b}, []*tensor.Tensor{c}, []int64{1}, tensor.AdagradParams{LR: 1})
			}},
			{"Adamax", func() error {
				return g.Adamax([]*tensor.Tensor{a}, []*tensor.Tensor{b}, []*tensor.Tensor{c}, []*tensor.Tensor{tensor.New(2, 2)}, []int64{1}, tensor.AdamaxParams{LR: 1})
			}},
			{"NAdam", func() error {
				return g.NAdam([]*tensor.Tensor{a}, []*tensor.Tensor{b}, []*tensor.Tensor{c}, []*tensor.Tensor{tensor.New(2, 2)}, []int64{1}, []float64{0.9}, tensor.NAdamParams{LR: 1})
			}},
			{"RAdam", func() error {
				return g.RAdam([]*tensor.Tensor{a}, []*tensor.Tensor{b}, []*tensor.Tensor{c}, []*tensor.Tensor{tensor.New(2, 2)}, []int64{1}, tensor.RAdamParams{LR: 1})
			}},
			{"RMSProp", func() error {
				return g.RMSProp([]*tensor.Tensor{a}, []*tensor.Tensor{b}, []*tensor.Tensor{c}, nil, nil, tensor.RMSPropParams{LR: 1})
			}},
			{"SoftmaxBackward", func() error { return g.SoftmaxBackward(c, a, b, 1, false) }},
			{"BatchNorm", func() error {
				return g.BatchNorm(c, tensor.NormStats{Mean: tensor.New(2), InvStd: tensor.New(2)}, a, tensor.BatchNormParams{Training: true})
			}},
			{"BatchNormBackward", func() error {
				return g.BatchNormBackward(c, nil, nil, b, a, tensor.NormStats{Mean: tensor.New(2), InvStd: tensor.New(2)}, tensor.BatchNormParams{})
			}},
			{"LayerNorm", func() error {
				return g.LayerNorm(c, tensor.NormStats{Mean: tensor.New(2), InvStd: tensor.New(2)}, a, tensor.LayerNormParams{Dims: 1})
			}},
			{"LayerNormBackward", func() error {
				return g.LayerNormBackward(c, nil, nil, b, a, tensor.NormStats{Mean: tensor.New(2), InvStd: tensor.New(2)}, tensor.LayerNormParams{Dims: 1})
			}},
			{"CopyInto", func() error { return g.CopyInto(c, a) }},
			{"Concat", func() error { return g.Concat(tensor.New(4, 2), 0, []*tensor.Tensor{a, b}) }},
		}
		for _, c := range calls {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s.%s panicked: %v", name, c.name, r)
					}
				}()
				if err := c.call(); !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), "cudaplugin: ") {
					t.Errorf("%s.%s = %v, want an error matching ErrUnavailable", name, c.name, err)
				}
			}()
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: a method without an error panicked: %v", name, r)
				}
			}()
			if d := g.Device(); d != tensor.CPU {
				t.Errorf("%s.Device() = %v, want cpu", name, d)
			}
			if i := g.Info(); i != (dispatch.DeviceInfo{}) {
				t.Errorf("%s.Info() = %+v, want zero", name, i)
			}
			if r, s := g.Stats(); r != (PoolStats{}) || s != (PoolStats{}) {
				t.Errorf("%s.Stats() = %+v, %+v, want zero", name, r, s)
			}
			if p := g.Place(dispatch.Work{Op: dispatch.OpMatMul, FLOPs: 1e15, Resident: true}); p != dispatch.OnCPU {
				t.Errorf("%s.Place = %v, want cpu", name, p)
			}
			if s := g.Name(); s != "" {
				t.Errorf("%s.Name() = %q, want \"\"", name, s)
			}
			if s := g.Describe(); !strings.HasPrefix(s, "cudaplugin: ") {
				t.Errorf("%s.Describe() = %q, want the reason there is no GPU", name, s)
			}
		}()
	}
}
