//go:build cuda

package main

import (
	"log"

	"github.com/lanesgo/lanes/cudaplugin"
)

// With -tags cuda the CUDA plugin is linked in and enabled: on a machine
// with a device it registers the dispatch.Accelerator that is timed here
// (and tensor's offload device and the placer); without one the reason is logged
// and only the CPU is measured.
func init() {
	if _, err := cudaplugin.Enable(); err != nil {
		log.Printf("%v: measuring the CPU only", err)
	}
}
