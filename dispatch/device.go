package dispatch

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// DeviceInfo describes one accelerator, as its plugin found it.
type DeviceInfo struct {
	Index        int    // the plugin's ordinal (CUDA: the cudaSetDevice number)
	Name         string // e.g. "NVIDIA H100 80GB HBM3"
	Memory       uint64 // total device memory in bytes
	Major, Minor int    // compute capability (CUDA: 9.0 for sm_90)
	Processors   int    // streaming multiprocessors (CUDA) or compute units
}

func (d DeviceInfo) String() string {
	return fmt.Sprintf("%d: %s, %.1f GiB, compute %d.%d, %d SMs",
		d.Index, d.Name, float64(d.Memory)/(1<<30), d.Major, d.Minor, d.Processors)
}

// A DeviceLister finds the accelerators a plugin can use. It is called
// only by Devices and Report, never on a hot path.
type DeviceLister interface {
	Devices() ([]DeviceInfo, error)
	// Describe names the plugin, for Report (e.g. "CUDA plugin").
	Describe() string
}

var lister atomic.Pointer[DeviceLister]

// SetDeviceLister installs l (nil removes it) and returns the previous
// one. The CUDA plugin installs its own when it is linked in.
func SetDeviceLister(l DeviceLister) (prev DeviceLister) {
	var old *DeviceLister
	if l == nil {
		old = lister.Swap(nil)
	} else {
		old = lister.Swap(&l)
	}
	if old == nil {
		return nil
	}
	return *old
}

// Devices returns the accelerators of the installed lister: none, and no
// error, when no plugin is linked in; none and the plugin's error (no
// driver, no device) when it cannot use any.
func Devices() ([]DeviceInfo, error) {
	if l := lister.Load(); l != nil {
		return (*l).Devices()
	}
	return nil, nil
}

// devicesNote is Report's line on accelerators.
func devicesNote() string {
	l := lister.Load()
	if l == nil {
		return "none (no accelerator plugin linked in; see cudaplugin, -tags cuda)"
	}
	ds, err := (*l).Devices()
	switch {
	case err != nil:
		return fmt.Sprintf("none (%s: %v)", (*l).Describe(), err)
	case len(ds) == 0:
		return fmt.Sprintf("none (%s: no device)", (*l).Describe())
	}
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return (*l).Describe() + ": " + strings.Join(s, "; ")
}
