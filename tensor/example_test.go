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

func ExampleConv2D() {
	x := tensor.Arange(0, 16, 1).Reshape(1, 1, 4, 4) // NCHW
	w := tensor.Ones(1, 1, 2, 2)                     // [Cout, C, kh, kw]
	fmt.Println(tensor.Conv2D(x, w, tensor.Full(-10, 1), tensor.ConvParams{ReLU: true}).Reshape(3, 3))
	m, idx := tensor.MaxPool2D(x, tensor.PoolParams{Kernel: [2]int{2, 2}})
	fmt.Println(m.Reshape(2, 2), idx.Reshape(4))
	// Output:
	// [[0 4 8]
	//  [16 20 24]
	//  [32 36 40]]
	// [[5 7]
	//  [13 15]] [5 7 13 15]
}
