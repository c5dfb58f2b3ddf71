package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// The initializers fill a contiguous tensor in place from an explicit
// random source, so that a seeded rand.Rand gives the same model every run.
// fanIn and fanOut are the number of inputs and outputs of one unit (in and
// out for a Linear; Cin/groups·kh·kw and Cout·kh·kw for a Conv2D).

// mustRand panics when r, the random source given to op, is nil.
func mustRand(op string, r *rand.Rand) {
	if r == nil {
		panic(fmt.Sprintf("nn: %s: nil rand source (give a seeded *rand.Rand)", op))
	}
}

// initArgs checks the tensor and the random source given to the
// initializer op.
func initArgs(op string, t *tensor.Tensor, r *rand.Rand) {
	mustTensor(op, "tensor", t)
	mustRand(op, r)
}

// checkFan panics when the fan the initializer op scales by is not
// positive for a tensor with elements (its bound would be infinite).
func checkFan(op string, t *tensor.Tensor, fan int) {
	if fan <= 0 && t.Len() > 0 {
		panic(fmt.Sprintf("nn: %s: fan %d for a tensor of shape %v (want > 0)", op, fan, t.Shape()))
	}
}

// Uniform fills t with values uniform in [lo, hi). t and r must not be nil
// (for every initializer here).
func Uniform(t *tensor.Tensor, lo, hi float64, r *rand.Rand) {
	initArgs("Uniform", t, r)
	uniform(t, lo, hi, r)
}

func uniform(t *tensor.Tensor, lo, hi float64, r *rand.Rand) {
	d := t.Data()
	for i := range d {
		d[i] = float32(lo + (hi-lo)*r.Float64())
	}
}

// Normal fills t with normally distributed values.
func Normal(t *tensor.Tensor, mean, std float64, r *rand.Rand) {
	initArgs("Normal", t, r)
	normal(t, mean, std, r)
}

func normal(t *tensor.Tensor, mean, std float64, r *rand.Rand) {
	d := t.Data()
	for i := range d {
		d[i] = float32(mean + std*r.NormFloat64())
	}
}

// Gain returns the recommended scale for the activation that follows a
// layer (PyTorch's calculate_gain): √2 for ReLU, √(2/(1+α²)) for
// LeakyReLU, 5/3 for Tanh, 1 otherwise.
func Gain(act Act) float64 {
	switch act.Kind {
	case ActReLU:
		return math.Sqrt2
	case ActLeakyReLU:
		a := float64(act.Alpha)
		return math.Sqrt(2 / (1 + a*a))
	case ActTanh:
		return 5.0 / 3
	}
	return 1
}

// KaimingUniform fills t uniformly in ±gain·√(3/fanIn) (He et al.), which
// keeps the variance of activations through layers followed by the
// activation gain is for.
func KaimingUniform(t *tensor.Tensor, fanIn int, gain float64, r *rand.Rand) {
	initArgs("KaimingUniform", t, r)
	checkFan("KaimingUniform", t, fanIn)
	b := gain * math.Sqrt(3/float64(fanIn))
	uniform(t, -b, b, r)
}

// KaimingNormal fills t normally with standard deviation gain/√fanIn.
func KaimingNormal(t *tensor.Tensor, fanIn int, gain float64, r *rand.Rand) {
	initArgs("KaimingNormal", t, r)
	checkFan("KaimingNormal", t, fanIn)
	normal(t, 0, gain/math.Sqrt(float64(fanIn)), r)
}

// XavierUniform fills t uniformly in ±gain·√(6/(fanIn+fanOut)) (Glorot and
// Bengio).
func XavierUniform(t *tensor.Tensor, fanIn, fanOut int, gain float64, r *rand.Rand) {
	initArgs("XavierUniform", t, r)
	checkFan("XavierUniform", t, fanIn+fanOut)
	b := gain * math.Sqrt(6/float64(fanIn+fanOut))
	uniform(t, -b, b, r)
}

// XavierNormal fills t normally with standard deviation
// gain·√(2/(fanIn+fanOut)).
func XavierNormal(t *tensor.Tensor, fanIn, fanOut int, gain float64, r *rand.Rand) {
	initArgs("XavierNormal", t, r)
	checkFan("XavierNormal", t, fanIn+fanOut)
	normal(t, 0, gain*math.Sqrt(2/float64(fanIn+fanOut)), r)
}
