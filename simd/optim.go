package simd

import "fmt"

// optimKernels is the optimizer family: single-pass updates whose results
// are those of the elementwise kernels they replace, bit for bit.
type optimKernels struct {
	// adam is AdamUpdate's pass; nil at a level without one, which then
	// composes the update of that level's elementwise kernels.
	adam func(p, g, m, v []float32, beta1, a1, beta2, a2, invSqrtBC2, eps, negStep float32)
}

var optim table[optimKernels]

// AdamUpdate is Adam's update of the parameters p from their gradient g,
// with the moments m and v (without weight decay, which the caller applies
// to g or p first): for every i,
//
//	m[i] = β₁·m[i] + (1-β₁)·g[i]
//	v[i] = β₂·v[i] + (1-β₂)·g[i]²
//	p[i] -= stepSize · m[i] / (√v[i]·invSqrtBC2 + eps)
//
// with stepSize and invSqrtBC2 the step's bias corrections (lr/(1-β₁ᵗ) and
// 1/√(1-β₂ᵗ)), and 1-β computed in float32. Every operation is rounded
// where the composition of this package's kernels rounds it, which is
// what AdamUpdate computes at a level without a single-pass kernel:
// Scale(m, m, β₁), Axpy(m, 1-β₁, g), Mul(t, g, g), Scale(v, v, β₂),
// Axpy(v, 1-β₂, t), Sqrt(t, v), Scale(t, t, invSqrtBC2), AddScalar(t, t,
// eps), Div(t, m, t), Axpy(p, -stepSize, t), the Axpys fused multiply-adds
// where the level has them. The results are the same bit for bit either
// way (so a device kernel that follows the same order matches them); the
// single pass (AVX-512, AVX2) reads and writes each element once instead
// of in ten passes.
//
// tmp is scratch of at least len(p) elements for the levels that compose
// (generic, NEON); the single-pass levels do not touch it. p, g, m, v and
// tmp must not overlap. It panics, naming the lengths, when g, m or v is
// not as long as p or tmp is shorter.
func AdamUpdate(p, g, m, v, tmp []float32, beta1, beta2, stepSize, invSqrtBC2, eps float32) {
	if len(g) != len(p) || len(m) != len(p) || len(v) != len(p) || len(tmp) < len(p) {
		panic(fmt.Sprintf("simd: AdamUpdate: len(p)=%d len(g)=%d len(m)=%d len(v)=%d len(tmp)=%d, want g, m and v as long as p and tmp at least as long",
			len(p), len(g), len(m), len(v), len(tmp)))
	}
	a1, a2 := 1-beta1, 1-beta2
	if k := optim.get().adam; k != nil {
		k(p, g, m, v, beta1, a1, beta2, a2, invSqrtBC2, eps, -stepSize)
		return
	}
	t := tmp[:len(p)]
	adamMoments(g, m, v, t, beta1, a1, beta2, a2)
	adamStep(p, m, v, t, stepSize, invSqrtBC2, eps)
}

// AdamMoments is the first half of AdamUpdate's composition, for updates
// that change the second moment before the step (AMSGrad's running
// maximum, NAdam's momentum): m = β₁·m + (1-β₁)·g and v = β₂·v +
// (1-β₂)·g², rounded as AdamUpdate rounds them, with tmp scratch of at
// least len(g) elements. g, m, v and tmp must not overlap; it panics,
// naming the lengths, when m or v is not as long as g or tmp is shorter.
func AdamMoments(g, m, v, tmp []float32, beta1, beta2 float32) {
	if len(m) != len(g) || len(v) != len(g) || len(tmp) < len(g) {
		panic(fmt.Sprintf("simd: AdamMoments: len(g)=%d len(m)=%d len(v)=%d len(tmp)=%d, want m and v as long as g and tmp at least as long",
			len(g), len(m), len(v), len(tmp)))
	}
	adamMoments(g, m, v, tmp[:len(g)], beta1, 1-beta1, beta2, 1-beta2)
}

// AdamStep is the second half of AdamUpdate's composition: p -= stepSize ·
// m / (√d·invSqrtBC2 + eps), d the second moment (v, or AMSGrad's running
// maximum of it), rounded as AdamUpdate rounds it, with tmp scratch of at
// least len(p) elements. p, m, d and tmp must not overlap (m and d may be
// the same slice); it panics, naming the lengths, when m or d is not as
// long as p or tmp is shorter.
func AdamStep(p, m, d, tmp []float32, stepSize, invSqrtBC2, eps float32) {
	if len(m) != len(p) || len(d) != len(p) || len(tmp) < len(p) {
		panic(fmt.Sprintf("simd: AdamStep: len(p)=%d len(m)=%d len(d)=%d len(tmp)=%d, want m and d as long as p and tmp at least as long",
			len(p), len(m), len(d), len(tmp)))
	}
	adamStep(p, m, d, tmp[:len(p)], stepSize, invSqrtBC2, eps)
}

func adamMoments(g, m, v, t []float32, beta1, a1, beta2, a2 float32) {
	Scale(m, m, beta1)
	Axpy(m, a1, g)
	Mul(t, g, g)
	Scale(v, v, beta2)
	Axpy(v, a2, t)
}

func adamStep(p, m, d, t []float32, stepSize, invSqrtBC2, eps float32) {
	Sqrt(t, d)
	Scale(t, t, invSqrtBC2)
	AddScalar(t, t, eps)
	Div(t, m, t)
	Axpy(p, -stepSize, t)
}
