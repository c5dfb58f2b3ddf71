package dispatch_test

import (
	"fmt"

	"github.com/lanesgo/lanes/dispatch"
)

// Report says which CPU lanes found, the features it uses, the levels, the
// active level and why, the worker pool, the placement rules and the
// devices. Its content depends on the machine, so this example shows no
// output; on the AVX-512 development machine it begins
//
//	cpu:       Oxide Virtual Turin-like Processor (linux/amd64, 2 logical cores, GOMAXPROCS=2)
//	caches:    L1d 48 KiB, L2 1 MiB, L3 ?
//	build:     amd64 assembly kernels
//	features:  AVX AVX2 FMA3 AVX512F AVX512BW AVX512DQ AVX512VL BMI2
//	levels:    generic avx2 avx512 (detected avx512)
//	active:    avx512 (best level detected)
func ExampleReport() {
	fmt.Print(dispatch.Report())
}

// SetLevel changes the level every kernel runs at from its next call; it
// refuses a level the CPU lacks. Generic, portable Go, is always there.
func ExampleSetLevel() {
	prev, err := dispatch.SetLevel(dispatch.Generic)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("active:", dispatch.Active())
	dispatch.SetLevel(prev) // back to what it was (LANES_SIMD's level, or the best detected)
	fmt.Println("restored:", dispatch.Active() == prev)
	// Output:
	// active: generic
	// restored: true
}

// Levels lists what this CPU supports, lowest first; ParseLevel reads the
// names LANES_SIMD takes.
func ExampleLevels() {
	levels := dispatch.Levels()
	fmt.Println("first:", levels[0], "supported:", dispatch.Supports(levels[0]))
	l, err := dispatch.ParseLevel("AVX2")
	fmt.Println(l, err)
	_, err = dispatch.ParseLevel("sse9")
	fmt.Println(err != nil)
	// Output:
	// first: generic supported: true
	// avx2 <nil>
	// true
}

// WorkOf counts an operation's FLOPs and bytes as package tensor does, and a
// Rule decides from them whether the work is worth an accelerator.
func ExampleWorkOf() {
	w := dispatch.WorkOf(dispatch.OpMatMul, 1024, 1024, 1024) // m, n, k
	fmt.Printf("%.0f FLOPs, %.0f bytes\n", w.FLOPs, w.Bytes)

	t := dispatch.DefaultThresholds()
	fmt.Println(t.Rule(dispatch.OpMatMul, false).Admits(w)) // host operands: 1e10 FLOPs + 64 a byte
	fmt.Println(t.Rule(dispatch.OpMatMul, true).Admits(w))  // operands already on the device: 1e9 FLOPs
	// Output:
	// 2147483648 FLOPs, 12582912 bytes
	// false
	// true
}

// A thresholds file, as `go -C bench run ./cmd/calibrate` wrote it on an
// H100 machine (bench/results/gpu-h100/thresholds.json), asked where n×n×n
// products would run with their operands in host memory and on the device.
func ExampleParseThresholds() {
	t, err := dispatch.ParseThresholds([]byte(`{
	  "version": 1,
	  "calibrated": "2026-11-23T08:50:43Z",
	  "cpu": "Intel(R) Xeon(R) Processor, GOMAXPROCS 16, avx512",
	  "device": "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)",
	  "margin": 0.1,
	  "matmul": {"host":   {"gpu": true, "min_flops": 0, "flops_per_byte": 82.1},
	             "device": {"gpu": true, "min_flops": 988206.9, "flops_per_byte": 0}},
	  "conv2d": {"host":   {"gpu": true, "min_flops": 0, "flops_per_byte": 35.1},
	             "device": {"gpu": true, "min_flops": 3973939.2, "flops_per_byte": 0}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range []int{64, 128, 256, 1024} {
		host := dispatch.WorkOf(dispatch.OpMatMul, n, n, n)
		dev := host
		dev.Resident = true
		fmt.Println(n, t.Place(host), t.Place(dev))
	}
	// Output:
	// 64 cpu cpu
	// 128 cpu gpu
	// 256 cpu gpu
	// 1024 gpu gpu
}
