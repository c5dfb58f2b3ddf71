//go:build !(386 || arm || mips || mipsle)

package shape

import (
	"math"
	"testing"
)

// TestSize needs a 64-bit int.
func TestSize(t *testing.T) {
	const big = math.MaxInt
	for _, c := range []struct {
		dims  []int
		limit int
		n     int
		ok    bool
	}{
		{nil, big, 1, true},
		{[]int{2, 3, 4}, big, 24, true},
		{[]int{2, 3, 4}, 24, 24, true},
		{[]int{2, 3, 4}, 23, 0, false},
		{[]int{0}, big, 0, true},
		{[]int{0}, 0, 0, true},
		{[]int{3, 0, 5}, 15, 0, true},
		{[]int{3, 0, 5}, 14, 0, false}, // the nonzero dimensions still count
		{[]int{-1}, big, 0, false},
		{[]int{0, -1}, big, 0, false},
		{[]int{1 << 62}, big, 1 << 62, true},
		{[]int{1 << 62, 2}, big, 0, false},
		{[]int{1 << 32, 1 << 32}, big, 0, false},       // 2^64 wraps to 0
		{[]int{3, 6148914691236517206}, big, 0, false}, // wraps to 2
		{[]int{0, 1 << 62, 1 << 62}, big, 0, false},
		{[]int{big, big}, big, 0, false},
		{[]int{big, 1}, big, big, true},
	} {
		n, ok := Size(c.dims, c.limit)
		if n != c.n || ok != c.ok {
			t.Errorf("Size(%v, %d) = %d, %v; want %d, %v", c.dims, c.limit, n, ok, c.n, c.ok)
		}
	}
}
