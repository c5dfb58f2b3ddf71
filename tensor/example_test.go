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

// Elementwise operations broadcast as NumPy does: a [2, 1] column and a [3]
// row make a [2, 3] result; each has an Into form that allocates nothing.
func ExampleAdd() {
	col := tensor.FromSlice([]float32{100, 200}, 2, 1)
	row := tensor.FromSlice([]float32{1, 2, 3}, 3)
	sum := tensor.Add(col, row)
	fmt.Println(sum.Shape())
	fmt.Println(sum)

	dst := tensor.New(2, 3)
	tensor.MulInto(dst, sum, tensor.Scalar(2)) // a scalar broadcasts too
	fmt.Println(dst)
	// Output:
	// [2 3]
	// [[101 102 103]
	//  [201 202 203]]
	// [[202 204 206]
	//  [402 404 406]]
}

// Reshape, Transpose, Slice and Index make views: they share the elements of
// the tensor they come from, so a write through one shows in the other.
func ExampleTensor_Slice() {
	x := tensor.Arange(0, 12, 1).Reshape(3, 4)
	cols := x.Slice(1, 1, 4, 2) // columns 1 and 3
	fmt.Println(cols)
	fmt.Println(cols.IsContiguous(), x.T().Shape(), x.Index(0, 2))

	cols.Set(-1, 0, 0) // writes x[0, 1]
	fmt.Println(x.At(0, 1))
	fmt.Println(cols.Contiguous().IsContiguous()) // a copy when needed
	// Output:
	// [[1 3]
	//  [5 7]
	//  [9 11]]
	// false [4 3] [8 9 10 11]
	// -1
	// true
}

// MatMul follows NumPy's matmul: a 1-D operand is a vector, and leading
// dimensions are batches that broadcast. A transposed view goes to Sgemm
// without a copy.
func ExampleMatMul() {
	a := tensor.Arange(1, 7, 1).Reshape(2, 3)
	fmt.Println(tensor.MatMul(a, a.T()))                         // [2,3] @ [3,2]
	fmt.Println(tensor.MatMul(a, tensor.Ones(3)))                // matrix @ vector: row sums
	batch := tensor.Stack(0, a, tensor.Scale(a, -1))             // [2, 2, 3]
	fmt.Println(tensor.MatMul(batch, tensor.Ones(3, 1)).Shape()) // [2,2,3] @ [3,1]
	// Output:
	// [[14 32]
	//  [32 77]]
	// [6 15]
	// [2 2 1]
}

// Reductions take any set of axes; Softmax normalizes along one.
func ExampleSoftmax() {
	x := tensor.FromSlice([]float32{1, 2, 3, 1, 1, 1}, 2, 3)
	fmt.Println(tensor.Sum(x, false, 1), tensor.Max(x, true, 0))
	fmt.Printf("%.4f\n", tensor.Softmax(x, -1).Data())
	// Output:
	// [6 3] [[1 2 3]]
	// [0.0900 0.2447 0.6652 0.3333 0.3333 0.3333]
}

// IndexSelect looks rows up (an embedding); IndexAdd, its adjoint, adds
// the rows of a gradient back where they came from, repeated indices
// accumulating. Gather and ScatterAdd do the same element by element.
func ExampleIndexAdd() {
	table := tensor.Arange(0, 6, 1).Reshape(3, 2)
	ids := tensor.FromSlice([]float32{2, 0, 2}, 3)
	fmt.Println(tensor.IndexSelect(table, 0, ids))
	grad := tensor.IndexAdd(tensor.Zeros(3, 2), 0, ids, tensor.Ones(3, 2))
	fmt.Println(grad)

	logits := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	labels := tensor.FromSlice([]float32{2, 0}, 2, 1)
	picked := tensor.Gather(logits, 1, labels) // one logit per row
	fmt.Println(picked, tensor.ScatterAdd(tensor.Zeros(2, 3), 1, labels, picked))
	// Output:
	// [[4 5]
	//  [0 1]
	//  [4 5]]
	// [[1 1]
	//  [0 0]
	//  [2 2]]
	// [[3]
	//  [4]] [[0 0 3]
	//  [4 0 0]]
}
