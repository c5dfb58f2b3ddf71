package nn

import (
	"fmt"
	"math/rand/v2"
	"runtime"

	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/internal/par"

	"github.com/lanesgo/lanes/tensor"
)

// Batches iterates over mini-batches of (x, y) rows of a dataset held in
// memory: x has shape [N, ...] and y has shape [N, ...] with the same N,
// and row i of x goes with row i of y. Each epoch visits every row once,
// in a random order when NewBatches is given a random source (as PyTorch's
// DataLoader with shuffle=True) and in sequential order when it is given
// nil (shuffle=False). Batches hold Size rows; the last batch of an epoch
// is smaller when N is not a multiple of the size, unless DropLast is set,
// in which case it is skipped.
//
// Each epoch's order is a uniformly random permutation drawn from the
// iterator's own PCG generator, which NewBatches seeds from the source it
// is given; the order depends on nothing but the generator's state at the
// epoch's start, so that SaveCheckpoint can record the iterator's place
// (the epoch, the rows handed out and that state) and LoadCheckpoint
// resume it exactly.
//
// Batches reads the rows of x and y in place: writes to them are seen by
// later batches. After To(dev), Next hands out its batches on a device
// (see To). A Batches is not safe for concurrent use.
type Batches struct {
	// DropLast skips the last batch of each epoch when it would hold fewer
	// rows than the batch size.
	DropLast bool

	x, y       []float32 // the dataset, row-major
	xRow, yRow int       // elements per row
	n, size    int
	full       int       // rows in a full batch: min(size, n)
	pcg        *rand.PCG // the shuffling generator; nil when sequential
	r          *rand.Rand
	start      rand.PCG // pcg's state at the start of the epoch
	order      []int    // the epoch's row order; nil when sequential
	pos        int      // rows of the epoch handed out
	epoch      int      // Resets since NewBatches
	rank       int      // the shard handed out (Shard); 0 of 1 when not sharded
	ranks      int

	// The batch buffers: buf holds xBuf (full rows of x) then yBuf (full
	// rows of y), so that a device gets a batch in one copy.
	buf, xBuf, yBuf    []float32
	xFull, yFull       *tensor.Tensor
	xPartial, yPartial *tensor.Tensor // N%size rows; nil when no batch is partial
	dev                *deviceBatches // nil on the host
	gatherJob          rowGather      // gather's parallel loop
	err                error          // the copy to the device that failed
}

// deviceBatches are the batch buffers on a device: one slot, or two when
// the device uploads asynchronously (tensor.AsyncUploader), so that the
// next batch is copied into one while the step runs on the other.
type deviceBatches struct {
	slots []*deviceSlot
	cur   int  // the slot of the batch handed out last
	ahead bool // the other slot holds (or is receiving) the batch at pos
}

// deviceSlot is one batch buffer on the device: mem, a flat tensor of
// buf's length, and its views; with asynchronous uploads, the staging
// buffer the batch is gathered into and its upload in flight.
type deviceSlot struct {
	mem                *tensor.Tensor
	xFull, yFull       *tensor.Tensor
	xPartial, yPartial *tensor.Tensor
	staging            tensor.Staging // nil for synchronous uploads
	pending            tensor.Pending // the last upload from staging; nil when none
}

// NewBatches returns an iterator over batches of size rows of x and y,
// ready for its first epoch (Reset need not be called first). Rows are
// visited in random orders when r is not nil, sequentially when it is.
// NewBatches draws two numbers from r to seed the iterator's own
// generator and does not keep r: later uses of r, by the caller or by
// layers sharing it, do not change the orders.
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
		x:     x.Data(),
		y:     y.Data(),
		xRow:  rowLen(xs),
		yRow:  rowLen(ys),
		n:     n,
		size:  size,
		ranks: 1,
	}
	b.full = min(size, n) // no buffer larger than the dataset
	b.buf = make([]float32, b.full*(b.xRow+b.yRow))
	b.xBuf, b.yBuf = b.buf[:b.full*b.xRow], b.buf[b.full*b.xRow:]
	b.xFull, b.yFull = b.headers(b.full, xs, ys)
	if rest := n % size; rest != 0 && rest != b.full {
		b.xPartial, b.yPartial = b.headers(rest, xs, ys)
	}
	if r != nil {
		b.pcg = rand.NewPCG(r.Uint64(), r.Uint64())
		b.r = rand.New(b.pcg)
		b.order = make([]int, n)
	}
	b.shuffle()
	return b
}

// headers returns tensors over the first rows rows of the batch buffers.
func (b *Batches) headers(rows int, xs, ys []int) (x, y *tensor.Tensor) {
	xs = append([]int{rows}, xs[1:]...)
	ys = append([]int{rows}, ys[1:]...)
	return tensor.FromSlice(b.xBuf[:rows*b.xRow], xs...),
		tensor.FromSlice(b.yBuf[:rows*b.yRow], ys...)
}

// To makes Next hand out its batches on dev (tensor.CPU: on the host
// again), for a model moved there with nn.To. Next gathers each batch on
// the host, then copies it to device buffers that the iterator owns and
// reuses, x and y together in one copy, so that a training step makes one
// upload and no new device memory. The returned tensors are valid until
// the next Next, as on the host. A copy that fails ends the epoch early:
// Next returns ok = false and Err the error.
//
// When dev uploads asynchronously (its memory implements
// tensor.AsyncUploader, as the CUDA plugin's does), the iterator keeps two
// device buffers and two staging buffers (pinned host memory): Next hands
// out batch k, ordering the device's later work after its copy without
// waiting on the host (Pending.Use), and queues the copy of batch k+1,
// which runs while step k runs. Batch k+1's rows of x and y are then read
// when batch k is handed out (one batch earlier than on the host), and
// Reset or LoadCheckpoint discard a batch read ahead. Otherwise each Next
// copies with CopyFromHost, which waits.
//
// To returns the error of allocating the device buffers (tensors of the
// batch's x and y elements) or the staging buffers, leaving the iterator
// on the host.
func (b *Batches) To(dev tensor.Device) error {
	if err := b.dev.release(); err != nil && b.err == nil {
		b.err = err
	}
	b.dev = nil
	if dev == tensor.CPU {
		return nil
	}
	d := &deviceBatches{}
	for i := 0; i < 2; i++ {
		s, err := b.slot(dev, i == 0)
		if err != nil {
			d.release()
			return err
		}
		if s == nil {
			break // synchronous uploads: one slot
		}
		d.slots = append(d.slots, s)
	}
	b.dev = d
	return nil
}

// slot allocates a device buffer of buf's length on dev with its views
// and, when dev uploads asynchronously, a staging buffer. For the second
// slot (first false) it returns nil when dev does not.
func (b *Batches) slot(dev tensor.Device, first bool) (*deviceSlot, error) {
	mem, err := tensor.NewOn(dev, len(b.buf))
	if err != nil {
		return nil, fmt.Errorf("nn: Batches.To: %d bytes on %v: %w", 4*len(b.buf), dev, err)
	}
	dm, _, _ := tensor.DeviceView(mem)
	au, async := dm.(tensor.AsyncUploader)
	if !first && !async {
		return nil, nil
	}
	s := &deviceSlot{mem: mem}
	if async {
		if s.staging, err = au.NewStaging(len(b.buf)); err != nil {
			return nil, fmt.Errorf("nn: Batches.To: a staging buffer of %d bytes for %v: %w", 4*len(b.buf), dev, err)
		}
	}
	view := func(h *tensor.Tensor, off int) *tensor.Tensor {
		if h == nil {
			return nil
		}
		return mem.Slice(0, off, off+h.Len(), 1).Reshape(h.Shape()...)
	}
	y0 := len(b.xBuf)
	s.xFull, s.yFull = view(b.xFull, 0), view(b.yFull, y0)
	s.xPartial, s.yPartial = view(b.xPartial, 0), view(b.yPartial, y0)
	return s, nil
}

// release waits for the uploads in flight and frees the staging buffers
// (the device buffers go with their tensors); it returns the first
// upload's error.
func (d *deviceBatches) release() error {
	if d == nil {
		return nil
	}
	var first error
	for _, s := range d.slots {
		if s.staging == nil {
			continue
		}
		if s.pending != nil {
			if err := s.pending.Wait(); err != nil && first == nil {
				first = err
			}
			s.pending = nil
		}
		s.staging.Release()
		s.staging = nil
	}
	return first
}

// Err returns the error that ended the epoch early: the copy of a batch
// to the device (see To) that failed; nil otherwise. Reset clears it.
func (b *Batches) Err() error { return b.err }

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
	rows := b.rowsAt(b.pos)
	if rows == 0 || b.err != nil {
		b.pos = b.n
		return nil, nil, false
	}
	if d := b.dev; d != nil {
		return b.nextOnDevice(d, rows)
	}
	b.gather(b.xBuf, b.yBuf, b.pos, rows)
	b.pos += rows
	if rows == b.full {
		return b.xFull, b.yFull, true
	}
	return b.xPartial, b.yPartial, true
}

// rowsAt is the number of rows of the batch starting at row pos of the
// epoch, 0 when there is none.
func (b *Batches) rowsAt(pos int) int {
	rows := min(b.size, b.n-pos)
	if rows <= 0 || rows < b.size && b.DropLast || rows < b.ranks {
		return 0
	}
	return rows
}

// gather copies rows rows of the epoch's order from pos on into xb and yb
// (the rank's share of them when sharded).
func (b *Batches) gather(xb, yb []float32, pos, rows int) {
	if b.ranks > 1 {
		lo, hi := dist.Split(rows, b.rank, b.ranks)
		pos, rows = pos+lo, hi-lo
	}
	xr, yr := b.xRow, b.yRow
	if b.order == nil {
		copy(xb, b.x[pos*xr:(pos+rows)*xr])
		copy(yb, b.y[pos*yr:(pos+rows)*yr])
		return
	}
	// The rows are scattered over the dataset and each copy waits on
	// memory: the threads copy a share each.
	g := &b.gatherJob
	g.b, g.xb, g.yb, g.rows = b, xb, yb, b.order[pos:pos+rows]
	par.For(g, rows, min(rows/gatherRows, runtime.GOMAXPROCS(0)))
	*g = rowGather{}
}

// gatherRows is the fewest rows a thread copies in a shuffled batch.
const gatherRows = 8

// rowGather copies rows of the dataset, in the order's rows, into a
// batch's buffers; it is a par.Ranger over the batch's rows.
type rowGather struct {
	b      *Batches
	xb, yb []float32
	rows   []int
}

func (g *rowGather) RunRange(lo, hi int) {
	b, xr, yr := g.b, g.b.xRow, g.b.yRow
	for i := lo; i < hi; i++ {
		row := g.rows[i]
		copy(g.xb[i*xr:(i+1)*xr], b.x[row*xr:(row+1)*xr])
		copy(g.yb[i*yr:(i+1)*yr], b.y[row*yr:(row+1)*yr])
	}
}

// nextOnDevice hands out the batch of rows rows at pos on the device: the
// batch read ahead, or one copied now; with two slots it then queues the
// copy of the following batch into the other one.
func (b *Batches) nextOnDevice(d *deviceBatches, rows int) (x, y *tensor.Tensor, ok bool) {
	fail := func(err error) (x, y *tensor.Tensor, ok bool) {
		b.err = fmt.Errorf("nn: Batches.Next: copying a batch of %d rows to %v: %w", rows, d.slots[0].mem.Device(), err)
		b.pos = b.n
		d.ahead = false
		return nil, nil, false
	}
	if d.ahead {
		d.cur = (d.cur + 1) % len(d.slots)
	} else if err := b.fill(d.slots[d.cur], b.pos, rows); err != nil {
		return fail(err)
	}
	d.ahead = false
	s := d.slots[d.cur]
	if s.pending != nil {
		if err := s.pending.Use(); err != nil {
			return fail(err)
		}
	}
	b.pos += rows
	if len(d.slots) > 1 {
		if next := b.rowsAt(b.pos); next > 0 {
			if err := b.fill(d.slots[(d.cur+1)%2], b.pos, next); err == nil {
				d.ahead = true
			} // else the next Next copies it again and reports the error
		}
	}
	if rows == b.full {
		return s.xFull, s.yFull, true
	}
	return s.xPartial, s.yPartial, true
}

// fill gathers the batch of rows rows at pos into slot s on the device:
// with CopyFromHost, or through its staging buffer once the buffer's last
// upload is complete, queuing the upload.
func (b *Batches) fill(s *deviceSlot, pos, rows int) error {
	mem, off, _ := tensor.DeviceView(s.mem)
	if s.staging == nil {
		b.gather(b.xBuf, b.yBuf, pos, rows)
		return mem.CopyFromHost(off, b.buf)
	}
	if s.pending != nil {
		err := s.pending.Wait()
		s.pending = nil
		if err != nil {
			return err
		}
	}
	h := s.staging.Host()
	y0 := len(b.xBuf)
	b.gather(h[:y0], h[y0:], pos, rows)
	p, err := s.staging.Upload(mem, off, len(h))
	if err != nil {
		return err
	}
	s.pending = p
	return nil
}

// Reset starts a new epoch, drawing a new row order (the order stays
// sequential without a random source). It allocates nothing.
func (b *Batches) Reset() {
	b.epoch++
	b.err = nil
	b.shuffle()
}

// Epoch returns the number of epochs started before the current one: 0
// until the first Reset, then 1, and so on. It is the epoch to give a
// Schedule, and, after LoadCheckpoint, the epoch to resume.
func (b *Batches) Epoch() int { return b.epoch }

// shuffle starts the epoch: it records the generator's state and draws
// the order, a Fisher–Yates shuffle of 0..N-1.
func (b *Batches) shuffle() {
	b.pos = 0
	if b.dev != nil {
		b.dev.ahead = false // read from the old order
	}
	if b.pcg == nil {
		return
	}
	b.start = *b.pcg
	for i := range b.order {
		b.order[i] = i
	}
	for i := len(b.order) - 1; i > 0; i-- {
		j := b.r.IntN(i + 1)
		b.order[i], b.order[j] = b.order[j], b.order[i]
	}
}

// Len is the number of batches in an epoch, counting a partial last batch
// unless DropLast is set (or, sharded, it has fewer rows than ranks).
func (b *Batches) Len() int {
	if b.DropLast || b.n%b.size < b.ranks {
		return b.n / b.size
	}
	return (b.n + b.size - 1) / b.size
}

// Shard makes the iterator hand out rank's share of each batch of a
// data-parallel run on ranks ranks (see DataParallel): every rank builds
// the iterator alike (the same data, batch size and random source, so
// the same orders) and keeps the batches' global size; Next then returns
// the rank's contiguous part of the global batch, rows [lo, hi) with
// lo = rank·rows/ranks rounded as chunks of a split (the first rows%ranks
// ranks one row more). The ranks together visit every row once an epoch,
// and Len, Epoch and the checkpointed place are those of the global
// batches, so that a checkpoint of one rank resumes on every rank (and
// with any number of ranks). A last batch of fewer rows than ranks is
// skipped.
//
// Training matches a single process on the global batches when every
// batch's rows split evenly (a batch size that is a multiple of ranks,
// and N too or DropLast): DataParallel averages the ranks' gradients with
// equal weights.
//
// Shard panics when ranks < 1, rank is not in [0, ranks), the batch size
// is smaller than ranks, or the iterator was moved to a device (call
// Shard before To).
func (b *Batches) Shard(rank, ranks int) {
	switch {
	case ranks < 1 || rank < 0 || rank >= ranks:
		panic(fmt.Sprintf("nn: Batches.Shard: rank %d of %d ranks", rank, ranks))
	case b.size < ranks:
		panic(fmt.Sprintf("nn: Batches.Shard: batches of %d rows cannot be shared by %d ranks", b.size, ranks))
	case b.dev != nil:
		panic("nn: Batches.Shard: the iterator is on a device; call Shard before To")
	}
	b.rank, b.ranks = rank, ranks
	xs, ys := b.xFull.Shape(), b.yFull.Shape()
	share := func(rows int) int { lo, hi := dist.Split(rows, rank, ranks); return hi - lo }
	b.xFull, b.yFull = b.headers(share(b.full), xs, ys)
	b.xPartial, b.yPartial = nil, nil
	if rest := b.n % b.size; rest != 0 && rest != b.full {
		b.xPartial, b.yPartial = b.headers(share(rest), xs, ys)
	}
}

// batchesState is what a checkpoint keeps of a Batches (see
// SaveCheckpoint).
type batchesState struct {
	Rows     int    `json:"rows"`
	Size     int    `json:"size"`
	DropLast bool   `json:"drop_last"`
	Shuffle  bool   `json:"shuffle"`
	Epoch    int    `json:"epoch"`
	Pos      int    `json:"pos"`           // rows of the epoch handed out
	RNG      []byte `json:"rng,omitempty"` // the PCG's state at the epoch's start
}

func (b *Batches) saveState() (batchesState, error) {
	st := batchesState{Rows: b.n, Size: b.size, DropLast: b.DropLast, Shuffle: b.pcg != nil, Epoch: b.epoch, Pos: b.pos}
	if b.pcg != nil {
		var err error
		if st.RNG, err = b.start.MarshalBinary(); err != nil {
			return st, err
		}
	}
	return st, nil
}

// planLoad checks st against b and returns the function that puts b where
// st says.
func (b *Batches) planLoad(st batchesState) (func(), error) {
	var start rand.PCG
	switch {
	case st.Rows != b.n || st.Size != b.size:
		return nil, fmt.Errorf("batches of %d rows of %d, the iterator's are of %d rows of %d", st.Size, st.Rows, b.size, b.n)
	case st.Shuffle != (b.pcg != nil):
		return nil, fmt.Errorf("shuffled %v, the iterator %v", st.Shuffle, b.pcg != nil)
	case st.Epoch < 0 || st.Pos < 0 || st.Pos > st.Rows:
		return nil, fmt.Errorf("position %d of %d rows in epoch %d", st.Pos, st.Rows, st.Epoch)
	case st.Shuffle:
		if err := start.UnmarshalBinary(st.RNG); err != nil {
			return nil, fmt.Errorf("generator state: %w", err)
		}
	}
	return func() {
		b.DropLast, b.epoch = st.DropLast, st.Epoch
		if b.pcg != nil {
			*b.pcg = start
		}
		b.shuffle()
		b.pos = st.Pos
	}, nil
}
