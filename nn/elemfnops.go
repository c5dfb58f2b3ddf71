package nn

import (
	"github.com/lanesgo/lanes/tensor"
)

// The elementary functions, rounding and remainders of tensor/elemfn.go on
// the tape. The unary ones are elemFuncs (their gradients
// tensor.UnaryGradInto's: dy·cos x, -dy·sin x, dy·(1 + y²), dy/(1 + x),
// dy·(y + 1), and 0 for Floor, Ceil, Round and Sign, as PyTorch's).

func init() {
	for e, f := range map[tensor.ElemOp]func(dst, x *tensor.Tensor) *tensor.Tensor{
		tensor.ElemSin: tensor.SinInto, tensor.ElemCos: tensor.CosInto, tensor.ElemTan: tensor.TanInto,
		tensor.ElemLog1p: tensor.Log1pInto, tensor.ElemExpm1: tensor.Expm1Into,
		tensor.ElemFloor: tensor.FloorInto, tensor.ElemCeil: tensor.CeilInto,
		tensor.ElemRound: tensor.RoundInto, tensor.ElemSign: tensor.SignInto,
	} {
		elemFuncs[e] = func(dst, x *tensor.Tensor, _ [2]float32) { f(dst, x) }
	}
}

// Sin returns sin(x) elementwise (tensor.Sin); its gradient is g·cos(x).
func (tp *Tape) Sin(x *Var) *Var { return tp.elemFunc("Sin", tensor.ElemSin, [2]float32{}, x) }

// Cos returns cos(x) elementwise (tensor.Cos); its gradient is -g·sin(x).
func (tp *Tape) Cos(x *Var) *Var { return tp.elemFunc("Cos", tensor.ElemCos, [2]float32{}, x) }

// Tan returns tan(x) elementwise (tensor.Tan); its gradient is g·(1 + y²)
// (from the output, as PyTorch's).
func (tp *Tape) Tan(x *Var) *Var { return tp.elemFunc("Tan", tensor.ElemTan, [2]float32{}, x) }

// Log1p returns log(1 + x) elementwise (tensor.Log1p); its gradient is
// g/(1 + x).
func (tp *Tape) Log1p(x *Var) *Var { return tp.elemFunc("Log1p", tensor.ElemLog1p, [2]float32{}, x) }

// Expm1 returns eˣ - 1 elementwise (tensor.Expm1); its gradient is
// g·(y + 1) (from the output).
func (tp *Tape) Expm1(x *Var) *Var { return tp.elemFunc("Expm1", tensor.ElemExpm1, [2]float32{}, x) }

// Floor returns ⌊x⌋ elementwise; its gradient is 0.
func (tp *Tape) Floor(x *Var) *Var { return tp.elemFunc("Floor", tensor.ElemFloor, [2]float32{}, x) }

// Ceil returns ⌈x⌉ elementwise; its gradient is 0.
func (tp *Tape) Ceil(x *Var) *Var { return tp.elemFunc("Ceil", tensor.ElemCeil, [2]float32{}, x) }

// Round returns x rounded half to even elementwise (torch.round); its
// gradient is 0.
func (tp *Tape) Round(x *Var) *Var { return tp.elemFunc("Round", tensor.ElemRound, [2]float32{}, x) }

// Sign returns the sign of x elementwise (tensor.Sign: 0 at ±0, NaN at
// NaN); its gradient is 0.
func (tp *Tape) Sign(x *Var) *Var { return tp.elemFunc("Sign", tensor.ElemSign, [2]float32{}, x) }

// Mod returns the remainder of a/b with the sign of b, with broadcasting
// (tensor.Mod, torch.remainder). The gradients are g for a and
// -g·⌊a/b⌋ for b (⌊·⌋ of the rounded float32 quotient), as PyTorch's.
func (tp *Tape) Mod(a, b *Var) *Var { return tp.remainder("Mod", a, b, false) }

// Fmod returns the remainder of a/b with the sign of a, with broadcasting
// (tensor.Fmod, torch.fmod). The gradients are g for a and -g·trunc(a/b)
// for b (of the rounded float32 quotient), as PyTorch's.
func (tp *Tape) Fmod(a, b *Var) *Var { return tp.remainder("Fmod", a, b, true) }

func (tp *Tape) remainder(op string, a, b *Var, trunc bool) *Var {
	tp.use(op, "a", a)
	tp.use(op, "b", b)
	shape := broadcast(op, a.value, b.value)
	y := tp.allocOn(deviceOf(op, a.value, b.value), shape...)
	if trunc {
		tensor.FmodInto(y, a.value, b.value)
	} else {
		tensor.ModInto(y, a.value, b.value)
	}
	out, nd := tp.result(y, backRemainder, a, b)
	if nd != nil && trunc {
		nd.dims = 1
	}
	return out
}

// backRemainder sends g to a and -g·q to b, q = ⌊a/b⌋ (Mod) or trunc(a/b)
// (Fmod, nd.dims 1) = sign(a/b)·⌊|a/b|⌋, each summed over what it was
// broadcast along.
func backRemainder(tp *Tape, n *node) {
	g := n.out.grad
	a, b := n.in[0], n.in[1]
	if a.requires {
		tp.reduceGrad(a, g)
	}
	if !b.requires {
		return
	}
	q := tp.negQuotient(n, g)
	tensor.MulInto(q, q, g)
	tp.reduceGrad(b, q)
}

// negQuotient returns -q of the remainder node n, in a tape buffer shaped
// as like (its output's shape): q = ⌊a/b⌋ (Mod) or trunc(a/b) (Fmod,
// n.dims 1) = sign(a/b)·⌊|a/b|⌋, of the rounded float32 quotient.
func (tp *Tape) negQuotient(n *node, like *tensor.Tensor) *tensor.Tensor {
	q := tp.like(like)
	tensor.DivInto(q, n.in[0].value, n.in[1].value)
	if n.dims == 1 {
		s := tp.like(like)
		tensor.SignInto(s, q)
		tensor.AbsInto(q, q)
		tensor.FloorInto(q, q)
		tensor.MulInto(q, q, s)
	} else {
		tensor.FloorInto(q, q)
	}
	return tensor.NegInto(q, q)
}
