//go:build !cuda && !cudaemu

package cudaplugin

import (
	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/tensor"
)

// This file is the package without -tags cuda: no cgo, no device. Open
// and Enable report ErrUnavailable, so no GPU exists but a nil (or zero)
// one, and its methods, which keep code written against the plugin
// compiling, answer as those of a nil *GPU in the cuda build: methods
// with an error return ErrUnavailable, Device is tensor.CPU, Place
// OnCPU, Name "", Info and Stats zero.

// GPU is one CUDA device (see cuda.go, built with -tags cuda). Without
// the tag there is none: only a nil *GPU, whose methods answer as in the
// file comment above.
type GPU struct{}

// Open reports ErrUnavailable: the package was built without -tags cuda.
func Open(ordinal int) (*GPU, error) { return nil, ErrUnavailable }

// Enable reports ErrUnavailable: the package was built without -tags cuda.
func Enable() (*GPU, error) { return nil, ErrUnavailable }

// DeviceCount reports ErrUnavailable.
func DeviceCount() (int, error) { return 0, ErrUnavailable }

// Devices reports ErrUnavailable.
func Devices() ([]dispatch.DeviceInfo, error) { return nil, ErrUnavailable }

func (g *GPU) Device() tensor.Device                  { return tensor.CPU }
func (g *GPU) Info() dispatch.DeviceInfo              { return dispatch.DeviceInfo{} }
func (g *GPU) Close() error                           { return ErrUnavailable }
func (g *GPU) Sync() error                            { return ErrUnavailable }
func (g *GPU) Stats() (resident, staging PoolStats)   { return }
func (g *GPU) MemStats(tensor.Device) tensor.MemStats { return tensor.MemStats{} }
func (g *GPU) ResetPeakMemStats(tensor.Device)        {}
func (g *GPU) Place(dispatch.Work) dispatch.Target    { return dispatch.OnCPU }
func (g *GPU) Describe() string                       { return ErrUnavailable.Error() }
func (g *GPU) MatMul(dst, a, b *tensor.Tensor) error  { return ErrUnavailable }
func (g *GPU) Conv2D(dst, x, w, b *tensor.Tensor, p tensor.ConvParams) error {
	return ErrUnavailable
}
func (g *GPU) Conv2DBackwardInput(dx, dy, w *tensor.Tensor, p tensor.ConvParams) error {
	return ErrUnavailable
}
func (g *GPU) Conv2DBackwardWeight(dw, dy, x *tensor.Tensor, p tensor.ConvParams) error {
	return ErrUnavailable
}
func (g *GPU) Name() string { return "" }
func (g *GPU) Prepare(dispatch.Op, bool, ...int) (func() error, func(), error) {
	return nil, nil, ErrUnavailable
}
func (g *GPU) Alloc(tensor.Device, int) (tensor.DeviceMemory, error) { return nil, ErrUnavailable }
func (g *GPU) New(shape ...int) (*tensor.Tensor, error)              { return nil, ErrUnavailable }
func (g *GPU) Contiguous(t *tensor.Tensor) (*tensor.Tensor, error)   { return nil, ErrUnavailable }
func (g *GPU) BiasAct(dst, x, bias *tensor.Tensor, axis int, act Activation) error {
	return ErrUnavailable
}
func (g *GPU) Add(dst, a, b *tensor.Tensor) error      { return ErrUnavailable }
func (g *GPU) Mul(dst, a, b *tensor.Tensor) error      { return ErrUnavailable }
func (g *GPU) SoftmaxRows(dst, x *tensor.Tensor) error { return ErrUnavailable }
func (g *GPU) MaxPool2D(dst, indices, x *tensor.Tensor, p tensor.PoolParams) error {
	return ErrUnavailable
}
func (g *GPU) AvgPool2D(dst, x *tensor.Tensor, p tensor.PoolParams) error { return ErrUnavailable }
func (g *GPU) MaxPool2DBackward(dx, dy, indices *tensor.Tensor, p tensor.PoolParams) error {
	return ErrUnavailable
}
func (g *GPU) AvgPool2DBackward(dx, dy *tensor.Tensor, p tensor.PoolParams) error {
	return ErrUnavailable
}
func (g *GPU) AdaptiveMaxPool2D(dst, indices, x *tensor.Tensor) error         { return ErrUnavailable }
func (g *GPU) AdaptiveAvgPool2D(dst, x *tensor.Tensor) error                  { return ErrUnavailable }
func (g *GPU) AdaptiveMaxPool2DBackward(dx, dy, indices *tensor.Tensor) error { return ErrUnavailable }
func (g *GPU) AdaptiveAvgPool2DBackward(dx, dy *tensor.Tensor) error          { return ErrUnavailable }
func (g *GPU) Binary(op tensor.ElemOp, dst, a, b *tensor.Tensor) error        { return ErrUnavailable }
func (g *GPU) Unary(op tensor.ElemOp, dst, x *tensor.Tensor, arg [2]float32) error {
	return ErrUnavailable
}
func (g *GPU) Where(dst, cond, a, b *tensor.Tensor) error { return ErrUnavailable }
func (g *GPU) UnaryBackward(op tensor.ElemOp, dx, dy, x, y *tensor.Tensor, arg [2]float32) error {
	return ErrUnavailable
}
func (g *GPU) SoftmaxBackward(dx, y, dy *tensor.Tensor, axis int, log bool) error {
	return ErrUnavailable
}
func (g *GPU) IndexSelect(dst, t *tensor.Tensor, axis int, index *tensor.Tensor) error {
	return ErrUnavailable
}
func (g *GPU) Gather(dst, t *tensor.Tensor, axis int, index *tensor.Tensor) error {
	return ErrUnavailable
}
func (g *GPU) IndexAdd(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return ErrUnavailable
}
func (g *GPU) ScatterAdd(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return ErrUnavailable
}
func (g *GPU) Scatter(dst *tensor.Tensor, axis int, index, src *tensor.Tensor) error {
	return ErrUnavailable
}
func (g *GPU) MaskedSelect(dst, x, mask *tensor.Tensor) error { return ErrUnavailable }
func (g *GPU) OneHot(dst, labels *tensor.Tensor) error        { return ErrUnavailable }
func (g *GPU) Class(loss, dinput, dloss, input, target *tensor.Tensor, a tensor.ClassLossArgs) error {
	return ErrUnavailable
}
func (g *GPU) Pointwise(loss, dpred, dloss, pred, target *tensor.Tensor, a tensor.PointLossArgs) error {
	return ErrUnavailable
}
func (g *GPU) SGD(params, grads, momentum []*tensor.Tensor, started []bool, hp tensor.SGDParams) error {
	return ErrUnavailable
}
func (g *GPU) Adam(params, grads, m, v, vmax []*tensor.Tensor, steps []int64, hp tensor.AdamParams) error {
	return ErrUnavailable
}
func (g *GPU) Adagrad(params, grads, sum []*tensor.Tensor, steps []int64, hp tensor.AdagradParams) error {
	return ErrUnavailable
}
func (g *GPU) Adamax(params, grads, m, u []*tensor.Tensor, steps []int64, hp tensor.AdamaxParams) error {
	return ErrUnavailable
}
func (g *GPU) NAdam(params, grads, m, v []*tensor.Tensor, steps []int64, muProduct []float64, hp tensor.NAdamParams) error {
	return ErrUnavailable
}
func (g *GPU) RAdam(params, grads, m, v []*tensor.Tensor, steps []int64, hp tensor.RAdamParams) error {
	return ErrUnavailable
}
func (g *GPU) RMSProp(params, grads, squareAvg, gradAvg, momentum []*tensor.Tensor, hp tensor.RMSPropParams) error {
	return ErrUnavailable
}
func (g *GPU) BatchNorm(y *tensor.Tensor, s tensor.NormStats, x *tensor.Tensor, p tensor.BatchNormParams) error {
	return ErrUnavailable
}
func (g *GPU) BatchNormBackward(dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, p tensor.BatchNormParams) error {
	return ErrUnavailable
}
func (g *GPU) LayerNorm(y *tensor.Tensor, s tensor.NormStats, x *tensor.Tensor, p tensor.LayerNormParams) error {
	return ErrUnavailable
}
func (g *GPU) LayerNormBackward(dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, p tensor.LayerNormParams) error {
	return ErrUnavailable
}
func (g *GPU) RMSNorm(y, rrms, x *tensor.Tensor, p tensor.RMSNormParams) error {
	return ErrUnavailable
}
func (g *GPU) RMSNormBackward(dx, dgamma, dy, x, rrms *tensor.Tensor, p tensor.RMSNormParams) error {
	return ErrUnavailable
}
func (g *GPU) Reduce(op tensor.ReduceOp, dst, x *tensor.Tensor, axes []int, ddof int) error {
	return ErrUnavailable
}
func (g *GPU) ArgReduce(op tensor.ArgOp, dst, x *tensor.Tensor, axis int) error {
	return ErrUnavailable
}
func (g *GPU) NormP(dst, x *tensor.Tensor, axes []int, p float64) error       { return ErrUnavailable }
func (g *GPU) Softmax(dst, x *tensor.Tensor, axis int, log bool) error        { return ErrUnavailable }
func (g *GPU) SumTo(dst, x *tensor.Tensor) error                              { return ErrUnavailable }
func (g *GPU) CopyInto(dst, src *tensor.Tensor) error                         { return ErrUnavailable }
func (g *GPU) Concat(dst *tensor.Tensor, axis int, ts []*tensor.Tensor) error { return ErrUnavailable }

// The Random family.
func (g *GPU) Uniform(dst *tensor.Tensor, seed, offset uint64) error { return ErrUnavailable }
func (g *GPU) Dropout(dst, x *tensor.Tensor, p float32, seed, offset uint64) error {
	return ErrUnavailable
}

// The Sort family.
func (g *GPU) Sort(values, indices, x *tensor.Tensor, axis, k int, descending bool) error {
	return ErrUnavailable
}
func (g *GPU) Median(values, indices, x *tensor.Tensor, axis int) error { return ErrUnavailable }
func (g *GPU) Scan(dst, x *tensor.Tensor, axis int, prod bool) error    { return ErrUnavailable }
func (g *GPU) CumProdBackward(dx, x, dy *tensor.Tensor, axis int) error { return ErrUnavailable }

// NCCLVersion reports ErrUnavailable (NCCL is loaded by the -tags cuda build).
func NCCLVersion() (int, error) { return 0, ErrUnavailable }

// NewNCCLID reports ErrUnavailable.
func NewNCCLID() (NCCLID, error) { return NCCLID{}, ErrUnavailable }

// NCCLComm is an NCCL communicator (see nccl.go, built with -tags cuda);
// without the tag none is ever made.
type NCCLComm struct{}

func (g *GPU) NewNCCLComm(dist.Comm) (*NCCLComm, error)          { return nil, ErrUnavailable }
func (g *GPU) NewNCCLCommID(NCCLID, int, int) (*NCCLComm, error) { return nil, ErrUnavailable }
func (n *NCCLComm) Rank() int                                    { return 0 }
func (n *NCCLComm) Size() int                                    { return 0 }
func (n *NCCLComm) Version() int                                 { return 0 }
func (n *NCCLComm) AllReduce(*tensor.Tensor, dist.Op) error      { return ErrUnavailable }
func (n *NCCLComm) Broadcast(*tensor.Tensor, int) error          { return ErrUnavailable }
func (n *NCCLComm) AllGather(dst, src *tensor.Tensor) error      { return ErrUnavailable }
func (n *NCCLComm) Close() error                                 { return ErrUnavailable }
func (g *GPU) GridSample(dst, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	return ErrUnavailable
}
func (g *GPU) GridSampleBackward(dinput, dgrid, dy, input, grid *tensor.Tensor, p tensor.GridSampleParams) error {
	return ErrUnavailable
}
func (g *GPU) AffineGrid(dst, theta *tensor.Tensor, alignCorners bool) error { return ErrUnavailable }
func (g *GPU) AffineGridBackward(dtheta, dgrid *tensor.Tensor, alignCorners bool) error {
	return ErrUnavailable
}
func (g *GPU) Interpolate(dst, x *tensor.Tensor, p tensor.InterpolateParams) error {
	return ErrUnavailable
}
func (g *GPU) InterpolateBackward(dx, dy *tensor.Tensor, p tensor.InterpolateParams) error {
	return ErrUnavailable
}
