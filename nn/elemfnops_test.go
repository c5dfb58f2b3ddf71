package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// elemfnTapeCases are the tapeOpCases of elemfnops.go: gradients by finite
// differences, forwards against package tensor, and the stand-in device.
// Inputs keep away from the kinks (integers for Floor, Ceil and Sign, and
// halves for Round; quotients near integers for Mod and Fmod's b) and from
// tan's poles and log1p's -1.
func elemfnTapeCases(r *rand.Rand) []tapeOpCase {
	rn := func(shape ...int) *tensor.Tensor { return tensor.Scale(tensor.RandN(r, shape...), 2) }
	one := func(f func(tp *Tape, x *Var) *Var) func(*Tape, []*Var, []*tensor.Tensor) *Var {
		return func(tp *Tape, in []*Var, _ []*tensor.Tensor) *Var { return f(tp, in[0]) }
	}
	ref1 := func(f func(x *tensor.Tensor) *tensor.Tensor) func(in, c []*tensor.Tensor) *tensor.Tensor {
		return func(in, _ []*tensor.Tensor) *tensor.Tensor { return f(in[0]) }
	}
	ints := []float32{-6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6}
	halves := []float32{-5.5, -4.5, -3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5}
	cs := []tapeOpCase{
		{name: "Sin", op: "Sin", inputs: []*tensor.Tensor{rn(3, 4)}, f: one((*Tape).Sin), ref: ref1(tensor.Sin)},
		{name: "Cos", op: "Cos", inputs: []*tensor.Tensor{rn(2, 3, 2)}, f: one((*Tape).Cos), ref: ref1(tensor.Cos)},
		{name: "Tan", op: "Tan", inputs: []*tensor.Tensor{tensor.RandU(r, -1.2, 1.2, 3, 5)}, f: one((*Tape).Tan), ref: ref1(tensor.Tan)},
		{name: "Log1p", op: "Log1p", inputs: []*tensor.Tensor{tensor.RandU(r, -0.8, 5, 4, 3)}, f: one((*Tape).Log1p), ref: ref1(tensor.Log1p)},
		{name: "Expm1", op: "Expm1", inputs: []*tensor.Tensor{rn(3, 4)}, f: one((*Tape).Expm1), ref: ref1(tensor.Expm1)},
		{name: "Floor", op: "Floor", inputs: []*tensor.Tensor{avoid(rn(3, 4), ints...)}, f: one((*Tape).Floor), ref: ref1(tensor.Floor)},
		{name: "Ceil", op: "Ceil", inputs: []*tensor.Tensor{avoid(rn(3, 4), ints...)}, f: one((*Tape).Ceil), ref: ref1(tensor.Ceil)},
		{name: "Round", op: "Round", inputs: []*tensor.Tensor{avoid(rn(3, 4), halves...)}, f: one((*Tape).Round), ref: ref1(tensor.Round)},
		{name: "Sign", op: "Sign", inputs: []*tensor.Tensor{avoid(rn(3, 4), 0)}, f: one((*Tape).Sign), ref: ref1(tensor.Sign)},
	}
	for _, op := range []string{"Mod", "Fmod"} {
		f := map[string]func(*Tape, *Var, *Var) *Var{"Mod": (*Tape).Mod, "Fmod": (*Tape).Fmod}[op]
		g := map[string]func(a, b *tensor.Tensor) *tensor.Tensor{"Mod": tensor.Mod, "Fmod": tensor.Fmod}[op]
		for _, sh := range [][2][]int{{{3, 4}, {3, 4}}, {{2, 3, 4}, {4}}, {{4}, {3, 4}}} {
			a, b := rn(sh[0]...), tensor.RandU(r, 0.7, 2.5, sh[1]...)
			for i, v := range b.Data() { // both signs of the divisor
				if i%2 == 1 {
					b.Data()[i] = -v
				}
			}
			a = keepQuotients(a, b)
			two := func(tp *Tape, in []*Var, _ []*tensor.Tensor) *Var { return f(tp, in[0], in[1]) }
			cs = append(cs, tapeOpCase{name: op + "/" + shapeName(sh), op: op, inputs: []*tensor.Tensor{a, b}, f: two,
				ref: func(in, _ []*tensor.Tensor) *tensor.Tensor { return g(in[0], in[1]) }, h: 1e-3})
		}
	}
	return cs
}

// keepQuotients moves a's elements so that no a/b (broadcast) is within
// 0.25 of an integer, where the remainders jump (the finite differences'
// steps, 1e-3 relative, move a quotient by less than 0.02).
func keepQuotients(a, b *tensor.Tensor) *tensor.Tensor {
	for range 200 {
		q := tensor.Div(a, b)
		bad := tensor.Less(tensor.Abs(tensor.Sub(q, tensor.Round(q))), tensor.Scalar(0.25))
		if tensor.Sum(bad, false).Data()[0] == 0 {
			return a
		}
		// Shift a by 0.4 where any of its broadcast quotients is bad.
		shift := tensor.New(a.Shape()...)
		tensor.SumToInto(shift, bad)
		a = tensor.Add(a, tensor.Scale(tensor.Minimum(shift, tensor.Scalar(1)), 0.4))
	}
	panic("keepQuotients: quotients stay near integers")
}

func shapeName(sh [2][]int) string {
	s := ""
	for _, p := range sh {
		s += "["
		for i, d := range p {
			if i > 0 {
				s += " "
			}
			s += string(rune('0' + d))
		}
		s += "]"
	}
	return s
}

// TestElemfnTapePanics: Mod and Fmod name themselves and the shapes.
func TestElemfnTapePanics(t *testing.T) {
	tp := NewTape()
	a, b := NewParam(tensor.New(2, 3)), NewParam(tensor.New(4))
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tp.Mod(a, b) }, "nn: Mod: shapes [2 3] and [4] do not broadcast"},
		{func() { tp.Fmod(a, b) }, "nn: Fmod: shapes [2 3] and [4] do not broadcast"},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); msg != c.want {
					t.Errorf("panic %q, want %q", msg, c.want)
				}
			}()
			c.f()
		}()
	}
}

// elemfnOperandCases are operandCases for the operations of elemfnops.go
// (p makes a parameter of a shape).
func elemfnOperandCases(p func(shape ...int) *Var) []operandCase {
	unary := map[string]func(*Tape, *Var) *Var{
		"Sin": (*Tape).Sin, "Cos": (*Tape).Cos, "Tan": (*Tape).Tan, "Log1p": (*Tape).Log1p, "Expm1": (*Tape).Expm1,
		"Floor": (*Tape).Floor, "Ceil": (*Tape).Ceil, "Round": (*Tape).Round, "Sign": (*Tape).Sign,
	}
	var cs []operandCase
	for _, op := range sortedKeys(unary) {
		f := unary[op]
		cs = append(cs, operandCase{op, "x", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, v) }})
	}
	for _, op := range []string{"Mod", "Fmod"} {
		f := map[string]func(*Tape, *Var, *Var) *Var{"Mod": (*Tape).Mod, "Fmod": (*Tape).Fmod}[op]
		cs = append(cs,
			operandCase{op, "a", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, v, p(3)) }},
			operandCase{op, "b", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, p(3), v) }})
	}
	return cs
}
