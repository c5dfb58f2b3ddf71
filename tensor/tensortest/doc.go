// Package tensortest helps test code that runs tensor ops on devices.
//
// HostDevice is a stand-in device for tests of other packages (nn,
// plugins, programs) on machines without an accelerator: its memory is
// host slices, and its Backend implements every family of tensor.Backend
// by copying the operands out of that memory, running the CPU's own
// implementation (tensor.CPUBackend) on the copies and storing the
// results back. It is a test double: since it runs the CPU's code, it
// checks where ops are routed and that tensors stay on their device (it
// refuses an operand on another device, or a host operand of one or more
// dimensions beside device ones, as a device that cannot read host
// memory would), not kernels. It counts host<->device transfers (calls
// and bytes each way), allocations and family calls (Counts), so that a
// test can assert, for instance, one upload and at most one readback per
// training step; and it can be made to fail (SetFaults), as a device out
// of memory does.
//
// Register registers a HostDevice for the length of a test:
//
//	d := tensortest.Register(t, 7)
//	x, _ := tensor.RandN(r, 3, 4).To(d.Device())
//	y := tensor.Exp(x) // runs on d, stays on d
//	if c := d.Counts(); c.Calls["Elementwise.Unary"] != 1 { ... }
package tensortest
