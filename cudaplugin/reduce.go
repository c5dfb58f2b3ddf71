//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_softmax_at(lanes_stream s, uintptr_t y, uintptr_t x, long long rows, int cols) {
	return lanes_softmax_rows(s, (float *)y, (const float *)x, rows, cols);
}
*/
import "C"

import (
	"fmt"

	"github.com/lanesgo/lanes/tensor"
)

// SoftmaxRows sets dst to the softmax of x along its last axis, as
// tensor.Softmax(x, -1); dst may be x.
func (g *GPU) SoftmaxRows(dst, x *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	sameShape("SoftmaxRows", dst, x)
	if x.Dims() == 0 {
		panic("cudaplugin: SoftmaxRows: a scalar has no rows")
	}
	cols := x.Dim(-1)
	if !fitsInt32(cols) {
		return fmt.Errorf("cudaplugin: SoftmaxRows: %d columns do not fit the kernels' 32-bit sizes", cols)
	}
	p := g.deviceOperands("SoftmaxRows", dst, x)
	rows := 0
	if cols > 0 {
		rows = x.Len() / cols
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	return check("lanes_softmax_rows", C.lanes_softmax_at(g.stream, C.uintptr_t(p[0]), C.uintptr_t(p[1]), C.longlong(rows), C.int(cols)))
}
