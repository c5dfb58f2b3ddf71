module github.com/lanesgo/lanes/bench

go 1.26.0

require (
	github.com/lanesgo/lanes v0.0.0
	github.com/viterin/vek v0.4.3
	gonum.org/v1/gonum v0.17.0
)

require (
	github.com/chewxy/math32 v1.10.1 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/viterin/partial v1.1.0 // indirect
	golang.org/x/exp v0.0.0-20230817173708-d852ddb80c63 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/lanesgo/lanes => ../
