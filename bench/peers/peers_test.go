package peers

import (
	"math"
	"testing"
	"time"

	"github.com/lanesgo/lanes/dispatch"
)

// TestImplsAgree checks that every implementation of an op computes the same
// thing as lanes' generic level, so the comparison compares like with like.
func TestImplsAgree(t *testing.T) {
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	for _, op := range append(Ops(), OpsF64()...) {
		for _, n := range []int{1, 17, 1000, 4099} {
			var ref []float64
			for _, im := range op.Impls {
				if im.Result == nil {
					continue
				}
				in := Prepare(op, im, n)
				im.Run(in)
				got := im.Result(in)
				if ref == nil {
					if !im.IsLanes || im.Level != dispatch.Generic {
						t.Fatalf("%s: first impl is %s, want lanes-generic", op.Name, im.Name)
					}
					ref = got
					continue
				}
				for i := range got {
					tol := 1e-5 * math.Max(1, math.Abs(ref[i]))
					if op.Summed {
						eps := 0x1p-24
						if op.F64 {
							eps = 0x1p-53
						}
						tol = float64(n) * eps * 1.5 * float64(n) // terms are below 1.5 each
					}
					if d := math.Abs(got[i] - ref[i]); !(d <= tol) {
						t.Fatalf("%s n=%d: %s[%d] = %v, lanes-generic %v", op.Name, n, im.Name, i, got[i], ref[i])
					}
				}
			}
			if ref == nil && op.Elems == nil {
				t.Fatalf("%s: no implementation reports a result", op.Name)
			}
		}
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	ns := Measure(func() { calls++ }, 0, 3)
	if calls < 4 || ns < 0 || math.IsNaN(ns) {
		t.Fatalf("Measure ran f %d times and returned %v", calls, ns)
	}
}

// TestGemmImplsAgree checks that every GEMM implementation computes the same
// product (within float32 rounding of k = 67 terms).
func TestGemmImplsAgree(t *testing.T) {
	const n = 67
	in := NewGemmInputs(n)
	want := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < n; p++ {
				s += float64(in.A[i*n+p]) * float64(in.B[p*n+j])
			}
			want[i*n+j] = s
		}
	}
	for _, im := range GemmImpls() {
		clear(in.C)
		im.Run(in)
		for i, w := range want {
			if d := math.Abs(float64(in.C[i]) - w); d > n*0x1p-24*float64(n) {
				t.Fatalf("%s: C[%d] = %v, want %v", im.Name, i, in.C[i], w)
			}
		}
	}
	dispatch.SetLevel(dispatch.Detected())
}

// TestGCCAnchor checks the C anchor where gcc is on PATH: it builds, every
// loop it has is an op of the suite, its timings and the roofline probes are
// positive.
func TestGCCAnchor(t *testing.T) {
	ops, err := GCC()
	if err == ErrNoGCC {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer GCCCleanup()
	suite := map[string]Op{}
	for _, op := range append(Ops(), OpsF64()...) {
		suite[op.Name] = op
	}
	for name := range ops {
		if _, ok := suite[name]; !ok {
			t.Errorf("the C anchor has %s, which the suite does not", name)
		}
	}
	for _, name := range []string{"Dot", "AddF64", "MaxF64"} {
		if !ops[name] {
			t.Fatalf("the C anchor lacks %s", name)
		}
		if ns, err := GCCTime(name, 1000, time.Millisecond, 3); err != nil || !(ns > 0) {
			t.Fatalf("GCCTime(%s) = %v, %v", name, ns, err)
		}
	}
	if _, err := GCCTime("NoSuchOp", 1000, time.Millisecond, 3); err == nil {
		t.Fatal("GCCTime of an unknown op: no error")
	}
	// The server's rounds interleave with Go's: every round has one.
	g, err := StartGCC("SumF64", 1000, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	remote := func() (float64, error) { served++; return g.Round() }
	goNs, cNs, err := MeasureAllRemote([]func(){func() { _ = naiveSum(make([]float64, 8)) }}, remote, nil, time.Millisecond, 3)
	if err != nil || served != 3 || len(goNs) != 1 || !(cNs > 0) || !(goNs[0] >= 0) {
		t.Fatalf("MeasureAllRemote: %v, %v, %v after %d rounds", goNs, cNs, err, served)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("GCCServer.Close: %v", err)
	}
	if _, err := g.Round(); err == nil {
		t.Fatal("GCCServer.Round after Close: no error")
	}
	if _, err := StartGCC("NoSuchOp", 1000, time.Millisecond); err == nil {
		t.Fatal("StartGCC of an unknown op: no error")
	}
	for _, name := range []string{"Sum", "Add"} {
		bw, err := Roofline(suite[name], 1000, time.Millisecond, 3)
		if err != nil || !(bw > 0) {
			t.Fatalf("Roofline(%s) = %v, %v", name, bw, err)
		}
	}
}

func TestMeasureAll(t *testing.T) {
	calls, befores := make([]int, 3), make([]int, 3)
	var fs []func()
	for i := range calls {
		fs = append(fs, func() { calls[i]++ })
	}
	ns := MeasureAll(fs, func(i int) { befores[i]++ }, 0, 4)
	for i := range calls {
		// One before the calibration and one a round; at least the warm-up,
		// one calibration call and one call a round.
		if befores[i] != 5 || calls[i] < 6 || ns[i] < 0 || math.IsNaN(ns[i]) {
			t.Fatalf("f%d: %d calls, %d befores, %v ns", i, calls[i], befores[i], ns[i])
		}
	}
}
