package cudaplugin

import (
	"github.com/lanesgo/lanes/dispatch"
)

// place is a GPU's placement. Work on device tensors runs on the device
// whatever its size: the CPU path cannot read them. Work on host tensors
// goes where the thresholds in force send it (dispatch.ActiveThresholds:
// the crossovers measured by `go -C bench run ./cmd/calibrate` through
// GPU.Prepare, else dispatch's conservative defaults).
func place(w dispatch.Work) dispatch.Target {
	if w.Resident {
		return dispatch.OnGPU
	}
	t, _ := dispatch.ActiveThresholds()
	return t.Place(w)
}

// describe is the placer's line in dispatch.Report.
func describe(device string) string {
	t, source := dispatch.ActiveThresholds()
	return "cuda " + device + ": device tensors on the GPU; host tensors by the thresholds (" + source + "): " + t.Describe()
}
