//go:build purego

package dispatch

const purego = true
