//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_cross_entropy_at(lanes_stream s, const LanesReduce *r, uintptr_t dl, uintptr_t logits, uintptr_t labels, long long ls, uintptr_t rows, uintptr_t loss, uintptr_t err) {
	return lanes_cross_entropy(s, r, (float *)dl, (const float *)logits, (const float *)labels, ls, (double *)rows, (float *)loss, (float *)err);
}
static float *lanes_loss_ptr(uintptr_t p) { return (float *)p; }
static int lanes_class_loss_on(lanes_stream s, const LanesClassLoss *p) { return lanes_class_loss(s, p); }
static int lanes_point_loss_on(lanes_stream s, const LanesPointLoss *p) { return lanes_point_loss(s, p); }
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// The Loss family (tensor.LossKernels): Class and Pointwise, each the
// loss and its gradient (loss.cu), the loss's partial sums (float64) added
// in a fixed order by a later launch, so the loss is the same at every
// run.

// lossBlocks is the most partial sums of lanes_pointwise_loss.
const lossBlocks = 1024

// Class implements tensor.LossKernels: CrossEntropy's case by its fused
// kernel, the others by lanes_class_loss over contiguous operands (views
// are gathered first). Class-index targets are checked in the kernel and
// the flag of a bad one read back (the call waits for the stream).
func (g *GPU) Class(loss, dinput, dloss, input, labels *tensor.Tensor, a tensor.ClassLossArgs) error {
	if a == (tensor.ClassLossArgs{Logits: true}) && input.Dims() == 2 && loss != nil && dloss == nil {
		return g.crossEntropy(loss, dinput, input, labels)
	}
	if !g.opened() {
		return errNilGPU
	}
	const op = "Loss.Class"
	c := &call{g: g}
	defer c.release()
	xo, to := c.on(op, 3, input), c.on(op, 4, labels)
	var lo, dlo, wo, gv operand
	if loss != nil {
		lo = c.on(op, 0, loss)
	}
	if dinput != nil {
		gv = c.on(op, 1, dinput)
	}
	if dloss != nil {
		dlo = c.on(op, 2, dloss)
	}
	if a.Weight != nil {
		wo = c.on(op, 5, a.Weight)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if lo.ptr != 0 && !isContiguous(lo.shape, lo.strides) {
		return fmt.Errorf("cudaplugin: %s: loss of shape %v and strides %v is not contiguous", op, lo.shape, lo.strides)
	}
	ins := []*operand{&xo, &to, &wo, &dlo}
	var reads []operand
	for _, o := range ins {
		if o.ptr == 0 {
			continue
		}
		v, err := c.contiguous(*o)
		if err != nil {
			return err
		}
		*o = v
		reads = append(reads, v)
	}
	n, cl := input.Dim(0), input.Dim(1)
	s := 1
	for _, d := range input.Shape()[2:] {
		s *= d
	}
	p := C.LanesClassLoss{logits: cbool(a.Logits), soft: cbool(a.Soft), ignore: cbool(a.Ignore),
		reduction: C.int(a.Reduction), ign: C.float(a.IgnoreIndex), eps: C.float(a.Smoothing),
		n: C.longlong(n), c: C.longlong(cl), s: C.longlong(s)}
	var tg target
	if dinput != nil {
		var err error
		if tg, err = c.into(dinput, gv, reads...); err != nil {
			return err
		}
		p.dx = lossPtr(tg.ptr)
	}
	np := max(n*s, 1)
	norm := dinput != nil && a.Logits
	floats := 4*np + 2 // term, wsum, den (doubles)
	if norm {
		floats += 4 * np // norm: 2 doubles per position
	}
	scratch, err := c.scratch(floats)
	if err != nil {
		return err
	}
	flag, err := c.badFlag()
	if err != nil {
		return err
	}
	p.loss, p.x, p.target, p.w, p.dloss = lossPtr(lo.ptr), lossPtr(xo.ptr), lossPtr(to.ptr), lossPtr(wo.ptr), lossPtr(dlo.ptr)
	p.term, p.wsum, p.den = lossPtr(scratch), lossPtr(scratch+uintptr(8*np)), lossPtr(scratch+uintptr(16*np))
	if norm {
		p.norm = lossPtr(scratch + uintptr(16*np+8))
	}
	p.err = lossPtr(flag)
	if err := check("lanes_class_loss", C.lanes_class_loss_on(g.stream, &p)); err != nil {
		return err
	}
	if dinput != nil {
		if err := c.finish(tg); err != nil {
			return err
		}
	}
	if a.Soft || n*s == 0 {
		return nil
	}
	v, bad, err := c.badValue(flag)
	if err != nil || !bad {
		return err
	}
	if a.Ignore {
		return fmt.Errorf("cudaplugin: %s: target %v outside [0, %d) and not the ignored index %v", op, v, cl, a.IgnoreIndex)
	}
	return fmt.Errorf("cudaplugin: %s: target %v outside [0, %d)", op, v, cl)
}

// lossPtr is a device address as the kernels' argument blocks hold it.
func lossPtr(p uintptr) *C.float { return C.lanes_loss_ptr(C.uintptr_t(p)) }

// Pointwise implements tensor.LossKernels by lanes_point_loss over
// operands of any strides (the weights broadcast views). MSE's and
// BCEWithLogits' fused cases keep their float32 formulas; the others
// compute in double. It does not wait, but for BCE, whose inputs it
// checks in the kernel and whose flag it reads back.
func (g *GPU) Pointwise(loss, dpred, dloss, pred, target *tensor.Tensor, a tensor.PointLossArgs) error {
	if !g.opened() {
		return errNilGPU
	}
	const op = "Loss.Pointwise"
	c := &call{g: g}
	defer c.release()
	po, to := c.on(op, 3, pred), c.on(op, 4, target)
	absent := operand{strides: make([]int, len(po.strides))}
	lo, gv, dlo, wo := absent, absent, absent, absent
	if loss != nil {
		lo = c.on(op, 0, loss)
		if a.Reduction != tensor.LossNone {
			lo.strides = absent.strides
		}
	}
	if dpred != nil {
		gv = c.on(op, 1, dpred)
	}
	if dloss != nil {
		dlo = c.on(op, 2, dloss)
		if a.Reduction != tensor.LossNone {
			dlo.strides = absent.strides
		}
	}
	w := a.Weight // BCE's; BCEWithLogits' is PosWeight, the others have none
	switch a.Kind {
	case tensor.LossBCEWithLogits:
		w = a.PosWeight
	case tensor.LossBCE:
	default:
		w = nil
	}
	if w != nil {
		wo = c.on(op, 5, w)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if dpred != nil {
		if err := c.aside(gv, true, &po, &to, &wo, &dlo); err != nil {
			return err
		}
	}
	m := merge(pred.Shape(), lo.strides, gv.strides, po.strides, to.strides, wo.strides, dlo.strides)
	if len(m.shape) > maxDims {
		return fmt.Errorf("cudaplugin: %s: operands of shape %v have too many dimensions that do not merge", op, pred.Shape())
	}
	n := pred.Len()
	divisor := 1.0
	switch a.Reduction {
	case tensor.LossMean:
		divisor = float64(n)
	case tensor.LossBatchMean:
		divisor = float64(n)
		if pred.Dims() > 0 {
			divisor = float64(pred.Dim(0))
		}
	}
	fused := a == (tensor.PointLossArgs{Kind: a.Kind}) && loss != nil && dloss == nil &&
		(a.Kind == tensor.LossMSE || a.Kind == tensor.LossBCEWithLogits)
	p := C.LanesPointLoss{kind: C.int(a.Kind), reduction: C.int(a.Reduction), fused: cbool(fused),
		log_target: cbool(a.LogTarget), arg: C.float(a.Arg), scale: C.float(float32(1 / float64(n))),
		divisor: C.double(divisor)}
	p.shape.dims, p.shape.n = C.int(len(m.shape)), C.longlong(m.n)
	ss := []*C.LanesStrides{&p.ls, &p.gs, &p.ps, &p.ts, &p.ws, &p.ds}
	for k, d := range m.shape {
		p.shape.shape[k] = C.longlong(d)
		for j, st := range ss {
			st.s[k] = C.longlong(m.strides[j][k])
		}
	}
	partial, err := c.scratch(2 * lossBlocks)
	if err != nil {
		return err
	}
	var flag uintptr
	if a.Kind == tensor.LossBCE {
		if flag, err = c.badFlag(); err != nil {
			return err
		}
	}
	p.loss, p.grad, p.pred, p.target = lossPtr(lo.ptr), lossPtr(gv.ptr), lossPtr(po.ptr), lossPtr(to.ptr)
	p.w, p.dloss, p.partial, p.err = lossPtr(wo.ptr), lossPtr(dlo.ptr), lossPtr(partial), lossPtr(flag)
	if err := check("lanes_point_loss", C.lanes_point_loss_on(g.stream, &p)); err != nil {
		return err
	}
	if flag == 0 || n == 0 {
		return nil
	}
	v, bad, err := c.badValue(flag)
	if err != nil || !bad {
		return err
	}
	return fmt.Errorf("cudaplugin: BCE: input %v outside [0, 1]", v)
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
