package cudaplugin_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/lanesgo/lanes/cudaplugin"
	"github.com/lanesgo/lanes/tensor"
)

// These examples have no build tag: the same code runs on a GPU when the
// package is built with -tags cuda on a machine that has one, and on the
// CPU otherwise (without the tag, or without a driver or a device), and
// prints the same.

// Enable opens device 0 and installs it as package tensor's backend and
// dispatch's placer. When it fails, the program goes on on the CPU: the nil
// *GPU it returns answers Device with tensor.CPU, so the same code moves
// tensors to "the device" and back either way.
func ExampleEnable() {
	g, err := cudaplugin.Enable()
	if err != nil && !errors.Is(err, cudaplugin.ErrUnavailable) {
		log.Fatal(err) // a GPU is there but failed
	}
	// err matching ErrUnavailable: no -tags cuda, no driver or no device;
	// everything runs on the CPU.
	defer g.Close()

	a := tensor.Arange(1, 7, 1).Reshape(2, 3)
	b := tensor.Ones(3, 2)
	da, err := a.To(g.Device()) // a device-resident copy, or a itself on the CPU
	if err != nil {
		log.Fatal(err)
	}
	db, err := b.To(g.Device())
	if err != nil {
		log.Fatal(err)
	}
	c := tensor.MatMul(da, db) // a device operand: runs on the GPU, c stays there
	h, err := c.To(tensor.CPU) // waits for the queued work and copies back
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(h)
	// Output:
	// [[6 6]
	//  [15 15]]
}

// Open gives a GPU without installing it anywhere: its own methods take
// host or device tensors and return errors, which a program can answer by
// doing the work on the CPU.
func ExampleOpen() {
	g, err := cudaplugin.Open(0)
	if err != nil && !errors.Is(err, cudaplugin.ErrUnavailable) {
		log.Print(err) // a GPU is there but failed: go on on the CPU all the same
	}
	defer g.Close() // g is nil after an error; its methods answer ErrUnavailable

	a := tensor.Arange(1, 7, 1).Reshape(2, 3)
	dst := tensor.New(2, 2)
	// Host operands: an offloaded op (pinned staging, one synchronization).
	if err := g.MatMul(dst, a, a.T()); err != nil {
		if !errors.Is(err, cudaplugin.ErrUnavailable) {
			log.Print(err)
		}
		tensor.MatMulInto(dst, a, a.T()) // the CPU fallback
	}
	fmt.Println(dst)
	// Output:
	// [[14 32]
	//  [32 77]]
}

// The small operations of a forward pass are methods of GPU, on device
// tensors; each has a package tensor counterpart to fall back on.
func ExampleGPU_SoftmaxRows() {
	g, _ := cudaplugin.Open(0)
	defer g.Close()

	// On the GPU's device, or on the CPU when there is none (g.Device()
	// is then tensor.CPU: To returns the tensor itself).
	x, err := tensor.FromSlice([]float32{1, 2, 3, 0, 0, 0}, 2, 3).To(g.Device())
	if err != nil {
		log.Fatal(err)
	}
	p, err := tensor.NewOn(g.Device(), 2, 3)
	if err != nil {
		log.Fatal(err)
	}
	if err := g.SoftmaxRows(p, x); err != nil {
		tensor.SoftmaxInto(p, x, -1)
	}
	h, err := p.To(tensor.CPU)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f\n", h.Data())
	// Output:
	// [0.0900 0.2447 0.6652 0.3333 0.3333 0.3333]
}

// Devices lists what the plugin can use; it is the error matching
// ErrUnavailable that says there is none. The output depends on the
// machine (an H100 reads "0: NVIDIA H100 80GB HBM3, 79.2 GiB, compute
// 9.0, 132 SMs").
func ExampleDevices() {
	devices, err := cudaplugin.Devices()
	if errors.Is(err, cudaplugin.ErrUnavailable) {
		fmt.Println("CPU only:", err)
		return
	}
	for _, d := range devices {
		fmt.Println(d)
	}
}
