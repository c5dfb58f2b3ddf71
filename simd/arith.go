package simd

// arithKernels is the elementwise family. Every kernel receives slices already
// checked to have equal lengths.
type arithKernels struct {
	add, sub, mul, div, maximum, minimum func(dst, a, b []float32)
	addScalar, scale                     func(dst, a []float32, s float32)
	axpy                                 func(y []float32, alpha float32, x []float32)
	abs, neg, sqrt, relu                 func(dst, x []float32)
	clamp                                func(dst, x []float32, lo, hi float32)
}

var arith table[arithKernels]

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
	if !(lo <= hi) {
		panic("simd.Clamp: need lo <= hi, got lo=" + ftoa(lo) + " hi=" + ftoa(hi))
	}
	arith.get().clamp(dst, x, lo, hi)
}
