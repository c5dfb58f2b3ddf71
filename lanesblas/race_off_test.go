//go:build !race

package lanesblas

const raceEnabled = false
