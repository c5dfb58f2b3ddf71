package simd

import "github.com/lanesgo/lanes/dispatch"

// A kernel family keeps one table of function values per dispatch level. The
// Generic table is complete and is filled in the family's _generic.go file; an
// architecture file (foo_amd64.go, foo_arm64.go) registers its levels in init.
// Levels left unregistered run the generic kernels. Calls index the table with
// dispatch.Active(), one atomic load, so dispatch.SetLevel takes effect on the
// next call with no lock and no allocation.
type table[K any] struct {
	byLevel [dispatch.NumLevels]*K
}

// set registers k for level l.
func (t *table[K]) set(l dispatch.Level, k *K) { t.byLevel[l] = k }

// get returns the kernels of the active level.
func (t *table[K]) get() *K {
	if k := t.byLevel[dispatch.Active()]; k != nil {
		return k
	}
	return t.byLevel[dispatch.Generic]
}

// at returns the kernels registered for level l, or nil (used by tests).
func (t *table[K]) at(l dispatch.Level) *K { return t.byLevel[l] }

// float is the element types of the kernel families. A family's kernels of
// either type share one kernel struct (arithKernels[T], gemmKernels[T]) and
// one generic Go implementation; the float64 forms have their own table
// (arithF64 beside arith, dgemmFamily beside sgemmFamily), filled at the
// same levels by the same registration files.
type float interface{ float32 | float64 }
