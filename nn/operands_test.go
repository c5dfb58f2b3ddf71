package nn

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// panicMsg runs f and returns what it panicked with ("" for no panic).
func panicMsg(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
			if msg == "" {
				msg = "(empty panic)"
			}
		}
	}()
	f()
	return ""
}

// wantPanic fails t unless f panics with a message starting "nn: " and
// holding every one of wants.
func wantPanic(t *testing.T, f func(), wants ...string) {
	t.Helper()
	msg := panicMsg(f)
	if msg == "" {
		t.Errorf("no panic, want one containing %q", wants)
		return
	}
	if !strings.HasPrefix(msg, "nn: ") {
		t.Errorf("panic %q does not start with \"nn: \"", msg)
	}
	for _, w := range wants {
		if !strings.Contains(msg, w) {
			t.Errorf("panic %q, want one containing %q", msg, w)
		}
	}
}

// operandCase uses v as the operand name of the Tape method op (or of a
// module's Forward); v has the given shape, and its values are zeros.
type operandCase struct {
	op, name string
	shape    []int
	f        func(tp *Tape, v *Var)
}

// operandCases covers every *Var operand of every Tape method, and the
// input of the module Forwards that do not go straight to one.
func operandCases() []operandCase {
	r := rand.New(rand.NewPCG(5, 6))
	p := func(shape ...int) *Var { return NewParam(tensor.RandN(r, shape...)) }
	img := []int{1, 2, 4, 4}
	conv := tensor.ConvParams{Padding: [2]int{1, 1}}
	pool := tensor.PoolParams{Kernel: [2]int{2, 2}}
	cs := []operandCase{
		{"MatMul", "a", []int{2, 3}, func(tp *Tape, v *Var) { tp.MatMul(v, p(3, 2)) }},
		{"MatMul", "b", []int{3, 2}, func(tp *Tape, v *Var) { tp.MatMul(p(2, 3), v) }},
		{"Linear", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Linear(v, p(4, 3), p(4), Act{}) }},
		{"Linear", "weight", []int{4, 3}, func(tp *Tape, v *Var) { tp.Linear(p(2, 3), v, p(4), Act{}) }},
		{"Linear", "bias", []int{4}, func(tp *Tape, v *Var) { tp.Linear(p(2, 3), p(4, 3), v, Act{}) }},
		{"Scale", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Scale(v, 2) }},
		{"Sum", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Sum(v) }},
		{"Mean", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Mean(v) }},
		{"Reshape", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Reshape(v, 3, 2) }},
		{"Flatten", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Flatten(v) }},
		{"Conv2D", "x", img, func(tp *Tape, v *Var) { tp.Conv2D(v, p(3, 2, 3, 3), p(3), conv) }},
		{"Conv2D", "weight", []int{3, 2, 3, 3}, func(tp *Tape, v *Var) { tp.Conv2D(p(img...), v, p(3), conv) }},
		{"Conv2D", "bias", []int{3}, func(tp *Tape, v *Var) { tp.Conv2D(p(img...), p(3, 2, 3, 3), v, conv) }},
		{"MaxPool2D", "x", img, func(tp *Tape, v *Var) { tp.MaxPool2D(v, pool) }},
		{"Conv2DMaxPool", "x", img, func(tp *Tape, v *Var) { tp.Conv2DMaxPool(v, p(3, 2, 3, 3), p(3), conv, pool) }},
		{"Conv2DMaxPool", "weight", []int{3, 2, 3, 3}, func(tp *Tape, v *Var) { tp.Conv2DMaxPool(p(img...), v, p(3), conv, pool) }},
		{"Conv2DMaxPool", "bias", []int{3}, func(tp *Tape, v *Var) { tp.Conv2DMaxPool(p(img...), p(3, 2, 3, 3), v, conv, pool) }},
		{"AvgPool2D", "x", img, func(tp *Tape, v *Var) { tp.AvgPool2D(v, pool) }},
		{"BatchNorm", "x", []int{2, 3, 2}, func(tp *Tape, v *Var) { tp.BatchNorm(v, p(3), p(3), nil, nil, true, NormParams{}) }},
		{"BatchNorm", "gamma", []int{3}, func(tp *Tape, v *Var) { tp.BatchNorm(p(2, 3, 2), v, p(3), nil, nil, true, NormParams{}) }},
		{"BatchNorm", "beta", []int{3}, func(tp *Tape, v *Var) { tp.BatchNorm(p(2, 3, 2), p(3), v, nil, nil, true, NormParams{}) }},
		{"LayerNorm", "x", []int{2, 4}, func(tp *Tape, v *Var) { tp.LayerNorm(v, p(4), p(4), NormParams{}) }},
		{"LayerNorm", "gamma", []int{4}, func(tp *Tape, v *Var) { tp.LayerNorm(p(2, 4), v, p(4), NormParams{}) }},
		{"LayerNorm", "beta", []int{4}, func(tp *Tape, v *Var) { tp.LayerNorm(p(2, 4), p(4), v, NormParams{}) }},
		{"Dropout", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.Dropout(v, 0.5, r) }},
		{"Embedding", "weight", []int{5, 4}, func(tp *Tape, v *Var) { tp.Embedding(tensor.New(3), v) }},
		{"CrossEntropy", "logits", []int{2, 3}, func(tp *Tape, v *Var) { tp.CrossEntropy(v, tensor.New(2)) }},
		{"MSE", "pred", []int{2, 3}, func(tp *Tape, v *Var) { tp.MSE(v, tensor.New(2, 3)) }},
		{"BCEWithLogits", "x", []int{2, 3}, func(tp *Tape, v *Var) { tp.BCEWithLogits(v, tensor.New(2, 3)) }},
		{"Backward", "loss", []int{}, func(tp *Tape, v *Var) { tp.Backward(v) }},
		{"BackwardRetain", "loss", []int{}, func(tp *Tape, v *Var) { tp.BackwardRetain(v) }},
		// Modules whose Forward does not hand x to a Tape method first.
		{"Sequential", "x", []int{2, 3}, func(tp *Tape, v *Var) { NewSequential().Forward(tp, v) }},
		{"Dropout", "x", []int{2, 3}, func(tp *Tape, v *Var) {
			d := NewDropout(0.5, r)
			d.SetTraining(false)
			d.Forward(tp, v)
		}},
		{"Embedding", "indices", []int{3}, func(tp *Tape, v *Var) { NewEmbedding(5, 4, r).Forward(tp, v) }},
	}
	for _, op := range []string{"Add", "Sub", "Mul"} {
		f := map[string]func(*Tape, *Var, *Var) *Var{"Add": (*Tape).Add, "Sub": (*Tape).Sub, "Mul": (*Tape).Mul}[op]
		cs = append(cs,
			operandCase{op, "a", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, v, p(3)) }},
			operandCase{op, "b", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, p(3), v) }})
	}
	unary := map[string]func(*Tape, *Var) *Var{
		"ReLU": (*Tape).ReLU, "GELU": (*Tape).GELU, "SiLU": (*Tape).SiLU, "Sigmoid": (*Tape).Sigmoid, "Tanh": (*Tape).Tanh,
		"LeakyReLU": func(tp *Tape, x *Var) *Var { return tp.LeakyReLU(x, 0.1) },
		"ELU":       func(tp *Tape, x *Var) *Var { return tp.ELU(x, 1) },
		"Activate":  func(tp *Tape, x *Var) *Var { return tp.Activate(x, Act{Kind: ActNone}) },
	}
	for _, op := range sortedKeys(unary) {
		f := unary[op]
		// ReLU and the others are Activate: their messages name it.
		cs = append(cs, operandCase{"Activate", "x", []int{2, 3}, func(tp *Tape, v *Var) { f(tp, v) }})
	}
	cs = append(cs, tapeOpOperandCases(p)...)
	cs = append(cs, sortOpOperandCases(p)...)
	cs = append(cs, convOperandCases(p)...)
	cs = append(cs, hostOpOperandCases(p)...)
	cs = append(cs, gradGraphOperandCases(p)...)
	cs = append(cs, elemfnOperandCases(p)...)
	cs = append(cs, normLossOperandCases(p)...)
	return cs
}

// everyOperandCased fails t when a Tape method taking a *Var has no case
// in operandCases, so that the stale and nil checks cover new operations.
func everyOperandCased(t *testing.T) {
	cased := map[string]bool{}
	for _, c := range operandCases() {
		cased[c.op] = true
	}
	aliases := map[string]string{"ReLU": "Activate", "LeakyReLU": "Activate", "ELU": "Activate", "GELU": "Activate",
		"SiLU": "Activate", "Sigmoid": "Activate", "Tanh": "Activate"}
	varType := reflect.TypeOf(&Var{})
	typ := reflect.TypeOf(&Tape{})
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		takesVar := false
		for j := range m.Type.NumIn() {
			takesVar = takesVar || m.Type.In(j) == varType
		}
		name := m.Name
		if a, ok := aliases[name]; ok {
			name = a
		}
		if takesVar && !cased[name] {
			t.Errorf("Tape.%s takes a *Var but has no case in operandCases", m.Name)
		}
	}
}

// TestStaleVarRefused checks that every operation refuses a Var made
// before the tape's last Reset, naming the step it was made in and the
// tape's, also after the tape handed out as many new Vars as the old step
// had (which reused the old Var in place and made it pass for a Var of the
// new step, reading the new step's values).
func TestStaleVarRefused(t *testing.T) {
	t.Run("every operand cased", everyOperandCased)
	for _, c := range operandCases() {
		for _, resets := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/%s/resets=%d", c.op, c.name, resets), func(t *testing.T) {
				tp := NewTape()
				stale := tp.Scale(NewParam(tensor.New(c.shape...)), 1)
				for range resets {
					tp.Reset()
					for range 4 {
						tp.Scale(NewParam(tensor.New(c.shape...)), 1)
					}
				}
				wantPanic(t, func() { c.f(tp, stale) }, "nn: "+c.op+": "+c.name,
					"made in step 1,", fmt.Sprintf("in step %d)", 1+resets))
			})
		}
	}
	t.Run("value", func(t *testing.T) {
		// The case the issue reports: a stale Var silently read the
		// values of the Var that took its place.
		tp := NewTape()
		y := tp.ReLU(NewParam(tensor.FromSlice([]float32{1, 2}, 2)))
		tp.Reset()
		tp.Const(tensor.FromSlice([]float32{5, 7}, 2))
		tp.Const(tensor.FromSlice([]float32{5, 7}, 2))
		wantPanic(t, func() { tp.Sum(y) }, "nn: Sum: x of shape [2] was made in step 1, before the tape's last Reset (it is in step 2)")
	})
	t.Run("accessors", func(t *testing.T) {
		// Value, Grad and Shape of a stale Var would hand out the new
		// step's storage: they are refused too.
		tp := NewTape()
		y := tp.ReLU(NewParam(tensor.FromSlice([]float32{1, 2}, 2)))
		tp.Backward(tp.Sum(y))
		tp.Reset()
		tp.ReLU(NewParam(tensor.FromSlice([]float32{5, 7}, 2)))
		wantPanic(t, func() { y.Value() }, "nn: Var.Value: a Var made in step 1 read after the tape's Reset (it is in step 2)")
		wantPanic(t, func() { y.Grad() }, "nn: Var.Grad: a Var made in step 1")
		wantPanic(t, func() { y.Shape() }, "nn: Var.Shape: a Var made in step 1")
		var nilVar *Var
		wantPanic(t, func() { nilVar.Value() }, "nn: Var.Value: nil Var")
	})
	t.Run("constant", func(t *testing.T) {
		tp := NewTape()
		x := tp.Const(tensor.New(2, 3))
		tp.Reset()
		tp.Const(tensor.New(2, 3))
		wantPanic(t, func() { tp.Mean(x) }, "nn: Mean: x", "made in step 1")
	})
	t.Run("parameters outlive it", func(t *testing.T) {
		tp := NewTape()
		w := NewParam(tensor.Ones(2))
		tp.Backward(tp.Sum(w))
		tp.Reset()
		tp.Backward(tp.Sum(w))
		if g := w.Grad().Data(); g[0] != 2 || g[1] != 2 {
			t.Errorf("gradient %v after two steps, want [2 2]", g)
		}
	})
}

// TestNilArguments checks that nil Vars, tensors, tapes and random
// sources end in panics naming the function and the argument, not in
// nil-pointer dereferences.
func TestNilArguments(t *testing.T) {
	optional := map[string]bool{"bias": true, "gamma": true, "beta": true}
	for _, c := range operandCases() {
		if optional[c.name] {
			continue
		}
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			wantPanic(t, func() { c.f(NewTape(), nil) }, "nn: "+c.op+": nil "+c.name)
		})
	}
	r := rand.New(rand.NewPCG(1, 2))
	x := tensor.New(2, 3)
	w := NewParam(tensor.New(4, 3))
	tests := []struct {
		name, want string
		f          func()
	}{
		{"Const", "nn: Const: nil tensor", func() { NewTape().Const(nil) }},
		{"Const/nil tape", "nn: Const: nil Tape", func() { (*Tape)(nil).Const(x) }},
		{"Linear/nil tape", "nn: Linear: nil Tape", func() { (*Tape)(nil).Linear(w, w, nil, Act{}) }},
		{"NewParam", "nn: NewParam: nil tensor", func() { NewParam(nil) }},
		{"CrossEntropy", "nn: CrossEntropy: nil labels", func() { NewTape().CrossEntropy(w, nil) }},
		{"MSE", "nn: MSE: nil target", func() { NewTape().MSE(w, nil) }},
		{"BCEWithLogits", "nn: BCEWithLogits: nil target", func() { NewTape().BCEWithLogits(w, nil) }},
		{"Embedding", "nn: Embedding: nil indices", func() { NewTape().Embedding(nil, w) }},
		{"Dropout/rand", "nn: Dropout: nil rand source", func() { NewTape().Dropout(w, 0.5, nil) }},
		{"NewLinear", "nn: NewLinear: nil rand source", func() { NewLinear(3, 4, nil) }},
		{"NewConv2D", "nn: NewConv2D: nil rand source", func() { NewConv2D(1, 2, 3, tensor.ConvParams{}, nil) }},
		{"NewDropout", "nn: NewDropout: nil rand source", func() { NewDropout(0.5, nil) }},
		{"NewEmbedding", "nn: NewEmbedding: nil rand source", func() { NewEmbedding(3, 4, nil) }},
		{"Uniform/rand", "nn: Uniform: nil rand source", func() { Uniform(x, 0, 1, nil) }},
		{"Uniform/tensor", "nn: Uniform: nil tensor", func() { Uniform(nil, 0, 1, r) }},
		{"Normal/rand", "nn: Normal: nil rand source", func() { Normal(x, 0, 1, nil) }},
		{"Normal/tensor", "nn: Normal: nil tensor", func() { Normal(nil, 0, 1, r) }},
		{"KaimingUniform", "nn: KaimingUniform: nil rand source", func() { KaimingUniform(x, 3, 1, nil) }},
		{"KaimingNormal", "nn: KaimingNormal: nil tensor", func() { KaimingNormal(nil, 3, 1, r) }},
		{"XavierUniform", "nn: XavierUniform: nil rand source", func() { XavierUniform(x, 3, 2, 1, nil) }},
		{"XavierNormal", "nn: XavierNormal: nil tensor", func() { XavierNormal(nil, 3, 2, 1, r) }},
		{"KaimingUniform/fan", "nn: KaimingUniform: fan 0 for a tensor of shape [2 3]", func() { KaimingUniform(x, 0, 1, r) }},
		{"XavierNormal/fan", "nn: XavierNormal: fan 0", func() { XavierNormal(x, 0, 0, 1, r) }},
		{"NewLinear/size", "nn: NewLinear: negative size in=-1", func() { NewLinear(-1, 4, r) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantPanic(t, tc.f, tc.want) })
	}
	// Every module's Forward, given a nil input.
	modules := []struct {
		op string
		m  Module
	}{
		{"Linear", NewLinear(3, 4, r)},
		{"Conv2D", NewConv2D(2, 3, 3, tensor.ConvParams{}, r)},
		{"MaxPool2D", &MaxPool2D{P: tensor.PoolParams{Kernel: [2]int{2, 2}}}},
		{"AvgPool2D", &AvgPool2D{P: tensor.PoolParams{Kernel: [2]int{2, 2}}}},
		{"Flatten", Flatten{}},
		{"Activate", NewReLU()},
		{"Activate", &Activation{}},
		{"Dropout", NewDropout(0.5, r)},
		{"BatchNorm", NewBatchNorm2D(3)},
		{"LayerNorm", NewLayerNorm(3)},
		{"Embedding", NewEmbedding(3, 4, r)},
		{"Sequential", NewSequential(NewReLU())},
		{"Sequential", NewSequential()},
	}
	for _, m := range modules {
		t.Run(fmt.Sprintf("%T.Forward", m.m), func(t *testing.T) {
			wantPanic(t, func() { m.m.Forward(NewTape(), nil) }, "nn: "+m.op+": nil ")
		})
	}
}
