package peers

import (
	"fmt"
	"strconv"
	"strings"
)

// SelectOps returns the ops named in s, a comma-separated list matched
// without regard to case; "" selects all of Ops (the float32 suite). The
// float64 ops (OpsF64: AddF64, DotF64, ...) are selected by name. An unknown
// name is an error that lists the known ones.
func SelectOps(s string) ([]Op, error) {
	if s == "" {
		return Ops(), nil
	}
	all := append(Ops(), OpsF64()...)
	var out []Op
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, op := range all {
			if strings.EqualFold(op.Name, strings.TrimSpace(name)) {
				out, found = append(out, op), true
			}
		}
		if !found {
			var names []string
			for _, op := range all {
				names = append(names, op.Name)
			}
			return nil, fmt.Errorf("unknown op %q (have %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// ParseSizes parses a comma-separated list of positive sizes.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// FormatNs writes a time in nanoseconds with a unit that keeps it short:
// ns below 10 µs, then µs, then ms.
func FormatNs(t float64) string {
	switch {
	case t >= 1e6:
		return fmt.Sprintf("%.2f ms", t/1e6)
	case t >= 1e4:
		return fmt.Sprintf("%.1f µs", t/1e3)
	}
	return fmt.Sprintf("%.1f ns", t)
}
