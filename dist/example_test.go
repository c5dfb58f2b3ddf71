package dist_test

import (
	"fmt"

	"github.com/lanesgo/lanes/dist"
)

// Three ranks in process all-reduce their buffers and gather their ranks.
func ExampleRunLocal() {
	out := make([][]float32, 3)
	err := dist.RunLocal(3, func(c dist.Comm) error {
		buf := []float32{float32(c.Rank()), 1}
		if err := c.AllReduce32(buf, dist.Sum); err != nil {
			return err
		}
		ranks := make([]float32, c.Size())
		if err := c.AllGather32(ranks, []float32{float32(c.Rank())}); err != nil {
			return err
		}
		out[c.Rank()] = append(buf, ranks...)
		return nil
	})
	fmt.Println(out, err)
	// Output: [[3 3 0 1 2] [3 3 0 1 2] [3 3 0 1 2]] <nil>
}
