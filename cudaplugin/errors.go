package cudaplugin

import (
	"errors"
	"fmt"
)

// Error is a failed CUDA call: the call, the cudaError_t code and
// cudaGetErrorString's text.
type Error struct {
	Call string // e.g. "cudaMalloc"
	Code int
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("cudaplugin: %s: %s (CUDA error %d)", e.Call, e.Msg, e.Code)
}

// Is makes an error that means there is no usable device or driver (no
// device, no driver or one too old, the stub library, not initialized)
// match ErrUnavailable.
func (e *Error) Is(target error) bool { return target == ErrUnavailable && isNoDevice(e.Code) }

// unavailable is an error of its own text that matches ErrUnavailable.
type unavailable string

func (e unavailable) Error() string        { return string(e) }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }

var (
	// ErrUnavailable is what every error meaning "no GPU to use" matches
	// (errors.Is), in both builds: without -tags cuda, Open, Enable,
	// DeviceCount and Devices return it, as do the methods of a GPU
	// (there is no other than nil); with the tag, the *Error of a CUDA
	// call that found no device or no driver, Open of an ordinal with no
	// device, and every method of a nil *GPU match it. A GPU that a
	// sticky error disabled gives ErrDisabled instead, a closed one
	// ErrClosed.
	ErrUnavailable = errors.New("cudaplugin: built without -tags cuda (run make cuda, then build with -tags cuda; or -tags cudaemu for the emulated device)")
	// ErrDisabled is returned after a sticky CUDA error disabled the plugin.
	ErrDisabled = errors.New("cudaplugin: disabled after a sticky CUDA error; everything runs on the CPU")
	// ErrClosed is returned by the operations of a closed GPU.
	ErrClosed = errors.New("cudaplugin: GPU closed")
	// ErrNoKernel is what a family method that has no device kernel yet
	// returns, wrapped with the method and the op ("cudaplugin: Method:
	// no device kernel yet"). Package tensor turns it into the op's
	// panic; copying the operands with To(tensor.CPU) runs the op there.
	// Every op of the families the plugin registers has a kernel today:
	// no method returns it.
	ErrNoKernel = errors.New("no device kernel yet")
)

// cudaError_t values the plugin treats specially (driver_types.h, CUDA 11.8).
const (
	errMemoryAllocation    = 2
	errInitializationError = 3
	errStubLibrary         = 34
	errInsufficientDriver  = 35
	errNoDevice            = 100
	errECCUncorrectable    = 214
	errNvlinkUncorrectable = 220
	errIllegalAddress      = 700
	errLaunchTimeout       = 702
	errContextIsDestroyed  = 709
	errAssert              = 710
	errHardwareStackError  = 714
	errIllegalInstruction  = 715
	errMisalignedAddress   = 716
	errInvalidAddressSpace = 717
	errInvalidPc           = 718
	errLaunchFailure       = 719
	errSystemNotReady      = 802
	errUnknown             = 999
)

// isOutOfMemory reports whether err is a failed allocation.
func isOutOfMemory(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == errMemoryAllocation
}

// isSticky reports whether code leaves the CUDA context unusable: the
// process must not use the device again.
func isSticky(code int) bool {
	switch code {
	case errECCUncorrectable, errNvlinkUncorrectable, errIllegalAddress, errLaunchTimeout,
		errContextIsDestroyed, errAssert, errHardwareStackError, errIllegalInstruction,
		errMisalignedAddress, errInvalidAddressSpace, errInvalidPc, errLaunchFailure, errUnknown:
		return true
	}
	return false
}

// isNoDevice reports whether code means there is no usable device or
// driver: the plugin is unavailable, which is not a fault.
func isNoDevice(code int) bool {
	switch code {
	case errNoDevice, errInsufficientDriver, errStubLibrary, errInitializationError, errSystemNotReady:
		return true
	}
	return false
}
