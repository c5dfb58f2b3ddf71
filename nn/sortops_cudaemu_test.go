//go:build cudaemu

package nn

import (
	"testing"

	"github.com/lanesgo/lanes/cudaplugin"
)

// TestSortOpsEmulated runs the tape's sorts and scans on the emulated CUDA
// device (-tags cudaemu: the plugin's sort.cu kernels), whose values,
// indices and gradients must be the host's bit for bit.
func TestSortOpsEmulated(t *testing.T) {
	g, err := cudaplugin.Open(0)
	if err != nil {
		t.Skipf("no emulated device: %v", err)
	}
	defer g.Close()
	checkSortOpsOn(t, g.Device())
}
