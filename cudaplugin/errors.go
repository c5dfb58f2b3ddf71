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

var (
	// ErrUnavailable is returned by Open, Enable and the device operations
	// when the package was built without -tags cuda.
	ErrUnavailable = errors.New("cudaplugin: built without -tags cuda (run make cuda, then build with -tags cuda)")
	// ErrDisabled is returned after a sticky CUDA error disabled the plugin.
	ErrDisabled = errors.New("cudaplugin: disabled after a sticky CUDA error; everything runs on the CPU")
	// ErrClosed is returned by the operations of a closed GPU.
	ErrClosed = errors.New("cudaplugin: GPU closed")
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
