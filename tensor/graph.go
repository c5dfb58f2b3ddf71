package tensor

// GraphKernels is the family of captured steps (CUDA graphs; nn.GraphStep
// uses it): a device that has it records the work that a function queues
// on it, once, and replays the recording later without the host code
// that queued it, so that a step of many small ops costs one launch. The
// recording holds the operands' addresses and the ops' arguments as they
// were: a replay computes what the captured code computed, on the same
// buffers, with the same shapes and scalars.
//
// The protocol, for one goroutine that alone uses dev meanwhile:
//
//  1. Warmup, then the step run eagerly: the device notes the memory the
//     step asks for, so that the capture can be given that much ahead
//     (a capture may not allocate).
//  2. BeginCapture, the step run again (its work is recorded, not run),
//     EndCapture: the Graph. Work that needs the host during the capture
//     (a copy to or from host memory, a synchronization, an allocation
//     beyond the warm-up's) makes EndCapture return an error and no
//     graph; so does an op whose per-step arguments a graph cannot hold.
//  3. Graph.Launch queues a replay; Graph.Err waits for it and returns
//     the step's deferred errors (a bad index or label found by a
//     kernel: in a captured step they are kept on the device, in one
//     word per step, and read here instead of after each op).
//
// A device without the family (a nil Backend.Graph: the CPU,
// tensortest.HostDevice) runs the step eagerly every time; GraphsOn
// returns nil for it.
type GraphKernels interface {
	// Warmup starts noting the memory dev's work asks for, until
	// BeginCapture.
	Warmup(dev Device) error
	// BeginCapture ends the warm-up, reserves for the graph the memory
	// it asked for (the last warm-up's, with none since the last
	// capture) and starts recording the work queued on dev.
	BeginCapture(dev Device) error
	// EndCapture stops the recording and returns it as a Graph, or the
	// error that made the capture fail (the recording is then dropped).
	EndCapture(dev Device) (Graph, error)
}

// A Graph is a recorded step of a device (GraphKernels). It keeps the
// buffers its work uses (the operands' and the temporaries') until Close.
type Graph interface {
	// Launch queues a replay of the recorded work.
	Launch() error
	// Err waits for the replays queued and returns the error found by
	// their kernels (a bad index or label; the values computed from it
	// are NaN or skipped as the eager ops document), then clears it.
	Err() error
	// Close frees the graph and the memory it holds.
	Close() error
}

// GraphsOn returns dev's GraphKernels, or nil when dev has none (the CPU,
// a device without the family, an unregistered one).
func GraphsOn(dev Device) GraphKernels {
	if b := registered(dev); b != nil {
		return b.Graph
	}
	return nil
}
