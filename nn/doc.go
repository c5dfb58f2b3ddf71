// Package nn trains neural networks on package tensor: reverse-mode
// automatic differentiation on a tape, layers, losses, optimizers,
// safetensors files and an IDX (MNIST) reader.
//
// A training step records the forward pass on a Tape, backpropagates from
// a scalar loss and lets an optimizer update the parameters:
//
//	r := rand.New(rand.NewPCG(1, 2))
//	model := nn.NewSequential(nn.Flatten{},
//		nn.NewLinear(784, 256, r), nn.NewReLU(),
//		nn.NewLinear(256, 10, r))
//	opt := nn.NewAdam(nn.Params(model), 1e-3)
//	tp := nn.NewTape()
//	for x, y, ok := batches.Next(); ok; x, y, ok = batches.Next() {
//		tp.Reset() // reuse last step's storage
//		loss := tp.CrossEntropy(model.Forward(tp, tp.Const(x)), y)
//		opt.ZeroGrad()
//		tp.Backward(loss)
//		opt.Step()
//	}
//
// # Gradients
//
// Parameters (NewParam, and those of the layers) require gradients; Vars
// made by a Tape from them do too, and the tape records how. Backward runs
// the recorded operations in reverse and adds into each parameter's
// gradient (Var.Grad), so that several backward passes accumulate until
// ZeroGrad. With SetGrad(false) a tape records nothing (evaluation).
// Misuse panics with a message starting "nn: ": a second Backward on a
// consumed tape, a loss of more than one element, a Var from another tape
// or from before a Reset (the message names the step it was made in), a
// nil Var, tensor or random source, operands whose shapes do not match.
// Means over no element (Mean and the losses) are NaN, as PyTorch's. Every
// operation's backward is checked against central finite differences in
// the tests (TestGradients; TestEveryOpChecked fails for an operation
// without such a check).
//
// # Operations
//
// The Tape's methods are the differentiable operations: linear algebra
// (MatMul on matrices and on stacks of them with broadcast batch
// dimensions, Linear), elementwise arithmetic with broadcasting (Add, Sub,
// Mul, Div, Pow, Maximum, Minimum, Scale), elementwise functions (the
// activations, Exp, Log, Sqrt, Clamp), Softmax and LogSoftmax along an
// axis, reductions (Sum and Mean of everything; SumAxes, MeanAxes and
// MaxAxes over chosen axes, with keepdims), shape operations (Reshape,
// Flatten, Transpose, Permute, Slice, Split, Concat, Stack), selection
// (Where, MaskedFill), and the layers' own (Conv2D, the poolings, the
// norms, Dropout on any shape, Embedding), ScaledDotProductAttention
// (tensor's fused attention, with causal and key-padding masks) and the
// losses. Axes follow
// package tensor's convention: a negative one counts from the end. The
// shape operations other than Reshape copy into a contiguous result. A
// gradient to an operand that was broadcast is summed back over the
// broadcast dimensions. Where the function has a kink the gradient
// follows PyTorch: Maximum and Minimum split it evenly on a tie, MaxAxes
// splits it evenly among equal maxima, Clamp passes it at its bounds.
//
// # Transformers
//
// MultiHeadAttention (one fused q, k, v projection, heads, an output
// projection, attention dropout, an optional causal mask and optional
// rotary position embeddings) and the pre-LN TransformerBlock build GPT, a
// decoder-only language model with nanoGPT's state names and
// initialization, learned or rotary positions and a head tied to the token
// embedding (one parameter, its gradient from both uses). GPT.Logits
// trains it on the tape; GPT.Next generates with a KVCache, on the host
// without a tape, one pass per new token that allocates nothing, and
// Sample draws the next tokens (temperature, top-k). For training:
// ClipGradNorm (PyTorch's clip_grad_norm_), WarmupCosine (nanoGPT's
// schedule), and NewAdamWGroups with DecayGroups, which leaves biases,
// norms and embeddings out of the weight decay.
//
// # Memory
//
// A Tape owns the values and gradients it makes and hands the same buffers
// out again after Reset, so a training loop repeating the same operations
// on the same shapes makes no new tensor storage after its first step
// (TestSteadyStateAllocs measures the heap over 100 steps). Vars made on a
// tape are therefore valid until its next Reset. The Var headers themselves
// are not reused (a step allocates one block of them, 40 bytes a Var), so
// that an operation given a Var from an earlier step can tell and panic.
//
// # Devices
//
// To(model, dev) moves a model's parameters and buffers to a device (a
// GPU the CUDA plugin opened) and back; the Vars keep their identity, so
// an optimizer made over Params(model) keeps updating them once its own
// state has moved too. The tape's operations then run where their
// operands are, through package tensor's functions (which route to the
// device's kernels), and the tape allocates values and gradients there,
// reusing its device buffers across steps as it reuses host ones. Nothing
// is copied behind the caller's back: operands on two devices (a host
// batch beside a model on a device) panic naming the operation, and
// Batches.To hands out batches already on the device, one upload a step.
// Dropout's masks come from a counter-based generator (Philox, see
// tensor.Dropout) seeded from the layer's source, so they are the same on
// every device. Save, Load and the checkpoints copy a device model through
// the host.
//
// A device out of memory makes the step panic with a
// *tensor.OutOfMemoryError naming the op and the bytes asked;
// tensor.Catch(func() { ... one step ... }) returns it as an error. The
// optimizer's Step is done for every parameter or none; a failed Backward
// leaves partial gradients, which the next step's ZeroGrad clears. The
// program may then go on on the CPU: To(model, tensor.CPU), opt.To and
// Batches.To. tensor.MemoryStats reports a device's memory and its peak.
//
// # Speed
//
// Sequential fuses a Linear followed by an activation into one pass (the
// bias seeds the Sgemm output, the activation runs in place) and a Conv2D
// followed by a ReLU into the convolution's bias pass; a MaxPool2D over
// such a convolution masks its small output gradient instead of the ReLU
// masking the large input one. The losses compute the loss and its
// gradient in one call (tensor's CrossEntropy, MSE, BCEWithLogits), and an
// optimizer's Step is one call updating every parameter (tensor's
// SGDStep, AdamStep, RMSPropStep): on the CPU, in L1-sized blocks with
// simd kernels, reading and writing each parameter, gradient and moment
// once per step.
//
// # Files
//
// Save and Load write and read parameters in the safetensors format under
// PyTorch's state_dict names ("0.weight", "3.running_mean"), so that files
// move between lanes and PyTorch; saving replaces a file atomically, so a
// failed save leaves the previous one whole. SaveCheckpoint and
// LoadCheckpoint add the optimizer's state and the batch iterator's place,
// so that training resumed from a checkpoint gives bit for bit the
// parameters of training that never stopped. ReadSafetensors bounds its
// allocations by the file's size and rejects malformed files with errors.
// ReadIDX reads the MNIST family's IDX files, gzipped or not, in memory
// that follows the data present; Batches shuffles rows into mini-batches
// without allocating.
package nn
