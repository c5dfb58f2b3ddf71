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
func BenchmarkPeers(b *testing.B) {
	prev := dispatch.Active()
	defer dispatch.SetLevel(prev)
	sizes := []int{1_000, 10_000, 100_000, 1_000_000, 10_000_000}
	if testing.Short() {
		sizes = sizes[:3]
	}
	for _, op := range Ops() {
		for _, im := range op.Impls {
			for _, n := range sizes {
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
