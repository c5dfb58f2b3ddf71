//go:build cuda || cudaemu

package cudaplugin

/*
#include "runtime.h"
#include "kernels.h"

static int lanes_gemm_at(lanes_stream s, int cfg, LanesGemm *g, uintptr_t a, uintptr_t b, uintptr_t c, int gx, int gy, int gz) {
	g->a = (const float *)a;
	g->b = (const float *)b;
	g->c = (float *)c;
	return lanes_sgemm(s, cfg, g, gx, gy, gz);
}
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/internal/shape"
	"github.com/lanesgo/lanes/tensor"
)

// gemm queues dst = a·b for the stacks of matrices of s: one launch when
// both operands' matrices are evenly spaced, one per matrix otherwise.
// dst is contiguous with s.out's layout; a and b have s's shapes and
// strides; each needs unit stride along its rows or columns.
func (g *GPU) gemm(stream C.lanes_stream, s matmulShape, a, b uintptr, dst uintptr, scratch scratchFunc) error {
	ra, rb := len(s.aShape), len(s.bShape)
	ta, lda, okA := shape.MatrixLayout(s.m, s.k, s.aStrides[ra-2], s.aStrides[ra-1])
	tb, ldb, okB := shape.MatrixLayout(s.k, s.n, s.bStrides[rb-2], s.bStrides[rb-1])
	if !okA || !okB {
		return fmt.Errorf("cudaplugin: MatMul: an operand without unit stride along rows or columns")
	}
	count := s.batchCount()
	if s.m == 0 || s.n == 0 || count == 0 {
		return nil
	}
	offA := batchOffsets(s.batch, s.aShape, s.aStrides)
	offB := batchOffsets(s.batch, s.bShape, s.bStrides)
	strideA, uniA := uniformStride(offA)
	strideB, uniB := uniformStride(offB)
	var gm C.LanesGemm
	gm.m, gm.n, gm.k = C.int(s.m), C.int(s.n), C.int(s.k)
	gm.alpha, gm.beta = 1, 0
	gm.lda, gm.ldb, gm.ldc = C.longlong(lda), C.longlong(ldb), C.longlong(s.n)
	gm.trans_a, gm.trans_b = cbool(ta), cbool(tb)
	vec := func(p uintptr, ld int, offs []int) bool {
		ok := p%16 == 0 && ld%4 == 0
		for _, o := range offs {
			ok = ok && o%4 == 0
		}
		return ok
	}
	gm.vec_a, gm.vec_b = cbool(vec(a, lda, offA)), cbool(vec(b, ldb, offB))
	mn := s.m * s.n
	if uniA && uniB && count <= maxGridYZ {
		gm.stride_a, gm.stride_b, gm.stride_c = C.longlong(strideA), C.longlong(strideB), C.longlong(mn)
		return g.sgemm(stream, gm, a, b, dst, count, scratch)
	}
	plan, err := planTiles(s.m, s.n, s.k, 1, g.info.Processors)
	if err != nil {
		return err
	}
	if err := splitK(&gm.splits, &gm.partial, plan.splits, mn, scratch); err != nil { // one workspace: the products run in stream order
		return err
	}
	for i := range count {
		pa, pb, pc := a+uintptr(offA[i])*4, b+uintptr(offB[i])*4, dst+uintptr(i*mn)*4
		if err := check("lanes_sgemm", C.lanes_gemm_at(stream, C.int(plan.cfg.id), &gm, C.uintptr_t(pa), C.uintptr_t(pb), C.uintptr_t(pc),
			C.int(plan.gx), C.int(plan.gy), 1)); err != nil {
			return err
		}
	}
	return nil
}

// sgemm queues gm (sizes, layouts, strides, alpha and beta set) over gz
// evenly spaced products in one launch: tiles planned for the device,
// split-K with a workspace from scratch.
func (g *GPU) sgemm(stream C.lanes_stream, gm C.LanesGemm, a, b, c uintptr, gz int, scratch scratchFunc) error {
	m, n := int(gm.m), int(gm.n)
	plan, err := planTiles(m, n, int(gm.k), gz, g.info.Processors)
	if err != nil {
		return err
	}
	if err := splitK(&gm.splits, &gm.partial, plan.splits, gz*m*n, scratch); err != nil {
		return err
	}
	return check("lanes_sgemm", C.lanes_gemm_at(stream, C.int(plan.cfg.id), &gm, C.uintptr_t(a), C.uintptr_t(b), C.uintptr_t(c),
		C.int(plan.gx), C.int(plan.gy), C.int(plan.gz)))
}

// MatMul implements tensor.MatMulKernels: dst = tensor.MatMul(a, b). With every
// operand on the host it is an offloaded op (pinned staging, one
// synchronization); otherwise it runs on the device stream, host operands
// uploaded first, and waits only when dst is on the host.
func (g *GPU) MatMul(dst, a, b *tensor.Tensor) error {
	if !g.opened() {
		return errNilGPU
	}
	s := planMatMul(a.Shape(), a.Strides(), b.Shape(), b.Strides())
	if !slices.Equal(dst.Shape(), s.out) {
		panic(fmt.Sprintf("cudaplugin: MatMul: dst shape %v, want %v for %v @ %v", dst.Shape(), s.out, a.Shape(), b.Shape()))
	}
	if !fitsInt32(s.m, s.n, s.k) {
		return fmt.Errorf("cudaplugin: MatMul: m=%d n=%d k=%d do not fit the kernels' 32-bit sizes", s.m, s.n, s.k)
	}
	if err := g.enter(); err != nil {
		return err
	}
	defer g.exit()
	if !anyDevice(dst, a, b) {
		cs := s
		cs.aStrides, cs.bStrides = shape.ContiguousStrides(s.aShape), shape.ContiguousStrides(s.bShape)
		return g.offload(dst, [][]float32{a.Data(), b.Data()}, func(st C.lanes_stream, in []uintptr, out uintptr, scratch scratchFunc) error {
			return g.gemm(st, cs, in[0], in[1], out, scratch)
		})
	}
	c := &call{g: g}
	defer c.release()
	ao, err := c.input("MatMul", a)
	if err != nil {
		return err
	}
	bo, err := c.input("MatMul", b)
	if err != nil {
		return err
	}
	// Operands whose matrices have no unit stride are gathered first.
	s2 := planMatMul(ao.shape, ao.strides, bo.shape, bo.strides)
	if _, _, ok := shape.MatrixLayout(s2.m, s2.k, s2.aStrides[len(s2.aStrides)-2], s2.aStrides[len(s2.aStrides)-1]); !ok {
		if ao, err = c.contiguous(ao); err != nil {
			return err
		}
	}
	if _, _, ok := shape.MatrixLayout(s2.k, s2.n, s2.bStrides[len(s2.bStrides)-2], s2.bStrides[len(s2.bStrides)-1]); !ok {
		if bo, err = c.contiguous(bo); err != nil {
			return err
		}
	}
	s2 = planMatMul(ao.shape, ao.strides, bo.shape, bo.strides)
	out, err := c.output("MatMul", dst, ao, bo)
	if err != nil {
		return err
	}
	if err := g.gemm(g.stream, s2, ao.ptr, bo.ptr, out.ptr, c.scratch); err != nil {
		return err
	}
	return c.finish(out)
}
