//go:build !cuda && !cudaemu

// Command gpu-check needs -tags cuda (make gpu-check).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "gpu-check: built without -tags cuda; run make gpu-check")
	os.Exit(2)
}
