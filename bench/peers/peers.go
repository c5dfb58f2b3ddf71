// Package peers is the comparison suite of lanes against the float32 kernels Go
// users pick today: viterin/vek (AVX2 assembly generated from C), gonum's
// blas32 (hand-written SSE assembly) and a plain Go loop. The same suite feeds
// `go test -bench` in this module and the main job, `go run ./bench/cmd/lanes`.
package peers

import (
	"math"
	"math/rand/v2"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/simd"
	"github.com/viterin/vek/vek32"
	"gonum.org/v1/gonum/blas/blas32"
)

// Inputs are the slices one benchmark cell works on. A and B hold values in
// [0.5, 1.5): positive for Sqrt, away from zero for Div. The float64 ops
// (OpsF64) use Dst64, A64 and B64 instead.
type Inputs struct {
	Dst, A, B       []float32
	Dst64, A64, B64 []float64
}

// NewInputs returns inputs of length n from a fixed seed.
func NewInputs(n int) *Inputs {
	r := rand.New(rand.NewPCG(1, 2))
	in := &Inputs{Dst: make([]float32, n), A: make([]float32, n), B: make([]float32, n)}
	for i := range in.A {
		in.A[i] = 0.5 + r.Float32()
		in.B[i] = 0.5 + r.Float32()
	}
	return in
}

// Impl is one implementation of an operation. Prepare readies it for in (for
// lanes: makes its level active) and returns the call to time. Result, if not
// nil, returns what the last call computed, for the agreement test.
type Impl struct {
	Name    string
	Level   dispatch.Level // for lanes implementations; IsLanes says whether it applies
	IsLanes bool
	Run     func(in *Inputs) // one call
	Result  func(in *Inputs) []float64
}

// Op is one operation with every implementation that provides it.
type Op struct {
	Name string
	// Bytes is the memory traffic of one call at length n (reads plus writes),
	// the convention of the recorded anchors, so MB/s compares across ops.
	Bytes func(n int) int64
	Impls []Impl
	// Elems, if set, is the length of the input slices at size n (else n).
	Elems func(n int) int
	// Summed marks reductions whose results differ between implementations
	// by the summation order (bounded by n·2⁻²⁴·Σ|terms|, 2⁻⁵³ for F64).
	Summed bool
	// F64 marks the float64 ops: their inputs are Inputs' float64 slices.
	F64 bool
	// ReadOnly marks the ops that write nothing (the reductions): their
	// memory roofline is the read bandwidth, the others' the copy bandwidth.
	ReadOnly bool
}

func newOp(name string, bytes func(int) int64, impls []Impl) Op {
	return Op{Name: name, Bytes: bytes, Impls: impls}
}

// summed marks op as a reduction by summation.
func summed(op Op) Op { op.Summed = true; return reads(op) }

// reads marks op as one that only reads (ReadOnly).
func reads(op Op) Op { op.ReadOnly = true; return op }

func bytes(perElem int64) func(int) int64 { return func(n int) int64 { return perElem * int64(n) } }

var (
	sinkF float32
	sinkI int
)

// lanes returns one Impl per level this CPU supports, named lanes-<level>.
func lanes(run func(in *Inputs)) []Impl {
	var is []Impl
	for _, l := range dispatch.Levels() {
		is = append(is, Impl{Name: "lanes-" + l.String(), Level: l, IsLanes: true, Run: run})
	}
	return is
}

func impl(name string, run func(in *Inputs)) Impl { return Impl{Name: name, Run: run} }

func dst(in *Inputs) []float64 { return widen(in.Dst) }

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func scalar(in *Inputs) []float64 { return []float64{float64(sinkF)} }
func index(in *Inputs) []float64  { return []float64{float64(sinkI)} }

// withResult sets Result on every impl.
func withResult(r func(*Inputs) []float64, is ...Impl) []Impl {
	for i := range is {
		is[i].Result = r
	}
	return is
}

func concat(parts ...[]Impl) []Impl {
	var all []Impl
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// extra holds implementations that build tags add (sleef_on.go), by op name.
var extra = map[string][]Impl{}

// Ops is the suite, in the order the report prints it.
func Ops() []Op {
	ops := baseOps()
	for i := range ops {
		for _, im := range extra[ops[i].Name] {
			im.Result = dst
			ops[i].Impls = append(ops[i].Impls, im)
		}
	}
	return ops
}

func baseOps() []Op {
	return []Op{
		newOp("Add", bytes(12), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Add(in.Dst, in.A, in.B) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.Add_Into(in.Dst, in.A, in.B) }),
				impl("naive", func(in *Inputs) { naiveAdd(in.Dst, in.A, in.B) }),
			})...)),
		newOp("Mul", bytes(12), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Mul(in.Dst, in.A, in.B) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.Mul_Into(in.Dst, in.A, in.B) }),
				impl("naive", func(in *Inputs) { naiveMul(in.Dst, in.A, in.B) }),
			})...)),
		newOp("Div", bytes(12), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Div(in.Dst, in.A, in.B) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.Div_Into(in.Dst, in.A, in.B) }),
				impl("naive", func(in *Inputs) { naiveDiv(in.Dst, in.A, in.B) }),
			})...)),
		newOp("Maximum", bytes(12), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Maximum(in.Dst, in.A, in.B) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.Maximum_Into(in.Dst, in.A, in.B) }),
				impl("naive", func(in *Inputs) { naiveMaximum(in.Dst, in.A, in.B) }),
			})...)),
		newOp("Scale", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Scale(in.Dst, in.A, 1.5) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.MulNumber_Into(in.Dst, in.A, 1.5) }),
				impl("naive", func(in *Inputs) { naiveScale(in.Dst, in.A, 1.5) }),
			})...)),
		newOp("Sqrt", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Sqrt(in.Dst, in.A) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.Sqrt_Into(in.Dst, in.A) }),
				impl("naive", func(in *Inputs) { naiveSqrt(in.Dst, in.A) }),
			})...)),
		// Axpy updates Dst in place; Dst is reset by the agreement test, not here.
		newOp("Axpy", bytes(12), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Axpy(in.Dst, 1e-7, in.A) }),
			[]Impl{
				impl("gonum", func(in *Inputs) {
					blas32.Axpy(1e-7, blas32.Vector{N: len(in.A), Data: in.A, Inc: 1}, blas32.Vector{N: len(in.Dst), Data: in.Dst, Inc: 1})
				}),
				impl("naive", func(in *Inputs) { naiveAxpy(in.Dst, 1e-7, in.A) }),
			})...)),
		summed(newOp("Sum", bytes(4), withResult(scalar, concat(
			lanes(func(in *Inputs) { sinkF = simd.Sum(in.A) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkF = vek32.Sum(in.A) }),
				impl("naive", func(in *Inputs) { sinkF = naiveSum(in.A) }),
			})...))),
		summed(newOp("Dot", bytes(8), withResult(scalar, concat(
			lanes(func(in *Inputs) { sinkF = simd.Dot(in.A, in.B) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkF = vek32.Dot(in.A, in.B) }),
				impl("gonum", func(in *Inputs) {
					sinkF = blas32.Dot(blas32.Vector{N: len(in.A), Data: in.A, Inc: 1}, blas32.Vector{N: len(in.B), Data: in.B, Inc: 1})
				}),
				impl("naive", func(in *Inputs) { sinkF = naiveDot(in.A, in.B) }),
			})...))),
		reads(newOp("Max", bytes(4), withResult(scalar, concat(
			lanes(func(in *Inputs) { sinkF = simd.Max(in.A) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkF = vek32.Max(in.A) }),
				impl("naive", func(in *Inputs) { sinkF = naiveMax(in.A) }),
			})...))),
		reads(newOp("ArgMax", bytes(4), withResult(index, concat(
			lanes(func(in *Inputs) { sinkI = simd.ArgMax(in.A) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkI = vek32.ArgMax(in.A) }),
				impl("naive", func(in *Inputs) { sinkI = naiveArgMax(in.A) }),
			})...))),
		summed(newOp("SumAbs", bytes(4), withResult(scalar, concat(
			lanes(func(in *Inputs) { sinkF = simd.SumAbs(in.A) }),
			[]Impl{
				impl("gonum", func(in *Inputs) { sinkF = blas32.Asum(blas32.Vector{N: len(in.A), Data: in.A, Inc: 1}) }),
				impl("naive", func(in *Inputs) { sinkF = naiveSumAbs(in.A) }),
			})...))),
		reads(newOp("Norm", bytes(4), withResult(scalar, concat(
			lanes(func(in *Inputs) { sinkF = simd.Norm(in.A) }),
			[]Impl{
				impl("vek", func(in *Inputs) { sinkF = vek32.Norm(in.A) }),
				impl("gonum", func(in *Inputs) { sinkF = blas32.Nrm2(blas32.Vector{N: len(in.A), Data: in.A, Inc: 1}) }),
				impl("naive", func(in *Inputs) { sinkF = naiveNorm(in.A) }),
			})...))),
		newOp("Exp", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Exp(in.Dst, in.A) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.Exp_Into(in.Dst, in.A) }),
				impl("naive", func(in *Inputs) { naiveMap(in.Dst, in.A, math.Exp) }),
			})...)),
		newOp("Log", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Log(in.Dst, in.A) }),
			[]Impl{
				impl("vek", func(in *Inputs) { vek32.Log_Into(in.Dst, in.A) }),
				impl("naive", func(in *Inputs) { naiveMap(in.Dst, in.A, math.Log) }),
			})...)),
		newOp("Sigmoid", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Sigmoid(in.Dst, in.A) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst, in.A, naiveSigmoid) })})...)),
		newOp("Tanh", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Tanh(in.Dst, in.A) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst, in.A, math.Tanh) })})...)),
		newOp("Erf", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Erf(in.Dst, in.A) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst, in.A, math.Erf) })})...)),
		newOp("GELU", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.GELU(in.Dst, in.A) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveMap(in.Dst, in.A, naiveGELU) })})...)),
		newOp("Softmax", bytes(8), withResult(dst, concat(
			lanes(func(in *Inputs) { simd.Softmax(in.Dst, in.A) }),
			[]Impl{impl("naive", func(in *Inputs) { naiveSoftmax(in.Dst, in.A) })})...)),
		// Copy moves as many bytes as Add at the same n (1.5n floats read and
		// written: 12n bytes), the bandwidth bar for the streaming sizes.
		{Name: "Copy", Bytes: bytes(12), Elems: func(n int) int { return n * 3 / 2 }, Impls: []Impl{
			impl("copy", func(in *Inputs) { copy(in.Dst, in.A) }),
		}},
	}
}

// Prepare readies impl for a timing run at size n: lanes implementations
// make their level active; the inputs have op.Elems(n) elements if set.
func Prepare(op Op, im Impl, n int) *Inputs {
	Activate(im)
	if op.Elems != nil {
		n = op.Elems(n)
	}
	if op.F64 {
		return NewInputsF64(n)
	}
	return NewInputs(n)
}

// Activate makes a lanes implementation's level active (others need nothing).
func Activate(im Impl) {
	if im.IsLanes {
		if _, err := dispatch.SetLevel(im.Level); err != nil {
			panic(err)
		}
	}
}

// float is the element types of the naive loops, which serve both suites.
type float interface{ float32 | float64 }

// naiveMap is the loop a Go user writes today: float64 math per element.
func naiveMap[T float](dst, x []T, f func(float64) float64) {
	for i, v := range x {
		dst[i] = T(f(float64(v)))
	}
}

func naiveSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func naiveGELU(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

func naiveSoftmax(dst, x []float32) {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	var s float64
	for i, v := range x {
		e := math.Exp(float64(v - m))
		dst[i] = float32(e)
		s += e
	}
	for i := range dst {
		dst[i] = float32(float64(dst[i]) / s)
	}
}

func naiveAdd[T float](dst, a, b []T) {
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func naiveMul[T float](dst, a, b []T) {
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func naiveDiv[T float](dst, a, b []T) {
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}

func naiveMaximum[T float](dst, a, b []T) {
	for i := range dst {
		dst[i] = max(a[i], b[i])
	}
}

func naiveScale[T float](dst, a []T, s T) {
	for i := range dst {
		dst[i] = a[i] * s
	}
}

func naiveSqrt(dst, a []float32) {
	for i := range dst {
		dst[i] = float32(math.Sqrt(float64(a[i])))
	}
}

func naiveAxpy[T float](y []T, alpha T, x []T) {
	for i := range y {
		y[i] += alpha * x[i]
	}
}

func naiveSum[T float](x []T) T {
	var s T
	for _, v := range x {
		s += v
	}
	return s
}

func naiveSumAbs(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += float32(math.Abs(float64(v)))
	}
	return s
}

func naiveDot[T float](a, b []T) T {
	var s T
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func naiveMax[T float](x []T) T {
	m := x[0]
	for _, v := range x[1:] {
		if v > m || v != v {
			m = v
		}
	}
	return m
}

func naiveArgMax[T float](x []T) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

func naiveNorm(x []float32) float32 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return float32(math.Sqrt(s))
}
