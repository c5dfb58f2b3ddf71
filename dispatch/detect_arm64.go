//go:build arm64 && !purego

package dispatch

import "golang.org/x/sys/cpu"

// Advanced SIMD is part of the arm64 base architecture, so NEON is always there;
// the optional extensions are detected and reported.
func detect() Level { return NEON }

func featureReport() (used, missing []string) {
	used = append(used, "ASIMD")
	for _, f := range []struct {
		name string
		has  bool
	}{
		{"FP16", cpu.ARM64.HasFPHP && cpu.ARM64.HasASIMDHP},
		{"DOTPROD", cpu.ARM64.HasASIMDDP},
		{"SVE", cpu.ARM64.HasSVE},
		{"SVE2", cpu.ARM64.HasSVE2},
	} {
		if f.has {
			used = append(used, f.name)
		} else {
			missing = append(missing, f.name)
		}
	}
	return used, missing
}

func buildNote() string { return "arm64 assembly kernels (NEON)" }
