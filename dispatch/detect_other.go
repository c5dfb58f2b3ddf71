//go:build (!amd64 && !arm64) || purego

package dispatch

func detect() Level { return Generic }

func featureReport() (used, missing []string) { return nil, nil }

func buildNote() string {
	if purego {
		return "built with -tags purego: assembly disabled"
	}
	return "no assembly kernels for this architecture"
}
