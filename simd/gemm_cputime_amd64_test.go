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
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/lanesgo/lanes/dispatch"
)

// threadCPU is the CPU time the calling OS thread has used
// (CLOCK_THREAD_CPUTIME_ID): on a machine shared with other work it counts
// only this thread's cycles, where wall-clock time counts the others' too.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTime = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic(e)
	}
	return time.Duration(ts.Nano())
}

// cpuRate runs f (flops floating-point operations) reps times on a locked
// thread and returns GFLOP/s of thread CPU time.
func cpuRate(flops float64, reps int, f func()) float64 {
	t0 := threadCPU()
	for range reps {
		f()
	}
	return flops * float64(reps) / (threadCPU() - t0).Seconds() / 1e9
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

// gemmVariants are alternative kernels (blocking, microkernel) that the
// harness times beside the active one; experiments add to it.
func gemmVariants[T float](kern *gemmKernels[T]) map[string]*gemmKernels[T] {
	v := map[string]*gemmKernels[T]{}
	// e.g. "256x672x4096,old512x336x4096": kc x mc x nc; "old" runs
	// gemmRangeOld with that blocking.
	spec := os.Getenv("LANES_GEMM_BLOCKS")
	for _, f := range strings.Split(spec, ",") {
		var bl blocking
		if n, _ := fmt.Sscanf(strings.TrimPrefix(f, "old"), "%dx%dx%d", &bl.kc, &bl.mc, &bl.nc); n == 3 {
			k := *kern
			k.bl = bl
			v[f] = &k
		}
	}
	return v
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
		p := cpuRate(peakFlops*float64(peakIters), 4, func() { peak(peakIters) })
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
			l1 = append(l1, cpuRate(2*float64(mr*nr*kc), 20000, func() { kern.kernel(kc, a, b, c, nr, 1, 1) }))
			panels := mc / mr
			l2 = append(l2, cpuRate(2*float64(mr*nr*kc2*panels), 200, func() {
				for q := range panels {
					kern.kernel(kc2, a2[q*mr*kc2:], b2, c2[q*mr*ldc:], ldc, 1, 1)
				}
			}))
			l2c = append(l2c, cpuRate(2*float64(mr*nr*kc2*panels), 200, func() {
				for q := range panels {
					kern.kernel(kc2, a2[q*mr*kc2:], b2, c, nr, 1, 1)
				}
			}))
		}
		t.Logf("  microkernel: L1 panels (kc=128) %s of peak; B in L1, A from L2 (kc=%d, mc=%d) into C rows ldc=%d apart %s, into one hot tile %s", ratio(l1), kc2, mc, ldc, ratio(l2), ratio(l2c))
	}

	variants := gemmVariants(kern)
	names := []string{"current"}
	for name := range variants {
		names = append(names, name)
	}
	slices.Sort(names[1:])
	variants["current"] = kern
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
				rangeFn := func(k *gemmKernels[T], tA, tB bool, r0, r1, c0, c1, kk int, al T, a []T, lda int, b []T, ldb int, be T, c []T, ldc int) {
					gemmRange(k, nil, tA, tB, r0, r1, c0, c1, kk, al, a, lda, b, ldb, be, c, ldc)
				}
				if strings.HasPrefix(name, "old") {
					rangeFn = gemmRangeOld[T]
				}
				pct[name] = append(pct[name], cpuRate(flops, reps, func() { rangeFn(v, false, false, 0, n, 0, n, n, 1, a, n, b, n, 0, c, n) }))
			}
			// The packing alone, as gemmRange does it for the current
			// blocking: its time as a share of the whole product's.
			bl := kern.bl
			w := &gemmWork[T]{}
			w.bp = grow(w.bp, (bl.nc+nr)*bl.kc)
			w.ap = grow(w.ap, (bl.mc+mr)*bl.kc)
			t0 := threadCPU()
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
			packT := (threadCPU() - t0).Seconds()
			t1 := threadCPU()
			for range reps {
				gemmRange(kern, nil, false, false, 0, n, 0, n, n, 1, a, n, b, n, 0, c, n)
			}
			packPct = append(packPct, 100*packT/(threadCPU()-t1).Seconds())
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
	variants := gemmVariants(kern)
	names := []string{"current"}
	for name := range variants {
		names = append(names, name)
	}
	slices.Sort(names[1:])
	variants["current"] = kern
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
			bestPeak = max(bestPeak, cpuRate(peakFlops*65536, 1, func() { peak(65536) }))
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
				var g float64
				if strings.HasPrefix(name, "old") {
					g = cpuRate(2*float64(mc*nc*kc), 1, func() {
						for jr := 0; jr < nc; jr += v.nr {
							for ir := 0; ir < mc; ir += v.mr {
								off := ir*ldcv + jr
								if hot {
									off = 0
								}
								v.kernel(kc, ap[ir*kc:], bp[jr*kc:], cv[off:], ldcv, 1, 1)
							}
						}
					})
				} else {
					w := &gemmWork[T]{ap: ap, bp: bp}
					g = cpuRate(2*float64(mc*nc*kc), 1, func() {
						if !hot {
							gemmBlock(v, w, kc, mc, nc, 1, 1, cv, ldcv)
							return
						}
						for ir := 0; ir < mc; ir += v.mr {
							for jr := 0; jr < nc; jr += v.nr {
								v.kernel(kc, ap[ir*kc:], bp[jr*kc:], cv, ldcv, 1, 1)
							}
						}
					})
				}
				best[name] = max(best[name], g)
				// Packing of that block and of its share of the slab of B
				// (mc/n of it: the slab is packed once per n rows of C),
				// as seconds per flop of the block.
				t0 := threadCPU()
				packA(v, ap, a, n, false, ic, mc, 0, kc)
				packB(v, bp[:nc*kc*mc/n/v.nr*v.nr], b, n, false, 0, kc, 0, nc*mc/n/v.nr*v.nr)
				s := (threadCPU() - t0).Seconds() / (2 * float64(mc*nc*kc))
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

// gemmRangeOld is gemmRange before the loop nest was rearranged (B slab
// outer, A blocks in L2, tiles down the columns), kept for comparison.
func gemmRangeOld[T float](kern *gemmKernels[T], transA, transB bool, r0, r1, c0, c1, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	mr, nr, bl := kern.mr, kern.nr, kern.bl
	fam := familyOf[T]()
	w := fam.works.Get()
	defer fam.works.Put(w)
	w.tile = grow(w.tile, mr*nr)
	ncStep, kcStep, mcStep := evenBlock(c1-c0, bl.nc, nr), evenBlock(k, bl.kc, 8), evenBlock(r1-r0, bl.mc, mr)
	for jc := c0; jc < c1; jc += ncStep {
		nc := min(ncStep, c1-jc)
		ncp := (nc + nr - 1) / nr * nr
		for pc := 0; pc < k; pc += kcStep {
			kc := min(kcStep, k-pc)
			w.bp = grow(w.bp, ncp*kc)
			packB(kern, w.bp, b, ldb, transB, pc, kc, jc, nc)
			bEff := beta
			if pc > 0 {
				bEff = 1
			}
			for ic := r0; ic < r1; ic += mcStep {
				mc := min(mcStep, r1-ic)
				mcp := (mc + mr - 1) / mr * mr
				w.ap = grow(w.ap, mcp*kc)
				packA(kern, w.ap, a, lda, transA, ic, mc, pc, kc)
				for jr := 0; jr < nc; jr += nr {
					bPanel := w.bp[jr*kc : (jr+nr)*kc]
					nrr := min(nr, nc-jr)
					for ir := 0; ir < mc; ir += mr {
						aPanel := w.ap[ir*kc : (ir+mr)*kc]
						mrr := min(mr, mc-ir)
						off := (ic+ir)*ldc + jc + jr
						if mrr == mr && nrr == nr {
							kern.kernel(kc, aPanel, bPanel, c[off:], ldc, alpha, bEff)
							continue
						}
						// Edge tile: compute the padded tile aside, add the valid part.
						kern.kernel(kc, aPanel, bPanel, w.tile, nr, alpha, 0)
						// dst = src + bEff·dst, fused as in the kernel's store.
						for i := 0; i < mrr; i++ {
							dst := c[off+i*ldc : off+i*ldc+nrr]
							src := w.tile[i*nr : i*nr+nrr]
							switch bEff {
							case 0:
							case 1:
								fam.add(src, src, dst)
							default:
								fam.axpy(src, bEff, dst)
							}
							copy(dst, src)
						}
					}
				}
			}
		}
	}
}

func TestGemmSteps(t *testing.T) {
	if os.Getenv("LANES_GEMM_CPUTIME") == "" {
		t.Skip()
	}
	runtime.LockOSThread()
	r := rand.New(rand.NewPCG(1, 2))
	kern := sgemmFamily.kernels.get()
	mr, nr, kc := 14, 32, 384
	nc := 320
	n := 1024
	ap, bp := randOf[float32](r, 70*mr*kc), randOf[float32](r, nc*kc)
	c := make([]float32, n*n)
	tile := make([]float32, mr*nr)
	best := func(flops float64, f func()) float64 {
		var b float64
		for range 60 {
			b = max(b, cpuRate(flops, 1, f))
		}
		return b
	}
	for _, kf := range []func(int, []float32, []float32, []float32, int, float32, float32){kern.kernel} {
		p := best(2*24*16*65536, func() { fmaPeakAVX512(65536) })
		tiles := nc / nr
		fl := 2 * float64(mr*nr*kc*tiles*8)
		k0 := best(fl, func() {
			for range tiles * 8 {
				kf(kc, ap, bp, tile, nr, 1, 1)
			}
		})
		k1 := best(fl, func() {
			for range 8 {
				for jr := 0; jr < nc; jr += nr {
					kf(kc, ap, bp[jr*kc:], tile, nr, 1, 1)
				}
			}
		})
		k1a := best(fl, func() {
			for ir := range 8 {
				for jr := 0; jr < nc; jr += nr {
					kf(kc, ap[ir*mr*kc:], bp[jr*kc:], tile, nr, 1, 1)
				}
			}
		})
		k2 := best(fl, func() {
			for ir := range 8 {
				for jr := 0; jr < nc; jr += nr {
					kf(kc, ap[ir*mr*kc:], bp[jr*kc:], c[ir*mr*n+jr:], n, 1, 1)
				}
			}
		})
		k3 := best(fl, func() {
			for ir := range 8 {
				for jr := 0; jr < nc; jr += nr {
					kf(kc, ap[ir*mr*kc:], bp[jr*kc:], c[ir*mr*(n+16)+jr:], n+16, 1, 1)
				}
			}
		})
		t.Logf("peak %.1f: same panels, hot C %.1f%%; B panels cycling %.1f%%; A too %.1f%%; C rows ldc=n %.1f%%; ldc=n+16 %.1f%%", p, 100*k0/p, 100*k1/p, 100*k1a/p, 100*k2/p, 100*k3/p)
	}
}

// TestGemmPaired alternates whole products of two variants (LANES_GEMM_A,
// LANES_GEMM_B: "old", "current" or a blocking spec as in gemmVariants)
// call by call and prints the median of the per-pair time ratios B/A and
// each one's best rate as a share of the best peak run.
func TestGemmPaired(t *testing.T) {
	if os.Getenv("LANES_GEMM_CPUTIME") == "" {
		t.Skip()
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
		k := kern
		if spec != "current" {
			k = gemmVariants(kern)[spec]
			if k == nil {
				k = kern
			}
		}
		if strings.HasPrefix(spec, "old") {
			return func(n int, a, b, c []T) { gemmRangeOld(k, false, false, 0, n, 0, n, n, 1, a, n, b, n, 0, c, n) }
		}
		return func(n int, a, b, c []T) { gemmRange(k, nil, false, false, 0, n, 0, n, n, 1, a, n, b, n, 0, c, n) }
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
			bestP = max(bestP, cpuRate(peakFlops*65536, 1, func() { peak(65536) }))
			ra := cpuRate(flops, 1, func() { fa(n, a, b, c) })
			rb := cpuRate(flops, 1, func() { fb(n, a, b, c) })
			if i%2 == 1 {
				rb = cpuRate(flops, 1, func() { fb(n, a, b, c) })
				ra = cpuRate(flops, 1, func() { fa(n, a, b, c) })
			}
			bestA, bestB = max(bestA, ra), max(bestB, rb)
			ratios = append(ratios, ra/rb)
		}
		slices.Sort(ratios)
		t.Logf("n=%d: %s/%s time ratio median %.3f (quartiles %.3f %.3f, %d pairs); best %s %.1f%%, %s %.1f%% of peak %.1f", n, vb, va,
			ratios[len(ratios)/2], ratios[len(ratios)/4], ratios[3*len(ratios)/4], len(ratios), va, 100*bestA/bestP, vb, 100*bestB/bestP, bestP)
	}
}
