package peers

import (
	"slices"
	"strings"
	"testing"
)

func TestSelectOps(t *testing.T) {
	ops, err := SelectOps("add, EXP")
	if err != nil || len(ops) != 2 || ops[0].Name != "Add" || ops[1].Name != "Exp" {
		t.Errorf("SelectOps = %v, %v", ops, err)
	}
	if all, err := SelectOps(""); err != nil || len(all) != len(Ops()) {
		t.Errorf(`SelectOps("") = %d ops, %v; want all %d`, len(all), err, len(Ops()))
	}
	if _, err := SelectOps("Add,Nope"); err == nil || !strings.Contains(err.Error(), `unknown op "Nope"`) {
		t.Errorf("unknown op: %v", err)
	}
}

func TestParseSizes(t *testing.T) {
	if got, err := ParseSizes("1000, 64,3"); err != nil || !slices.Equal(got, []int{1000, 64, 3}) {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,,2", "0", "-4", "x"} {
		if _, err := ParseSizes(bad); err == nil || !strings.Contains(err.Error(), "bad size") {
			t.Errorf("ParseSizes(%q): %v", bad, err)
		}
	}
}

func TestFormatNs(t *testing.T) {
	for _, c := range []struct {
		ns   float64
		want string
	}{{12.34, "12.3 ns"}, {9999, "9999.0 ns"}, {12345, "12.3 µs"}, {2.5e6, "2.50 ms"}} {
		if got := FormatNs(c.ns); got != c.want {
			t.Errorf("FormatNs(%v) = %q, want %q", c.ns, got, c.want)
		}
	}
}
