// Package tensortest helps test code that runs tensor ops on devices.
//
// HostDevice is a stand-in device for tests of other packages (nn,
// plugins, programs) on machines without an accelerator: its memory is
// host slices, and its Backend implements every family of tensor.Backend
// by copying the operands out of that memory, running the CPU's own
// implementation (tensor.CPUBackend) on the copies and storing the
// results back. It is a test double: since it runs the CPU's code, it
// checks where ops are routed and that tensors stay on their device (it
// refuses an operand on another device, or a host operand of one or more
// dimensions beside device ones, as a device that cannot read host
// memory would), not kernels. It counts host<->device transfers (calls
// and bytes each way), allocations and family calls (Counts), so that a
// test can assert, for instance, one upload and at most one readback per
// training step; and it can be made to fail (SetFaults), as a device out
// of memory does.
//
// # The conformance suite
//
// The conformance suite is one exported function per family (TestMatMul,
// TestConv, TestElementwise, TestReduce, TestCopy, TestPool, TestIndex,
// TestNorm, TestLoss, TestOptim; TestAll runs them all), as gonum's
// testblas has one per BLAS routine. Each takes the device under test,
// already registered, and runs every op of its family through the public
// functions as a subtest per case: the operands are
// made on the host (random, with edge sizes: zero-size dimensions, 1, odd
// sizes such as 7, 33 and 257), copied to dev with To, viewed there as
// the case says (transposed, sliced with a step, broadcast with stride 0
// by Expand, broadcast by NumPy's rules through size-1 and missing
// dimensions), and the op's result must be on dev, of the CPU's shape,
// and equal to what the same op gives on the host operands on the CPU, to
// the tolerance below. The Into forms write into device tensors that are
// views of a buffer filled with a guard value: the elements outside the
// view must keep it, and the operands the op only reads must come back
// unchanged. A 0-d host scalar stands beside device operands where the
// op allows it. A panic of the op on dev fails its case, not the test.
//
// # Tolerance
//
// A device need not run the CPU's algorithm, so results are not compared
// for equality, except where any correct implementation gives the exact
// value: comparisons, Maximum, Minimum, Where, Fill, Max, Min, ArgMax,
// ArgMin, the copies, MaxPool2D and its indices, and the lookups
// (IndexSelect, Gather, OneHot) must be equal (NaN where the CPU gives
// NaN, infinities equal). Elsewhere a device's element g may differ from
// the CPU's w by
//
//	1e-6 + 1e-5·|w| + 2·n·u·S
//
// with u = 2⁻²⁴, float32's unit roundoff: 1e-5 relative (84 to 168 ulps)
// allows for elementwise functions (Exp, Tanh, Erf, GELU, ...)
// implemented otherwise, 1e-6 absolute for results near 0 of operands of
// order 1; n is the reduction length of each result (the K of a product,
// C/groups·kh·kw of a convolution, the elements summed or averaged, the
// terms that a pooling's gradient, IndexAdd or ScatterAdd adds into one
// element), and 2·n·u·S bounds the rounding of two sums of n terms in
// any order, S being the same op on the absolute values of the operands
// (Σ|x| for Sum, |A|·|B| for MatMul, the convolution of |x| and |w|), or
// |w| itself for Var, Std and Softmax, whose errors are relative, and for
// the adds of positive terms at negative indices (which Abs would move);
// LogSoftmax and LogSumExp, Softmax's gradients, and the normalizations
// and their gradients (results of order 1 from sums of n terms: n the
// group or axis length) are allowed 2·n·u absolute. The ops that write
// several results (BatchNorm: y, the statistics, the running statistics)
// are compared on all of them. A loss is relative to its n terms,
// CrossEntropy's gradient to its C classes, and the optimizer steps'
// parameters and state pointwise (n = 0).
//
// # Using the stand-in
//
// Register registers a HostDevice for the length of a test:
//
//	d := tensortest.Register(t, 7)
//	x, _ := tensor.RandN(r, 3, 4).To(d.Device())
//	y := tensor.Exp(x) // runs on d, stays on d
//	if c := d.Counts(); c.Calls["Elementwise.Unary"] != 1 { ... }
package tensortest
