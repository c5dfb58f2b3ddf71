//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_bias_act_at(lanes_stream s, uintptr_t y, uintptr_t x, uintptr_t bias, long long n, int ch, long long inner, int act) {
	return lanes_bias_act(s, (float *)y, (const float *)x, (const float *)bias, n, ch, inner, act);
}
static int lanes_binary_at(lanes_stream s, int op, const LanesShape *shape, uintptr_t y, const LanesStrides *ys, uintptr_t a, const LanesStrides *as, uintptr_t b, const LanesStrides *bs) {
	return lanes_binary(s, op, shape, (float *)y, ys, (const float *)a, as, (const float *)b, bs);
}
static int lanes_unary_at(lanes_stream s, int op, float a0, float a1, const LanesShape *shape, uintptr_t y, const LanesStrides *ys, uintptr_t x, const LanesStrides *xs) {
	return lanes_unary(s, op, a0, a1, shape, (float *)y, ys, (const float *)x, xs);
}
static int lanes_where_at(lanes_stream s, const LanesShape *shape, uintptr_t y, const LanesStrides *ys, uintptr_t c, const LanesStrides *cs, uintptr_t a, const LanesStrides *as, uintptr_t b, const LanesStrides *bs) {
	return lanes_where(s, shape, (float *)y, ys, (const float *)c, cs, (const float *)a, as, (const float *)b, bs);
}
static int lanes_unary_backward_at(lanes_stream s, int op, int from_y, float a0, float a1, const LanesShape *shape, uintptr_t dx, const LanesStrides *dxs, uintptr_t dy, const LanesStrides *dys, uintptr_t v, const LanesStrides *vs) {
	return lanes_unary_backward(s, op, from_y, a0, a1, shape, (float *)dx, dxs, (const float *)dy, dys, (const float *)v, vs);
}
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// The Elementwise family (tensor.ElementwiseKernels) and the plugin's
// BiasAct, Add and Mul. Every op of the family has a kernel
// (elementwise.cu): one grid-stride loop over dst's elements per op, each
// operand read or written through its own strides (broadcast, transposed,
// sliced: no gather), as tensor's CPU kernels compute it (the
// transcendental ones within a few ulp of them).

// elemCodes are elementwise.cu's op codes (kernels.h) of tensor's ElemOps.
var elemCodes = map[tensor.ElemOp]C.int{
	tensor.ElemAdd: C.LANES_ELEM_ADD, tensor.ElemSub: C.LANES_ELEM_SUB, tensor.ElemMul: C.LANES_ELEM_MUL,
	tensor.ElemDiv: C.LANES_ELEM_DIV, tensor.ElemMaximum: C.LANES_ELEM_MAXIMUM, tensor.ElemMinimum: C.LANES_ELEM_MINIMUM,
	tensor.ElemPow: C.LANES_ELEM_POW, tensor.ElemGreater: C.LANES_ELEM_GREATER, tensor.ElemGreaterEqual: C.LANES_ELEM_GREATER_EQUAL,
	tensor.ElemLess: C.LANES_ELEM_LESS, tensor.ElemLessEqual: C.LANES_ELEM_LESS_EQUAL, tensor.ElemEqual: C.LANES_ELEM_EQUAL,
	tensor.ElemNotEqual: C.LANES_ELEM_NOT_EQUAL,
	tensor.ElemExp:      C.LANES_ELEM_EXP, tensor.ElemLog: C.LANES_ELEM_LOG, tensor.ElemSigmoid: C.LANES_ELEM_SIGMOID,
	tensor.ElemSiLU: C.LANES_ELEM_SILU, tensor.ElemTanh: C.LANES_ELEM_TANH, tensor.ElemSoftplus: C.LANES_ELEM_SOFTPLUS,
	tensor.ElemErf: C.LANES_ELEM_ERF, tensor.ElemGELU: C.LANES_ELEM_GELU, tensor.ElemGELUTanh: C.LANES_ELEM_GELU_TANH,
	tensor.ElemAbs: C.LANES_ELEM_ABS, tensor.ElemNeg: C.LANES_ELEM_NEG, tensor.ElemSqrt: C.LANES_ELEM_SQRT,
	tensor.ElemReLU: C.LANES_ELEM_RELU, tensor.ElemLeakyReLU: C.LANES_ELEM_LEAKY_RELU, tensor.ElemELU: C.LANES_ELEM_ELU,
	tensor.ElemClamp: C.LANES_ELEM_CLAMP, tensor.ElemScale: C.LANES_ELEM_SCALE, tensor.ElemAddScalar: C.LANES_ELEM_ADD_SCALAR,
	tensor.ElemFill: C.LANES_ELEM_FILL,
	tensor.ElemMod:  C.LANES_ELEM_MOD, tensor.ElemFmod: C.LANES_ELEM_FMOD, tensor.ElemLogicalAnd: C.LANES_ELEM_LOGICAL_AND,
	tensor.ElemLogicalOr: C.LANES_ELEM_LOGICAL_OR, tensor.ElemLogicalXor: C.LANES_ELEM_LOGICAL_XOR,
	tensor.ElemSin: C.LANES_ELEM_SIN, tensor.ElemCos: C.LANES_ELEM_COS, tensor.ElemTan: C.LANES_ELEM_TAN,
	tensor.ElemLog1p: C.LANES_ELEM_LOG1P, tensor.ElemExpm1: C.LANES_ELEM_EXPM1, tensor.ElemFloor: C.LANES_ELEM_FLOOR,
	tensor.ElemCeil: C.LANES_ELEM_CEIL, tensor.ElemRound: C.LANES_ELEM_ROUND, tensor.ElemSign: C.LANES_ELEM_SIGN,
	tensor.ElemIsNaN: C.LANES_ELEM_IS_NAN, tensor.ElemIsInf: C.LANES_ELEM_IS_INF, tensor.ElemIsFinite: C.LANES_ELEM_IS_FINITE,
	tensor.ElemLogicalNot: C.LANES_ELEM_LOGICAL_NOT,
}

// elemCode returns op's code, which must be one of the method's kind
// (binary ops and comparisons, or unary ops); anything else is a
// programmer error, as on the CPU.
func elemCode(method string, op tensor.ElemOp, binary bool) C.int {
	code, ok := elemCodes[op]
	if !ok || (op < tensor.ElemExp) != binary {
		panic(fmt.Sprintf("cudaplugin: %s: op %d is not one of the method's ops", method, op))
	}
	return code
}

// Binary implements tensor.ElementwiseKernels: dst = op(a, b) for every
// binary op and comparison, the operands broadcast to dst's shape, any
// views (an operand overlapping dst but as the very same view is copied
// aside first); a or b may be a 0-d host scalar (uploaded).
func (g *GPU) Binary(op tensor.ElemOp, dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	code := elemCode("Binary", op, true)
	return g.mapOp("Binary", dst, []*tensor.Tensor{a, b}, func(ls *C.LanesShape, p []uintptr, s []C.LanesStrides) error {
		return check("lanes_binary", C.lanes_binary_at(g.stream, code, ls, C.uintptr_t(p[0]), &s[0], C.uintptr_t(p[1]), &s[1], C.uintptr_t(p[2]), &s[2]))
	})
}

// Unary implements tensor.ElementwiseKernels: dst = op(x; arg) for every
// unary op, x broadcast to dst's shape, any views, as Binary's operands;
// ElemFill (x nil) of any value.
func (g *GPU) Unary(op tensor.ElemOp, dst, x *tensor.Tensor, arg [2]float32) error {
	if !g.opened() {
		return errNilGPU
	}
	code := elemCode("Unary", op, false)
	var in []*tensor.Tensor
	if op != tensor.ElemFill {
		in = []*tensor.Tensor{x}
	}
	return g.mapOp("Unary", dst, in, func(ls *C.LanesShape, p []uintptr, s []C.LanesStrides) error {
		var xp C.uintptr_t
		xs := (*C.LanesStrides)(nil)
		if len(p) > 1 {
			xp, xs = C.uintptr_t(p[1]), &s[1]
		}
		return check("lanes_unary", C.lanes_unary_at(g.stream, code, C.float(arg[0]), C.float(arg[1]), ls, C.uintptr_t(p[0]), &s[0], xp, xs))
	})
}

// Where implements tensor.ElementwiseKernels: dst = a where cond is
// nonzero (NaN included), else b, the three broadcast to dst's shape, any
// views, as Binary's operands.
func (g *GPU) Where(dst, cond, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	return g.mapOp("Where", dst, []*tensor.Tensor{cond, a, b}, func(ls *C.LanesShape, p []uintptr, s []C.LanesStrides) error {
		return check("lanes_where", C.lanes_where_at(g.stream, ls, C.uintptr_t(p[0]), &s[0], C.uintptr_t(p[1]), &s[1],
			C.uintptr_t(p[2]), &s[2], C.uintptr_t(p[3]), &s[3]))
	})
}

// UnaryBackward implements tensor.ElementwiseKernels: dx = dy·f'(·) for
// every unary op but ElemFill, from x or y (the one given; neither for
// ElemNeg, ElemScale, ElemAddScalar and the rounding ops, whose gradient
// is 0) as tensor.UnaryGrad documents, in
// its kernels' order of operations; any views, dx possibly one of them.
func (g *GPU) UnaryBackward(op tensor.ElemOp, dx, dy, x, y *tensor.Tensor, arg [2]float32) error {
	if !g.opened() {
		return errNilGPU
	}
	code := elemCode("UnaryBackward", op, false)
	if op >= tensor.ElemFill {
		panic(fmt.Sprintf("cudaplugin: UnaryBackward: op %d has no gradient", op))
	}
	in, fromY := []*tensor.Tensor{dy}, y != nil
	switch {
	case op == tensor.ElemNeg || op == tensor.ElemScale || op == tensor.ElemAddScalar,
		op == tensor.ElemFloor || op == tensor.ElemCeil || op == tensor.ElemRound || op == tensor.ElemSign:
	case fromY:
		in = append(in, y)
	case x != nil:
		in = append(in, x)
	default:
		panic(fmt.Sprintf("cudaplugin: UnaryBackward: the gradient of op %d lacks its operand", op))
	}
	return g.mapOp("UnaryBackward", dx, in, func(ls *C.LanesShape, p []uintptr, s []C.LanesStrides) error {
		var vp C.uintptr_t
		vs := (*C.LanesStrides)(nil)
		if len(p) > 2 {
			vp, vs = C.uintptr_t(p[2]), &s[2]
		}
		return check("lanes_unary_backward", C.lanes_unary_backward_at(g.stream, code, cbool(fromY), C.float(arg[0]), C.float(arg[1]), ls,
			C.uintptr_t(p[0]), &s[0], C.uintptr_t(p[1]), &s[1], vp, vs))
	})
}

// mapOp runs an elementwise kernel over dst's elements: each input on
// this GPU (or a 0-d host scalar, uploaded) viewed at dst's shape
// (broadcast) and read through its strides, dst written through its own
// (a host dst through a temporary, downloaded). An input that overlaps
// dst other than as the very same view is copied aside first (the kernel
// reads each element before it writes it, and only there). launch queues
// the kernel over the iteration space (operand.go: merge), once per
// piece of it (more than LANES_MAX_DIMS dimensions that do not merge take
// several), with the addresses of dst and the inputs and their strides.
func (g *GPU) mapOp(op string, dst *tensor.Tensor, inputs []*tensor.Tensor, launch func(ls *C.LanesShape, p []uintptr, s []C.LanesStrides) error) error {
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	c := &call{g: g}
	defer c.release()
	if dst.Len() == 0 {
		return nil
	}
	d, on, err := c.view(op, "dst", dst)
	if err != nil {
		return err
	}
	out := target{dst: dst}
	if !on {
		m, err := c.temp(dst.Len())
		if err != nil {
			return err
		}
		d = dense(m.ptr(0), dst.Shape())
		out = target{ptr: d.ptr, dst: dst, temp: true}
	}
	ops := []operand{d}
	for _, t := range inputs {
		o, err := c.input(op, t)
		if err != nil {
			return err
		}
		o = o.broadcast(d.shape)
		if err := c.aside(d, true, &o); err != nil {
			return err
		}
		ops = append(ops, o)
	}
	strides := make([][]int, len(ops))
	for i, o := range ops {
		strides[i] = o.strides
	}
	err = merge(d.shape, strides...).each(func(ls *C.LanesShape, ss []C.LanesStrides, offs []int) error {
		p := make([]uintptr, len(ops))
		for i, o := range ops {
			p[i] = o.ptr + uintptr(offs[i])*4
		}
		return launch(ls, p, ss)
	})
	if err != nil {
		return err
	}
	return c.finish(out)
}

// BiasAct sets dst to act(x + bias) with bias (nil: none) broadcast along
// x's axis (1 for an NCHW convolution output, -1 for a linear layer's).
// dst may be x. Every tensor is a contiguous tensor on the GPU.
func (g *GPU) BiasAct(dst, x, bias *tensor.Tensor, axis int, act Activation) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape("BiasAct", dst, x)
	shape := x.Shape()
	if axis < 0 {
		axis += len(shape)
	}
	if axis < 0 || axis >= len(shape) {
		panic(fmt.Sprintf("cudaplugin: BiasAct: axis out of range for shape %v", shape))
	}
	if bias != nil && (bias.Dims() != 1 || bias.Dim(0) != shape[axis]) {
		panic(fmt.Sprintf("cudaplugin: BiasAct: bias shape %v for axis %d of %v", bias.Shape(), axis, shape))
	}
	if act != Identity && act != ReLU {
		panic(fmt.Sprintf("cudaplugin: BiasAct: unknown activation %d", act))
	}
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	if !fitsInt32(shape[axis]) {
		return fmt.Errorf("cudaplugin: BiasAct: %d channels do not fit the kernels' 32-bit sizes", shape[axis])
	}
	c := &call{g: g}
	defer c.release()
	p := c.deviceOperands("BiasAct", dst, x, bias)
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_bias_act", C.lanes_bias_act_at(g.stream, C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.uintptr_t(p[2]),
		C.longlong(x.Len()), C.int(shape[axis]), C.longlong(max(inner, 1)), C.int(act)))
}

// Add sets dst = a + b elementwise (same shapes; dst may be a or b).
// Every tensor is a contiguous tensor on the GPU (tensor.Add takes any).
func (g *GPU) Add(dst, a, b *tensor.Tensor) error { return g.binary("Add", tensor.ElemAdd, dst, a, b) }

// Mul sets dst = a · b elementwise (same shapes; dst may be a or b), as
// Add.
func (g *GPU) Mul(dst, a, b *tensor.Tensor) error { return g.binary("Mul", tensor.ElemMul, dst, a, b) }

func (g *GPU) binary(op string, e tensor.ElemOp, dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape(op, a, b)
	sameShape(op, dst, a)
	c := &call{g: g}
	defer c.release()
	c.deviceOperands(op, dst, a, b)
	return g.Binary(e, dst, a, b)
}
