package nn

import (
	"github.com/lanesgo/lanes/tensor"
)

// PairwiseSqDist returns the [n, m] squared Euclidean distances between
// the rows of x [n, d] and y [m, d] (tensor.PairwiseSqDist: through the
// GEMM, clamped at 0, an exact zero diagonal when y is x; its
// accuracy is stated there). The gradient is that of the exact distance,
// 2(x[i] - y[j]) weighted by the output's gradient
// (tensor.PairwiseSqDistGrad), both contributions going to x when y is x.
// It runs on the device of x and y (tensor's composition of the device's
// families there), in the tape's buffers.
func (tp *Tape) PairwiseSqDist(x, y *Var) *Var {
	const op = "PairwiseSqDist"
	tp.use(op, "x", x)
	tp.use(op, "y", y)
	if x.value.Dims() != 2 || y.value.Dims() != 2 {
		tensor.PairwiseSqDist(x.value, y.value) // its panic
	}
	d := tp.allocOn(x.value.Device(), x.value.Dim(0), y.value.Dim(0))
	tensor.PairwiseSqDistInto(d, x.value, y.value)
	out, _ := tp.result(d, backPairwiseSqDist, x, y)
	return out
}

func backPairwiseSqDist(tp *Tape, n *node) {
	x, y := n.in[0], n.in[1]
	var dx, dy *tensor.Tensor
	if x.requires {
		dx = tp.like(x.value)
	}
	if y.requires {
		dy = tp.like(y.value)
	}
	tensor.PairwiseSqDistGradInto(dx, dy, n.out.grad, x.value, y.value)
	if x.requires {
		tp.addGrad(x, dx)
	}
	if y.requires {
		tp.addGrad(y, dy)
	}
}

// RBFKernel returns the Gaussian (RBF) kernel matrix exp(-γ·‖x[i] -
// y[j]‖²) between the rows of x [n, d] and y [m, d] (scikit-learn's
// rbf_kernel; γ = 1/(2σ²)), PairwiseSqDist then Scale and Exp on the
// tape, so its gradient is theirs. y = x gives the symmetric matrix
// with an exact 1 on the diagonal.
func (tp *Tape) RBFKernel(x, y *Var, gamma float32) *Var {
	tp.use("RBFKernel", "x", x)
	tp.use("RBFKernel", "y", y)
	return tp.Exp(tp.Scale(tp.PairwiseSqDist(x, y), -gamma))
}
