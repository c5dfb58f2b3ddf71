package nn_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/lanesgo/lanes/nn"
	"github.com/lanesgo/lanes/tensor"
)

// points returns n points of the square [-1, 1]² away from the diagonal
// x0 + x1 = 0, labelled 1 above it and 0 below: a small problem a
// two-layer network learns in a few hundred steps.
func points(n int, r *rand.Rand) (x, y *tensor.Tensor) {
	xs := make([]float32, 0, 2*n)
	ys := make([]float32, 0, n)
	for len(ys) < n {
		a, b := 2*r.Float32()-1, 2*r.Float32()-1
		switch {
		case a+b > 0.2:
			ys = append(ys, 1)
		case a+b < -0.2:
			ys = append(ys, 0)
		default:
			continue
		}
		xs = append(xs, a, b)
	}
	return tensor.FromSlice(xs, n, 2), tensor.FromSlice(ys, n)
}

// evaluate returns the mean cross-entropy of m on (x, y) and the fraction
// of rows it classifies right, without recording gradients.
func evaluate(m nn.Module, x, y *tensor.Tensor) (loss, accuracy float32) {
	tp := nn.NewTape()
	tp.SetGrad(false)
	logits := m.Forward(tp, tp.Const(x))
	loss = tp.CrossEntropy(logits, y).Value().Item()
	right := tensor.Sum(tensor.Equal(tensor.ArgMax(logits.Value(), 1, false), y), false).Item()
	return loss, right / float32(y.Shape()[0])
}

// A complete training loop: a model, an optimizer, shuffled mini-batches,
// and per step a forward pass recorded on a tape, the loss, the backward
// pass and the update. Training results depend in their last bits on the
// SIMD level, so the example prints what every level agrees on.
func Example() {
	r := rand.New(rand.NewPCG(1, 2)) // every initializer and shuffle takes an explicit source
	x, y := points(256, r)
	model := nn.NewSequential(
		nn.NewLinear(2, 16, r), nn.NewReLU(), // Sequential fuses Linear+activation
		nn.NewLinear(16, 2, r))
	opt := nn.NewAdam(nn.Params(model), 0.01)
	batches := nn.NewBatches(x, y, 32, r) // a new order every epoch; Next allocates nothing

	before, _ := evaluate(model, x, y)
	tp := nn.NewTape()
	for epoch := 0; epoch < 20; epoch++ {
		for xb, yb, ok := batches.Next(); ok; xb, yb, ok = batches.Next() {
			tp.Reset() // reuse the last step's storage
			loss := tp.CrossEntropy(model.Forward(tp, tp.Const(xb)), yb)
			opt.ZeroGrad()
			tp.Backward(loss)
			opt.Step()
		}
		batches.Reset()
	}
	after, accuracy := evaluate(model, x, y)
	fmt.Printf("loss %.1f before training, %.2f after\n", before, after)
	fmt.Printf("accuracy %.0f%%\n", 100*accuracy)
	// Output:
	// loss 0.7 before training, 0.01 after
	// accuracy 100%
}

// Backward adds d(loss)/d(parameter) into each parameter's gradient.
// For loss = Σ w·x the gradient of w is x.
func ExampleTape_Backward() {
	w := nn.NewParam(tensor.FromSlice([]float32{1, 2, 3}, 3))
	tp := nn.NewTape()
	x := tp.Const(tensor.FromSlice([]float32{4, 5, 6}, 3))
	loss := tp.Sum(tp.Mul(w, x))
	tp.Backward(loss)
	fmt.Println(loss.Value().Item(), w.Grad())

	// Mean squared error against a target: the gradient is 2(w - t)/n.
	tp.Reset()
	w.ZeroGrad()
	mse := tp.MSE(w, tensor.FromSlice([]float32{1, 0, 0}, 3))
	tp.Backward(mse)
	fmt.Println(mse.Value().Item(), w.Grad())
	// Output:
	// 32 [4 5 6]
	// 4.3333335 [0 1.3333334 2]
}

// Save writes a model's parameters in the safetensors format under
// PyTorch's state_dict names; Load reads them into a model of the same
// layers. The file is replaced atomically.
func ExampleSave() {
	dir, err := os.MkdirTemp("", "lanes-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	newModel := func(seed uint64) *nn.Sequential {
		r := rand.New(rand.NewPCG(seed, 0))
		return nn.NewSequential(nn.NewLinear(2, 3, r), nn.NewTanh(), nn.NewLinear(3, 1, r))
	}
	trained := newModel(1)
	if err := nn.Save(path, trained, map[string]string{"epochs": "0"}); err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range nn.StateDict(trained) {
		fmt.Println(t.Name, t.T.Shape())
	}

	loaded := newModel(2) // other initial values
	meta, err := nn.Load(path, loaded)
	if err != nil {
		fmt.Println(err)
		return
	}
	in := tensor.FromSlice([]float32{0.5, -1}, 1, 2)
	tp := nn.NewTape()
	a := trained.Forward(tp, tp.Const(in)).Value().Item()
	b := loaded.Forward(tp, tp.Const(in)).Value().Item()
	fmt.Println(meta["epochs"], a == b)
	// Output:
	// 0.weight [3 2]
	// 0.bias [3]
	// 2.weight [1 3]
	// 2.bias [1]
	// 0 true
}

// SaveCheckpoint keeps what resuming needs besides the model: the
// optimizer's state and the iterator's place in its epochs. Training
// resumed from it gives bit for bit the parameters of training that never
// stopped.
func ExampleSaveCheckpoint() {
	dir, err := os.MkdirTemp("", "lanes-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.ckpt")

	// setup makes the model, optimizer and iterator, the same way each time.
	setup := func() (*nn.Sequential, *nn.Adam, *nn.Batches) {
		r := rand.New(rand.NewPCG(3, 4))
		x, y := points(64, r)
		m := nn.NewSequential(nn.NewLinear(2, 8, r), nn.NewReLU(), nn.NewLinear(8, 2, r))
		return m, nn.NewAdam(nn.Params(m), 0.01), nn.NewBatches(x, y, 16, r)
	}
	steps := func(m nn.Module, opt nn.Optimizer, b *nn.Batches, n int) {
		tp := nn.NewTape()
		for range n {
			xb, yb, ok := b.Next()
			if !ok {
				b.Reset()
				xb, yb, _ = b.Next()
			}
			tp.Reset()
			loss := tp.CrossEntropy(m.Forward(tp, tp.Const(xb)), yb)
			opt.ZeroGrad()
			tp.Backward(loss)
			opt.Step()
		}
	}

	straight, opt, b := setup() // 10 steps without a stop
	steps(straight, opt, b, 10)

	m, opt, b := setup() // 6 steps, a checkpoint, 4 more in a fresh process
	steps(m, opt, b, 6)
	if err := nn.SaveCheckpoint(path, m, opt, b, nil); err != nil {
		fmt.Println(err)
		return
	}
	resumed, opt, b := setup()
	if _, err := nn.LoadCheckpoint(path, resumed, opt, b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("epoch", b.Epoch())
	steps(resumed, opt, b, 4)

	same := true
	want := nn.StateDict(straight)
	for i, t := range nn.StateDict(resumed) {
		got, w := t.T.Data(), want[i].T.Data()
		for j := range got {
			same = same && got[j] == w[j]
		}
	}
	fmt.Println("same parameters:", same)
	// Output:
	// epoch 1
	// same parameters: true
}
