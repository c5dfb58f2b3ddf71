package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/lanesgo/lanes/tensor"
)

// Batches iterates over mini-batches of (x, y) rows of a dataset held in
// memory: x has shape [N, ...] and y has shape [N, ...] with the same N,
// and row i of x goes with row i of y. Each epoch visits every row once,
// in an order drawn from the random source given to NewBatches (nil means
// sequential order, no shuffling). Batches hold Size rows; the last batch
// of an epoch is smaller when N is not a multiple of the size, unless
// DropLast is set, in which case it is skipped.
//
// Batches reads the rows of x and y in place: writes to them are seen by
// later batches. A Batches is not safe for concurrent use.
type Batches struct {
	// DropLast skips the last batch of each epoch when it would hold fewer
	// rows than the batch size.
	DropLast bool

	x, y       []float32 // the dataset, row-major
	xRow, yRow int       // elements per row
	n, size    int
	full       int // rows in a full batch: min(size, n)
	r          *rand.Rand
	order      []int // the epoch's row order; nil when sequential
	pos        int   // rows of the epoch handed out

	xBuf, yBuf         []float32 // size rows each
	xFull, yFull       *tensor.Tensor
	xPartial, yPartial *tensor.Tensor // N%size rows; nil when no batch is partial
}

// NewBatches returns an iterator over batches of size rows of x and y,
// ready for its first epoch (Reset need not be called first). Rows are
// visited in an order drawn from r, or sequentially when r is nil.
//
// NewBatches panics when x or y is nil or has no dimensions, when their
// first dimensions differ, or when size < 1; the message starts with
// "nn: NewBatches: " and names both shapes.
func NewBatches(x, y *tensor.Tensor, size int, r *rand.Rand) *Batches {
	if x == nil || y == nil {
		panic(fmt.Sprintf("nn: NewBatches: nil tensor (x %v, y %v)", shapeOf(x), shapeOf(y)))
	}
	xs, ys := x.Shape(), y.Shape()
	switch {
	case len(xs) == 0 || len(ys) == 0:
		panic(fmt.Sprintf("nn: NewBatches: x shape %v and y shape %v: both need a first (row) dimension", xs, ys))
	case xs[0] != ys[0]:
		panic(fmt.Sprintf("nn: NewBatches: x shape %v and y shape %v have different row counts %d and %d", xs, ys, xs[0], ys[0]))
	case size < 1:
		panic(fmt.Sprintf("nn: NewBatches: batch size %d < 1 (x shape %v, y shape %v)", size, xs, ys))
	}
	n := xs[0]
	b := &Batches{
		x:    x.Data(),
		y:    y.Data(),
		xRow: rowLen(xs),
		yRow: rowLen(ys),
		n:    n,
		size: size,
		r:    r,
	}
	b.full = min(size, n) // no buffer larger than the dataset
	b.xBuf = make([]float32, b.full*b.xRow)
	b.yBuf = make([]float32, b.full*b.yRow)
	b.xFull, b.yFull = b.headers(b.full, xs, ys)
	if rest := n % size; rest != 0 && rest != b.full {
		b.xPartial, b.yPartial = b.headers(rest, xs, ys)
	}
	if r != nil {
		b.order = make([]int, n)
		for i := range b.order {
			b.order[i] = i
		}
	}
	b.Reset()
	return b
}

// headers returns tensors over the first rows rows of the batch buffers.
func (b *Batches) headers(rows int, xs, ys []int) (x, y *tensor.Tensor) {
	xs = append([]int{rows}, xs[1:]...)
	ys = append([]int{rows}, ys[1:]...)
	return tensor.FromSlice(b.xBuf[:rows*b.xRow], xs...),
		tensor.FromSlice(b.yBuf[:rows*b.yRow], ys...)
}

func shapeOf(t *tensor.Tensor) any {
	if t == nil {
		return "nil"
	}
	return t.Shape()
}

// rowLen is the number of elements in one row of a tensor of shape s.
func rowLen(s []int) int {
	n := 1
	for _, d := range s[1:] {
		n *= d
	}
	return n
}

// Next returns the next batch of the epoch: contiguous tensors of shape
// [b, ...] holding b rows of x and the matching b rows of y, where b is
// the batch size or, for the last batch, the rows left. At the end of the
// epoch it returns ok = false, and keeps doing so until Reset.
//
// The returned tensors are buffers owned by the iterator: they are valid
// until the next call to Next, which overwrites them. Next allocates
// nothing.
func (b *Batches) Next() (x, y *tensor.Tensor, ok bool) {
	rows := min(b.size, b.n-b.pos)
	if rows <= 0 || rows < b.size && b.DropLast {
		b.pos = b.n
		return nil, nil, false
	}
	xr, yr := b.xRow, b.yRow
	if b.order == nil {
		copy(b.xBuf, b.x[b.pos*xr:(b.pos+rows)*xr])
		copy(b.yBuf, b.y[b.pos*yr:(b.pos+rows)*yr])
	} else {
		for i, row := range b.order[b.pos : b.pos+rows] {
			copy(b.xBuf[i*xr:(i+1)*xr], b.x[row*xr:(row+1)*xr])
			copy(b.yBuf[i*yr:(i+1)*yr], b.y[row*yr:(row+1)*yr])
		}
	}
	b.pos += rows
	if rows == b.full {
		return b.xFull, b.yFull, true
	}
	return b.xPartial, b.yPartial, true
}

// Reset starts a new epoch, drawing a new row order from the random
// source (the order stays sequential without one).
func (b *Batches) Reset() {
	b.pos = 0
	if b.r == nil {
		return
	}
	// Fisher–Yates, written out so that Reset allocates nothing.
	for i := len(b.order) - 1; i > 0; i-- {
		j := b.r.IntN(i + 1)
		b.order[i], b.order[j] = b.order[j], b.order[i]
	}
}

// Len is the number of batches in an epoch, counting a partial last batch
// unless DropLast is set.
func (b *Batches) Len() int {
	if b.DropLast {
		return b.n / b.size
	}
	return (b.n + b.size - 1) / b.size
}
