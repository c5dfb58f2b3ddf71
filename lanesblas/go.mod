module github.com/lanesgo/lanes/lanesblas

go 1.26.0

require (
	github.com/lanesgo/lanes v0.0.0
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/lanesgo/lanes => ../
