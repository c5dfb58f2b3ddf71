module github.com/lanesgo/lanes

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/klauspost/cpuid/v2 v2.4.2
	golang.org/x/sys v0.49.0
)
