package main

import "testing"

func TestVmHWM(t *testing.T) {
	for _, c := range []struct {
		in   string
		kb   int64
		want bool
	}{
		{"Name:\tfashion\nVmPeak:\t 2000 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1000 kB\n", 123456, true},
		{"VmHWM:\t0 kB\n", 0, true},
		{"Name:\tfashion\n", 0, false},
		{"VmHWM:\t12 MB\n", 0, false},
		{"VmHWM:\t-5 kB\n", 0, false},
		{"VmHWM:\tx kB\n", 0, false},
		{"", 0, false},
	} {
		kb, ok := vmHWM([]byte(c.in))
		if ok != c.want || (ok && kb != c.kb) {
			t.Errorf("vmHWM(%q) = %d, %v; want %d, %v", c.in, kb, ok, c.kb, c.want)
		}
	}
	if rssNote() == "" {
		t.Log("no /proc/self/status here: the epoch lines carry no peak_rss_bytes")
	}
}
