package dispatch

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/cpuid/v2"

	"github.com/lanesgo/lanes/internal/par"
)

// Report describes the CPU, the features lanes uses, the detected and active
// levels and why the active level was chosen. It is meant for logs and for
// `go run ./bench/cmd/lanes`.
func Report() string {
	var b strings.Builder
	brand := cpuid.CPU.BrandName
	if brand == "" {
		brand = "unknown"
	}
	fmt.Fprintf(&b, "cpu:       %s (%s/%s, %d logical cores, GOMAXPROCS=%d)\n",
		brand, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if c := cpuid.CPU.Cache; c.L1D > 0 || c.L2 > 0 {
		fmt.Fprintf(&b, "caches:    L1d %s, L2 %s, L3 %s\n", size(c.L1D), size(c.L2), size(c.L3))
	}
	fmt.Fprintf(&b, "build:     %s\n", buildNote())
	used, missing := featureReport()
	if len(used) > 0 {
		fmt.Fprintf(&b, "features:  %s\n", strings.Join(used, " "))
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "missing:   %s\n", strings.Join(missing, " "))
	}
	names := make([]string, 0, NumLevels)
	for _, l := range Levels() {
		names = append(names, l.String())
	}
	fmt.Fprintf(&b, "levels:    %s (detected %v)\n", strings.Join(names, " "), Detected())
	why := "best level detected"
	switch {
	case envNote != "" && Active() == envLevel:
		why = envNote
	case Active() != Detected():
		why = "set by SetLevel"
	}
	fmt.Fprintf(&b, "active:    %v (%s)\n", Active(), why)
	spin, from := par.Spin()
	fmt.Fprintf(&b, "workers:   %d besides the caller, spinning %v before they park (%s)\n", par.Workers(), spin, from)
	fmt.Fprintf(&b, "placement: %s\n", placementNote())
	fmt.Fprintf(&b, "devices:   %s\n", devicesNote())
	return b.String()
}

func size(n int) string {
	switch {
	case n <= 0:
		return "?"
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// maxReportString caps, in bytes, a string Report (or a warning) shows
// from outside the program: a thresholds file's "cpu" and "device", its
// path, an environment variable's value. The longest a calibration
// writes (a CPU brand string, a GPU name) is well under 100.
const maxReportString = 200

// clip returns s cut to at most maxReportString bytes at a rune boundary,
// and whether it was cut.
func clip(s string) (string, bool) {
	if len(s) <= maxReportString {
		return s, false
	}
	n := maxReportString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// quoted returns s as a Go string literal (control characters, invalid
// UTF-8 and other unprintable runes escaped), clipped to maxReportString
// bytes with "..." and the full length after a cut.
func quoted(s string) string {
	c, cut := clip(s)
	if cut {
		return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(c), len(s))
	}
	return strconv.Quote(c)
}

// reportString returns s as it is when it is printable UTF-8 of at most
// maxReportString bytes, else quoted(s): a string from a file can neither
// break Report's lines nor flood them.
func reportString(s string) string {
	if len(s) > maxReportString || !utf8.ValidString(s) {
		return quoted(s)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return quoted(s)
		}
	}
	return s
}
