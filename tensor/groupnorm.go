package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/lanesgo/lanes/simd"
)

// GroupNormParams configures GroupNorm of x [N, C, ...] (PyTorch's
// group_norm).
type GroupNormParams struct {
	Groups      int     // G, dividing C; must be positive
	Gamma, Beta *Tensor // [C] per-channel scale and shift; nil means 1 and 0
	Eps         float32 // 0 means 1e-5
}

// GroupNorm returns, for each image n and group g of C/G consecutive
// channels, (x - mean)/√(var + eps) over the group's C/G·H·W... elements
// (biased variance), times gamma[c] plus beta[c] per channel, and the
// statistics of each (image, group), shaped [N, G]. It is LayerNorm of x
// viewed as [N·G, C/G·H·W...] (the same moments and accuracy), then the
// per-channel affine (with its backward: LayerNormBackward, broadcast
// Sub, Mul and SumTo), and so runs on a device with those families, its
// results there. InstanceNorm is
// GroupNorm with G = C; LayerNorm over [C, H, W] without affine is G = 1.
func GroupNorm(x *Tensor, p GroupNormParams) (*Tensor, NormStats) {
	const op = "GroupNorm"
	checkNil(op, "x", x)
	lp, rows := checkGroupNorm(op, x, p)
	y, s := LayerNorm(rows, lp)
	y = y.Reshape(x.shape...)
	affine(op, y, x, p.Gamma, p.Beta)
	g := p.Groups
	return y, NormStats{Mean: s.Mean.Reshape(x.shape[0], g), InvStd: s.InvStd.Reshape(x.shape[0], g)}
}

// GroupNormBackward returns the gradients with respect to x, gamma and
// beta (nil when p has none) of GroupNorm(x, p) that returned s, given dy:
// LayerNormBackward of dy·gamma on the group rows, dgamma = Σ dy·x̂ and
// dbeta = Σ dy over every axis but 1.
func GroupNormBackward(dy, x *Tensor, s NormStats, p GroupNormParams) (dx, dgamma, dbeta *Tensor) {
	const op = "GroupNormBackward"
	checkNil(op, "dy, x", dy, x)
	lp, rows := checkGroupNorm(op, x, p)
	checkSameShape(op, "dy", dy, x)
	n, c := x.shape[0], x.shape[1]
	checkStats(op, s, n*p.Groups, false)
	flat := NormStats{Mean: s.Mean.Reshape(-1), InvStd: s.InvStd.Reshape(-1)}
	dev := deviceOn(op, nil, dy, x, p.Gamma, p.Beta, s.Mean, s.InvStd)
	chan3 := []int{n, c, shapeLen(x.shape[2:])}
	if p.Gamma != nil || p.Beta != nil {
		dy3 := dy.Reshape(chan3...)
		if p.Beta != nil {
			dbeta = Fill(result(op, dev, []int{1, c, 1}, dy), 0)
			SumToInto(dbeta, dy3)
			dbeta = dbeta.Reshape(c)
		}
		if p.Gamma != nil {
			// x̂ = (x - mean)·invStd on the group rows.
			xh := Sub(rows, flat.Mean.Reshape(-1, 1))
			MulInto(xh, xh, flat.InvStd.Reshape(-1, 1))
			dgamma = Fill(result(op, dev, []int{1, c, 1}, dy), 0)
			xh3 := xh.Reshape(chan3...)
			SumToInto(dgamma, MulInto(xh3, xh3, dy3))
			dgamma = dgamma.Reshape(c)
			dy = Mul(dy3, p.Gamma.Reshape(1, c, 1))
		}
	}
	dx = result(op, dev, rows.shape, dy, x)
	LayerNormBackwardInto(dx, nil, nil, dy.Reshape(rows.shape...), rows, flat, lp)
	return dx.Reshape(x.shape...), dgamma, dbeta
}

// checkGroupNorm checks x [N, C, ...] and p and returns the LayerNorm
// parameters of the group rows and x viewed as those rows [N·G, C/G·...].
func checkGroupNorm(op string, x *Tensor, p GroupNormParams) (LayerNormParams, *Tensor) {
	c := channelsOf(op, x)
	if p.Groups <= 0 || c%p.Groups != 0 {
		panic(fmt.Sprintf("tensor: %s: %d groups for %d channels (shape %v): want a positive divisor of C", op, p.Groups, c, x.shape))
	}
	for _, t := range []*Tensor{p.Gamma, p.Beta} {
		if t != nil && !slices.Equal(t.shape, []int{c}) {
			panic(fmt.Sprintf("tensor: %s: gamma or beta of shape %v for %d channels", op, t.shape, c))
		}
	}
	eps := p.Eps
	if eps == 0 {
		eps = 1e-5
	}
	rows := x.Reshape(x.shape[0]*p.Groups, c/p.Groups*shapeLen(x.shape[2:]))
	return LayerNormParams{Dims: 1, Eps: eps}, rows
}

// affine scales y [N, C, ...] by gamma and shifts it by beta per channel
// (either may be nil), in place.
func affine(op string, y, x, gamma, beta *Tensor) {
	if gamma == nil && beta == nil {
		return
	}
	c, plane := x.shape[1], shapeLen(x.shape[2:])
	if y.Device() == CPU {
		// Per plane with simd (the broadcast Mul and Add take their
		// general path for [1, C, 1]).
		yd, g, b := y.hostData(op), vec(op, gamma), vec(op, beta)
		for i := 0; i < len(yd); i += plane {
			ch := i / plane % c
			pl := yd[i : i+plane]
			if g != nil {
				simd.Scale(pl, pl, g[ch])
			}
			if b != nil {
				simd.AddScalar(pl, pl, b[ch])
			}
		}
		return
	}
	y3 := y.Reshape(x.shape[0], c, plane)
	if gamma != nil {
		MulInto(y3, y3, gamma.Reshape(1, c, 1))
	}
	if beta != nil {
		AddInto(y3, y3, beta.Reshape(1, c, 1))
	}
}

// InstanceNormParams configures InstanceNorm of x [N, C, ...] (PyTorch's
// instance_norm / InstanceNorm2d with its defaults: batch statistics
// always, no running statistics).
type InstanceNormParams struct {
	Gamma, Beta *Tensor // [C]; nil means 1 and 0 (PyTorch's affine=False)
	Eps         float32 // 0 means 1e-5
}

// InstanceNorm normalizes each (image, channel) plane of x [N, C, ...]
// over its spatial elements: GroupNorm with C groups, statistics [N, C].
func InstanceNorm(x *Tensor, p InstanceNormParams) (*Tensor, NormStats) {
	checkNil("InstanceNorm", "x", x)
	return GroupNorm(x, GroupNormParams{Groups: channelsOf("InstanceNorm", x), Gamma: p.Gamma, Beta: p.Beta, Eps: p.Eps})
}

// InstanceNormBackward is GroupNormBackward with C groups.
func InstanceNormBackward(dy, x *Tensor, s NormStats, p InstanceNormParams) (dx, dgamma, dbeta *Tensor) {
	checkNil("InstanceNormBackward", "dy, x", dy, x)
	return GroupNormBackward(dy, x, s, GroupNormParams{Groups: channelsOf("InstanceNormBackward", x), Gamma: p.Gamma, Beta: p.Beta, Eps: p.Eps})
}

// RMSNormParams configures RMSNorm over the last Dims axes of x
// (PyTorch's rms_norm with normalized_shape the trailing shape).
type RMSNormParams struct {
	Dims  int     // trailing axes normalized together; 0 means 1
	Gamma *Tensor // of the trailing shape; nil means 1
	// Eps is added to the mean square; 0 means PyTorch's None, the
	// float32 machine epsilon 2⁻²³ ≈ 1.19e-7. It must not be negative.
	Eps float32
}

// RMSNorm returns x/√(mean(x²) + eps)·gamma over each row of x's last
// p.Dims axes, and the reciprocal root mean squares of the rows (shaped
// as x's leading axes). On the host the mean square is summed in float64
// and each element computed in float64 and rounded once; a device (its
// Norm family) sums in float64 too, in its own order. The results are on
// x's device.
func RMSNorm(x *Tensor, p RMSNormParams) (y, rrms *Tensor) {
	const op = "RMSNorm"
	checkNil(op, "x", x)
	lead, p := checkRMSNorm(op, x, p)
	dev := deviceOn(op, nil, x, p.Gamma)
	k := normOn(op, dev, nil, x, p.Gamma)
	y, rrms = result(op, dev, x.shape, x), result(op, dev, lead, x)
	ran(op, k.RMSNorm(y, rrms, x, p), y, x)
	return y, rrms
}

// RMSNormInto writes RMSNorm(x, p) into y (x's shape) and the reciprocal
// root mean squares into rrms (as many elements as x has rows) and
// returns y. y may be x (x is then copied first).
func RMSNormInto(y, rrms, x *Tensor, p RMSNormParams) *Tensor {
	const op = "RMSNormInto"
	checkNil(op, "y, rrms, x", y, rrms, x)
	lead, p := checkRMSNorm(op, x, p)
	checkSameShape(op, "y", y, x)
	checkLen(op, "rrms", rrms, shapeLen(lead))
	checkWritable(op, y)
	checkWritable(op, rrms)
	dev := deviceOn(op, y, x, p.Gamma, rrms)
	k := normOn(op, dev, y, x, p.Gamma, rrms)
	if dev == CPU {
		x = detach(y, x)
	}
	ran(op, k.RMSNorm(y, rrms, x, p), y, x)
	return y
}

// RMSNormBackward returns the gradients with respect to x and gamma (nil
// when p has none) of RMSNorm(x, p) that returned rrms, given dy: with
// r = rrms, x̂ = x·r and g = dy·gamma, dx = r·(g - x̂·mean(g·x̂)) and
// dgamma = Σ_rows dy·x̂, in float64. The results are on x's device.
func RMSNormBackward(dy, x, rrms *Tensor, p RMSNormParams) (dx, dgamma *Tensor) {
	const op = "RMSNormBackward"
	checkNil(op, "dy, x, rrms", dy, x, rrms)
	lead, p := checkRMSNorm(op, x, p)
	checkSameShape(op, "dy", dy, x)
	if !slices.Equal(rrms.shape, lead) {
		panic(fmt.Sprintf("tensor: %s: rrms of shape %v, want %v", op, rrms.shape, lead))
	}
	dev := deviceOn(op, nil, dy, x, rrms, p.Gamma)
	k := normOn(op, dev, nil, dy, x, rrms, p.Gamma)
	dx = result(op, dev, x.shape, dy, x)
	if p.Gamma != nil {
		dgamma = result(op, dev, p.Gamma.shape, dy, x)
	}
	ran(op, k.RMSNormBackward(dx, dgamma, dy, x, rrms, p), dx, dy, x)
	return dx, dgamma
}

// RMSNormBackwardInto writes the gradients into dx (x's shape) and
// dgamma (gamma's number of elements; nil to skip it, and nil when p has
// no gamma). Inputs overlapping dx are copied first.
func RMSNormBackwardInto(dx, dgamma, dy, x, rrms *Tensor, p RMSNormParams) {
	const op = "RMSNormBackwardInto"
	checkNil(op, "dx, dy, x, rrms", dx, dy, x, rrms)
	lead, p := checkRMSNorm(op, x, p)
	checkSameShape(op, "dy", dy, x)
	checkSameShape(op, "dx", dx, x)
	checkLen(op, "rrms", rrms, shapeLen(lead))
	if dgamma != nil && p.Gamma == nil {
		panic(fmt.Sprintf("tensor: %s: dgamma of shape %v without gamma", op, dgamma.shape))
	}
	checkGrads(op, shapeLen(x.shape[len(lead):]), dgamma, nil)
	checkWritable(op, dx)
	dev := deviceOn(op, dx, dgamma, dy, x, rrms, p.Gamma)
	k := normOn(op, dev, dx, dgamma, dy, x, rrms, p.Gamma)
	if dev == CPU {
		x, dy = detach(dx, x), detach(dx, dy)
	}
	ran(op, k.RMSNormBackward(dx, dgamma, dy, x, rrms, p), dx, dy, x)
}

// RMSNorm is the CPU's RMSNorm: host operands, y and rrms overlapping no
// input.
func (cpuKernels) RMSNorm(y, rrms, x *Tensor, p RMSNormParams) error {
	const op = "RMSNorm"
	xs, g := x.hostData(op), vec(op, p.Gamma)
	yo, ro := target(y), target(rrms)
	ys, rs := yo.hostData(op), ro.hostData(op)
	defer finish(rrms, ro)
	defer finish(y, yo)
	d, eps := shapeLen(x.shape[len(x.shape)-p.Dims:]), float64(p.Eps)
	for r := range rs {
		row := xs[r*d : (r+1)*d]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(d)+eps)
		rs[r] = float32(inv)
		for i, v := range row {
			o := float64(v) * inv
			if g != nil {
				o *= float64(g[i])
			}
			ys[r*d+i] = float32(o)
		}
	}
	return nil
}

// RMSNormBackward is the CPU's RMSNormBackward: host operands, dx and
// dgamma overlapping no input.
func (cpuKernels) RMSNormBackward(dx, dgamma, dy, x, rrms *Tensor, p RMSNormParams) error {
	const op = "RMSNormBackward"
	xs, dys, rs, g := x.hostData(op), dy.hostData(op), rrms.hostData(op), vec(op, p.Gamma)
	dxo := target(dx)
	dxs := dxo.hostData(op)
	defer finish(dx, dxo)
	d := shapeLen(x.shape[len(x.shape)-p.Dims:])
	var dg []float64
	if dgamma != nil {
		dg = make([]float64, d)
	}
	for r, inv := range rs {
		row, dyr := xs[r*d:(r+1)*d], dys[r*d:(r+1)*d]
		ri := float64(inv)
		var m float64
		for i, v := range row {
			gi := float64(dyr[i])
			if g != nil {
				gi *= float64(g[i])
			}
			if dg != nil {
				dg[i] += float64(dyr[i]) * float64(v) * ri
			}
			m += gi * float64(v) * ri
		}
		m /= float64(d)
		for i, v := range row {
			gi := float64(dyr[i])
			if g != nil {
				gi *= float64(g[i])
			}
			dxs[r*d+i] = float32(ri * (gi - float64(v)*ri*m))
		}
	}
	if dg != nil {
		dgo := target(dgamma)
		dgs := dgo.hostData(op)
		for i, v := range dg {
			dgs[i] = float32(v)
		}
		finish(dgamma, dgo)
	}
	return nil
}

// checkRMSNorm checks p against x and returns the leading shape and p
// with its defaults filled in (Dims and Eps not zero).
func checkRMSNorm(op string, x *Tensor, p RMSNormParams) ([]int, RMSNormParams) {
	dims := max(p.Dims, 1)
	if p.Dims < 0 || dims > len(x.shape) {
		panic(fmt.Sprintf("tensor: %s: %d normalized axes for shape %v", op, p.Dims, x.shape))
	}
	trail := x.shape[len(x.shape)-dims:]
	if p.Gamma != nil && !slices.Equal(p.Gamma.shape, trail) {
		panic(fmt.Sprintf("tensor: %s: gamma of shape %v, want the normalized shape %v", op, p.Gamma.shape, trail))
	}
	if !(p.Eps >= 0) {
		panic(fmt.Sprintf("tensor: %s: eps %v is negative", op, p.Eps))
	}
	if p.Eps == 0 {
		p.Eps = 0x1p-23
	}
	p.Dims = dims
	return slices.Clone(x.shape[:len(x.shape)-dims]), p
}
