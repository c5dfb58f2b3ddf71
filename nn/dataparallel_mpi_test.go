//go:build mpi && cgo

package nn

import (
	"fmt"
	"os"
	"testing"

	"github.com/lanesgo/lanes/dist"
)

// Run under mpirun (see .ci/test):
//
//	go test -c -tags mpi -o /tmp/nn.test ./nn
//	mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -np 2 /tmp/nn.test -test.run MPI

var mpiComm dist.Comm // opened by a test; TestMain finalizes MPI

func TestMain(m *testing.M) {
	code := m.Run()
	if mpiComm != nil {
		if err := mpiComm.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestMPIDataParallel trains with DataParallel on MPI's ranks: the
// parameters are bit for bit those of an in-process group of as many
// ranks (which each rank runs too), and within 1e-5 relative of one
// process's with SGD.
func TestMPIDataParallel(t *testing.T) {
	c, err := dist.MPI()
	if err != nil {
		t.Fatal(err)
	}
	mpiComm = c
	for _, tc := range []dpCase{
		{model: "mlp", rows: 512, batch: 32, steps: 30},
		{model: "mlp", rows: 512, batch: 32, steps: 30, sgd: true},
		{model: "cnn", rows: 96, batch: 8, steps: 6, sgd: true},
	} {
		got, err := tc.train(c, "", 0, false)
		if err != nil {
			t.Fatal(err)
		}
		local := tc.trainLocal(t, c.Size(), "", 0, false)
		if !sameBits(got, local[0]) {
			t.Errorf("%+v: rank %d of %d: the parameters differ from the in-process group's (%.3g relative)", tc, c.Rank(), c.Size(), maxRelDiff(got, local[0]))
		}
		if tc.sgd {
			ref, err := tc.train(nil, "", 0, false)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(got, ref); d > 1e-5 {
				t.Errorf("%+v: rank %d of %d: parameters %.3g relative from one process's, want ≤ 1e-5", tc, c.Rank(), c.Size(), d)
			}
		}
	}
}
