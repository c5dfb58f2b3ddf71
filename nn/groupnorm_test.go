package nn

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// TestGroupNormGrads checks the backward of GroupNorm, InstanceNorm and
// RMSNorm (to x and to the affine parameters) against finite differences.
func TestGroupNormGrads(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 4))
	x := tensor.RandN(r, 2, 6, 3, 2)
	for _, c := range []gradCase{
		{name: "GroupNorm/affine", inputs: []*tensor.Tensor{x, tensor.RandN(r, 6), tensor.RandN(r, 6)},
			f: func(tp *Tape, in []*Var) *Var { return tp.GroupNorm(in[0], in[1], in[2], 3, 0) }},
		{name: "GroupNorm/plain", inputs: []*tensor.Tensor{x},
			f: func(tp *Tape, in []*Var) *Var { return tp.GroupNorm(in[0], nil, nil, 2, 1e-3) }},
		{name: "InstanceNorm", inputs: []*tensor.Tensor{x, tensor.RandN(r, 6), tensor.RandN(r, 6)},
			f: func(tp *Tape, in []*Var) *Var { return tp.InstanceNorm(in[0], in[1], in[2], 0) }},
		{name: "RMSNorm", inputs: []*tensor.Tensor{tensor.RandN(r, 3, 2, 4), tensor.RandN(r, 2, 4)},
			f: func(tp *Tape, in []*Var) *Var { return tp.RMSNorm(in[0], in[1], 2, 0) }},
		{name: "RMSNorm/plain", inputs: []*tensor.Tensor{tensor.RandN(r, 3, 5)},
			f: func(tp *Tape, in []*Var) *Var { return tp.RMSNorm(in[0], nil, 1, 1e-6) }},
	} {
		c.h = 1e-3
		gradCheck(t, c)
	}
}

// TestNormLayers checks the layers' state names (PyTorch's) and that
// their forward is the tape op's.
func TestNormLayers(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 5))
	x := tensor.RandN(r, 2, 4, 3, 3)
	for _, c := range []struct {
		m     Module
		names []string
		want  func() *tensor.Tensor
	}{
		{NewGroupNorm(2, 4, true), []string{"weight", "bias"},
			func() *tensor.Tensor {
				y, _ := tensor.GroupNorm(x, tensor.GroupNormParams{Groups: 2, Gamma: tensor.Ones(4), Beta: tensor.New(4)})
				return y
			}},
		{NewInstanceNorm2D(4, false), nil,
			func() *tensor.Tensor { y, _ := tensor.InstanceNorm(x, tensor.InstanceNormParams{}); return y }},
		{NewRMSNorm(true, 3, 3), []string{"weight"},
			func() *tensor.Tensor { y, _ := tensor.RMSNorm(x, tensor.RMSNormParams{Dims: 2}); return y }},
	} {
		var names []string
		c.m.State("", func(n string, _ *Var) { names = append(names, n) })
		if !slices.Equal(names, c.names) {
			t.Errorf("%T: state %v, want %v", c.m, names, c.names)
		}
		got, want := c.m.Forward(NewTape(), NewParam(x)).Value().Data(), c.want().Data()
		if !slices.Equal(got, want) {
			t.Errorf("%T: forward differs from the tensor op", c.m)
		}
	}
}
