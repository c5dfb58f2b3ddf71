package tensor_test

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

func Example() {
	x := tensor.Arange(0, 6, 1).Reshape(2, 3)
	y := tensor.Add(x, tensor.FromSlice([]float32{10, 20, 30}, 3))
	fmt.Println(y)
	fmt.Println(tensor.Sum(y, false, 0))
	fmt.Println(tensor.MatMul(x, x.T()))
	// Output:
	// [[10 21 32]
	//  [13 24 35]]
	// [23 45 67]
	// [[5 14]
	//  [14 50]]
}
