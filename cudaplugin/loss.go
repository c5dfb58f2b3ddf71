//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_cross_entropy_at(lanes_stream s, const LanesReduce *r, uintptr_t dl, uintptr_t logits, uintptr_t labels, long long ls, uintptr_t rows, uintptr_t loss, uintptr_t err) {
	return lanes_cross_entropy(s, r, (float *)dl, (const float *)logits, (const float *)labels, ls, (double *)rows, (float *)loss, (float *)err);
}
static int lanes_pointwise_loss_at(lanes_stream s, int kind, const LanesShape *shape, uintptr_t g, const LanesStrides *gs, uintptr_t p, const LanesStrides *ps, uintptr_t t, const LanesStrides *ts, uintptr_t partial, uintptr_t loss) {
	return lanes_pointwise_loss(s, kind, shape, (float *)g, gs, (const float *)p, ps, (const float *)t, ts, (double *)partial, (float *)loss);
}
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// The Loss family (tensor.LossKernels): CrossEntropy, MSE and
// BCEWithLogits, each the loss and its gradient in one pass (loss.cu)
// over operands of any strides, the loss's partial sums (float64) added
// in a fixed order by a second launch, so the loss is the same at every
// run. CrossEntropy checks its labels in the kernel and reads back the
// flag of a bad one (the call waits for the stream); MSE and
// BCEWithLogits do not wait.

// lossBlocks is the most partial sums of lanes_pointwise_loss.
const lossBlocks = 1024

// Class implements tensor.LossKernels.
func (g *GPU) Class(loss, dinput, dloss, input, target *tensor.Tensor, a tensor.ClassLossArgs) error {
	if a == (tensor.ClassLossArgs{Logits: true}) && input.Dims() == 2 && loss != nil && dloss == nil {
		return g.crossEntropy(loss, dinput, input, target)
	}
	return fmt.Errorf("cudaplugin: Loss.Class: options %+v not supported", a)
}

// Pointwise implements tensor.LossKernels.
func (g *GPU) Pointwise(loss, dpred, dloss, pred, target *tensor.Tensor, a tensor.PointLossArgs) error {
	if loss != nil && dloss == nil && a == (tensor.PointLossArgs{Kind: a.Kind}) {
		switch a.Kind {
		case tensor.LossMSE:
			return g.pointwiseLoss("MSE", 0, loss, dpred, pred, target)
		case tensor.LossBCEWithLogits:
			return g.pointwiseLoss("BCEWithLogits", 1, loss, dpred, pred, target)
		}
	}
	return fmt.Errorf("cudaplugin: Loss.Pointwise: options %+v not supported", a)
}

// crossEntropy is CrossEntropy's case of Class.
func (g *GPU) crossEntropy(loss, dlogits, logits, labels *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	const op = "CrossEntropy"
	c := &call{g: g}
	defer c.release()
	lo, xo, lab := c.on(op, 0, loss), c.on(op, 2, logits), c.on(op, 3, labels)
	var do operand
	if dlogits != nil {
		do = c.on(op, 1, dlogits)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if dlogits != nil {
		if err := c.aside(do, true, &xo); err != nil {
			return err
		}
	}
	y := do
	if dlogits == nil {
		y = xo
	}
	r, in, err := c.rows(op, []bool{false, true}, y, xo, operand{})
	if err != nil {
		return err
	}
	n := logits.Dim(0)
	rows, err := c.scratch(2 * max(n, 1)) // doubles
	if err != nil {
		return err
	}
	flag, err := c.badFlag()
	if err != nil {
		return err
	}
	ls := 0
	if n > 0 {
		ls = lab.strides[0]
	}
	if err := check("lanes_cross_entropy", C.lanes_cross_entropy_at(g.stream, &r, C.uintptr_t(do.ptr), C.uintptr_t(in.ptr), C.uintptr_t(lab.ptr), C.longlong(ls), C.uintptr_t(rows), C.uintptr_t(lo.ptr), C.uintptr_t(flag))); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	v, bad, err := c.badValue(flag)
	if err != nil || !bad {
		return err
	}
	return fmt.Errorf("cudaplugin: CrossEntropy: label %v outside [0, %d)", v, logits.Dim(1))
}

func (g *GPU) pointwiseLoss(op string, kind int, loss, grad, pred, target *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	c := &call{g: g}
	defer c.release()
	lo, po, to := c.on(op, 0, loss), c.on(op, 2, pred), c.on(op, 3, target)
	gv := po // the gradient's strides when there is none: unused
	if grad != nil {
		gv = c.on(op, 1, grad)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if grad != nil {
		if err := c.aside(gv, true, &po, &to); err != nil {
			return err
		}
	}
	m := merge(pred.Shape(), gv.strides, po.strides, to.strides)
	if len(m.shape) > maxDims {
		return fmt.Errorf("cudaplugin: %s: operands of shape %v have too many dimensions that do not merge", op, pred.Shape())
	}
	var ls C.LanesShape
	var ss [3]C.LanesStrides
	ls.dims, ls.n = C.int(len(m.shape)), C.longlong(m.n)
	for k, d := range m.shape {
		ls.shape[k] = C.longlong(d)
		for j := range ss {
			ss[j].s[k] = C.longlong(m.strides[j][k])
		}
	}
	partial, err := c.scratch(2 * lossBlocks)
	if err != nil {
		return err
	}
	gp := uintptr(0)
	if grad != nil {
		gp = gv.ptr
	}
	return check("lanes_pointwise_loss", C.lanes_pointwise_loss_at(g.stream, C.int(kind), &ls, C.uintptr_t(gp), &ss[0], C.uintptr_t(po.ptr), &ss[1], C.uintptr_t(to.ptr), &ss[2], C.uintptr_t(partial), C.uintptr_t(lo.ptr)))
}
