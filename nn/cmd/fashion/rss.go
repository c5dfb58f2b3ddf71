package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// rssNote returns " peak_rss_bytes=B", the process's peak resident memory
// so far (VmHWM of /proc/self/status: the dataset, the model, the
// optimizer's state, the tape's buffers and the Go heap's slack), or ""
// where /proc does not say it (not Linux). PyTorch's reference prints
// the same figure (ru_maxrss) on its epoch lines.
func rssNote() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	if kb, ok := vmHWM(b); ok {
		return fmt.Sprintf(" peak_rss_bytes=%d", kb*1024)
	}
	return ""
}

// vmHWM returns the VmHWM line's value, in KiB, of a /proc/PID/status
// file's contents, and whether there is one.
func vmHWM(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb, err == nil && kb >= 0
	}
	return 0, false
}
