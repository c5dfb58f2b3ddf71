package tensor_test

import (
	"fmt"
	"math"

	"github.com/lanesgo/lanes/tensor"
)

func ExampleSort() {
	nan := float32(math.NaN())
	x := tensor.FromSlice([]float32{3, nan, 1, 3, -2}, 5)
	v, i := tensor.Sort(x, 0, true) // NaN first descending; the two 3s keep their order
	fmt.Println(v, i)
	v, i = tensor.TopK(x, 2, 0, false, true)
	fmt.Println(v, i)
	m, mi := tensor.Median(tensor.FromSlice([]float32{4, 1, 3, 2}, 4), 0, false) // the lower middle
	fmt.Println(m, mi)
	// Output:
	// [nan 3 3 1 -2] [1 0 3 2 4]
	// [-2 1] [4 2]
	// 2 3
}

func ExampleRoll() {
	x := tensor.Arange(0, 6, 1).Reshape(2, 3)
	fmt.Println(tensor.Roll(x, []int{1}))           // flattened
	fmt.Println(tensor.Roll(x, []int{1, -1}, 0, 1)) // per axis
	fmt.Println(tensor.Tile(x, 2))                  // reps padded to [1, 2]
	fmt.Println(tensor.CumProd(tensor.Flip(x, 1), 1))
	// Output:
	// [[5 0 1]
	//  [2 3 4]]
	// [[4 5 3]
	//  [1 2 0]]
	// [[0 1 2 0 1 2]
	//  [3 4 5 3 4 5]]
	// [[2 2 0]
	//  [5 20 60]]
}
