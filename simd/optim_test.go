package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// TestAdamUpdate checks AdamUpdate at every level against the composition
// of the level's elementwise kernels it documents, bit for bit: every
// length 0..257 and a large one, unaligned starts, special values in g, m
// and v (NaN, ±Inf, -0, denormals, negative v), canaries around p, m and v,
// and the scratch untouched by the single-pass levels. The composition is
// also checked against a float64 evaluation of the update on ordinary
// values, so that both cannot be wrong alike.
func TestAdamUpdate(t *testing.T) {
	const beta1, beta2, stepSize, invSqrtBC2, eps = 0.9, 0.999, 1e-3 / (1 - 0.9*0.9), 1 / 0.0446990, 1e-8
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		r := rand.New(rand.NewPCG(31, uint64(l)))
		single := optim.get().adam != nil
		for _, n := range testLengths {
			for _, off := range []int{0, 3} {
				specials := 0
				if n%3 == 1 {
					specials = 7
				}
				g, m0, v0, p0 := make([]float32, n+off), make([]float32, n), make([]float32, n), make([]float32, n)
				g = g[off:]
				fill(r, g, 2, specials)
				fill(r, m0, 1, specials)
				fill(r, v0, 1, specials)
				fill(r, p0, 1, 0)
				for i := range v0 {
					if i%5 != 0 { // mostly the nonnegative v Adam keeps
						v0[i] = float32(math.Abs(float64(v0[i])))
					}
				}
				gp, gm, gv := newGuarded(n, off), newGuarded(n, off+1), newGuarded(n, 2)
				copy(gp.s(), p0)
				copy(gm.s(), m0)
				copy(gv.s(), v0)
				tmp := make([]float32, n)
				for i := range tmp {
					tmp[i] = 42
				}
				AdamUpdate(gp.s(), g, gm.s(), gv.s(), tmp, beta1, beta2, stepSize, invSqrtBC2, eps)
				what := fmt.Sprintf("n=%d off=%d", n, off)
				gp.check(t, what+" p")
				gm.check(t, what+" m")
				gv.check(t, what+" v")

				// The composition, spelled out (1-β in float32, as
				// AdamUpdate and tensor's optimizers compute it).
				b1, b2 := float32(beta1), float32(beta2)
				wp, wm, wv, wt := append([]float32(nil), p0...), append([]float32(nil), m0...), append([]float32(nil), v0...), make([]float32, n)
				Scale(wm, wm, beta1)
				Axpy(wm, 1-b1, g)
				Mul(wt, g, g)
				Scale(wv, wv, beta2)
				Axpy(wv, 1-b2, wt)
				Sqrt(wt, wv)
				Scale(wt, wt, invSqrtBC2)
				AddScalar(wt, wt, eps)
				Div(wt, wm, wt)
				Axpy(wp, -stepSize, wt)
				for i := 0; i < n; i++ {
					for _, c := range []struct {
						name      string
						got, want float32
					}{{"m", gm.s()[i], wm[i]}, {"v", gv.s()[i], wv[i]}, {"p", gp.s()[i], wp[i]}} {
						if math.Float32bits(c.got) != math.Float32bits(c.want) {
							t.Fatalf("%s: %s[%d] = %v, the composition gives %v (g=%v m=%v v=%v p=%v)", what, c.name, i, c.got, c.want, g[i], m0[i], v0[i], p0[i])
						}
					}
					if single && tmp[i] != 42 {
						t.Fatalf("%s: the single-pass kernel wrote tmp[%d]", what, i)
					}
					// float64 reference on ordinary values: m and v within
					// an ulp of their larger term and of the result; p's
					// step, from the m and v computed, within 1e-6 relative.
					if specials == 0 && v0[i] >= 0 {
						m64 := float64(b1)*float64(m0[i]) + float64(1-b1)*float64(g[i])
						v64 := float64(b2)*float64(v0[i]) + float64(1-b2)*float64(g[i])*float64(g[i])
						mTol := ulpOf(float64(b1)*float64(m0[i])) + ulpOf(float64(1-b1)*float64(g[i])) + ulpOf(m64)
						vTol := ulpOf(float64(b2)*float64(v0[i])) + ulpOf(float64(1-b2)*float64(g[i])*float64(g[i])) + ulpOf(v64)
						if e := math.Abs(float64(gm.s()[i]) - m64); e > mTol {
							t.Fatalf("%s: m[%d] = %v, float64 gives %v", what, i, gm.s()[i], m64)
						}
						if e := math.Abs(float64(gv.s()[i]) - v64); e > vTol {
							t.Fatalf("%s: v[%d] = %v, float64 gives %v", what, i, gv.s()[i], v64)
						}
						d64 := stepSize * float64(gm.s()[i]) / (math.Sqrt(float64(gv.s()[i]))*invSqrtBC2 + eps)
						if e := math.Abs(float64(p0[i]) - d64 - float64(gp.s()[i])); e > 1e-6*math.Abs(d64)+ulpOf(float64(p0[i])-d64) {
							t.Fatalf("%s: p[%d] = %v, float64 gives %v", what, i, gp.s()[i], float64(p0[i])-d64)
						}
					}
				}
			}
		}
	})
}

// ulpOf is float32's ulp at x.
func ulpOf(x float64) float64 {
	f := float32(math.Abs(x))
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

func TestAdamUpdatePanics(t *testing.T) {
	x := make([]float32, 4)
	expectPanic(t, "len(m)=3", func() { AdamUpdate(x, x[:4], x[:3], x, x, 0.9, 0.999, 1, 1, 1e-8) })
	expectPanic(t, "len(tmp)=2", func() { AdamUpdate(x, x, x, x, x[:2], 0.9, 0.999, 1, 1, 1e-8) })
}

// TestAdamHalves checks that AdamMoments then AdamStep (on v) give
// AdamUpdate's bits at every level, and their panics.
func TestAdamHalves(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		for _, n := range []int{0, 1, 17, 257, 1000} {
			mk := func() []float32 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				return x
			}
			p, g, m := mk(), mk(), mk()
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(r.ExpFloat64())
			}
			p2, m2, v2, tmp := slices.Clone(p), slices.Clone(m), slices.Clone(v), make([]float32, n)
			AdamUpdate(p, g, m, v, tmp, 0.9, 0.999, 1e-3, 1.3, 1e-8)
			AdamMoments(g, m2, v2, tmp, 0.9, 0.999)
			AdamStep(p2, m2, v2, tmp, 1e-3, 1.3, 1e-8)
			for i := range p {
				if math.Float32bits(p[i]) != math.Float32bits(p2[i]) || math.Float32bits(m[i]) != math.Float32bits(m2[i]) || math.Float32bits(v[i]) != math.Float32bits(v2[i]) {
					t.Fatalf("n=%d [%d]: halves p, m, v = %v, %v, %v; AdamUpdate %v, %v, %v", n, i, p2[i], m2[i], v2[i], p[i], m[i], v[i])
				}
			}
		}
	})
	x := make([]float32, 4)
	expectPanic(t, "simd: AdamMoments: len(g)=4 len(m)=3", func() { AdamMoments(x, x[:3], x, x, 0.9, 0.999) })
	expectPanic(t, "len(tmp)=2", func() { AdamMoments(x, x, x, x[:2], 0.9, 0.999) })
	expectPanic(t, "simd: AdamStep: len(p)=4 len(m)=4 len(d)=3", func() { AdamStep(x, x, x[:3], x, 1, 1, 1e-8) })
	expectPanic(t, "len(tmp)=2", func() { AdamStep(x, x, x, x[:2], 1, 1, 1e-8) })
}

func TestAdamUpdateAllocs(t *testing.T) {
	p, g, m, v, tmp := make([]float32, 1000), make([]float32, 1000), make([]float32, 1000), make([]float32, 1000), make([]float32, 1000)
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		if a := testing.AllocsPerRun(20, func() { AdamUpdate(p, g, m, v, tmp, 0.9, 0.999, 1e-3, 1, 1e-8) }); a != 0 {
			t.Errorf("%v allocations per call", a)
		}
	})
}

func BenchmarkAdamUpdate(b *testing.B) {
	const n = 421642 // the Fashion CNN's parameters
	p, g, m, v, tmp := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	r := rand.New(rand.NewPCG(1, 2))
	fill(r, g, 1, 0)
	for _, l := range dispatch.Levels() {
		b.Run(l.String(), func(b *testing.B) {
			prev := dispatch.Active()
			defer dispatch.SetLevel(prev)
			dispatch.SetLevel(l)
			for b.Loop() {
				// In blocks of 1024, as tensor's optimizers call it.
				for i := 0; i < n; i += 1024 {
					j := min(n, i+1024)
					AdamUpdate(p[i:j], g[i:j], m[i:j], v[i:j], tmp[i:j], 0.9, 0.999, 1e-3, 1, 1e-8)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
