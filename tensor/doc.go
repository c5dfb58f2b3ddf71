// Package tensor provides n-dimensional float32 tensors on lanes' SIMD
// kernels: views without copies (Reshape, Permute, Slice, BroadcastTo,
// Squeeze, Unsqueeze), elementwise operations with NumPy broadcasting and
// an allocation-free ...Into form for each, reductions over any set of
// axes, Softmax along an axis, and MatMul with NumPy's matmul rules; and
// what a backward pass needs: the convolutions', poolings' and
// normalizations' gradients, the unary ops' (UnaryGrad: dy·f' in one
// pass) and Softmax's (SoftmaxBackward, LogSoftmaxBackward); and
// ScaledDotProductAttention with its backward, fused and tiled on the host
// (attention.go).
//
// Devices: a tensor may live on an accelerator (To, NewOn). MatMul, the
// convolutions, the elementwise ops and UnaryGrad, the reductions,
// Softmax and its gradients, the copies, the normalizations and
// ScaledDotProductAttention (composed of the others there) run on the
// device of their operands, through the op families that the device
// registered (RegisterDevice, backend.go), and return tensors there;
// operands on two devices, or host ones beside device ones (but for 0-d
// scalars), panic naming the op and the devices. Nothing is copied to
// the host behind the caller's back.
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
