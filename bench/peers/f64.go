package peers

import (
	"math"
	"math/rand/v2"

	"github.com/viterin/vek"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/lanesgo/lanes/simd"
)

// The float64 suite: lanes' F64 functions against viterin/vek's float64
// functions (package vek, AVX2 assembly), gonum's blas64 where vek has no
// counterpart (Axpy) or as a second peer (Dot, SumAbs, Norm), and a plain Go
// loop. The bar these answer to: lanes at least as fast as vek at every size.

// NewInputsF64 returns float64 inputs of length n from a fixed seed, with
// values in [0.5, 1.5) as NewInputs.
func NewInputsF64(n int) *Inputs {
	r := rand.New(rand.NewPCG(1, 2))
	in := &Inputs{Dst64: make([]float64, n), A64: make([]float64, n), B64: make([]float64, n)}
	for i := range in.A64 {
		in.A64[i] = 0.5 + r.Float64()
		in.B64[i] = 0.5 + r.Float64()
	}
	return in
}

var sinkD float64

func dst64(in *Inputs) []float64      { return append([]float64(nil), in.Dst64...) }
func scalar64(in *Inputs) []float64   { return []float64{sinkD} }
func vec64(x []float64) blas64.Vector { return blas64.Vector{N: len(x), Data: x, Inc: 1} }

// f64 marks op as a float64 op.
func f64(op Op) Op { op.F64 = true; return op }

// OpsF64 is the float64 suite, named as the lanes functions (AddF64 ...).
func OpsF64() []Op {
	return []Op{
		f64(newOp("AddF64", bytes(24), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.AddF64(in.Dst64, in.A64, in.B64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek.Add_Into(in.Dst64, in.A64, in.B64) }),
				impl("naive", func(in *Inputs) { naiveAdd(in.Dst64, in.A64, in.B64) }),
			})...))),
		f64(newOp("SubF64", bytes(24), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.SubF64(in.Dst64, in.A64, in.B64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.Sub_Into(in.Dst64, in.A64, in.B64) })})...))),
		f64(newOp("MulF64", bytes(24), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.MulF64(in.Dst64, in.A64, in.B64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.Mul_Into(in.Dst64, in.A64, in.B64) })})...))),
		f64(newOp("DivF64", bytes(24), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.DivF64(in.Dst64, in.A64, in.B64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.Div_Into(in.Dst64, in.A64, in.B64) })})...))),
		f64(newOp("MaximumF64", bytes(24), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.MaximumF64(in.Dst64, in.A64, in.B64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.Maximum_Into(in.Dst64, in.A64, in.B64) })})...))),
		f64(newOp("MinimumF64", bytes(24), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.MinimumF64(in.Dst64, in.A64, in.B64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.Minimum_Into(in.Dst64, in.A64, in.B64) })})...))),
		f64(newOp("AddScalarF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.AddScalarF64(in.Dst64, in.A64, 1.5) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.AddNumber_Into(in.Dst64, in.A64, 1.5) })})...))),
		f64(newOp("ScaleF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.ScaleF64(in.Dst64, in.A64, 1.5) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek.MulNumber_Into(in.Dst64, in.A64, 1.5) }),
				impl("naive", func(in *Inputs) { naiveScale(in.Dst64, in.A64, 1.5) }),
			})...))),
		f64(newOp("AbsF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.AbsF64(in.Dst64, in.A64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.Abs_Into(in.Dst64, in.A64) })})...))),
		f64(newOp("NegF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.NegF64(in.Dst64, in.A64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.Neg_Into(in.Dst64, in.A64) })})...))),
		f64(newOp("SqrtF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.SqrtF64(in.Dst64, in.A64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek.Sqrt_Into(in.Dst64, in.A64) }),
				impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, math.Sqrt) }),
			})...))),
		// vek's MaximumNumber(x, 0) is ReLU for inputs without NaN.
		f64(newOp("ReLUF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.ReLUF64(in.Dst64, in.A64) }),
			[]Impl{impl("vek", func(in *Inputs) { vek.MaximumNumber_Into(in.Dst64, in.A64, 0) })})...))),
		// Axpy updates Dst64 in place. vek has none: gonum's blas64 (daxpy).
		f64(newOp("AxpyF64", bytes(24), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.AxpyF64(in.Dst64, 1e-7, in.A64) }),
			[]Impl{
				impl("gonum", func(in *Inputs) { blas64.Axpy(1e-7, vec64(in.A64), vec64(in.Dst64)) }),
				impl("naive", func(in *Inputs) { naiveAxpy(in.Dst64, 1e-7, in.A64) }),
			})...))),
		summed(f64(newOp("SumF64", bytes(8), withResult(scalar64, concat(
			lanes(func(in *Inputs) { sinkD = simd.SumF64(in.A64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkD = vek.Sum(in.A64) }),
				impl("naive", func(in *Inputs) { sinkD = naiveSum(in.A64) }),
			})...)))),
		summed(f64(newOp("DotF64", bytes(16), withResult(scalar64, concat(
			lanes(func(in *Inputs) { sinkD = simd.DotF64(in.A64, in.B64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkD = vek.Dot(in.A64, in.B64) }),
				impl("gonum", func(in *Inputs) { sinkD = blas64.Dot(vec64(in.A64), vec64(in.B64)) }),
				impl("naive", func(in *Inputs) { sinkD = naiveDot(in.A64, in.B64) }),
			})...)))),
		summed(f64(newOp("SumAbsF64", bytes(8), withResult(scalar64, concat(
			lanes(func(in *Inputs) { sinkD = simd.SumAbsF64(in.A64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkD = vek.ManhattanNorm(in.A64) }),
				impl("gonum", func(in *Inputs) { sinkD = blas64.Asum(vec64(in.A64)) }),
			})...)))),
		reads(f64(newOp("MaxF64", bytes(8), withResult(scalar64, concat(
			lanes(func(in *Inputs) { sinkD = simd.MaxF64(in.A64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkD = vek.Max(in.A64) }),
				impl("naive", func(in *Inputs) { sinkD = naiveMax(in.A64) }),
			})...)))),
		reads(f64(newOp("MinF64", bytes(8), withResult(scalar64, concat(
			lanes(func(in *Inputs) { sinkD = simd.MinF64(in.A64) }),
			[]Impl{impl("vek", func(in *Inputs) { sinkD = vek.Min(in.A64) })})...)))),
		reads(f64(newOp("ArgMaxF64", bytes(8), withResult(index, concat(
			lanes(func(in *Inputs) { sinkI = simd.ArgMaxF64(in.A64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkI = vek.ArgMax(in.A64) }),
				impl("naive", func(in *Inputs) { sinkI = naiveArgMax(in.A64) }),
			})...)))),
		reads(f64(newOp("ArgMinF64", bytes(8), withResult(index, concat(
			lanes(func(in *Inputs) { sinkI = simd.ArgMinF64(in.A64) }),
			[]Impl{impl("vek", func(in *Inputs) { sinkI = vek.ArgMin(in.A64) })})...)))),
		// vek has no float64 Exp or Log: the peer is the loop over the math
		// package a Go user writes today.
		f64(newOp("ExpF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.ExpF64(in.Dst64, in.A64) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, math.Exp) })})...))),
		f64(newOp("LogF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.LogF64(in.Dst64, in.A64) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, math.Log) })})...))),
		// Nor Erf, GELU, Softplus, ELU or LeakyReLU: the loops over the math
		// package's functions again (GELUTanh, a composition of math.Tanh, is
		// measured in package simd only).
		f64(newOp("ErfF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.ErfF64(in.Dst64, in.A64) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, math.Erf) })})...))),
		f64(newOp("GELUF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.GELUF64(in.Dst64, in.A64) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, naiveGELU) })})...))),
		f64(newOp("SoftplusF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.SoftplusF64(in.Dst64, in.A64) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, naiveSoftplus) })})...))),
		f64(newOp("ELUF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.ELUF64(in.Dst64, in.A64, 1) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, naiveELU) })})...))),
		f64(newOp("LeakyReLUF64", bytes(16), withResult(dst64, concat(
			lanes(func(in *Inputs) { simd.LeakyReLUF64(in.Dst64, in.A64, 0.01) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst64, in.A64, naiveLeakyReLU) })})...))),
		// NormF64 within (n/2+1)·2⁻⁵³ relative: compared as a summed op.
		summed(f64(newOp("NormF64", bytes(8), withResult(scalar64, concat(
			lanes(func(in *Inputs) { sinkD = simd.NormF64(in.A64) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkD = vek.Norm(in.A64) }),
				impl("gonum", func(in *Inputs) { sinkD = blas64.Nrm2(vec64(in.A64)) }),
			})...)))),
	}
}

// naiveSoftplus is max(x, 0) + log1p(e^-|x|); naiveELU and naiveLeakyReLU
// have alpha 1 and 0.01.
func naiveSoftplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

func naiveELU(x float64) float64 {
	if x > 0 {
		return x
	}
	return math.Expm1(x)
}

func naiveLeakyReLU(x float64) float64 {
	if x > 0 {
		return x
	}
	return 0.01 * x
}
