//go:build cudaemu

package nn

import (
	"testing"

	"github.com/lanesgo/lanes/cudaplugin"
)

// TestOptLossEmulated runs the losses with options on the emulated CUDA
// device (-tags cudaemu: the plugin's loss.cu kernels), against the host
// within 1e-5 relative (both compute each term in double and round once;
// the sums' order differs).
func TestOptLossEmulated(t *testing.T) {
	g, err := cudaplugin.Open(0)
	if err != nil {
		t.Skipf("no emulated device: %v", err)
	}
	defer g.Close()
	checkOptLossesOn(t, g.Device(), 1e-5)
}
