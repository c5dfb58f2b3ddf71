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

// The longest strings from outside the program (a thresholds file, its
// path, the environment) that Report and the warnings show, in bytes: a
// value such as a thresholds file's "cpu" and "device" (calibration
// writes a CPU brand string and a GPU name, well under 100), and a path
// or an error (PATH_MAX on Linux is 4096).
const (
	maxReportString = 200
	maxReportPath   = 4096
)

// clip returns s cut to at most max bytes at a rune boundary, and whether
// it was cut.
func clip(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// quoted returns s as a Go string literal (control characters, invalid
// UTF-8 and other unprintable runes escaped), cut to max bytes, with
// "..." and the full length after a cut.
func quoted(s string, max int) string {
	c, cut := clip(s, max)
	if cut {
		return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(c), len(s))
	}
	return strconv.Quote(c)
}

// printable returns s as it is when it is printable UTF-8 (spaces
// included, no other control or format characters) of at most max bytes,
// else quoted(s, max): a string from outside can neither break Report's
// lines (or a warning's) nor flood them, and an ordinary one reads as
// written.
func printable(s string, max int) string {
	if len(s) > max || !utf8.ValidString(s) {
		return quoted(s, max)
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return quoted(s, max)
		}
	}
	return s
}
