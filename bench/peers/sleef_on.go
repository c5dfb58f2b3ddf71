//go:build sleef

package peers

import "github.com/lanesgo/lanes/bench/sleef"

// With -tags sleef (needs Debian's libsleef-dev and cgo) the suite also runs
// SLEEF's AVX-512 u10 functions, the C anchor of the transcendental bars.
func init() {
	extra["Exp"] = append(extra["Exp"], impl("sleef", func(in *Inputs) { sleef.Exp(in.Dst, in.A) }))
	extra["Log"] = append(extra["Log"], impl("sleef", func(in *Inputs) { sleef.Log(in.Dst, in.A) }))
	extra["Tanh"] = append(extra["Tanh"], impl("sleef", func(in *Inputs) { sleef.Tanh(in.Dst, in.A) }))
	extra["Erf"] = append(extra["Erf"], impl("sleef", func(in *Inputs) { sleef.Erf(in.Dst, in.A) }))
}
