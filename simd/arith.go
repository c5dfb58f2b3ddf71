package simd

// arithKernels is the elementwise family for elements of type T. Every kernel
// receives slices already checked to have equal lengths.
type arithKernels[T float] struct {
	add, sub, mul, div, maximum, minimum func(dst, a, b []T)
	addScalar, scale                     func(dst, a []T, s T)
	axpy                                 func(y []T, alpha T, x []T)
	abs, neg, sqrt, relu                 func(dst, x []T)
	clamp                                func(dst, x []T, lo, hi T)
}

var (
	arith    table[arithKernels[float32]]
	arithF64 table[arithKernels[float64]]
)

// Add sets dst[i] = a[i] + b[i].
func Add(dst, a, b []float32) {
	checkLen3("Add", dst, a, b)
	arith.get().add(dst, a, b)
}

// Sub sets dst[i] = a[i] - b[i].
func Sub(dst, a, b []float32) {
	checkLen3("Sub", dst, a, b)
	arith.get().sub(dst, a, b)
}

// Mul sets dst[i] = a[i] * b[i].
func Mul(dst, a, b []float32) {
	checkLen3("Mul", dst, a, b)
	arith.get().mul(dst, a, b)
}

// Div sets dst[i] = a[i] / b[i] (IEEE: x/0 = ±Inf, 0/0 = NaN).
func Div(dst, a, b []float32) {
	checkLen3("Div", dst, a, b)
	arith.get().div(dst, a, b)
}

// Maximum sets dst[i] to the larger of a[i] and b[i], or to NaN if either is
// NaN (a[i] if both are). When a[i] and b[i] compare equal (+0 and -0) the
// result is b[i]:
//
//	if a[i] > b[i] || a[i] != a[i] { dst[i] = a[i] } else { dst[i] = b[i] }
func Maximum(dst, a, b []float32) {
	checkLen3("Maximum", dst, a, b)
	arith.get().maximum(dst, a, b)
}

// Minimum sets dst[i] to the smaller of a[i] and b[i], or to NaN if either is
// NaN (a[i] if both are). When a[i] and b[i] compare equal the result is b[i]:
//
//	if a[i] < b[i] || a[i] != a[i] { dst[i] = a[i] } else { dst[i] = b[i] }
func Minimum(dst, a, b []float32) {
	checkLen3("Minimum", dst, a, b)
	arith.get().minimum(dst, a, b)
}

// AddScalar sets dst[i] = a[i] + s.
func AddScalar(dst, a []float32, s float32) {
	checkLen2("AddScalar", dst, a, "dst", "a")
	arith.get().addScalar(dst, a, s)
}

// Scale sets dst[i] = a[i] * s.
func Scale(dst, a []float32, s float32) {
	checkLen2("Scale", dst, a, "dst", "a")
	arith.get().scale(dst, a, s)
}

// Axpy sets y[i] += alpha * x[i]. The SIMD levels use a fused multiply-add (one
// rounding); the generic level rounds the product and the sum separately, so
// results may differ by 1 ULP between levels. x may be y itself.
func Axpy(y []float32, alpha float32, x []float32) {
	checkLen2("Axpy", y, x, "y", "x")
	arith.get().axpy(y, alpha, x)
}

// Abs sets dst[i] = |x[i]| by clearing the sign bit (Abs(-0) = +0, NaN stays NaN).
func Abs(dst, x []float32) {
	checkLen2("Abs", dst, x, "dst", "x")
	arith.get().abs(dst, x)
}

// Neg sets dst[i] = -x[i] by flipping the sign bit.
func Neg(dst, x []float32) {
	checkLen2("Neg", dst, x, "dst", "x")
	arith.get().neg(dst, x)
}

// Sqrt sets dst[i] to the correctly rounded square root of x[i]
// (Sqrt(-0) = -0, Sqrt(x<0) = NaN, Sqrt(+Inf) = +Inf).
func Sqrt(dst, x []float32) {
	checkLen2("Sqrt", dst, x, "dst", "x")
	arith.get().sqrt(dst, x)
}

// ReLU sets dst[i] = x[i] if x[i] > 0, NaN if x[i] is NaN, and +0 otherwise
// (ReLU(-0) = +0).
func ReLU(dst, x []float32) {
	checkLen2("ReLU", dst, x, "dst", "x")
	arith.get().relu(dst, x)
}

// Clamp sets dst[i] = Minimum(Maximum(x[i], lo), hi): x[i] limited to [lo, hi],
// NaN stays NaN. It panics if lo > hi or either bound is NaN.
func Clamp(dst, x []float32, lo, hi float32) {
	checkLen2("Clamp", dst, x, "dst", "x")
	checkBounds("Clamp", lo, hi)
	arith.get().clamp(dst, x, lo, hi)
}

// checkBounds panics unless lo <= hi (neither NaN).
func checkBounds[T float](fn string, lo, hi T) {
	if !(lo <= hi) {
		panic("simd." + fn + ": need lo <= hi, got lo=" + ftoa(lo) + " hi=" + ftoa(hi))
	}
}

// The float64 forms: the same semantics at float64, exact IEEE double
// precision and bit-identical at every level (AxpyF64 fused as Axpy).

// AddF64 sets dst[i] = a[i] + b[i].
func AddF64(dst, a, b []float64) {
	checkLen3("AddF64", dst, a, b)
	arithF64.get().add(dst, a, b)
}

// SubF64 sets dst[i] = a[i] - b[i].
func SubF64(dst, a, b []float64) {
	checkLen3("SubF64", dst, a, b)
	arithF64.get().sub(dst, a, b)
}

// MulF64 sets dst[i] = a[i] * b[i].
func MulF64(dst, a, b []float64) {
	checkLen3("MulF64", dst, a, b)
	arithF64.get().mul(dst, a, b)
}

// DivF64 sets dst[i] = a[i] / b[i] (IEEE: x/0 = ±Inf, 0/0 = NaN).
func DivF64(dst, a, b []float64) {
	checkLen3("DivF64", dst, a, b)
	arithF64.get().div(dst, a, b)
}

// MaximumF64 is Maximum for float64: the larger of a[i] and b[i], NaN if
// either is (a[i] if both are), b[i] when they compare equal.
func MaximumF64(dst, a, b []float64) {
	checkLen3("MaximumF64", dst, a, b)
	arithF64.get().maximum(dst, a, b)
}

// MinimumF64 is Minimum for float64: the smaller of a[i] and b[i], NaN if
// either is (a[i] if both are), b[i] when they compare equal.
func MinimumF64(dst, a, b []float64) {
	checkLen3("MinimumF64", dst, a, b)
	arithF64.get().minimum(dst, a, b)
}

// AddScalarF64 sets dst[i] = a[i] + s.
func AddScalarF64(dst, a []float64, s float64) {
	checkLen2("AddScalarF64", dst, a, "dst", "a")
	arithF64.get().addScalar(dst, a, s)
}

// ScaleF64 sets dst[i] = a[i] * s (BLAS dscal with dst == a).
func ScaleF64(dst, a []float64, s float64) {
	checkLen2("ScaleF64", dst, a, "dst", "a")
	arithF64.get().scale(dst, a, s)
}

// AxpyF64 sets y[i] += alpha * x[i] (BLAS daxpy with unit strides). The SIMD
// levels use a fused multiply-add (one rounding: the correctly rounded
// y[i] + alpha·x[i]); the generic level rounds the product and the sum
// separately, so results may differ by 1 ULP between levels. x may be y itself.
func AxpyF64(y []float64, alpha float64, x []float64) {
	checkLen2("AxpyF64", y, x, "y", "x")
	arithF64.get().axpy(y, alpha, x)
}

// AbsF64 sets dst[i] = |x[i]| by clearing the sign bit.
func AbsF64(dst, x []float64) {
	checkLen2("AbsF64", dst, x, "dst", "x")
	arithF64.get().abs(dst, x)
}

// NegF64 sets dst[i] = -x[i] by flipping the sign bit.
func NegF64(dst, x []float64) {
	checkLen2("NegF64", dst, x, "dst", "x")
	arithF64.get().neg(dst, x)
}

// SqrtF64 sets dst[i] to the correctly rounded square root of x[i], as
// math.Sqrt.
func SqrtF64(dst, x []float64) {
	checkLen2("SqrtF64", dst, x, "dst", "x")
	arithF64.get().sqrt(dst, x)
}

// ReLUF64 is ReLU for float64: x[i] if x[i] > 0, NaN if x[i] is NaN, +0
// otherwise.
func ReLUF64(dst, x []float64) {
	checkLen2("ReLUF64", dst, x, "dst", "x")
	arithF64.get().relu(dst, x)
}

// ClampF64 is Clamp for float64: x[i] limited to [lo, hi], NaN stays NaN. It
// panics if lo > hi or either bound is NaN.
func ClampF64(dst, x []float64, lo, hi float64) {
	checkLen2("ClampF64", dst, x, "dst", "x")
	checkBounds("ClampF64", lo, hi)
	arithF64.get().clamp(dst, x, lo, hi)
}
