//go:build !purego && linux

package simd

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
	"github.com/lanesgo/lanes/internal/cputime"
)

// cpuRate runs f (flops floating-point operations) reps times on a locked
// thread and returns GFLOP/s of thread CPU time.
func cpuRate(t testing.TB, flops float64, reps int, f func()) float64 {
	t0 := cputime.Thread(t)
	for range reps {
		f()
	}
	return flops * float64(reps) / (cputime.Thread(t) - t0).Seconds() / 1e9
}

// TestGemmCPUTime is the harness behind the blocking and microkernel
// choices (LANES_GEMM_CPUTIME=1 runs it; LANES_GEMM_SIZES=512,1024 and
// LANES_GEMM_ROUNDS=7 narrow it): one thread, locked, timed by its own CPU
// time, with the FMA peak kernel, the microkernel alone (panels in L1; B in
// L1 and A streamed from L2 as in the block loop), the packing, and the
// whole product interleaved in rounds, so that all see the same load.
// It prints medians over the rounds as percentages of the peak of the same
// round. Run: LANES_GEMM_CPUTIME=1 go test -run TestGemmCPUTime -v ./simd/
func TestGemmCPUTime(t *testing.T) {
	if os.Getenv("LANES_GEMM_CPUTIME") == "" {
		t.Skip("set LANES_GEMM_CPUTIME=1 to run")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	procs := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(procs)
	sizes := []int{512, 1024, 2048}
	if s := os.Getenv("LANES_GEMM_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, _ := strconv.Atoi(f)
			sizes = append(sizes, n)
		}
	}
	rounds := 5
	if s := os.Getenv("LANES_GEMM_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	for _, l := range []dispatch.Level{dispatch.AVX512, dispatch.AVX2} {
		if !dispatch.Supports(l) {
			continue
		}
		if w := os.Getenv("LANES_GEMM_LEVEL"); w != "" && w != l.String() {
			continue
		}
		dispatch.SetLevel(l)
		peak32, peak64 := fmaPeakAVX512, fmaPeakF64AVX512
		lanes, chains := 16, 24
		if l == dispatch.AVX2 {
			peak32, peak64, lanes, chains = fmaPeakAVX2, fmaPeakF64AVX2, 8, 12
		}
		if os.Getenv("LANES_GEMM_F64") != "only" {
			cpuTimeFamily(t, l, sgemmFamily.kernels.get(), peak32, 2*float64(chains*lanes), sizes, rounds)
		}
		if os.Getenv("LANES_GEMM_F64") != "" {
			cpuTimeFamily(t, l, dgemmFamily.kernels.get(), peak64, float64(chains*lanes), sizes, rounds)
		}
	}
}

// gemmVariants are the active kernel ("current") and alternative
// blockings that the harness times beside it (LANES_GEMM_BLOCKS, e.g.
// "256x672x4096,512x336x4096": kc x mc x nc), and with LANES_GEMM_NOPACKN
// set the current blocking packing B with the Go loop ("goPackB"), with
// their names in order.
func gemmVariants[T float](kern *gemmKernels[T]) ([]string, map[string]*gemmKernels[T]) {
	v := map[string]*gemmKernels[T]{"current": kern}
	var names []string
	for _, f := range strings.Split(os.Getenv("LANES_GEMM_BLOCKS"), ",") {
		var bl blocking
		if n, _ := fmt.Sscanf(f, "%dx%dx%d", &bl.kc, &bl.mc, &bl.nc); n == 3 {
			k := *kern
			k.bl = bl
			v[f] = &k
			names = append(names, f)
		}
	}
	if os.Getenv("LANES_GEMM_NOPACKN") != "" {
		k := *kern
		k.packN = nil
		v["goPackB"] = &k
		names = append(names, "goPackB")
	}
	slices.Sort(names)
	return append([]string{"current"}, names...), v
}

func cpuTimeFamily[T float](t *testing.T, l dispatch.Level, kern *gemmKernels[T], peak func(int), peakFlops float64, sizes []int, rounds int) {
	mr, nr := kern.mr, kern.nr
	var zero T
	t.Logf("%v %T %d×%d blocking %+v", l, zero, mr, nr, kern.bl)
	r := rand.New(rand.NewPCG(1, 2))
	peakIters := 1 << 16
	// Rates are kept per round; the figures are best/best and p75/p75 of
	// the peak's rates: under load (the thread's core shared with other
	// work), noise only slows a run down, so the best is the closest to the
	// code's own speed.
	var peaks []float64
	ratio := func(x []float64) string {
		x, p := slices.Clone(x), slices.Clone(peaks)
		slices.Sort(x)
		slices.Sort(p)
		q := func(x []float64) float64 { return x[len(x)*3/4] }
		return fmt.Sprintf("%.1f%% (p75 %.1f%%)", 100*x[len(x)-1]/p[len(p)-1], 100*q(x)/q(p))
	}
	median := func(x []float64) string {
		slices.Sort(x)
		return fmt.Sprintf("%.1f%%", x[len(x)/2])
	}
	peakRun := func() float64 {
		p := cpuRate(t, peakFlops*float64(peakIters), 4, func() { peak(peakIters) })
		peaks = append(peaks, p)
		return p
	}

	// The microkernel alone: panels in L1 (kc = 128), and B in L1 with A
	// streamed from an mc×kc block (kc, mc of the blocking) into one tile
	// of a large C.
	{
		kc := 128
		a, b, c := randOf[T](r, mr*kc), randOf[T](r, nr*kc), make([]T, mr*nr)
		kc2, mc := kern.bl.kc, kern.bl.mc
		a2, b2 := randOf[T](r, mc*kc2), randOf[T](r, nr*kc2)
		ldc := 1024
		c2 := make([]T, mc*ldc)
		var l1, l2, l2c []float64
		for range rounds {
			peakRun()
			l1 = append(l1, cpuRate(t, 2*float64(mr*nr*kc), 20000, func() { kern.kernel(kc, a, b, c, nr, 1, 1) }))
			panels := mc / mr
			l2 = append(l2, cpuRate(t, 2*float64(mr*nr*kc2*panels), 200, func() {
				for q := range panels {
					kern.kernel(kc2, a2[q*mr*kc2:], b2, c2[q*mr*ldc:], ldc, 1, 1)
				}
			}))
			l2c = append(l2c, cpuRate(t, 2*float64(mr*nr*kc2*panels), 200, func() {
				for q := range panels {
					kern.kernel(kc2, a2[q*mr*kc2:], b2, c, nr, 1, 1)
				}
			}))
		}
		t.Logf("  microkernel: L1 panels (kc=128) %s of peak; B in L1, A from L2 (kc=%d, mc=%d) into C rows ldc=%d apart %s, into one hot tile %s", ratio(l1), kc2, mc, ldc, ratio(l2), ratio(l2c))
	}

	names, variants := gemmVariants(kern)
	for _, n := range sizes {
		peaks = peaks[:0]
		a, b, c := randOf[T](r, n*n), randOf[T](r, n*n), make([]T, n*n)
		flops := 2 * float64(n) * float64(n) * float64(n)
		reps := max(1, int(2e9/flops))
		pct := map[string][]float64{}
		var packPct []float64
		for range rounds {
			for _, name := range names {
				v := variants[name]
				peakRun()
				pct[name] = append(pct[name], cpuRate(t, flops, reps, func() { gemmRange(v, nil, 0, false, false, 0, n, 0, n, n, 1, a, n, b, n, 0, c, n) }))
			}
			// The packing alone, as gemmRange does it for the current
			// blocking: its time as a share of the whole product's.
			bl := kern.bl
			w := &gemmWork[T]{}
			w.bp = grow(w.bp, (bl.nc+nr)*bl.kc)
			w.ap = grow(w.ap, (bl.mc+mr)*bl.kc)
			t0 := cputime.Thread(t)
			for range reps {
				mcStep, kcStep, ncStep := evenBlock(n, bl.mc, mr), evenBlock(n, bl.kc, 8), evenBlock(n, bl.nc, nr)
				for ic := 0; ic < n; ic += mcStep {
					for pc := 0; pc < n; pc += kcStep {
						kc := min(kcStep, n-pc)
						packA(kern, w.ap, a, n, false, ic, min(mcStep, n-ic), pc, kc)
						for jc := 0; jc < n; jc += ncStep {
							packB(kern, w.bp, b, n, false, pc, kc, jc, min(ncStep, n-jc))
						}
					}
				}
			}
			packT := (cputime.Thread(t) - t0).Seconds()
			t1 := cputime.Thread(t)
			for range reps {
				gemmRange(kern, nil, 0, false, false, 0, n, 0, n, n, 1, a, n, b, n, 0, c, n)
			}
			packPct = append(packPct, 100*packT/(cputime.Thread(t)-t1).Seconds())
		}
		line := fmt.Sprintf("  n=%d:", n)
		for _, name := range names {
			line += fmt.Sprintf(" %s %s", name, ratio(pct[name]))
		}
		t.Logf("%s of peak; packing %s of the product's time", line, median(packPct))
	}
}

// TestGemmInnerCPUTime times gemmRange's two inner loops (the tiles of one
// mc×kc block of A against a kc×nc slab of B, both packed, into rows of a
// C with ldc = n) per blocking, best of many short samples (about a
// millisecond each), interleaved: LANES_GEMM_CPUTIME=1
// LANES_GEMM_BLOCKS=256x672x4096 go test -run TestGemmInnerCPUTime -v ./simd/
func TestGemmInnerCPUTime(t *testing.T) {
	if os.Getenv("LANES_GEMM_CPUTIME") == "" {
		t.Skip("set LANES_GEMM_CPUTIME=1 to run")
	}
	if !dispatch.Supports(dispatch.AVX512) {
		t.Skip("the peak kernel it compares with is AVX-512's")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if os.Getenv("LANES_GEMM_F64") != "only" {
		innerCPUTime(t, sgemmFamily.kernels.get(), fmaPeakAVX512, 2*24*16)
	}
	if os.Getenv("LANES_GEMM_F64") != "" {
		innerCPUTime(t, dgemmFamily.kernels.get(), fmaPeakF64AVX512, 2*24*8)
	}
}

func innerCPUTime[T float](t *testing.T, kern *gemmKernels[T], peak func(int), peakFlops float64) {
	names, variants := gemmVariants(kern)
	if os.Getenv("LANES_GEMM_HOTC") != "" {
		// The same blockings with C as one hot tile: what C's rows cost.
		for _, name := range slices.Clone(names) {
			variants[name+"+hotC"] = variants[name]
			names = append(names, name+"+hotC")
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1024, 2048} {
		c := make([]T, n*n)
		best := map[string]float64{}
		bestPack := map[string]float64{}
		var bestPeak float64
		type packed struct{ ap, bp []T }
		bufs := map[string]packed{}
		for _, name := range names {
			if strings.HasSuffix(name, "+hotC") {
				bufs[name] = bufs[strings.TrimSuffix(name, "+hotC")]
				continue
			}
			v := variants[name]
			kc, mc, nc := min(n, v.bl.kc), min(n, v.bl.mc)/v.mr*v.mr, min(n, v.bl.nc)/v.nr*v.nr
			bufs[name] = packed{randOf[T](r, mc*kc), randOf[T](r, nc*kc)}
		}
		a, b := randOf[T](r, n*n), randOf[T](r, n*n)
		for round := range 40 {
			bestPeak = max(bestPeak, cpuRate(t, peakFlops*65536, 1, func() { peak(65536) }))
			for _, name := range names {
				v := variants[name]
				kc, mc, nc := min(n, v.bl.kc), min(n, v.bl.mc)/v.mr*v.mr, min(n, v.bl.nc)/v.nr*v.nr
				ap, bp := bufs[name].ap, bufs[name].bp
				ic := (round * mc) % (n - mc + 1) / v.mr * v.mr
				hot := strings.HasSuffix(name, "+hotC")
				ldcv, cv := n, c[ic*n:]
				if hot {
					ldcv, cv = v.nr, c
				}
				tile := make([]T, v.mr*v.nr)
				g := cpuRate(t, 2*float64(mc*nc*kc), 1, func() {
					if !hot {
						gemmBlock(v, ap, bp, tile, kc, mc, nc, 1, 1, cv, ldcv)
						return
					}
					for ir := 0; ir < mc; ir += v.mr {
						for jr := 0; jr < nc; jr += v.nr {
							v.kernel(kc, ap[ir*kc:], bp[jr*kc:], cv, ldcv, 1, 1)
						}
					}
				})
				best[name] = max(best[name], g)
				// Packing of that block and of its share of the slab of B
				// (mc/n of it: the slab is packed once per n rows of C),
				// as seconds per flop of the block.
				t0 := cputime.Thread(t)
				packA(v, ap, a, n, false, ic, mc, 0, kc)
				packB(v, bp[:nc*kc*mc/n/v.nr*v.nr], b, n, false, 0, kc, 0, nc*mc/n/v.nr*v.nr)
				s := (cputime.Thread(t) - t0).Seconds() / (2 * float64(mc*nc*kc))
				if bestPack[name] == 0 || s < bestPack[name] {
					bestPack[name] = s
				}
			}
		}
		line := fmt.Sprintf("n=%d peak %.1f:", n, bestPeak)
		for _, name := range names {
			line += fmt.Sprintf(" %s %.1f%% (with packing %.1f%%)", name, 100*best[name]/bestPeak, 100/(1/best[name]+bestPack[name]*1e9)/bestPeak)
		}
		t.Log(line)
	}
}

// TestGemmPaired alternates whole products of two variants (LANES_GEMM_A,
// LANES_GEMM_B: "current" or a blocking spec as in gemmVariants)
// call by call and prints the median of the per-pair time ratios B/A and
// each one's best rate as a share of the best peak run.
func TestGemmPaired(t *testing.T) {
	if os.Getenv("LANES_GEMM_CPUTIME") == "" {
		t.Skip()
	}
	if !dispatch.Supports(dispatch.AVX512) {
		t.Skip("the peak kernel it compares with is AVX-512's")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if os.Getenv("LANES_GEMM_F64") != "only" {
		pairedFamily(t, sgemmFamily.kernels.get(), fmaPeakAVX512, 2*24*16)
	}
	if os.Getenv("LANES_GEMM_F64") != "" {
		pairedFamily(t, dgemmFamily.kernels.get(), fmaPeakF64AVX512, 2*24*8)
	}
}

func pairedFamily[T float](t *testing.T, kern *gemmKernels[T], peak func(int), peakFlops float64) {
	variant := func(spec string) func(n int, a, b, c []T) {
		_, vs := gemmVariants(kern)
		k := vs[spec]
		if k == nil {
			k = kern
		}
		return func(n int, a, b, c []T) { gemmRange(k, nil, 0, false, false, 0, n, 0, n, n, 1, a, n, b, n, 0, c, n) }
	}
	va, vb := os.Getenv("LANES_GEMM_A"), os.Getenv("LANES_GEMM_B")
	fa, fb := variant(va), variant(vb)
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{512, 1024, 2048} {
		a, b, c := randOf[T](r, n*n), randOf[T](r, n*n), make([]T, n*n)
		flops := 2 * float64(n) * float64(n) * float64(n)
		calls := max(10, int(60e9/flops))
		if n == 2048 {
			calls = 8
		}
		var ratios []float64
		var bestA, bestB, bestP float64
		for i := range calls {
			bestP = max(bestP, cpuRate(t, peakFlops*65536, 1, func() { peak(65536) }))
			ra := cpuRate(t, flops, 1, func() { fa(n, a, b, c) })
			rb := cpuRate(t, flops, 1, func() { fb(n, a, b, c) })
			if i%2 == 1 {
				rb = cpuRate(t, flops, 1, func() { fb(n, a, b, c) })
				ra = cpuRate(t, flops, 1, func() { fa(n, a, b, c) })
			}
			bestA, bestB = max(bestA, ra), max(bestB, rb)
			ratios = append(ratios, ra/rb)
		}
		slices.Sort(ratios)
		t.Logf("n=%d: %s/%s time ratio median %.3f (quartiles %.3f %.3f, %d pairs); best %s %.1f%%, %s %.1f%% of peak %.1f", n, vb, va,
			ratios[len(ratios)/2], ratios[len(ratios)/4], ratios[3*len(ratios)/4], len(ratios), va, 100*bestA/bestP, vb, 100*bestB/bestP, bestP)
	}
}
