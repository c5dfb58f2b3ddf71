// Package tensor provides n-dimensional float32 tensors on lanes' SIMD
// kernels: views without copies (Reshape, Permute, Slice, BroadcastTo,
// Squeeze, Unsqueeze), elementwise operations with NumPy broadcasting and
// an allocation-free ...Into form for each, reductions over any set of
// axes, Softmax along an axis, and MatMul with NumPy's matmul rules.
//
// Layout: a Tensor is a view (shape, strides in elements, offset) of a
// backing []float32. Operations walk their operands in row-major order of
// the result, merge dimensions that are contiguous in every operand, and
// hand each innermost run to the simd kernel: a contiguous operation is one
// kernel call; strided or broadcast runs go through small pooled buffers.
// Loops of at least 2¹⁶ elements are split over the caller and a
// persistent pool of GOMAXPROCS-1 workers, shared with simd's Sgemm, which
// spin for a while before they park (LANES_SPIN, see docs/workers.md).
//
// Errors: shape mismatches and out-of-range axes or indices panic with a
// message "tensor: Op: ..." naming the shapes, as gonum's mat does. Nothing
// is silently truncated or broadcast beyond NumPy's rules.
package tensor
