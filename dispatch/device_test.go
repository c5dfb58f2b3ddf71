package dispatch

import (
	"errors"
	"strings"
	"testing"
)

type fakeLister struct {
	ds  []DeviceInfo
	err error
}

func (f fakeLister) Devices() ([]DeviceInfo, error) { return f.ds, f.err }
func (f fakeLister) Describe() string               { return "fake plugin" }

func TestDevicesReport(t *testing.T) {
	defer SetDeviceLister(SetDeviceLister(nil))
	if ds, err := Devices(); ds != nil || err != nil {
		t.Errorf("Devices without a lister = %v, %v", ds, err)
	}
	if r := Report(); !strings.Contains(r, "devices:   none (no accelerator plugin linked in") {
		t.Errorf("Report without a lister:\n%s", r)
	}
	SetDeviceLister(fakeLister{err: errors.New("cudaGetDeviceCount: no CUDA-capable device is detected")})
	if r := Report(); !strings.Contains(r, "devices:   none (fake plugin: cudaGetDeviceCount: no CUDA-capable device is detected)") {
		t.Errorf("Report with a failing lister:\n%s", r)
	}
	SetDeviceLister(fakeLister{})
	if r := Report(); !strings.Contains(r, "devices:   none (fake plugin: no device)") {
		t.Errorf("Report with no device:\n%s", r)
	}
	h100 := DeviceInfo{Index: 0, Name: "NVIDIA H100 80GB HBM3", Memory: 85 << 30, Major: 9, Minor: 0, Processors: 132}
	SetDeviceLister(fakeLister{ds: []DeviceInfo{h100}})
	want := "devices:   fake plugin: 0: NVIDIA H100 80GB HBM3, 85.0 GiB, compute 9.0, 132 SMs"
	if r := Report(); !strings.Contains(r, want) {
		t.Errorf("Report with a device does not contain %q:\n%s", want, r)
	}
	if ds, err := Devices(); err != nil || len(ds) != 1 || ds[0] != h100 {
		t.Errorf("Devices = %v, %v", ds, err)
	}
}
