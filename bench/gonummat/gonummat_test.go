package gonummat

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/lanesblas"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// small is a fast configuration: every case, at sizes that take lanesblas'
// blocked paths (above its recursion base of 32) in a fraction of a second.
func small(impls ...Impl) Config {
	return Config{Impls: impls, Subject: "lanes", MulSizes: []int{40, 70}, FactorN: 90, SVDN: 50, Rounds: 2, Peak: func() float64 { return 50 }}
}

// TestRunReport runs gonum and lanesblas on every case and checks the
// tables and the chart: every case has a row with a time per
// implementation, and the chart file is a PNG.
func TestRunReport(t *testing.T) {
	res, err := Run(small(Impl{"gonum", gonum.Implementation{}}, Impl{"lanes", lanesblas.Implementation{}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 5 || res.Peak != 50 {
		t.Fatalf("%d cases, peak %v; want 5 and 50", len(res.Cases), res.Peak)
	}
	for _, c := range res.Cases {
		if len(c.Times) != 2 || c.Times[0] <= 0 || c.Times[1] <= 0 {
			t.Errorf("%s n=%d: times %v", c.Name, c.N, c.Times)
		}
	}
	var b bytes.Buffer
	if err := res.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| n | gonum ms | lanes ms | lanes speed-up vs gonum | gonum GFLOP/s | lanes GFLOP/s | gonum % peak | lanes % peak |",
		"\n| 40 |", "\n| 70 |", "\n| Cholesky n=90 |", "\n| LU n=90 |", "\n| SVD n=50 |", "peak measured in this run: 50.0",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// Every table row has as many cells as its header.
	cells := 0
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "| n |") || strings.HasPrefix(line, "| case |"):
			cells = strings.Count(line, "|")
		case strings.HasPrefix(line, "|") && strings.Count(line, "|") != cells:
			t.Errorf("row %q has %d bars, its header %d", line, strings.Count(line, "|"), cells)
		}
	}
	dir := t.TempDir()
	if err := res.SaveMulChart(dir); err != nil {
		t.Fatal(err)
	}
	png, err := os.ReadFile(filepath.Join(dir, "dense-mul.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("dense-mul.png: %v, %d bytes", err, len(png))
	}
}

// wrongGemm is gonum's implementation with a Dgemm off by a factor.
type wrongGemm struct{ gonum.Implementation }

func (w wrongGemm) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	w.Implementation.Dgemm(tA, tB, m, n, k, alpha*(1+1e-9), a, lda, b, ldb, beta, c, ldc)
}

// TestRunChecks: an implementation whose results differ from the
// reference's fails the run instead of being timed.
func TestRunChecks(t *testing.T) {
	_, err := Run(small(Impl{"gonum", gonum.Implementation{}}, Impl{"wrong", wrongGemm{}}))
	if err == nil || !strings.Contains(err.Error(), "Dense.Mul n=40: wrong's value") {
		t.Fatalf("err = %v, want a Dense.Mul mismatch of wrong", err)
	}
}
