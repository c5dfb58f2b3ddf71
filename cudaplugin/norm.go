//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static float *lanes_norm_ptr(uintptr_t p) { return (float *)p; }
static int lanes_norm_on(lanes_stream s, int pass, const LanesNorm *p) { return lanes_norm(s, pass, p); }
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// The Norm family (tensor.NormKernels): BatchNorm, LayerNorm and
// RMSNorm, forward and backward, each one launch of lanes_norm (norm.cu,
// kernels.h: LanesNorm) over rows (BatchNorm's channels, LayerNorm's and
// RMSNorm's rows) of strided x, y, dy and dx, LayerNorm's and RMSNorm's
// dgamma (and LayerNorm's dbeta) a second launch
// over the normalized shape's elements. The statistics are summed in
// float64 (the mean, then the corrected two-pass variance about it), and
// BatchNorm's running statistics are updated on the device by the
// channel's block. The per-row vectors (statistics, gamma, beta, their
// gradients) are read and written contiguous: a strided one goes
// through a temporary.

// normCall is a Norm op's operands on the device.
type normCall struct {
	*call
	name string
	p    C.LanesNorm
	outs []target // the vectors written through finish
	xo   operand  // x and dy as the kernels read them
	zo   operand
}

// vec returns t's elements, contiguous (a copy for a strided t), or 0 for
// a nil t.
func (n *normCall) vec(i int, t *tensor.Tensor) (*C.float, error) {
	if t == nil {
		return nil, nil
	}
	o, err := n.contiguous(n.on(n.name, i, t))
	return C.lanes_norm_ptr(C.uintptr_t(o.ptr)), err
}

// out returns where the kernel writes t's elements, contiguous (finish
// delivers them; through a temporary when t overlaps x or dy, which the
// kernel reads), or nil for a nil t.
func (n *normCall) out(i int, t *tensor.Tensor) (*C.float, error) {
	if t == nil {
		return nil, nil
	}
	tg, err := n.into(t, n.on(n.name, i, t), n.xo, n.zo)
	if err != nil {
		return nil, err
	}
	n.outs = append(n.outs, tg)
	return C.lanes_norm_ptr(C.uintptr_t(tg.ptr)), nil
}

// run launches pass and delivers the vectors written.
func (n *normCall) run(pass int) error {
	if err := check("lanes_norm", C.lanes_norm_on(n.g.stream, C.int(pass), &n.p)); err != nil {
		return err
	}
	for _, t := range n.outs {
		if err := n.finish(t); err != nil {
			return err
		}
	}
	n.outs = nil
	return nil
}

// strided sets the rows of y (result or dx), x and dy (nil for a
// forward), inner marking a row's dimensions; an input that overlaps y
// but for the very same view is copied first.
func (n *normCall) strided(inner []bool, y, x, dy *tensor.Tensor) error {
	yo, xo := n.on(n.name, 0, y), n.on(n.name, 1, x)
	var zo operand
	if dy != nil {
		zo = n.on(n.name, 2, dy)
	}
	if err := n.aside(yo, true, &xo, &zo); err != nil {
		return err
	}
	r, in, err := n.rows(n.name, inner, yo, xo, zo)
	if err != nil {
		return err
	}
	n.p.r, n.xo, n.zo = r, in, zo
	n.p.y, n.p.x = C.lanes_norm_ptr(C.uintptr_t(yo.ptr)), C.lanes_norm_ptr(C.uintptr_t(in.ptr))
	if dy != nil {
		n.p.dy = C.lanes_norm_ptr(C.uintptr_t(zo.ptr))
	}
	return nil
}

// batchInner marks every axis but the channels' (1) of x.
func batchInner(x *tensor.Tensor) []bool {
	m := make([]bool, x.Dims())
	for i := range m {
		m[i] = i != 1
	}
	return m
}

// layerInner marks the last dims axes of x.
func layerInner(x *tensor.Tensor, dims int) []bool {
	m := make([]bool, x.Dims())
	for i := range m {
		m[i] = i >= x.Dims()-dims
	}
	return m
}

// normOp runs an op of the Norm family: f sets n's operands and runs its
// passes.
func (g *GPU) normOp(name string, f func(n *normCall) error) error {
	if !g.opened() {
		return errNilGPU
	}
	n := &normCall{call: &call{g: g}, name: name}
	defer n.release()
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return f(n)
}

// stats sets the forward's outputs, the rows' mean and inverse standard
// deviation.
func (n *normCall) stats(s tensor.NormStats) (err error) {
	if n.p.mean, err = n.out(4, s.Mean); err != nil {
		return err
	}
	n.p.inv_std, err = n.out(5, s.InvStd)
	return err
}

// BatchNorm implements tensor.NormKernels.
func (g *GPU) BatchNorm(y *tensor.Tensor, s tensor.NormStats, x *tensor.Tensor, p tensor.BatchNormParams) error {
	return g.normOp("BatchNorm", func(n *normCall) (err error) {
		n.p.kind, n.p.training, n.p.eps, n.p.momentum = C.LANES_BATCHNORM, cbool(p.Training), C.float(p.Eps), C.float(p.Momentum)
		if err = n.strided(batchInner(x), y, x, nil); err != nil {
			return err
		}
		for _, v := range []struct {
			p **C.float
			t *tensor.Tensor
		}{{&n.p.gamma, p.Gamma}, {&n.p.beta, p.Beta}, {&n.p.run_mean, p.RunningMean}, {&n.p.run_var, p.RunningVar}} {
			if *v.p, err = n.vec(3, v.t); err != nil { // the running statistics are contiguous
				return err
			}
		}
		if err = n.stats(s); err != nil {
			return err
		}
		return n.run(0)
	})
}

// BatchNormBackward implements tensor.NormKernels.
func (g *GPU) BatchNormBackward(dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, p tensor.BatchNormParams) error {
	return g.normOp("BatchNormBackward", func(n *normCall) (err error) {
		n.p.kind, n.p.training = C.LANES_BATCHNORM, cbool(p.Training)
		if err = n.backward(batchInner(x), dx, dgamma, dbeta, dy, x, s, p.Gamma); err != nil {
			return err
		}
		return n.run(1)
	})
}

// LayerNorm implements tensor.NormKernels.
func (g *GPU) LayerNorm(y *tensor.Tensor, s tensor.NormStats, x *tensor.Tensor, p tensor.LayerNormParams) error {
	return g.normOp("LayerNorm", func(n *normCall) (err error) {
		n.p.kind, n.p.training, n.p.eps = C.LANES_LAYERNORM, 1, C.float(p.Eps)
		if err = n.strided(layerInner(x, p.Dims), y, x, nil); err != nil {
			return err
		}
		if n.p.gamma, err = n.vec(3, p.Gamma); err != nil {
			return err
		}
		if n.p.beta, err = n.vec(3, p.Beta); err != nil {
			return err
		}
		if err = n.stats(s); err != nil {
			return err
		}
		return n.run(0)
	})
}

// LayerNormBackward implements tensor.NormKernels: dgamma and dbeta
// (when asked) first, in a launch over the normalized shape's elements,
// each summing over the rows, then dx (which may be dy).
func (g *GPU) LayerNormBackward(dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, p tensor.LayerNormParams) error {
	return g.normOp("LayerNormBackward", func(n *normCall) error {
		n.p.kind = C.LANES_LAYERNORM
		return n.trailingBackward(p.Dims, dx, dgamma, dbeta, dy, x, s, p.Gamma)
	})
}

// RMSNorm implements tensor.NormKernels: LayerNorm's launch, each row's
// reciprocal root mean square in inv_std.
func (g *GPU) RMSNorm(y, rrms, x *tensor.Tensor, p tensor.RMSNormParams) error {
	return g.normOp("RMSNorm", func(n *normCall) (err error) {
		n.p.kind, n.p.eps = C.LANES_RMSNORM, C.float(p.Eps)
		if err = n.strided(layerInner(x, p.Dims), y, x, nil); err != nil {
			return err
		}
		if n.p.gamma, err = n.vec(3, p.Gamma); err != nil {
			return err
		}
		if n.p.inv_std, err = n.out(5, rrms); err != nil {
			return err
		}
		return n.run(0)
	})
}

// RMSNormBackward implements tensor.NormKernels as LayerNormBackward,
// without a mean or dbeta.
func (g *GPU) RMSNormBackward(dx, dgamma, dy, x, rrms *tensor.Tensor, p tensor.RMSNormParams) error {
	return g.normOp("RMSNormBackward", func(n *normCall) error {
		n.p.kind = C.LANES_RMSNORM
		return n.trailingBackward(p.Dims, dx, dgamma, nil, dy, x, tensor.NormStats{InvStd: rrms}, p.Gamma)
	})
}

// trailingBackward runs the backward of a normalization over x's last
// dims axes (LayerNorm, RMSNorm): dgamma and dbeta (when asked) first, in
// a launch over the normalized shape's elements, each summing over the
// rows, then dx (which may be dy).
func (n *normCall) trailingBackward(dims int, dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, gamma *tensor.Tensor) error {
	if err := n.backward(layerInner(x, dims), dx, dgamma, dbeta, dy, x, s, gamma); err != nil {
		return err
	}
	if dgamma != nil || dbeta != nil {
		rows := n.p.r
		lead := layerInner(x, dims) // the rows of x: the other axes
		for i := range lead {
			lead[i] = !lead[i]
		}
		r, ok := rowsOf(x.Shape(), lead, n.xo, n.xo, n.zo)
		if !ok {
			return fmt.Errorf("cudaplugin: %s: x and dy of shape %v with strides %v and %v have too many dimensions that do not merge", n.name, x.Shape(), n.xo.strides, n.zo.strides)
		}
		n.p.r = r
		if err := n.run(2); err != nil {
			return err
		}
		n.p.r, n.p.dgamma, n.p.dbeta = rows, nil, nil
	}
	return n.run(1)
}

// backward sets the operands of a backward pass.
func (n *normCall) backward(inner []bool, dx, dgamma, dbeta, dy, x *tensor.Tensor, s tensor.NormStats, gamma *tensor.Tensor) (err error) {
	if err = n.strided(inner, dx, x, dy); err != nil {
		return err
	}
	if n.p.gamma, err = n.vec(3, gamma); err != nil {
		return err
	}
	if n.p.mean, err = n.vec(3, s.Mean); err != nil {
		return err
	}
	if n.p.inv_std, err = n.vec(3, s.InvStd); err != nil {
		return err
	}
	if n.p.dgamma, err = n.out(4, dgamma); err != nil {
		return err
	}
	n.p.dbeta, err = n.out(5, dbeta)
	return err
}
