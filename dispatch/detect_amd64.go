//go:build amd64 && !purego

package dispatch

import "github.com/klauspost/cpuid/v2"

// The features each amd64 level needs; Report lists them.
var (
	avx2Features   = []cpuid.FeatureID{cpuid.AVX, cpuid.AVX2, cpuid.FMA3}
	avx512Features = []cpuid.FeatureID{cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512DQ, cpuid.AVX512VL, cpuid.BMI2}
)

func detect() Level {
	c := &cpuid.CPU
	switch {
	case c.Supports(avx2Features...) && c.Supports(avx512Features...):
		return AVX512
	case c.Supports(avx2Features...):
		return AVX2
	}
	return Generic
}

func featureReport() (used, missing []string) {
	for _, set := range [][]cpuid.FeatureID{avx2Features, avx512Features} {
		for _, f := range set {
			if cpuid.CPU.Supports(f) {
				used = append(used, f.String())
			} else {
				missing = append(missing, f.String())
			}
		}
	}
	return used, missing
}

func buildNote() string { return "amd64 assembly kernels" }
