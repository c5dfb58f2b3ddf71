package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lanesgo/lanes/dist"
	"github.com/lanesgo/lanes/tensor"
)

// dpData returns n random images ([n, 28, 28], or [n, 1, 28, 28] for the
// CNN) and labels in [0, 10) that depend on the images, so that training
// moves the parameters steadily.
// The tensors are made once for each (n, cnn) and shared (training only
// reads them).
func dpData(n int, cnn bool) (x, y *tensor.Tensor) {
	dpCache.Lock()
	defer dpCache.Unlock()
	key := fmt.Sprint(n, cnn)
	if d, ok := dpCache.m[key]; ok {
		return d[0], d[1]
	}
	x, y = makeDPData(n, cnn)
	dpCache.m[key] = [2]*tensor.Tensor{x, y}
	return x, y
}

var dpCache = struct {
	sync.Mutex
	m map[string][2]*tensor.Tensor
}{m: map[string][2]*tensor.Tensor{}}

func makeDPData(n int, cnn bool) (x, y *tensor.Tensor) {
	r := rand.New(rand.NewPCG(7, 8))
	xs := make([]float32, n*784)
	ys := make([]float32, n)
	for i := range n {
		var s float64
		for j := range 784 {
			v := r.NormFloat64()
			xs[i*784+j] = float32(v)
			if j%97 == 0 {
				s += v
			}
		}
		ys[i] = float32(int(math.Abs(s)*3) % 10)
	}
	if cnn {
		return tensor.FromSlice(xs, n, 1, 28, 28), tensor.FromSlice(ys, n)
	}
	return tensor.FromSlice(xs, n, 28, 28), tensor.FromSlice(ys, n)
}

// dpCase is a training run: model, rows, global batch, steps.
type dpCase struct {
	model              string
	rows, batch, steps int
	sgd                bool // SGD instead of Adam
}

func (c dpCase) newModel(seed uint64) Module {
	r := rand.New(rand.NewPCG(seed, 3))
	if c.model == "cnn" {
		return FashionCNN(r)
	}
	return FashionMLP(r)
}

// flatParams returns a copy of m's parameters, each flattened.
func flatParams(m Module) [][]float32 {
	var out [][]float32
	for _, p := range Params(m) {
		out = append(out, append([]float32(nil), p.Value().Data()...))
	}
	return out
}

// train runs the case's steps of Adam on one process (comm nil) or on a
// rank of comm with DataParallel. Every rank but 0 initializes its model
// from another seed, which the broadcast must overwrite. With ckpt set,
// rank 0 saves a checkpoint after step stop and the run returns there;
// with resume set, the run starts from that checkpoint.
func (c dpCase) train(comm dist.Comm, ckpt string, stop int, resume bool) ([][]float32, error) {
	rank, ranks := 0, 1
	if comm != nil {
		rank, ranks = comm.Rank(), comm.Size()
	}
	x, y := dpData(c.rows, c.model == "cnn")
	m := c.newModel(uint64(1 + 100*rank))
	var opt Optimizer = NewAdam(Params(m), 1e-3)
	if c.sgd {
		opt = NewSGD(Params(m), 0.02)
	}
	b := NewBatches(x, y, c.batch, rand.New(rand.NewPCG(5, 6)))
	step := 0
	if resume {
		meta, err := LoadCheckpoint(ckpt, m, opt, b)
		if err != nil {
			return nil, err
		}
		if _, err := fmt.Sscan(meta["step"], &step); err != nil {
			return nil, err
		}
	}
	var dp *DataParallel
	if comm != nil {
		b.Shard(rank, ranks)
		var err error
		if dp, err = NewDataParallel(m, comm, 64<<10); err != nil {
			return nil, err
		}
	}
	tp := NewTape()
	for ; step < c.steps; step++ {
		bx, by, ok := b.Next()
		if !ok {
			b.Reset()
			bx, by, _ = b.Next()
		}
		tp.Reset()
		loss := tp.CrossEntropy(m.Forward(tp, tp.Const(bx)), by)
		opt.ZeroGrad()
		if dp != nil {
			if err := dp.Backward(tp, loss); err != nil {
				return nil, err
			}
		} else {
			tp.Backward(loss)
		}
		opt.Step()
		if ckpt != "" && !resume && step+1 == stop {
			if rank == 0 {
				if err := SaveCheckpoint(ckpt, m, opt, b, map[string]string{"step": fmt.Sprint(step + 1)}); err != nil {
					return nil, err
				}
			}
			if comm != nil {
				return flatParams(m), comm.Barrier()
			}
			return flatParams(m), nil
		}
	}
	return flatParams(m), nil
}

// trainLocal runs the case on an in-process group of ranks ranks and
// returns every rank's parameters.
func (c dpCase) trainLocal(t *testing.T, ranks int, ckpt string, stop int, resume bool) [][][]float32 {
	t.Helper()
	out := make([][][]float32, ranks)
	var mu sync.Mutex
	err := dist.RunLocal(ranks, func(comm dist.Comm) error {
		p, err := c.train(comm, ckpt, stop, resume)
		mu.Lock()
		out[comm.Rank()] = p
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// maxRelDiff is the largest over the parameters of max|a-b| / max|b|.
func maxRelDiff(a, b [][]float32) float64 {
	worst := 0.0
	for i := range b {
		var d, m float64
		for j := range b[i] {
			d = math.Max(d, math.Abs(float64(a[i][j])-float64(b[i][j])))
			m = math.Max(m, math.Abs(float64(b[i][j])))
		}
		worst = math.Max(worst, d/m)
	}
	return worst
}

// normRelDiff is the largest over the parameters of |a-b| / |b| (2-norms).
func normRelDiff(a, b [][]float32) float64 {
	worst := 0.0
	for i := range b {
		var d, m float64
		for j := range b[i] {
			x := float64(a[i][j]) - float64(b[i][j])
			d += x * x
			m += float64(b[i][j]) * float64(b[i][j])
		}
		worst = math.Max(worst, math.Sqrt(d/m))
	}
	return worst
}

func sameBits(a, b [][]float32) bool {
	for i := range a {
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return false
			}
		}
	}
	return true
}

// TestDataParallelMatchesOneProcess trains the Fashion-MNIST MLP and CNN
// with DataParallel on 2 and 4 in-process ranks and on one process with
// the same global batches: the ranks hold the same bits, a second run
// gives the same bits, and the parameters agree with one process's within
// 1e-5 relative (of each tensor's largest) with SGD. Adam amplifies the
// rounding differences of the gradients' sums where a gradient's terms
// nearly cancel (its step is ±lr whatever the gradient's size): measured
// here after 100 steps, 9e-6 elementwise and 2e-7 in norm on 2 ranks,
// 2e-3 and 2e-4 on 4 (the MLP), so its bound is 1e-3 in norm.
func TestDataParallelMatchesOneProcess(t *testing.T) {
	cases := []dpCase{
		{model: "mlp", rows: 512, batch: 32, steps: 100},
		{model: "cnn", rows: 96, batch: 8, steps: 20},
		{model: "mlp", rows: 512, batch: 32, steps: 50, sgd: true},
		{model: "cnn", rows: 96, batch: 8, steps: 20, sgd: true},
	}
	if testing.Short() || raceEnabled {
		// Fewer steps (the race runtime is about ten times slower): the
		// synchronization is the same at every step.
		for i := range cases {
			cases[i].steps = max(cases[i].steps/10, 3)
		}
	}
	for _, c := range cases {
		ref, err := c.train(nil, "", 0, false)
		if err != nil {
			t.Fatal(err)
		}
		init := flatParams(c.newModel(1))
		moved := maxRelDiff(ref, init)
		for _, ranks := range []int{2, 4} {
			t.Run(fmt.Sprintf("%s/sgd=%v/ranks=%d", c.model, c.sgd, ranks), func(t *testing.T) {
				a := c.trainLocal(t, ranks, "", 0, false)
				b := a
				if !c.sgd { // a second run (Adam's is the more sensitive)
					b = c.trainLocal(t, ranks, "", 0, false)
				}
				for k := range ranks {
					if !sameBits(a[k], a[0]) || !sameBits(b[k], a[0]) {
						t.Fatalf("rank %d's parameters differ from rank 0's, or between two runs", k)
					}
				}
				d, nd := maxRelDiff(a[0], ref), normRelDiff(a[0], ref)
				t.Logf("%d steps: parameters within %.2g relative (elementwise), %.2g (norm) of one process's; training moved them %.2g", c.steps, d, nd, moved)
				if c.sgd && d > 1e-5 || !c.sgd && nd > 1e-3 {
					t.Fatalf("%d steps on %d ranks: parameters %.3g (elementwise), %.3g (norm) relative from one process's, want ≤ 1e-5 (elementwise) with SGD, 1e-3 (norm) with Adam", c.steps, ranks, d, nd)
				}
				if moved < 1e-3 {
					t.Fatalf("training moved the parameters by %.3g only: the comparison shows nothing", moved)
				}
			})
		}
	}
}

// TestDataParallelResume saves a checkpoint on rank 0 in the middle of a
// run and resumes it on every rank: the parameters are bit for bit those
// of the run that never stopped.
func TestDataParallelResume(t *testing.T) {
	c := dpCase{model: "mlp", rows: 256, batch: 32, steps: 20}
	ckpt := filepath.Join(t.TempDir(), "ckpt.safetensors")
	whole := c.trainLocal(t, 2, "", 0, false)
	c.trainLocal(t, 2, ckpt, 11, false)
	resumed := c.trainLocal(t, 2, ckpt, 0, true)
	for k := range whole {
		if !sameBits(resumed[k], whole[0]) {
			t.Fatalf("rank %d: the parameters of the resumed run differ from those of the whole run", k)
		}
	}
}

// TestBatchesShard checks that the ranks' shards of each batch are, in
// rank order, the batch of the unsharded iterator, for batch sizes and
// row counts that do and do not split evenly, over two epochs.
func TestBatchesShard(t *testing.T) {
	for _, tc := range []struct{ n, size, ranks, len int }{
		{12, 4, 2, 3}, {10, 4, 2, 3}, {10, 4, 3, 2}, {11, 4, 3, 3}, {7, 7, 4, 1}, {5, 8, 2, 1},
	} {
		x := tensor.New(tc.n, 2)
		y := tensor.New(tc.n)
		for i := range tc.n {
			x.Data()[2*i], x.Data()[2*i+1], y.Data()[i] = float32(i), float32(-i), float32(i)
		}
		whole := NewBatches(x, y, tc.size, rand.New(rand.NewPCG(1, 2)))
		shards := make([]*Batches, tc.ranks)
		for k := range shards {
			shards[k] = NewBatches(x, y, tc.size, rand.New(rand.NewPCG(1, 2)))
			shards[k].Shard(k, tc.ranks)
			if got := shards[k].Len(); got != tc.len {
				t.Fatalf("%+v: Len of rank %d's shard = %d, want %d", tc, k, got, tc.len)
			}
		}
		for epoch := range 2 {
			if epoch > 0 {
				whole.Reset()
				for _, s := range shards {
					s.Reset()
				}
			}
			for step := range tc.len {
				wx, wy, ok := whole.Next()
				if !ok {
					t.Fatalf("%+v: the whole iterator ended at step %d", tc, step)
				}
				var gx, gy []float32
				for k, s := range shards {
					sx, sy, ok := s.Next()
					if !ok {
						t.Fatalf("%+v: rank %d's shard ended at step %d", tc, k, step)
					}
					lo, hi := dist.Split(wy.Len(), k, tc.ranks)
					if sy.Len() != hi-lo || sx.Dim(0) != hi-lo || sx.Dim(1) != 2 {
						t.Fatalf("%+v: step %d rank %d: shapes %v %v, want %d rows", tc, step, k, sx.Shape(), sy.Shape(), hi-lo)
					}
					gx, gy = append(gx, sx.Data()...), append(gy, sy.Data()...)
				}
				if fmt.Sprint(gx) != fmt.Sprint(wx.Data()) || fmt.Sprint(gy) != fmt.Sprint(wy.Data()) {
					t.Fatalf("%+v: epoch %d step %d: shards %v %v, whole batch %v %v", tc, epoch, step, gx, gy, wx.Data(), wy.Data())
				}
			}
			for k, s := range shards {
				if _, _, ok := s.Next(); ok {
					t.Fatalf("%+v: rank %d's shard has more than %d batches", tc, k, tc.len)
				}
			}
		}
	}
}

func TestDataParallelMisuse(t *testing.T) {
	x, y := tensor.New(4, 1), tensor.New(4)
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"rank out of range", func() { NewBatches(x, y, 2, nil).Shard(2, 2) }, "nn: Batches.Shard: rank 2 of 2 ranks"},
		{"batch smaller than ranks", func() { NewBatches(x, y, 2, nil).Shard(0, 3) }, "nn: Batches.Shard: batches of 2 rows cannot be shared by 3 ranks"},
		{"nil comm", func() { NewDataParallel(FashionMLP(rand.New(rand.NewPCG(1, 1))), nil, 0) }, "nn: NewDataParallel: nil communicator"},
		{"negative bucket", func() { NewDataParallel(FashionMLP(rand.New(rand.NewPCG(1, 1))), dist.NewLocal(1)[0], -1) }, "nn: NewDataParallel: bucket size -1 bytes < 0"},
	}
	for _, tc := range cases {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			tc.f()
			return ""
		}()
		if len(msg) < len(tc.want) || msg[:len(tc.want)] != tc.want {
			t.Errorf("%s: panic %q, want %q...", tc.name, msg, tc.want)
		}
	}
}

// TestDataParallelUnused checks that a parameter with no gradient on one
// rank gets the average of the others' (theirs over the ranks), and that
// the buckets' split of the parameters does not change the result.
func TestDataParallelUnused(t *testing.T) {
	got := make([][]float32, 3)
	for _, bucket := range []int{4, 1 << 20} {
		err := dist.RunLocal(3, func(c dist.Comm) error {
			a := NewParam(tensor.FromSlice([]float32{1, 2}, 2))
			b := NewParam(tensor.FromSlice([]float32{3}, 1))
			m := &paramList{vars: []*Var{a, b}}
			dp, err := NewDataParallel(m, c, bucket)
			if err != nil {
				return err
			}
			tp := NewTape()
			// loss = sum(a * rank+1), plus b * 2 on rank 0 only.
			w := tp.Const(tensor.FromSlice([]float32{float32(c.Rank() + 1), float32(c.Rank() + 1)}, 2))
			loss := tp.Sum(tp.Mul(a, w))
			if c.Rank() == 0 {
				loss = tp.Add(loss, tp.Sum(tp.Scale(b, 2)))
			}
			if err := dp.Backward(tp, loss); err != nil {
				return err
			}
			got[c.Rank()] = append(append([]float32(nil), a.Grad().Data()...), b.Grad().Data()...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []float32{2, 2, float32(2.0 / 3)} // (1+2+3)/3, and 2/3
		for k := range got {
			if fmt.Sprint(got[k]) != fmt.Sprint(want) {
				t.Fatalf("bucket %d bytes: rank %d's gradients %v, want %v", bucket, k, got[k], want)
			}
		}
	}
}

// TestDataParallelGradViews checks the gradients that are views of the
// buckets: accumulated over two Backwards without ZeroGrad, replaced by
// another tensor between steps (its values kept), left without a
// gradient after having one (zeros, not the last step's), and for a
// parameter listed twice, on 2 ranks with one bucket and with one per
// parameter.
func TestDataParallelGradViews(t *testing.T) {
	for _, twice := range []bool{false, true} {
		for _, bucket := range []int{4, 1 << 20} {
			got := make([][][]float32, 2)
			err := dist.RunLocal(2, func(c dist.Comm) error {
				a := NewParam(tensor.FromSlice([]float32{1, 2}, 2))
				b := NewParam(tensor.FromSlice([]float32{3}, 1))
				m := &paramList{vars: []*Var{a, b}}
				if twice {
					m.vars = append(m.vars, a)
				}
				dp, err := NewDataParallel(m, c, bucket)
				if err != nil {
					return err
				}
				tp := NewTape()
				// sum(a * (rank+1)), plus sum(b * 2) on rank 0 only when useB.
				step := func(useB bool) error {
					tp.Reset()
					w := tp.Const(tensor.FromSlice([]float32{float32(c.Rank() + 1), float32(c.Rank() + 1)}, 2))
					loss := tp.Sum(tp.Mul(a, w))
					if useB && c.Rank() == 0 {
						loss = tp.Add(loss, tp.Sum(tp.Scale(b, 2)))
					}
					if err := dp.Backward(tp, loss); err != nil {
						return err
					}
					got[c.Rank()] = append(got[c.Rank()], append(append([]float32(nil), a.Grad().Data()...), b.Grad().Data()...))
					return nil
				}
				if err := step(true); err != nil {
					return err
				}
				if err := step(true); err != nil { // no ZeroGrad: accumulates
					return err
				}
				a.ZeroGrad()
				b.ZeroGrad()
				a.grad, a.gradOK = tensor.FromSlice([]float32{10, 20}, 2), true // as nn.To would
				if err := step(true); err != nil {
					return err
				}
				if p := dp.index[a]; &a.grad.Data()[0] != &dp.views[p].Data()[0] {
					return fmt.Errorf("rank %d: a's gradient is not its bucket's view again", c.Rank())
				}
				a.ZeroGrad()
				b.ZeroGrad()
				return step(false)
			})
			if err != nil {
				t.Fatal(err)
			}
			want := [][]float32{{1.5, 1.5, 1}, {3, 3, 2}, {11.5, 21.5, 1}, {1.5, 1.5, 0}}
			for k := range got {
				if fmt.Sprint(got[k]) != fmt.Sprint(want) {
					t.Errorf("listed twice %v, bucket %d bytes: rank %d's gradients after each step %v, want %v", twice, bucket, k, got[k], want)
				}
			}
		}
	}
}

// paramList is a Module of bare parameters.
type paramList struct {
	stateless
	vars []*Var
}

func (p *paramList) Forward(tp *Tape, x *Var) *Var { return x }
func (p *paramList) State(prefix string, f func(string, *Var)) {
	for i, v := range p.vars {
		f(fmt.Sprintf("%sp%d", prefix, i), v)
	}
}
