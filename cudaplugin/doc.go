// Package cudaplugin runs lanes' MatMul and Conv2D, and the small
// operations of a forward pass, on an NVIDIA GPU with kernels of its own
// (no cuBLAS or cuDNN), compiled by nvcc into a static library and linked
// with cgo and the static CUDA runtime.
//
// Build: `make cuda` (nvcc, sm_80 and sm_90 code plus PTX), then build or
// test with -tags cuda. Without the tag the package is pure Go: Open and
// Enable report ErrUnavailable, and everything runs on the CPU.
//
// The emulated device: with -tags cudaemu instead (no CUDA toolkit, no
// GPU; a C++20 compiler), the same kernels are compiled for the host and
// run on worker threads (emulate/emulate.h), and a host stand-in answers
// the CUDA runtime calls (runtime_emulate.cc): Open gives a working
// device, "lanes emulated device (host)", whose memory is host memory the
// plugin owns, and every Go path of the plugin runs as on a GPU, only
// slower. `go test -tags cudaemu ./tensor/... ./nn/... ./cudaplugin/...`
// runs the device paths without a GPU. LANES_CUDAEMU_DEVICES (default 1),
// LANES_CUDAEMU_MEMORY (bytes, default 4g) and LANES_CUDAEMU_THREADS
// (worker threads, default one per core) shape it. The tags exclude each
// other.
//
// Use:
//
//	g, err := cudaplugin.Enable() // device 0: tensor device and offload device, placer, accelerator for calibration
//	if err != nil { log.Print(err) } // no driver, no device, not built with -tags cuda: CPU only
//	x, _ := img.To(g.Device())       // device-resident tensors
//	y := tensor.Conv2D(x, w, b, p)   // a device operand: runs on the GPU, y stays there
//	h, _ := y.To(tensor.CPU)         // waits for the queued work and copies back (y.Data(): a host copy)
//
// Two ways to the GPU:
//
//   - Device-resident tensors (Tensor.To, tensor.NewOn): package tensor's
//     ops on them run on the families the plugin registers (MatMul,
//     Conv2D and its gradients, every elementwise op, comparison, Where
//     and Fill, the unary ops' gradients (UnaryGrad), the copies, Softmax,
//     the poolings, UniformInto and Dropout (Philox, the CPU's numbers bit
//     for bit); docs/cuda.md lists them: every op of the registered
//     families has a kernel, and one without would return ErrNoKernel),
//     and so do GPU.BiasAct, Add, Mul, SoftmaxRows,
//     MaxPool2D, AvgPool2D, on the device's stream without synchronizing;
//     To(CPU) waits and copies back. Errors are returned (and, through
//     package tensor, reported as panics by tensor).
//   - Op-level offload of host tensors: the placer (GPU.Place) sends MatMul
//     and Conv2D there above the crossovers in dispatch's thresholds, which
//     `go -C bench run ./cmd/calibrate` measures through GPU.Prepare (the
//     dispatch.Accelerator that Enable registers); until then dispatch's
//     conservative defaults apply. Operands travel through pinned staging buffers with
//     asynchronous copies on a stream of their own, and the op
//     synchronizes once. Any failure leaves the op to the CPU.
//
// Asynchronous uploads: a device buffer's NewStaging (tensor.AsyncUploader)
// gives a pinned host buffer whose uploads run on a copy stream of their
// own, ordered by events with the device stream (staging.go); nn's
// Batches.To uses them to copy the next batch while a step runs.
//
// Memory: device buffers come from a pool with size classes (four per
// power of two: less than 25% waste) that reuses freed buffers; it is
// flushed (cudaFree) by Close and when an allocation fails (after a
// garbage collection, which returns unreachable tensors' buffers), after
// which the allocation is retried once. GPU implements
// tensor.MemoryReporter: tensor.MemoryStats gives the pool's bytes in use
// and reserved and their peaks (ResetPeakMemoryStats), as
// torch.cuda.memory_stats.
//
// Faults: every CUDA call is checked; a failure is an *Error carrying
// cudaGetErrorString. No driver or no device: Open fails, the CPU does
// everything; the error matches ErrUnavailable (errors.Is) as it does
// without -tags cuda, and so do the methods of the nil *GPU Open returns. Out of memory: flush and retry once, then the CPU for
// offloaded ops and a *tensor.OutOfMemoryError for device tensors (the
// bytes asked and in use; tensor's ops panic with it, tensor.Catch
// returns it); the device goes on working. A sticky error (illegal
// address, launch failure, ...: the CUDA context is lost) disables the
// plugin for the process with one log line; from then on every op is the
// CPU's and device operations return ErrDisabled.
//
// Files: one Go file and one .cu file per op family, as package simd is
// organised: gemm (MatMul), conv (Conv2D, and its gradients: SGEMMs
// around im2col and a col2im gather), elementwise, reduce (every op
// of tensor's Reduce family: one block per output row, strided operands),
// pooling, norm (BatchNorm, LayerNorm and their gradients), index
// (lookups, their scatter-add adjoints, OneHot), loss (the fused losses),
// optim (multi-tensor optimizer steps), copy, random (Philox Dropout and
// Uniform); the
// .cu files share common.cuh (launches) and tiles.cuh (the SGEMM and
// Conv2D main loop), and kernels.h is their C interface. The
// rest is the device: cuda.go (Open, Close, streams, errors), memory.go
// (device buffers), staging.go (asynchronous uploads), mempool.go (the pool), operand.go (a device op's
// operands and temporaries), offload.go (host work sent to the device),
// plan.go (tile plans and grids), place.go (placement) and runtime.c (the
// CUDA runtime calls the Go files make).
//
// Concurrency: a GPU is safe for concurrent use. Each entry locks its
// goroutine to its thread and calls cudaSetDevice. Device-resident work
// of all goroutines goes to one stream per device, in the order the calls
// are made; offloaded ops use a free list of streams with their own
// staging buffers.
package cudaplugin
