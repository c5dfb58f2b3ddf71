package peers

import (
	"fmt"
	"testing"

	"github.com/lanesgo/lanes/dispatch"
)

// BenchmarkPeers runs the whole suite as Benchmark<Op>/<impl>/<n>, the naming of
// the recorded anchors (e.g. BenchmarkAdd/vek/1000), so benchstat compares
// lanes with vek, gonum and naive Go from one run:
//
//	go test -run '^$' -bench . ./peers/ | tee new.txt
func BenchmarkPeers(b *testing.B) { benchPeers(b, Ops()) }

// BenchmarkPeersF64 is the float64 suite (OpsF64: lanes' F64 functions, vek's
// float64 ones, gonum's blas64), named the same way (BenchmarkPeersF64/AddF64/vek/1000).
func BenchmarkPeersF64(b *testing.B) { benchPeers(b, OpsF64()) }

func benchPeers(b *testing.B, ops []Op) {
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	sizes := []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}
	if testing.Short() {
		sizes = sizes[:3]
	}
	// Implementations innermost: the cells compared with each other run
	// one after the other, so a shared machine's load drifts less between
	// them (with -count N every round repeats the sequence).
	for _, op := range ops {
		for _, n := range sizes {
			for _, im := range op.Impls {
				b.Run(fmt.Sprintf("%s/%s/%d", op.Name, im.Name, n), func(b *testing.B) {
					in := Prepare(op, im, n)
					b.SetBytes(op.Bytes(n))
					b.ResetTimer()
					for b.Loop() {
						im.Run(in)
					}
				})
			}
		}
	}
}
