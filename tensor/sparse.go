package tensor

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/lanesgo/lanes/internal/par"
	"github.com/lanesgo/lanes/simd"
)

// CSR is a sparse Rows×Cols matrix in compressed sparse row form (SciPy's
// csr_matrix, PyTorch's sparse_csr layout): row i's nonzeros are
// Val[RowPtr[i]:RowPtr[i+1]] in the columns ColIdx[RowPtr[i]:RowPtr[i+1]].
// It lives on the host. NewCSR and CSRFromCOO check it; code that builds
// one by hand calls Check.
type CSR struct {
	Rows, Cols int
	RowPtr     []int
	ColIdx     []int
	Val        []float32
}

// NewCSR returns the CSR matrix of the given arrays (kept, not copied),
// panicking, naming itself, unless they describe one (see Check).
func NewCSR(rows, cols int, rowPtr, colIdx []int, val []float32) *CSR {
	a := &CSR{Rows: rows, Cols: cols, RowPtr: rowPtr, ColIdx: colIdx, Val: val}
	if err := a.Check(); err != nil {
		panic("tensor: NewCSR: " + err.Error())
	}
	return a
}

// Check returns an error unless a is a well-formed CSR matrix: sizes >= 0,
// Rows+1 nondecreasing row pointers from 0 to len(ColIdx) = len(Val), and
// column indices in [0, Cols) (in any order within a row; repeats add up).
func (a *CSR) Check() error {
	switch {
	case a.Rows < 0 || a.Cols < 0:
		return fmt.Errorf("size %d×%d", a.Rows, a.Cols)
	case len(a.RowPtr) != a.Rows+1:
		return fmt.Errorf("%d row pointers for %d rows (want rows+1)", len(a.RowPtr), a.Rows)
	case len(a.ColIdx) != len(a.Val):
		return fmt.Errorf("%d column indices for %d values", len(a.ColIdx), len(a.Val))
	case a.RowPtr[0] != 0 || a.RowPtr[a.Rows] != len(a.Val):
		return fmt.Errorf("row pointers from %d to %d for %d values (want 0 to %d)", a.RowPtr[0], a.RowPtr[a.Rows], len(a.Val), len(a.Val))
	}
	for i := range a.Rows {
		if a.RowPtr[i+1] < a.RowPtr[i] {
			return fmt.Errorf("row pointer %d (%d) below row pointer %d (%d)", i+1, a.RowPtr[i+1], i, a.RowPtr[i])
		}
	}
	for k, c := range a.ColIdx {
		if c < 0 || c >= a.Cols {
			return fmt.Errorf("column index %d at %d out of range [0, %d)", c, k, a.Cols)
		}
	}
	return nil
}

// NNZ returns the number of stored entries.
func (a *CSR) NNZ() int { return len(a.Val) }

// CSRFromCOO returns the rows×cols CSR matrix of the entries (row[k],
// col[k], val[k]), duplicates summed (in their order) and each row's
// columns sorted, as SciPy's coo_matrix(...).tocsr(). It panics, naming
// itself, for lists of different lengths or an index out of range.
func CSRFromCOO(rows, cols int, row, col []int, val []float32) *CSR {
	const op = "tensor: CSRFromCOO"
	if len(row) != len(col) || len(row) != len(val) || rows < 0 || cols < 0 {
		panic(fmt.Sprintf("%s: %d rows, %d columns, %d values for a %d×%d matrix", op, len(row), len(col), len(val), rows, cols))
	}
	order := make([]int, len(row))
	for k := range order {
		order[k] = k
		if row[k] < 0 || row[k] >= rows || col[k] < 0 || col[k] >= cols {
			panic(fmt.Sprintf("%s: entry %d at (%d, %d) outside %d×%d", op, k, row[k], col[k], rows, cols))
		}
	}
	sort.SliceStable(order, func(p, q int) bool {
		a, b := order[p], order[q]
		return row[a] < row[b] || row[a] == row[b] && col[a] < col[b]
	})
	a := &CSR{Rows: rows, Cols: cols, RowPtr: make([]int, rows+1)}
	for n, k := range order {
		if n > 0 && row[k] == row[order[n-1]] && col[k] == col[order[n-1]] {
			a.Val[len(a.Val)-1] += val[k]
			continue
		}
		a.ColIdx, a.Val = append(a.ColIdx, col[k]), append(a.Val, val[k])
		a.RowPtr[row[k]+1]++
	}
	for i := range rows {
		a.RowPtr[i+1] += a.RowPtr[i]
	}
	return a
}

// T returns the transpose of a as a new CSR matrix (columns sorted
// within each row, entries in a's row order).
func (a *CSR) T() *CSR {
	t := &CSR{Rows: a.Cols, Cols: a.Rows, RowPtr: make([]int, a.Cols+1), ColIdx: make([]int, len(a.Val)), Val: make([]float32, len(a.Val))}
	for _, c := range a.ColIdx {
		t.RowPtr[c+1]++
	}
	for i := range a.Cols {
		t.RowPtr[i+1] += t.RowPtr[i]
	}
	next := slices.Clone(t.RowPtr[:a.Cols])
	for i := range a.Rows {
		for k := a.RowPtr[i]; k < a.RowPtr[i+1]; k++ {
			c := a.ColIdx[k]
			t.ColIdx[next[c]], t.Val[next[c]] = i, a.Val[k]
			next[c]++
		}
	}
	return t
}

// GCNNormalize returns Kipf and Welling's propagation matrix of the
// adjacency a (square): Â = D^-½ (A + I) D^-½, D the diagonal of the row
// sums of A + I (PyTorch Geometric's gcn_norm with add_self_loops: a
// stored diagonal entry gets 1 added). The factors are computed in
// float64 and each entry rounded once; a row whose sum is 0 or less gets
// factor 0 (as gcn_norm's masked inf). It panics, naming itself, for a
// matrix that is not square.
func GCNNormalize(a *CSR) *CSR {
	if a.Rows != a.Cols {
		panic(fmt.Sprintf("tensor: GCNNormalize: %d×%d adjacency (want square)", a.Rows, a.Cols))
	}
	n := a.Rows
	var row, col []int
	var val []float32
	for i := range n {
		row, col, val = append(row, i), append(col, i), append(val, 1)
		for k := a.RowPtr[i]; k < a.RowPtr[i+1]; k++ {
			row, col, val = append(row, i), append(col, a.ColIdx[k]), append(val, a.Val[k])
		}
	}
	s := CSRFromCOO(n, n, row, col, val)
	inv := make([]float64, n)
	for i := range n {
		var d float64
		for _, v := range s.Val[s.RowPtr[i]:s.RowPtr[i+1]] {
			d += float64(v)
		}
		if d > 0 {
			inv[i] = 1 / math.Sqrt(d)
		}
	}
	for i := range n {
		for k := s.RowPtr[i]; k < s.RowPtr[i+1]; k++ {
			s.Val[k] = float32(inv[i] * float64(s.Val[k]) * inv[s.ColIdx[k]])
		}
	}
	return s
}

// SpMM returns the product a·b of the sparse a (Rows×Cols) and the dense
// matrix b [Cols, k], an [a.Rows, k] matrix (PyTorch's torch.sparse.mm).
func SpMM(a *CSR, b *Tensor) *Tensor {
	checkNil("SpMM", "b", b)
	if b.Dims() != 2 {
		panic(fmt.Sprintf("tensor: SpMM: a %d×%d and b of shape %v (want [%d k])", a.Rows, a.Cols, b.shape, a.Cols))
	}
	if a == nil {
		panic("tensor: SpMM: nil sparse matrix a")
	}
	return SpMMInto(result("SpMM", b.Device(), []int{a.Rows, b.shape[1]}, b), a, b)
}

// SpMMInto sets dst [a.Rows, k] to a·b and returns dst: rows of dst in
// parallel over the worker pool for large products, each row the sum of
// b's rows scaled by the row's nonzeros in their stored order (one
// simd.Axpy per nonzero, so each element rounds as the float32
// multiply-adds in that order, at every thread count). b may be strided
// (it is then copied); a strided dst is written through a contiguous
// temporary; dst must not overlap b. It panics, naming itself and the shapes, for operands that do not match.
//
// With b and dst on a device (dst may be strided there) the product is
// composed of its families: b's rows gathered at the nonzeros' columns
// (IndexSelect), scaled by the values (Mul) and added into dst's rows
// (IndexAdd). a stays on the host: each call copies its columns, row
// numbers and values there (3·NNZ floats; row and column numbers up to
// 2²⁴, float32 indices). The sums' order is the device's (a CUDA device
// adds with float atomics: not deterministic), so the result is within
// about n·2⁻²⁴·Σ|a||b| of the host's for rows of n nonzeros.
func SpMMInto(dst *Tensor, a *CSR, b *Tensor) *Tensor {
	const op = "SpMMInto"
	checkNil(op, "dst, b", dst, b)
	if a == nil {
		panic("tensor: SpMMInto: nil sparse matrix a")
	}
	if b.Dims() != 2 || b.shape[0] != a.Cols || dst.Dims() != 2 || dst.shape[0] != a.Rows || dst.shape[1] != b.shape[1] {
		panic(fmt.Sprintf("tensor: %s: dst of shape %v, a %d×%d, b %v (want [%d k] = [%d %d]·[%d k])", op, dst.shape, a.Rows, a.Cols, b.shape, a.Rows, a.Rows, a.Cols, a.Cols))
	}
	if dev := sameDevice(op, dst, b); dev != CPU {
		checkWritable(op, dst)
		return spmmOnDevice(op, dev, dst, a, b)
	}
	checkWritable(op, dst)
	if !dst.IsContiguous() { // through a contiguous temporary
		return copyInto(op, dst, SpMMInto(New(dst.shape...), a, b))
	}
	j := spmmJob{a: a, b: b.Contiguous().Data(), dst: dst.Data(), k: b.shape[1]}
	par.Split(&j, a.Rows, a.NNZ()*j.k+len(j.dst))
	return dst
}

// spmmOnDevice is SpMMInto on dev (its comment).
func spmmOnDevice(op string, dev Device, dst *Tensor, a *CSR, b *Tensor) *Tensor {
	if a.Rows > 1<<24 || a.Cols > 1<<24 {
		panic(fmt.Sprintf("tensor: %s: a %d×%d on %v: more than 2²⁴ rows or columns, whose numbers a float32 index does not hold", op, a.Rows, a.Cols, dev))
	}
	nnz := a.NNZ()
	if nnz == 0 || dst.Len() == 0 {
		return Fill(dst, 0)
	}
	rows, cols := make([]float32, nnz), make([]float32, nnz)
	for i := range a.Rows {
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			rows[p], cols[p] = float32(i), float32(a.ColIdx[p])
		}
	}
	up := func(h []float32, shape ...int) *Tensor {
		t, err := FromSlice(h, shape...).To(dev)
		if err != nil {
			panic(failure(op, dst, []*Tensor{b}, fmt.Errorf("copying the sparse matrix there: %w", err)))
		}
		return t
	}
	prod := IndexSelect(b, 0, up(cols, nnz)) // b read before dst is written
	MulInto(prod, prod, up(a.Val[:nnz:nnz], nnz, 1))
	return IndexAdd(Fill(dst, 0), 0, up(rows, nnz), prod)
}

// spmmJob computes rows of SpMMInto.
type spmmJob struct {
	a      *CSR
	b, dst []float32
	k      int
}

// RunRange computes rows lo..hi.
func (j *spmmJob) RunRange(lo, hi int) {
	a, k := j.a, j.k
	for i := lo; i < hi; i++ {
		row := j.dst[i*k : (i+1)*k]
		clear(row)
		for p := a.RowPtr[i]; p < a.RowPtr[i+1]; p++ {
			c := a.ColIdx[p]
			simd.Axpy(row, a.Val[p], j.b[c*k:(c+1)*k])
		}
	}
}
