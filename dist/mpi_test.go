//go:build mpi && cgo

package dist

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Run under mpirun (see .ci/test), e.g.
//
//	go test -c -tags mpi -o /tmp/dist.test ./dist
//	mpirun --allow-run-as-root --oversubscribe --mca btl tcp,self -np 4 /tmp/dist.test -test.run MPI
//
// Started alone the test binary is a group of one rank.

func TestMain(m *testing.M) {
	code := m.Run()
	if mpiOpened != nil {
		if err := mpiOpened.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

func TestMPICollectives(t *testing.T) {
	c, err := MPI()
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := MPI(); c2 != c || err != nil {
		t.Fatalf("a second MPI() = %v, %v; want the same Comm", c2, err)
	}
	t.Logf("rank %d of %d, transport %s", c.Rank(), c.Size(), Transport(c))
	// CI runs mpirun on one host with LANES_DIST_SHM=1 (the mapping must
	// carry the all-reduces) and =0 (it must not); elsewhere (several
	// hosts, a full /dev/shm) falling back to MPI is by design.
	want := map[string]string{"1": "mpi+shm", "0": "mpi"}[os.Getenv(ShmEnv)]
	if w := os.Getenv("LANES_DIST_TEST_TRANSPORT"); w != "" {
		want = w // ranks given different ShmEnv values (CI)
	}
	if c.Size() == 1 {
		want = "mpi"
	}
	if got := Transport(c); want != "" && got != want {
		t.Errorf("rank %d: Transport = %q, want %q (%s=%q; %v)", c.Rank(), got, want, ShmEnv, os.Getenv(ShmEnv), mpiWorld.shmErr)
	}
	checkCollectives(t, c)
}

// TestMPIMatchesLocal checks that MPI's all-reduce gives the bits of the
// in-process group's with as many ranks, for float32 and float64, Sum and
// Mean, on a length that goes through the shared mapping in one piece and
// one that takes several (its slots are 4 MiB with 2 ranks).
func TestMPIMatchesLocal(t *testing.T) {
	c, err := MPI()
	if err != nil {
		t.Fatal(err)
	}
	p := c.Size()
	for _, n := range []int{100003, 1<<20 + 3} {
		for _, op := range []Op{Sum, Mean} {
			local32, local64 := make([][]float32, p), make([][]float64, p)
			if err := RunLocal(p, func(l Comm) error {
				local32[l.Rank()], local64[l.Rank()] = rankData[float32](l.Rank(), n), rankData[float64](l.Rank(), n)
				if err := l.AllReduce32(local32[l.Rank()], op); err != nil {
					return err
				}
				return l.AllReduce64(local64[l.Rank()], op)
			}); err != nil {
				t.Fatal(err)
			}
			b32, b64 := rankData[float32](c.Rank(), n), rankData[float64](c.Rank(), n)
			if err := c.AllReduce32(b32, op); err != nil {
				t.Fatal(err)
			}
			if err := c.AllReduce64(b64, op); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				if b32[i] != local32[0][i] || b64[i] != local64[0][i] {
					t.Fatalf("rank %d of %d, n=%d, %v: [%d]: MPI %v, %v; in process %v, %v", c.Rank(), p, n, op, i, b32[i], b64[i], local32[0][i], local64[0][i])
				}
			}
		}
	}
}

// TestMPIMismatch checks that the programmer errors every Comm catches
// (misuses) panic on every rank alike under MPI, through the shared
// mapping or not, with the in-process group's messages.
func TestMPIMismatch(t *testing.T) {
	c, err := MPI()
	if err != nil {
		t.Fatal(err)
	}
	if c.Size() != 2 {
		t.Skip("the cases are written for 2 ranks (mpirun -np 2)")
	}
	for _, tc := range misuses {
		msg := panicOf(func() { tc.f(c) })
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: rank %d: panic %q, want it to contain %q", tc.name, c.Rank(), msg, tc.want)
		}
	}
}
